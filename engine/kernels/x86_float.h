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
    /* Steps alternate between acc0 and acc1; the loop is unrolled by two so
     * both stay in registers (a runtime acc[step & 1] index spills them to
     * the stack and chains every FMA through store forwarding). */
    __m256 acc0[TB_NT], acc1[TB_NT];
    for (int t = 0; t < nt; t++) acc0[t] = acc1[t] = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        const __m256 w0 = load8_w(w, j, kind), w1 = load8_w(w, j + 8, kind);
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const float *x = (const float *)a[t] + j;
            acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), acc0[t]);
            acc1[t] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), acc1[t]);
        }
    }
    if (j + 8 <= n) {
        const __m256 w0 = load8_w(w, j, kind);
        TB_UNROLL
        for (int t = 0; t < nt; t++)
            acc0[t] = _mm256_fmadd_ps(w0, _mm256_loadu_ps((const float *)a[t] + j), acc0[t]);
        j += 8;
    }
    for (int t = 0; t < nt; t++) {
        float r = hsum_ps256(_mm256_add_ps(acc0[t], acc1[t]));
        for (int64_t k = j; k < n; k++) r += load1_w(w, k, kind) * ((const float *)a[t])[k];
        s[t] = r;
    }
}


#if defined(__AVX512F__)
/* ---------------------------------------------------------------------- */
/* 512-bit variant: 16 elements per step, masked tail (no scalar loop)      */
/* ---------------------------------------------------------------------- */

/* Elements [j, j + 16) of w under mask m (masked-off lanes read 0). */
TB_INLINE __m512 load16_w(const void *w, int64_t j, int kind, __mmask16 m) {
    if (kind == 0) return _mm512_maskz_loadu_ps(m, (const float *)w + j);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + j);
    if (kind == 1) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Same contract as dot_fx; two accumulators (steps alternate, unrolled by
 * two to keep them in registers), the tail of n % 16 elements goes through
 * masked loads into the accumulator whose turn it is. */
TB_INLINE void dot_fx512(int nt, int64_t n, float *s, const void *w, const void *const *a, int kind) {
    __m512 acc0[TB_NT], acc1[TB_NT];
    for (int t = 0; t < nt; t++) acc0[t] = acc1[t] = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        const __m512 w0 = load16_w(w, j, kind, 0xFFFF), w1 = load16_w(w, j + 16, kind, 0xFFFF);
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const float *x = (const float *)a[t] + j;
            acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x), acc0[t]);
            acc1[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + 16), acc1[t]);
        }
    }
    bool odd = false;   /* the next step goes to acc1 */
    if (j + 16 <= n) {
        const __m512 w0 = load16_w(w, j, kind, 0xFFFF);
        TB_UNROLL
        for (int t = 0; t < nt; t++)
            acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps((const float *)a[t] + j), acc0[t]);
        j += 16;
        odd = true;
    }
    if (j < n) {
        const __mmask16 m = (__mmask16)((1u << (n - j)) - 1);
        const __m512 wv = load16_w(w, j, kind, m);
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const __m512 p = _mm512_maskz_loadu_ps(m, (const float *)a[t] + j);
            if (odd) acc1[t] = _mm512_fmadd_ps(wv, p, acc1[t]);
            else acc0[t] = _mm512_fmadd_ps(wv, p, acc0[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[t], acc1[t]));
}
#endif

#endif
