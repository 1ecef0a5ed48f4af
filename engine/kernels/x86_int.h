/*
 * x86_int.h — Q8_0 and Q4_0 kernel bodies (x86).
 * Included by tier_avx2.c and tier_avx512.c after x86_common.h (see its
 * determinism contract: one dot_<fmt>(NT tokens) body serves vec_dot,
 * matvec and gemm, so gemm and matvec agree bit for bit per row).
 */
#ifndef TB_X86_INT_H
#define TB_X86_INT_H

#include "kernels/x86_common.h"

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
    for (int64_t i0 = 0; i0 < nb; i0 += 2) {
        TB_UNROLL   /* blocks alternate acc[0]/acc[1]; unrolled, acc stays in registers */
        for (int u = 0; u < 2; u++) {
            const int64_t i = i0 + u;
            if (i >= nb) break;
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
                acc[u][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * fp16_f32(y->d)),
                                                acc[u][t]);
            }
        }
    }
    for (int t = 0; t < nt; t++) s[t] = hsum_ps256(_mm256_add_ps(acc[0][t], acc[1][t]));
}


#endif
