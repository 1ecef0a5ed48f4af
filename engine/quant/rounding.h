/*
 * rounding.h — rounding helpers shared by the quantizers (internal to quant/).
 */
#ifndef TB_QUANT_ROUNDING_H
#define TB_QUANT_ROUNDING_H

#include <math.h>

/* Round to the nearest integer, ties to even (the default FP environment),
 * like ggml's nearest_int. Callers keep |f| well below 2^22. */
static inline int tb_nearest_int(float f) { return (int)lrintf(f); }

#endif
