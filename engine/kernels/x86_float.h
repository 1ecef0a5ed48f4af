/*
 * x86_float.h — F32, F16 and BF16 weight kernel bodies (x86).
 * Included by tier_avx2.c and tier_avx512.c after x86_common.h (see its
 * determinism contract: one dot_<fmt>(NT tokens) body serves vec_dot,
 * matvec and gemm, so gemm and matvec agree bit for bit per row).
 */
#ifndef TB_X86_FLOAT_H
#define TB_X86_FLOAT_H

#include "kernels/x86_common.h"

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


#endif
