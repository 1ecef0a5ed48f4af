/*
 * x86_kquant.h — Q4_K and Q6_K kernel bodies (x86), Q8_K activations.
 * Included by tier_avx2.c and tier_avx512.c after x86_common.h (see its
 * determinism contract: one dot_<fmt>(NT tokens) body serves vec_dot,
 * matvec and gemm, so gemm and matvec agree bit for bit per row).
 *
 * Both formats use unsigned codes as the u8 operand of maddubs (Q4_K: 0..15,
 * Q6_K: 0..63, so no i16 pair ever saturates: 2 * 63 * 128 < 32767) and
 * multiply the i16 pair sums by the sub-block scale in madd (VNNI: dpwssd,
 * which also adds). Offsets fold in through the activation's bsums:
 *   Q4_K: w = d*sc*q - dmin*m   -> dmin * sum_j m_j * (bsums of j)
 *   Q6_K: w = d*sc*(q - 32)     -> 32 * sum_j sc_j * bsums_j
 * Every block's integer dot (and offset) is exact, as in the _ref; only the
 * float summation over blocks is reordered (the Q4_K min term is summed in
 * its own accumulator and subtracted at the end).
 *
 * AVX2 works on 32 codes (one Q4_K sub-block, two Q6_K sub-blocks) per
 * register; AVX-512 on 64 codes in element order, so each activation load
 * is one aligned-with-elements 64-byte read.
 */
#ifndef TB_X86_KQUANT_H
#define TB_X86_KQUANT_H

#include "kernels/x86_common.h"

/* i16 pair sums p times i16 scales sc, added to the i32 lanes of acc. */
TB_INLINE __m256i madd_acc_256(__m256i acc, __m256i p, __m256i sc) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
}

/* The 8 scales and 8 mins of Q4_K block b (tb_q4_K_unpack_scales in
 * SIMD) as one register: bytes 0..7 = sc_0..7, bytes 8..15 = m_0..7; and
 * *dd = (d, dmin, -, -) as floats. With s = the 12 scale bytes (block
 * bytes 4..15):
 *   sc_0..3 = s[0..3] & 63                  m_0..3 = s[4..7] & 63
 *   sc_4..7 = (s[8..11] & 15) | top2(s[0..3]) << 4
 *   m_4..7  = (s[8..11] >> 4) | top2(s[4..7]) << 4                        */
TB_INLINE __m128i q4_K_scales128(const block_q4_K *b, __m128 *dd) {
    const __m128i v = _mm_loadu_si128((const __m128i *)b);   /* d, dmin, s[0..11] */
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m128i t = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
    const __m128i lo = _mm_and_si128(a, _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0));
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(a, 4), _mm_setr_epi32(0, 0, 0, 0x0f0f0f0f));
    const __m128i top = _mm_and_si128(_mm_srli_epi16(t, 2), _mm_set1_epi8(0x30));
    *dd = _mm_cvtph_ps(v);
    return _mm_or_si128(_mm_or_si128(lo, hi), top);
}

#if !defined(__AVX512F__)
/* ---------------------------------------------------------------------- */
/* AVX2 bodies                                                              */
/* ---------------------------------------------------------------------- */

/* s[t] = W row (n / 256 Q4_K blocks) · a[t] (Q8_K), t < nt. Per block and
 * 64-element group k: low nibbles of qs[32k..] are sub-block 2k, high
 * nibbles 2k+1; sub-block scale j is broadcast from an i16 vector by a
 * byte shuffle. */
TB_INLINE void dot_q4_K(int nt, int64_t n, float *s, const void *w, const void *const *a,
                        bool vnni) {
    (void)vnni;
    const int64_t nb = n / QK_K;
    const block_q4_K *x = w;   // (nb) blocks
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[TB_NT], accm[TB_NT];
    for (int t = 0; t < nt; t++) acc[t] = accm[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m128 dd;   /* (d, dmin, -, -) */
        const __m128i sm = q4_K_scales128(&x[i], &dd);
        const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));   // (2, 8) i16
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));     // (16) m_{g/2}
        __m256i sc[8], q[8];   /* sub-block j: scale broadcast, 32 codes */
        TB_UNROLL
        for (int j = 0; j < 8; j++) sc[j] = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * j)));
        TB_UNROLL
        for (int k = 0; k < 4; k++) {
            __m256i b = loadu256(x[i].qs + 32 * k);
            q[2 * k] = _mm256_and_si256(b, m4);
            q[2 * k + 1] = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
        }
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)a[t] + i;
            __m256i p = _mm256_setzero_si256();   // (8) i32
            TB_UNROLL
            for (int j = 0; j < 8; j++) p = madd_acc_256(p, _mm256_maddubs_epi16(q[j], loadu256(y->qs + 32 * j)), sc[j]);
            __m256i pm = _mm256_madd_epi16(loadu256(y->bsums), mins);   // (8) i32
            const __m128 f = _mm_mul_ps(dd, _mm_set1_ps(y->d));   /* (d * dy, dmin * dy) */
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcastss_ps(f), acc[t]);
            accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pm), _mm256_broadcastss_ps(_mm_movehdup_ps(f)), accm[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = hsum_ps256(acc[t]) - hsum_ps256(accm[t]);
}

/* s[t] = W row (n / 256 Q6_K blocks) · a[t] (Q8_K), t < nt. Register g
 * (0..7) holds elements 32g..32g+31 = sub-blocks 2g (low 128 bits of the
 * i16 pair sums) and 2g+1 (high 128 bits). */
TB_INLINE void dot_q6_K(int nt, int64_t n, float *s, const void *w, const void *const *a,
                        bool vnni) {
    (void)vnni;
    const int64_t nb = n / QK_K;
    const block_q6_K *x = w;   // (nb) blocks
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    __m256 acc[TB_NT];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));   // (16) i16
        const __m256i lo8 = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sc16));   // sc_0..7 twice
        const __m256i hi8 = _mm256_broadcastsi128_si256(_mm256_extracti128_si256(sc16, 1));
        __m256i sc[8], q[8];
        TB_UNROLL
        for (int g = 0; g < 8; g++) {
            const int m = g & 3;   /* i16 lane 2m in the low half, 2m + 1 in the high half */
            const __m256i pick = _mm256_set_m128i(_mm_set1_epi16((short)(0x0302 + 0x0404 * m)),
                                                  _mm_set1_epi16((short)(0x0100 + 0x0404 * m)));
            sc[g] = _mm256_shuffle_epi8(g < 4 ? lo8 : hi8, pick);
        }
        TB_UNROLL
        for (int h = 0; h < 2; h++) {
            const __m256i l0 = loadu256(x[i].ql + 64 * h), l1 = loadu256(x[i].ql + 64 * h + 32);
            const __m256i qh = loadu256(x[i].qh + 32 * h);
            q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
            q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
            q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m30));
            q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                           _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
        }
        const float dx = fp16_f32(x[i].d);
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)a[t] + i;
            __m256i p = _mm256_setzero_si256();   // (8) i32
            TB_UNROLL
            for (int g = 0; g < 8; g++) p = madd_acc_256(p, _mm256_maddubs_epi16(q[g], loadu256(y->qs + 32 * g)), sc[g]);
            __m256i off = _mm256_madd_epi16(loadu256(y->bsums), sc16);   // (8) i32: sum sc_j * bsums_j
            p = _mm256_sub_epi32(p, _mm256_slli_epi32(off, 5));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * y->d), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = hsum_ps256(acc[t]);
}

#else
/* ---------------------------------------------------------------------- */
/* AVX-512 bodies                                                           */
/* ---------------------------------------------------------------------- */

/* acc + p (32 i16 pair sums) * sc (32 i16), pairwise into 16 i32. */
TB_INLINE __m512i madd_acc_512(__m512i acc, __m512i p, __m512i sc, bool vnni) {
#if defined(__AVX512VNNI__)
    if (vnni) return _mm512_dpwssd_epi32(acc, p, sc);
#endif
    (void)vnni;
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, sc));
}

/* (a & b) | c in one instruction. */
TB_INLINE __m512i and_or_512(__m512i a, __m512i b, __m512i c) {
    return _mm512_ternarylogic_epi32(a, b, c, 0xEA);
}

/* Q4_K: register k (0..3) holds elements 64k..64k+63 in order: the 32 code
 * bytes of group k broadcast to both halves, shifted by 0 (low half: low
 * nibbles, sub-block 2k) and 4 (high half: sub-block 2k+1). */
TB_INLINE void dot_q4_K(int nt, int64_t n, float *s, const void *w, const void *const *a,
                        bool vnni) {
    const int64_t nb = n / QK_K;
    const block_q4_K *x = w;   // (nb) blocks
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    __m512i pick[4];   /* byte shuffle: 128-bit lanes 0, 1 <- i16 2k; lanes 2, 3 <- i16 2k + 1 */
    for (int k = 0; k < 4; k++)
        pick[k] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)(0x0100 + 0x0404 * k))),
                                     _mm256_set1_epi16((short)(0x0302 + 0x0404 * k)), 1);
    __m512 acc[TB_NT];
    __m256 accm[TB_NT];
    for (int t = 0; t < nt; t++) { acc[t] = _mm512_setzero_ps(); accm[t] = _mm256_setzero_ps(); }
    for (int64_t i = 0; i < nb; i++) {
        __m128 dd;   /* (d, dmin, -, -) */
        const __m128i sm = q4_K_scales128(&x[i], &dd);
        const __m512i sc16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(sm));      // (4, 8) i16
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));     // (16) m_{g/2}
        __m512i sc[4], q[4];
        TB_UNROLL
        for (int k = 0; k < 4; k++) {
            sc[k] = _mm512_shuffle_epi8(sc16, pick[k]);
            __m512i b = _mm512_broadcast_i64x4(loadu256(x[i].qs + 32 * k));
            q[k] = _mm512_and_si512(_mm512_srlv_epi16(b, shift), m4);
        }
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)a[t] + i;
            __m512i p = _mm512_setzero_si512();   // (16) i32
            TB_UNROLL
            for (int k = 0; k < 4; k++)
                p = madd_acc_512(p, _mm512_maddubs_epi16(q[k], _mm512_loadu_si512(y->qs + 64 * k)), sc[k], vnni);
            __m256i pm = _mm256_madd_epi16(loadu256(y->bsums), mins);   // (8) i32
            const __m128 f = _mm_mul_ps(dd, _mm_set1_ps(y->d));   /* (d * dy, dmin * dy) */
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_broadcastss_ps(f), acc[t]);
            accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(pm), _mm256_broadcastss_ps(_mm_movehdup_ps(f)), accm[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = _mm512_reduce_add_ps(acc[t]) - hsum_ps256(accm[t]);
}

/* Q6_K: per 128-element half h, the 64 ql bytes and the 32 qh bytes (in
 * both 256-bit halves) give register 2h = elements 128h + 0..63 (low
 * nibbles; qh bits 0..1 | 2..3) and 2h+1 = 128h + 64..127 (high nibbles;
 * qh bits 4..5 | 6..7). Register g spans sub-blocks 4g..4g+3, 8 i16 pair
 * sums each. */
TB_INLINE void dot_q6_K(int nt, int64_t n, float *s, const void *w, const void *const *a,
                        bool vnni) {
    const int64_t nb = n / QK_K;
    const block_q6_K *x = w;   // (nb) blocks
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i shl = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shr = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    __m512i pick[4];   /* i16 lane L <- scale 4g + L / 8 */
    for (int g = 0; g < 4; g++) {
        short idx[32];
        for (int l = 0; l < 32; l++) idx[l] = (short)(4 * g + l / 8);
        pick[g] = _mm512_loadu_si512(idx);
    }
    __m512 acc[TB_NT];
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));   // (16) i16
        const __m512i sc512 = _mm512_zextsi256_si512(sc16);
        __m512i sc[4], q[4];
        TB_UNROLL
        for (int h = 0; h < 2; h++) {
            const __m512i ql = _mm512_loadu_si512(x[i].ql + 64 * h);
            const __m512i qh = _mm512_broadcast_i64x4(loadu256(x[i].qh + 32 * h));
            q[2 * h] = and_or_512(ql, m4, _mm512_and_si512(_mm512_sllv_epi16(qh, shl), m30));
            q[2 * h + 1] = and_or_512(_mm512_srli_epi16(ql, 4), m4, _mm512_and_si512(_mm512_srlv_epi16(qh, shr), m30));
        }
        TB_UNROLL
        for (int g = 0; g < 4; g++) sc[g] = _mm512_permutexvar_epi16(pick[g], sc512);
        const float dx = fp16_f32(x[i].d);
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)a[t] + i;
            __m512i p = _mm512_setzero_si512();   // (16) i32
            TB_UNROLL
            for (int g = 0; g < 4; g++)
                p = madd_acc_512(p, _mm512_maddubs_epi16(q[g], _mm512_loadu_si512(y->qs + 64 * g)), sc[g], vnni);
            __m256i off = _mm256_madd_epi16(loadu256(y->bsums), sc16);   // (8) i32: sum sc_j * bsums_j
            p = _mm512_sub_epi32(p, _mm512_zextsi256_si512(_mm256_slli_epi32(off, 5)));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_set1_ps(dx * y->d), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = _mm512_reduce_add_ps(acc[t]);
}
#endif

#endif
