/*
 * x86_common.h — kernel bodies shared by the AVX2 and AVX-512 tiers.
 *
 * Included by tier_avx2.c and tier_avx512.c, each compiled with its own -m
 * flags, so the same source becomes two sets of machine code. Code under
 * __AVX512F__ exists only in the AVX-512 translation unit; VNNI paths take a
 * `vnni` flag that is a compile-time constant at every call site and true
 * only when the dispatcher saw the feature at run time.
 *
 * Determinism contract (the model tests rely on it): every dot product is
 * written as dot_<fmt>(NT tokens). A token's arithmetic in dot_<fmt> does not
 * depend on NT or on its position in the group, so matvec (NT = 1) and gemm
 * (NT = 1..TB_NT) give bit-identical results per row, for any thread split.
 *
 * Integer formats compute each block's integer dot exactly (as the _ref
 * does); only the float summation over blocks is reordered (lanes, two
 * accumulators), so results differ from _ref by float rounding only.
 */
#ifndef TB_X86_COMMON_H
#define TB_X86_COMMON_H

#include "kernels/kernels.h"

#include <immintrin.h>

#define TB_INLINE static inline __attribute__((always_inline))
#define TB_NT 4   /* tokens per weight-row pass in gemm */
#define TB_UNROLL _Pragma("GCC unroll 8")   /* small fixed-trip loops: keep arrays in registers */

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

TB_INLINE float hsum_ps256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TB_INLINE float fp16_f32(tb_fp16_t h) { return _cvtsh_ss(h); }

TB_INLINE __m256i loadu256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* acc + (u8 x s8 dot of 4-byte groups) as 8 x i32; u <= 128 so the
 * maddubs pairs (|u*s| * 2 <= 32512) never saturate. */
TB_INLINE __m256i dot_u8s8_256(__m256i acc, __m256i u, __m256i s, bool vnni) {
#if defined(__AVX512VNNI__)
    if (vnni) return _mm256_dpbusd_epi32(acc, u, s);
#endif
    (void)vnni;
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

/* ---------------------------------------------------------------------- */
/* Q8_0 x Q8_0 and Q4_0 x Q8_0 (blocks of 32; one block per 256-bit step)   */
/* ---------------------------------------------------------------------- */

/* s[t] = W row (nb blocks of type `q4` ? Q4_0 : Q8_0) · a[t] (Q8_0), t < nt. */
TB_INLINE void dot_q_0(int nt, int64_t n, float *s, const void *w, const void *const *a,
                       bool q4, bool vnni) {
    const int64_t nb = n / QK8_0;
    const block_q8_0 *x8 = w;
    const block_q4_0 *x4 = w;
    __m256 acc[2][TB_NT];
    for (int t = 0; t < nt; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i qx;       /* 32 signed weights of block i */
        float dx;
        if (q4) {
            __m128i b = _mm_loadu_si128((const __m128i *)x4[i].qs);
            __m256i q = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
            qx = _mm256_sub_epi8(_mm256_and_si256(q, _mm256_set1_epi8(0x0F)), _mm256_set1_epi8(8));
            dx = fp16_f32(x4[i].d);
        } else {
            qx = loadu256(x8[i].qs);
            dx = fp16_f32(x8[i].d);
        }
        __m256i ax = _mm256_sign_epi8(qx, qx);
        for (int t = 0; t < nt; t++) {
            const block_q8_0 *y = (const block_q8_0 *)a[t] + i;
            __m256i sy = _mm256_sign_epi8(loadu256(y->qs), qx);
            __m256i p = dot_u8s8_256(_mm256_setzero_si256(), ax, sy, vnni);
            acc[i & 1][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * fp16_f32(y->d)),
                                            acc[i & 1][t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = hsum_ps256(_mm256_add_ps(acc[0][t], acc[1][t]));
}

/* ---------------------------------------------------------------------- */
/* TQ2_0 x Q8_K                                                             */
/* ---------------------------------------------------------------------- */

/* dot(q - 1, y) = dot(q, y) - sum(y): codes q in {0,1,2} are the unsigned
 * operand, sum(y) comes from the activation's bsums. */
TB_INLINE void dot_tq2_0(int nt, int64_t n, float *s, const void *w, const void *const *a,
                         bool vnni) {
    const int64_t nb = n / QK_K;
    const block_tq2_0 *x = w;
    __m256 acc[2][TB_NT];
    for (int t = 0; t < nt; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < nb; i++) {
        __m256i q0 = loadu256(x[i].qs), q1 = loadu256(x[i].qs + 32);
        float dx = fp16_f32(x[i].d);
        __m256i h[TB_NT];  /* (16) i16 partial sums per token */
        for (int t = 0; t < nt; t++) h[t] = _mm256_setzero_si256();
        for (int l = 0; l < 4; l++) {
            __m256i c0 = _mm256_and_si256(_mm256_srli_epi16(q0, 2 * l), m3);
            __m256i c1 = _mm256_and_si256(_mm256_srli_epi16(q1, 2 * l), m3);
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = (const block_q8_K *)a[t] + i;
                h[t] = _mm256_add_epi16(h[t], _mm256_maddubs_epi16(c0, loadu256(y->qs + 32 * l)));
                h[t] = _mm256_add_epi16(h[t], _mm256_maddubs_epi16(c1, loadu256(y->qs + 128 + 32 * l)));
            }
        }
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)a[t] + i;
            const __m256i one = _mm256_set1_epi16(1);
            __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(h[t], one), _mm256_madd_epi16(loadu256(y->bsums), one));
            acc[i & 1][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * y->d), acc[i & 1][t]);
        }
    }
    (void)vnni;
    for (int t = 0; t < nt; t++) s[t] = hsum_ps256(_mm256_add_ps(acc[0][t], acc[1][t]));
}

#if defined(__AVX512F__)
#define TB_NR 4   /* weight rows per activation pass (row-tiled formats) */
/* Software prefetch distance for row-tiled kernels: TB_NR rows streamed
 * side by side defeat the L2 stream prefetcher, so each row prefetches the
 * weight bytes this far ahead (rows are contiguous: the union is the
 * next tiles). */
#ifndef TB_PF_BYTES
#define TB_PF_BYTES 4096
#endif

/* Row-tiled TQ2_0 (AVX-512): nr weight rows w[r] times nt activations
 * a[t], s[r * TB_NT + t]. Activation loads are shared by the nr rows and
 * code extraction by the nt tokens. A 64-byte code register holds half 0
 * (elements 32l + m) in its low 256 bits and half 1 (128 + 32l + m) in its
 * high 256 bits, so the activation for shift l is [y(32l) | y(128 + 32l)].
 * Per (row, token) the arithmetic is the same for any nr, nt. */
TB_INLINE void dot_tq2_0_rt(int nr, int nt, int64_t n, float *s, const void *const *w,
                            const void *const *a, bool vnni) {
    const int64_t nb = n / QK_K;
    const __m512i m3 = _mm512_set1_epi8(3), one16 = _mm512_set1_epi16(1);
    __m512 acc[TB_NR][TB_NT];
    TB_UNROLL
    for (int r = 0; r < nr; r++)
        TB_UNROLL
        for (int t = 0; t < nt; t++) acc[r][t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m512i qs[TB_NR];
        float dx[TB_NR];
        TB_UNROLL
        for (int r = 0; r < nr; r++) {
            const block_tq2_0 *x = (const block_tq2_0 *)w[r] + i;
            _mm_prefetch((const char *)x + TB_PF_BYTES, _MM_HINT_T0);
            qs[r] = _mm512_loadu_si512(x->qs);
            dx[r] = fp16_f32(x->d);
        }
        __m512i nbs[TB_NT];          /* -(bsums) as 16 x i32: sum(y) = sum of lanes */
        __m512i p[TB_NR][TB_NT];     /* (16) i32, or (32) i16 without VNNI           */
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)a[t] + i;
            nbs[t] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_cvtepi16_epi32(loadu256(y->bsums)));
            TB_UNROLL
            for (int r = 0; r < nr; r++) p[r][t] = vnni ? nbs[t] : _mm512_setzero_si512();
        }
        TB_UNROLL
        for (int l = 0; l < 4; l++) {
            __m512i yl[TB_NT];
            TB_UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *q = ((const block_q8_K *)a[t] + i)->qs;
                yl[t] = _mm512_inserti64x4(_mm512_castsi256_si512(loadu256(q + 32 * l)), loadu256(q + 128 + 32 * l), 1);
            }
            TB_UNROLL
            for (int r = 0; r < nr; r++) {
                __m512i c = _mm512_and_si512(l ? _mm512_srli_epi16(qs[r], 2 * l) : qs[r], m3);
                TB_UNROLL
                for (int t = 0; t < nt; t++) {
#if defined(__AVX512VNNI__)
                    if (vnni) { p[r][t] = _mm512_dpbusd_epi32(p[r][t], c, yl[t]); continue; }
#endif
                    p[r][t] = _mm512_add_epi16(p[r][t], _mm512_maddubs_epi16(c, yl[t]));
                }
            }
        }
        for (int t = 0; t < nt; t++) {
            const float dy = ((const block_q8_K *)a[t] + i)->d;
            for (int r = 0; r < nr; r++) {
                __m512i q = vnni ? p[r][t] : _mm512_add_epi32(_mm512_madd_epi16(p[r][t], one16), nbs[t]);
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(dx[r] * dy), acc[r][t]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++) s[r * TB_NT + t] = _mm512_reduce_add_ps(acc[r][t]);
}
#endif

/* ---------------------------------------------------------------------- */
/* TQ1_0 x Q8_K                                                             */
/* ---------------------------------------------------------------------- */

/* Trits of 32 base-3 bytes: ((uint8)q * 3) >> 8 is 0 below 86, 1 below 171, else 2. */
TB_INLINE __m256i trit256(__m256i q) {
    __m256i ge1 = _mm256_cmpeq_epi8(_mm256_max_epu8(q, _mm256_set1_epi8(86)), q);
    __m256i ge2 = _mm256_cmpeq_epi8(_mm256_max_epu8(q, _mm256_set1_epi8((char)171)), q);
    return _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(ge1, ge2));
}
TB_INLINE __m256i mul3_256(__m256i q) { return _mm256_add_epi8(_mm256_add_epi8(q, q), q); }

TB_INLINE void dot_tq1_0(int nt, int64_t n, float *s, const void *w, const void *const *a,
                         bool vnni) {
    const int64_t nb = n / QK_K;
    const block_tq1_0 *x = w;
    __m256 acc[2][TB_NT];
    for (int t = 0; t < nt; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        /* codes c[k] (32 bytes) pair with activation bytes at off[k] */
        __m256i c[8];
        __m256i q = loadu256(x[i].qs);                /* elements 0..159: byte m, trit l -> 32l + m */
        for (int l = 0; l < 5; l++) { c[l] = trit256(q); q = mul3_256(q); }
        __m128i r = _mm_loadu_si128((const __m128i *)(x[i].qs + 32));  /* 160..239: 160 + 16l + m */
        __m256i r2 = _mm256_set_m128i(r, r);
        __m256i r3 = mul3_256(r2);
        r2 = _mm256_blend_epi32(r2, r3, 0xF0);        /* [r | 3r]   -> l = 0, 1 */
        c[5] = trit256(r2);
        r2 = mul3_256(mul3_256(r2));                  /* [9r | 27r] -> l = 2, 3 */
        c[6] = trit256(r2);
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        __m128i h = _mm_set1_epi32((int)qh);          /* 240..255: 240 + 4l + j */
        __m128i h3 = _mm_add_epi8(_mm_add_epi8(h, h), h);
        __m128i h9 = _mm_add_epi8(_mm_add_epi8(h3, h3), h3);
        __m128i h27 = _mm_add_epi8(_mm_add_epi8(h9, h9), h9);
        h = _mm_blend_epi32(_mm_blend_epi32(_mm_blend_epi32(h, h3, 2), h9, 4), h27, 8);
        __m256i r81 = mul3_256(mul3_256(r2));         /* [81r | 243r]: low half is l = 4 */
        c[7] = trit256(_mm256_set_m128i(h, _mm256_castsi256_si128(r81)));
        static const int off[8] = {0, 32, 64, 96, 128, 160, 192, 224};
        float dx = fp16_f32(x[i].d);
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)a[t] + i;
            const __m256i one = _mm256_set1_epi16(1);
            __m256i p;
            if (vnni) {
                p = _mm256_setzero_si256();
                for (int k = 0; k < 8; k++) p = dot_u8s8_256(p, c[k], loadu256(y->qs + off[k]), true);
            } else {
                __m256i hs = _mm256_maddubs_epi16(c[0], loadu256(y->qs));
                for (int k = 1; k < 8; k++)
                    hs = _mm256_add_epi16(hs, _mm256_maddubs_epi16(c[k], loadu256(y->qs + off[k])));
                p = _mm256_madd_epi16(hs, one);
            }
            p = _mm256_sub_epi32(p, _mm256_madd_epi16(loadu256(y->bsums), one));
            acc[i & 1][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * y->d), acc[i & 1][t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = hsum_ps256(_mm256_add_ps(acc[0][t], acc[1][t]));
}

/* ---------------------------------------------------------------------- */
/* F32 / F16 / BF16 weights x F32 activations                              */
/* ---------------------------------------------------------------------- */

/* kind: 0 = f32, 1 = f16, 2 = bf16. Eight elements per step into two
 * accumulators; a scalar tail handles n % 8. */
TB_INLINE __m256 load8_w(const void *w, int64_t j, int kind) {
    if (kind == 0) return _mm256_loadu_ps((const float *)w + j);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + j));
    if (kind == 1) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
TB_INLINE float load1_w(const void *w, int64_t j, int kind) {
    if (kind == 0) return ((const float *)w)[j];
    if (kind == 1) return fp16_f32(((const uint16_t *)w)[j]);
    return tb_bf16_to_fp32(((const uint16_t *)w)[j]);
}

TB_INLINE void dot_fx(int nt, int64_t n, float *s, const void *w, const void *const *a, int kind) {
    __m256 acc[2][TB_NT];
    for (int t = 0; t < nt; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 wv = load8_w(w, j, kind);
        for (int t = 0; t < nt; t++)
            acc[(j >> 3) & 1][t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps((const float *)a[t] + j),
                                                   acc[(j >> 3) & 1][t]);
    }
    for (int t = 0; t < nt; t++) {
        float r = hsum_ps256(_mm256_add_ps(acc[0][t], acc[1][t]));
        for (int64_t k = j; k < n; k++) r += load1_w(w, k, kind) * ((const float *)a[t])[k];
        s[t] = r;
    }
}

/* ---------------------------------------------------------------------- */
/* Generators: vec_dot, matvec and gemm from one dot_<fmt>(nt, ...)        */
/* ---------------------------------------------------------------------- */

/* DOT(nt, n, s, w, a) must be an expression calling the format's body. */
#define TB_X86_KERNELS(name, DOT)                                                          \
    static void vec_dot_##name(int64_t n, float *s, const void *w, const void *a) {       \
        const void *aa[1] = {a};                                                           \
        DOT(1, n, s, w, aa);                                                               \
    }                                                                                      \
    static void matvec_##name(const void *W, size_t ws, const void *a, float *y,          \
                              int64_t r0, int64_t r1, int64_t n) {                         \
        const void *aa[1] = {a};                                                           \
        for (int64_t r = r0; r < r1; r++) DOT(1, n, &y[r], (const uint8_t *)W + (size_t)r * ws, aa); \
    }                                                                                      \
    static void gemm_##name(const void *W, size_t ws, const void *A, size_t as, int64_t nt, \
                            float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {    \
        for (int64_t r = r0; r < r1; r++) {                                                \
            const void *wr = (const uint8_t *)W + (size_t)r * ws;                          \
            int64_t t = 0;                                                                 \
            for (; t + TB_NT <= nt; t += TB_NT) {                                          \
                const void *aa[TB_NT];                                                     \
                float s[TB_NT];                                                            \
                for (int k = 0; k < TB_NT; k++) aa[k] = (const uint8_t *)A + (size_t)(t + k) * as; \
                DOT(TB_NT, n, s, wr, aa);                                                  \
                for (int k = 0; k < TB_NT; k++) Y[(t + k) * ldy + r] = s[k];               \
            }                                                                              \
            for (; t < nt; t++) {                                                          \
                const void *aa[1] = {(const uint8_t *)A + (size_t)t * as};                 \
                DOT(1, n, &Y[t * ldy + r], wr, aa);                                        \
            }                                                                              \
        }                                                                                  \
    }

#if defined(__AVX512F__)
/* Row-tiled generator: DOT(nr, nt, n, s, wrows, acts). matvec takes TB_NR
 * rows per pass, gemm TB_NR_GEMM rows x TB_NT tokens; tails use smaller
 * nr / nt, which leave each (row, token) result unchanged. */
#define TB_NR_GEMM 2
/* Rows per matvec pass. 4 is ~35% faster with W in cache, but streaming
 * from DRAM (decode) it measured slower than 1 on the loaded shared VM
 * (4 interleaved row streams vs the stream prefetcher): re-measure with
 * `ternbench kernels --format tq2_0` on a quiet machine. */
#ifndef TB_NR_MV
#define TB_NR_MV 1
#endif
#define TB_X86_KERNELS_RT(name, DOT)                                                       \
    static void vec_dot_##name(int64_t n, float *s, const void *w, const void *a) {       \
        const void *ww[1] = {w}, *aa[1] = {a};                                             \
        float o[TB_NT];                                                                    \
        DOT(1, 1, n, o, ww, aa);                                                           \
        *s = o[0];                                                                         \
    }                                                                                      \
    static void matvec_##name(const void *W, size_t ws, const void *a, float *y,          \
                              int64_t r0, int64_t r1, int64_t n) {                         \
        const void *aa[1] = {a};                                                           \
        for (int64_t r = r0; r < r1; r += TB_NR_MV) {                                      \
            int nr = (int)TB_MIN(TB_NR_MV, r1 - r);                                        \
            const void *ww[TB_NR];                                                         \
            float o[TB_NR * TB_NT];                                                        \
            for (int k = 0; k < nr; k++) ww[k] = (const uint8_t *)W + (size_t)(r + k) * ws; \
            if (nr == TB_NR_MV) DOT(TB_NR_MV, 1, n, o, ww, aa);                               \
            else DOT(nr, 1, n, o, ww, aa);                                                 \
            for (int k = 0; k < nr; k++) y[r + k] = o[k * TB_NT];                          \
        }                                                                                  \
    }                                                                                      \
    static void gemm_##name(const void *W, size_t ws, const void *A, size_t as, int64_t nt, \
                            float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {    \
        for (int64_t r = r0; r < r1; r += TB_NR_GEMM) {                                    \
            int nr = (int)TB_MIN(TB_NR_GEMM, r1 - r);                                      \
            const void *ww[TB_NR];                                                         \
            for (int k = 0; k < nr; k++) ww[k] = (const uint8_t *)W + (size_t)(r + k) * ws; \
            for (int64_t t = 0; t < nt; t += TB_NT) {                                      \
                int ntk = (int)TB_MIN(TB_NT, nt - t);                                      \
                const void *aa[TB_NT];                                                     \
                float o[TB_NR * TB_NT];                                                    \
                for (int k = 0; k < ntk; k++) aa[k] = (const uint8_t *)A + (size_t)(t + k) * as; \
                if (nr == TB_NR_GEMM && ntk == TB_NT) DOT(TB_NR_GEMM, TB_NT, n, o, ww, aa); \
                else DOT(nr, ntk, n, o, ww, aa);                                           \
                for (int q = 0; q < nr; q++)                                               \
                    for (int k = 0; k < ntk; k++) Y[(t + k) * ldy + r + q] = o[q * TB_NT + k]; \
            }                                                                              \
        }                                                                                  \
    }
#endif

#define TB_X86_SET(k, wt, name, quant)                       \
    do {                                                     \
        (k)->t[wt].quantize_act = (quant);                   \
        (k)->t[wt].vec_dot = vec_dot_##name;                 \
        (k)->t[wt].matvec = matvec_##name;                   \
        (k)->t[wt].gemm = gemm_##name;                       \
    } while (0)

/* Sum of 64-bit words, 64 bytes per step in four independent chains. */
TB_INLINE uint64_t read_sum_256(const void *p, size_t n) {
    const __m256i *v = p;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
    for (size_t i = 0; i < n / 32; i += 2) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256(v + i));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256(v + i + 1));
    }
    s0 = _mm256_add_epi64(s0, s1);
    uint64_t r[4];
    _mm256_storeu_si256((__m256i *)r, s0);
    return r[0] + r[1] + r[2] + r[3];
}

#endif
