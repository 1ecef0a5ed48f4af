/*
 * test_quant.c — each quantized format's logits against the F32 model
 * they were quantized from (tb_quantize_model), at every position of a
 * 32-token prompt: relative L2 of the logits and top-1 agreement rate.
 *
 * Budgets: the MEDIAN over positions of the relative L2 (the worst is
 * printed too) and the top-1 agreement rate. The synthetic weights are
 * i.i.d. Gaussian, the hardest case for block quantizers, and random
 * networks amplify errors, so the numbers are large for the bit widths.
 * MoE models get a separate, looser column: a small perturbation flips a
 * near-tied top-k routing choice now and then, and a flipped token's K/V
 * then shifts every later position. Budgets are ~2x the values measured
 * (generic + AVX2 tiers, seed 1234) on llama-tiny (dense) and on the worse
 * of maple-tiny / moe-tiny (MoE):
 *
 *            dense: measured -> budget      MoE: measured -> budget
 *   type     rel L2           top-1         rel L2           top-1
 *   f16      7.3e-4 -> 2e-3   1.00 -> .95   7.1e-4 -> 2e-3   1.00 -> .95
 *   bf16     5.8e-3 -> 1.5e-2 1.00 -> .90   6.8e-2 -> .15    0.75 -> .55
 *   q8_0     2.5e-2 -> 5e-2   0.94 -> .85   7.1e-2 -> .15    0.84 -> .65
 *   q6_k     6.5e-2 -> .13    0.97 -> .85   9.0e-2 -> .20    0.75 -> .55
 *   q4_k     .24    -> .45    0.78 -> .60   .34    -> .60    0.47 -> .30
 *   q4_0     .27    -> .50    0.72 -> .55   .37    -> .60    0.53 -> .30
 *   tq2_0    1.3    -> 2      0.00 -> 0     1.4    -> 2      0.06 -> 0
 *   tq1_0    (as tq2_0)
 *
 * Ternary formats cannot represent a Gaussian (absmax ternarisation zeroes
 * most weights; sqrt(2) is "uncorrelated"), so for them only finiteness and
 * boundedness are asserted here, and exactness where it holds: a dense model
 * synthesized ternary (tq2_0) requantized to tq1_0 keeps the same trits and
 * scales, so its logits must agree to float rounding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define N_PROMPT 32

typedef struct budget {
    tb_type_t type;
    double rel_l2, top1;
} budget;

static const budget dense[] = {
    {TB_TYPE_F16, 2e-3, 0.95}, {TB_TYPE_BF16, 1.5e-2, 0.90}, {TB_TYPE_Q8_0, 5e-2, 0.85},
    {TB_TYPE_Q6_K, 0.13, 0.85}, {TB_TYPE_Q4_K, 0.45, 0.60}, {TB_TYPE_Q4_0, 0.50, 0.55},
    {TB_TYPE_TQ2_0, 2.0, 0.0}, {TB_TYPE_TQ1_0, 2.0, 0.0},
};
static const budget moe[] = {
    {TB_TYPE_F16, 2e-3, 0.95}, {TB_TYPE_BF16, 0.15, 0.55}, {TB_TYPE_Q8_0, 0.15, 0.65},
    {TB_TYPE_Q6_K, 0.20, 0.55}, {TB_TYPE_Q4_K, 0.60, 0.30}, {TB_TYPE_Q4_0, 0.60, 0.30},
    {TB_TYPE_TQ2_0, 2.0, 0.0}, {TB_TYPE_TQ1_0, 2.0, 0.0},
};
#define N_BUDGETS (sizeof dense / sizeof *dense)

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* logits (N_PROMPT, V) of the model at path; returns V. */
static int run(const char *path, const int32_t *ids, float **out) {
    tb_model_t *m;
    if (tb_model_load(path, &m)) fail_msg("load %s: %s", path, tb_last_error());
    const int V = tb_model_n_vocab(m);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = N_PROMPT;
    sp.kv_type = TB_TYPE_F32;
    tb_session_t *s;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    assert_int_equal(tb_session_eval(s, ids, N_PROMPT, true), TB_OK);
    *out = malloc((size_t)N_PROMPT * V * sizeof **out);
    for (int t = 0; t < N_PROMPT; t++)
        memcpy(*out + (size_t)t * V, tb_session_logits(s, t), (size_t)V * sizeof **out);
    tb_session_free(s);
    tb_model_free(m);
    return V;
}

static void check_preset(const char *preset, const budget *budgets) {
    char f32[512], q[512];
    if (th_synth(th_dir, preset, -1, f32, sizeof f32)) fail_msg("synth: %s", tb_last_error());
    int32_t ids[N_PROMPT];
    th_prompt(ids, N_PROMPT, 512, 9);
    float *ref;
    const int V = run(f32, ids, &ref);
    for (size_t i = 0; i < N_BUDGETS; i++) {
        const budget *b = &budgets[i];
        snprintf(q, sizeof q, "%s/%s-q-%s.gguf", th_dir, preset, tb_type_name(b->type));
        if (tb_quantize_model(f32, q, b->type, NULL, NULL)) fail_msg("quantize: %s", tb_last_error());
        float *got;
        run(q, ids, &got);
        double e[N_PROMPT];
        int agree = 0;
        for (int t = 0; t < N_PROMPT; t++) {
            const float *g = got + (size_t)t * V, *r = ref + (size_t)t * V;
            for (int k = 0; k < V; k++) assert_true(isfinite(g[k]));
            e[t] = th_rel_l2(g, r, (size_t)V);
            agree += th_argmax(g, V) == th_argmax(r, V);
        }
        qsort(e, N_PROMPT, sizeof *e, cmp_double);
        const double med = e[N_PROMPT / 2], worst = e[N_PROMPT - 1];
        double top1 = (double)agree / N_PROMPT;
        print_message("%-10s %-6s rel L2 median %.3g (budget %.3g) worst %.3g, top-1 %.2f (budget %.2f)\n",
                      preset, tb_type_name(b->type), med, b->rel_l2, worst, top1, b->top1);
        if (med > b->rel_l2 || top1 < b->top1)
            fail_msg("%s %s over budget", preset, tb_type_name(b->type));
        free(got);
        remove(q);
    }
    free(ref);
}

static void test_maple(void **st) { (void)st; check_preset("maple-tiny", moe); }
static void test_llama(void **st) { (void)st; check_preset("llama-tiny", dense); }
static void test_moe(void **st) { (void)st; check_preset("moe-tiny", moe); }

/* Ternary weights survive tq2_0 -> tq1_0 exactly, so the logits agree. */
static void test_ternary_exact(void **st) {
    (void)st;
    char t2[512], t1[512];
    if (th_synth(th_dir, "llama-tiny", TB_TYPE_TQ2_0, t2, sizeof t2)) fail_msg("synth: %s", tb_last_error());
    snprintf(t1, sizeof t1, "%s/llama-tiny-tq1.gguf", th_dir);
    if (tb_quantize_model(t2, t1, TB_TYPE_TQ1_0, NULL, NULL)) fail_msg("quantize: %s", tb_last_error());
    int32_t ids[N_PROMPT];
    th_prompt(ids, N_PROMPT, 512, 13);
    float *a, *b;
    const int V = run(t2, ids, &a);
    run(t1, ids, &b);
    double e = th_rel_l2(b, a, (size_t)N_PROMPT * V);
    print_message("tq1_0 vs tq2_0 (same trits): rel L2 %.3g\n", e);
    assert_true(e < 1e-5);
    free(a);
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maple),
        cmocka_unit_test(test_llama),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_ternary_exact),
    };
    return cmocka_run_group_tests(tests, th_setup, th_teardown);
}
