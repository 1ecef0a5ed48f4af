/*
 * neon_common.h — helpers and the kernel generator shared by the NEON
 * format headers (neon_float.h, neon_int.h, neon_act.h).
 *
 * Included by tier_neon.c only (aarch64). Same determinism contract as
 * x86_common.h: every format has ONE dot body dot(nt, ...) computing nt
 * tokens against one weight row; a token's arithmetic does not depend on
 * nt or on its position in the group, so vec_dot, matvec (nt = 1) and gemm
 * (nt = 1..TB_NEON_NT) give bit-identical results per row, for any split.
 */
#ifndef TB_NEON_COMMON_H
#define TB_NEON_COMMON_H

#include "kernels/kernels.h"

#include <arm_neon.h>
#include <string.h>

#ifndef TB_INLINE
#define TB_INLINE static inline __attribute__((always_inline))
#endif
#define TB_NEON_NT 4   /* tokens per weight-row pass in gemm */
#define TB_NEON_UNROLL _Pragma("GCC unroll 8")

/* ---------------------------------------------------------------------- */
/* fp16 scales                                                              */
/* ---------------------------------------------------------------------- */

/* One binary16 bit pattern -> float (fcvt: exact, every value). */
TB_INLINE float tb_neon_h2f(tb_fp16_t h) {
    __fp16 f;
    memcpy(&f, &h, 2);
    return (float)f;
}

/* The binary16 fields at a, b, c, d -> float32x4 (four lane loads, one
 * fcvtl; building the vector in a general register costs twice that). */
TB_INLINE float32x4_t tb_neon_h2f4(const tb_fp16_t *a, const tb_fp16_t *b, const tb_fp16_t *c,
                                   const tb_fp16_t *d) {
    uint16x4_t v = vld1_dup_u16(a);
    v = vld1_lane_u16(b, v, 1);
    v = vld1_lane_u16(c, v, 2);
    v = vld1_lane_u16(d, v, 3);
    return vcvt_f32_f16(vreinterpret_f16_u16(v));
}

/* float -> binary16 bits, round to nearest even (fcvt under the default
 * FPCR: equals tb_fp32_to_fp16 for every non-NaN float, subnormals
 * included; tests/kernels/neon_main.c checks every rounding boundary). */
TB_INLINE tb_fp16_t tb_neon_f2h(float f) {
    __fp16 h = (__fp16)f;
    tb_fp16_t u;
    memcpy(&u, &h, 2);
    return u;
}

/* ---------------------------------------------------------------------- */
/* Generator: vec_dot, matvec and gemm from one dot body                    */
/* ---------------------------------------------------------------------- */

/* DOT(nt, n, s, w, aa): s[0..nt) = row w . activation rows aa[0..nt).
 * ATTR carries the target attribute of the variant (e.g. +dotprod) so the
 * always-inline body can be inlined into the wrappers. */
#define TB_NEON_KERNELS(name, DOT, ATTR) \
    TB_KERNELS_FROM_NT_DOT(ATTR, nv_vec_dot_##name, nv_matvec_##name, nv_gemm_##name, TB_NEON_NT, DOT)

#define TB_NEON_SET(k, wt, name)                    \
    do {                                            \
        (k)->t[wt].vec_dot = nv_vec_dot_##name;     \
        (k)->t[wt].matvec = nv_matvec_##name;       \
        (k)->t[wt].gemm = nv_gemm_##name;           \
    } while (0)

#endif
