/*
 * tier_avx512.c — x86-64 AVX-512 F/BW/VL/DQ kernels (compiled with
 * -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 on
 * top of the AVX2 set). VNNI instructions run only when the dispatcher saw
 * AVX512_VNNI at run time: each format has a VNNI and a plain variant;
 * BF16 weights use vdpbf16ps only when it saw AVX512_BF16 (x86_bf16_dp.h).
 * Bodies in x86_common.h (512-bit where the format's block fills a ZMM).
 */
#include <stdio.h>

#include "kernels/x86_common.h"
#include "kernels/x86_float.h"
#include "kernels/x86_fx_rp.h"
#include "kernels/x86_int.h"
#include "kernels/x86_int512.h"
#include "kernels/x86_kquant.h"
#include "kernels/x86_q4_0_rp.h"
#include "kernels/x86_q4_K_rp.h"
#include "kernels/x86_q6_K_rp.h"
#include "kernels/x86_q8_0_rp.h"
#include "kernels/x86_ternary.h"
#include "kernels/x86_bf16_dp.h"

#define DOT_Q8_0(nt, n, s, w, a) dot_q_0(nt, n, s, w, a, false, false)
#define DOT_Q4_0(nt, n, s, w, a) dot_q_0(nt, n, s, w, a, true, false)
#define DOT_TQ2_0(nr, nt, n, s, w, a) dot_tq2_0_rt(nr, nt, n, s, w, a, false)
#define DOT_TQ1_0(nt, n, s, w, a) dot_tq1_0(nt, n, s, w, a, false)
#define DOT_Q4_K(nt, n, s, w, a) dot_q4_K(nt, n, s, w, a, false)
#define DOT_Q6_K(nt, n, s, w, a) dot_q6_K(nt, n, s, w, a, false)
#define DOT_Q4_K_VNNI(nt, n, s, w, a) dot_q4_K(nt, n, s, w, a, true)
#define DOT_Q6_K_VNNI(nt, n, s, w, a) dot_q6_K(nt, n, s, w, a, true)
#define DOT_TQ2_0_VNNI(nr, nt, n, s, w, a) dot_tq2_0_rt(nr, nt, n, s, w, a, true)
#define DOT_TQ1_0_VNNI(nt, n, s, w, a) dot_tq1_0(nt, n, s, w, a, true)
#define DOT_F32(nt, n, s, w, a) dot_fx512(nt, n, s, w, a, 0)
#define DOT_F16(nt, n, s, w, a) dot_fx512(nt, n, s, w, a, 1)
#define DOT_BF16(nt, n, s, w, a) dot_fx512(nt, n, s, w, a, 2)

TB_X86_KERNELS(q8_0, DOT_Q8_0)
TB_X86_KERNELS(q4_0, DOT_Q4_0)
TB_X86_KERNELS_RT(tq2_0, DOT_TQ2_0)
TB_X86_KERNELS(tq1_0, DOT_TQ1_0)
TB_X86_KERNELS(q4_K, DOT_Q4_K)
TB_X86_KERNELS(q6_K, DOT_Q6_K)
TB_X86_KERNELS_RT(tq2_0_vnni, DOT_TQ2_0_VNNI)
TB_X86_KERNELS(tq1_0_vnni, DOT_TQ1_0_VNNI)
TB_X86_KERNELS(f32, DOT_F32)
TB_X86_KERNELS(f16, DOT_F16)
TB_X86_KERNELS(bf16, DOT_BF16)
TB_FXRP_KERNELS(f16, TB_TYPE_F16, 1)                      /* x86_fx_rp.h */
TB_FXRP_KERNELS(bf16, TB_TYPE_BF16, 2)
TB_RP_WITH_FALLBACK(f16_512, f16_rp, f16)
TB_RP_WITH_FALLBACK(bf16_512, bf16_rp, bf16)
#if defined(__AVX512BF16__)
TB_RP_WITH_FALLBACK(bf16_dp, bf16dp, bf16_512)             /* x86_bf16_dp.h: AVX512_BF16 */
#endif

TB_RP_WITH_FALLBACK(tq2_0_vnni_rp, tq2_0_rp, tq2_0_vnni)   /* x86_ternary.h */
TB_RP_WITH_FALLBACK(tq1_0_vnni_rp, tq1_0_rp, tq1_0_vnni)
TB_RP_WITH_FALLBACK(q4_0_512_rp, q4_0_rp, q4_0_512)       /* x86_q4_0_rp.h */
TB_RP_WITH_FALLBACK(q8_0_512_rp, q8_0_rp, q8_0_512)       /* x86_q8_0_rp.h */
TB_X86_KERNELS(q4_K_vnni, DOT_Q4_K_VNNI)
TB_RP_WITH_FALLBACK(q4_K_vnni_rp, q4_K_rp, q4_K_vnni)     /* x86_q4_K_rp.h */
TB_X86_KERNELS(q6_K_vnni, DOT_Q6_K_VNNI)
TB_RP_WITH_FALLBACK(q6_K_vnni_rp, q6_K_rp, q6_K_vnni)     /* x86_q6_K_rp.h */

/* Sum of 64-bit words, 128 bytes per step in two chains. */
static uint64_t read_sum(const void *p, size_t n) {
    const __m512i *v = p;
    __m512i s0 = _mm512_setzero_si512(), s1 = s0;
    size_t i = 0;
    for (; i + 2 <= n / 64; i += 2) {
        s0 = _mm512_add_epi64(s0, _mm512_load_si512(v + i));
        s1 = _mm512_add_epi64(s1, _mm512_load_si512(v + i + 1));
    }
    if (i < n / 64) s0 = _mm512_add_epi64(s0, _mm512_load_si512(v + i));
    uint64_t r[8];   /* not _mm512_reduce_add_epi64: its C fallback adds signed (UB on wrap) */
    _mm512_storeu_si512(r, _mm512_add_epi64(s0, s1));
    return r[0] + r[1] + r[2] + r[3] + r[4] + r[5] + r[6] + r[7];
}

void tb_kernels_fill_avx512(tb_kernels_t *k) {
    bool bf16 = false;   /* vdpbf16ps taken (below) */
    if (tb_cpu.avx512vnni) {
        TB_X86_SET(k, TB_TYPE_Q8_0, q8_0_512, NULL);   /* x86_int512.h */
        k->t[TB_TYPE_Q8_0].matvec = matvec_q8_0_512_rp;
        k->t[TB_TYPE_Q8_0].gemm = gemm_q8_0_512_rp;
        k->t[TB_TYPE_Q8_0].repack = repack_q8_0;
        k->t[TB_TYPE_Q8_0].repack_rows = TB_Q8RP_ROWS;
        TB_X86_SET(k, TB_TYPE_Q4_0, q4_0_512, NULL);
        k->t[TB_TYPE_Q4_0].matvec = matvec_q4_0_512_rp;
        k->t[TB_TYPE_Q4_0].gemm = gemm_q4_0_512_rp;
        k->t[TB_TYPE_Q4_0].repack = repack_q4_0;
        k->t[TB_TYPE_Q4_0].repack_rows = TB_Q4RP_ROWS;
        TB_X86_SET(k, TB_TYPE_TQ2_0, tq2_0_vnni, NULL);
        k->t[TB_TYPE_TQ2_0].matvec = matvec_tq2_0_vnni_rp;
        k->t[TB_TYPE_TQ2_0].gemm = gemm_tq2_0_vnni_rp;
        k->t[TB_TYPE_TQ2_0].repack = repack_tq2_0;
        k->t[TB_TYPE_TQ2_0].repack_rows = TB_RP_ROWS;
        TB_X86_SET(k, TB_TYPE_TQ1_0, tq1_0_vnni, NULL);
        k->t[TB_TYPE_TQ1_0].matvec = matvec_tq1_0_vnni_rp;
        k->t[TB_TYPE_TQ1_0].gemm = gemm_tq1_0_vnni_rp;
        k->t[TB_TYPE_TQ1_0].repack = repack_tq1_0;
        k->t[TB_TYPE_TQ1_0].repack_rows = TB_RP_ROWS;
        k->t[TB_TYPE_TQ1_0].repack_bytes = repack_bytes_tq1_0;   /* 5-bit layout with VBMI */
        TB_X86_SET(k, TB_TYPE_Q4_K, q4_K_vnni, NULL);
        k->t[TB_TYPE_Q4_K].matvec = matvec_q4_K_vnni_rp;
        k->t[TB_TYPE_Q4_K].gemm = gemm_q4_K_vnni_rp;
        k->t[TB_TYPE_Q4_K].repack = repack_q4_K;
        k->t[TB_TYPE_Q4_K].repack_rows = TB_Q4KRP_ROWS;
        TB_X86_SET(k, TB_TYPE_Q6_K, q6_K_vnni, NULL);
        k->t[TB_TYPE_Q6_K].matvec = matvec_q6_K_vnni_rp;
        k->t[TB_TYPE_Q6_K].gemm = gemm_q6_K_vnni_rp;
        k->t[TB_TYPE_Q6_K].repack = repack_q6_K;
        k->t[TB_TYPE_Q6_K].repack_rows = TB_Q6KRP_ROWS;
        k->t[TB_TYPE_Q6_K].repack_bytes = repack_bytes_q6_K;   /* blocks in 64-byte aligned pairs */
    } else {
        TB_X86_SET(k, TB_TYPE_Q8_0, q8_0, NULL);
        TB_X86_SET(k, TB_TYPE_Q4_0, q4_0, NULL);
        TB_X86_SET(k, TB_TYPE_TQ2_0, tq2_0, NULL);
        TB_X86_SET(k, TB_TYPE_TQ1_0, tq1_0, NULL);
        TB_X86_SET(k, TB_TYPE_Q4_K, q4_K, NULL);
        TB_X86_SET(k, TB_TYPE_Q6_K, q6_K, NULL);
    }
    TB_X86_SET(k, TB_TYPE_F32, f32, NULL);   /* x86_float.h, 512-bit */
    TB_X86_SET(k, TB_TYPE_F16, f16, NULL);
    TB_X86_SET(k, TB_TYPE_BF16, bf16, NULL);
    /* F16/BF16 rows interleaved by TB_FXRP_ROWS (x86_fx_rp.h): one stream, shared activation loads */
    static const struct { tb_type_t t; tb_repack_fn rp; tb_matvec_fn mv; tb_gemm_fn gm; } fx[] = {
        {TB_TYPE_F16, repack_f16, matvec_f16_512, gemm_f16_512},
        {TB_TYPE_BF16, repack_bf16, matvec_bf16_512, gemm_bf16_512},
    };
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        k->t[fx[i].t].matvec = fx[i].mv;
        k->t[fx[i].t].gemm = fx[i].gm;
        k->t[fx[i].t].repack = fx[i].rp;
        k->t[fx[i].t].repack_rows = TB_FXRP_ROWS;
    }
#if defined(__AVX512BF16__)
    if (tb_cpu.avx512bf16) {   /* vdpbf16ps on the same repacked copy, F32 path beyond it */
        bf16 = true;
        k->t[TB_TYPE_BF16].matvec = matvec_bf16_dp;
        k->t[TB_TYPE_BF16].gemm = gemm_bf16_dp;
    }
#endif
    k->read_sum = read_sum;
    /* the features the tier's kernels use on this CPU, recorded with every
     * benchmark (VBMI: TQ1_0's 5-bit layout, taken only beside VNNI) */
    static char feat[96];
    snprintf(feat, sizeof feat, "avx512f,avx512bw,avx512vl,avx512dq%s%s%s", tb_cpu.avx512vnni ? ",avx512vnni" : "",
             tb_cpu.avx512vnni && tb_cpu.avx512vbmi ? ",avx512vbmi" : "", bf16 ? ",avx512bf16" : "");
    k->features = feat;
}
