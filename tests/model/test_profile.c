/*
 * test_profile.c — tb_session_set_profile / tb_session_get_profile:
 *  - off by default and after turning it off: evals add nothing;
 *  - on: tokens counted, every phase the architecture has is called once
 *    per layer per eval (router only for MoE), the phases' time fits in
 *    the total, and each matrix phase's bytes are exactly the weight bytes
 *    of the matrices it multiplies (the active experts' share for MoE);
 *  - a decode token runs one pool pass per phase and layer (the head one),
 *    and each phase's wake / prologue / tail sums lie within its time;
 *  - profiling does not change the logits (bit-identical on and off).
 * tb_session_set_split_profile / tb_session_get_split_profile, on models
 * whose layers all split (llama-tiny Q4_0: dense, maple-tiny Q4_0: MoE):
 *  - off by default, nothing on 1 thread, nothing while the phase profile
 *    (which turns the split off) is on;
 *  - on at 2 threads: one run per decode step, each layer's passes once
 *    per step (attention and ffn, or attention, router and experts), both
 *    threads' work counted, a prologue in every pass but the experts',
 *    the work's parts (rows, attention in attention passes only, an
 *    output slice in attention and ffn passes) within it;
 *  - the split-profiled decode's logits are the 1-thread ones bit for bit.
 * Times are only checked for consistency, never against a value.
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
#include "ternbench_profile.h"

/* Bytes of the named tensor (all layers when name starts with "blk.%d."). */
static uint64_t tensor_bytes(const tb_model_t *m, const char *name, int32_t n_layer) {
    const tb_gguf_t *g = tb_model_gguf(m);
    uint64_t b = 0;
    for (int32_t il = 0; il < (strstr(name, "%d") ? n_layer : 1); il++) {
        char full[96];
        snprintf(full, sizeof full, name, il);
        int64_t i = tb_gguf_find_tensor(g, full);
        if (i < 0) fail_msg("no tensor %s", full);
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
        b += t.nbytes;
    }
    return b;
}

static void check_preset(const char *preset) {
    char path[512];
    if (th_synth(th_dir, preset, -1, path, sizeof path)) fail_msg("synth %s: %s", preset, tb_last_error());
    tb_model_t *m;
    assert_int_equal(tb_model_load(path, &m), TB_OK);
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    const int V = in.n_vocab, L = in.n_layer;
    const bool moe = in.n_expert > 0;
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 64;
    sp.n_threads = 2;
    tb_session_t *s;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    int32_t ids[8];
    th_prompt(ids, 8, V, 7);
    float *off = malloc(sizeof(float) * (size_t)V), *on = malloc(sizeof(float) * (size_t)V);

    /* off: nothing counted */
    tb_profile_t p;
    assert_int_equal(tb_session_eval(s, ids, 5, false), TB_OK);
    assert_int_equal(tb_session_eval(s, &ids[5], 1, false), TB_OK);
    memcpy(off, tb_session_logits(s, -1), sizeof(float) * (size_t)V);
    tb_session_get_profile(s, &p);
    assert_int_equal(p.tokens, 0);
    assert_int_equal(p.total_ns, 0);
    for (int i = 0; i < TB_PHASE_COUNT; i++) assert_int_equal(p.phase[i].calls, 0);

    /* on: a 5-token prefill and one decode, the same evals as above */
    tb_session_reset(s);
    tb_session_set_profile(s, true);
    assert_int_equal(tb_session_eval(s, ids, 5, false), TB_OK);
    assert_int_equal(tb_session_eval(s, &ids[5], 1, false), TB_OK);
    memcpy(on, tb_session_logits(s, -1), sizeof(float) * (size_t)V);
    if (memcmp(on, off, sizeof(float) * (size_t)V)) fail_msg("%s: profiling changed the logits", preset);
    tb_session_get_profile(s, &p);
    assert_int_equal(p.tokens, 6);
    uint64_t sum = 0;
    for (int i = 0; i < TB_PHASE_COUNT; i++) {
        const tb_phase_stats_t *ph = &p.phase[i];
        const uint64_t want = i == TB_PHASE_ROUTER && !moe ? 0
                              : i == TB_PHASE_EMBED || i == TB_PHASE_OUTPUT ? 2 : 2 * (uint64_t)L;
        if (ph->calls != want)
            fail_msg("%s: phase %s called %llu times, want %llu", preset, tb_phase_name((tb_phase_t)i),
                     (unsigned long long)ph->calls, (unsigned long long)want);
        sum += ph->ns;
    }
    assert_true(p.total_ns > 0 && sum <= p.total_ns);
    assert_true(p.phase[TB_PHASE_FFN_UP].ns > 0);
    /* bytes: two evals, each reading every matrix of the phase once */
    const uint64_t qkv = tensor_bytes(m, "blk.%d.attn_q", L) + tensor_bytes(m, "blk.%d.attn_k", L) +
                         tensor_bytes(m, "blk.%d.attn_v", L);
    assert_int_equal(p.phase[TB_PHASE_QKV].bytes, 2 * qkv);
    assert_int_equal(p.phase[TB_PHASE_ATTN_OUT].bytes, 2 * tensor_bytes(m, "blk.%d.attn_output", L));
    assert_int_equal(p.phase[TB_PHASE_ATTENTION].bytes, 0);
    if (!moe) {
        assert_int_equal(p.phase[TB_PHASE_FFN_UP].bytes, 2 * (tensor_bytes(m, "blk.%d.ffn_gate", L) +
                                                              tensor_bytes(m, "blk.%d.ffn_up", L)));
        assert_int_equal(p.phase[TB_PHASE_FFN_DOWN].bytes, 2 * tensor_bytes(m, "blk.%d.ffn_down", L));
    } else {
        assert_int_equal(p.phase[TB_PHASE_ROUTER].bytes, 2 * tensor_bytes(m, "blk.%d.ffn_gate_inp", L));
        /* the decode reads its n_expert_used experts' matrices, the 5-token
         * prefill between n_expert_used and min(5 n_expert_used, n_expert) */
        const uint64_t K = (uint64_t)in.n_expert_used, X = (uint64_t)in.n_expert;
        const uint64_t lo = 2 * K, hi = K + (5 * K < X ? 5 * K : X);
        const uint64_t down1 = tensor_bytes(m, "blk.%d.ffn_down_exps", L) / X;
        const uint64_t gu1 = (tensor_bytes(m, "blk.%d.ffn_gate_exps", L) + tensor_bytes(m, "blk.%d.ffn_up_exps", L)) / X;
        assert_true(p.phase[TB_PHASE_FFN_DOWN].bytes >= lo * down1 && p.phase[TB_PHASE_FFN_DOWN].bytes <= hi * down1);
        assert_true(p.phase[TB_PHASE_FFN_UP].bytes >= lo * gu1 && p.phase[TB_PHASE_FFN_UP].bytes <= hi * gu1);
        assert_int_equal(p.phase[TB_PHASE_FFN_DOWN].bytes % (down1 / (uint64_t)L), 0);   /* whole experts */
    }

    /* one decode token: one pool pass per phase and layer (the Q/K/V of
     * every preset share an activation format), the head one; the pass
     * breakdown of each phase lies within its time */
    tb_session_set_profile(s, true);
    assert_int_equal(tb_session_eval(s, &ids[6], 1, false), TB_OK);
    tb_session_get_profile(s, &p);
    for (int i = 0; i < TB_PHASE_COUNT; i++) {
        const tb_phase_stats_t *ph = &p.phase[i];
        const uint64_t want = i == TB_PHASE_EMBED || (i == TB_PHASE_ROUTER && !moe) ? 0
                              : i == TB_PHASE_OUTPUT ? 1 : (uint64_t)L;
        if (ph->passes != want)
            fail_msg("%s: decode phase %s ran %llu pool passes, want %llu", preset,
                     tb_phase_name((tb_phase_t)i), (unsigned long long)ph->passes, (unsigned long long)want);
        if (ph->wake_ns > ph->ns || ph->prologue_ns > ph->ns || ph->tail_ns > ph->ns)
            fail_msg("%s: phase %s: wake %llu, prologue %llu or tail %llu ns exceeds its %llu ns", preset,
                     tb_phase_name((tb_phase_t)i), (unsigned long long)ph->wake_ns,
                     (unsigned long long)ph->prologue_ns, (unsigned long long)ph->tail_ns,
                     (unsigned long long)ph->ns);
    }
    assert_true(p.phase[TB_PHASE_QKV].prologue_ns > 0);   /* the norm and quantization run there */

    /* off again: counters restart and stay at zero */
    tb_session_set_profile(s, false);
    assert_int_equal(tb_session_eval(s, &ids[6], 1, false), TB_OK);
    tb_session_get_profile(s, &p);
    assert_int_equal(p.tokens, 0);
    assert_int_equal(p.phase[TB_PHASE_QKV].calls, 0);
    assert_string_equal(tb_phase_name(TB_PHASE_ATTENTION), "attention");
    assert_string_equal(tb_phase_name((tb_phase_t)99), "?");
    free(off);
    free(on);
    tb_session_free(s);
    tb_model_free(m);
}

static void check_split(const char *preset, int type) {
    tb_model_t *m;
    if (th_load_split(preset, type, &m)) fail_msg("%s type %d: no model whose layers split", preset, type);
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    const int V = in.n_vocab, L = in.n_layer, n = 6;
    const bool moe = in.n_expert > 0;
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 16;
    tb_session_t *s1, *s2;
    assert_int_equal(th_sessions_1_2(m, sp, &s1, &s2), TB_OK);
    int32_t ids[8];
    th_prompt(ids, n, V, 11);
    tb_split_profile_t p;

    /* off by default; 1 thread: nothing; with the phase profile: nothing */
    assert_int_equal(tb_session_eval(s2, &ids[0], 1, false), TB_OK);
    tb_session_get_split_profile(s2, &p);
    assert_int_equal(p.runs, 0);
    tb_session_set_split_profile(s1, true);
    assert_int_equal(tb_session_eval(s1, &ids[0], 1, false), TB_OK);
    tb_session_get_split_profile(s1, &p);
    assert_int_equal(p.runs, 0);
    assert_int_equal(p.pass[TB_SPLIT_ATTN].passes, 0);
    tb_session_set_split_profile(s1, false);
    tb_session_set_split_profile(s2, true);
    tb_session_set_profile(s2, true);
    assert_int_equal(tb_session_eval(s2, &ids[1], 1, false), TB_OK);
    tb_session_get_split_profile(s2, &p);
    assert_int_equal(p.runs, 0);
    tb_session_set_profile(s2, false);

    /* on: every pass of every step, logits as on 1 thread */
    tb_session_reset(s1);
    tb_session_reset(s2);
    tb_session_set_split_profile(s2, true);
    for (int t = 0; t < n; t++) {
        assert_int_equal(tb_session_eval(s1, &ids[t], 1, false), TB_OK);
        assert_int_equal(tb_session_eval(s2, &ids[t], 1, false), TB_OK);
        if (memcmp(tb_session_logits(s1, -1), tb_session_logits(s2, -1), sizeof(float) * (size_t)V))
            fail_msg("%s: split-profiled decode differs from 1 thread at position %d", preset, t);
    }
    tb_session_get_split_profile(s2, &p);
    assert_int_equal(p.runs, n);
    for (int k = 0; k < TB_SPLIT_PASS_COUNT; k++) {
        const tb_split_stats_t *st = &p.pass[k];
        const bool ran = k == TB_SPLIT_ATTN || (k == TB_SPLIT_FFN) != moe;
        if (st->passes != (ran ? (uint64_t)n * (uint64_t)L : 0))
            fail_msg("%s: %llu %s passes, want %d", preset, (unsigned long long)st->passes,
                     tb_split_pass_name((tb_split_pass_t)k), ran ? n * L : 0);
        for (int th = 0; th < 2 && ran; th++) {
            if (!st->work_ns[th]) fail_msg("%s: %s pass, thread %d: no work counted", preset,
                                           tb_split_pass_name((tb_split_pass_t)k), th);
            if ((st->prologue_ns[th] == 0) != (k == TB_SPLIT_EXPERTS))
                fail_msg("%s: %s pass, thread %d: prologue %llu ns", preset,
                         tb_split_pass_name((tb_split_pass_t)k), th, (unsigned long long)st->prologue_ns[th]);
        }
        for (int th = 0; th < 2; th++) {   /* the work's parts: rows always, attention only in attention
                                              passes, an output slice in attention and ffn passes (and
                                              thread 0's routing after a router pass) */
            const char *pn = tb_split_pass_name((tb_split_pass_t)k);
            const unsigned long long r = st->rows_ns[th], a = st->attn_ns[th], o = st->out_ns[th],
                                     w = st->work_ns[th];
            if ((a != 0) != (k == TB_SPLIT_ATTN)) fail_msg("%s: %s pass, thread %d: attention %llu ns", preset, pn, th, a);
            if (ran && !r) fail_msg("%s: %s pass, thread %d: no rows counted", preset, pn, th);
            const bool has_out = k == TB_SPLIT_ATTN || k == TB_SPLIT_FFN || (k == TB_SPLIT_ROUTER && th == 0);
            if (ran && has_out && !o) fail_msg("%s: %s pass, thread %d: no output slice counted", preset, pn, th);
            if (r + a + o > w)
                fail_msg("%s: %s pass, thread %d: rows %llu + attention %llu + out %llu ns > work %llu ns", preset,
                         pn, th, r, a, o, w);
        }
    }

    /* off again: the counters restart */
    tb_session_set_split_profile(s2, false);
    assert_int_equal(tb_session_eval(s2, &ids[n - 1], 1, false), TB_OK);
    tb_session_get_split_profile(s2, &p);
    assert_int_equal(p.runs, 0);
    assert_int_equal(p.pass[TB_SPLIT_ATTN].passes, 0);
    assert_string_equal(tb_split_pass_name(TB_SPLIT_EXPERTS), "experts");
    assert_string_equal(tb_split_pass_name((tb_split_pass_t)9), "?");
    tb_session_free(s1);
    tb_session_free(s2);
    tb_model_free(m);
}

static void test_llama(void **st) { (void)st; check_preset("llama-tiny"); }
static void test_maple(void **st) { (void)st; check_preset("maple-tiny"); }
static void test_moe(void **st) { (void)st; check_preset("moe-tiny"); }
static void test_split_llama(void **st) { (void)st; check_split("llama-tiny", TB_TYPE_Q4_0); }
static void test_split_maple(void **st) { (void)st; check_split("maple-tiny", TB_TYPE_Q4_0); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama),
        cmocka_unit_test(test_maple),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_split_llama),
        cmocka_unit_test(test_split_maple),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
