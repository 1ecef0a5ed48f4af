/*
 * neon_act.h — activation quantizers f32 -> Q8_0 and f32 -> Q8_K (NEON).
 *
 * Byte-identical to tb_quantize_row_q8_0_ref / tb_quantize_row_q8_K_ref:
 * every float operation of the ref is done once, in the same order, with
 * the same IEEE single rounding (tier_neon.c is built with
 * -ffp-contract=off, and these bodies use no fused multiply-add):
 *   - max |x| is order-free (max of exact values);
 *   - d = amax / 127 and id = 1 / d (Q8_0), iscale = -127 / max and
 *     d = 1 / iscale (Q8_K) are scalar divisions, as in the ref;
 *   - x * id is one fmul per element;
 *   - tb_nearest_int (add 1.5 * 2^23) rounds to nearest, ties to even,
 *     which is what fcvtns does (whatever the FPCR rounding mode); the
 *     ref's result fits int8 (|x * id| <= 127 up to rounding), so the
 *     saturating narrows (sqxtn) equal its (int8_t) cast and Q8_K's
 *     min(127, v);
 *   - d -> fp16 by fcvt equals tb_fp32_to_fp16 (tested at every rounding
 *     boundary by neon_main.c).
 * Blocks whose largest magnitude is below TB_NEON_ACT_TINY take the scalar
 * ref: there d is subnormal or 1/d overflows, and the ref's bit-trick
 * rounding of huge/inf/nan products is not what fcvtns gives. Inputs must
 * be finite (the ref's contract).
 */
#ifndef TB_NEON_ACT_H
#define TB_NEON_ACT_H

#include "kernels/neon_common.h"

#define TB_NEON_ACT_TINY 1e-30f   /* below this block max, defer to the ref */

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

/* 16 floats at x times s, rounded to nearest even, saturated to int8. */
TB_INLINE int8x16_t nv_round16(const float *x, float32x4_t s) {
    int32x4_t q0 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x), s));
    int32x4_t q1 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 4), s));
    int32x4_t q2 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 8), s));
    int32x4_t q3 = vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 12), s));
    int16x8_t h0 = vqmovn_high_s32(vqmovn_s32(q0), q1);
    int16x8_t h1 = vqmovn_high_s32(vqmovn_s32(q2), q3);
    return vqmovn_high_s16(vqmovn_s16(h0), h1);
}

/* max |x| over 16 floats at x, folded into m. */
TB_INLINE float32x4_t nv_absmax16(float32x4_t m, const float *x) {
    float32x4_t a = vmaxq_f32(vabsq_f32(vld1q_f32(x)), vabsq_f32(vld1q_f32(x + 4)));
    float32x4_t b = vmaxq_f32(vabsq_f32(vld1q_f32(x + 8)), vabsq_f32(vld1q_f32(x + 12)));
    return vmaxq_f32(m, vmaxq_f32(a, b));
}

/* ---------------------------------------------------------------------- */
/* f32 -> Q8_0                                                              */
/* ---------------------------------------------------------------------- */

/* n floats (n % 32 == 0) -> n / 32 Q8_0 blocks, bytes equal to the ref's. */
static void nv_quantize_q8_0(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;   // (n / 32) blocks
    for (int64_t i = 0; i < n / QK8_0; i++) {
        const float *xb = x + i * QK8_0;   // (32)
        const float amax = vmaxvq_f32(nv_absmax16(nv_absmax16(vdupq_n_f32(0), xb), xb + 16));
        if (amax < TB_NEON_ACT_TINY) {
            tb_quantize_row_q8_0_ref(xb, &y[i], QK8_0);
            continue;
        }
        const float d = amax / 127.0f;
        const float32x4_t id = vdupq_n_f32(1.0f / d);
        y[i].d = tb_neon_f2h(d);
        vst1q_s8(y[i].qs, nv_round16(xb, id));
        vst1q_s8(y[i].qs + 16, nv_round16(xb + 16, id));
    }
}

/* ---------------------------------------------------------------------- */
/* f32 -> Q8_K                                                              */
/* ---------------------------------------------------------------------- */

/* n floats (n % 256 == 0) -> n / 256 Q8_K blocks, bytes equal to the ref's
 * (including the choice of `max` among equal magnitudes: the first). */
static void nv_quantize_q8_K(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;   // (n / 256) blocks
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float *xb = x + i * QK_K;   // (256)
        float32x4_t m0 = vdupq_n_f32(0), m1 = m0;
        for (int j = 0; j < QK_K; j += 32) {
            m0 = nv_absmax16(m0, xb + j);
            m1 = nv_absmax16(m1, xb + j + 16);
        }
        const float amax = vmaxvq_f32(vmaxq_f32(m0, m1));
        if (amax < TB_NEON_ACT_TINY) {   /* includes the all-zero block */
            tb_quantize_row_q8_K_ref(xb, &y[i], QK_K);
            continue;
        }
        /* the first element of magnitude amax, with its sign */
        const float32x4_t va = vdupq_n_f32(amax);
        int j = 0;
        for (;; j += 4)
            if (vmaxvq_u32(vceqq_f32(vabsq_f32(vld1q_f32(xb + j)), va))) break;
        while (xb[j] != amax && xb[j] != -amax) j++;
        const float iscale = -127.0f / xb[j];
        const float32x4_t s = vdupq_n_f32(iscale);
        for (int g = 0; g < QK_K / 16; g++) {
            int8x16_t q = nv_round16(xb + 16 * g, s);
            vst1q_s8(y[i].qs + 16 * g, q);
            y[i].bsums[g] = (int16_t)vaddlvq_s8(q);
        }
        y[i].d = 1.0f / iscale;
    }
}

/* Set the Q8_0 and Q8_K activation quantizers of every weight type whose
 * vec_dot format is one of them and whose entry the tier left unset. */
static inline void tb_neon_set_act(tb_kernels_t *k) {
    for (int t = 0; t < TB_TYPE_COUNT; t++) {
        const tb_type_traits_t *tr = tb_type_traits((tb_type_t)t);
        if (!tr || k->t[t].quantize_act) continue;
        if (tr->vec_dot_type == TB_TYPE_Q8_0) k->t[t].quantize_act = nv_quantize_q8_0;
        if (tr->vec_dot_type == TB_TYPE_Q8_K) k->t[t].quantize_act = nv_quantize_q8_K;
    }
}

#endif
