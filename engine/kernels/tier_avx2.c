/*
 * tier_avx2.c — x86-64 AVX2 + FMA + F16C kernels (compiled with exactly
 * -mavx2 -mfma -mf16c; see kernels/meson.build). Bodies in x86_common.h.
 *
 * Activation quantization stays the _ref quantizer (bit-identical by
 * construction); it is O(cols) per matvec against O(rows * cols) weights.
 */
#include "kernels/x86_common.h"
#include "kernels/x86_act.h"
#include "kernels/x86_float.h"
#include "kernels/x86_int.h"
#include "kernels/x86_kquant.h"
#include "kernels/x86_q4_0_rp.h"
#include "kernels/x86_q4_K_rp.h"
#include "kernels/x86_q8_0_rp.h"
#include "kernels/x86_q6_K_rp.h"
#include "kernels/x86_ternary.h"
#include "kernels/x86_ternary_rp8.h"

#define DOT_Q8_0(nt, n, s, w, a) dot_q_0(nt, n, s, w, a, false, false)
#define DOT_Q4_0(nt, n, s, w, a) dot_q_0(nt, n, s, w, a, true, false)
#define DOT_TQ2_0(nt, n, s, w, a) dot_tq2_0(nt, n, s, w, a, false)
#define DOT_TQ1_0(nt, n, s, w, a) dot_tq1_0(nt, n, s, w, a, false)
#define DOT_Q4_K(nt, n, s, w, a) dot_q4_K(nt, n, s, w, a, false)
#define DOT_Q6_K(nt, n, s, w, a) dot_q6_K(nt, n, s, w, a, false)
#define DOT_F32(nt, n, s, w, a) dot_fx(nt, n, s, w, a, 0)
#define DOT_F16(nt, n, s, w, a) dot_fx(nt, n, s, w, a, 1)
#define DOT_BF16(nt, n, s, w, a) dot_fx(nt, n, s, w, a, 2)

TB_X86_KERNELS(q8_0, DOT_Q8_0)
TB_RP_WITH_FALLBACK(q8_0_256_rp, q8_0_rp8, q8_0)   /* 8-row repacked copy (x86_q8_0_rp.h) */
TB_X86_KERNELS(q4_0, DOT_Q4_0)
TB_RP_WITH_FALLBACK(q4_0_256_rp, q4_0_rp16h, q4_0)   /* 16-row repacked copy in 8-row halves (x86_q4_0_rp.h) */
TB_X86_KERNELS(tq2_0, DOT_TQ2_0)
TB_X86_KERNELS(tq1_0, DOT_TQ1_0)
TB_RP_WITH_FALLBACK(tq2_0_256_rp, tq2_0_rp16h, tq2_0)   /* 16-row repacked copies (x86_ternary_rp8.h) */
TB_RP_WITH_FALLBACK(tq1_0_256_rp, tq1_0_rp16h, tq1_0)
TB_X86_KERNELS(q4_K, DOT_Q4_K)
TB_RP_WITH_FALLBACK(q4_K_256_rp, q4_K_rp8, q4_K)   /* 8-row repacked copy (x86_q4_K_rp.h) */
TB_X86_KERNELS(q6_K, DOT_Q6_K)
TB_RP_WITH_FALLBACK(q6_K_256_rp, q6_K_rp8, q6_K)   /* 8-row repacked copy (x86_q6_K_rp.h) */
TB_X86_KERNELS(f32, DOT_F32)
TB_X86_KERNELS(f16, DOT_F16)
TB_X86_KERNELS(bf16, DOT_BF16)

static uint64_t read_sum(const void *p, size_t n) { return read_sum_256(p, n); }

#ifdef TB_SLOW_KERNEL
/* Test-only (meson -Dslow_kernel=true): TQ2_0's matvec does ~17 % more
 * work, a dependent chain over each output that changes no result, so that
 * `ternbench count` can be shown to catch a slowed kernel. Never in a
 * release build. */
static void matvec_tq2_0_slow(const void *W, size_t w_stride, const void *a,
                              float *y, int64_t r0, int64_t r1, int64_t n) {
    matvec_tq2_0_256_rp(W, w_stride, a, y, r0, r1, n);
    for (int64_t r = r0; r < r1; r++) {
        volatile float acc = y[r];
        for (int64_t i = 0; i < n / 256; i++) acc = acc * 1.0f;
    }
}
#define TQ2_0_MATVEC matvec_tq2_0_slow
#else
#define TQ2_0_MATVEC matvec_tq2_0_256_rp
#endif

void tb_kernels_fill_avx2(tb_kernels_t *k) {
    k->features = "avx2,fma,f16c";
    TB_X86_SET(k, TB_TYPE_Q8_0, q8_0, NULL);
    k->t[TB_TYPE_Q8_0].matvec = matvec_q8_0_256_rp;
    k->t[TB_TYPE_Q8_0].gemm = gemm_q8_0_256_rp;
    k->t[TB_TYPE_Q8_0].repack = repack_q8_0_8;
    k->t[TB_TYPE_Q8_0].repack_rows = TB_Q8RP8_ROWS;
    TB_X86_SET(k, TB_TYPE_Q4_0, q4_0, NULL);
    k->t[TB_TYPE_Q4_0].matvec = matvec_q4_0_256_rp;
    k->t[TB_TYPE_Q4_0].gemm = gemm_q4_0_256_rp;
    k->t[TB_TYPE_Q4_0].repack = repack_q4_0;
    k->t[TB_TYPE_Q4_0].repack_rows = TB_Q4RP16H_ROWS;
    TB_X86_SET(k, TB_TYPE_TQ2_0, tq2_0, NULL);
    k->t[TB_TYPE_TQ2_0].matvec = TQ2_0_MATVEC;
    k->t[TB_TYPE_TQ2_0].gemm = gemm_tq2_0_256_rp;
    k->t[TB_TYPE_TQ2_0].repack = repack_tq2_0_16;
    k->t[TB_TYPE_TQ2_0].repack_rows = TB_TRP_ROWS;
    TB_X86_SET(k, TB_TYPE_TQ1_0, tq1_0, NULL);
    k->t[TB_TYPE_TQ1_0].matvec = matvec_tq1_0_256_rp;
    k->t[TB_TYPE_TQ1_0].gemm = gemm_tq1_0_256_rp;
    k->t[TB_TYPE_TQ1_0].repack = repack_tq1_0_16;
    k->t[TB_TYPE_TQ1_0].repack_rows = TB_TRP_ROWS;
    k->t[TB_TYPE_TQ1_0].repack_bytes = repack_bytes_tq1_0_16;   /* 2-bit codes: 66/54 of the file */
    TB_X86_SET(k, TB_TYPE_Q4_K, q4_K, NULL);
    k->t[TB_TYPE_Q4_K].matvec = matvec_q4_K_256_rp;
    k->t[TB_TYPE_Q4_K].gemm = gemm_q4_K_256_rp;
    k->t[TB_TYPE_Q4_K].repack = repack_q4_K_8;
    k->t[TB_TYPE_Q4_K].repack_rows = TB_Q4KRP8_ROWS;
    TB_X86_SET(k, TB_TYPE_Q6_K, q6_K, NULL);
    k->t[TB_TYPE_Q6_K].matvec = matvec_q6_K_256_rp;
    k->t[TB_TYPE_Q6_K].gemm = gemm_q6_K_256_rp;
    k->t[TB_TYPE_Q6_K].repack = repack_q6_K_8;
    k->t[TB_TYPE_Q6_K].repack_rows = TB_Q6KRP8_ROWS;
    TB_X86_SET(k, TB_TYPE_F32, f32, NULL);
    TB_X86_SET(k, TB_TYPE_F16, f16, NULL);
    TB_X86_SET(k, TB_TYPE_BF16, bf16, NULL);
    k->read_sum = read_sum;
    tb_x86_set_act(k);   /* SIMD Q8_0 / Q8_K activation quantizers (x86_act.h) */
}
