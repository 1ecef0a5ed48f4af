/*
 * test_session.c — session behaviour:
 *  - greedy 64-token continuations identical for 1 and 2 threads, and for
 *    batched prefill vs token-by-token decode (and the final logits
 *    bit-identical), for maple-tiny, llama-tiny and moe-tiny;
 *  - prefill logits (all rows) bit-identical to decode logits row by row,
 *    also with the prefill gemms cut into the smallest tiles;
 *  - llama-tiny Q4_0 / Q8_0 / F16 / BF16 (Wo and ffn_down cut into column
 *    slices, so a 2-thread decode runs the split two-pass layers; F16 and
 *    BF16 on f32 activations) and maple-tiny Q4_0 /
 *    moe-tiny Q8_0 (Wo cut; the split three-pass MoE layers): decode
 *    logits at 2 threads bit-identical to 1 thread token by token, and to
 *    prefill;
 *  - KV F16 close to KV F32;
 *  - context overflow is TB_ERR_RANGE and leaves the session usable;
 *  - logits accessor, reset, out-of-vocabulary ids, memory accounting.
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
#include "model/model.h"   /* tb_lin_set_gemm_tile */

#define N_PROMPT 24
#define N_GEN 64
/* F16 KV rounds K and V to 11 significant bits: logits move by ~1e-3. */
#define BUDGET_KV_F16_REL_L2 1e-2

static tb_model_t *load_preset(const char *preset) {
    char path[512];
    if (th_synth(th_dir, preset, -1, path, sizeof path)) fail_msg("synth %s: %s", preset, tb_last_error());
    tb_model_t *m;
    if (tb_model_load(path, &m)) fail_msg("load %s: %s", preset, tb_last_error());
    return m;
}

static void greedy_same(const char *preset) {
    tb_model_t *m = load_preset(preset);
    const int V = tb_model_n_vocab(m);
    int32_t prompt[N_PROMPT], g1[N_GEN], g2[N_GEN], g3[N_GEN];
    float *l1 = malloc((size_t)V * sizeof *l1), *l2 = malloc((size_t)V * sizeof *l2),
          *l3 = malloc((size_t)V * sizeof *l3);
    th_prompt(prompt, N_PROMPT, V, 3);
    assert_int_equal(th_greedy(m, 1, 512, TB_TYPE_F16, prompt, N_PROMPT, false, g1, N_GEN, l1), TB_OK);
    assert_int_equal(th_greedy(m, 2, 512, TB_TYPE_F16, prompt, N_PROMPT, false, g2, N_GEN, l2), TB_OK);
    assert_int_equal(th_greedy(m, 2, 512, TB_TYPE_F16, prompt, N_PROMPT, true, g3, N_GEN, l3), TB_OK);
    assert_memory_equal(g1, g2, sizeof g1);
    assert_memory_equal(g1, g3, sizeof g1);
    assert_memory_equal(l1, l2, (size_t)V * sizeof *l1);
    assert_memory_equal(l1, l3, (size_t)V * sizeof *l1);
    /* the continuation is not degenerate (a constant output would pass trivially) */
    int distinct = 0;
    for (int i = 1; i < N_GEN; i++) distinct += g1[i] != g1[0];
    assert_true(distinct > 0);
    free(l1); free(l2); free(l3);
    tb_model_free(m);
}

static void test_greedy_maple(void **st) { (void)st; greedy_same("maple-tiny"); }

/* A pool run that marks which threads ran (test_shared_pool). */
static void count_run(void *arg, int ith, int nth) {
    (void)nth;
    ((int *)arg)[ith] = 1;
}
static void test_greedy_llama(void **st) { (void)st; greedy_same("llama-tiny"); }
static void test_greedy_moe(void **st) { (void)st; greedy_same("moe-tiny"); }

/* All-rows prefill (in chunks of 9, across the 16-token ring) vs decode. */
static void prefill_rows_equal_decode(const char *preset, int n_threads) {
    tb_model_t *m = load_preset(preset);
    const int V = tb_model_n_vocab(m), n = 40;
    int32_t ids[40];
    th_prompt(ids, n, V, 11);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 48;
    sp.n_threads = n_threads;
    sp.n_batch = 9;
    tb_session_t *a, *b;
    assert_int_equal(tb_session_new(m, &sp, &a), TB_OK);
    sp.n_threads = 1;
    assert_int_equal(tb_session_new(m, &sp, &b), TB_OK);
    assert_int_equal(tb_session_eval(a, ids, n, true), TB_OK);
    for (int t = 0; t < n; t++) {
        assert_int_equal(tb_session_eval(b, &ids[t], 1, false), TB_OK);
        const float *pa = tb_session_logits(a, t), *pb = tb_session_logits(b, -1);
        assert_non_null(pa);
        assert_non_null(pb);
        if (memcmp(pa, pb, (size_t)V * sizeof *pa))
            fail_msg("%s: position %d prefill and decode logits differ (rel L2 %.3g)", preset, t,
                     th_rel_l2(pa, pb, (size_t)V));
    }
    tb_session_free(a);
    tb_session_free(b);
    tb_model_free(m);
}

/* Token-by-token decode at 2 threads (the split layers) against 1 thread
 * and against an all-rows prefill, bit for bit, for a file whose layers
 * split: a dense one (Wo and ffn_down cut into slices) or an MoE one (Wo
 * cut; each thread half of the router and of the selected experts). */
static void split_decode_equal(const char *preset, int type) {
    tb_model_t *m;
    if (th_load_split(preset, type, &m)) fail_msg("%s type %d: no model whose layers split", preset, type);
    const int V = tb_model_n_vocab(m), n = 40;
    int32_t ids[40];
    th_prompt(ids, n, V, 5);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 48;
    sp.n_batch = 9;
    tb_session_t *s1, *s2, *sp2;
    assert_int_equal(th_sessions_1_2(m, sp, &s1, &s2), TB_OK);
    sp.n_threads = 2;
    assert_int_equal(tb_session_new(m, &sp, &sp2), TB_OK);
    assert_int_equal(tb_session_eval(sp2, ids, n, true), TB_OK);
    for (int t = 0; t < n; t++) {
        assert_int_equal(tb_session_eval(s1, &ids[t], 1, false), TB_OK);
        assert_int_equal(tb_session_eval(s2, &ids[t], 1, false), TB_OK);
        const float *a = tb_session_logits(s1, -1), *b = tb_session_logits(s2, -1), *c = tb_session_logits(sp2, t);
        if (memcmp(a, b, (size_t)V * sizeof *a))
            fail_msg("%s type %d: position %d decode logits differ, 1 vs 2 threads (rel L2 %.3g)", preset,
                     type, t, th_rel_l2(a, b, (size_t)V));
        if (memcmp(b, c, (size_t)V * sizeof *b))
            fail_msg("%s type %d: position %d 2-thread decode and prefill logits differ (rel L2 %.3g)",
                     preset, type, t, th_rel_l2(b, c, (size_t)V));
    }
    tb_session_free(s1);
    tb_session_free(s2);
    tb_session_free(sp2);
    tb_model_free(m);
}

static void test_split_decode_q4_0(void **st) { (void)st; split_decode_equal("llama-tiny", TB_TYPE_Q4_0); }
static void test_split_decode_q8_0(void **st) { (void)st; split_decode_equal("llama-tiny", TB_TYPE_Q8_0); }
static void test_split_decode_f16(void **st) { (void)st; split_decode_equal("llama-tiny", TB_TYPE_F16); }
static void test_split_decode_bf16(void **st) { (void)st; split_decode_equal("llama-tiny", TB_TYPE_BF16); }
static void test_split_decode_maple(void **st) { (void)st; split_decode_equal("maple-tiny", TB_TYPE_Q4_0); }
static void test_split_decode_moe(void **st) { (void)st; split_decode_equal("moe-tiny", TB_TYPE_Q8_0); }

static void test_prefill_rows_maple(void **st) { (void)st; prefill_rows_equal_decode("maple-tiny", 2); }
static void test_prefill_rows_moe(void **st) { (void)st; prefill_rows_equal_decode("moe-tiny", 2); }

/* The same with the prefill gemms cut into the smallest tiles (one 16-row
 * unit of rows, 2 tokens), so a tiny model's passes cross many tile edges
 * and odd token tails: a tiling that dropped, repeated or misplaced rows
 * or tokens would change logits. */
static void prefill_rows_tiled(const char *preset) {
    tb_lin_set_gemm_tile(1, 2);
    prefill_rows_equal_decode(preset, 2);
    tb_lin_set_gemm_tile(0, 0);
}
static void test_prefill_rows_tiled_llama(void **st) { (void)st; prefill_rows_tiled("llama-tiny"); }
static void test_prefill_rows_tiled_moe(void **st) { (void)st; prefill_rows_tiled("moe-tiny"); }

static void test_kv_f16_close(void **st) {
    (void)st;
    tb_model_t *m = load_preset("maple-tiny");
    const int V = tb_model_n_vocab(m), n = 32;
    int32_t ids[32];
    th_prompt(ids, n, V, 5);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 32;
    tb_session_t *a, *b;
    sp.kv_type = TB_TYPE_F32;
    assert_int_equal(tb_session_new(m, &sp, &a), TB_OK);
    sp.kv_type = TB_TYPE_F16;
    assert_int_equal(tb_session_new(m, &sp, &b), TB_OK);
    assert_true(tb_session_memory_bytes(b) < tb_session_memory_bytes(a));
    assert_int_equal(tb_session_eval(a, ids, n, true), TB_OK);
    assert_int_equal(tb_session_eval(b, ids, n, true), TB_OK);
    double worst = 0;
    bool any_diff = false;
    for (int t = 0; t < n; t++) {
        double e = th_rel_l2(tb_session_logits(b, t), tb_session_logits(a, t), (size_t)V);
        worst = e > worst ? e : worst;
        any_diff |= e > 0;
    }
    print_message("KV f16 vs f32: worst relative L2 %.3g\n", worst);
    assert_true(any_diff);                  /* the cache type is really used */
    assert_true(worst < BUDGET_KV_F16_REL_L2);
    tb_session_free(a);
    tb_session_free(b);
    tb_model_free(m);
}

static void test_context_overflow(void **st) {
    (void)st;
    tb_model_t *m = load_preset("llama-tiny");
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 8;
    tb_session_t *s;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    int32_t ids[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(tb_session_eval(s, ids, 9, false), TB_ERR_RANGE);
    assert_int_equal(tb_session_pos(s), 0);
    assert_int_equal(tb_session_eval(s, ids, 6, false), TB_OK);
    assert_int_equal(tb_session_eval(s, ids, 3, false), TB_ERR_RANGE);
    assert_non_null(strstr(tb_last_error(), "n_ctx"));
    assert_int_equal(tb_session_pos(s), 6);
    assert_int_equal(tb_session_eval(s, ids, 2, false), TB_OK);
    assert_int_equal(tb_session_pos(s), 8);
    assert_int_equal(tb_session_eval(s, ids, 1, false), TB_ERR_RANGE);
    tb_session_reset(s);
    assert_int_equal(tb_session_pos(s), 0);
    assert_null(tb_session_logits(s, -1));
    assert_int_equal(tb_session_eval(s, ids, 8, false), TB_OK);
    tb_session_free(s);
    tb_model_free(m);
}

static void test_logits_and_args(void **st) {
    (void)st;
    tb_model_t *m = load_preset("llama-tiny");
    const int V = tb_model_n_vocab(m);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 16;
    tb_session_t *s;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    int32_t ids[4] = {1, 2, 3, 4};
    assert_int_equal(tb_session_eval(s, ids, 4, false), TB_OK);
    assert_non_null(tb_session_logits(s, -1));
    assert_non_null(tb_session_logits(s, 3));
    assert_ptr_equal(tb_session_logits(s, 3), tb_session_logits(s, -1));
    assert_null(tb_session_logits(s, 0));          /* not kept */
    assert_null(tb_session_logits(s, 4));
    int32_t bad[2] = {1, V};
    assert_int_equal(tb_session_eval(s, bad, 2, false), TB_ERR_RANGE);
    assert_int_equal(tb_session_pos(s), 4);
    assert_int_equal(tb_session_eval(s, ids, 0, false), TB_ERR_ARG);
    /* after reset, the same tokens give the same logits */
    float *first = malloc((size_t)V * sizeof *first);
    tb_session_reset(s);
    assert_int_equal(tb_session_eval(s, ids, 4, true), TB_OK);
    memcpy(first, tb_session_logits(s, 3), (size_t)V * sizeof *first);
    tb_session_reset(s);
    assert_int_equal(tb_session_eval(s, ids, 4, false), TB_OK);
    assert_memory_equal(first, tb_session_logits(s, -1), (size_t)V * sizeof *first);
    free(first);
    tb_session_free(s);

    sp.kv_type = TB_TYPE_Q8_0;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_ERR_ARG);
    sp = tb_session_default_params();
    sp.n_threads = 0;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_ERR_ARG);
    tb_model_free(m);
}

/* Sessions on one borrowed pool (tb_session_params_t.pool), taking turns
 * token by token as `bench --interleave token` runs them, give every
 * token the logits a session on its own pool gives (2 threads: the split
 * decode runs on the borrowed pool too); freeing them leaves the pool to
 * its owner, which can still run it; a pool of another size is refused. */
static void test_shared_pool(void **st) {
    (void)st;
    tb_model_t *a = load_preset("llama-tiny"), *b = load_preset("maple-tiny");
    const int Va = tb_model_n_vocab(a), Vb = tb_model_n_vocab(b);
    tb_pool_t *pool;
    assert_int_equal(tb_pool_new(2, &pool), TB_OK);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 64;
    sp.n_threads = 2;
    tb_session_t *own_a, *own_b, *sh_a, *sh_b;
    assert_int_equal(tb_session_new(a, &sp, &own_a), TB_OK);
    assert_int_equal(tb_session_new(b, &sp, &own_b), TB_OK);
    sp.pool = pool;
    assert_int_equal(tb_session_new(a, &sp, &sh_a), TB_OK);
    assert_int_equal(tb_session_new(b, &sp, &sh_b), TB_OK);
    int32_t ids[N_PROMPT];
    th_prompt(ids, N_PROMPT, Va < Vb ? Va : Vb, 5);
    assert_int_equal(tb_session_eval(own_a, ids, 8, false), TB_OK);
    assert_int_equal(tb_session_eval(sh_a, ids, 8, false), TB_OK);
    assert_int_equal(tb_session_eval(sh_b, ids, 8, false), TB_OK);
    assert_int_equal(tb_session_eval(own_b, ids, 8, false), TB_OK);
    for (int t = 8; t < N_PROMPT; t++) {   /* the shared pool alternates between its sessions */
        assert_int_equal(tb_session_eval(sh_a, &ids[t], 1, false), TB_OK);
        assert_int_equal(tb_session_eval(sh_b, &ids[t], 1, false), TB_OK);
        assert_int_equal(tb_session_eval(own_a, &ids[t], 1, false), TB_OK);
        assert_int_equal(tb_session_eval(own_b, &ids[t], 1, false), TB_OK);
        assert_memory_equal(tb_session_logits(own_a, -1), tb_session_logits(sh_a, -1), (size_t)Va * sizeof(float));
        assert_memory_equal(tb_session_logits(own_b, -1), tb_session_logits(sh_b, -1), (size_t)Vb * sizeof(float));
    }
    tb_session_free(sh_a);
    tb_session_free(sh_b);
    int ran[2] = {0, 0};
    tb_pool_run(pool, count_run, ran);   /* still the caller's */
    assert_int_equal(ran[0] + ran[1], 2);
    sp.n_threads = 1;   /* the pool has 2 */
    tb_session_t *bad = (tb_session_t *)&bad;
    assert_int_equal(tb_session_new(a, &sp, &bad), TB_ERR_ARG);
    assert_null(bad);
    if (!strstr(tb_last_error(), "pool")) fail_msg("mismatch message: %s", tb_last_error());
    tb_pool_free(pool);
    tb_session_free(own_a);
    tb_session_free(own_b);
    tb_model_free(a);
    tb_model_free(b);
}

/* Memory grows with n_ctx by exactly the KV bytes of the global layers
 * (sliding layers are capped at n_swa). */
static void test_memory_bytes(void **st) {
    (void)st;
    tb_model_t *m = load_preset("maple-tiny");
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    tb_session_params_t sp = tb_session_default_params();
    sp.kv_type = TB_TYPE_F32;
    sp.n_batch = 16;
    sp.n_threads = 1;
    tb_session_t *a, *b;
    sp.n_ctx = 64;
    assert_int_equal(tb_session_new(m, &sp, &a), TB_OK);
    sp.n_ctx = 128;
    assert_int_equal(tb_session_new(m, &sp, &b), TB_OK);
    uint64_t kv_per_pos = 2ull * (uint64_t)in.n_head_kv * (uint64_t)in.head_dim * 4u;
    uint64_t n_global = (uint64_t)(in.n_layer - in.n_swa_layers);
    /* per-thread score rows (one per query head of a kv group) grow with n_ctx */
    uint64_t scores = 64u * 4u * (uint64_t)(in.n_head / in.n_head_kv);
    assert_int_equal(tb_session_memory_bytes(b) - tb_session_memory_bytes(a),
                     64u * kv_per_pos * n_global + scores);
    tb_session_free(a);
    tb_session_free(b);
    tb_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_maple),
        cmocka_unit_test(test_greedy_llama),
        cmocka_unit_test(test_greedy_moe),
        cmocka_unit_test(test_prefill_rows_maple),
        cmocka_unit_test(test_prefill_rows_moe),
        cmocka_unit_test(test_prefill_rows_tiled_llama),
        cmocka_unit_test(test_prefill_rows_tiled_moe),
        cmocka_unit_test(test_split_decode_q4_0),
        cmocka_unit_test(test_split_decode_q8_0),
        cmocka_unit_test(test_split_decode_f16),
        cmocka_unit_test(test_split_decode_bf16),
        cmocka_unit_test(test_split_decode_maple),
        cmocka_unit_test(test_split_decode_moe),
        cmocka_unit_test(test_kv_f16_close),
        cmocka_unit_test(test_context_overflow),
        cmocka_unit_test(test_logits_and_args),
        cmocka_unit_test(test_memory_bytes),
        cmocka_unit_test(test_shared_pool),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
