/*
 * q8_0.c — Q8_0: blocks of 32 int8 weights with one fp16 scale (34 bytes),
 * w = q * d. Also the activation format paired with Q8_0 and Q4_0 weights.
 */
#include "quant/quant.h"
#include "quant/rounding.h"

#include <math.h>

/* d = max|x| / 127 per block, q = round(x / d) (ties to even): q in -127..127.
 * An all-zero block stores d = 0 and q = 0. n must be a multiple of 32. */
void tb_quantize_row_q8_0_ref(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;   // (n / 32) blocks
    const int64_t nb = n / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK8_0;   // (32)
        const float d = tb_absmax(xb, QK8_0) / 127.0f;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = tb_fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) y[i].qs[j] = (int8_t)tb_nearest_int(xb[j] * id);
    }
}

void tb_dequantize_row_q8_0_ref(const void *vx, float *y, int64_t n) {
    const block_q8_0 *x = vx;   // (n / 32) blocks
    const int64_t nb = n / QK8_0;
    for (int64_t i = 0; i < nb; i++) {
        const float d = tb_fp16_to_fp32(x[i].d);
        for (int j = 0; j < QK8_0; j++) y[i * QK8_0 + j] = (float)x[i].qs[j] * d;
    }
}

/* s = sum over blocks of (sum_j qw_j * qa_j) * d_w * d_a; the inner sum is
 * exact in int32, the outer one in float, in block order. */
void tb_vec_dot_q8_0_q8_0_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q8_0 *w = vw;   // (n / 32) blocks
    const block_q8_0 *a = va;   // (n / 32) blocks
    const int64_t nb = n / QK8_0;
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int32_t sumi = 0;
        for (int j = 0; j < QK8_0; j++) sumi += (int32_t)w[i].qs[j] * (int32_t)a[i].qs[j];
        sum += (float)sumi * (tb_fp16_to_fp32(w[i].d) * tb_fp16_to_fp32(a[i].d));
    }
    *s = sum;
}
