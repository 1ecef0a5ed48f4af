/*
 * q4_k.c — Q4_K: super-blocks of 256 weights in 8 sub-blocks of 32, each
 * with a 6-bit scale and a 6-bit min, themselves scaled by the fp16 d and
 * dmin of the super-block (144 bytes): w = d * sc_j * q - dmin * m_j.
 * Layout and scale packing: see block_q4_K and tb_q4_K_scale_min (quant.h).
 */
#include "quant/quant.h"
#include "quant/rounding.h"
#include "quant/scale_search.h"

#include <math.h>

/* ===================================================================== */
/* Scale packing                                                          */
/* ===================================================================== */

/* Store 6-bit (sc, m) of sub-block j the way tb_q4_K_scale_min reads them:
 * j < 4: low 6 bits of bytes j and j+4; j >= 4: the low/high nibbles of
 * byte j+4, and the top 2 bits of each in the spare bits 6..7 of bytes
 * j-4 (scale) and j (min). `q` must start zeroed. */
static void put_scale_min(int j, uint8_t *q, int sc, int m) {
    if (j < 4) {
        q[j] |= (uint8_t)sc;
        q[j + 4] |= (uint8_t)m;
    } else {
        q[j + 4] = (uint8_t)((sc & 0x0f) | ((m & 0x0f) << 4));
        q[j - 4] |= (uint8_t)((sc >> 4) << 6);
        q[j] |= (uint8_t)((m >> 4) << 6);
    }
}

/* ===================================================================== */
/* Quantize / dequantize                                                  */
/* ===================================================================== */

/* Per sub-block: weights |x| + rms(x) (favour large values), asymmetric
 * least-squares search for (scale, min); then d = max scale / 63 and
 * dmin = max min / 63, 6-bit codes by rounding, and the 4-bit codes
 * recomputed against the scales as actually stored. */
void tb_quantize_row_q4_K_ref(const float *x, void *vy, int64_t n) {
    block_q4_K *y = vy;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK_K;   // (256)
        uint8_t L[QK_K];                  // (256) 4-bit codes
        uint8_t aux[32];                  // (32) search scratch
        float w[32];                      // (32) search weights of one sub-block
        float scales[QK_K / 32];          // (8) sub-block scales, unquantized
        float mins[QK_K / 32];            // (8) sub-block mins, unquantized
        float max_scale = 0.0f, max_min = 0.0f;
        for (int j = 0; j < QK_K / 32; j++) {
            const float *xs = xb + 32 * j;   // (32)
            float sum_x2 = 0.0f;
            for (int l = 0; l < 32; l++) sum_x2 += xs[l] * xs[l];
            const float av = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++) w[l] = av + fabsf(xs[l]);
            scales[j] = tb_search_scale_min(32, 15, xs, w, L + 32 * j, &mins[j], aux,
                                            -1.0f, 0.1f, 20);
            max_scale = fmaxf(max_scale, scales[j]);
            max_min = fmaxf(max_min, mins[j]);
        }
        const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
        const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        memset(y[i].scales, 0, sizeof y[i].scales);
        for (int j = 0; j < QK_K / 32; j++) {
            int ls = tb_nearest_int(inv_scale * scales[j]);
            int lm = tb_nearest_int(inv_min * mins[j]);
            ls = ls < 0 ? 0 : ls > 63 ? 63 : ls;   /* 6 bits; a (rare) negative */
            lm = lm < 0 ? 0 : lm > 63 ? 63 : lm;   /* fit must not spill bits   */
            put_scale_min(j, y[i].scales, ls, lm);
        }
        y[i].d = tb_fp32_to_fp16(max_scale / 63.0f);
        y[i].dmin = tb_fp32_to_fp16(max_min / 63.0f);

        /* recompute the codes against the stored (rounded) scales */
        const float d = tb_fp16_to_fp32(y[i].d), dmin = tb_fp16_to_fp32(y[i].dmin);
        for (int j = 0; j < QK_K / 32; j++) {
            uint8_t sc, m;
            tb_q4_K_scale_min(j, y[i].scales, &sc, &m);
            const float ds = d * sc;
            if (!ds) continue;   /* keep the search's codes: they multiply 0 */
            const float dm = dmin * m;
            for (int l = 0; l < 32; l++) {
                int q = tb_nearest_int((xb[32 * j + l] + dm) / ds);
                L[32 * j + l] = (uint8_t)(q < 0 ? 0 : q > 15 ? 15 : q);
            }
        }
        /* 64 weights per 32 bytes: sub-block 2k low nibbles, 2k+1 high */
        for (int k = 0; k < QK_K / 64; k++)
            for (int l = 0; l < 32; l++)
                y[i].qs[32 * k + l] = (uint8_t)(L[64 * k + l] | (L[64 * k + 32 + l] << 4));
    }
}

void tb_dequantize_row_q4_K_ref(const void *vx, float *y, int64_t n) {
    const block_q4_K *x = vx;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float d = tb_fp16_to_fp32(x[i].d), dmin = tb_fp16_to_fp32(x[i].dmin);
        float *yb = y + i * QK_K;   // (256)
        for (int k = 0; k < QK_K / 64; k++) {
            uint8_t sc0, m0, sc1, m1;
            tb_q4_K_scale_min(2 * k, x[i].scales, &sc0, &m0);
            tb_q4_K_scale_min(2 * k + 1, x[i].scales, &sc1, &m1);
            const float d0 = d * sc0, o0 = dmin * m0, d1 = d * sc1, o1 = dmin * m1;
            const uint8_t *q = x[i].qs + 32 * k;   // (32)
            for (int l = 0; l < 32; l++) {
                yb[64 * k + l] = d0 * (q[l] & 0x0f) - o0;
                yb[64 * k + 32 + l] = d1 * (q[l] >> 4) - o1;
            }
        }
    }
}

/* ===================================================================== */
/* Dot product with Q8_K                                                  */
/* ===================================================================== */

/* Per super-block: sumi = sum_j sc_j * sum_{l in j} q_l * a_l (int32) and
 * summ = sum_j m_j * (bsums of j's two 16-groups) (int32);
 * s += d_a * d * sumi - d_a * dmin * summ. */
void tb_vec_dot_q4_K_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_q4_K *w = vw;   // (n / 256) blocks
    const block_q8_K *a = va;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        int32_t sumi = 0, summ = 0;
        for (int j = 0; j < QK_K / 32; j++) {
            uint8_t sc, m;
            tb_q4_K_scale_min(j, w[i].scales, &sc, &m);
            const uint8_t *q = w[i].qs + 32 * (j / 2);   // (32)
            const int8_t *qa = a[i].qs + 32 * j;         // (32)
            const int shift = (j & 1) * 4;
            int32_t dot = 0;
            for (int l = 0; l < 32; l++) dot += ((q[l] >> shift) & 0x0f) * (int32_t)qa[l];
            sumi += sc * dot;
            summ += m * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
        }
        const float da = a[i].d;
        sum += da * tb_fp16_to_fp32(w[i].d) * (float)sumi
             - da * tb_fp16_to_fp32(w[i].dmin) * (float)summ;
    }
    *s = sum;
}
