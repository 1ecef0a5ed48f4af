/*
 * x86_bf16_dp.h — BF16 weights x F32 activations with AVX512_BF16's
 * vdpbf16ps, on the 8-row repacked copy of x86_fx_rp.h (included by
 * tier_avx512.c after it; registered only when tb_cpu.avx512bf16).
 *
 * Why: the F32 path (x86_fx_rp.h, kind 2) widens every weight to F32 (a
 * vpmovzxwd and a vpslld) and needs one FMA per 16 weights, so it tops out
 * at ~58 GB/s per core with the weights in cache; one vdpbf16ps multiplies
 * 32 weights as they are stored.
 *
 * Precision: the activation is split once per call into two BF16 vectors,
 * hi = bf16(x) and lo = bf16(x - hi) (round to nearest even both times;
 * x - hi is exact), so hi + lo is x within 2^-17 |x|, and every weight is
 * multiplied by both: w * hi and w * lo are exact in F32 (8-bit
 * significands), and only the adds round. That is within the F32 path's
 * error budget (tests/kernels: (n + 64) FLT_EPSILON sum |w x|), unlike a
 * single bf16(x), which ggml uses and which costs 2^-9 |x| per element.
 * vdpbf16ps treats denormal inputs and outputs as zero (|w x| < 2^-126).
 *
 * Arithmetic of one (row, token), the same in matvec and gemm, so gemm ==
 * matvec bit for bit per row, and independent of the row range:
 *   lane view   row k of a group is the half k % 2 (8 lanes) of pair
 *               register k / 2: each step's 64-byte line holds rows 2j and
 *               2j + 1 (16 elements each), lane i of a half covers the
 *               step's elements 2i and 2i + 1;
 *   steps       alternate two accumulators by parity; per step
 *               acc = dpbf16(acc, w, hi) then acc = dpbf16(acc, w, lo);
 *   tail        the n % 16 last elements of each row (stored per row after
 *               the steps) as a masked step, zeros beyond, in the
 *               accumulator whose turn it is;
 *   reduce      v = acc0 + acc1, then the row's 8 lanes by hsum_ps256's fixed tree.
 * The F32 path rounds differently, so results depend on whether the CPU
 * has AVX512_BF16 (within the budget); the file-layout kernel (no repacked
 * copy: unregistered matrices) stays on the F32 path.
 */
#ifndef TB_X86_BF16_DP_H
#define TB_X86_BF16_DP_H

#include "kernels/x86_fx_rp.h"

#if defined(__AVX512BF16__)

#define TB_BF16DP_MAXN 8192   /* longer rows: the F32 path (stack: hi/lo per token) */
#define TB_BF16DP_NT 2        /* tokens per gemm pass (16 accumulators)             */
#define TB_BF16DP_BLOCK 8     /* gemm: groups per block, each token pair split once */

/* ---------------------------------------------------------------------- */
/* Activation split                                                         */
/* ---------------------------------------------------------------------- */

/* x (n floats) into hi, lo (n rounded up to 16, zeros past n): x = hi + lo
 * within 2^-17 |x|. */
TB_INLINE void bf16dp_split(const float *x, int64_t n, uint16_t *hi, uint16_t *lo) {
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + j);                       /* (16) */
        const __m256i h = (__m256i)_mm512_cvtneps_pbh(v);                        /* (16) bf16 */
        const __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        const __m256i l = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v, hf));    /* x - hi: exact */
        _mm256_storeu_si256((__m256i *)(hi + j), h);
        _mm256_storeu_si256((__m256i *)(lo + j), l);
    }
}

/* ---------------------------------------------------------------------- */
/* One group                                                                */
/* ---------------------------------------------------------------------- */

/* acc + w * (16 bf16 at p in both 256-bit halves). */
TB_INLINE __m512 bf16dp_step(__m512 acc, __m512i w, const uint16_t *p) {
    const __m512i x = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)x);
}

/* out[t][k] = row k of the group at G (n columns) . token t, given as
 * hi[t], lo[t] (bf16dp_split), k < 8, t < nt <= TB_BF16DP_NT. */
TB_INLINE void bf16dp_grp(int nt, const uint16_t *G, int64_t n, const uint16_t *const *hi,
                          const uint16_t *const *lo, float (*out)[TB_FXRP_ROWS], uint32_t pf) {
    enum { R = TB_FXRP_ROWS, P = TB_FXRP_ROWS / 2 };
    const int64_t ns = n / 16, rem = n % 16;
    __m512 acc[TB_BF16DP_NT][2][P];   /* (token, parity, row pair) */
    TB_UNROLL
    for (int t = 0; t < TB_BF16DP_NT; t++)
        TB_UNROLL
        for (int j = 0; j < P; j++) acc[t][0][j] = acc[t][1][j] = _mm512_setzero_ps();
    /* one step (16 columns, weights from w) into the accumulators of parity PAR */
#define BF16DP_STEP(PAR, wline, xs)                                                          \
    TB_UNROLL                                                                                \
    for (int j = 0; j < P; j++) {                                                            \
        const __m512i w = wline(j);                                                          \
        TB_UNROLL                                                                            \
        for (int t = 0; t < nt; t++) {                                                       \
            acc[t][PAR][j] = bf16dp_step(acc[t][PAR][j], w, hi[t] + 16 * (xs));              \
            acc[t][PAR][j] = bf16dp_step(acc[t][PAR][j], w, lo[t] + 16 * (xs));              \
        }                                                                                    \
    }
    int64_t s = 0;
    for (; s + 2 <= ns; s += 2) {   /* unrolled by two: the parity is a constant index */
        const uint16_t *g0 = G + s * 16 * R, *g1 = g0 + 16 * R;   /* (R, 16) each: rows 2j, 2j + 1 in line j */
        tb_pf_block(g0, 2 * 16 * R * 2, pf);   /* g0 and g1: 8 lines, pf bytes ahead (0: none) */
#define LINE0(j) _mm512_loadu_si512(g0 + 32 * (j))
#define LINE1(j) _mm512_loadu_si512(g1 + 32 * (j))
        BF16DP_STEP(0, LINE0, s)
        BF16DP_STEP(1, LINE1, s + 1)
    }
    bool odd = false;   /* the next step (or the tail) goes to parity 1 */
    if (s < ns) {
        const uint16_t *g0 = G + s * 16 * R;
        BF16DP_STEP(0, LINE0, s)
        odd = true;
    }
#undef LINE0
#undef LINE1
    if (rem) {   /* row k's rem elements at ns 16 R + k rem: a masked step */
        const __mmask16 m = (__mmask16)((1u << rem) - 1);
        const uint16_t *gt = G + ns * 16 * R;
#define LINET(j) _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi16(m, gt + (2 * (j)) * rem)), \
                                    _mm256_maskz_loadu_epi16(m, gt + (2 * (j) + 1) * rem), 1)
        if (odd) { BF16DP_STEP(1, LINET, ns) }
        else { BF16DP_STEP(0, LINET, ns) }
#undef LINET
    }
#undef BF16DP_STEP
    TB_UNROLL
    for (int t = 0; t < nt; t++)
        TB_UNROLL
        for (int j = 0; j < P; j++) {
            const __m512 v = _mm512_add_ps(acc[t][0][j], acc[t][1][j]);
            out[t][2 * j] = hsum_ps256(_mm512_castps512_ps256(v));
            out[t][2 * j + 1] = hsum_ps256(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        }
}

/* ---------------------------------------------------------------------- */
/* matvec / gemm                                                            */
/* ---------------------------------------------------------------------- */

/* y[r], r in [r0, r1), from the repacked copy of W; false when there is
 * none or the rows are longer than TB_BF16DP_MAXN (the caller falls back). */
static bool matvec_bf16dp(const void *W, size_t ws, const void *a, float *y, int64_t r0, int64_t r1,
                          int64_t n) {
    if (r0 >= r1) return true;
    if (n > TB_BF16DP_MAXN) return false;
    const uint16_t *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_BF16);
    if (!G) return false;
    enum { R = TB_FXRP_ROWS };
    _Alignas(64) uint16_t hi[TB_BF16DP_MAXN], lo[TB_BF16DP_MAXN];   /* (n rounded up to 16) */
    bf16dp_split(a, n, hi, lo);
    const uint16_t *hp[1] = {hi}, *lp[1] = {lo};
    for (int64_t g = r0 / R; g * R < r1; g++) {
        float o[1][TB_FXRP_ROWS];
        bf16dp_grp(1, G + (size_t)(g * R * n), n, hp, lp, o, tb_pf_bytes);
        const int64_t a0 = TB_MAX(r0, g * R), a1 = TB_MIN(r1, g * R + R);
        for (int64_t r = a0; r < a1; r++) y[r] = o[0][r - g * R];
    }
    return true;
}

/* Blocks of TB_BF16DP_BLOCK groups (their weights stay in L2), each block
 * times every token pair, the pair split once per block. */
static bool gemm_bf16dp(const void *W, size_t ws, const void *A, size_t as, int64_t nt, float *Y, int64_t ldy,
                        int64_t r0, int64_t r1, int64_t n) {
    if (r0 >= r1) return true;
    if (n > TB_BF16DP_MAXN) return false;
    const uint16_t *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_BF16);
    if (!G) return false;
    enum { R = TB_FXRP_ROWS, NT = TB_BF16DP_NT };
    _Alignas(64) uint16_t buf[NT][2][TB_BF16DP_MAXN];   /* (token, hi/lo, n rounded up to 16) */
    const uint16_t *hp[NT], *lp[NT];
    for (int t = 0; t < NT; t++) { hp[t] = buf[t][0]; lp[t] = buf[t][1]; }
    const int64_t g0 = r0 / R, g1 = (r1 + R - 1) / R;
    for (int64_t b = g0; b < g1; b += TB_BF16DP_BLOCK) {
        const int64_t be = TB_MIN(g1, b + TB_BF16DP_BLOCK);
        for (int64_t t0 = 0; t0 < nt; t0 += NT) {
            const int ntk = (int)TB_MIN(NT, nt - t0);
            for (int t = 0; t < ntk; t++)
                bf16dp_split((const float *)((const uint8_t *)A + (size_t)(t0 + t) * as), n, buf[t][0], buf[t][1]);
            for (int64_t g = b; g < be; g++) {
                float o[NT][TB_FXRP_ROWS];
                if (ntk == NT) bf16dp_grp(NT, G + (size_t)(g * R * n), n, hp, lp, o, 0);
                else bf16dp_grp(1, G + (size_t)(g * R * n), n, hp, lp, o, 0);   /* gemm blocks sit in L2 */
                const int64_t a0 = TB_MAX(r0, g * R), a1 = TB_MIN(r1, g * R + R);
                for (int t = 0; t < ntk; t++)
                    for (int64_t r = a0; r < a1; r++) Y[(t0 + t) * ldy + r] = o[t][r - g * R];
            }
        }
    }
    return true;
}

#endif
#endif
