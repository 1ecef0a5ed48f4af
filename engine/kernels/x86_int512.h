/*
 * x86_int512.h — Q4_0 and Q8_0 x Q8_0 kernels for AVX-512 + VNNI, on the
 * file (ggml) layout of the weights.
 *
 * Idea: the activation is shared by every row, so it is prepared once per
 * call (per tile of TB_NT tokens in gemm) into a layout that makes the
 * per-row work minimal ("prep"); the weight rows are read straight from the
 * file layout, several blocks per 512-bit step:
 *
 *   Q4_0: 4 blocks (72 bytes) per step. Two loads cover the 36 words; one
 *         vpermt2w gathers the 4 x 16 code bytes into a ZMM, a second one
 *         the 4 fp16 scales, each repeated 4 times (one per lane of its
 *         block). Low and high nibbles are unsigned (0..15) and feed vpdpbusd
 *         directly against the prepared activation bytes; the -8 offset is
 *         folded in by starting the accumulator at -8 * (activation sums).
 *   Q8_0: 2 blocks (68 bytes) per step. Codes are made unsigned by
 *         xor 0x80 (w + 128), folded out by starting at -128 * (sums).
 *
 * Lane layout of one step: 16 int32 lanes, `LPB` lanes per block (4 for
 * Q4_0, 8 for Q8_0); each lane is an exact integer partial dot, converted to
 * float and multiplied by its block's d_w * d_a, accumulated over steps in a
 * single FMA chain per token, reduced once at the end. A token's arithmetic
 * does not depend on how many tokens share the weight loads, so matvec,
 * gemm and vec_dot agree bit for bit per row (see x86_common.h).
 *
 * Prep of one token, per step: lo[64], hi[64] activation bytes (Q8_0: a[64]
 * and no hi), corr[16] int32, da[16] float = 256 (Q8_0: 192) bytes, on the
 * stack. gemm preps a tile of up to TB_NT_Q0 tokens (fewer when the tile
 * would exceed TB_PREP_BYTES) and runs every row of its range over it. When
 * one token's prep exceeds TB_PREP_ROW (rows over 24576 / 16384 elements)
 * the kernels use the 256-bit body of x86_int.h instead, decided by n
 * alone so matvec and gemm still agree.
 */
#ifndef TB_X86_INT512_H
#define TB_X86_INT512_H

#include "kernels/x86_int.h"

#if defined(__AVX512VNNI__)

#define TB_PREP_BYTES (192 * 1024)   /* stack scratch of gemm's token tile        */
#define TB_PREP_ROW (48 * 1024)      /* one token's prep at most (else: fallback) */
#ifndef TB_NT_Q0
#define TB_NT_Q0 8                   /* tokens per gemm tile (fewer for long rows) */
#endif

typedef struct {
    int8_t lo[64];      /* Q4_0: elements 0..15 of the 4 blocks; Q8_0: a0 | a1 */
    int8_t hi[64];      /* Q4_0: elements 16..31 of the 4 blocks               */
    int32_t corr[16];   /* per lane: -offset * (sum of the lane's activations)  */
    float da[16];       /* per lane: the block's activation scale               */
} prep4_t;              /* Q4_0 step: 4 blocks */
typedef struct {
    int8_t a[64];
    int32_t corr[16];
    float da[16];
} prep2_t;              /* Q8_0 step: 2 blocks */

/* Steps per row; whether one token's prep fits (the 512-bit path runs). */
TB_INLINE int64_t q4_0_steps(int64_t n) { return (n / QK4_0 + 3) / 4; }
TB_INLINE int64_t q8_0_steps(int64_t n) { return (n / QK8_0 + 1) / 2; }
TB_INLINE bool q4_0_fits(int64_t n) { return (size_t)q4_0_steps(n) * sizeof(prep4_t) <= TB_PREP_ROW; }
TB_INLINE bool q8_0_fits(int64_t n) { return (size_t)q8_0_steps(n) * sizeof(prep2_t) <= TB_PREP_ROW; }

/* ---------------------------------------------------------------------- */
/* Activation prep                                                          */
/* ---------------------------------------------------------------------- */

/* Lane sums of 4-byte groups of one block's 32 activation bytes, weighted by
 * `mul`, as 8 int32 (lanes 0..3: bytes 0..15, lanes 4..7: bytes 16..31). */
TB_INLINE __m256i group_sums(const int8_t *qs, int mul) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)mul), loadu256(qs));
}

/* One Q8_0 activation row (nb blocks) -> ns Q4_0 steps; missing blocks of
 * the last step are zero (they then contribute exactly +0). */
static void prep_q4_0(const block_q8_0 *a, int64_t nb, prep4_t *p) {
    for (int64_t s = 0; s < q4_0_steps(nb * QK8_0); s++) {
        memset(&p[s], 0, sizeof p[s]);
        for (int k = 0; k < 4 && 4 * s + k < nb; k++) {
            const block_q8_0 *b = &a[4 * s + k];
            memcpy(p[s].lo + 16 * k, b->qs, 16);
            memcpy(p[s].hi + 16 * k, b->qs + 16, 16);
            __m256i g = group_sums(b->qs, 8);   /* lane m of the block: lo group m + hi group m */
            __m128i c = _mm_sub_epi32(_mm_setzero_si128(),
                                      _mm_add_epi32(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1)));
            _mm_storeu_si128((__m128i *)(p[s].corr + 4 * k), c);
            const float d = fp16_f32(b->d);
            for (int m = 0; m < 4; m++) p[s].da[4 * k + m] = d;
        }
    }
}

static void prep_q8_0(const block_q8_0 *a, int64_t nb, prep2_t *p) {
    for (int64_t s = 0; s < q8_0_steps(nb * QK8_0); s++) {
        memset(&p[s], 0, sizeof p[s]);
        for (int k = 0; k < 2 && 2 * s + k < nb; k++) {
            const block_q8_0 *b = &a[2 * s + k];
            memcpy(p[s].a + 32 * k, b->qs, 32);
            __m256i c = _mm256_sub_epi32(_mm256_setzero_si256(), group_sums(b->qs, 128));
            _mm256_storeu_si256((__m256i *)(p[s].corr + 8 * k), c);
            const float d = fp16_f32(b->d);
            for (int m = 0; m < 8; m++) p[s].da[8 * k + m] = d;
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Row bodies: s[t] = W row · prepared activation t, t < nt                 */
/* ---------------------------------------------------------------------- */

/* Word masks of the two 64-byte loads covering `kb` blocks of `bw` words. */
TB_INLINE void window_masks(int kb, int bw, __mmask32 *m0, __mmask32 *m1) {
    int words = kb * bw;
    *m0 = words >= 32 ? 0xFFFFFFFFu : (__mmask32)((1u << words) - 1);
    *m1 = words <= 32 ? 0 : (__mmask32)((1u << (words - 32)) - 1);
}

TB_INLINE void dot_q4_0_512(int nt, int64_t n, float *s, const void *w, const prep4_t *const *p) {
    const int64_t nb = n / QK4_0, ns = q4_0_steps(n);
    const uint8_t *x = w;
    /* word index of code word m of block k: 9k + 1 + m; of scale: 9k */
    const __m512i iq = _mm512_set_epi16(35, 34, 33, 32, 31, 30, 29, 28, 26, 25, 24, 23, 22, 21, 20, 19,
                                        17, 16, 15, 14, 13, 12, 11, 10, 8, 7, 6, 5, 4, 3, 2, 1);
    const __m512i id = _mm512_set_epi16(27, 27, 27, 27, 18, 18, 18, 18, 9, 9, 9, 9, 0, 0, 0, 0,
                                        27, 27, 27, 27, 18, 18, 18, 18, 9, 9, 9, 9, 0, 0, 0, 0);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[TB_NT_Q0];
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t st = 0; st < ns; st++) {
        const uint8_t *b = x + st * 4 * sizeof(block_q4_0);
        __m512i w0, w1;
        if (4 * st + 4 <= nb) {
            w0 = _mm512_loadu_si512(b);
            w1 = _mm512_maskz_loadu_epi16(0xF, b + 64);
        } else {
            __mmask32 k0, k1;
            window_masks((int)(nb - 4 * st), 9, &k0, &k1);
            w0 = _mm512_maskz_loadu_epi16(k0, b);
            w1 = _mm512_maskz_loadu_epi16(k1, b + 64);
        }
        __m512i q = _mm512_permutex2var_epi16(w0, iq, w1);
        __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(w0, id, w1)));
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const prep4_t *a = &p[t][st];
            __m512i v = _mm512_loadu_si512(a->corr);
            v = _mm512_dpbusd_epi32(v, lo, _mm512_loadu_si512(a->lo));
            v = _mm512_dpbusd_epi32(v, hi, _mm512_loadu_si512(a->hi));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(dw, _mm512_loadu_ps(a->da)), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = _mm512_reduce_add_ps(acc[t]);
}

TB_INLINE void dot_q8_0_512(int nt, int64_t n, float *s, const void *w, const prep2_t *const *p) {
    const int64_t nb = n / QK8_0, ns = q8_0_steps(n);
    const uint8_t *x = w;
    /* code word m of block k: 17k + 1 + m; scale: 17k */
    const __m512i iq = _mm512_set_epi16(33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
                                        16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
    const __m512i id = _mm512_set_epi16(17, 17, 17, 17, 17, 17, 17, 17, 0, 0, 0, 0, 0, 0, 0, 0,
                                        17, 17, 17, 17, 17, 17, 17, 17, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512 acc[TB_NT_Q0];
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t st = 0; st < ns; st++) {
        const uint8_t *b = x + st * 2 * sizeof(block_q8_0);
        __m512i w0, w1;
        if (2 * st + 2 <= nb) {
            w0 = _mm512_loadu_si512(b);
            w1 = _mm512_maskz_loadu_epi16(0x3, b + 64);
        } else {   /* one block: 17 words, and the missing block's codes read 0 */
            w0 = _mm512_maskz_loadu_epi16(0x1FFFF, b);
            w1 = _mm512_setzero_si512();
        }
        __m512i u = _mm512_xor_si512(_mm512_permutex2var_epi16(w0, iq, w1), flip);
        __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(w0, id, w1)));
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const prep2_t *a = &p[t][st];
            __m512i v = _mm512_dpbusd_epi32(_mm512_loadu_si512(a->corr), u, _mm512_loadu_si512(a->a));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(dw, _mm512_loadu_ps(a->da)), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = _mm512_reduce_add_ps(acc[t]);
}

/* ---------------------------------------------------------------------- */
/* vec_dot / matvec / gemm                                                  */
/* ---------------------------------------------------------------------- */

/* fmt: q4_0 or q8_0; P: prep4_t / prep2_t; FALLBACK(nt, n, s, w, a): the
 * 256-bit body for rows too long for the scratch. */
#define TB_Q0_512_KERNELS(fmt, P, FALLBACK)                                                    \
    static void vec_dot_##fmt##_512(int64_t n, float *s, const void *w, const void *a) {      \
        matvec_##fmt##_512(w, 0, a, s, 0, 1, n);                                               \
    }                                                                                          \
    static void matvec_##fmt##_512(const void *W, size_t ws, const void *a, float *y,         \
                                   int64_t r0, int64_t r1, int64_t n) {                        \
        if (!fmt##_fits(n)) {                                                                  \
            const void *aa[1] = {a};                                                           \
            for (int64_t r = r0; r < r1; r++) FALLBACK(1, n, &y[r], (const uint8_t *)W + (size_t)r * ws, aa); \
            return;                                                                            \
        }                                                                                      \
        _Alignas(64) uint8_t buf[TB_PREP_ROW];                                                 \
        P *p = (P *)buf;                                                                       \
        prep_##fmt(a, n / QK8_0, p);                                                           \
        const P *pp[1] = {p};                                                                  \
        for (int64_t r = r0; r < r1; r++) dot_##fmt##_512(1, n, &y[r], (const uint8_t *)W + (size_t)r * ws, pp); \
    }                                                                                          \
    static void gemm_##fmt##_512(const void *W, size_t ws, const void *A, size_t as, int64_t nt, \
                                 float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {   \
        if (!fmt##_fits(n)) {                                                                  \
            for (int64_t t = 0; t < nt; t++) {                                                 \
                const void *aa[1] = {(const uint8_t *)A + (size_t)t * as};                     \
                for (int64_t r = r0; r < r1; r++)                                              \
                    FALLBACK(1, n, &Y[t * ldy + r], (const uint8_t *)W + (size_t)r * ws, aa);  \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        _Alignas(64) uint8_t buf[TB_PREP_BYTES];                                               \
        const int64_t ns = fmt##_steps(n);                                                     \
        /* TB_NT_Q0 tokens per tile when their prep fits, else 4 (always fits) */             \
        const int64_t tile = sizeof(P) * (size_t)ns * TB_NT_Q0 <= TB_PREP_BYTES ? TB_NT_Q0 : 4; \
        for (int64_t t = 0; t < nt; t += tile) {                                               \
            const int ntk = (int)TB_MIN(tile, nt - t);                                         \
            const P *pp[TB_NT_Q0];                                                             \
            for (int k = 0; k < ntk; k++) {                                                    \
                P *p = (P *)buf + k * ns;                                                      \
                prep_##fmt((const block_q8_0 *)((const uint8_t *)A + (size_t)(t + k) * as), n / QK8_0, p); \
                pp[k] = p;                                                                     \
            }                                                                                  \
            for (int64_t r = r0; r < r1; r++) {                                                \
                float o[TB_NT_Q0];                                                             \
                const void *wr = (const uint8_t *)W + (size_t)r * ws;                          \
                if (ntk == TB_NT_Q0) dot_##fmt##_512(TB_NT_Q0, n, o, wr, pp);                  \
                else if (ntk == 4) dot_##fmt##_512(4, n, o, wr, pp);                           \
                else dot_##fmt##_512(ntk, n, o, wr, pp);                                       \
                for (int k = 0; k < ntk; k++) Y[(t + k) * ldy + r] = o[k];                     \
            }                                                                                  \
        }                                                                                      \
    }

#define TB_Q4_0_FALLBACK(nt, n, s, w, a) dot_q_0(nt, n, s, w, a, true, true)
#define TB_Q8_0_FALLBACK(nt, n, s, w, a) dot_q_0(nt, n, s, w, a, false, true)

static void matvec_q4_0_512(const void *, size_t, const void *, float *, int64_t, int64_t, int64_t);
static void matvec_q8_0_512(const void *, size_t, const void *, float *, int64_t, int64_t, int64_t);
TB_Q0_512_KERNELS(q4_0, prep4_t, TB_Q4_0_FALLBACK)
TB_Q0_512_KERNELS(q8_0, prep2_t, TB_Q8_0_FALLBACK)

#endif /* __AVX512VNNI__ */
#endif
