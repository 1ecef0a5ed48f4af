/*
 * test_kernels.c — checkasm-style tests of every kernel tier available on
 * this machine against the ref tier (the _ref specification).
 *
 * For every tier above ref and every supported weight type:
 *   quantize_act  byte-identical to the _ref quantizer of the activation
 *                 format (random rows, zero blocks, exact ties);
 *   vec_dot       within the format's error budget of the ref vec_dot;
 *   matvec        rows [r0, r1) written and within budget; rows outside
 *                 stay NaN (poisoned output);
 *   gemm          every (token, row) bit-identical to the tier's own matvec
 *                 (the model tests rely on it), rows outside [r0, r1) and
 *                 the padding columns of Y stay NaN.
 * Shapes are random with odd row counts (not multiples of any tile) and
 * column counts of several blocks; token counts cover the gemm tile and
 * its tail.
 *
 * Error budget: S = sum_j |w_j * a_j| over the dequantized weight and
 * activation values (double). Integer formats compute each block's integer
 * dot exactly, so only float summation order may differ from _ref:
 *   integer formats: |y - y_ref| <= (n_blocks + 64) * FLT_EPSILON * S
 *   float formats:   |y - y_ref| <= (n + 64) * FLT_EPSILON * S
 * (worst-case bounds of reordered float sums; a single wrong element or
 * block moves the result by ~S / n_blocks, far outside either budget).
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/kernels.h"

static const tb_type_t types[] = {TB_TYPE_F32, TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_Q8_0,
                                  TB_TYPE_Q4_0, TB_TYPE_Q4_K, TB_TYPE_Q6_K, TB_TYPE_TQ1_0,
                                  TB_TYPE_TQ2_0};

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

#define KERN_RNG_SEED 0x1234567887654321ull
#include "kern_rng.h"

static void fill_nan(float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = NAN;
}

/* Random f32 matrix (rows, n) with a few zero and large rows mixed in. */
static float *rand_f32(int64_t rows, int64_t n) {
    float *x = xalloc(sizeof(float) * (size_t)(rows * n));   // (rows, n)
    for (int64_t r = 0; r < rows; r++) {
        float scale = (r % 7 == 3) ? 20.0f : 1.0f;
        for (int64_t j = 0; j < n; j++) x[r * n + j] = frand() * scale;
    }
    return x;
}

/* Quantize (rows, n) f32 into type t with the ref quantizer. */
static void *quant_rows(tb_type_t t, const float *x, int64_t rows, int64_t n) {
    size_t rb = tb_type_row_bytes(t, n);
    uint8_t *q = xalloc(rb * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) tb_type_traits(t)->from_float_ref(x + r * n, q + rb * (size_t)r, n);
    return q;
}

/* The activation of weight type wt, quantized by the ref quantizer. */
static void *quant_act_ref(tb_type_t wt, const float *x, int64_t rows, int64_t n) {
    return quant_rows(tb_type_traits(wt)->vec_dot_type, x, rows, n);
}

/* S = sum |w_j a_j| of dequantized values: the scale of the error budget. */
static double abs_dot(tb_type_t wt, const void *w, const void *a, int64_t n) {
    float *wf = xalloc(sizeof(float) * (size_t)n), *af = xalloc(sizeof(float) * (size_t)n);
    tb_type_traits(wt)->to_float_ref(w, wf, n);
    tb_type_traits(tb_type_traits(wt)->vec_dot_type)->to_float_ref(a, af, n);
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += fabs((double)wf[j] * af[j]);
    free(wf);
    free(af);
    return s;
}

static double budget(tb_type_t wt, int64_t n, double S) {
    const tb_type_traits_t *tr = tb_type_traits(wt);
    double terms = tr->is_quant ? (double)(n / tr->blck) + 64 : (double)n + 64;
    return terms * FLT_EPSILON * S + 1e-30;
}

/* Random column count: several blocks (1..5 for K-blocks, 1..13 for 32). */
static int64_t rand_cols(tb_type_t wt) {
    int64_t b = tb_type_traits(wt)->blck;
    if (b == 1) return irand(1, 9) * 32 + irand(0, 1) * irand(1, 31);   /* odd tails for floats */
    return b * (b == QK_K ? irand(1, 5) : irand(1, 13));
}

#define for_each_tier(k)                                                  \
    for (int isa_ = TB_ISA_GENERIC; isa_ <= TB_ISA_NEON; isa_++)          \
        for (const tb_kernels_t *k = tb_kernels_for((tb_isa_t)isa_); k; k = NULL)

/* ---------------------------------------------------------------------- */
/* Tests                                                                    */
/* ---------------------------------------------------------------------- */

static void test_tables_complete(void **state) {
    (void)state;
    assert_non_null(tb_kernels_for(TB_ISA_REF));
    assert_non_null(tb_kernels_for(tb_isa_best()));
    for (int isa = 0; isa <= TB_ISA_NEON; isa++) {
        const tb_kernels_t *k = tb_kernels_for((tb_isa_t)isa);
        if (isa <= (int)TB_ISA_GENERIC) assert_non_null(k);
        if (!k) continue;
        assert_int_equal(k->isa, isa);
        assert_non_null(k->read_sum);
        assert_non_null(k->features);
        for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
            const tb_type_kernels_t *e = &k->t[types[i]];
            assert_true(e->quantize_act && e->vec_dot && e->matvec && e->gemm);
        }
    }
#if defined(__x86_64__)
    assert_null(tb_kernels_for(TB_ISA_NEON));
#else
    assert_null(tb_kernels_for(TB_ISA_AVX2));
    assert_null(tb_kernels_for(TB_ISA_AVX512));
#endif
}

static void test_quantize_act(void **state) {
    (void)state;
    for_each_tier(k) {
        for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
            tb_type_t wt = types[i], at = tb_type_traits(wt)->vec_dot_type;
            for (int rep = 0; rep < 5; rep++) {
                int64_t n = rand_cols(wt);
                float *x = rand_f32(1, n);   // (n)
                if (rep == 1) memset(x, 0, sizeof(float) * (size_t)TB_MIN(n, 256));  /* zero block */
                if (rep == 2)   /* exact ties of the rounding: halves of the step */
                    for (int64_t j = 0; j < n; j++) x[j] = (float)((j % 255) - 127) * 0.5f;
                if (rep == 3)   /* every block's max |x| a negative value, scales 2^-40 .. 2^40 */
                    for (int64_t j = 0; j < n; j++)
                        x[j] = (j % 2 ? -1.0f : 0.5f) * ldexpf(1.0f + (float)(j % 7) / 64.0f, (int)(j / 32 % 81) - 40);
                size_t ab = tb_type_row_bytes(at, n);
                uint8_t *want = xalloc(ab), *got = xalloc(ab);
                memset(got, 0xA5, ab);
                tb_type_traits(at)->from_float_ref(x, want, n);
                k->t[wt].quantize_act(x, got, n);
                if (memcmp(want, got, ab) != 0)
                    fail_msg("%s: quantize_act for %s (n %lld, rep %d) differs from %s_ref",
                             tb_isa_name(k->isa), tb_type_name(wt), (long long)n, rep, tb_type_name(at));
                /* Q8_0 activation codes stay in -127..127 (d = max|x| / 127): the
                 * AVX2 repacked Q8_0 kernel multiplies by vpsignb, which would
                 * wrap a -128. */
                if (at == TB_TYPE_Q8_0)
                    for (int64_t b = 0; b < n / QK8_0; b++)
                        for (int j = 0; j < QK8_0; j++)
                            if (((const block_q8_0 *)got)[b].qs[j] == -128)
                                fail_msg("%s: quantize_act for %s (rep %d) wrote -128 at block %lld",
                                         tb_isa_name(k->isa), tb_type_name(wt), rep, (long long)b);
                free(x); free(want); free(got);
            }
        }
    }
}

static void test_vec_dot(void **state) {
    (void)state;
    const tb_kernels_t *ref = tb_kernels_for(TB_ISA_REF);
    for_each_tier(k) {
        for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
            tb_type_t wt = types[i];
            for (int rep = 0; rep < 6; rep++) {
                int64_t n = rand_cols(wt);
                float *wf = rand_f32(1, n), *xf = rand_f32(1, n);
                void *w = quant_rows(wt, wf, 1, n), *a = quant_act_ref(wt, xf, 1, n);
                float want = NAN, got = NAN;
                ref->t[wt].vec_dot(n, &want, w, a);
                k->t[wt].vec_dot(n, &got, w, a);
                double tol = budget(wt, n, abs_dot(wt, w, a, n));
                if (!(fabs((double)got - want) <= tol))
                    fail_msg("%s: vec_dot %s n %lld: got %.9g want %.9g (budget %.3g)", tb_isa_name(k->isa),
                             tb_type_name(wt), (long long)n, got, want, tol);
                free(wf); free(xf); free(w); free(a);
            }
        }
    }
}

/* One random problem: W (rows, n), A (nt, n) activations, ref results. */
typedef struct {
    tb_type_t wt;
    int64_t rows, n, nt;
    void *W, *A;            /* (rows, n) weights; (nt, n) activations */
    size_t ws, as;
    float *ref;             /* (nt, rows) ref results                 */
    double *tol;            /* (nt, rows)                             */
} problem_t;

static void problem_new(problem_t *p, tb_type_t wt, int64_t nt) {
    p->wt = wt;
    p->rows = irand(1, 6) * 8 + irand(1, 7);     /* never a multiple of 8 */
    p->n = rand_cols(wt);
    p->nt = nt;
    float *wf = rand_f32(p->rows, p->n), *xf = rand_f32(nt, p->n);
    p->W = quant_rows(wt, wf, p->rows, p->n);
    p->A = quant_act_ref(wt, xf, nt, p->n);
    p->ws = tb_type_row_bytes(wt, p->n);
    p->as = tb_act_row_bytes(wt, p->n);
    p->ref = xalloc(sizeof(float) * (size_t)(nt * p->rows));
    p->tol = xalloc(sizeof(double) * (size_t)(nt * p->rows));
    const tb_kernels_t *ref = tb_kernels_for(TB_ISA_REF);
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < p->rows; r++) {
            const void *w = (uint8_t *)p->W + p->ws * (size_t)r, *a = (uint8_t *)p->A + p->as * (size_t)t;
            ref->t[wt].vec_dot(p->n, &p->ref[t * p->rows + r], w, a);
            p->tol[t * p->rows + r] = budget(wt, p->n, abs_dot(wt, w, a, p->n));
        }
    free(wf);
    free(xf);
}

static void problem_free(problem_t *p) {
    free(p->W); free(p->A); free(p->ref); free(p->tol);
}

static void test_matvec(void **state) {
    (void)state;
    for_each_tier(k) {
        for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
            for (int rep = 0; rep < 3; rep++) {
                problem_t p;
                problem_new(&p, types[i], 1);
                int64_t r0 = irand(0, (int)p.rows / 3), r1 = p.rows - irand(0, (int)p.rows / 3);
                float *y = xalloc(sizeof(float) * (size_t)p.rows);   // (rows)
                fill_nan(y, (size_t)p.rows);
                k->t[p.wt].matvec(p.W, p.ws, p.A, y, r0, r1, p.n);
                for (int64_t r = 0; r < p.rows; r++) {
                    if (r < r0 || r >= r1) {
                        if (!isnan(y[r])) fail_msg("%s: matvec %s wrote row %lld outside [%lld, %lld)",
                                                   tb_isa_name(k->isa), tb_type_name(p.wt), (long long)r,
                                                   (long long)r0, (long long)r1);
                    } else if (!(fabs((double)y[r] - p.ref[r]) <= p.tol[r])) {
                        fail_msg("%s: matvec %s (%lld x %lld) row %lld: got %.9g want %.9g (budget %.3g)",
                                 tb_isa_name(k->isa), tb_type_name(p.wt), (long long)p.rows, (long long)p.n,
                                 (long long)r, y[r], p.ref[r], p.tol[r]);
                    }
                }
                free(y);
                problem_free(&p);
            }
        }
    }
}

static void test_gemm(void **state) {
    (void)state;
    static const int64_t tok_counts[] = {1, 3, 4, 5, 9, 17};
    for_each_tier(k) {
        for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
            for (size_t c = 0; c < TB_ARRAY_LEN(tok_counts); c++) {
                problem_t p;
                problem_new(&p, types[i], tok_counts[c]);
                int64_t r0 = irand(0, (int)p.rows / 3), r1 = p.rows - irand(0, (int)p.rows / 3);
                int64_t ldy = p.rows + 3;
                float *Y = xalloc(sizeof(float) * (size_t)(p.nt * ldy));   // (nt, ldy)
                float *y1 = xalloc(sizeof(float) * (size_t)p.rows);         // (rows)
                fill_nan(Y, (size_t)(p.nt * ldy));
                k->t[p.wt].gemm(p.W, p.ws, p.A, p.as, p.nt, Y, ldy, r0, r1, p.n);
                for (int64_t t = 0; t < p.nt; t++) {
                    fill_nan(y1, (size_t)p.rows);
                    k->t[p.wt].matvec(p.W, p.ws, (uint8_t *)p.A + p.as * (size_t)t, y1, r0, r1, p.n);
                    for (int64_t r = 0; r < ldy; r++) {
                        float g = Y[t * ldy + r];
                        if (r < r0 || r >= r1) {
                            if (!isnan(g)) fail_msg("%s: gemm %s wrote token %lld row %lld outside [%lld, %lld)",
                                                    tb_isa_name(k->isa), tb_type_name(p.wt), (long long)t,
                                                    (long long)r, (long long)r0, (long long)r1);
                            continue;
                        }
                        if (memcmp(&g, &y1[r], sizeof g) != 0)
                            fail_msg("%s: gemm %s (%lld tokens) token %lld row %lld: %.9g is not bit-identical "
                                     "to matvec's %.9g", tb_isa_name(k->isa), tb_type_name(p.wt),
                                     (long long)p.nt, (long long)t, (long long)r, g, y1[r]);
                        double want = p.ref[t * p.rows + r], tol = p.tol[t * p.rows + r];
                        if (!(fabs((double)g - want) <= tol))
                            fail_msg("%s: gemm %s token %lld row %lld: got %.9g want %.9g (budget %.3g)",
                                     tb_isa_name(k->isa), tb_type_name(p.wt), (long long)t, (long long)r, g,
                                     want, tol);
                    }
                }
                free(Y);
                free(y1);
                problem_free(&p);
            }
        }
    }
}

/* The public entry points: 1 and 2 threads agree bit for bit, and matmul
 * rows equal matvec rows. */
static void test_api_threads(void **state) {
    (void)state;
    tb_pool_t *p1, *p2;
    assert_int_equal(tb_pool_new(1, &p1), TB_OK);
    assert_int_equal(tb_pool_new(2, &p2), TB_OK);
    for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
        tb_type_t wt = types[i];
        int64_t rows = 53, n = tb_type_traits(wt)->blck == QK_K ? 512 : 96, nt = 6;
        float *wf = rand_f32(rows, n), *X = rand_f32(nt, n);
        void *W = quant_rows(wt, wf, rows, n);
        float *Y1 = xalloc(sizeof(float) * (size_t)(nt * rows)), *Y2 = xalloc(sizeof(float) * (size_t)(nt * rows));
        float *y = xalloc(sizeof(float) * (size_t)rows);
        assert_int_equal(tb_matmul(p1, wt, W, rows, n, X, nt, Y1), TB_OK);
        assert_int_equal(tb_matmul(p2, wt, W, rows, n, X, nt, Y2), TB_OK);
        assert_memory_equal(Y1, Y2, sizeof(float) * (size_t)(nt * rows));
        for (int64_t t = 0; t < nt; t++) {
            assert_int_equal(tb_matvec(p2, wt, W, rows, n, X + t * n, y), TB_OK);
            assert_memory_equal(y, Y1 + t * rows, sizeof(float) * (size_t)rows);
        }
        free(wf); free(X); free(W); free(Y1); free(Y2); free(y);
    }
    /* bad shapes are reported, not crashed on */
    float x[32] = {0}, y[4];
    uint8_t w[256] = {0};
    assert_int_equal(tb_matvec(p1, TB_TYPE_Q4_0, w, 4, 33, x, y), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "33"));
    assert_int_equal(tb_matvec(p1, TB_TYPE_Q8_K, w, 4, 256, x, y), TB_ERR_UNSUPPORTED);
    tb_pool_free(p1);
    tb_pool_free(p2);
}

static void test_read_sum(void **state) {
    (void)state;
    size_t n = 64 * 1000;
    uint64_t *v = tb_alloc_aligned(n);
    assert_non_null(v);
    uint64_t want = 0;
    for (size_t i = 0; i < n / 8; i++) want += (v[i] = rnd());
    for (int isa = 0; isa <= TB_ISA_NEON; isa++) {
        const tb_kernels_t *k = tb_kernels_for((tb_isa_t)isa);
        if (k) assert_int_equal(k->read_sum(v, n), want);
    }
    tb_free_aligned(v);
    double gbps = 0;
    assert_int_equal(tb_bandwidth_probe(2, 4u << 20, 2, &gbps), TB_OK);
    assert_true(gbps > 0);
    assert_int_equal(tb_bandwidth_probe(0, 4u << 20, 2, &gbps), TB_ERR_ARG);
    /* every thread's effective clock, a plausible GHz (slow under
     * sanitizers, valgrind or qemu, but never 0 or unset) */
    double ghz[3] = {-1, -1, -1};
    assert_int_equal(tb_cpu_probe(2, 2, ghz), TB_OK);
    for (int i = 0; i < 2; i++)
        if (!(ghz[i] > 0.01 && ghz[i] < 20.0)) fail_msg("tb_cpu_probe: thread %d at %g GHz", i, ghz[i]);
    assert_true(ghz[2] == -1);                      /* only n_threads values written */
    assert_int_equal(tb_cpu_probe(0, 1, ghz), TB_ERR_ARG);
    assert_int_equal(tb_cpu_probe(65, 1, ghz), TB_ERR_ARG);
    assert_int_equal(tb_cpu_probe(1, 0, ghz), TB_ERR_ARG);
    assert_int_equal(tb_cpu_probe(1, 1, NULL), TB_ERR_ARG);
    /* every thread's vector throughput: positive, and under 1000 ops per ns (64 per
     * cycle at 15 GHz), which a pass whose arithmetic the compiler elided would exceed */
    double vec[3] = {-1, -1, -1};
    assert_int_equal(tb_cpu_probe_vec(2, 2, vec), TB_OK);
    for (int i = 0; i < 2; i++)
        if (!(vec[i] > 0.001 && vec[i] < 1000.0)) fail_msg("tb_cpu_probe_vec: thread %d at %g ops/ns", i, vec[i]);
    assert_true(vec[2] == -1);
    assert_int_equal(tb_cpu_probe_vec(0, 1, vec), TB_ERR_ARG);
    assert_int_equal(tb_cpu_probe_vec(65, 1, vec), TB_ERR_ARG);
    assert_int_equal(tb_cpu_probe_vec(1, 0, vec), TB_ERR_ARG);
    assert_int_equal(tb_cpu_probe_vec(1, 1, NULL), TB_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_complete),
        cmocka_unit_test(test_quantize_act),
        cmocka_unit_test(test_vec_dot),
        cmocka_unit_test(test_matvec),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_api_threads),
        cmocka_unit_test(test_read_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
