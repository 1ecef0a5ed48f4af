/*
 * neon_int.h — Q8_0 and Q4_0 weights x Q8_0 activations (NEON), baseline
 * (smull + sadalp) and SDOT (+dotprod) variants from one body macro.
 *
 * Included by tier_neon.c after neon_common.h (see its determinism
 * contract). Per pass: TB_NEON_NR weight rows against one token (matvec:
 * the activation block is loaded once for both rows) or one row against
 * TB_NEON_NT tokens (gemm: the weight block is unpacked once for all). Four blocks are
 * reduced together: their four int32x4 partial dots fold with two addp
 * into one vector holding the four exact block sums, which is converted and
 * multiplied by the four products d_w * d_a (formed in float, as the _ref
 * does) into a per-token float32x4 accumulator: one fmla per four blocks.
 * The n / 32 % 4 tail blocks go through a scalar accumulator in block
 * order. Each block's integer dot is exact; only the float summation order
 * differs from _ref.
 *
 * Activation scales are converted to float once per call (matvec) or per
 * token tile (gemm) into a stack buffer and read as float32x4; rows longer
 * than TB_NEON_PREP_MAX blocks convert them per group instead (the same
 * exact values: results do not change).
 */
#ifndef TB_NEON_INT_H
#define TB_NEON_INT_H

#include "kernels/neon_common.h"

#define TB_NEON_PREP_MAX 2048   /* blocks per token with prepared scales (64 Ki elements) */
#define TB_NEON_ROW_CHUNK 32768 /* gemm: weight bytes per row chunk (stays in L1/L2 across tiles) */
#ifndef TB_NEON_NR
#define TB_NEON_NR 2            /* matvec: weight rows per pass (one activation load for both) */
#endif

/* ---------------------------------------------------------------------- */
/* Activation scales                                                        */
/* ---------------------------------------------------------------------- */

/* Scales of blocks i..i+3 of y as floats. */
TB_INLINE float32x4_t nv_scales4(const block_q8_0 *y, int64_t i) {
    return tb_neon_h2f4(&y[i].d, &y[i + 1].d, &y[i + 2].d, &y[i + 3].d);
}

/* out[i] = d of block i of y, i < nb. */
static inline void nv_prep_scales(const block_q8_0 *y, int64_t nb, float *out) {
    int64_t i = 0;
    for (; i + 4 <= nb; i += 4) vst1q_f32(out + i, nv_scales4(y, i));
    for (; i < nb; i++) out[i] = tb_neon_h2f(y[i].d);
}

/* ---------------------------------------------------------------------- */
/* Unpack one weight block into two int8x16 (elements 0..15, 16..31)        */
/* ---------------------------------------------------------------------- */

TB_INLINE void nv_unpack_q8_0(const block_q8_0 *x, int8x16_t *lo, int8x16_t *hi) {
    *lo = vld1q_s8(x->qs);
    *hi = vld1q_s8(x->qs + 16);
}
/* Q8_0 sums are the true dots. */
TB_INLINE int32x4_t nv_fix4_q8_0(int32x4_t v) { return v; }
TB_INLINE int32_t nv_fix1_q8_0(int32_t v) { return v; }

/* Q4_0 codes q (0..15) are unpacked as 16 * (q - 8) in three operations:
 * b ^ 0x88 flips bit 3 of both nibbles, so a nibble read as the top four
 * bits of a signed byte is q - 8; the low nibble is moved there with a
 * shift, the high one is masked in place. The dots are then 16 times the
 * true ones (|16 (q - 8)| <= 128, products fit the 16-bit smull lanes) and
 * exact multiples of 16: an arithmetic shift by 4 restores them exactly. */
TB_INLINE void nv_unpack_q4_0(const block_q4_0 *x, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t b = veorq_u8(vld1q_u8(x->qs), vdupq_n_u8(0x88));
    *lo = vreinterpretq_s8_u8(vshlq_n_u8(b, 4));
    *hi = vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(0xF0)));
}
TB_INLINE int32x4_t nv_fix4_q4_0(int32x4_t v) { return vshrq_n_s32(v, 4); }
TB_INLINE int32_t nv_fix1_q4_0(int32_t v) { return v >> 4; }

/* ---------------------------------------------------------------------- */
/* Body and kernels, per weight format and dot instruction                  */
/* ---------------------------------------------------------------------- */

/* NV_INT_BODY(fmt, sfx, DOT16, ATTR) defines nv_dot_<fmt>_<sfx>(nr, nt,
 * nb, s, x, y, dy): s[r * TB_NEON_NT + t] = row x[r] (nb blocks of
 * block_<fmt>) . y[t] (Q8_0) for r < nr <= TB_NEON_NR, t < nt, with dy[t]
 * the prepared float scales of y[t], or dy == NULL. Each activation block
 * is loaded once for the nr rows; each (row, token) pair sees the same
 * operations in the same order whatever nr and nt are. */
#define NV_INT_BODY(fmt, sfx, DOT16, ATTR)                                                        \
    ATTR TB_INLINE void nv_dot_##fmt##_##sfx(int nr, int nt, int64_t nb, float *s,                \
                                             const block_##fmt *const *x,                         \
                                             const block_q8_0 *const *y, const float *const *dy) { \
        float32x4_t acc[TB_NEON_NR][TB_NEON_NT];                                                  \
        float tail[TB_NEON_NR][TB_NEON_NT];                                                       \
        TB_NEON_UNROLL                                                                            \
        for (int r = 0; r < nr; r++)                                                              \
            TB_NEON_UNROLL                                                                        \
            for (int t = 0; t < nt; t++) acc[r][t] = vdupq_n_f32(0), tail[r][t] = 0.0f;           \
        int64_t i = 0;                                                                            \
        for (; i + 4 <= nb; i += 4) {                                                             \
            int8x16_t wl[TB_NEON_NR][4], wh[TB_NEON_NR][4];                                       \
            float32x4_t dw[TB_NEON_NR];                                                           \
            TB_NEON_UNROLL                                                                        \
            for (int r = 0; r < nr; r++) {                                                        \
                const block_##fmt *xr = x[r] + i;                                                 \
                TB_NEON_UNROLL                                                                    \
                for (int b = 0; b < 4; b++) nv_unpack_##fmt(&xr[b], &wl[r][b], &wh[r][b]);       \
                dw[r] = tb_neon_h2f4(&xr[0].d, &xr[1].d, &xr[2].d, &xr[3].d);                    \
            }                                                                                     \
            TB_NEON_UNROLL                                                                        \
            for (int t = 0; t < nt; t++) {                                                        \
                const block_q8_0 *yt = y[t] + i;                                                  \
                int32x4_t p[TB_NEON_NR][4];                                                       \
                TB_NEON_UNROLL                                                                    \
                for (int b = 0; b < 4; b++) {                                                     \
                    const int8x16_t al = vld1q_s8(yt[b].qs), ah = vld1q_s8(yt[b].qs + 16);        \
                    TB_NEON_UNROLL                                                                \
                    for (int r = 0; r < nr; r++)                                                  \
                        p[r][b] = DOT16(DOT16(vdupq_n_s32(0), wl[r][b], al), wh[r][b], ah);       \
                }                                                                                 \
                const float32x4_t da = dy ? vld1q_f32(dy[t] + i) : nv_scales4(y[t], i);           \
                TB_NEON_UNROLL                                                                    \
                for (int r = 0; r < nr; r++) {                                                    \
                    const int32x4_t sb = nv_fix4_##fmt(                                          \
                        vpaddq_s32(vpaddq_s32(p[r][0], p[r][1]), vpaddq_s32(p[r][2], p[r][3])));  \
                    acc[r][t] = vfmaq_f32(acc[r][t], vcvtq_f32_s32(sb), vmulq_f32(dw[r], da));    \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        for (; i < nb; i++) {                                                                     \
            TB_NEON_UNROLL                                                                        \
            for (int r = 0; r < nr; r++) {                                                        \
                int8x16_t wl, wh;                                                                 \
                nv_unpack_##fmt(&x[r][i], &wl, &wh);                                              \
                const float dw = tb_neon_h2f(x[r][i].d);                                          \
                TB_NEON_UNROLL                                                                    \
                for (int t = 0; t < nt; t++) {                                                    \
                    int32x4_t p = DOT16(DOT16(vdupq_n_s32(0), wl, vld1q_s8(y[t][i].qs)), wh,      \
                                        vld1q_s8(y[t][i].qs + 16));                               \
                    const float da = dy ? dy[t][i] : tb_neon_h2f(y[t][i].d);                      \
                    tail[r][t] += (float)nv_fix1_##fmt(vaddvq_s32(p)) * (dw * da);                \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
        TB_NEON_UNROLL                                                                            \
        for (int r = 0; r < nr; r++)                                                              \
            TB_NEON_UNROLL                                                                        \
            for (int t = 0; t < nt; t++) s[r * TB_NEON_NT + t] = vaddvq_f32(acc[r][t]) + tail[r][t]; \
    }

/* The wrappers: vec_dot, matvec (one prepared activation; TB_NEON_NR rows
 * per pass) and gemm (row chunks of ~TB_NEON_ROW_CHUNK bytes x token tiles
 * of TB_NEON_NT, the tile's scales prepared once per chunk). */
#define NV_INT_KERNELS(fmt, sfx, ATTR)                                                            \
    ATTR static void nv_vec_dot_##fmt##_##sfx(int64_t n, float *s, const void *w, const void *a) { \
        const block_q8_0 *y[1] = {a};                                                             \
        const block_##fmt *x[1] = {w};                                                            \
        nv_dot_##fmt##_##sfx(1, 1, n / QK8_0, s, x, y, NULL);                                     \
    }                                                                                             \
    ATTR static void nv_matvec_##fmt##_##sfx(const void *W, size_t ws, const void *a, float *yv, \
                                             int64_t r0, int64_t r1, int64_t n) {                 \
        const int64_t nb = n / QK8_0;                                                             \
        const bool prep = nb <= TB_NEON_PREP_MAX;                                                 \
        const block_q8_0 *y[1] = {a};                                                             \
        float d0[prep && nb ? nb : 1];                                                            \
        const float *dy[1] = {d0};                                                                \
        if (prep) nv_prep_scales(a, nb, d0);                                                      \
        int64_t r = r0;                                                                           \
        for (; r + TB_NEON_NR <= r1; r += TB_NEON_NR) {                                           \
            const block_##fmt *x[TB_NEON_NR];                                                     \
            float o[TB_NEON_NR * TB_NEON_NT];                                                     \
            for (int k = 0; k < TB_NEON_NR; k++) x[k] = (const void *)((const uint8_t *)W + (size_t)(r + k) * ws); \
            if (prep) nv_dot_##fmt##_##sfx(TB_NEON_NR, 1, nb, o, x, y, dy);                       \
            else nv_dot_##fmt##_##sfx(TB_NEON_NR, 1, nb, o, x, y, NULL);                          \
            for (int k = 0; k < TB_NEON_NR; k++) yv[r + k] = o[k * TB_NEON_NT];                   \
        }                                                                                         \
        for (; r < r1; r++) {                                                                     \
            const block_##fmt *x[1] = {(const void *)((const uint8_t *)W + (size_t)r * ws)};      \
            if (prep) nv_dot_##fmt##_##sfx(1, 1, nb, &yv[r], x, y, dy);                           \
            else nv_dot_##fmt##_##sfx(1, 1, nb, &yv[r], x, y, NULL);                              \
        }                                                                                         \
    }                                                                                             \
    ATTR static void nv_gemm_##fmt##_##sfx(const void *W, size_t ws, const void *A, size_t as,    \
                                           int64_t nt, float *Y, int64_t ldy, int64_t r0,         \
                                           int64_t r1, int64_t n) {                               \
        const int64_t nb = n / QK8_0;                                                             \
        const bool prep = nb <= TB_NEON_PREP_MAX;                                                 \
        const int64_t rc = ws >= TB_NEON_ROW_CHUNK / 4 ? 4 : TB_NEON_ROW_CHUNK / (int64_t)ws;     \
        float dbuf[TB_NEON_NT][prep && nb ? nb : 1];                                              \
        for (int64_t c0 = r0; c0 < r1; c0 += rc) {                                                \
            const int64_t c1 = c0 + rc < r1 ? c0 + rc : r1;                                       \
            for (int64_t t = 0; t < nt; t += TB_NEON_NT) {                                        \
                const int ntk = (int)(nt - t < TB_NEON_NT ? nt - t : TB_NEON_NT);                 \
                const block_q8_0 *y[TB_NEON_NT];                                                  \
                const float *dy[TB_NEON_NT];                                                      \
                for (int k = 0; k < ntk; k++) {                                                   \
                    y[k] = (const void *)((const uint8_t *)A + (size_t)(t + k) * as);             \
                    dy[k] = dbuf[k];                                                              \
                    if (prep) nv_prep_scales(y[k], nb, dbuf[k]);                                  \
                }                                                                                 \
                for (int64_t r = c0; r < c1; r++) {                                               \
                    const block_##fmt *x[1] = {(const void *)((const uint8_t *)W + (size_t)r * ws)}; \
                    float o[TB_NEON_NT];                                                          \
                    if (prep && ntk == TB_NEON_NT) nv_dot_##fmt##_##sfx(1, TB_NEON_NT, nb, o, x, y, dy); \
                    else if (prep) for (int k = 0; k < ntk; k++)                                  \
                        nv_dot_##fmt##_##sfx(1, 1, nb, &o[k], x, &y[k], &dy[k]);                  \
                    else for (int k = 0; k < ntk; k++)                                            \
                        nv_dot_##fmt##_##sfx(1, 1, nb, &o[k], x, &y[k], NULL);                    \
                    for (int k = 0; k < ntk; k++) Y[(t + k) * ldy + r] = o[k];                    \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

#define NV_INT_VARIANT(sfx, DOT16, ATTR)     \
    NV_INT_BODY(q8_0, sfx, DOT16, ATTR)     \
    NV_INT_BODY(q4_0, sfx, DOT16, ATTR)     \
    NV_INT_KERNELS(q8_0, sfx, ATTR)         \
    NV_INT_KERNELS(q4_0, sfx, ATTR)

#endif
