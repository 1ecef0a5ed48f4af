/*
 * tier_generic.c — portable C kernels, written so the compiler vectorises
 * the inner loops with the baseline ISA only (never -march=native: this TU
 * is part of the plain engine sources).
 *
 * Each dot product computes every block's integer dot exactly (like _ref)
 * and accumulates blocks in order, so results match _ref up to the order
 * of float rounding inside a block's scale product. gemm is matvec per
 * token, so rows are bit-identical between the two.
 */
#include "kernels/kernels.h"
#include "kernels/generic_kquant.h"

/* ---------------------------------------------------------------------- */
/* Dot products                                                             */
/* ---------------------------------------------------------------------- */

static void dot_q8_0(int64_t n, float *s, const void *w, const void *a) {
    const block_q8_0 *x = w, *y = a;
    float acc = 0;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        int32_t sum = 0;
        for (int j = 0; j < QK8_0; j++) sum += x[i].qs[j] * y[i].qs[j];
        acc += (float)sum * (tb_fp16_to_fp32(x[i].d) * tb_fp16_to_fp32(y[i].d));
    }
    *s = acc;
}

static void dot_q4_0(int64_t n, float *s, const void *w, const void *a) {
    const block_q4_0 *x = w;
    const block_q8_0 *y = a;
    float acc = 0;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        int32_t sum = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            sum += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
            sum += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + QK4_0 / 2];
        }
        acc += (float)sum * (tb_fp16_to_fp32(x[i].d) * tb_fp16_to_fp32(y[i].d));
    }
    *s = acc;
}

static void dot_tq2_0(int64_t n, float *s, const void *w, const void *a) {
    const block_tq2_0 *x = w;
    const block_q8_K *y = a;
    float acc = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t sum = 0;
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++)
                    sum += ((x[i].qs[32 * h + m] >> (2 * l)) & 3) * y[i].qs[128 * h + 32 * l + m];
        for (int j = 0; j < QK_K / 16; j++) sum -= y[i].bsums[j];   /* codes are q + 1 */
        acc += (float)sum * (tb_fp16_to_fp32(x[i].d) * y[i].d);
    }
    *s = acc;
}

static void dot_f32(int64_t n, float *s, const void *w, const void *a) {
    const float *x = w, *y = a;
    float part[8] = {0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) part[k] += x[j + k] * y[j + k];
    float acc = 0;
    for (int k = 0; k < 8; k++) acc += part[k];
    for (; j < n; j++) acc += x[j] * y[j];
    *s = acc;
}

/* ---------------------------------------------------------------------- */
/* matvec / gemm over a dot product                                         */
/* ---------------------------------------------------------------------- */

#define GEN_KERNELS(fmt) TB_KERNELS_FROM_DOT(fmt, dot_##fmt)

GEN_KERNELS(q8_0)
GEN_KERNELS(q4_0)
GEN_KERNELS(tq2_0)
GEN_KERNELS(f32)
GEN_KERNELS(q4_K)
GEN_KERNELS(q6_K)

#define SET(wt, fmt)                          \
    do {                                      \
        k->t[wt].vec_dot = dot_##fmt;         \
        k->t[wt].matvec = matvec_##fmt;       \
        k->t[wt].gemm = gemm_##fmt;           \
    } while (0)

uint64_t tb_read_sum_generic(const void *p, size_t n) {
    const uint64_t *v = p;
    uint64_t s[8] = {0};
    for (size_t i = 0; i < n / 8; i += 8)
        for (int k = 0; k < 8; k++) s[k] += v[i + k];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

void tb_kernels_fill_generic(tb_kernels_t *k) {
    k->features = "";
    SET(TB_TYPE_Q8_0, q8_0);
    SET(TB_TYPE_Q4_0, q4_0);
    SET(TB_TYPE_TQ2_0, tq2_0);
    SET(TB_TYPE_F32, f32);
    SET(TB_TYPE_Q4_K, q4_K);
    SET(TB_TYPE_Q6_K, q6_K);
    k->read_sum = tb_read_sum_generic;
}
