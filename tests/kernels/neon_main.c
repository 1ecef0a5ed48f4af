/*
 * neon_main.c — the NEON tier against the ref tier, cross-compiled for
 * aarch64 and run under qemu-user by neon_cross.sh (no cmocka, no libcpuid
 * on that side: a tiny assert harness). Same checks as test_kernels.c:
 * vec_dot within the format's budget of _ref, matvec writes exactly rows
 * [r0, r1) (others stay NaN), gemm bit-identical to matvec per row. Both
 * the baseline and the SDOT (+dotprod) variants are run when the emulated
 * CPU has dotprod (qemu -cpu max does).
 * Budget (as test_kernels.c): |y - y_ref| <= (terms + 64) * FLT_EPSILON * S,
 * S = sum |w_j a_j| of dequantized values, terms = blocks (integer
 * formats) or elements (f32).
 */
#include "kernels/kernels.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

tb_cpu_features_t tb_cpu;   /* normally defined by dispatch.c */

static int failures, checks;
#define CHECK(cond, ...)                                               \
    do {                                                               \
        checks++;                                                      \
        if (!(cond)) {                                                 \
            failures++;                                                \
            if (failures < 20) { printf("FAIL: " __VA_ARGS__); printf("\n"); } \
        }                                                              \
    } while (0)

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static float frand(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (float)((double)(rs >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void *quant(tb_type_t t, int64_t rows, int64_t n) {
    size_t rb = tb_type_row_bytes(t, n);
    uint8_t *q = malloc(rb * (size_t)rows);
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < n; j++) x[j] = frand() * (r % 5 == 2 ? 30.0f : 1.0f);
        tb_type_traits(t)->from_float_ref(x, q + rb * (size_t)r, n);
    }
    free(x);
    return q;
}

static double abs_dot(tb_type_t wt, const void *w, const void *a, int64_t n) {
    float *wf = malloc(sizeof(float) * (size_t)n), *af = malloc(sizeof(float) * (size_t)n);
    tb_type_traits(wt)->to_float_ref(w, wf, n);
    tb_type_traits(tb_type_traits(wt)->vec_dot_type)->to_float_ref(a, af, n);
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += fabs((double)wf[j] * af[j]);
    free(wf); free(af);
    return s;
}

static void check_tier(const tb_kernels_t *ref, const tb_kernels_t *k, const char *name) {
    static const tb_type_t types[] = {TB_TYPE_F32, TB_TYPE_Q8_0, TB_TYPE_Q4_0, TB_TYPE_TQ2_0,
                                      TB_TYPE_Q4_K, TB_TYPE_Q6_K};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        tb_type_t wt = types[ti];
        const tb_type_traits_t *tr = tb_type_traits(wt);
        for (int rep = 0; rep < 4; rep++) {
            int64_t rows = 8 * (rep + 1) + 3 + rep, nt = 5 + rep, ldy = rows + 2;
            int64_t n = tr->blck == 1 ? 32 * (rep + 2) + rep * 3 : tr->blck * (rep + 2);
            void *W = quant(wt, rows, n), *A = quant(tr->vec_dot_type, nt, n);
            size_t ws = tb_type_row_bytes(wt, n), as = tb_type_row_bytes(tr->vec_dot_type, n);
            int64_t r0 = rep, r1 = rows - rep;
            float *Y = malloc(sizeof(float) * (size_t)(nt * ldy)), *y = malloc(sizeof(float) * (size_t)rows);
            for (int64_t i = 0; i < nt * ldy; i++) Y[i] = NAN;
            k->t[wt].gemm(W, ws, A, as, nt, Y, ldy, r0, r1, n);
            for (int64_t t = 0; t < nt; t++) {
                for (int64_t r = 0; r < rows; r++) y[r] = NAN;
                const uint8_t *a = (const uint8_t *)A + as * (size_t)t;
                k->t[wt].matvec(W, ws, a, y, r0, r1, n);
                for (int64_t r = 0; r < ldy; r++) {
                    float g = Y[t * ldy + r];
                    if (r < r0 || r >= r1) {
                        CHECK(isnan(g), "%s %s gemm wrote row %lld outside [%lld,%lld)", name, tr->name,
                              (long long)r, (long long)r0, (long long)r1);
                        if (r < rows) CHECK(isnan(y[r]), "%s %s matvec wrote row %lld outside", name, tr->name, (long long)r);
                        continue;
                    }
                    const uint8_t *w = (const uint8_t *)W + ws * (size_t)r;
                    float want, vd;
                    ref->t[wt].vec_dot(n, &want, w, a);
                    k->t[wt].vec_dot(n, &vd, w, a);
                    double terms = tr->is_quant ? (double)(n / tr->blck) : (double)n;
                    double tol = (terms + 64) * FLT_EPSILON * abs_dot(wt, w, a, n) + 1e-30;
                    CHECK(fabs((double)y[r] - want) <= tol, "%s %s matvec n %lld row %lld: %.9g vs ref %.9g (budget %.3g)",
                          name, tr->name, (long long)n, (long long)r, y[r], want, tol);
                    CHECK(g == y[r] || (isnan(g) && isnan(y[r])), "%s %s gemm row %lld tok %lld: %.9g != matvec %.9g",
                          name, tr->name, (long long)r, (long long)t, g, y[r]);
                    CHECK(vd == y[r], "%s %s vec_dot %.9g != matvec %.9g", name, tr->name, vd, y[r]);
                }
            }
            free(W); free(A); free(Y); free(y);
        }
    }
    /* read_sum */
    uint64_t *v = aligned_alloc(64, 64 * 100), want = 0;
    for (int i = 0; i < 8 * 100; i++) want += (v[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull);
    CHECK(k->read_sum(v, 64 * 100) == want, "%s read_sum", name);
    free(v);
}

int main(void) {
    tb_kernels_t ref = {0}, base = {0}, sdot = {0};
    tb_kernels_fill_ref(&ref);
    tb_cpu.neon = true;
    tb_cpu.dotprod = false;
    tb_kernels_fill_neon(&base);
    check_tier(&ref, &base, "neon");
    if (getauxval(AT_HWCAP) & (1 << 20)) {   /* HWCAP_ASIMDDP */
        tb_cpu.dotprod = true;
        tb_kernels_fill_neon(&sdot);
        check_tier(&ref, &sdot, "neon+dotprod");
        printf("dotprod variant tested (features: %s)\n", sdot.features);
    } else {
        printf("no dotprod on this CPU: SDOT variant not tested\n");
    }
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
