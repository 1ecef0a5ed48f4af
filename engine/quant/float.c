/*
 * float.c — the float formats F32, F16 (IEEE binary16) and BF16, their
 * scalar converters, and their dot products against F32 activations.
 *
 * Conversions round to nearest, ties to even; infinities stay infinite,
 * NaNs stay NaN (quieted, sign and top payload bits kept) and subnormals
 * are produced and read exactly (no flush to zero).
 */
#include "quant/quant.h"

/* ===================================================================== */
/* Bit casts                                                              */
/* ===================================================================== */

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ===================================================================== */
/* binary16                                                               */
/* ===================================================================== */

/* tb_fp16_to_fp32 is inline in quant.h. */

/* Narrow a float to binary16, round to nearest even. Values whose rounding
 * reaches 65520 or more become infinity; magnitudes at or below 2^-25 become
 * zero; in between they land on the subnormal grid of 2^-24. */
tb_fp16_t tb_fp32_to_fp16(float f) {
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) {                                   /* NaN: keep it quiet */
        return (tb_fp16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
    }
    if (u >= 0x477ff000u) return (tb_fp16_t)(sign | 0x7c00u); /* >= 65520: inf */
    if (u < 0x38800000u) {                                   /* below 2^-14: subnormal */
        if (u <= 0x33000000u) return sign;                   /* <= 2^-25: tie to 0 */
        uint32_t e = u >> 23;                                /* 102..112 */
        uint32_t man = (u & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e;                            /* 14..24 */
        uint32_t q = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;     /* may carry into the normal range: fine */
        return (tb_fp16_t)(sign | q);
    }
    /* normal: rebias the exponent, round off 13 mantissa bits (carry is fine) */
    u += 0xfffu + ((u >> 13) & 1u);
    return (tb_fp16_t)(sign | ((u - ((uint32_t)(127 - 15) << 23)) >> 13));
}

/* ===================================================================== */
/* bfloat16                                                               */
/* ===================================================================== */

/* Keep the top 16 bits of a float, round to nearest even; NaN quieted. */
tb_bf16_t tb_fp32_to_bf16(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (tb_bf16_t)((u >> 16) | 0x40u);
    return (tb_bf16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ===================================================================== */
/* Rows                                                                   */
/* ===================================================================== */

void tb_quantize_row_f32_ref(const float *x, void *y, int64_t n) {
    memcpy(y, x, (size_t)n * sizeof(float));
}

void tb_dequantize_row_f32_ref(const void *x, float *y, int64_t n) {
    memcpy(y, x, (size_t)n * sizeof(float));
}

void tb_quantize_row_f16_ref(const float *x, void *vy, int64_t n) {
    tb_fp16_t *y = vy;   // (n)
    for (int64_t i = 0; i < n; i++) y[i] = tb_fp32_to_fp16(x[i]);
}

void tb_dequantize_row_f16_ref(const void *vx, float *y, int64_t n) {
    const tb_fp16_t *x = vx;   // (n)
    for (int64_t i = 0; i < n; i++) y[i] = tb_fp16_to_fp32(x[i]);
}

void tb_quantize_row_bf16_ref(const float *x, void *vy, int64_t n) {
    tb_bf16_t *y = vy;   // (n)
    for (int64_t i = 0; i < n; i++) y[i] = tb_fp32_to_bf16(x[i]);
}

void tb_dequantize_row_bf16_ref(const void *vx, float *y, int64_t n) {
    const tb_bf16_t *x = vx;   // (n)
    for (int64_t i = 0; i < n; i++) y[i] = tb_bf16_to_fp32(x[i]);
}

/* ===================================================================== */
/* Dot products (weights in the float format, activations F32).           */
/* Accumulated in double, as ggml's scalar path does, then rounded once.  */
/* ===================================================================== */

void tb_vec_dot_f32_ref(int64_t n, float *s, const void *vw, const void *va) {
    const float *w = vw, *a = va;   // (n), (n)
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)w[i] * (double)a[i];
    *s = (float)sum;
}

void tb_vec_dot_f16_ref(int64_t n, float *s, const void *vw, const void *va) {
    const tb_fp16_t *w = vw;   // (n)
    const float *a = va;       // (n)
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)tb_fp16_to_fp32(w[i]) * (double)a[i];
    *s = (float)sum;
}

void tb_vec_dot_bf16_ref(int64_t n, float *s, const void *vw, const void *va) {
    const tb_bf16_t *w = vw;   // (n)
    const float *a = va;       // (n)
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)tb_bf16_to_fp32(w[i]) * (double)a[i];
    *s = (float)sum;
}
