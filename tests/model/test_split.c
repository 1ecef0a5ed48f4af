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
 * The same at 3, 5 and 8 threads (two groups of threads, each sharing
 * its half's rows; thread 0 takes every output row of both halves) on
 * llama-tiny Q4_0.
 * Any thread count: a short prefill then token-by-token decode at 2..8
 * threads gives the 1-thread logits bit for bit at every position, on
 * llama-tiny Q4_0 and TQ2_0 (dense: every decode step through the split
 * layers at every count >= 2, which the split profile's run count shows)
 * and maple-tiny Q4_0 (MoE: split at 2 threads, the claimed passes of the
 * unsplit path at the others).
 * Also: a column slice read in place from the file mapping (weights
 * mmap, a tier that repacks nothing: every row read at the whole row's
 * stride) gives the logits of its packed copy (weights copy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "model/session.h"
#include "ternbench_profile.h"

static void yield_decode_equal(const char *preset, int type, int nth) {
    tb_model_t *m;
    if (th_load_split(preset, type, &m)) fail_msg("%s type %d: no model whose layers split", preset, type);
    const int V = tb_model_n_vocab(m), n = 32;
    int32_t ids[32];
    th_prompt(ids, n, V, 7);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 40;
    tb_session_t *s1, *s2;
    assert_int_equal(th_sessions_1_2(m, sp, &s1, &s2), TB_OK);
    if (nth != 2) {
        tb_session_free(s2);
        sp.n_threads = nth;
        assert_int_equal(tb_session_new(m, &sp, &s2), TB_OK);
    }
    s2->split_yield = true;
    for (int t = 0; t < n; t++) {
        assert_int_equal(tb_session_eval(s1, &ids[t], 1, false), TB_OK);
        assert_int_equal(tb_session_eval(s2, &ids[t], 1, false), TB_OK);
        const float *a = tb_session_logits(s1, -1), *b = tb_session_logits(s2, -1);
        if (memcmp(a, b, (size_t)V * sizeof *a))
            fail_msg("%s type %d, %d threads: position %d logits differ when thread 0 computes every "
                     "output row (rel L2 %.3g)", preset, type, nth, t, th_rel_l2(a, b, (size_t)V));
    }
    tb_session_free(s1);
    tb_session_free(s2);
    tb_model_free(m);
}

/* Logits of 12 tokens decoded one by one at 2 threads (split layers). */
static float *decode_logits(const char *path, tb_weights_mode_t mode, int *n_vocab) {
    tb_model_params_t mp = {.weights = mode};
    tb_model_t *m;
    if (tb_model_load_ex(path, &mp, &m) != TB_OK) fail_msg("%s: %s", path, tb_last_error());
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    assert_int_equal(in.split_layers, in.n_layer);
    assert_int_equal(in.repack_bytes, 0);            /* nothing repacked at this tier */
    const int V = tb_model_n_vocab(m), n = 12;
    *n_vocab = V;
    float *out = malloc(sizeof(float) * (size_t)V * n);   // (n, V)
    assert_non_null(out);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 16;
    sp.n_threads = 2;
    tb_session_t *s;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    for (int32_t t = 0; t < n; t++) {
        const int32_t id = (7 * t + 3) % V;
        assert_int_equal(tb_session_eval(s, &id, 1, false), TB_OK);
        memcpy(out + (size_t)t * V, tb_session_logits(s, -1), sizeof(float) * (size_t)V);
    }
    tb_session_free(s);
    tb_model_free(m);
    return out;
}

static void test_views_in_place(void **st) {
    (void)st;
    const tb_isa_t was = tb_isa_active();
    assert_int_equal(tb_isa_set(TB_ISA_GENERIC), TB_OK);
    const int types[] = {TB_TYPE_Q4_0, TB_TYPE_Q8_0, TB_TYPE_F16};
    for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
        char path[512];
        if (th_synth(th_dir, "llama-tiny", types[i], path, sizeof path)) fail_msg("synth: %s", tb_last_error());
        int V;
        float *a = decode_logits(path, TB_WEIGHTS_COPY, &V), *b = decode_logits(path, TB_WEIGHTS_MMAP, &V);
        if (memcmp(a, b, sizeof(float) * 12 * (size_t)V))
            fail_msg("llama-tiny type %d: logits differ between packed slices and slices read in place", types[i]);
        free(a);
        free(b);
    }
    assert_int_equal(tb_isa_set(was), TB_OK);
}

/* Logits at n_threads = 1..8 on the same prompt and decoded tokens. */
static void threads_equal(const char *preset, int type) {
    char path[512];
    if (th_synth(th_dir, preset, type, path, sizeof path)) fail_msg("synth: %s", tb_last_error());
    tb_model_t *m;
    if (tb_model_load(path, &m) != TB_OK) fail_msg("%s: %s", path, tb_last_error());
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    const int V = tb_model_n_vocab(m), n_pre = 5, n_dec = 8;
    int32_t ids[13];
    th_prompt(ids, n_pre + n_dec, V, 11);
    float *want = malloc(sizeof(float) * (size_t)V * (n_dec + 1));   // (n_dec + 1, V)
    assert_non_null(want);
    for (int nth = 1; nth <= 8; nth++) {
        tb_session_params_t sp = tb_session_default_params();
        sp.n_ctx = 16;
        sp.n_threads = nth;
        tb_session_t *s;
        assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
        tb_session_set_split_profile(s, true);
        for (int t = 0; t <= n_dec; t++) {
            /* step 0: the prompt in one prefill call; then one token at a time */
            const int32_t *tok = t ? &ids[n_pre + t - 1] : ids;
            assert_int_equal(tb_session_eval(s, tok, t ? 1 : n_pre, false), TB_OK);
            const float *l = tb_session_logits(s, -1);
            float *w = want + (size_t)t * V;
            if (nth == 1) memcpy(w, l, sizeof(float) * (size_t)V);
            else if (memcmp(w, l, sizeof(float) * (size_t)V))
                fail_msg("%s type %d: %s %d logits differ, %d threads vs 1 (rel L2 %.3g)", preset, type,
                         t ? "decode step" : "prefill", t, nth, th_rel_l2(l, w, (size_t)V));
        }
        tb_split_profile_t sp_out;
        tb_session_get_split_profile(s, &sp_out);
        const bool split = in.split_layers == in.n_layer && nth >= 2 && (in.n_expert == 0 || nth == 2);
        if (sp_out.runs != (split ? (uint64_t)n_dec : 0))
            fail_msg("%s type %d: %d threads: %llu split runs in %d decode steps, expected %d", preset, type, nth,
                     (unsigned long long)sp_out.runs, n_dec, split ? n_dec : 0);
        tb_session_free(s);
    }
    free(want);
    tb_model_free(m);
}

static void test_threads_q4_0(void **st) { (void)st; threads_equal("llama-tiny", TB_TYPE_Q4_0); }
static void test_threads_tq2_0(void **st) { (void)st; threads_equal("llama-tiny", TB_TYPE_TQ2_0); }
static void test_threads_maple(void **st) { (void)st; threads_equal("maple-tiny", TB_TYPE_Q4_0); }

static void test_yield_q4_0(void **st) { (void)st; yield_decode_equal("llama-tiny", TB_TYPE_Q4_0, 2); }
static void test_yield_f16(void **st) { (void)st; yield_decode_equal("llama-tiny", TB_TYPE_F16, 2); }
static void test_yield_maple(void **st) { (void)st; yield_decode_equal("maple-tiny", TB_TYPE_Q4_0, 2); }
static void test_yield_groups(void **st) {
    (void)st;
    const int nths[] = {3, 5, 8};
    for (size_t i = 0; i < TB_ARRAY_LEN(nths); i++) yield_decode_equal("llama-tiny", TB_TYPE_Q4_0, nths[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yield_q4_0),
        cmocka_unit_test(test_yield_f16),
        cmocka_unit_test(test_yield_maple),
        cmocka_unit_test(test_yield_groups),
        cmocka_unit_test(test_views_in_place),
        cmocka_unit_test(test_threads_q4_0),
        cmocka_unit_test(test_threads_tq2_0),
        cmocka_unit_test(test_threads_maple),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
