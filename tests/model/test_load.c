/*
 * test_load.c — model loading: info of the presets, clear errors for a
 * missing tensor / wrong shape / unknown architecture / missing key, and
 * tb_model_bytes_per_token against a hand computation from the hparams.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static void synth(const char *preset, char *path, size_t cap) {
    if (th_synth(th_dir, preset, -1, path, cap)) fail_msg("synth %s: %s", preset, tb_last_error());
}

/* Load a rewritten copy of `preset` and expect `status` and every needle in the message. */
static void expect_error(const char *preset, const th_edit *e, const char *name, int status,
                         const char *n1, const char *n2) {
    char src[512], dst[512];
    synth(preset, src, sizeof src);
    snprintf(dst, sizeof dst, "%s/%s.gguf", th_dir, name);
    assert_int_equal(th_rewrite(src, dst, e), TB_OK);
    tb_model_t *m = (tb_model_t *)0x1;
    int rc = tb_model_load(dst, &m);
    const char *msg = tb_last_error();
    print_message("%s: %s\n", name, msg);
    assert_int_equal(rc, status);
    assert_null(m);
    assert_non_null(strstr(msg, dst));
    if (n1) assert_non_null(strstr(msg, n1));
    if (n2) assert_non_null(strstr(msg, n2));
}

static void test_missing_tensor(void **st) {
    (void)st;
    th_edit e = {.drop_tensor = "blk.1.attn_k.weight"};
    expect_error("llama-tiny", &e, "missing", TB_ERR_NOT_FOUND, "blk.1.attn_k", "[256, 128]");
    th_edit e2 = {.drop_tensor = "blk.0.attn_q_norm.weight"};
    expect_error("maple-tiny", &e2, "missing-qnorm", TB_ERR_NOT_FOUND, "blk.0.attn_q_norm", "[64]");
    th_edit e3 = {.drop_tensor = "output.weight"};   /* maple's head is untied: required */
    expect_error("maple-tiny", &e3, "missing-output", TB_ERR_NOT_FOUND, "'output'", NULL);
}

static void test_wrong_shape(void **st) {
    (void)st;
    th_edit e = {.transpose_tensor = "blk.0.attn_v.weight"};
    expect_error("llama-tiny", &e, "shape", TB_ERR_FORMAT, "blk.0.attn_v", "expected [256, 128]");
    th_edit e2 = {.transpose_tensor = "blk.1.ffn_gate_inp.weight"};
    expect_error("moe-tiny", &e2, "shape-router", TB_ERR_FORMAT, "blk.1.ffn_gate_inp", "expected [256, 4]");
}

static void test_unknown_arch(void **st) {
    (void)st;
    th_edit e = {.arch = "gptj"};
    expect_error("llama-tiny", &e, "arch", TB_ERR_UNSUPPORTED, "gptj", NULL);
    th_edit e2 = {.drop_key = "maple.attention.sliding_window_pattern"};
    expect_error("maple-tiny", &e2, "nokey", TB_ERR_NOT_FOUND, "maple.attention.sliding_window_pattern", NULL);
}

/* Logits of a 6-token prefill (all rows) and 3 decoded tokens. */
static float *run_logits(const char *path, tb_weights_mode_t mode, tb_model_info_t *in) {
    tb_model_params_t mp = {.weights = mode};
    tb_model_t *m;
    if (tb_model_load_ex(path, &mp, &m) != TB_OK) fail_msg("%s: %s", path, tb_last_error());
    assert_int_equal(tb_model_get_info(m, in), TB_OK);
    const int32_t V = in->n_vocab, ids[6] = {3, 1, 4, 1, 5, 9};
    float *out = malloc(sizeof(float) * (size_t)V * 9);   // (9, V)
    assert_non_null(out);
    tb_session_t *s;
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 16;
    sp.n_threads = 2;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    assert_int_equal(tb_session_eval(s, ids, 6, true), TB_OK);
    for (int i = 0; i < 6; i++) memcpy(out + (size_t)i * V, tb_session_logits(s, i), sizeof(float) * (size_t)V);
    for (int i = 6; i < 9; i++) {
        int32_t t = 2 + i;
        assert_int_equal(tb_session_eval(s, &t, 1, false), TB_OK);
        memcpy(out + (size_t)i * V, tb_session_logits(s, -1), sizeof(float) * (size_t)V);
    }
    tb_session_free(s);
    tb_model_free(m);
    return out;
}

/* Weights copied into huge pages (default) and read from the file mapping
 * give bit-identical logits: the same kernels read the same bytes. The
 * copy mode accounts its memory; an unknown mode is refused. Tied head too. */
static void test_weights_modes(void **st) {
    (void)st;
    char paths[3][512];
    synth("maple-tiny", paths[0], sizeof paths[0]);
    synth("moe-tiny", paths[1], sizeof paths[1]);
    char src[512];
    synth("llama-tiny", src, sizeof src);
    snprintf(paths[2], sizeof paths[2], "%s/tied-modes.gguf", th_dir);
    th_edit e = {.drop_tensor = "output.weight"};
    assert_int_equal(th_rewrite(src, paths[2], &e), TB_OK);
    for (int f = 0; f < 3; f++) {
        tb_model_info_t ic, im;
        float *a = run_logits(paths[f], TB_WEIGHTS_COPY, &ic), *b = run_logits(paths[f], TB_WEIGHTS_MMAP, &im);
        if (memcmp(a, b, sizeof(float) * (size_t)ic.n_vocab * 9) != 0)
            fail_msg("%s: logits differ between weights = copy and weights = mmap", paths[f]);
        assert_int_equal(ic.weights_mode, TB_WEIGHTS_COPY);
        assert_int_equal(im.weights_mode, TB_WEIGHTS_MMAP);
        assert_true(ic.resident_bytes >= ic.repack_bytes);
        assert_true(ic.resident_bytes > 0);
        assert_int_equal(im.repack_bytes, ic.repack_bytes);
        /* mmap mode holds only the repacked copies (every type, on a tier
         * that repacks them all), copy mode those and plain copies */
        assert_true(im.resident_bytes >= im.repack_bytes);
        assert_true(im.resident_bytes <= ic.resident_bytes);
        if (im.repack_bytes == 0) assert_int_equal(im.resident_bytes, 0);
        assert_int_equal(im.split_layers, ic.split_layers);
        free(a);
        free(b);
    }
    tb_model_params_t bad = {.weights = (tb_weights_mode_t)7};
    tb_model_t *m = (tb_model_t *)0x1;
    assert_int_equal(tb_model_load_ex(paths[0], &bad, &m), TB_ERR_ARG);
}

static void test_tied_output(void **st) {
    (void)st;
    char src[512], dst[512];
    synth("llama-tiny", src, sizeof src);
    snprintf(dst, sizeof dst, "%s/tied.gguf", th_dir);
    th_edit e = {.drop_tensor = "output.weight"};
    assert_int_equal(th_rewrite(src, dst, &e), TB_OK);
    tb_model_t *m;
    assert_int_equal(tb_model_load(dst, &m), TB_OK);
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    tb_bytes_per_token_t b;
    assert_int_equal(tb_model_bytes_per_token(m, 0, TB_TYPE_F32, &b), TB_OK);
    assert_int_equal(b.output, (uint64_t)in.n_vocab * (uint64_t)in.n_embd * 4u);  /* reads token_embd */
    tb_session_t *s;
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 8;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    int32_t ids[3] = {5, 6, 7};
    assert_int_equal(tb_session_eval(s, ids, 3, false), TB_OK);
    tb_session_free(s);
    tb_model_free(m);
}

static void test_info(void **st) {
    (void)st;
    char path[512];
    synth("maple-tiny", path, sizeof path);
    tb_model_t *m;
    assert_int_equal(tb_model_load(path, &m), TB_OK);
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    assert_string_equal(in.arch, "maple");
    assert_true(in.n_layer > 0 && in.n_expert > in.n_expert_used && in.n_expert_used > 0);
    assert_true(in.n_swa > 0 && in.n_swa_layers > 0 && in.n_swa_layers < in.n_layer);
    assert_true(in.rope_dims < in.head_dim);
    assert_int_equal(in.main_type, TB_TYPE_F32);
    assert_int_equal(in.weight_bytes, (uint64_t)in.n_params * 4u);    /* all F32 */
    assert_true(in.file_bytes > in.weight_bytes);
    assert_true(in.n_params_active < in.n_params);
    /* active = all - (1 - used/n_expert) of the three expert stacks */
    int64_t exp_all = 3ll * in.n_layer * in.n_expert * in.n_embd * in.n_ff_exp;
    assert_int_equal(in.n_params - in.n_params_active,
                     exp_all - exp_all / in.n_expert * in.n_expert_used);
    assert_int_equal(tb_model_n_vocab(m), in.n_vocab);
    assert_ptr_not_equal(tb_model_gguf(m), NULL);
    tb_model_free(m);

    assert_int_equal(tb_model_load("/nonexistent/x.gguf", &m), TB_ERR_IO);
    assert_null(m);
}

/* Hand computation for llama-tiny (dense) and maple-tiny (MoE + sliding). */
static void test_bytes_per_token(void **st) {
    (void)st;
    char path[512];
    tb_model_t *m;
    tb_model_info_t in;
    tb_bytes_per_token_t b;

    synth("llama-tiny", path, sizeof path);
    assert_int_equal(tb_model_load(path, &m), TB_OK);
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    uint64_t E = (uint64_t)in.n_embd, QD = (uint64_t)in.n_head * (uint64_t)in.head_dim;
    uint64_t KD = (uint64_t)in.n_head_kv * (uint64_t)in.head_dim, F = (uint64_t)in.n_ff;
    uint64_t layer = 4 * (E + E * QD + 2 * E * KD + QD * E + E + 3 * E * F);
    assert_int_equal(tb_model_bytes_per_token(m, 100, TB_TYPE_F16, &b), TB_OK);
    assert_int_equal(b.weights, (uint64_t)in.n_layer * layer + 4 * E);
    assert_int_equal(b.embd_row, 4 * E);
    assert_int_equal(b.output, 4 * E * (uint64_t)in.n_vocab);
    assert_int_equal(b.kv, (uint64_t)in.n_layer * 100u * 2u * KD * 2u);
    assert_int_equal(b.total, b.weights + b.embd_row + b.output + b.kv);
    assert_int_equal(tb_model_bytes_per_token(m, 100, TB_TYPE_Q4_0, &b), TB_ERR_ARG);
    tb_model_free(m);

    synth("maple-tiny", path, sizeof path);
    assert_int_equal(tb_model_load(path, &m), TB_OK);
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    E = (uint64_t)in.n_embd; QD = (uint64_t)in.n_head * (uint64_t)in.head_dim;
    KD = (uint64_t)in.n_head_kv * (uint64_t)in.head_dim;
    uint64_t X = (uint64_t)in.n_expert, K = (uint64_t)in.n_expert_used, FX = (uint64_t)in.n_ff_exp;
    uint64_t HD = (uint64_t)in.head_dim;
    layer = 4 * (E + E * QD + 2 * E * KD + QD * E + 2 * HD + E + E * X) + 4 * 3 * E * FX * K;
    const uint64_t ctx = 100, swa = (uint64_t)in.n_swa;
    assert_true(swa < ctx);
    assert_int_equal(tb_model_bytes_per_token(m, (int32_t)ctx, TB_TYPE_F32, &b), TB_OK);
    assert_int_equal(b.weights, (uint64_t)in.n_layer * layer + 4 * E);
    assert_int_equal(b.kv, 2u * KD * 4u * ((uint64_t)in.n_swa_layers * swa +
                                           (uint64_t)(in.n_layer - in.n_swa_layers) * ctx));
    /* below the window, sliding layers read the whole context */
    assert_int_equal(tb_model_bytes_per_token(m, 3, TB_TYPE_F32, &b), TB_OK);
    assert_int_equal(b.kv, 2u * KD * 4u * 3u * (uint64_t)in.n_layer);
    tb_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_tensor),
        cmocka_unit_test(test_wrong_shape),
        cmocka_unit_test(test_unknown_arch),
        cmocka_unit_test(test_tied_output),
        cmocka_unit_test(test_weights_modes),
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_bytes_per_token),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
