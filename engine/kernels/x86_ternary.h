/*
 * x86_ternary.h — TQ2_0 and TQ1_0 kernel bodies (x86).
 * Included by tier_avx2.c and tier_avx512.c after x86_common.h (see its
 * determinism contract: one dot_<fmt>(NT tokens) body serves vec_dot,
 * matvec and gemm, so gemm and matvec agree bit for bit per row).
 */
#ifndef TB_X86_TERNARY_H
#define TB_X86_TERNARY_H

#include "kernels/x86_common.h"

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


#endif
