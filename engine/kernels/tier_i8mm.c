/*
 * tier_i8mm.c — aarch64 SMMLA (FEAT_I8MM) gemm kernels for prefill: Q8_0
 * and Q4_0 x Q8_0, TQ2_0 x Q8_K. The i8mm tier sits above dotprod
 * (dispatch.c adds it when HWCAP2_I8MM is set) and sets only these three
 * gemm entries: vec_dot, matvec and the rest are dotprod's.
 *
 * SMMLA multiplies a 2x8 by an 8x2 int8 tile into a 2x2 int32 tile: two
 * weight rows (one 8-byte half of a register each) against two tokens.
 * Its sums are exact integers, so each (row, token) gets the very block
 * sums or lane partial sums that the SDOT body (neon_int.h,
 * neon_ternary.h) forms, and they then go through the same float steps in
 * the same order: gemm here equals dotprod's matvec bit for bit per row,
 * which keeps prefill rows equal to decode steps.
 *  - Q8_0 / Q4_0: per block, 4 SMMLA over its 32 bytes give the 2x2 block
 *    sums; four blocks' tiles are transposed into one int32x4 per
 *    (row, token) holding blocks i..i+3, as SDOT's two addp leave them.
 *  - TQ2_0: SDOT's 4 lanes each sum bytes 4j..4j+3 of every 16-byte code
 *    vector, and each lane is converted to float on its own; so the SMMLA
 *    operands are regrouped (zip of 32-bit lanes of vectors k, k + 1) to
 *    keep lane j's bytes together, one accumulator tile per lane.
 * Rows and tokens left over from the 2x2 tiles go through the SDOT body
 * itself (instantiated here).
 *
 * Whether SMMLA pays depends on the core (some run it no faster than two
 * SDOT), so dispatch.c times both gemms once per format (tb_i8mm_calibrate)
 * and keeps dotprod's where it is faster.
 *
 * Compiled with -march=armv8.2-a+dotprod+i8mm (kernels/meson.build).
 */
#include "kernels/kernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "kernels/neon_int.h"
#include "kernels/neon_ternary.h"

#define DOT16_SDOT(acc, x, y) vdotq_s32(acc, x, y)

NV_INT_BODY(q8_0, sdot, DOT16_SDOT, )
NV_INT_BODY(q4_0, sdot, DOT16_SDOT, )
NV_TQ2_BODY(sdot, int32x4_t, NV_TER_ZERO_SDOT, NV_TER_STEP_SDOT, NV_TER_WIDEN_SDOT, )

/* The low / high 8 bytes of a and b as one register (a's in the low half). */
TB_INLINE int8x16_t mm_lo(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}
TB_INLINE int8x16_t mm_hi(int8x16_t a, int8x16_t b) {
    return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

/* m[0..3] each [r0t0, r0t1, r1t0, r1t1] -> o[2r + t] = {m[0][2r+t], ..., m[3][2r+t]}. */
TB_INLINE void mm_transpose(const int32x4_t m[4], int32x4_t o[4]) {
    const int32x4_t a = vtrn1q_s32(m[0], m[1]), b = vtrn2q_s32(m[0], m[1]);
    const int32x4_t c = vtrn1q_s32(m[2], m[3]), d = vtrn2q_s32(m[2], m[3]);
#define Z1(x, y) vreinterpretq_s32_s64(vzip1q_s64(vreinterpretq_s64_s32(x), vreinterpretq_s64_s32(y)))
#define Z2(x, y) vreinterpretq_s32_s64(vzip2q_s64(vreinterpretq_s64_s32(x), vreinterpretq_s64_s32(y)))
    o[0] = Z1(a, c);
    o[1] = Z1(b, d);
    o[2] = Z2(a, c);
    o[3] = Z2(b, d);
#undef Z1
#undef Z2
}

/* ---------------------------------------------------------------------- */
/* Q8_0 / Q4_0: two rows x two tokens                                       */
/* ---------------------------------------------------------------------- */

/* MM_INT_BODY(fmt): mm_dot_<fmt>(nb, s, x, y, dy): s[2r + t] = row x[r]
 * (nb blocks) . y[t], r, t < 2, with dy[t] the prepared scales or NULL;
 * the same float steps as nv_dot_<fmt>_sdot (neon_int.h). */
#define MM_INT_BODY(fmt)                                                                          \
    TB_INLINE void mm_dot_##fmt(int64_t nb, float *s, const block_##fmt *const *x,               \
                                const block_q8_0 *const *y, const float *const *dy) {            \
        float32x4_t acc[4];                                                                       \
        float tail[4];                                                                            \
        for (int k = 0; k < 4; k++) acc[k] = vdupq_n_f32(0), tail[k] = 0.0f;                      \
        int64_t i = 0;                                                                            \
        for (; i + 4 <= nb; i += 4) {                                                             \
            int32x4_t m[4];                                                                       \
            TB_NEON_UNROLL                                                                        \
            for (int b = 0; b < 4; b++) {                                                         \
                int8x16_t l0, h0, l1, h1;                                                         \
                nv_unpack_##fmt(&x[0][i + b], &l0, &h0);                                          \
                nv_unpack_##fmt(&x[1][i + b], &l1, &h1);                                          \
                const int8x16_t al0 = vld1q_s8(y[0][i + b].qs), ah0 = vld1q_s8(y[0][i + b].qs + 16); \
                const int8x16_t al1 = vld1q_s8(y[1][i + b].qs), ah1 = vld1q_s8(y[1][i + b].qs + 16); \
                int32x4_t v = vmmlaq_s32(vdupq_n_s32(0), mm_lo(l0, l1), mm_lo(al0, al1));         \
                v = vmmlaq_s32(v, mm_hi(l0, l1), mm_hi(al0, al1));                                \
                v = vmmlaq_s32(v, mm_lo(h0, h1), mm_lo(ah0, ah1));                                \
                m[b] = vmmlaq_s32(v, mm_hi(h0, h1), mm_hi(ah0, ah1));                             \
            }                                                                                     \
            int32x4_t sb[4];                                                                      \
            mm_transpose(m, sb);                                                                  \
            const float32x4_t dw[2] = {tb_neon_h2f4(&x[0][i].d, &x[0][i + 1].d, &x[0][i + 2].d, &x[0][i + 3].d), \
                                       tb_neon_h2f4(&x[1][i].d, &x[1][i + 1].d, &x[1][i + 2].d, &x[1][i + 3].d)}; \
            const float32x4_t da[2] = {dy ? vld1q_f32(dy[0] + i) : nv_scales4(y[0], i),          \
                                       dy ? vld1q_f32(dy[1] + i) : nv_scales4(y[1], i)};         \
            TB_NEON_UNROLL                                                                        \
            for (int k = 0; k < 4; k++)                                                           \
                acc[k] = vfmaq_f32(acc[k], vcvtq_f32_s32(nv_fix4_##fmt(sb[k])),                   \
                                   vmulq_f32(dw[k >> 1], da[k & 1]));                             \
        }                                                                                         \
        for (; i < nb; i++) {                                                                     \
            int8x16_t l0, h0, l1, h1;                                                             \
            nv_unpack_##fmt(&x[0][i], &l0, &h0);                                                  \
            nv_unpack_##fmt(&x[1][i], &l1, &h1);                                                  \
            const int8x16_t al0 = vld1q_s8(y[0][i].qs), ah0 = vld1q_s8(y[0][i].qs + 16);          \
            const int8x16_t al1 = vld1q_s8(y[1][i].qs), ah1 = vld1q_s8(y[1][i].qs + 16);          \
            int32x4_t v = vmmlaq_s32(vdupq_n_s32(0), mm_lo(l0, l1), mm_lo(al0, al1));             \
            v = vmmlaq_s32(v, mm_hi(l0, l1), mm_hi(al0, al1));                                    \
            v = vmmlaq_s32(v, mm_lo(h0, h1), mm_lo(ah0, ah1));                                    \
            v = vmmlaq_s32(v, mm_hi(h0, h1), mm_hi(ah0, ah1));                                    \
            int32_t p[4];                                                                         \
            vst1q_s32(p, v);                                                                      \
            const float dw[2] = {tb_neon_h2f(x[0][i].d), tb_neon_h2f(x[1][i].d)};                 \
            const float da[2] = {dy ? dy[0][i] : tb_neon_h2f(y[0][i].d),                          \
                                 dy ? dy[1][i] : tb_neon_h2f(y[1][i].d)};                         \
            for (int k = 0; k < 4; k++)                                                           \
                tail[k] += (float)nv_fix1_##fmt(p[k]) * (dw[k >> 1] * da[k & 1]);                 \
        }                                                                                         \
        for (int k = 0; k < 4; k++) s[k] = vaddvq_f32(acc[k]) + tail[k];                          \
    }

MM_INT_BODY(q8_0)
MM_INT_BODY(q4_0)

/* gemm: row chunks (as nv_gemm: ~TB_NEON_ROW_CHUNK bytes stay in cache)
 * x token pairs (scales prepared once per chunk and pair) x row pairs;
 * a last odd token or row through the SDOT body. */
#define MM_INT_GEMM(fmt)                                                                          \
    static void mm_gemm_##fmt(const void *W, size_t ws, const void *A, size_t as, int64_t nt,    \
                              float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {         \
        const int64_t nb = n / QK8_0;                                                             \
        const bool prep = nb <= TB_NEON_PREP_MAX;                                                 \
        const int64_t rc = ws >= TB_NEON_ROW_CHUNK / 4 ? 4 : TB_NEON_ROW_CHUNK / (int64_t)ws / 2 * 2; \
        float dbuf[2][prep && nb ? nb : 1];                                                       \
        for (int64_t c0 = r0; c0 < r1; c0 += rc) {                                                \
            const int64_t c1 = c0 + rc < r1 ? c0 + rc : r1;                                       \
            for (int64_t t = 0; t < nt; t += 2) {                                                 \
                const int ntk = nt - t < 2 ? 1 : 2;                                               \
                const block_q8_0 *y[2];                                                           \
                const float *dy[2] = {dbuf[0], dbuf[1]};                                          \
                for (int k = 0; k < ntk; k++) {                                                   \
                    y[k] = (const void *)((const uint8_t *)A + (size_t)(t + k) * as);             \
                    if (prep) nv_prep_scales(y[k], nb, dbuf[k]);                                  \
                }                                                                                 \
                int64_t r = c0;                                                                   \
                if (ntk == 2)                                                                     \
                    for (; r + 2 <= c1; r += 2) {                                                 \
                        const block_##fmt *x[2] = {(const void *)((const uint8_t *)W + (size_t)r * ws), \
                                                   (const void *)((const uint8_t *)W + (size_t)(r + 1) * ws)}; \
                        float o[4];                                                               \
                        mm_dot_##fmt(nb, o, x, y, prep ? dy : NULL);                              \
                        Y[t * ldy + r] = o[0];                                                    \
                        Y[(t + 1) * ldy + r] = o[1];                                              \
                        Y[t * ldy + r + 1] = o[2];                                                \
                        Y[(t + 1) * ldy + r + 1] = o[3];                                          \
                    }                                                                             \
                for (; r < c1; r++) {                                                             \
                    const block_##fmt *x[1] = {(const void *)((const uint8_t *)W + (size_t)r * ws)}; \
                    for (int k = 0; k < ntk; k++)                                                 \
                        nv_dot_##fmt##_sdot(1, 1, nb, &Y[(t + k) * ldy + r], x, &y[k], prep ? &dy[k] : NULL); \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

MM_INT_GEMM(q8_0)
MM_INT_GEMM(q4_0)

/* ---------------------------------------------------------------------- */
/* TQ2_0 x Q8_K: two rows x two tokens                                      */
/* ---------------------------------------------------------------------- */

/* Lane j (0..3) of the code vectors u, v (4 bytes each) as 8 bytes, for
 * two rows / tokens: z[j] = {a.u_j, a.v_j, b.u_j, b.v_j}. */
TB_INLINE void mm_lanes(int8x16_t au, int8x16_t av, int8x16_t bu, int8x16_t bv, int8x16_t z[4]) {
    const int8x16_t a01 = vreinterpretq_s8_s32(vzip1q_s32(vreinterpretq_s32_s8(au), vreinterpretq_s32_s8(av)));
    const int8x16_t a23 = vreinterpretq_s8_s32(vzip2q_s32(vreinterpretq_s32_s8(au), vreinterpretq_s32_s8(av)));
    const int8x16_t b01 = vreinterpretq_s8_s32(vzip1q_s32(vreinterpretq_s32_s8(bu), vreinterpretq_s32_s8(bv)));
    const int8x16_t b23 = vreinterpretq_s8_s32(vzip2q_s32(vreinterpretq_s32_s8(bu), vreinterpretq_s32_s8(bv)));
    z[0] = mm_lo(a01, b01);
    z[1] = mm_hi(a01, b01);
    z[2] = mm_lo(a23, b23);
    z[3] = mm_hi(a23, b23);
}

/* s[2r + t] = row w[r] (n / 256 blocks) . a[t] (Q8_K), r, t < 2; the
 * same float steps as nv_dot_tq2_0_sdot (neon_ternary.h): per block the
 * lane sums minus the bsums pairs, converted per lane and fused with
 * dx * d. */
TB_INLINE void mm_dot_tq2_0(int64_t n, float *s, const block_tq2_0 *const *w, const block_q8_K *const *a) {
    const uint8x16_t m3 = vdupq_n_u8(3);
    float32x4_t acc[4];
    for (int k = 0; k < 4; k++) acc[k] = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / QK_K; i++) {
        const block_tq2_0 *x0 = &w[0][i], *x1 = &w[1][i];
        const block_q8_K *y0 = &a[0][i], *y1 = &a[1][i];
        const uint8x16_t q0[4] = {vld1q_u8(x0->qs), vld1q_u8(x0->qs + 16), vld1q_u8(x0->qs + 32),
                                  vld1q_u8(x0->qs + 48)};
        const uint8x16_t q1[4] = {vld1q_u8(x1->qs), vld1q_u8(x1->qs + 16), vld1q_u8(x1->qs + 32),
                                  vld1q_u8(x1->qs + 48)};
        int32x4_t m[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
        _Pragma("GCC unroll 8")
        for (int k = 0; k < 16; k += 2) {
            int8x16_t wz[4], yz[4];
            mm_lanes(nv_tq2_codes(q0[2 * (k >> 3)], (k >> 1) & 3, m3),
                     nv_tq2_codes(q0[2 * (k >> 3) + 1], (k >> 1) & 3, m3),
                     nv_tq2_codes(q1[2 * (k >> 3)], (k >> 1) & 3, m3),
                     nv_tq2_codes(q1[2 * (k >> 3) + 1], (k >> 1) & 3, m3), wz);
            mm_lanes(vld1q_s8(y0->qs + 16 * k), vld1q_s8(y0->qs + 16 * k + 16), vld1q_s8(y1->qs + 16 * k),
                     vld1q_s8(y1->qs + 16 * k + 16), yz);
            for (int j = 0; j < 4; j++) m[j] = vmmlaq_s32(m[j], wz[j], yz[j]);
        }
        int32x4_t p[4];
        mm_transpose(m, p);
        const float dx[2] = {tb_neon_h2f(x0->d), tb_neon_h2f(x1->d)};
        const block_q8_K *yt[2] = {y0, y1};
        int32x4_t bs[2];
        for (int t = 0; t < 2; t++)
            bs[t] = vpaddlq_s16(vaddq_s16(vld1q_s16(yt[t]->bsums), vld1q_s16(yt[t]->bsums + 8)));
        for (int k = 0; k < 4; k++)
            acc[k] = vfmaq_n_f32(acc[k], vcvtq_f32_s32(vsubq_s32(p[k], bs[k & 1])), dx[k >> 1] * yt[k & 1]->d);
    }
    for (int k = 0; k < 4; k++) s[k] = vaddvq_f32(acc[k]);
}

/* gemm: token pairs x row pairs; a last odd token or row through the SDOT
 * body. */
static void mm_gemm_tq2_0(const void *W, size_t ws, const void *A, size_t as, int64_t nt, float *Y,
                          int64_t ldy, int64_t r0, int64_t r1, int64_t n) {
    const int64_t rc = ws >= TB_NEON_ROW_CHUNK / 4 ? 4 : TB_NEON_ROW_CHUNK / (int64_t)ws / 2 * 2;
    for (int64_t c0 = r0; c0 < r1; c0 += rc) {
        const int64_t c1 = c0 + rc < r1 ? c0 + rc : r1;
        for (int64_t t = 0; t < nt; t += 2) {
            const int ntk = nt - t < 2 ? 1 : 2;
            const block_q8_K *y[2];
            for (int k = 0; k < ntk; k++) y[k] = (const void *)((const uint8_t *)A + (size_t)(t + k) * as);
            int64_t r = c0;
            if (ntk == 2)
                for (; r + 2 <= c1; r += 2) {
                    const block_tq2_0 *x[2] = {(const void *)((const uint8_t *)W + (size_t)r * ws),
                                               (const void *)((const uint8_t *)W + (size_t)(r + 1) * ws)};
                    float o[4];
                    mm_dot_tq2_0(n, o, x, y);
                    Y[t * ldy + r] = o[0];
                    Y[(t + 1) * ldy + r] = o[1];
                    Y[t * ldy + r + 1] = o[2];
                    Y[(t + 1) * ldy + r + 1] = o[3];
                }
            for (; r < c1; r++) {
                const void *wr = (const uint8_t *)W + (size_t)r * ws;
                for (int k = 0; k < ntk; k++) {
                    const void *ak[1] = {y[k]};
                    nv_dot_tq2_0_sdot(1, n, &Y[(t + k) * ldy + r], wr, ak);
                }
            }
        }
    }
}

void tb_kernels_fill_i8mm(tb_kernels_t *k) {
    k->features = "neon,dotprod,i8mm";
    k->t[TB_TYPE_Q8_0].gemm = mm_gemm_q8_0;
    k->t[TB_TYPE_Q4_0].gemm = mm_gemm_q4_0;
    k->t[TB_TYPE_TQ2_0].gemm = mm_gemm_tq2_0;
}
#endif
