/*
 * test_roundtrip.c — quantize -> dequantize error budgets on seeded random
 * data, exactness where the format promises it, and every vec_dot against
 * the float dot product of the dequantized operands.
 *
 * Budgets are relative RMSE, RMS(x - deq(q(x))) / RMS(x), over 64 blocks
 * of 256 (16384 values); they are the quality each format is expected to
 * reach, reasoned from bit width and the data's tails, with margin:
 *
 *   format   gaussian   student-t(3)   rationale
 *   f16      0.0005     0.0005         11-bit significand: <= 2^-11 relative
 *   bf16     0.004      0.004          8-bit significand:  <= 2^-8 relative
 *   q8_0     0.01       0.01           127 levels over a 32-block's max
 *   q4_0     0.12       0.16           15 levels over a 32-block's max
 *   q4_K     0.08       0.10           16 levels over each 32's (min, max), searched
 *   q6_K     0.02       0.03           63 levels per 16, searched (x^2 weights
 *                                       favour outliers over plain RMSE)
 *   q8_K     0.01       0.03           255 levels over a 256-block's max (~10
 *                                       sigma for 256 student-t values)
 *   tq1/tq2  exact for inputs t * d, t in {-1, 0, 1}
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "quant/quant.h"
#include "qtest.h"

#include <stdlib.h>

#define N (64 * QK_K)   /* values per test row */

typedef enum { DIST_GAUSS, DIST_HEAVY, DIST_MIXED } dist_t;

/* Fill x (N) from a distribution. DIST_MIXED: gaussian whose scale jumps
 * every 256 values over six decades (1e-3 .. 1e3) and drifts by up to 2x
 * every 32 values inside a super-block (per-block independence, fp16 range
 * of d, sub-block scales of the K formats). */
static void fill(float *x, dist_t dist, uint64_t seed) {
    qt_rng_t r = {seed};
    float scale = 1.0f, block_scale = 1.0f;
    for (int i = 0; i < N; i++) {
        if (i % QK_K == 0) block_scale = powf(10.0f, (float)(6 * qt_uniform(&r) - 3));
        if (i % 32 == 0) scale = block_scale * (float)(1 + qt_uniform(&r));
        x[i] = dist == DIST_HEAVY ? qt_heavy(&r) : dist == DIST_MIXED ? scale * qt_gauss(&r) : qt_gauss(&r);
    }
}

/* Round-trip a row through type t, returning the relative RMSE. */
static double roundtrip(tb_type_t t, const float *x, float *y) {
    const tb_type_traits_t *tr = tb_type_traits(t);
    assert_non_null(tr);
    void *q = malloc(tb_type_row_bytes(t, N));
    assert_non_null(q);
    tr->from_float_ref(x, q, N);
    tr->to_float_ref(q, y, N);
    free(q);
    return qt_rel_rmse(x, y, N);
}

/* ===================================================================== */
/* Error budgets                                                          */
/* ===================================================================== */

typedef struct { tb_type_t t; double gauss, heavy; } budget_t;

static const budget_t budgets[] = {
    {TB_TYPE_F16, 0.0005, 0.0005}, {TB_TYPE_BF16, 0.004, 0.004},
    {TB_TYPE_Q8_0, 0.01, 0.01},    {TB_TYPE_Q4_0, 0.12, 0.16},
    {TB_TYPE_Q4_K, 0.08, 0.10},    {TB_TYPE_Q6_K, 0.02, 0.03},
    {TB_TYPE_Q8_K, 0.01, 0.03},
};

static void test_budgets(void **state) {
    (void)state;
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    for (size_t k = 0; k < TB_ARRAY_LEN(budgets); k++) {
        const budget_t *b = &budgets[k];
        for (int seed = 1; seed <= 2; seed++) {
            fill(x, DIST_GAUSS, (uint64_t)seed);
            double eg = roundtrip(b->t, x, y);
            fill(x, DIST_HEAVY, 100u + (uint64_t)seed);
            double eh = roundtrip(b->t, x, y);
            if (eg > b->gauss || eh > b->heavy)
                fail_msg("%s: rel. RMSE gauss %.4f (budget %.4f), heavy %.4f (budget %.4f)",
                         tb_type_name(b->t), eg, b->gauss, eh, b->heavy);
        }
    }
    free(x);
    free(y);
}

/* Blocks of very different magnitude are quantized independently: the
 * worst 256-block meets (about) the Gaussian budget in relative terms. */
static void test_mixed_scales(void **state) {
    (void)state;
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    fill(x, DIST_MIXED, 9);
    static const budget_t mixed[] = {
        {TB_TYPE_F16, 0.0005, 0}, {TB_TYPE_BF16, 0.004, 0},
        {TB_TYPE_Q8_0, 0.012, 0}, {TB_TYPE_Q4_0, 0.15, 0},
        {TB_TYPE_Q4_K, 0.10, 0},  {TB_TYPE_Q6_K, 0.025, 0},
        {TB_TYPE_Q8_K, 0.012, 0},
    };
    for (size_t k = 0; k < TB_ARRAY_LEN(mixed); k++) {
        roundtrip(mixed[k].t, x, y);
        double worst = 0;
        for (int b = 0; b < N; b += QK_K) {
            double e = qt_rel_rmse(x + b, y + b, QK_K);
            if (e > worst) worst = e;
        }
        if (worst > mixed[k].gauss)
            fail_msg("%s: worst 256-block rel. RMSE %.4f > %.4f",
                     tb_type_name(mixed[k].t), worst, mixed[k].gauss);
    }
    free(x);
    free(y);
}

/* Zero rows stay exactly zero in every format (no NaN from 0/0). */
static void test_zero_rows(void **state) {
    (void)state;
    static const tb_type_t types[] = {TB_TYPE_F32, TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_Q8_0,
                                      TB_TYPE_Q4_0, TB_TYPE_Q4_K, TB_TYPE_Q6_K, TB_TYPE_Q8_K,
                                      TB_TYPE_TQ1_0, TB_TYPE_TQ2_0};
    float *x = calloc(N, sizeof *x), *y = malloc(N * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    for (size_t k = 0; k < TB_ARRAY_LEN(types); k++) {
        for (int i = 0; i < N; i++) y[i] = 1.0f;
        roundtrip(types[k], x, y);
        for (int i = 0; i < N; i++)
            if (y[i] != 0.0f) fail_msg("%s: element %d = %g", tb_type_name(types[k]), i, y[i]);
    }
    free(x);
    free(y);
}

/* Ternary formats store t * d exactly (d per 256-block, fp16-exact). */
static void test_ternary_exact(void **state) {
    (void)state;
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    assert_non_null(x);
    assert_non_null(y);
    qt_rng_t r = {5};
    for (int b = 0; b < N / QK_K; b++) {
        /* d = fp16-representable, different per block; one +-d guaranteed */
        float d = tb_fp16_to_fp32(tb_fp32_to_fp16((float)(0.01 + qt_uniform(&r))));
        for (int i = 0; i < QK_K; i++) x[b * QK_K + i] = (float)((int)(qt_next(&r) % 3) - 1) * d;
        x[b * QK_K + (int)(qt_next(&r) % QK_K)] = (qt_next(&r) & 1) ? d : -d;
    }
    static const tb_type_t types[] = {TB_TYPE_TQ1_0, TB_TYPE_TQ2_0};
    for (size_t k = 0; k < 2; k++) {
        roundtrip(types[k], x, y);
        assert_memory_equal(x, y, N * sizeof *x);
    }
    /* general data: trit = round(x / max|x|) */
    fill(x, DIST_GAUSS, 11);
    for (size_t k = 0; k < 2; k++) {
        roundtrip(types[k], x, y);
        for (int b = 0; b < N / QK_K; b++) {
            float amax = 0;
            for (int i = 0; i < QK_K; i++) amax = fmaxf(amax, fabsf(x[b * QK_K + i]));
            float d = tb_fp16_to_fp32(tb_fp32_to_fp16(amax));
            for (int i = 0; i < QK_K; i++) {
                float v = x[b * QK_K + i] / amax;
                float want = (v >= 0.5f ? 1.0f : v <= -0.5f ? -1.0f : 0.0f) * d;
                assert_true(y[b * QK_K + i] == want);
            }
        }
    }
    free(x);
    free(y);
}

/* ===================================================================== */
/* Dot products                                                           */
/* ===================================================================== */

static const tb_type_t dot_types[] = {TB_TYPE_F32, TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_Q8_0,
                                      TB_TYPE_Q4_0, TB_TYPE_Q4_K, TB_TYPE_Q6_K,
                                      TB_TYPE_TQ1_0, TB_TYPE_TQ2_0};

/* vec_dot(q(w), q_act(a)) equals sum deq(w) * deq(a) up to float rounding
 * (relative to sum |deq(w) deq(a)|), for lengths of 1, 3 and 64 blocks. */
static void test_vec_dot_exactness(void **state) {
    (void)state;
    float *w = malloc(N * sizeof *w), *a = malloc(N * sizeof *a);
    float *wd = malloc(N * sizeof *wd), *ad = malloc(N * sizeof *ad);
    assert_true(w && a && wd && ad);
    for (size_t k = 0; k < TB_ARRAY_LEN(dot_types); k++) {
        const tb_type_traits_t *tw = tb_type_traits(dot_types[k]);
        const tb_type_traits_t *ta = tb_type_traits(tw->vec_dot_type);
        assert_non_null(tw->vec_dot_ref);
        assert_non_null(ta);
        void *qw = malloc(tb_type_row_bytes(dot_types[k], N));
        void *qa = malloc(tb_type_row_bytes(tw->vec_dot_type, N));
        assert_true(qw && qa);
        for (int dist = 0; dist < 2; dist++) {
            fill(w, dist ? DIST_HEAVY : DIST_GAUSS, 21u + (uint64_t)dist);
            fill(a, dist ? DIST_HEAVY : DIST_GAUSS, 31u + (uint64_t)dist);
            tw->from_float_ref(w, qw, N);
            ta->from_float_ref(a, qa, N);
            tw->to_float_ref(qw, wd, N);
            ta->to_float_ref(qa, ad, N);
            static const int64_t lens[] = {QK_K, 3 * QK_K, N};
            for (int li = 0; li < 3; li++) {
                int64_t n = lens[li];
                double want = 0, mag = 0, truth = 0, tmag = 0;
                for (int64_t i = 0; i < n; i++) {
                    want += (double)wd[i] * ad[i];
                    mag += fabs((double)wd[i] * ad[i]);
                    truth += (double)w[i] * a[i];
                    tmag += fabs((double)w[i] * a[i]);
                }
                float s = NAN;
                tw->vec_dot_ref(n, &s, qw, qa);
                if (!(fabs(s - want) <= 2e-6 * mag))
                    fail_msg("%s n=%lld: vec_dot %.9g, dequantized dot %.9g (mag %.3g)",
                             tw->name, (long long)n, s, want, mag);
                /* and close to the unquantized dot (ternary excluded: it is
                 * not meant to approximate arbitrary data) */
                if (dot_types[k] != TB_TYPE_TQ1_0 && dot_types[k] != TB_TYPE_TQ2_0 &&
                    !(fabs(s - truth) <= 0.05 * tmag))
                    fail_msg("%s n=%lld: vec_dot %.6g vs f32 dot %.6g (mag %.3g)",
                             tw->name, (long long)n, s, truth, tmag);
            }
        }
        free(qw);
        free(qa);
    }
    free(w); free(a); free(wd); free(ad);
}

/* Q8_K's bsums are the sums of its qs, 16 at a time, and d carries ggml's
 * sign convention (d < 0 when the largest-magnitude value is positive). */
static void test_q8_K_invariants(void **state) {
    (void)state;
    float *x = malloc(N * sizeof *x);
    block_q8_K *q = malloc((N / QK_K) * sizeof *q);
    assert_true(x && q);
    fill(x, DIST_HEAVY, 77);
    tb_quantize_row_q8_K_ref(x, q, N);
    for (int b = 0; b < N / QK_K; b++) {
        float amax = 0, max = 0;
        for (int i = 0; i < QK_K; i++)
            if (fabsf(x[b * QK_K + i]) > amax) { amax = fabsf(x[b * QK_K + i]); max = x[b * QK_K + i]; }
        assert_true(max > 0 ? q[b].d < 0 : q[b].d > 0);
        assert_true(fabsf(fabsf(q[b].d) * 127 - amax) <= 1e-5f * amax);
        for (int g = 0; g < QK_K / 16; g++) {
            int s = 0;
            for (int i = 0; i < 16; i++) s += q[b].qs[16 * g + i];
            assert_int_equal(q[b].bsums[g], s);
        }
    }
    free(x);
    free(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budgets),
        cmocka_unit_test(test_mixed_scales),
        cmocka_unit_test(test_zero_rows),
        cmocka_unit_test(test_ternary_exact),
        cmocka_unit_test(test_vec_dot_exactness),
        cmocka_unit_test(test_q8_K_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
