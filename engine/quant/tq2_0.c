/*
 * tq2_0.c — TQ2_0: 256 ternary weights as 2-bit codes q in {0, 1, 2} with
 * one fp16 scale (66 bytes): w = (q - 1) * d. Per 128-element half h,
 * element 128h + 32k + m (k = 0..3, m = 0..31) is bits 2k..2k+1 of
 * qs[32h + m].
 */
#include "quant/quant.h"
#include "quant/ternary.h"

#include <math.h>

/* Unpack the 256 codes (0..2) of a block in element order into q (256). */
static void tq2_unpack(const block_tq2_0 *b, uint8_t *q) {
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int m = 0; m < 32; m++) q[128 * h + 32 * k + m] = (b->qs[32 * h + m] >> (2 * k)) & 3;
}

/* ggml's reference: d = max|x| per block, trit = round(x / d) (half away
 * from zero), so inputs already of the form t * d (t in -1..1) are exact. */
void tb_quantize_row_tq2_0_ref(const float *x, void *vy, int64_t n) {
    block_tq2_0 *y = vy;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK_K;   // (256)
        const float d = tb_absmax(xb, QK_K), id = d ? 1.0f / d : 0.0f;
        y[i].d = tb_fp32_to_fp16(d);
        for (int h = 0; h < 2; h++)
            for (int m = 0; m < 32; m++) {
                uint8_t byte = 0;
                for (int k = 0; k < 4; k++) {
                    const int q = (int)lroundf(xb[128 * h + 32 * k + m] * id) + 1;   /* 0, 1, 2 */
                    byte |= (uint8_t)(q << (2 * k));
                }
                y[i].qs[32 * h + m] = byte;
            }
    }
}

void tb_dequantize_row_tq2_0_ref(const void *vx, float *y, int64_t n) {
    const block_tq2_0 *x = vx;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t q[QK_K];   // (256) codes
        tq2_unpack(&x[i], q);
        tb_ternary_dequant(q, tb_fp16_to_fp32(x[i].d), y + i * QK_K);
    }
}

/* s += d_w * d_a * (sum_e q_e * a_e - sum of bsums), i.e. sum (q - 1) * a,
 * exact in int32 per block. */
void tb_vec_dot_tq2_0_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_tq2_0 *w = vw;   // (n / 256) blocks
    const block_q8_K *a = va;    // (n / 256) blocks
    const int64_t nb = n / QK_K;
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t q[QK_K];   // (256) codes
        tq2_unpack(&w[i], q);
        sum += (float)tb_ternary_dot(q, &a[i]) * (tb_fp16_to_fp32(w[i].d) * a[i].d);
    }
    *s = sum;
}
