/*
 * x86_exp.h — tb_op_exp on AVX-512 (16 lanes) and AVX2 (8 lanes): the same
 * float operations in the same order as the scalar spec (model.h), so the
 * same bits, for the model's x86 kernels (attention_x86.c, ops_x86.c);
 * and the tail-lane masks those kernels share.
 * Functions carry target attributes; callers run them only when the
 * dispatcher selected that tier.
 */
#ifndef TB_X86_EXP_H
#define TB_X86_EXP_H

#include "model/model.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define T256 __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))

/* Lanes [0, k) set, k in 0..16 (AVX-512) / 0..8 (AVX2): a loop's tail. */
T512 INLINE __mmask16 mask16(int k) { return (__mmask16)((1u << k) - 1); }
T256 INLINE __m256i mask8(int k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* tb_op_exp on 16 lanes, the same operations in the same order. */
T512 INLINE __m512 exp16(__m512 x) {
    const __m512 hi = _mm512_set1_ps(TB_EXP_HI), lo = _mm512_set1_ps(TB_EXP_LO);
    const __m512 big = _mm512_set1_ps(TB_EXP_BIG);
    __m512 xc = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), hi);
    xc = _mm512_mask_mov_ps(xc, _mm512_cmp_ps_mask(xc, lo, _CMP_LT_OQ), lo);
    const __m512 kf = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(TB_EXP_LOG2E)), big), big);
    __m512 r = _mm512_sub_ps(xc, _mm512_mul_ps(kf, _mm512_set1_ps(TB_EXP_LN2_HI)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(kf, _mm512_set1_ps(TB_EXP_LN2_LO)));
    __m512 pp = _mm512_set1_ps(1.0f / 5040.0f);
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f / 720.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f / 120.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f / 24.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f / 6.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(0.5f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f));
    const __m512i e = _mm512_add_epi32(_mm512_castps_si512(pp),
                                       _mm512_slli_epi32(_mm512_cvtps_epi32(kf), 23));
    __m512 v = _mm512_mask_mov_ps(_mm512_castsi512_ps(e), _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ),
                                  _mm512_set1_ps(INFINITY));
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), _mm512_setzero_ps());
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* tb_op_exp on 8 lanes, the same operations in the same order. */
T256 INLINE __m256 exp8(__m256 x) {
    const __m256 hi = _mm256_set1_ps(TB_EXP_HI), lo = _mm256_set1_ps(TB_EXP_LO);
    const __m256 big = _mm256_set1_ps(TB_EXP_BIG);
    __m256 xc = _mm256_blendv_ps(x, hi, _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    xc = _mm256_blendv_ps(xc, lo, _mm256_cmp_ps(xc, lo, _CMP_LT_OQ));
    const __m256 kf = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(xc, _mm256_set1_ps(TB_EXP_LOG2E)), big), big);
    __m256 r = _mm256_sub_ps(xc, _mm256_mul_ps(kf, _mm256_set1_ps(TB_EXP_LN2_HI)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(kf, _mm256_set1_ps(TB_EXP_LN2_LO)));
    __m256 pp = _mm256_set1_ps(1.0f / 5040.0f);
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f / 720.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f / 120.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f / 24.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f / 6.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(0.5f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_add_epi32(_mm256_castps_si256(pp),
                                       _mm256_slli_epi32(_mm256_cvtps_epi32(kf), 23));
    __m256 v = _mm256_blendv_ps(_mm256_castsi256_ps(e), _mm256_set1_ps(INFINITY),
                                _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    v = _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(v, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

#endif
#endif
