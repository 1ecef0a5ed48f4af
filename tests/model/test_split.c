/*
 * test_split.c — the split decode's shared output rows (split.c): a thread
 * that is done with its own column slice takes the other slice's rows
 * that are still unclaimed. With the session's test hook split_yield,
 * thread 1 publishes its activation and then leaves every row of its own
 * slice to thread 0, so thread 0 computes all output rows of both slices
 * in every pass (Wo, and a dense layer's ffn_down), reading thread 1's
 * activation. Decode logits must still equal the 1-thread ones bit for
 * bit at every position: llama-tiny Q4_0 and F16 (dense, quantized and
 * f32 activations) and maple-tiny Q4_0 (MoE: Wo). A mutant that computes
 * the other slice's rows on its own activation fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "helpers.h"
#include "model/session.h"

static void yield_decode_equal(const char *preset, int type) {
    char path[512];
    if (th_synth(th_dir, preset, type, path, sizeof path)) fail_msg("synth: %s", tb_last_error());
    tb_model_t *m;
    if (tb_model_load(path, &m)) fail_msg("load: %s", tb_last_error());
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    assert_int_equal(in.split_layers, in.n_layer);   /* every layer splits */
    const int V = tb_model_n_vocab(m), n = 32;
    int32_t ids[32];
    th_prompt(ids, n, V, 7);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 40;
    tb_session_t *s1, *s2;
    sp.n_threads = 1;
    assert_int_equal(tb_session_new(m, &sp, &s1), TB_OK);
    sp.n_threads = 2;
    assert_int_equal(tb_session_new(m, &sp, &s2), TB_OK);
    s2->split_yield = true;
    for (int t = 0; t < n; t++) {
        assert_int_equal(tb_session_eval(s1, &ids[t], 1, false), TB_OK);
        assert_int_equal(tb_session_eval(s2, &ids[t], 1, false), TB_OK);
        const float *a = tb_session_logits(s1, -1), *b = tb_session_logits(s2, -1);
        if (memcmp(a, b, (size_t)V * sizeof *a))
            fail_msg("%s type %d: position %d logits differ when thread 0 computes every output row "
                     "(rel L2 %.3g)", preset, type, t, th_rel_l2(a, b, (size_t)V));
    }
    tb_session_free(s1);
    tb_session_free(s2);
    tb_model_free(m);
}

static void test_yield_q4_0(void **st) { (void)st; yield_decode_equal("llama-tiny", TB_TYPE_Q4_0); }
static void test_yield_f16(void **st) { (void)st; yield_decode_equal("llama-tiny", TB_TYPE_F16); }
static void test_yield_maple(void **st) { (void)st; yield_decode_equal("maple-tiny", TB_TYPE_Q4_0); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yield_q4_0),
        cmocka_unit_test(test_yield_f16),
        cmocka_unit_test(test_yield_maple),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
