/*
 * neon_ternary.h — TQ1_0 and TQ2_0 x Q8_K (aarch64 NEON), baseline (smlal into
 * int16) and SDOT (+dotprod) variants from one body macro.
 *
 * Included by tier_neon.c inside its `__aarch64__` section, after
 * neon_common.h (see its determinism contract: one body nv_dot_tq1_0_<sfx>
 * (nt tokens against one weight row) serves vec_dot, matvec and gemm, so
 * gemm == matvec bit for bit per row).
 *
 * Trit decoding (block_tq1_0 in quant/quant.h, the layout in tq1_0.c): a
 * byte q holds trits t_0..t_4 as a base-3 fraction; v_l = q * 3^l (u8
 * wrapping multiply, one `mul` by a constant vector) brings trit l to the
 * top and t_l = (3 v_l) >> 8, i.e. 0 below 86, 1 below 171, else 2. Two
 * compares give the weight t - 1 in {-1, 0, 1} directly as a signed byte:
 *   (v < 86 ? -1 : 0) - (v >= 171 ? -1 : 0)
 * so no bsums correction is needed. Per block 16 code vectors of 16 bytes:
 *   qs[0..15], qs[16..31]  times 3^l, l = 0..4  -> elements 32l + 0..31
 *   qs[32..47]             times 3^l, l = 0..4  -> elements 160 + 16l + 0..15
 *   qh[0..3] x 4 (dup)     times {1,3,9,27}     -> elements 240 + 4l + m
 * The decode (13 multiplies, 3 ops per vector) is done once per block and
 * shared by the nt tokens of a gemm tile; with one token the integer dot
 * runs as two chains (even / odd vectors), summed at the block's end.
 *
 * Dynamic instructions per 256-weight block (qemu-aarch64 -d in_asm,exec,
 * gcc 12 -O2, 48 - 16 rows x 2048 difference): matvec SDOT 127, baseline
 * 134; gemm (4-token tiles) SDOT 61, baseline 79 per block and token. The
 * decode is the floor: ~5 ops per 16 weights (multiply, 2 compares, sub,
 * dot) against ~2 for TQ2_0 (shift/and, dot).
 *
 * Integer dot per block: SDOT into int32x4, or (baseline) smlal/smlal2 into
 * int16x8 (per lane 32 products |(t-1) y| <= 128 per block: |sum| <= 4096,
 * exact) widened by one saddlp. Each block's integer dot is exact; the
 * four lanes are converted and fused into a float accumulator with the
 * scale d_w * d_a (formed in float as the _ref does), so only the float
 * summation order differs from _ref.
 */
#ifndef TB_NEON_TERNARY_H
#define TB_NEON_TERNARY_H

#include "kernels/neon_common.h"

/* The signed weights t - 1 of the 16 bytes v (trit at the top of each). */
TB_INLINE int8x16_t nv_tq1_decode(uint8x16_t v, uint8x16_t c86, uint8x16_t c171) {
    return vsubq_s8(vreinterpretq_s8_u8(vcltq_u8(v, c86)), vreinterpretq_s8_u8(vcgeq_u8(v, c171)));
}

/* Accumulator steps: acc += dot(c, y) over 16 lanes (c in {-1, 0, 1} for
 * TQ1_0, {0, 1, 2} for TQ2_0: per int16 lane of the baseline 32 products
 * of at most 256 per block, |sum| <= 8192); WIDEN sums the two chains. */
#define NV_TER_ZERO_BASE() vdupq_n_s16(0)
#define NV_TER_STEP_BASE(acc, c, y) vmlal_high_s8(vmlal_s8(acc, vget_low_s8(c), vget_low_s8(y)), c, y)
#define NV_TER_WIDEN_BASE(a0, a1) vpadalq_s16(vpaddlq_s16(a0), a1)
#define NV_TER_ZERO_SDOT() vdupq_n_s32(0)
#define NV_TER_STEP_SDOT(acc, c, y) vdotq_s32(acc, c, y)
#define NV_TER_WIDEN_SDOT(a0, a1) vaddq_s32(a0, a1)

/* NV_TQ1_BODY(sfx, ACC_T, ZERO, STEP, WIDEN, ATTR) defines
 * nv_dot_tq1_0_<sfx>(nt, n, s, w, a): s[t] = row w (n / 256 TQ1_0 blocks)
 * . a[t] (Q8_K) for t < nt <= TB_NEON_NT. Each token has its own integer
 * and float accumulators and sees the same operations in the same order
 * whatever nt is. */
#define NV_TQ1_BODY(sfx, ACC_T, ZERO, STEP, WIDEN, ATTR)                                          \
    ATTR TB_INLINE void nv_dot_tq1_0_##sfx(int nt, int64_t n, float *s, const void *w,            \
                                           const void *const *a) {                                \
        const block_tq1_0 *x = w;   /* (n / 256) blocks */                                        \
        const uint8x16_t c86 = vdupq_n_u8(86), c171 = vdupq_n_u8(171);                            \
        const uint8x16_t p3 = vdupq_n_u8(3), p9 = vdupq_n_u8(9), p27 = vdupq_n_u8(27),            \
                         p81 = vdupq_n_u8(81);                                                    \
        const uint8x16_t ph = {1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27};               \
        float32x4_t acc[TB_NEON_NT];                                                              \
        TB_NEON_UNROLL                                                                            \
        for (int t = 0; t < nt; t++) acc[t] = vdupq_n_f32(0);                                     \
        for (int64_t i = 0; i < n / QK_K; i++) {                                                  \
            const block_q8_K *y[TB_NEON_NT];                                                      \
            ACC_T p[TB_NEON_NT][2];   /* one token: even / odd k (two chains) */                  \
            TB_NEON_UNROLL                                                                        \
            for (int t = 0; t < nt; t++)                                                          \
                y[t] = (const block_q8_K *)a[t] + i, p[t][0] = ZERO(), p[t][1] = ZERO();          \
            const uint8x16_t q0 = vld1q_u8(x[i].qs), q1 = vld1q_u8(x[i].qs + 16);                 \
            const uint8x16_t q2 = vld1q_u8(x[i].qs + 32);                                         \
            uint32_t qh;                                                                          \
            memcpy(&qh, x[i].qh, 4);                                                              \
            const uint8x16_t h = vmulq_u8(vreinterpretq_u8_u32(vdupq_n_u32(qh)), ph);             \
            /* (codes, activation offset) pairs in element order */                               \
            const uint8x16_t v[16] = {q0, q1,                                                     \
                                      vmulq_u8(q0, p3), vmulq_u8(q1, p3),                         \
                                      vmulq_u8(q0, p9), vmulq_u8(q1, p9),                         \
                                      vmulq_u8(q0, p27), vmulq_u8(q1, p27),                       \
                                      vmulq_u8(q0, p81), vmulq_u8(q1, p81),                       \
                                      q2, vmulq_u8(q2, p3), vmulq_u8(q2, p9),                     \
                                      vmulq_u8(q2, p27), vmulq_u8(q2, p81), h};                   \
            _Pragma("GCC unroll 16")   /* v[] stays in registers */                               \
            for (int k = 0; k < 16; k++) {                                                        \
                const int8x16_t c = nv_tq1_decode(v[k], c86, c171);                               \
                TB_NEON_UNROLL                                                                    \
                for (int t = 0; t < nt; t++)                                                      \
                    p[t][nt == 1 && k & 1] = STEP(p[t][nt == 1 && k & 1], c, vld1q_s8(y[t]->qs + 16 * k)); \
            }                                                                                     \
            const float dx = tb_neon_h2f(x[i].d);                                                 \
            TB_NEON_UNROLL                                                                        \
            for (int t = 0; t < nt; t++)                                                          \
                acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(WIDEN(p[t][0], p[t][1])), dx * y[t]->d); \
        }                                                                                         \
        TB_NEON_UNROLL                                                                            \
        for (int t = 0; t < nt; t++) s[t] = vaddvq_f32(acc[t]);                                   \
    }

/* ---------------------------------------------------------------------- */
/* TQ2_0 x Q8_K                                                             */
/* ---------------------------------------------------------------------- */

/* Codes (q >> 2l) & 3 of the 16 bytes q (l a constant after unrolling). */
TB_INLINE int8x16_t nv_tq2_codes(uint8x16_t q, int l, uint8x16_t m3) {
    switch (l) {
    case 0: return vreinterpretq_s8_u8(vandq_u8(q, m3));
    case 1: return vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(q, 2), m3));
    case 2: return vreinterpretq_s8_u8(vandq_u8(vshrq_n_u8(q, 4), m3));
    default: return vreinterpretq_s8_u8(vshrq_n_u8(q, 6));
    }
}

/* NV_TQ2_BODY: as NV_TQ1_BODY for TQ2_0. Codes q in {0, 1, 2} pass as the
 * signed operand, dot(q - 1, y) = dot(q, y) - sum(bsums). Vector k of 16
 * codes (activation bytes 16k..16k+15) is qs[32h + 16c ..] >> 2l with
 * k = 8h + 2l + c (the layout in quant.h). */
#define NV_TQ2_BODY(sfx, ACC_T, ZERO, STEP, WIDEN, ATTR)                                          \
    ATTR TB_INLINE void nv_dot_tq2_0_##sfx(int nt, int64_t n, float *s, const void *w,            \
                                           const void *const *a) {                                \
        const block_tq2_0 *x = w;   /* (n / 256) blocks */                                        \
        const uint8x16_t m3 = vdupq_n_u8(3);                                                      \
        float32x4_t acc[TB_NEON_NT];                                                              \
        TB_NEON_UNROLL                                                                            \
        for (int t = 0; t < nt; t++) acc[t] = vdupq_n_f32(0);                                     \
        for (int64_t i = 0; i < n / QK_K; i++) {                                                  \
            const block_q8_K *y[TB_NEON_NT];                                                      \
            ACC_T p[TB_NEON_NT][2];   /* one token: even / odd k (two chains) */                  \
            TB_NEON_UNROLL                                                                        \
            for (int t = 0; t < nt; t++)                                                          \
                y[t] = (const block_q8_K *)a[t] + i, p[t][0] = ZERO(), p[t][1] = ZERO();          \
            const uint8x16_t q[4] = {vld1q_u8(x[i].qs), vld1q_u8(x[i].qs + 16),                   \
                                     vld1q_u8(x[i].qs + 32), vld1q_u8(x[i].qs + 48)};             \
            _Pragma("GCC unroll 16")                                                              \
            for (int k = 0; k < 16; k++) {                                                        \
                const int8x16_t c = nv_tq2_codes(q[2 * (k >> 3) + (k & 1)], (k >> 1) & 3, m3);    \
                TB_NEON_UNROLL                                                                    \
                for (int t = 0; t < nt; t++)                                                      \
                    p[t][nt == 1 && k & 1] = STEP(p[t][nt == 1 && k & 1], c, vld1q_s8(y[t]->qs + 16 * k)); \
            }                                                                                     \
            const float dx = tb_neon_h2f(x[i].d);                                                 \
            TB_NEON_UNROLL                                                                        \
            for (int t = 0; t < nt; t++) {                                                        \
                const int16x8_t bs = vaddq_s16(vld1q_s16(y[t]->bsums), vld1q_s16(y[t]->bsums + 8)); \
                const int32x4_t d = vsubq_s32(WIDEN(p[t][0], p[t][1]), vpaddlq_s16(bs));          \
                acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(d), dx * y[t]->d);                     \
            }                                                                                     \
        }                                                                                         \
        TB_NEON_UNROLL                                                                            \
        for (int t = 0; t < nt; t++) s[t] = vaddvq_f32(acc[t]);                                   \
    }

/* Bodies and kernels (nv_vec_dot/nv_matvec/nv_gemm_tq{1,2}_0_<sfx>) of
 * both variants; ATTR_SDOT is the +dotprod target attribute. */
#define NV_TERNARY_VARIANTS(ATTR_SDOT)                                                            \
    NV_TQ1_BODY(base, int16x8_t, NV_TER_ZERO_BASE, NV_TER_STEP_BASE, NV_TER_WIDEN_BASE, )         \
    NV_TQ1_BODY(sdot, int32x4_t, NV_TER_ZERO_SDOT, NV_TER_STEP_SDOT, NV_TER_WIDEN_SDOT, ATTR_SDOT) \
    NV_TQ2_BODY(base, int16x8_t, NV_TER_ZERO_BASE, NV_TER_STEP_BASE, NV_TER_WIDEN_BASE, )         \
    NV_TQ2_BODY(sdot, int32x4_t, NV_TER_ZERO_SDOT, NV_TER_STEP_SDOT, NV_TER_WIDEN_SDOT, ATTR_SDOT) \
    TB_NEON_KERNELS(tq1_0_base, nv_dot_tq1_0_base, )                                              \
    TB_NEON_KERNELS(tq1_0_sdot, nv_dot_tq1_0_sdot, ATTR_SDOT)                                     \
    TB_NEON_KERNELS(tq2_0_base, nv_dot_tq2_0_base, )                                              \
    TB_NEON_KERNELS(tq2_0_sdot, nv_dot_tq2_0_sdot, ATTR_SDOT)

#endif
