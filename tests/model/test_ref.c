/*
 * test_ref.c — the engine's F32 logits against the independent f64
 * reference (ref.c) for maple-tiny, llama-tiny and moe-tiny, at every
 * position of a 40-token prompt (maple-tiny's sliding window is 16, so the
 * ring wraps twice). Budget: relative L2 <= 1e-4 per position, and the
 * same argmax wherever the reference's top-2 margin is not razor thin.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <math.h>
#include <stdlib.h>

#include "helpers.h"
#include "ref.h"

#define N_PROMPT 40
#define BUDGET_REL_L2 1e-4

static void check_preset(const char *preset, int n_batch, int n_threads) {
    char path[512], err[256];
    assert_int_equal(th_synth(th_dir, preset, -1, path, sizeof path), TB_OK);
    tb_model_t *m;
    int rc = tb_model_load(path, &m);
    if (rc) fail_msg("load %s: %s", path, tb_last_error());
    ref_model *r;
    if (ref_load(path, &r, err, sizeof err)) fail_msg("%s", err);
    const int V = tb_model_n_vocab(m);
    assert_int_equal(V, ref_n_vocab(r));

    int32_t ids[N_PROMPT];
    th_prompt(ids, N_PROMPT, V, 7);
    double *want = malloc((size_t)N_PROMPT * V * sizeof *want);   /* (N_PROMPT, V) */
    assert_non_null(want);
    ref_forward(r, ids, N_PROMPT, want);

    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 64;
    sp.n_batch = n_batch;
    sp.n_threads = n_threads;
    sp.kv_type = TB_TYPE_F32;
    tb_session_t *s;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    assert_int_equal(tb_session_eval(s, ids, N_PROMPT, true), TB_OK);
    assert_int_equal(tb_session_pos(s), N_PROMPT);
    double worst = 0;
    for (int t = 0; t < N_PROMPT; t++) {
        const float *got = tb_session_logits(s, t);
        assert_non_null(got);
        const double *w = want + (size_t)t * V;
        double e = th_rel_l2_d(got, w, (size_t)V);
        if (e > worst) worst = e;
        if (e > BUDGET_REL_L2) fail_msg("%s: position %d relative L2 %.3g > %.1g", preset, t, e, BUDGET_REL_L2);
        /* argmax must agree unless the reference's top-2 gap is tiny */
        int a = th_argmax(got, V), b = th_argmax_d(w, V);
        if (a != b && w[b] - w[a] > 1e-3 * (fabs(w[b]) + 1)) fail_msg("%s: position %d argmax %d vs %d", preset, t, a, b);
    }
    print_message("%s (n_batch %d, %d threads): worst relative L2 %.3g\n", preset, n_batch, n_threads, worst);
    tb_session_free(s);
    free(want);
    ref_free(r);
    tb_model_free(m);
}

static void test_maple_tiny(void **st) { (void)st; check_preset("maple-tiny", 512, 1); }
static void test_maple_tiny_chunked(void **st) { (void)st; check_preset("maple-tiny", 7, 2); }
static void test_llama_tiny(void **st) { (void)st; check_preset("llama-tiny", 512, 2); }
static void test_moe_tiny(void **st) { (void)st; check_preset("moe-tiny", 512, 1); }
static void test_moe_tiny_chunked(void **st) { (void)st; check_preset("moe-tiny", 5, 2); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maple_tiny),
        cmocka_unit_test(test_maple_tiny_chunked),
        cmocka_unit_test(test_llama_tiny),
        cmocka_unit_test(test_moe_tiny),
        cmocka_unit_test(test_moe_tiny_chunked),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
