/*
 * rounding.h — rounding and block-maximum helpers shared by the quantizers
 * (internal to quant/).
 */
#ifndef TB_QUANT_ROUNDING_H
#define TB_QUANT_ROUNDING_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Round to the nearest integer, ties to even (default FP environment), like
 * ggml's nearest_int; valid for |f| < 2^22, which every caller guarantees
 * (codes and scales are at most a few hundred).
 * Adding 1.5 * 2^23 moves f into the binade where one ulp is 1, so the add
 * itself rounds f to an integer; the low 23 bits of the sum then hold that
 * integer plus 2^22. A plain add and mask: no libm call in hot loops. */
static inline int tb_nearest_int(float f) {
    const float v = f + 12582912.0f;   /* 1.5 * 2^23 */
    int32_t bits;
    memcpy(&bits, &v, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

/* Largest |x_j| of x[0..n) (0 when n == 0; NaNs are passed over). */
static inline float tb_absmax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) amax = fmaxf(amax, fabsf(x[j]));
    return amax;
}

/* The x_j of largest magnitude with its sign (the first of equal ones; 0
 * when every |x_j| is 0, NaNs passed over): ggml's `max`, which the
 * symmetric formats map to their most negative code. */
static inline float tb_absmax_signed(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    }
    return max;
}

#endif
