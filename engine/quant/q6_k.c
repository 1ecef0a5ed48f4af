/*
 * q6_k.c — Q6_K: super-blocks of 256 weights in 16 sub-blocks of 16, each
 * with an int8 scale, times one fp16 d (210 bytes): w = d * sc * (q - 32),
 * q a 6-bit code. Per 128-element half h (ql += 64h, qh += 32h), for l < 32:
 *   element l      : low nibble of ql[l],      bits 0..1 of qh[l]
 *   element l + 32 : low nibble of ql[l + 32], bits 2..3 of qh[l]
 *   element l + 64 : high nibble of ql[l],     bits 4..5 of qh[l]
 *   element l + 96 : high nibble of ql[l + 32], bits 6..7 of qh[l]
 * Sub-block of element e is e / 16. llama.cpp writes output heads in Q6_K.
 */
#include "quant/quant.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

#include <math.h>

/* Unpack the 256 6-bit codes of a block, minus 32, in element order:
 * q (256) receives values in -32..31. */
static void q6_unpack(const block_q6_K *b, int8_t *q) {
    for (int h = 0; h < QK_K / 128; h++) {
        const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
        int8_t *qo = q + 128 * h;   // (128)
        for (int l = 0; l < 32; l++) {
            qo[l] = (int8_t)(((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32);
            qo[l + 32] = (int8_t)(((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32);
            qo[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            qo[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

/* Per sub-block of 16: symmetric search (weights x^2) for a signed scale;
 * the scales are then stored as int8 relative to d = m / -128 where m is
 * the scale of largest magnitude, and the 6-bit codes recomputed against
 * the stored scales. A block whose scales are all ~0 is stored as zeros. */
void tb_quantize_row_q6_K_ref(const float *x, void *vy, int64_t n) {
    block_q6_K *y = vy;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK_K;   // (256)
        uint8_t L[QK_K];                  // (256) biased codes 0..63
        float scales[QK_K / 16];          // (16) sub-block scales, unquantized
        float max_scale = 0.0f, max_abs = 0.0f;
        for (int j = 0; j < QK_K / 16; j++) {
            scales[j] = tb_search_scale_sym(16, 32, xb + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > max_abs) { max_abs = fabsf(scales[j]); max_scale = scales[j]; }
        }
        memset(&y[i], 0, sizeof y[i]);
        if (max_abs < 1e-15f) continue;

        const float iscale = -128.0f / max_scale;
        y[i].d = tb_fp32_to_fp16(1.0f / iscale);
        for (int j = 0; j < QK_K / 16; j++) {
            int s = tb_nearest_int(iscale * scales[j]);
            y[i].scales[j] = (int8_t)(s > 127 ? 127 : s);
        }
        const float d = tb_fp16_to_fp32(y[i].d);
        for (int j = 0; j < QK_K / 16; j++) {
            const float ds = d * y[i].scales[j];
            if (!ds) continue;
            for (int l = 0; l < 16; l++) {
                int q = tb_nearest_int(xb[16 * j + l] / ds);
                q = q < -32 ? -32 : q > 31 ? 31 : q;
                L[16 * j + l] = (uint8_t)(q + 32);
            }
        }
        for (int h = 0; h < QK_K / 128; h++) {
            const uint8_t *Lh = L + 128 * h;   // (128)
            uint8_t *ql = y[i].ql + 64 * h, *qh = y[i].qh + 32 * h;
            for (int l = 0; l < 32; l++) {
                ql[l] = (uint8_t)((Lh[l] & 0x0f) | ((Lh[l + 64] & 0x0f) << 4));
                ql[l + 32] = (uint8_t)((Lh[l + 32] & 0x0f) | ((Lh[l + 96] & 0x0f) << 4));
                qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                  ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
            }
        }
    }
}

void tb_dequantize_row_q6_K_ref(const void *vx, float *y, int64_t n) {
    const block_q6_K *x = vx;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        int8_t q[QK_K];   // (256) codes - 32
        q6_unpack(&x[i], q);
        const float d = tb_fp16_to_fp32(x[i].d);
        for (int e = 0; e < QK_K; e++) y[i * QK_K + e] = d * (float)x[i].scales[e / 16] * (float)q[e];
    }
}

/* Per super-block: sumi = sum_j sc_j * sum_{l in j} (q_l - 32) * a_l in
 * int32; s += d_w * d_a * sumi. */
void tb_vec_dot_q6_K_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q6_K *w = vw;   // (n / 256) blocks
    const block_q8_K *a = va;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int8_t q[QK_K];   // (256) codes - 32
        q6_unpack(&w[i], q);
        int32_t sumi = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            int32_t dot = 0;
            for (int l = 0; l < 16; l++) dot += q[16 * j + l] * (int32_t)a[i].qs[16 * j + l];
            sumi += w[i].scales[j] * dot;
        }
        sum += tb_fp16_to_fp32(w[i].d) * a[i].d * (float)sumi;
    }
    *s = sum;
}
