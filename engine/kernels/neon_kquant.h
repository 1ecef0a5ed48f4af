/*
 * neon_kquant.h — Q4_K and Q6_K x Q8_K kernel bodies (aarch64 NEON).
 * Included by tier_neon.c inside its `__aarch64__` section, after DOT16
 * and TB_INLINE are defined; NEON_KQUANT_BODIES(sfx, DOT16, ATTR) is
 * instantiated once per dot instruction (baseline widening multiply and
 * SDOT), like NEON_BODIES there.
 *
 * One 16-byte register of codes is 16 elements: half a Q4_K sub-block, one
 * whole Q6_K sub-block. Codes are non-negative (Q4_K 0..15, Q6_K 0..63), so
 * they pass as the signed operand unchanged; offsets fold in through the
 * activation's bsums (Q4_K: mins; Q6_K: the -32 bias). Every block's
 * integer dot is exact; the scale multiply stays in int32 (vmlaq_n_s32) and
 * only the float summation over blocks differs from _ref.
 */
#ifndef TB_NEON_KQUANT_H
#define TB_NEON_KQUANT_H

#include "kernels/kquant_scales.h"

#define NEON_KQUANT_BODIES(sfx, DOT16, ATTR)                                                    \
    /* Q4_K: sub-block 2k = low nibbles of qs[32k..32k+31], 2k+1 = high nibbles */              \
    ATTR static void dot_q4_K_##sfx(int64_t n, float *s, const void *w, const void *a) {        \
        const block_q4_K *x = w;   /* (n / 256) blocks */                                       \
        const block_q8_K *y = a;                                                                 \
        const uint8x16_t m4 = vdupq_n_u8(0x0F);                                                  \
        float32x4_t acc = vdupq_n_f32(0), accm = vdupq_n_f32(0);                                 \
        for (int64_t i = 0; i < n / QK_K; i++) {                                                 \
            uint8_t sm[16];                                                                      \
            tb_q4_K_unpack_scales(x[i].scales, sm);                                              \
            int32x4_t p = vdupq_n_s32(0);                                                        \
            for (int k = 0; k < 4; k++) {                                                        \
                const uint8x16_t q0 = vld1q_u8(x[i].qs + 32 * k), q1 = vld1q_u8(x[i].qs + 32 * k + 16); \
                const int8_t *yq = y[i].qs + 64 * k;                                             \
                int32x4_t lo = DOT16(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(q0, m4)), vld1q_s8(yq)); \
                lo = DOT16(lo, vreinterpretq_s8_u8(vandq_u8(q1, m4)), vld1q_s8(yq + 16));        \
                int32x4_t hi = DOT16(vdupq_n_s32(0), vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), vld1q_s8(yq + 32)); \
                hi = DOT16(hi, vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), vld1q_s8(yq + 48));       \
                p = vmlaq_n_s32(p, lo, sm[2 * k]);                                               \
                p = vmlaq_n_s32(p, hi, sm[2 * k + 1]);                                           \
            }                                                                                    \
            /* sum_j m_j * (bsums[2j] + bsums[2j + 1]) */                                        \
            int16x8_t pairs = vpaddq_s16(vld1q_s16(y[i].bsums), vld1q_s16(y[i].bsums + 8));      \
            int16x8_t mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(sm + 8)));                   \
            int32x4_t pm = vmull_s16(vget_low_s16(pairs), vget_low_s16(mins));                   \
            pm = vmlal_high_s16(pm, pairs, mins);                                                \
            acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), tb_fp16_to_fp32(x[i].d) * y[i].d);         \
            accm = vfmaq_n_f32(accm, vcvtq_f32_s32(pm), tb_fp16_to_fp32(x[i].dmin) * y[i].d);   \
        }                                                                                        \
        *s = vaddvq_f32(acc) - vaddvq_f32(accm);                                                 \
    }                                                                                            \
    /* Q6_K: per half h and 16-byte column c, four sub-blocks 8h + c + 2m */                    \
    ATTR static void dot_q6_K_##sfx(int64_t n, float *s, const void *w, const void *a) {        \
        const block_q6_K *x = w;   /* (n / 256) blocks */                                       \
        const block_q8_K *y = a;                                                                 \
        const uint8x16_t m3 = vdupq_n_u8(3);                                                     \
        float32x4_t acc = vdupq_n_f32(0);                                                        \
        for (int64_t i = 0; i < n / QK_K; i++) {                                                 \
            int32x4_t p = vdupq_n_s32(0);                                                        \
            for (int h = 0; h < 2; h++)                                                          \
                for (int c = 0; c < 2; c++) {                                                    \
                    const uint8_t *ql = x[i].ql + 64 * h + 16 * c;                               \
                    const uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 32);                  \
                    const uint8x16_t qh = vld1q_u8(x[i].qh + 32 * h + 16 * c);                   \
                    const int8_t *yq = y[i].qs + 128 * h + 16 * c;                               \
                    const int8_t *sc = x[i].scales + 8 * h + c;                                  \
                    uint8x16_t q[4];   /* elements 128h + 16c + 32m + (0..15) */                 \
                    q[0] = vsliq_n_u8(vandq_u8(l0, vdupq_n_u8(0x0F)), vandq_u8(qh, m3), 4);      \
                    q[1] = vsliq_n_u8(vandq_u8(l1, vdupq_n_u8(0x0F)), vandq_u8(vshrq_n_u8(qh, 2), m3), 4); \
                    q[2] = vsliq_n_u8(vshrq_n_u8(l0, 4), vandq_u8(vshrq_n_u8(qh, 4), m3), 4);    \
                    q[3] = vsliq_n_u8(vshrq_n_u8(l1, 4), vshrq_n_u8(qh, 6), 4);                  \
                    for (int m = 0; m < 4; m++) {                                                \
                        int32x4_t d = DOT16(vdupq_n_s32(0), vreinterpretq_s8_u8(q[m]), vld1q_s8(yq + 32 * m)); \
                        p = vmlaq_n_s32(p, d, sc[2 * m]);                                        \
                    }                                                                            \
                }                                                                                \
            /* the -32 bias: 32 * sum_j sc_j * bsums_j */                                        \
            int8x16_t sc8 = vld1q_s8(x[i].scales);                                               \
            int16x8_t s0 = vmovl_s8(vget_low_s8(sc8)), s1 = vmovl_high_s8(sc8);                  \
            int16x8_t b0 = vld1q_s16(y[i].bsums), b1 = vld1q_s16(y[i].bsums + 8);               \
            int32x4_t off = vmull_s16(vget_low_s16(b0), vget_low_s16(s0));                       \
            off = vmlal_high_s16(off, b0, s0);                                                   \
            off = vmlal_s16(off, vget_low_s16(b1), vget_low_s16(s1));                            \
            off = vmlal_high_s16(off, b1, s1);                                                   \
            p = vsubq_s32(p, vshlq_n_s32(off, 5));                                               \
            acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), tb_fp16_to_fp32(x[i].d) * y[i].d);         \
        }                                                                                        \
        *s = vaddvq_f32(acc);                                                                    \
    }

#endif
