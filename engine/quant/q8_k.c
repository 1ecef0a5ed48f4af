/*
 * q8_k.c — Q8_K: the activation format of the K and ternary formats.
 * 256 int8 values, one float scale, and the sum of each 16 consecutive
 * values (bsums) so dot products can fold per-block offsets (Q4_K mins,
 * the -1 of ternary codes) into one multiply per 16 elements.
 */
#include "quant/quant.h"
#include "quant/rounding.h"

#include <math.h>

/* ggml's convention: m = the signed value of largest magnitude, iscale =
 * -127 / m, q = min(127, round(iscale * x)), d = 1 / iscale (so d < 0 when
 * m > 0 and m itself maps to -127). All-zero blocks get d = 0, q = 0. */
void tb_quantize_row_q8_K_ref(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK_K;   // (256)
        const float max = tb_absmax_signed(xb, QK_K);
        if (max == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            int v = tb_nearest_int(iscale * xb[j]);
            y[i].qs[j] = (int8_t)(v > 127 ? 127 : v);
        }
        for (int g = 0; g < QK_K / 16; g++) {
            int sum = 0;
            for (int k = 0; k < 16; k++) sum += y[i].qs[g * 16 + k];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

void tb_dequantize_row_q8_K_ref(const void *vx, float *y, int64_t n) {
    const block_q8_K *x = vx;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++)
        for (int j = 0; j < QK_K; j++) y[i * QK_K + j] = x[i].d * (float)x[i].qs[j];
}
