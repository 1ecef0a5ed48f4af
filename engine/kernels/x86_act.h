/*
 * x86_act.h — activation quantizers f32 -> Q8_0 and f32 -> Q8_K (AVX2).
 *
 * Byte-identical to tb_quantize_row_q8_0_ref / tb_quantize_row_q8_K_ref
 * (the tier tests compare the bytes): every float operation of the ref is
 * done once, in the same order, with the same IEEE single rounding:
 *   - max |x| is order-free (max of exact values);
 *   - d = amax / 127 and id = 1 / d (Q8_0), iscale = -127 / max and
 *     d = 1 / iscale (Q8_K) are scalar divisions, as in the ref;
 *   - x * id is one multiply per element (mul_ps);
 *   - tb_nearest_int (add 1.5 * 2^23) rounds to nearest even, which is what
 *     cvtps_epi32 does under the default MXCSR; the ref's result fits int8
 *     (|x * id| <= 127 up to rounding), so the saturating packs equal its
 *     (int8_t) cast and Q8_K's min(127, v);
 *   - fp32 -> fp16 of d by F16C (round to nearest even) equals
 *     tb_fp32_to_fp16 for every non-NaN float (checked exhaustively).
 * Blocks whose largest magnitude is below TINY take the scalar ref: there
 * 1/d overflows and the ref's bit-trick rounding of inf/nan is not what
 * cvtps_epi32 gives. Inputs must be finite (the ref's contract).
 *
 * Included by tier_avx2.c; the AVX-512 tier inherits these entries.
 */
#ifndef TB_X86_ACT_H
#define TB_X86_ACT_H

#include "kernels/x86_common.h"

#define TB_ACT_TINY 1e-30f   /* below this block max, defer to the ref */

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

TB_INLINE __m256 abs_ps256(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

TB_INLINE float hmax_ps256(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* 32 int32 (four vectors, in order) -> 32 saturated int8, in order. */
TB_INLINE __m256i pack32_i8(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
    __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

TB_INLINE __m256i round_scaled(const float *x, __m256 s) {
    return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), s));
}

/* ---------------------------------------------------------------------- */
/* f32 -> Q8_0                                                              */
/* ---------------------------------------------------------------------- */

/* n floats (n % 32 == 0) -> n / 32 Q8_0 blocks, bytes equal to the ref's. */
static void quantize_q8_0_avx2(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;   // (n / 32) blocks
    for (int64_t i = 0; i < n / QK8_0; i++) {
        const float *xb = x + i * QK8_0;   // (32)
        __m256 m = _mm256_max_ps(_mm256_max_ps(abs_ps256(_mm256_loadu_ps(xb)), abs_ps256(_mm256_loadu_ps(xb + 8))),
                                 _mm256_max_ps(abs_ps256(_mm256_loadu_ps(xb + 16)),
                                               abs_ps256(_mm256_loadu_ps(xb + 24))));
        const float amax = hmax_ps256(m);
        if (amax < TB_ACT_TINY) {
            tb_quantize_row_q8_0_ref(xb, &y[i], QK8_0);
            continue;
        }
        const float d = amax / 127.0f;
        const __m256 id = _mm256_set1_ps(1.0f / d);
        y[i].d = (tb_fp16_t)_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        __m256i q = pack32_i8(round_scaled(xb, id), round_scaled(xb + 8, id), round_scaled(xb + 16, id),
                              round_scaled(xb + 24, id));
        _mm256_storeu_si256((__m256i *)y[i].qs, q);
    }
}

/* ---------------------------------------------------------------------- */
/* f32 -> Q8_K                                                              */
/* ---------------------------------------------------------------------- */

/* n floats (n % 256 == 0) -> n / 256 Q8_K blocks, bytes equal to the ref's
 * (including the choice of `max` among equal magnitudes: the first). */
static void quantize_q8_K_avx2(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;   // (n / 256) blocks
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float *xb = x + i * QK_K;   // (256)
        __m256 m0 = _mm256_setzero_ps(), m1 = m0;
        for (int j = 0; j < QK_K; j += 16) {
            m0 = _mm256_max_ps(m0, abs_ps256(_mm256_loadu_ps(xb + j)));
            m1 = _mm256_max_ps(m1, abs_ps256(_mm256_loadu_ps(xb + j + 8)));
        }
        const float amax = hmax_ps256(_mm256_max_ps(m0, m1));
        if (amax < TB_ACT_TINY) {   /* includes the all-zero block */
            tb_quantize_row_q8_K_ref(xb, &y[i], QK_K);
            continue;
        }
        /* the first element of magnitude amax, with its sign */
        const __m256 va = _mm256_set1_ps(amax);
        int j = 0;
        unsigned hit = 0;
        for (;; j += 8) {
            hit = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(abs_ps256(_mm256_loadu_ps(xb + j)), va, _CMP_EQ_OQ));
            if (hit) break;
        }
        const float max = xb[j + __builtin_ctz(hit)];
        const float iscale = -127.0f / max;
        const __m256 s = _mm256_set1_ps(iscale);
        const __m256i one = _mm256_set1_epi8(1);
        int32_t part[2][8];   /* group sums: [half][k] = group 8 * half + k */
        for (int h = 0; h < 2; h++) {
            __m256i g[4];     /* 4 x 8 int32 sums of 4 bytes, 2 groups per vector */
            for (int k = 0; k < 4; k++) {
                const float *xk = xb + 128 * h + 32 * k;
                __m256i q = pack32_i8(round_scaled(xk, s), round_scaled(xk + 8, s), round_scaled(xk + 16, s),
                                      round_scaled(xk + 24, s));
                _mm256_storeu_si256((__m256i *)(y[i].qs + 128 * h + 32 * k), q);
                g[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(one, q), _mm256_set1_epi16(1));
            }
            /* lane 0 holds groups 2k, lane 1 groups 2k+1 (of this half):
             * two hadd levels give [g0 g2 g4 g6 | g1 g3 g5 g7] */
            __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(g[0], g[1]), _mm256_hadd_epi32(g[2], g[3]));
            _mm256_storeu_si256((__m256i *)part[h], t);
        }
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++) {
                y[i].bsums[8 * h + 2 * k] = (int16_t)part[h][k];
                y[i].bsums[8 * h + 2 * k + 1] = (int16_t)part[h][4 + k];
            }
        y[i].d = 1.0f / iscale;
    }
}

/* Set the Q8_0 and Q8_K activation quantizers of every weight type whose
 * vec_dot format is one of them and whose entry the tier left unset. */
static inline void tb_x86_set_act(tb_kernels_t *k) {
    for (int t = 0; t < TB_TYPE_COUNT; t++) {
        const tb_type_traits_t *tr = tb_type_traits((tb_type_t)t);
        if (!tr || k->t[t].quantize_act) continue;
        if (tr->vec_dot_type == TB_TYPE_Q8_0) k->t[t].quantize_act = quantize_q8_0_avx2;
        if (tr->vec_dot_type == TB_TYPE_Q8_K) k->t[t].quantize_act = quantize_q8_K_avx2;
    }
}

#endif
