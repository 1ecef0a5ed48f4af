/*
 * generic_kquant.h — portable Q4_K and Q6_K x Q8_K dot products for the
 * generic tier (included by tier_generic.c only; baseline ISA, the
 * compiler vectorises the fixed-trip inner loops).
 *
 * Same arithmetic as the _ref (exact int32 dot per block, the per-block
 * float combination in the same order) without its per-element branches
 * and unpack buffers, so results equal _ref's up to nothing or rounding.
 */
#ifndef TB_GENERIC_KQUANT_H
#define TB_GENERIC_KQUANT_H

#include "kernels/kquant_scales.h"

/* s = W row (n / 256 Q4_K blocks) · a (Q8_K). */
static void dot_q4_K(int64_t n, float *s, const void *w, const void *a) {
    const block_q4_K *x = w;   // (n / 256) blocks
    const block_q8_K *y = a;   // (n / 256) blocks
    float acc = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sm[16];   /* sc_0..7, m_0..7 */
        tb_q4_K_unpack_scales(x[i].scales, sm);
        int32_t sumi = 0, summ = 0;
        for (int k = 0; k < 4; k++) {
            const uint8_t *q = x[i].qs + 32 * k;     // (32) sub-blocks 2k (low), 2k+1 (high)
            const int8_t *ya = y[i].qs + 64 * k;     // (64)
            int32_t lo = 0, hi = 0;
            for (int l = 0; l < 32; l++) {
                lo += (q[l] & 0x0F) * ya[l];
                hi += (q[l] >> 4) * ya[l + 32];
            }
            sumi += sm[2 * k] * lo + sm[2 * k + 1] * hi;
        }
        for (int j = 0; j < 8; j++) summ += sm[8 + j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        const float da = y[i].d;
        acc += da * tb_fp16_to_fp32(x[i].d) * (float)sumi - da * tb_fp16_to_fp32(x[i].dmin) * (float)summ;
    }
    *s = acc;
}

/* s = W row (n / 256 Q6_K blocks) · a (Q8_K). Per half h and 16-element
 * column c, quarter m holds sub-block 8h + 2m + c (layout: q6_k.c). */
static void dot_q6_K(int64_t n, float *s, const void *w, const void *a) {
    const block_q6_K *x = w;   // (n / 256) blocks
    const block_q8_K *y = a;   // (n / 256) blocks
    float acc = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t sumi = 0;
        for (int h = 0; h < 2; h++)
            for (int c = 0; c < 2; c++) {
                const uint8_t *ql = x[i].ql + 64 * h + 16 * c;   // (16) and (16) at +32
                const uint8_t *qh = x[i].qh + 32 * h + 16 * c;   // (16)
                const int8_t *ya = y[i].qs + 128 * h + 16 * c;   // (4, 32) used 16 of each
                int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0;
                for (int r = 0; r < 16; r++) {
                    d0 += (((ql[r] & 0x0F) | ((qh[r] & 3) << 4)) - 32) * ya[r];
                    d1 += (((ql[r + 32] & 0x0F) | (((qh[r] >> 2) & 3) << 4)) - 32) * ya[r + 32];
                    d2 += (((ql[r] >> 4) | (((qh[r] >> 4) & 3) << 4)) - 32) * ya[r + 64];
                    d3 += (((ql[r + 32] >> 4) | ((qh[r] >> 6) << 4)) - 32) * ya[r + 96];
                }
                const int8_t *sc = x[i].scales + 8 * h + c;
                sumi += sc[0] * d0 + sc[2] * d1 + sc[4] * d2 + sc[6] * d3;
            }
        acc += tb_fp16_to_fp32(x[i].d) * y[i].d * (float)sumi;
    }
    *s = acc;
}

#endif
