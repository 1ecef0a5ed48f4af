/*
 * ops_x86.c — AVX-512 and AVX2 twins of tb_op_swiglu, the SwiGLU of a
 * pass prologue (linear.c): lane-wise the scalar spec's operations in the
 * same order (the clamps as min/max with the spec's NaN behaviour, e^-g by
 * exp16/exp8, one IEEE division and one multiply), so the same bits; the
 * tail is a masked step. Selected by tb_op_swiglu_for for that tier only.
 */
#include "model/x86_exp.h"

#if defined(__x86_64__) && defined(__GNUC__)

/* silu(min(g, c)) * clamp(u, -c, c) on 16 lanes; c = +inf: silu(g) * u. */
T512 INLINE __m512 swiglu16(__m512 g, __m512 u, __m512 c, __m512 nc, bool clamp) {
    if (clamp) {
        g = _mm512_min_ps(g, c);                    /* g < c ? g : c            */
        u = _mm512_max_ps(nc, _mm512_min_ps(c, u)); /* u < -c ? -c : (u > c ? c : u) */
    }
    const __m512 e = exp16(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(g),
                                                                _mm512_set1_epi32(INT32_MIN))));
    return _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), u);
}

T512 void tb_op_swiglu_avx512(float *x, const float *u, int64_t n, float c) {
    const bool clamp = !isinf(c);
    const __m512 cv = _mm512_set1_ps(c), nc = _mm512_set1_ps(-c);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, swiglu16(_mm512_loadu_ps(x + i), _mm512_loadu_ps(u + i), cv, nc, clamp));
    if (i < n) {
        const __mmask16 m = mask16((int)(n - i));
        const __m512 r = swiglu16(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, u + i), cv, nc, clamp);
        _mm512_mask_storeu_ps(x + i, m, r);
    }
}

/* tb_op_rms_inv's partial sums ss[8 j + k] in lane k of a[j]: the squares
 * are exact in double, so fma(v, v, a) is the spec's a + v * v; lanes past
 * n load 0 and add +0, which leaves a sum of squares as it is. */
T512 float tb_op_rms_inv_avx512(const float *x, int64_t n, float eps) {
    _Static_assert(TB_RMS_SUMS == 32, "4 chains of 8 doubles");
    __m512d a[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 4; j++) {
            const __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8 * j));
            a[j] = _mm512_fmadd_pd(v, v, a[j]);
        }
    for (int j = 0; j < 4 && i + 8 * j < n; j++) {
        const int64_t rem = n - i - 8 * j;
        const __mmask8 m = rem >= 8 ? (__mmask8)0xff : (__mmask8)((1u << rem) - 1);
        const __m512d v = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, x + i + 8 * j));
        a[j] = _mm512_fmadd_pd(v, v, a[j]);
    }
    double ss[32];
    for (int j = 0; j < 4; j++) _mm512_storeu_pd(ss + 8 * j, a[j]);
    return tb_rms_finish(ss, n, eps);
}

T512 void tb_op_norm_mul_avx512(float *y, const float *x, float r, const float *w, int64_t n) {
    const __m512 rv = _mm512_set1_ps(r);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), rv), _mm512_loadu_ps(w + i)));
    if (i < n) {
        const __mmask16 m = mask16((int)(n - i));
        const __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), rv), _mm512_maskz_loadu_ps(m, w + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* The same on 8 lanes. */
T256 INLINE __m256 swiglu8(__m256 g, __m256 u, __m256 c, __m256 nc, bool clamp) {
    if (clamp) {
        g = _mm256_min_ps(g, c);
        u = _mm256_max_ps(nc, _mm256_min_ps(c, u));
    }
    const __m256 e = exp8(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

T256 void tb_op_swiglu_avx2(float *x, const float *u, int64_t n, float c) {
    const bool clamp = !isinf(c);
    const __m256 cv = _mm256_set1_ps(c), nc = _mm256_set1_ps(-c);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, swiglu8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(u + i), cv, nc, clamp));
    if (i < n) {
        const __m256i m = mask8((int)(n - i));
        const __m256 r = swiglu8(_mm256_maskload_ps(x + i, m), _mm256_maskload_ps(u + i, m), cv, nc, clamp);
        _mm256_maskstore_ps(x + i, m, r);
    }
}

#endif
