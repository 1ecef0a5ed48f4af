/*
 * neon_float.h — F32, F16 and BF16 weights x F32 activations (NEON).
 *
 * Included by tier_neon.c after neon_common.h (see its determinism
 * contract). F16 widens with fcvtl (every aarch64 core has it), BF16 with a
 * 16-bit left shift (ushll), so the weights are exact floats and only the
 * summation order differs from _ref (which sums in double).
 */
#ifndef TB_NEON_FLOAT_H
#define TB_NEON_FLOAT_H

#include "kernels/neon_common.h"

/* ---------------------------------------------------------------------- */
/* Loads: 8 weights -> two float32x4                                        */
/* ---------------------------------------------------------------------- */

/* kind: 0 = f32, 1 = f16, 2 = bf16. Elements [j, j + 8) of w. */
TB_INLINE void nv_load8_w(const void *w, int64_t j, int kind, float32x4_t *lo, float32x4_t *hi) {
    if (kind == 0) {
        *lo = vld1q_f32((const float *)w + j);
        *hi = vld1q_f32((const float *)w + j + 4);
        return;
    }
    uint16x8_t h = vld1q_u16((const uint16_t *)w + j);
    if (kind == 1) {
        float16x8_t f = vreinterpretq_f16_u16(h);
        *lo = vcvt_f32_f16(vget_low_f16(f));
        *hi = vcvt_high_f32_f16(f);
    } else {
        *lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
        *hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
    }
}

TB_INLINE float nv_load1_w(const void *w, int64_t j, int kind) {
    if (kind == 0) return ((const float *)w)[j];
    if (kind == 1) return tb_neon_h2f(((const uint16_t *)w)[j]);
    return tb_bf16_to_fp32(((const uint16_t *)w)[j]);
}

/* ---------------------------------------------------------------------- */
/* Dot body                                                                 */
/* ---------------------------------------------------------------------- */

/* s[t] = w . a[t] for t < nt, n elements (any n). 16 elements per step into
 * four accumulators per token; then 8 at a time into the first two; the
 * n % 8 tail is scalar (separate multiply and add, in element order). */
TB_INLINE void nv_dot_fx(int nt, int64_t n, float *s, const void *w, const void *const *a, int kind) {
    float32x4_t acc[TB_NEON_NT][4];
    TB_NEON_UNROLL
    for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = vdupq_n_f32(0);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        float32x4_t w0, w1, w2, w3;
        nv_load8_w(w, j, kind, &w0, &w1);
        nv_load8_w(w, j + 8, kind, &w2, &w3);
        TB_NEON_UNROLL
        for (int t = 0; t < nt; t++) {
            const float *at = (const float *)a[t] + j;   // (16)
            acc[t][0] = vfmaq_f32(acc[t][0], w0, vld1q_f32(at));
            acc[t][1] = vfmaq_f32(acc[t][1], w1, vld1q_f32(at + 4));
            acc[t][2] = vfmaq_f32(acc[t][2], w2, vld1q_f32(at + 8));
            acc[t][3] = vfmaq_f32(acc[t][3], w3, vld1q_f32(at + 12));
        }
    }
    if (j + 8 <= n) {
        float32x4_t w0, w1;
        nv_load8_w(w, j, kind, &w0, &w1);
        TB_NEON_UNROLL
        for (int t = 0; t < nt; t++) {
            const float *at = (const float *)a[t] + j;   // (8)
            acc[t][0] = vfmaq_f32(acc[t][0], w0, vld1q_f32(at));
            acc[t][1] = vfmaq_f32(acc[t][1], w1, vld1q_f32(at + 4));
        }
        j += 8;
    }
    TB_NEON_UNROLL
    for (int t = 0; t < nt; t++) {
        float r = vaddvq_f32(vaddq_f32(vaddq_f32(acc[t][0], acc[t][1]), vaddq_f32(acc[t][2], acc[t][3])));
        for (int64_t k = j; k < n; k++) r += nv_load1_w(w, k, kind) * ((const float *)a[t])[k];
        s[t] = r;
    }
}

#define NV_DOT_F32(nt, n, s, w, aa) nv_dot_fx(nt, n, s, w, aa, 0)
#define NV_DOT_F16(nt, n, s, w, aa) nv_dot_fx(nt, n, s, w, aa, 1)
#define NV_DOT_BF16(nt, n, s, w, aa) nv_dot_fx(nt, n, s, w, aa, 2)

TB_NEON_KERNELS(f32, NV_DOT_F32, )
TB_NEON_KERNELS(f16, NV_DOT_F16, )
TB_NEON_KERNELS(bf16, NV_DOT_BF16, )

/* Register F32, F16 and BF16 (quantize_act stays the inherited copy). */
static inline void tb_neon_set_float(tb_kernels_t *k) {
    TB_NEON_SET(k, TB_TYPE_F32, f32);
    TB_NEON_SET(k, TB_TYPE_F16, f16);
    TB_NEON_SET(k, TB_TYPE_BF16, bf16);
}

#endif
