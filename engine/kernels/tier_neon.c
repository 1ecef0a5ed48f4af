/*
 * tier_neon.c — aarch64 NEON kernels: the neon tier (baseline ARMv8-A)
 * and the dotprod tier (the SDOT variants, compiled with a function-level
 * "+dotprod" target; dispatch.c adds the tier when HWCAP_ASIMDDP is set,
 * on top of neon's table for what it leaves unset).
 *
 * Formats: Q8_0, Q4_0 (neon_int.h), TQ2_0, TQ1_0 (neon_ternary.h), Q4_K,
 * Q6_K (x Q8_0 / Q8_K activations; the K formats in neon_kquant.h), F32/F16/BF16
 * (neon_float.h) and the Q8_0/Q8_K activation quantizers (neon_act.h).
 * Others inherit generic/ref. Each block's integer dot is exact; only the float
 * summation order differs from _ref. gemm is matvec per token, so rows are
 * bit-identical between the two.
 *
 * Tested on x86 hosts by cross-compiling this file with the ref tier and
 * running it under qemu-aarch64 (tests/kernels/neon_cross.sh).
 */
#include "kernels/kernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "kernels/neon_act.h"
#include "kernels/neon_float.h"
#include "kernels/neon_int.h"
#include "kernels/neon_kquant.h"
#include "kernels/neon_ternary.h"

#define TB_INLINE static inline __attribute__((always_inline))

/* ---------------------------------------------------------------------- */
/* 16-lane signed byte dot products -> 4 x i32                              */
/* ---------------------------------------------------------------------- */

TB_INLINE int32x4_t dot16_base(int32x4_t acc, int8x16_t x, int8x16_t y) {
    int16x8_t lo = vmull_s8(vget_low_s8(x), vget_low_s8(y));
    int16x8_t hi = vmull_high_s8(x, y);
    return vpadalq_s16(vpadalq_s16(acc, lo), hi);
}

#define DOT16_BASE(acc, x, y) dot16_base(acc, x, y)
#define DOT16_SDOT(acc, x, y) vdotq_s32(acc, x, y)

/* ---------------------------------------------------------------------- */
/* Kernel bodies, instantiated for both dot instructions                   */
/* ---------------------------------------------------------------------- */

NV_INT_VARIANT(base, DOT16_BASE, )
NV_INT_VARIANT(sdot, DOT16_SDOT, __attribute__((target("arch=armv8.2-a+dotprod"))))
NEON_KQUANT_BODIES(base, DOT16_BASE, )
NEON_KQUANT_BODIES(sdot, DOT16_SDOT, __attribute__((target("arch=armv8.2-a+dotprod"))))
NV_TERNARY_VARIANTS(__attribute__((target("arch=armv8.2-a+dotprod"))))

/* ---------------------------------------------------------------------- */
/* matvec / gemm                                                            */
/* ---------------------------------------------------------------------- */

#define NEON_KERNELS(fmt) TB_KERNELS_FROM_DOT(fmt, dot_##fmt)

NEON_KERNELS(q4_K_base)
NEON_KERNELS(q6_K_base)
NEON_KERNELS(q4_K_sdot)
NEON_KERNELS(q6_K_sdot)

#define SET(wt, fmt)                          \
    do {                                      \
        k->t[wt].vec_dot = dot_##fmt;         \
        k->t[wt].matvec = matvec_##fmt;       \
        k->t[wt].gemm = gemm_##fmt;           \
    } while (0)

static uint64_t read_sum(const void *p, size_t n) {
    const uint64_t *v = p;
    uint64x2_t s0 = vdupq_n_u64(0), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n / 8; i += 8) {
        s0 = vaddq_u64(s0, vld1q_u64(v + i));
        s1 = vaddq_u64(s1, vld1q_u64(v + i + 2));
        s2 = vaddq_u64(s2, vld1q_u64(v + i + 4));
        s3 = vaddq_u64(s3, vld1q_u64(v + i + 6));
    }
    return vaddvq_u64(vaddq_u64(vaddq_u64(s0, s1), vaddq_u64(s2, s3)));
}

void tb_kernels_fill_neon(tb_kernels_t *k) {
    k->features = "neon";
    TB_NEON_SET(k, TB_TYPE_Q8_0, q8_0_base);
    TB_NEON_SET(k, TB_TYPE_Q4_0, q4_0_base);
    TB_NEON_SET(k, TB_TYPE_TQ2_0, tq2_0_base);
    TB_NEON_SET(k, TB_TYPE_TQ1_0, tq1_0_base);
    SET(TB_TYPE_Q4_K, q4_K_base);
    SET(TB_TYPE_Q6_K, q6_K_base);
    tb_neon_set_float(k);
    tb_neon_set_act(k);
    k->read_sum = read_sum;
}

/* Only the integer dot products differ from neon: the float kernels, the
 * activation quantizers and read_sum are inherited from its table. */
void tb_kernels_fill_neon_dotprod(tb_kernels_t *k) {
    k->features = "neon,dotprod";
    TB_NEON_SET(k, TB_TYPE_Q8_0, q8_0_sdot);
    TB_NEON_SET(k, TB_TYPE_Q4_0, q4_0_sdot);
    TB_NEON_SET(k, TB_TYPE_TQ2_0, tq2_0_sdot);
    TB_NEON_SET(k, TB_TYPE_TQ1_0, tq1_0_sdot);
    SET(TB_TYPE_Q4_K, q4_K_sdot);
    SET(TB_TYPE_Q6_K, q6_K_sdot);
}
#endif
