/*
 * test_ops.c — the forward pass's small operations against double
 * precision, and the pass prologue's independence from the thread split:
 *  - tb_op_exp: relative error over the finite range, limits, NaN;
 *  - tb_op_silu, tb_op_softmax (with scale), tb_op_rms_inv;
 *  - tb_op_swiglu of every tier this CPU runs bit-identical to the scalar
 *    spec (clamped and not, odd lengths, values where e^-x over/underflows,
 *    the clamp bounds themselves), nothing written past n;
 *  - tb_op_f16 bit-identical to tb_fp32_to_fp16 (rounding ties, subnormals,
 *    overflow, NaN);
 *  - tb_lin_prologue (NORM, SWIGLU with and without clamp): the same bits
 *    for 1, 2 and 3 shares, and its block-wise quantization equal to
 *    quantizing whole rows;
 *  - tb_lin_cut: every row of a pass on exactly one thread, 16-row aligned
 *    cuts, per-thread work within 16 rows of an equal share (Q/K/V, the 16
 *    expert gate/up matrices of a MoE decode step, prefill expert groups of
 *    unequal token counts, random mixes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "kernels/kernels.h"

/* Deterministic uniform floats in [lo, hi). */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(float lo, float hi) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) * 0x1p-24);
}

/* ===================================================================== */
/* Scalar operations                                                      */
/* ===================================================================== */

static void test_exp(void **st) {
    (void)st;
    double worst = 0.0;
    for (float x = -87.0f; x < 88.5f; x += 1.37e-4f) {
        const double e = exp((double)x), rel = fabs((double)tb_op_exp(x) - e) / e;
        if (rel > worst) worst = rel;
    }
    print_message("tb_op_exp worst relative error %.3g\n", worst);
    assert_true(worst < 2e-7);
    assert_true(tb_op_exp(0.0f) == 1.0f);
    assert_true(isinf(tb_op_exp(INFINITY)) && tb_op_exp(INFINITY) > 0);
    assert_true(isinf(tb_op_exp(100.0f)));
    assert_true(tb_op_exp(-INFINITY) == 0.0f);
    assert_true(tb_op_exp(-100.0f) == 0.0f);
    assert_true(isnan(tb_op_exp(NAN)));
}

static void test_silu(void **st) {
    (void)st;
    for (float x = -40.0f; x < 40.0f; x += 0.0137f) {
        const double r = (double)x / (1.0 + exp(-(double)x));
        assert_true(fabs((double)tb_op_silu(x) - r) <= 3e-7 * fabs(r) + 1e-30);
    }
    assert_true(tb_op_silu(-200.0f) == 0.0f);
    assert_true(tb_op_silu(200.0f) == 200.0f);
}

static void test_swiglu_tiers(void **st) {
    (void)st;
    enum { N = 300 };
    static float x0[N + 16], u[N + 16], want[N + 16], got[N + 16];
    const float specials[] = {0.0f, -0.0f, 7.0f, -7.0f, 6.9999995f, 90.0f, -90.0f, 88.8f, -87.4f, 1e-30f};
    for (int isa = TB_ISA_REF; isa <= TB_ISA_NEON; isa++) {
        if (!tb_kernels_for((tb_isa_t)isa)) continue;
        const tb_swiglu_fn f = tb_op_swiglu_for((tb_isa_t)isa);
        for (int round = 0; round < 40; round++) {
            const int n = round < 33 ? round + 1 : N - round;        /* 1..33 and long odd ones */
            const float c = round % 2 ? 7.0f : INFINITY;
            for (int i = 0; i < n + 16; i++) {
                x0[i] = urand(-100.0f, 100.0f);
                u[i] = urand(-20.0f, 20.0f);
                if (i % 7 == 3) x0[i] = specials[(i / 7) % 10];
                if (i % 11 == 5) u[i] = specials[(i / 11 + 3) % 10];
            }
            memcpy(want, x0, sizeof want);
            tb_op_swiglu(want, u, n, c);
            memcpy(got, x0, sizeof got);
            f(got, u, n, c);
            assert_memory_equal(want, got, sizeof got);   /* incl. the 16 untouched after n */
            assert_memory_equal(got + n, x0 + n, 16 * sizeof(float));
        }
    }
}

/* The tiers' RMSNorm twins against the C spec, bit for bit: tb_op_rms_inv
 * on lengths with every tail (0..31 past a multiple of 32), tb_op_norm_mul
 * with the 16 floats after n left alone. (A sum of squares added in
 * another order rarely moves the float result: this catches a lost or
 * doubled element, and any change of order in the scaling.) */
static void test_rms_tiers(void **st) {
    (void)st;
    enum { N = 2100 };
    static float x[N + 16], w[N + 16], want[N + 16], got[N + 16];
    for (int isa = TB_ISA_REF; isa <= TB_ISA_NEON; isa++) {
        if (!tb_kernels_for((tb_isa_t)isa)) continue;
        const tb_rms_inv_fn rms = tb_op_rms_inv_for((tb_isa_t)isa);
        const tb_norm_mul_fn mul = tb_op_norm_mul_for((tb_isa_t)isa);
        for (int round = 0; round < 72; round++) {
            const int n = round < 64 ? round + 1 : N - 3 * round;   /* 1..64 and long odd ones */
            for (int i = 0; i < N + 16; i++) {
                x[i] = urand(-50.0f, 50.0f) * (i % 13 == 4 ? 1e-3f : 1.0f);
                w[i] = urand(-2.0f, 2.0f);
            }
            const float r = tb_op_rms_inv(x, n, 1e-5f), rt = rms(x, n, 1e-5f);
            assert_memory_equal(&r, &rt, sizeof r);
            memcpy(want, x, sizeof want);
            tb_op_norm_mul(want, x, r, w, n);
            memcpy(got, x, sizeof got);
            mul(got, x, r, w, n);
            assert_memory_equal(want, got, sizeof got);
            assert_memory_equal(got + n, x + n, 16 * sizeof(float));
        }
    }
}

static void test_softmax(void **st) {
    (void)st;
    const int lens[] = {1, 2, 7, 8, 9, 100, 513};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        const int n = lens[li];
        const float scale = 0.125f;
        float x[513];
        double ref[513], mx = -INFINITY, sum = 0.0;
        for (int i = 0; i < n; i++) {
            x[i] = urand(-60.0f, 60.0f);
            mx = fmax(mx, (double)x[i] * scale);
        }
        for (int i = 0; i < n; i++) sum += ref[i] = exp((double)x[i] * scale - mx);
        tb_op_softmax(x, n, scale);
        double got = 0.0;
        for (int i = 0; i < n; i++) {
            assert_true(fabs(x[i] - ref[i] / sum) <= 1e-6);
            got += x[i];
        }
        assert_true(fabs(got - 1.0) < 1e-5);
    }
}

static void test_rms_inv(void **st) {
    (void)st;
    const int lens[] = {1, 7, 64, 2048, 5633};
    static float x[5633];
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        const int n = lens[li];
        double ss = 0.0;
        for (int i = 0; i < n; i++) {
            x[i] = urand(-3.0f, 3.0f);
            ss += (double)x[i] * x[i];
        }
        const double r = 1.0 / sqrt(ss / n + 1e-6);
        assert_true(fabs(tb_op_rms_inv(x, n, 1e-6f) - r) <= 2e-7 * r);
    }
}

static void check_f16(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    if (tb_op_f16(f) != tb_fp32_to_fp16(f))
        fail_msg("f32 bits %08x: tb_op_f16 %04x, tb_fp32_to_fp16 %04x", u, tb_op_f16(f), tb_fp32_to_fp16(f));
}

static void test_f16(void **st) {
    (void)st;
    for (uint64_t u = 0; u <= 0xffffffffull; u += 4093) check_f16((uint32_t)u);
    /* every exponent around the half range with mantissas at and near the ties */
    for (uint32_t e = 95; e <= 145; e++)
        for (uint32_t m = 0; m < (1u << 23); m += (1u << 23) / 64) {
            for (int d = -2; d <= 2; d++)
                for (uint32_t sgn = 0; sgn < 2; sgn++) {
                    uint32_t man = (m + 0x1000u + (uint32_t)d) & 0x7fffffu;
                    check_f16(sgn << 31 | e << 23 | man);
                    check_f16(sgn << 31 | e << 23 | ((m + (uint32_t)d) & 0x7fffffu));
                }
        }
    const uint32_t edge[] = {0x0, 0x80000000u, 0x33000000u, 0x33000001u, 0x387fffffu, 0x38800000u,
                             0x477fefffu, 0x477ff000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                             0x7f800001u, 0xffffffffu, 0x00000001u};
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) check_f16(edge[i]);
}

/* ===================================================================== */
/* Prologue                                                               */
/* ===================================================================== */

#define P_N 3                  /* rows */
#define P_IN 768               /* 3 q8_K blocks, 24 q8_0 blocks */
#define P_LD 800

/* Run prologue kind over fresh copies for `nth` shares; returns the
 * output floats (x or xn) and the quantized rows. */
static void run_pro(tb_pro_kind_t kind, float clamp, tb_type_t wt, int nth, const float *x0,
                    const float *u, const float *w, float *out, uint8_t *q) {
    static float x[P_N * P_LD], xn[P_N * P_LD];
    memcpy(x, x0, sizeof x);
    memset(xn, 0, sizeof xn);
    const size_t qs = tb_act_row_bytes(wt, P_IN);
    tb_lin_pro_t p = {.kind = kind, .x = x, .u = u, .ld = P_LD, .n_in = P_IN, .n = P_N, .w = w,
                      .eps = 1e-5f, .clamp = clamp, .xn = xn, .wtype = wt, .q = q, .q_stride = qs};
    for (int i = 0; i < nth; i++) tb_lin_prologue(&p, i, nth);
    memcpy(out, kind == TB_PRO_NORM ? xn : x, sizeof x);
}

static void prologue_case(tb_pro_kind_t kind, float clamp, tb_type_t wt) {
    static float x0[P_N * P_LD], u[P_N * P_LD], w[P_IN], o1[P_N * P_LD], o2[P_N * P_LD];
    static uint8_t q1[P_N * 4096], q2[P_N * 4096], qr[P_N * 4096];
    for (int i = 0; i < P_N * P_LD; i++) { x0[i] = urand(-12.0f, 12.0f); u[i] = urand(-12.0f, 12.0f); }
    for (int i = 0; i < P_IN; i++) w[i] = urand(0.5f, 1.5f);
    const size_t qs = tb_act_row_bytes(wt, P_IN);
    assert_true(qs * P_N <= sizeof q1);
    run_pro(kind, clamp, wt, 1, x0, u, w, o1, q1);
    for (int nth = 2; nth <= 3; nth++) {
        run_pro(kind, clamp, wt, nth, x0, u, w, o2, q2);
        for (int t = 0; t < P_N; t++)
            assert_memory_equal(o1 + t * P_LD, o2 + t * P_LD, P_IN * sizeof(float));
        assert_memory_equal(q1, q2, qs * P_N);
    }
    /* block-wise quantization == whole rows */
    tb_lin_quantize(wt, o1, P_LD, P_N, P_IN, qr);
    assert_memory_equal(q1, qr, qs * P_N);
    /* values against double */
    for (int t = 0; t < P_N; t++) {
        double ss = 0.0;
        for (int i = 0; i < P_IN; i++) ss += (double)x0[t * P_LD + i] * x0[t * P_LD + i];
        const double r = 1.0 / sqrt(ss / P_IN + 1e-5);
        for (int i = 0; i < P_IN; i++) {
            const double g = x0[t * P_LD + i], v = u[t * P_LD + i];
            double want;
            if (kind == TB_PRO_NORM) want = g * r * w[i];
            else {
                const double gc = fmin(g, clamp), vc = fmax(fmin(v, clamp), -(double)clamp);
                want = gc / (1.0 + exp(-gc)) * vc;
            }
            assert_true(fabs(o1[t * P_LD + i] - want) <= 1e-5 * fabs(want) + 1e-6);
        }
    }
}

static void test_prologue_norm(void **st) {
    (void)st;
    prologue_case(TB_PRO_NORM, INFINITY, TB_TYPE_TQ2_0);
    prologue_case(TB_PRO_NORM, INFINITY, TB_TYPE_Q4_0);
}

static void test_prologue_swiglu(void **st) {
    (void)st;
    prologue_case(TB_PRO_SWIGLU, INFINITY, TB_TYPE_Q8_0);
    prologue_case(TB_PRO_SWIGLU, 7.0f, TB_TYPE_TQ1_0);
}

/* ===================================================================== */
/* Row split                                                              */
/* ===================================================================== */

/* Check the cuts of jobs for nth threads; returns thread 0's row count in
 * job order (for exact expectations). */
static int64_t check_cut(const tb_lin_job_t *jobs, int n_jobs, int nth) {
    double total = 0.0, maxc = 0.0;
    for (int j = 0; j < n_jobs; j++) {
        const double c = (double)jobs[j].n_tok * (double)jobs[j].w->row_bytes + 64.0;
        total += c * (double)jobs[j].w->n_out;
        maxc = c > maxc ? c : maxc;
    }
    int64_t covered = 0, rows0 = 0, all = 0;
    for (int j = 0; j < n_jobs; j++) all += jobs[j].w->n_out;
    for (int k = 0; k < nth; k++) {
        int j0, j1;
        int64_t r0, r1;
        tb_lin_cut(jobs, n_jobs, k, nth, &j0, &r0);
        tb_lin_cut(jobs, n_jobs, k + 1, nth, &j1, &r1);
        assert_true(j0 < j1 || (j0 == j1 && r0 <= r1));
        assert_true(r0 % 16 == 0);
        double work = 0.0;
        for (int j = j0; j <= j1 && j < n_jobs; j++) {
            const int64_t a = j == j0 ? r0 : 0, b = j == j1 ? r1 : jobs[j].w->n_out;
            assert_true(a <= b && b <= jobs[j].w->n_out);
            covered += b - a;
            work += ((double)jobs[j].n_tok * (double)jobs[j].w->row_bytes + 64.0) * (double)(b - a);
            if (k == 0) rows0 += b - a;
        }
        assert_true(fabs(work - total / nth) <= 16.0 * maxc + 1e-6 * total);
    }
    assert_int_equal(covered, all);   /* with the monotonic cuts: each row once */
    return rows0;
}

static void test_cut(void **st) {
    (void)st;
    /* Q, K, V of llama-1b (tq2_0 rows): 3072 rows, 1536 each */
    tb_weight_t q = {.n_in = 2048, .n_out = 2048, .row_bytes = 528};
    tb_weight_t kv = {.n_in = 2048, .n_out = 512, .row_bytes = 528};
    tb_lin_job_t qkv[3] = {{.w = &q, .n_tok = 1}, {.w = &kv, .n_tok = 1}, {.w = &kv, .n_tok = 1}};
    assert_int_equal(check_cut(qkv, 3, 2), 1536);
    for (int nth = 1; nth <= 7; nth++) check_cut(qkv, 3, nth);
    /* MoE decode: gate and up of 8 experts (512 rows each): 4 experts per thread */
    tb_weight_t ex = {.n_in = 2048, .n_out = 512, .row_bytes = 528};
    tb_lin_job_t moe[16];
    for (int j = 0; j < 16; j++) moe[j] = (tb_lin_job_t){.w = &ex, .n_tok = 1};
    assert_int_equal(check_cut(moe, 16, 2), 8 * 512);
    for (int nth = 1; nth <= 7; nth++) check_cut(moe, 16, nth);
    /* prefill groups: unequal token counts weigh rows unequally */
    for (int j = 0; j < 16; j++) moe[j].n_tok = 1 + (j * 7) % 13;
    for (int nth = 1; nth <= 7; nth++) check_cut(moe, 16, nth);
    /* random mixes, rows not multiples of 16 */
    tb_weight_t ws[12];
    tb_lin_job_t js[12];
    for (int round = 0; round < 200; round++) {
        const int n = 1 + (int)urand(0.0f, 12.0f);
        for (int j = 0; j < n; j++) {
            ws[j] = (tb_weight_t){.n_in = 256, .n_out = 1 + (int64_t)urand(0.0f, 3000.0f),
                                  .row_bytes = 16 + (size_t)urand(0.0f, 4000.0f)};
            js[j] = (tb_lin_job_t){.w = &ws[j], .n_tok = 1 + (int64_t)urand(0.0f, 4.0f)};
        }
        for (int nth = 1; nth <= 5; nth++) check_cut(js, n, nth);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exp),
        cmocka_unit_test(test_silu),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_swiglu_tiers),
        cmocka_unit_test(test_rms_inv),
        cmocka_unit_test(test_rms_tiers),
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_prologue_norm),
        cmocka_unit_test(test_prologue_swiglu),
        cmocka_unit_test(test_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
