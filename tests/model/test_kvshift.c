/*
 * test_kvshift.c — tb_session_kv_shift against fresh sessions.
 *
 * A kept row of the cache holds what its token computed with the discarded
 * tokens in context, so a shifted session equals a fresh session given
 * only the kept tokens exactly where the rows depend on tokens and
 * positions alone. The test makes that so: every layer's attention output
 * projection but one layer's (il) is zeroed, so the residual stream into
 * layer il depends on each token alone (embedding and per-token FFNs), its
 * K/V rows on the token and position, and the logits on the context only
 * through layer il's attention. Then, for il a RoPE layer (llama-tiny's
 * two; maple-tiny's sliding layer 0, a 16-slot ring the test wraps) and a
 * NoPE layer (maple-tiny's global layer 3), with f32 and f16 caches:
 * prefill 60 tokens, shift by d, decode 3 tokens and one 20-token chunk;
 * a fresh session prefills tokens d..59 and does the same. The logits:
 *   NoPE  bit-identical (rows moved, not recomputed);
 *   RoPE  relative L2 within KSHIFT_REL_L2_*: the fresh key is rope(p-d)k
 *         rounded once to the cache type, the shifted one rope(-d)rope(p)k
 *         rounded twice, so each key differs by about one unit roundoff u
 *         of the cache type (2^-24 f32, 2^-11 f16); through the scores,
 *         the later layers and the head the logits differ by at most 12 u
 *         (f32) and 2 u (f16) on these models, the budgets are 64 u and
 *         16 u. Keys moved without the re-rotation miss by 0.3 to 1.4.
 * Also on the unmodified models: shifting everything out gives a fresh
 * session's logits bit for bit, a shift of 0 changes nothing, the last
 * logits stay readable, out-of-range shifts are TB_ERR_ARG.
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

#define KSHIFT_REL_L2_F32 (64.0 / 16777216.0)   /* 64 * 2^-24 */
#define KSHIFT_REL_L2_F16 (16.0 / 2048.0)       /* 16 * 2^-11 */

enum { N_PROMPT = 60, N_CTX = 96, N_DEC = 3, N_CHUNK = 20 };

/* th_dir/<preset>-only<il>.gguf: the preset with blk.*.attn_output zeroed
 * except layer il's. */
static tb_model_t *load_only(const char *preset, int il) {
    char src[512], dst[512];
    assert_int_equal(th_synth(th_dir, preset, -1, src, sizeof src), TB_OK);
    snprintf(dst, sizeof dst, "%s/%s-only%d.gguf", th_dir, preset, il);
    tb_gguf_t *g;
    tb_gguf_writer_t *w;
    assert_int_equal(tb_gguf_open(src, &g), TB_OK);
    assert_int_equal(tb_gguf_writer_new(&w), TB_OK);
    for (int64_t i = 0; i < tb_gguf_n_kv(g); i++) assert_int_equal(tb_gguf_copy_kv(w, g, i), TB_OK);
    const int64_t nt = tb_gguf_n_tensors(g);
    for (int64_t i = 0; i < nt; i++) {
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
        assert_int_equal(tb_gguf_add_tensor(w, t.name, t.type, t.n_dims, t.ne), TB_OK);
    }
    assert_int_equal(tb_gguf_writer_begin(w, dst), TB_OK);
    char keep[64];
    snprintf(keep, sizeof keep, "blk.%d.attn_output.weight", il);
    int zeroed = 0;
    for (int64_t i = 0; i < nt; i++) {
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
        const void *data = t.data;
        void *zero = NULL;
        if (strstr(t.name, ".attn_output.weight") && strcmp(t.name, keep)) {
            zero = calloc(1, t.nbytes);
            assert_non_null(zero);
            data = zero;
            zeroed++;
        }
        assert_int_equal(tb_gguf_write_tensor_data(w, data, t.nbytes), TB_OK);
        free(zero);
    }
    assert_int_equal(tb_gguf_writer_finish(w), TB_OK);
    tb_gguf_writer_free(w);
    tb_gguf_close(g);
    assert_true(zeroed > 0);
    tb_model_t *m;
    assert_int_equal(tb_model_load(dst, &m), TB_OK);
    return m;
}

static tb_session_t *new_session(const tb_model_t *m, tb_type_t kv) {
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = N_CTX;
    sp.kv_type = kv;
    tb_session_t *s;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    return s;
}

/* Worst relative L2 of the logits of a (shifted by d) against b (fresh
 * with the kept tokens) over 3 decode steps and a 20-token chunk; *exact
 * is set when every row is bit-identical. */
static double shifted_vs_fresh(const tb_model_t *m, tb_type_t kv, int d, bool *exact) {
    const int V = tb_model_n_vocab(m);
    int32_t ids[N_PROMPT + N_DEC + N_CHUNK];
    th_prompt(ids, N_PROMPT + N_DEC + N_CHUNK, V, 7);
    tb_session_t *a = new_session(m, kv), *b = new_session(m, kv);
    assert_int_equal(tb_session_eval(a, ids, N_PROMPT, false), TB_OK);
    assert_int_equal(tb_session_kv_shift(a, d), TB_OK);
    assert_int_equal(tb_session_pos(a), N_PROMPT - d);
    assert_int_equal(tb_session_eval(b, ids + d, N_PROMPT - d, false), TB_OK);
    double worst = 0;
    *exact = true;
    for (int t = 0; t < N_DEC + 1; t++) {
        const bool chunk = t == N_DEC;
        const int32_t *tok = ids + N_PROMPT + t;
        const int n = chunk ? N_CHUNK : 1;
        assert_int_equal(tb_session_eval(a, tok, n, chunk), TB_OK);
        assert_int_equal(tb_session_eval(b, tok, n, chunk), TB_OK);
        for (int r = 0; r < n; r++) {
            const float *la = tb_session_logits(a, r), *lb = tb_session_logits(b, r);
            assert_non_null(la);
            assert_non_null(lb);
            double e = th_rel_l2(la, lb, (size_t)V);
            worst = e > worst ? e : worst;
            *exact &= memcmp(la, lb, (size_t)V * sizeof *la) == 0;
        }
    }
    assert_int_equal(tb_session_pos(a), tb_session_pos(b));
    tb_session_free(a);
    tb_session_free(b);
    return worst;
}

/* Layer il of preset, both cache types, shifts of 5 (rows move less than
 * a 16-slot ring) and 37 (more than it, not a multiple of it). */
static void check_layer(const char *preset, int il, bool rope) {
    tb_model_t *m = load_only(preset, il);
    const tb_type_t kvs[] = {TB_TYPE_F32, TB_TYPE_F16};
    const int ds[] = {5, 37};
    for (size_t k = 0; k < 2; k++)
        for (size_t j = 0; j < 2; j++) {
            bool exact;
            double e = shifted_vs_fresh(m, kvs[k], ds[j], &exact);
            print_message("%s layer %d kv %s shift %d: relative L2 %.3g%s\n", preset, il,
                          tb_type_name(kvs[k]), ds[j], e, exact ? " (bit-identical)" : "");
            if (!rope) assert_true(exact);
            else assert_true(e <= (kvs[k] == TB_TYPE_F32 ? KSHIFT_REL_L2_F32 : KSHIFT_REL_L2_F16));
        }
    tb_model_free(m);
}

static void test_llama_layer0(void **st) { (void)st; check_layer("llama-tiny", 0, true); }
static void test_llama_layer1(void **st) { (void)st; check_layer("llama-tiny", 1, true); }
static void test_maple_sliding(void **st) { (void)st; check_layer("maple-tiny", 0, true); }
static void test_maple_global(void **st) { (void)st; check_layer("maple-tiny", 3, false); }

/* The unmodified model: shift everything out == a fresh session, bit for
 * bit; shift 0 is a no-op; the last logits survive a shift; bad ranges. */
static void check_edges(const char *preset) {
    char path[512];
    assert_int_equal(th_synth(th_dir, preset, -1, path, sizeof path), TB_OK);
    tb_model_t *m;
    assert_int_equal(tb_model_load(path, &m), TB_OK);
    const int V = tb_model_n_vocab(m);
    int32_t ids[40];
    th_prompt(ids, 40, V, 11);
    tb_session_t *a = new_session(m, TB_TYPE_F16), *b = new_session(m, TB_TYPE_F16);
    assert_int_equal(tb_session_eval(a, ids, 30, false), TB_OK);
    float *last = malloc((size_t)V * sizeof *last);
    assert_non_null(last);
    memcpy(last, tb_session_logits(a, -1), (size_t)V * sizeof *last);
    assert_int_equal(tb_session_kv_shift(a, -1), TB_ERR_ARG);
    assert_int_equal(tb_session_kv_shift(a, 31), TB_ERR_ARG);
    assert_int_equal(tb_session_kv_shift(NULL, 1), TB_ERR_ARG);
    assert_int_equal(tb_session_kv_shift(a, 0), TB_OK);
    assert_int_equal(tb_session_pos(a), 30);
    assert_int_equal(tb_session_kv_shift(a, 30), TB_OK);
    assert_int_equal(tb_session_pos(a), 0);
    assert_memory_equal(tb_session_logits(a, -1), last, (size_t)V * sizeof *last);
    assert_int_equal(tb_session_eval(a, ids + 30, 10, true), TB_OK);
    assert_int_equal(tb_session_eval(b, ids + 30, 10, true), TB_OK);
    for (int r = 0; r < 10; r++)
        assert_memory_equal(tb_session_logits(a, r), tb_session_logits(b, r), (size_t)V * sizeof(float));
    free(last);
    tb_session_free(a);
    tb_session_free(b);
    tb_model_free(m);
}

static void test_edges_llama(void **st) { (void)st; check_edges("llama-tiny"); }
static void test_edges_maple(void **st) { (void)st; check_edges("maple-tiny"); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_layer0),
        cmocka_unit_test(test_llama_layer1),
        cmocka_unit_test(test_maple_sliding),
        cmocka_unit_test(test_maple_global),
        cmocka_unit_test(test_edges_llama),
        cmocka_unit_test(test_edges_maple),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
