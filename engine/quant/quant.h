/*
 * quant.h — block formats, byte-compatible with ggml (same structs, same
 * element order), and their scalar reference functions.
 *
 * The `_ref` functions are the specification of each format: every faster
 * kernel tier is tested against them. Weight formats pair with an
 * activation ("vec_dot") format:
 *
 *   weight           activation    dot product
 *   F32              F32           tb_vec_dot_f32_ref
 *   F16 / BF16       F32           tb_vec_dot_f16_ref / _bf16_ref
 *   Q8_0, Q4_0       Q8_0          tb_vec_dot_q8_0_q8_0_ref, tb_vec_dot_q4_0_q8_0_ref
 *   Q4_K, Q6_K,      Q8_K          tb_vec_dot_q4_K_q8_K_ref, ...
 *   TQ1_0, TQ2_0
 */
#ifndef TB_QUANT_H
#define TB_QUANT_H

#include "internal.h"
#include <stdint.h>
#include <string.h>

#define QK4_0 32
#define QK8_0 32
#define QK_K 256
#define K_SCALE_SIZE 12

typedef uint16_t tb_fp16_t;   /* IEEE binary16 bits */
typedef uint16_t tb_bf16_t;   /* bfloat16 bits      */

/* Q4_0: 32 weights, 18 bytes.
 *   [0..1]  d    fp16 scale
 *   [2..17] qs   nibbles: qs[j] & 0xF is element j, qs[j] >> 4 is element j+16
 *   w = (q - 8) * d                                                    */
typedef struct { tb_fp16_t d; uint8_t qs[QK4_0 / 2]; } block_q4_0;
static_assert(sizeof(block_q4_0) == 18, "block_q4_0 size");

/* Q8_0: 32 weights, 34 bytes.  [0..1] d fp16; [2..33] qs int8;  w = q * d */
typedef struct { tb_fp16_t d; int8_t qs[QK8_0]; } block_q8_0;
static_assert(sizeof(block_q8_0) == 34, "block_q8_0 size");

/* Q4_K: 256 weights in 8 sub-blocks of 32, 144 bytes.
 *   [0..1]    d       fp16 super-scale of the scales
 *   [2..3]    dmin    fp16 super-scale of the mins
 *   [4..15]   scales  8 x (6-bit scale, 6-bit min) packed as ggml's get_scale_min_k4
 *   [16..143] qs      4-bit quants; each 32-byte group holds 64 weights:
 *                     low nibbles = sub-block 2i, high nibbles = sub-block 2i+1
 *   w = d*sc*q - dmin*m                                                */
typedef struct {
    tb_fp16_t d, dmin;
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qs[QK_K / 2];
} block_q4_K;
static_assert(sizeof(block_q4_K) == 144, "block_q4_K size");

/* Read the 6-bit scale and min of Q4_K sub-block j (0..7) from `scales`
 * (ggml's get_scale_min_k4): for j < 4 the low 6 bits of bytes j (scale)
 * and j+4 (min); for j >= 4 the low (scale) and high (min) nibble of byte
 * j+4, topped with bits 6..7 of bytes j-4 (scale) and j (min). */
static inline void tb_q4_K_scale_min(int j, const uint8_t *scales, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4));
        *m = (uint8_t)((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

/* Q6_K: 256 weights in 16 sub-blocks of 16, 210 bytes.
 *   [0..127]   ql      low 4 bits
 *   [128..191] qh      high 2 bits
 *   [192..207] scales  int8 per sub-block
 *   [208..209] d       fp16
 *   w = d * scale * (q - 32), q in 0..63                                 */
typedef struct {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    tb_fp16_t d;
} block_q6_K;
static_assert(sizeof(block_q6_K) == 210, "block_q6_K size");

/* Q8_K: activation format for the K and ternary formats, 292 bytes.
 *   [0..3]     d      float scale
 *   [4..259]   qs     int8
 *   [260..291] bsums  int16 sum of each 16 consecutive qs             */
typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} block_q8_K;
static_assert(sizeof(block_q8_K) == 292, "block_q8_K size");

/* TQ1_0: 256 ternary weights at 1.6875 bits, 54 bytes.
 *   [0..47]  qs  5 trits per byte, base-3 packed and scaled so that a trit
 *                is read back as ((uint8_t)(q * 3^n) * 3) >> 8 (ggml order:
 *                qs[0..31] cover elements 0..159, qs[32..47] 160..239)
 *   [48..51] qh  4 trits per byte for elements 240..255
 *   [52..53] d   fp16;  w = (trit - 1) * d                               */
typedef struct {
    uint8_t qs[(QK_K - 4 * QK_K / 64) / 5];
    uint8_t qh[QK_K / 64];
    tb_fp16_t d;
} block_tq1_0;
static_assert(sizeof(block_tq1_0) == 54, "block_tq1_0 size");

/* TQ2_0: 256 ternary weights at 2.0625 bits, 66 bytes.
 *   [0..63]  qs  2-bit codes q in {0,1,2}; element j*4 + l*32 + m of a
 *                128-element half (j = 0 or 32) is (qs[j+m] >> 2l) & 3
 *   [64..65] d   fp16;  w = (q - 1) * d                                  */
typedef struct {
    uint8_t qs[QK_K / 4];
    tb_fp16_t d;
} block_tq2_0;
static_assert(sizeof(block_tq2_0) == 66, "block_tq2_0 size");

/* ---- fp16 / bf16 scalar conversion (round to nearest even) ---------- */
/* Exact widening of a binary16 bit pattern (every half, subnormals and
 * specials included, is a float). Inline: it sits in hot loops (F16
 * weights and KV cache). */
static inline float tb_fp16_to_fp32(tb_fp16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {                                  /* ±0, subnormal: man * 2^-24 */
        const float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 0x1f) u = sign | 0x7f800000u | (man << 13);          /* inf, nan */
    else u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
tb_fp16_t tb_fp32_to_fp16(float f);
static inline float tb_bf16_to_fp32(tb_bf16_t h) {
    uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f;
}
tb_bf16_t tb_fp32_to_bf16(float f);

/* ---- type traits ---------------------------------------------------- */
typedef void (*tb_from_float_fn)(const float *x, void *y, int64_t n);
typedef void (*tb_to_float_fn)(const void *x, float *y, int64_t n);
/* s = dot(w row of n elements, activation row of n elements) */
typedef void (*tb_vec_dot_fn)(int64_t n, float *s, const void *w, const void *a);

typedef struct tb_type_traits {
    const char *name;        /* ggml's name in lower case ("q4_k")   */
    int64_t blck;            /* elements per block                     */
    size_t bytes;            /* bytes per block                        */
    bool is_quant;
    tb_type_t vec_dot_type;  /* activation format                      */
    tb_from_float_fn from_float_ref;
    tb_to_float_fn to_float_ref;
    tb_vec_dot_fn vec_dot_ref;
} tb_type_traits_t;

/* NULL when the type is not supported. */
const tb_type_traits_t *tb_type_traits(tb_type_t t);

/* ---- reference functions, one group per format ----------------------
 * quantize_row: n finite floats (n a multiple of the block) -> n / blck
 * blocks; deterministic, no allocation, never fails. dequantize_row: the
 * inverse map, exact in float for every bit pattern except fp16 d fields
 * holding inf/nan. vec_dot: *s = dot of n weights with n activations
 * already in the weight's vec_dot_type, integer-accumulated per block where
 * ggml does, so it equals the float dot of the dequantized operands up to
 * float rounding of the per-block partial sums.                          */
#define TB_DECLARE_REF(fmt)                                                   \
    void tb_quantize_row_##fmt##_ref(const float *x, void *y, int64_t n);     \
    void tb_dequantize_row_##fmt##_ref(const void *x, float *y, int64_t n);
TB_DECLARE_REF(f32)
TB_DECLARE_REF(f16)
TB_DECLARE_REF(bf16)
TB_DECLARE_REF(q8_0)
TB_DECLARE_REF(q4_0)
TB_DECLARE_REF(q4_K)
TB_DECLARE_REF(q6_K)
TB_DECLARE_REF(q8_K)
TB_DECLARE_REF(tq1_0)
TB_DECLARE_REF(tq2_0)
#undef TB_DECLARE_REF

void tb_vec_dot_f32_ref(int64_t n, float *s, const void *w, const void *a);
void tb_vec_dot_f16_ref(int64_t n, float *s, const void *w, const void *a);   /* a: f32 */
void tb_vec_dot_bf16_ref(int64_t n, float *s, const void *w, const void *a);  /* a: f32 */
void tb_vec_dot_q8_0_q8_0_ref(int64_t n, float *s, const void *w, const void *a);
void tb_vec_dot_q4_0_q8_0_ref(int64_t n, float *s, const void *w, const void *a);
void tb_vec_dot_q4_K_q8_K_ref(int64_t n, float *s, const void *w, const void *a);
void tb_vec_dot_q6_K_q8_K_ref(int64_t n, float *s, const void *w, const void *a);
void tb_vec_dot_tq1_0_q8_K_ref(int64_t n, float *s, const void *w, const void *a);
void tb_vec_dot_tq2_0_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

#endif
