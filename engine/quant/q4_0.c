/*
 * q4_0.c — Q4_0: blocks of 32 weights as 4-bit codes with one fp16 scale
 * (18 bytes), w = (q - 8) * d. Byte j holds element j in its low nibble and
 * element j + 16 in its high nibble. Dot product against Q8_0 activations.
 */
#include "quant/quant.h"
#include "quant/rounding.h"

#include <math.h>

/* ggml's reference: m = the signed value of largest magnitude, d = m / -8,
 * q = min(15, trunc(x / d + 8.5)) — so m itself maps to code 0 (= -8 * d)
 * and the opposite side reaches +7 * d. An all-zero block stores d = 0. */
void tb_quantize_row_q4_0_ref(const float *x, void *vy, int64_t n) {
    block_q4_0 *y = vy;   // (n / 32) blocks
    const int64_t nb = n / QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK4_0;   // (32)
        const float d = tb_absmax_signed(xb, QK4_0) / -8.0f;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = tb_fp32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            /* x*id lies in [-8, 8] so the sum is in [0.5, 16.5]: safe to truncate */
            int q0 = (int)(xb[j] * id + 8.5f);
            int q1 = (int)(xb[j + QK4_0 / 2] * id + 8.5f);
            if (q0 > 15) q0 = 15;
            if (q1 > 15) q1 = 15;
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void tb_dequantize_row_q4_0_ref(const void *vx, float *y, int64_t n) {
    const block_q4_0 *x = vx;   // (n / 32) blocks
    const int64_t nb = n / QK4_0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = tb_fp16_to_fp32(x[i].d);
        float *yb = y + i * QK4_0;   // (32)
        for (int j = 0; j < QK4_0 / 2; j++) {
            yb[j] = (float)((x[i].qs[j] & 0x0f) - 8) * d;
            yb[j + QK4_0 / 2] = (float)((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

/* s = sum over blocks of (sum_j (q_j - 8) * a_j) * d_w * d_a, inner sum in int32. */
void tb_vec_dot_q4_0_q8_0_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_0 *w = vw;   // (n / 32) blocks
    const block_q8_0 *a = va;   // (n / 32) blocks
    const int64_t nb = n / QK4_0;
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int32_t sumi = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            sumi += ((w[i].qs[j] & 0x0f) - 8) * (int32_t)a[i].qs[j];
            sumi += ((w[i].qs[j] >> 4) - 8) * (int32_t)a[i].qs[j + QK4_0 / 2];
        }
        sum += (float)sumi * (tb_fp16_to_fp32(w[i].d) * tb_fp16_to_fp32(a[i].d));
    }
    *s = sum;
}
