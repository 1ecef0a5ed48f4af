/*
 * ternary.h — what TQ1_0 and TQ2_0 share once a block is unpacked to its
 * 256 codes t in {0, 1, 2} (w = (t - 1) * d): dequantization and the exact
 * integer dot with a Q8_K block (internal to quant/).
 */
#ifndef TB_QUANT_TERNARY_H
#define TB_QUANT_TERNARY_H

#include "quant/quant.h"
#include "quant/rounding.h"

/* y[e] = (t[e] - 1) * d for the 256 codes of one block. */
static inline void tb_ternary_dequant(const uint8_t *t, float d, float *y) {
    for (int e = 0; e < QK_K; e++) y[e] = (float)(t[e] - 1) * d;
}

/* sum_e (t[e] - 1) * a->qs[e] of one block, exact in int32: the bsums
 * carry the -1 (sum_e t_e a_e - sum of bsums). */
static inline int32_t tb_ternary_dot(const uint8_t *t, const block_q8_K *a) {
    int32_t sumi = 0, suma = 0;
    for (int e = 0; e < QK_K; e++) sumi += t[e] * (int32_t)a->qs[e];
    for (int g = 0; g < QK_K / 16; g++) suma += a->bsums[g];
    return sumi - suma;
}

#endif
