/*
 * neon_main.c — the NEON tier against the ref tier, cross-compiled for
 * aarch64 and run under qemu-user by neon_cross.sh (no cmocka, no libcpuid
 * on that side: a tiny assert harness). Same checks as test_kernels.c:
 * vec_dot within the format's budget of _ref, matvec writes exactly rows
 * [r0, r1) (others stay NaN), gemm bit-identical to matvec per row (also on
 * long rows: gemm row chunks, past the prepared activation-scale buffer);
 * quantize_act byte-identical to the Q8_0 / Q8_K _ref on edge rows (ties,
 * +-amax of both signs, tiny/subnormal/huge/zero blocks, the code grid),
 * n from one block up; fp16 narrowing of scales at every boundary. Both
 * the neon tier and the dotprod tier (its SDOT kernels over neon's table)
 * are run, the latter when the emulated CPU has dotprod (qemu -cpu max does),
 * and the i8mm tier (its SMMLA gemms over dotprod's table) when it has
 * i8mm (qemu -cpu max does): its gemm must equal dotprod's matvec bit for
 * bit on every shape (odd rows and tokens: the 2x2 tiles' leftovers).
 * Budget (as test_kernels.c): |y - y_ref| <= (terms + 64) * FLT_EPSILON * S,
 * S = sum |w_j a_j| of dequantized values, terms = blocks (integer
 * formats) or elements (f32).
 */
#include "kernels/kernels.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "kernels/neon_common.h"

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

/* One shape: gemm over nt tokens vs matvec per token vs vec_dot vs _ref. */
static void check_shape(const tb_kernels_t *ref, const tb_kernels_t *k, const char *name, tb_type_t wt,
                        int64_t rows, int64_t n, int64_t nt, int64_t r0, int64_t r1) {
    const tb_type_traits_t *tr = tb_type_traits(wt);
    int64_t ldy = rows + 2;
    void *W = quant(wt, rows, n), *A = quant(tr->vec_dot_type, nt, n);
    size_t ws = tb_type_row_bytes(wt, n), as = tb_type_row_bytes(tr->vec_dot_type, n);
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

/* Row `kind` of n floats aimed at one corner case of the activation
 * quantizers: rounding ties, equal magnitudes of both signs (+-127 codes;
 * Q8_K keeps the first), tiny / subnormal / huge blocks, zero blocks. */
static void act_row(int kind, float *x, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        float v = frand();
        if (kind == 0) v = j % 32 == 7 ? (j % 64 == 7 ? 127.0f : -127.0f)         /* id = +-1: */
                                       : (float)(int)(v * 254.0f) * 0.5f;         /* halves tie */
        if (kind == 9) v = j % 32 == 9 ? 63.5f : (float)(int)(v * 254.0f) * 0.25f; /* id = 2 */
        if (kind == 1) v = j % 7 == 3 ? 3.0f : (j % 11 == 5 ? -3.0f : v);          /* +-amax */
        if (kind == 2) v = j % 11 == 5 ? -3.0f : (j % 7 == 3 ? 3.0f : v);          /* -amax first */
        if (kind == 3) v = ldexpf(v, -8 * (int)(j / 32));                          /* tiny, subnormal */
        if (kind == 4) v = v * 3e37f;                                              /* huge */
        if (kind == 5) v = (j / 32) % 3 == 1 ? 0.0f : v;                           /* zero Q8_0 blocks */
        if (kind == 6) v = (j / 256) % 2 ? (j % 2 ? -0.0f : 0.0f) : v;             /* zero Q8_K blocks */
        if (kind == 7) v = (float)((int)(j % 255) - 127) / 127.0f;                 /* the code grid */
        if (kind == 8) v = j % 32 == 0 ? 1e-29f : v * 1e-31f;                      /* just above TINY */
        x[j] = v;
    }
}

/* quantize_act byte-identical to the activation format's _ref. */
static void check_act(const tb_kernels_t *k, const char *name) {
    static const tb_type_t wts[] = {TB_TYPE_Q8_0, TB_TYPE_Q4_0, TB_TYPE_TQ2_0, TB_TYPE_TQ1_0, TB_TYPE_Q4_K,
                                    TB_TYPE_Q6_K};
    const int64_t n = 256 * 9;
    float *x = malloc(sizeof(float) * (size_t)n);
    for (size_t i = 0; i < sizeof wts / sizeof wts[0]; i++) {
        tb_type_t at = tb_type_traits(wts[i])->vec_dot_type;
        for (int kind = 0; kind < 10; kind++)
            for (int64_t len = tb_type_traits(at)->blck; len <= n; len += (len < 512 ? tb_type_traits(at)->blck : n)) {
                size_t ab = tb_type_row_bytes(at, len);
                uint8_t *want = malloc(ab), *got = malloc(ab);
                act_row(kind, x, len);
                tb_type_traits(at)->from_float_ref(x, want, len);
                memset(got, 0x5A, ab);
                k->t[wts[i]].quantize_act(x, got, len);
                CHECK(memcmp(want, got, ab) == 0, "%s quantize_act %s (%s) row kind %d, n %lld: bytes differ from ref",
                      name, tb_type_name(wts[i]), tb_type_name(at), kind, (long long)len);
                free(want); free(got);
            }
    }
    free(x);
}

/* With every scale d = 1 and |sums| < 2^24 the float dot is an exact
 * integer: Q8_0 / Q4_0 must equal the ref exactly on full code ranges
 * (Q8_0 weights include -128, Q4_0 nibbles 0 and 15, activations +-127),
 * for every block count 1..12 (groups of four blocks and every tail). */
static void check_exact(const tb_kernels_t *ref, const tb_kernels_t *k, const char *name) {
    static const tb_type_t wts[] = {TB_TYPE_Q8_0, TB_TYPE_Q4_0};
    for (size_t i = 0; i < 2; i++)
        for (int nb = 1; nb <= 12; nb++) {
            block_q8_0 w8[12], a[12];
            block_q4_0 w4[12];
            for (int b = 0; b < nb; b++) {
                w8[b].d = w4[b].d = a[b].d = 0x3C00;   /* 1.0 */
                for (int j = 0; j < QK8_0; j++) {
                    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
                    w8[b].qs[j] = (int8_t)(j % 7 == 3 ? -128 : (int)(rs % 256) - 128);
                    a[b].qs[j] = (int8_t)(j % 5 == 1 ? (j % 10 == 1 ? 127 : -127) : (int)(rs >> 20) % 255 - 127);
                    if (j < 16) w4[b].qs[j] = (uint8_t)(j % 6 == 0 ? 0x0F : (j % 6 == 1 ? 0xF0 : (rs >> 40) & 0xFF));
                }
            }
            const void *w = wts[i] == TB_TYPE_Q8_0 ? (const void *)w8 : (const void *)w4;
            float want, got, mv[1] = {NAN};
            ref->t[wts[i]].vec_dot(nb * QK8_0, &want, w, a);
            k->t[wts[i]].vec_dot(nb * QK8_0, &got, w, a);
            k->t[wts[i]].matvec(w, 0, a, mv, 0, 1, nb * QK8_0);
            CHECK(got == want && mv[0] == want, "%s %s exact dot, %d blocks: %.9g / matvec %.9g vs ref %.9g", name,
                  tb_type_name(wts[i]), nb, got, mv[0], want);
        }
}

/* TQ1_0 with d = 1 against Q8_K with d = 1 (consistent bsums): the dot
 * is an exact integer, so the kernel equals the ref exactly. Every byte
 * value 0..255 appears in every qs column class (elements 0..159 and
 * 160..239) and in qh, next to the decode thresholds 85/86 and 170/171;
 * activations include -128 and +-127 (the widest int16 lane sums of the
 * baseline variant); 1..12 blocks. */
static void check_exact_tq1_0(const tb_kernels_t *ref, const tb_kernels_t *k, const char *name) {
    static const uint8_t edge[] = {0, 1, 85, 86, 170, 171, 254, 255, 28, 29, 56, 57, 113, 114, 142, 143};
    static block_tq1_0 w[12];
    static block_q8_K a[12];
    for (int b = 0; b < 12; b++) {
        w[b].d = 0x3C00;   /* 1.0 */
        for (int j = 0; j < 48; j++) {
            rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
            /* blocks 0..5 walk all 256 values per column; the rest random or edges */
            w[b].qs[j] = (uint8_t)(b < 6 ? (b * 48 + j * 5 + (j >= 32 ? 7 * b : 0)) % 256
                                         : (j % 3 ? (int)(rs % 256) : edge[(j + b) % 16]));
        }
        for (int j = 0; j < 4; j++) w[b].qh[j] = (uint8_t)(b < 6 ? b * 43 + j * 11 : edge[(4 * b + j) % 16]);
        a[b].d = 1.0f;
        for (int j = 0; j < QK_K; j++) {
            rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
            a[b].qs[j] = (int8_t)(b == 11 ? -128 : b == 10 ? (j % 2 ? 127 : -127) : (int)(rs >> 20) % 256 - 128);
        }
        for (int g = 0; g < QK_K / 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) sum += a[b].qs[16 * g + j];
            a[b].bsums[g] = (int16_t)sum;
        }
    }
    /* the worst int16 lane: every weight -1 against -128 (block 11 of a
     * shifted copy: qs = 0 decodes to t = 0 in every trit) */
    static block_tq1_0 wz[1];
    memset(wz, 0, sizeof wz);
    wz[0].d = 0x3C00;
    float want, got, mv[1] = {NAN};
    ref->t[TB_TYPE_TQ1_0].vec_dot(QK_K, &want, wz, &a[11]);
    k->t[TB_TYPE_TQ1_0].vec_dot(QK_K, &got, wz, &a[11]);
    CHECK(got == want && want == 128.0f * QK_K, "%s tq1_0 exact dot, all -1 x -128: %.9g vs ref %.9g", name, got, want);
    for (int nb = 1; nb <= 12; nb++) {
        const int off = nb == 12 ? 0 : 12 - nb;   /* also the last blocks (activation extremes) */
        ref->t[TB_TYPE_TQ1_0].vec_dot(nb * QK_K, &want, w + off, a + off);
        k->t[TB_TYPE_TQ1_0].vec_dot(nb * QK_K, &got, w + off, a + off);
        mv[0] = NAN;
        k->t[TB_TYPE_TQ1_0].matvec(w + off, 0, a + off, mv, 0, 1, nb * QK_K);
        CHECK(got == want && mv[0] == want, "%s tq1_0 exact dot, %d blocks: %.9g / matvec %.9g vs ref %.9g", name,
              nb, got, mv[0], want);
        for (int b = 0; b < 12; b++) {   /* one block at a time: no cancellation across blocks */
            ref->t[TB_TYPE_TQ1_0].vec_dot(QK_K, &want, w + b, a + (b + nb) % 12);
            k->t[TB_TYPE_TQ1_0].vec_dot(QK_K, &got, w + b, a + (b + nb) % 12);
            CHECK(got == want, "%s tq1_0 exact block %d x act %d: %.9g vs ref %.9g", name, b, (b + nb) % 12, got, want);
        }
    }
}

/* TQ2_0 the same way: d = 1, every byte value (codes 0..3, 3 included:
 * the kernels compute what the ref computes), the widest int16 lane sums
 * (codes 2 and 3 against -128) and 1..12 blocks. */
static void check_exact_tq2_0(const tb_kernels_t *ref, const tb_kernels_t *k, const char *name) {
    static block_tq2_0 w[12];
    static block_q8_K a[12];
    for (int b = 0; b < 12; b++) {
        w[b].d = 0x3C00;
        for (int j = 0; j < 64; j++) {
            rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
            w[b].qs[j] = (uint8_t)(b < 4 ? b * 64 + j : b == 10 ? 0xAA : b == 11 ? 0xFF : (int)(rs % 256));
        }
        a[b].d = 1.0f;
        for (int j = 0; j < QK_K; j++) {
            rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
            a[b].qs[j] = (int8_t)(b >= 10 ? -128 : b == 9 ? (j % 2 ? 127 : -127) : (int)(rs >> 20) % 256 - 128);
        }
        for (int g = 0; g < QK_K / 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) sum += a[b].qs[16 * g + j];
            a[b].bsums[g] = (int16_t)sum;
        }
    }
    float want, got, mv[1];
    for (int nb = 1; nb <= 12; nb++) {
        const int off = 12 - nb;
        ref->t[TB_TYPE_TQ2_0].vec_dot(nb * QK_K, &want, w + off, a + off);
        k->t[TB_TYPE_TQ2_0].vec_dot(nb * QK_K, &got, w + off, a + off);
        mv[0] = NAN;
        k->t[TB_TYPE_TQ2_0].matvec(w + off, 0, a + off, mv, 0, 1, nb * QK_K);
        CHECK(got == want && mv[0] == want, "%s tq2_0 exact dot, %d blocks: %.9g / matvec %.9g vs ref %.9g", name,
              nb, got, mv[0], want);
        for (int b = 0; b < 12; b++) {
            ref->t[TB_TYPE_TQ2_0].vec_dot(QK_K, &want, w + b, a + (b + nb) % 12);
            k->t[TB_TYPE_TQ2_0].vec_dot(QK_K, &got, w + b, a + (b + nb) % 12);
            CHECK(got == want, "%s tq2_0 exact block %d x act %d: %.9g vs ref %.9g", name, b, (b + nb) % 12, got, want);
        }
    }
    ref->t[TB_TYPE_TQ2_0].vec_dot(QK_K, &want, w + 11, a + 11);
    CHECK(want == -256.0f * QK_K, "tq2_0 ref: codes 3 x -128 gives %.9g", want);
}

static void check_tier(const tb_kernels_t *ref, const tb_kernels_t *k, const char *name) {
    static const tb_type_t types[] = {TB_TYPE_F32, TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_Q8_0, TB_TYPE_Q4_0,
                                      TB_TYPE_TQ2_0, TB_TYPE_TQ1_0, TB_TYPE_Q4_K, TB_TYPE_Q6_K};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        tb_type_t wt = types[ti];
        const tb_type_traits_t *tr = tb_type_traits(wt);
        for (int rep = 0; rep < 6; rep++) {
            int64_t rows = 8 * (rep + 1) + 3 + rep, nt = 5 + rep;
            int64_t n = tr->blck == 1 ? 32 * (rep + 2) + rep * 3 : tr->blck * (rep + 2);
            check_shape(ref, k, name, wt, rows, n, nt, rep, rows - rep);
        }
        if (wt == TB_TYPE_Q8_0 || wt == TB_TYPE_Q4_0) {
            check_shape(ref, k, name, wt, 11, 32 * 1003, 6, 1, 10);   /* gemm row chunks of 4 rows */
            check_shape(ref, k, name, wt, 3, 32 * 2051, 5, 0, 3);     /* past the prepared-scale buffer */
        }
        if (!tr->is_quant) check_shape(ref, k, name, wt, 5, 4099, 9, 0, 5);
    }
    check_shape(ref, k, name, TB_TYPE_TQ1_0, 13, 256 * 67, 7, 2, 12);   /* long rows, gemm tiles + tail */
    check_shape(ref, k, name, TB_TYPE_TQ2_0, 13, 256 * 67, 7, 2, 12);
    check_act(k, name);
    check_exact(ref, k, name);
    check_exact_tq1_0(ref, k, name);
    check_exact_tq2_0(ref, k, name);
    /* read_sum */
    uint64_t *v = aligned_alloc(64, 64 * 100), want = 0;
    for (int i = 0; i < 8 * 100; i++) want += (v[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull);
    CHECK(k->read_sum(v, 64 * 100) == want, "%s read_sum", name);
    free(v);
}

/* tb_neon_f2h (fcvt) == tb_fp32_to_fp16 at every half value, every midpoint
 * between neighbours (ties) and one float ulp either side, both signs,
 * up to and past the overflow threshold 65520. */
static void check_f2h(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float f = tb_fp16_to_fp32((tb_fp16_t)h), g = h + 1 < 0x7c00 ? tb_fp16_to_fp32((tb_fp16_t)(h + 1)) : 65536.0f;
        float mid = f + (g - f) * 0.5f;
        float v[5] = {f, mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY), nextafterf(g, 0.0f)};
        for (int i = 0; i < 10; i++) {
            float x = i < 5 ? v[i] : -v[i - 5];
            if (tb_neon_f2h(x) != tb_fp32_to_fp16(x)) bad++;
        }
    }
    CHECK(bad == 0, "fp16 narrowing differs from tb_fp32_to_fp16 at %d values", bad);
    CHECK(tb_neon_f2h(1e30f) == tb_fp32_to_fp16(1e30f) && tb_neon_f2h(-1e-30f) == tb_fp32_to_fp16(-1e-30f),
          "fp16 narrowing of out-of-range values");
}

int main(void) {
    check_f2h();
    tb_kernels_t ref = {0}, base = {0}, sdot = {0};
    tb_kernels_fill_ref(&ref);
    tb_cpu.neon = true;
    tb_cpu.dotprod = false;
    tb_kernels_fill_neon(&base);
    check_tier(&ref, &base, "neon");
    if (getauxval(AT_HWCAP) & (1 << 20)) {   /* HWCAP_ASIMDDP */
        tb_cpu.dotprod = true;
        /* the dotprod tier as dispatch.c builds it: its SDOT kernels over
         * neon's table for the rest */
        sdot = base;
        tb_kernels_fill_neon_dotprod(&sdot);
        check_tier(&ref, &sdot, "neon+dotprod");
        printf("dotprod variant tested (features: %s)\n", sdot.features);
        if (getauxval(AT_HWCAP2) & (1 << 13)) {   /* HWCAP2_I8MM */
            tb_cpu.i8mm = true;
            tb_kernels_t mm = sdot;
            tb_kernels_fill_i8mm(&mm);
            check_tier(&ref, &mm, "i8mm");
            for (int64_t nt = 1; nt <= 4; nt++)   /* every token-pair leftover, row pairs and a last row */
                for (int64_t rows = 1; rows <= 5; rows++) {
                    check_shape(&ref, &mm, "i8mm", TB_TYPE_Q4_0, rows, 32 * 9, nt, 0, rows);
                    check_shape(&ref, &mm, "i8mm", TB_TYPE_Q8_0, rows, 32 * 5, nt, rows > 2, rows);
                    check_shape(&ref, &mm, "i8mm", TB_TYPE_TQ2_0, rows, 256 * 3, nt, 0, rows);
                }
            printf("i8mm variant tested (features: %s)\n", mm.features);
        } else {
            printf("no i8mm on this CPU: SMMLA variant not tested\n");
        }
    } else {
        printf("no dotprod on this CPU: SDOT variant not tested\n");
    }
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
