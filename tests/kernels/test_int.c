/*
 * test_int.c — edge cases of the Q8_0 / Q4_0 kernels and of the SIMD
 * activation quantizers (Q8_0, Q8_K), on every tier this machine has,
 * beyond the random shapes of test_kernels.c:
 *
 *   act_edges    quantize_act byte-identical to the _ref on rows built to
 *                hit the quantizers' corner cases: exact rounding ties,
 *                equal magnitudes of both signs (Q8_K keeps the first),
 *                tiny and huge blocks, zero blocks between non-zero ones;
 *   q0_exact     with every scale d = 1 and sums below 2^24 the float dot
 *                is an exact integer, so every tier must equal the ref
 *                exactly: full code ranges (Q8_0 weights include -128),
 *                activations at +-127, every block count 1..16 (the
 *                AVX-512 kernels take 4 Q4_0 / 2 Q8_0 blocks per step);
 *   q0_long      row lengths at and just past the AVX-512 kernels' scratch
 *                limit (they switch body there): matvec within the error
 *                budget of the ref, gemm bit-identical to matvec.
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

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float frand(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static void *xalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    return p;
}

#define for_each_tier(k)                                                  \
    for (int isa_ = TB_ISA_GENERIC; isa_ <= TB_ISA_NEON; isa_++)          \
        for (const tb_kernels_t *k = tb_kernels_for((tb_isa_t)isa_); k; k = NULL)

/* ---------------------------------------------------------------------- */
/* Activation quantizers                                                    */
/* ---------------------------------------------------------------------- */

/* Row `kind` of n floats aimed at one corner case of the quantizers. */
static void edge_row(int kind, float *x, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        float v = frand();
        switch (kind) {
        case 0: v = (float)((int)(v * 254.0f)) * 0.5f; break;          /* halves: x * id ties */
        case 1: v = (j % 9 == 4) ? -2.5f : (j % 13 == 1 ? 2.5f : v); break;   /* +-max, both signs */
        case 2: v = ldexpf(v, -(int)(j / 32) * 9); break;              /* tiny blocks, subnormals */
        case 3: v = v * 1e30f; break;                                  /* huge */
        case 4: v = (j / 32) % 3 == 1 ? 0.0f : v; break;               /* zero Q8_0 blocks */
        case 5: v = (j / 256) % 2 ? 0.0f : v * 3.0f; break;            /* zero Q8_K blocks */
        case 6: v = 1.0f; break;                                       /* all equal */
        default: v = (float)(j % 255 - 127) / 127.0f; break;           /* the code grid itself */
        }
        x[j] = v;
    }
}

static void test_act_edges(void **state) {
    (void)state;
    static const tb_type_t wts[] = {TB_TYPE_Q8_0, TB_TYPE_Q4_0, TB_TYPE_TQ2_0, TB_TYPE_Q4_K};
    const int64_t n = 4096;
    float *x = xalloc(sizeof(float) * (size_t)n);   // (n)
    for_each_tier(k) {
        for (size_t i = 0; i < TB_ARRAY_LEN(wts); i++) {
            tb_type_t at = tb_type_traits(wts[i])->vec_dot_type;
            size_t ab = tb_type_row_bytes(at, n);
            uint8_t *want = xalloc(ab), *got = xalloc(ab);
            for (int kind = 0; kind < 8; kind++) {
                edge_row(kind, x, n);
                tb_type_traits(at)->from_float_ref(x, want, n);
                memset(got, 0x5A, ab);
                k->t[wts[i]].quantize_act(x, got, n);
                if (memcmp(want, got, ab) != 0)
                    fail_msg("%s: quantize_act %s, edge row %d: bytes differ from %s_ref", tb_isa_name(k->isa),
                             tb_type_name(wts[i]), kind, tb_type_name(at));
            }
            free(want);
            free(got);
        }
    }
    free(x);
}

/* ---------------------------------------------------------------------- */
/* Exact integer dots                                                       */
/* ---------------------------------------------------------------------- */

/* rows x nb blocks of wt (Q8_0 / Q4_0) with d = 1 and random codes over the
 * full range; for Q8_0 every 7th code is -128. */
static uint8_t *exact_weights(tb_type_t wt, int rows, int nb) {
    const size_t bb = tb_type_row_bytes(wt, QK8_0);
    uint8_t *w = xalloc(bb * (size_t)(rows * nb));
    for (int b = 0; b < rows * nb; b++) {
        if (wt == TB_TYPE_Q8_0) {
            block_q8_0 *q = (block_q8_0 *)(w + bb * (size_t)b);
            q->d = 0x3C00;   /* 1.0 */
            for (int j = 0; j < QK8_0; j++) q->qs[j] = (int8_t)(j % 7 == 3 ? -128 : (int)(rnd() % 256) - 128);
        } else {
            block_q4_0 *q = (block_q4_0 *)(w + bb * (size_t)b);
            q->d = 0x3C00;
            for (int j = 0; j < QK4_0 / 2; j++) q->qs[j] = (uint8_t)rnd();
        }
    }
    return w;
}

static void test_q0_exact(void **state) {
    (void)state;
    static const tb_type_t wts[] = {TB_TYPE_Q8_0, TB_TYPE_Q4_0};
    const tb_kernels_t *ref = tb_kernels_for(TB_ISA_REF);
    const int rows = 7, nt = 9;
    for (size_t i = 0; i < TB_ARRAY_LEN(wts); i++) {
        for (int nb = 1; nb <= 16; nb++) {
            const int64_t n = (int64_t)nb * QK8_0;
            const size_t ws = tb_type_row_bytes(wts[i], n), as = tb_act_row_bytes(wts[i], n);
            uint8_t *W = exact_weights(wts[i], rows, nb);   // (rows, nb blocks)
            block_q8_0 *A = xalloc(as * nt);                // (nt, nb blocks)
            for (int b = 0; b < nt * nb; b++) {
                A[b].d = 0x3C00;
                for (int j = 0; j < QK8_0; j++) A[b].qs[j] = (int8_t)(j % 5 == 0 ? ((b + j) & 1 ? 127 : -127)
                                                                                : (int)(rnd() % 255) - 127);
            }
            float *want = xalloc(sizeof(float) * (size_t)(rows * nt)), *Y = xalloc(sizeof(float) * (size_t)(rows * nt));
            for (int t = 0; t < nt; t++)
                for (int r = 0; r < rows; r++)
                    ref->t[wts[i]].vec_dot(n, &want[t * rows + r], W + ws * (size_t)r, (uint8_t *)A + as * (size_t)t);
            for_each_tier(k) {
                for (int t = 0; t < nt; t++) {
                    k->t[wts[i]].matvec(W, ws, (uint8_t *)A + as * (size_t)t, Y, 0, rows, n);
                    for (int r = 0; r < rows; r++)
                        if (Y[r] != want[t * rows + r])
                            fail_msg("%s: matvec %s, %d blocks, token %d row %d: %.1f, exact %.1f",
                                     tb_isa_name(k->isa), tb_type_name(wts[i]), nb, t, r, Y[r], want[t * rows + r]);
                }
                k->t[wts[i]].gemm(W, ws, A, as, nt, Y, rows, 0, rows, n);
                for (int e = 0; e < rows * nt; e++)
                    if (Y[e] != want[e])
                        fail_msg("%s: gemm %s, %d blocks, token %d row %d: %.1f, exact %.1f", tb_isa_name(k->isa),
                                 tb_type_name(wts[i]), nb, e / rows, e % rows, Y[e], want[e]);
            }
            free(W); free(A); free(want); free(Y);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Long rows                                                                */
/* ---------------------------------------------------------------------- */

static void test_q0_long(void **state) {
    (void)state;
    static const tb_type_t wts[] = {TB_TYPE_Q8_0, TB_TYPE_Q4_0};
    static const int64_t lens[] = {16384, 16384 + 32, 24576, 24576 + 32};
    const tb_kernels_t *ref = tb_kernels_for(TB_ISA_REF);
    const int rows = 3, nt = 9;
    for (size_t i = 0; i < TB_ARRAY_LEN(wts); i++) {
        for (size_t l = 0; l < TB_ARRAY_LEN(lens); l++) {
            const int64_t n = lens[l];
            const size_t ws = tb_type_row_bytes(wts[i], n), as = tb_act_row_bytes(wts[i], n);
            float *x = xalloc(sizeof(float) * (size_t)n);
            uint8_t *W = xalloc(ws * rows), *A = xalloc(as * nt);
            for (int r = 0; r < rows + nt; r++) {
                for (int64_t j = 0; j < n; j++) x[j] = frand();
                if (r < rows) tb_type_traits(wts[i])->from_float_ref(x, W + ws * (size_t)r, n);
                else tb_quantize_row_q8_0_ref(x, A + as * (size_t)(r - rows), n);
            }
            float *Y = xalloc(sizeof(float) * (size_t)(rows * nt)), y1[3];
            for_each_tier(k) {
                k->t[wts[i]].gemm(W, ws, A, as, nt, Y, rows, 0, rows, n);
                for (int t = 0; t < nt; t++) {
                    k->t[wts[i]].matvec(W, ws, A + as * (size_t)t, y1, 0, rows, n);
                    for (int r = 0; r < rows; r++) {
                        float want;
                        ref->t[wts[i]].vec_dot(n, &want, W + ws * (size_t)r, A + as * (size_t)t);
                        /* test_kernels.c's budget with S = sum |w a| <= 4 n (|w|, |a| <= ~1) */
                        double tol = (double)(n / QK8_0 + 64) * FLT_EPSILON * 4.0 * (double)n;
                        if (memcmp(&y1[r], &Y[t * rows + r], sizeof(float)) != 0)
                            fail_msg("%s: %s n %lld token %d row %d: gemm %.9g is not matvec's %.9g",
                                     tb_isa_name(k->isa), tb_type_name(wts[i]), (long long)n, t, r, Y[t * rows + r],
                                     y1[r]);
                        if (!(fabs((double)y1[r] - want) <= tol))
                            fail_msg("%s: %s n %lld token %d row %d: %.9g, ref %.9g (budget %.3g)", tb_isa_name(k->isa),
                                     tb_type_name(wts[i]), (long long)n, t, r, y1[r], want, tol);
                    }
                }
            }
            free(x); free(W); free(A); free(Y);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_act_edges),
        cmocka_unit_test(test_q0_exact),
        cmocka_unit_test(test_q0_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
