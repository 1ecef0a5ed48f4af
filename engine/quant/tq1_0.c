/*
 * tq1_0.c — TQ1_0: 256 ternary weights at 1.6875 bits (54 bytes),
 * w = (t - 1) * d with trits t in {0, 1, 2}.
 *
 * Packing (ggml order). A byte holding trits t0..t4 (t0 most significant)
 * stores ceil(v * 256 / 243) where v = t0*81 + t1*27 + t2*9 + t3*3 + t4:
 * a fixed-point fraction v / 243 of a byte, so trit n is read back as
 * ((uint8_t)(byte * 3^n) * 3) >> 8 (multiplying by 3^n shifts trit n to
 * the top, the uint8 wrap drops the trits above it).
 *   qs[0..31]  : trit n of qs[m] is element 32n + m        (elements 0..159)
 *   qs[32..47] : trit n of qs[32 + m] is 160 + 16n + m    (elements 160..239)
 *   qh[0..3]   : 4 trits (t0..t3, then a zero trit t4);
 *                trit n of qh[m] is element 240 + 4n + m  (elements 240..255)
 */
#include "quant/quant.h"
#include "quant/ternary.h"

#include <math.h>

static const uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};

/* Trit n (0..4, most significant first) of a packed byte. */
static inline int trit_get(uint8_t byte, int n) {
    const uint8_t q = (uint8_t)(byte * pow3[n]);
    return ((uint16_t)q * 3) >> 8;
}

/* Byte position and trit index of element e (0..255), per the table above. */
static inline void tq1_where(int e, int *is_qh, int *byte, int *n) {
    if (e < 160) { *is_qh = 0; *byte = e % 32; *n = e / 32; }
    else if (e < 240) { *is_qh = 0; *byte = 32 + (e - 160) % 16; *n = (e - 160) / 16; }
    else { *is_qh = 1; *byte = (e - 240) % 4; *n = (e - 240) / 4; }
}

/* Unpack the 256 trits (0..2) of a block in element order into t (256). */
static void tq1_unpack(const block_tq1_0 *b, uint8_t *t) {
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 32; m++) t[32 * n + m] = (uint8_t)trit_get(b->qs[m], n);
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 16; m++) t[160 + 16 * n + m] = (uint8_t)trit_get(b->qs[32 + m], n);
    for (int n = 0; n < 4; n++)
        for (int m = 0; m < 4; m++) t[240 + 4 * n + m] = (uint8_t)trit_get(b->qh[m], n);
}

/* Pack 5 trits (t[0] most significant) into one byte. */
static inline uint8_t trit_pack(const int t[5]) {
    int v = 0;
    for (int k = 0; k < 5; k++) v = v * 3 + t[k];
    return (uint8_t)((v * 256 + 242) / 243);
}

/* ggml's reference: d = max|x| per block, trit = round(x / d) + 1 (half
 * away from zero); inputs of the form t * d are stored exactly. */
void tb_quantize_row_tq1_0_ref(const float *x, void *vy, int64_t n) {
    block_tq1_0 *y = vy;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * QK_K;   // (256)
        const float d = tb_absmax(xb, QK_K), id = d ? 1.0f / d : 0.0f;
        y[i].d = tb_fp32_to_fp16(d);

        int t[QK_K / 5 + 1][5];   /* trits per storage byte: 48 qs + 4 qh */
        memset(t, 0, sizeof t);
        for (int e = 0; e < QK_K; e++) {
            int is_qh, byte, k;
            tq1_where(e, &is_qh, &byte, &k);
            t[is_qh ? 48 + byte : byte][k] = (int)lroundf(xb[e] * id) + 1;
        }
        for (int b = 0; b < 48; b++) y[i].qs[b] = trit_pack(t[b]);
        for (int b = 0; b < 4; b++) y[i].qh[b] = trit_pack(t[48 + b]);
    }
}

void tb_dequantize_row_tq1_0_ref(const void *vx, float *y, int64_t n) {
    const block_tq1_0 *x = vx;   // (n / 256) blocks
    const int64_t nb = n / QK_K;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t t[QK_K];   // (256) trits
        tq1_unpack(&x[i], t);
        tb_ternary_dequant(t, tb_fp16_to_fp32(x[i].d), y + i * QK_K);
    }
}

/* s += d_w * d_a * (sum_e t_e * a_e - sum of bsums), exact in int32 per block. */
void tb_vec_dot_tq1_0_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const block_tq1_0 *w = vw;   // (n / 256) blocks
    const block_q8_K *a = va;    // (n / 256) blocks
    const int64_t nb = n / QK_K;
    float sum = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t t[QK_K];   // (256) trits
        tq1_unpack(&w[i], t);
        sum += (float)tb_ternary_dot(t, &a[i]) * (tb_fp16_to_fp32(w[i].d) * a[i].d);
    }
    *s = sum;
}
