/*
 * x86_common.h — kernel bodies shared by the AVX2 and AVX-512 tiers.
 *
 * Format bodies live in x86_int.h, x86_ternary.h, x86_float.h (and more
 * per-format headers); this file holds the helpers and the generators.
 *
 * Included by tier_avx2.c and tier_avx512.c, each compiled with its own -m
 * flags, so the same source becomes two sets of machine code. Code under
 * __AVX512F__ exists only in the AVX-512 translation unit; VNNI paths take a
 * `vnni` flag that is a compile-time constant at every call site and true
 * only when the dispatcher saw the feature at run time.
 *
 * Determinism contract (the model tests rely on it): every dot product is
 * written as dot_<fmt>(NT tokens). A token's arithmetic in dot_<fmt> does not
 * depend on NT or on its position in the group, so matvec (NT = 1) and gemm
 * (NT = 1..TB_NT) give bit-identical results per row, for any thread split.
 *
 * Integer formats compute each block's integer dot exactly (as the _ref
 * does); only the float summation over blocks is reordered (lanes, two
 * accumulators), so results differ from _ref by float rounding only.
 */
#ifndef TB_X86_COMMON_H
#define TB_X86_COMMON_H

#include "kernels/kernels.h"

#include <immintrin.h>

#define TB_INLINE static inline __attribute__((always_inline))
#define TB_NT 4   /* tokens per weight-row pass in gemm */
#define TB_NR 4   /* max weight rows per pass (row-tiled formats) */
#define TB_UNROLL _Pragma("GCC unroll 8")   /* small fixed-trip loops: keep arrays in registers */

/* ---------------------------------------------------------------------- */
/* Helpers                                                                  */
/* ---------------------------------------------------------------------- */

/* Software prefetch (tb_pf_bytes, kernels.h): the n bytes of a block at p,
 * pf bytes further on, requested line by line (n a compile-time constant
 * at every call, so the loop unrolls; pf is the matvec's copy of
 * tb_pf_bytes, 0 requesting nothing), and with the L2 stage (tb_pf_l2)
 * the same lines 2 pf further on into L2. A prefetch never faults, so the
 * last blocks' requests past the copy's end are harmless. Q4_K's blocks
 * (36 lines) and TQ1_0's 5-bit ones (15) request their code lines as they
 * are read (n = 64 or 128 per chunk) instead of all at the block's start:
 * on an Intel Xeon core the burst held Q4_K's stream to 13.6-13.9 GB/s
 * against 15.4-15.7 spread, TQ1_0's (median) to 11.6-12.0 against
 * 12.6-12.8 (docs/kernels.md, "Software prefetch"; Q6_K's 53 and TQ2_0's 17
 * measured the same either way and keep their bursts). */
TB_INLINE void tb_pf_block(const void *p, size_t n, uint32_t pf) {
    if (!pf) return;
    const char *q = (const char *)p + pf;
    _Pragma("GCC unroll 32")
    for (size_t o = 0; o < n; o += 64) _mm_prefetch(q + o, _MM_HINT_T0);
    if (tb_pf_l2) {   /* the L2 stage: the same lines twice as far ahead */
        _Pragma("GCC unroll 32")
        for (size_t o = 0; o < n; o += 64) _mm_prefetch(q + pf + o, _MM_HINT_T2);
    }
}

/* An empty asm on an accumulator: GCC would otherwise reassociate integer
 * add chains (integer adds are associative) into trees that keep every
 * vpmaddubsw result live and spill them (measured: ~30 spills per block in
 * the AVX2 TQ2_0 matvec, 16 per block and token in Q4_0's gemm). No
 * instruction is emitted. */
#define TB_CHAIN(v) __asm__("" : "+x"(v))

TB_INLINE float hsum_ps256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TB_INLINE float fp16_f32(tb_fp16_t h) { return _cvtsh_ss(h); }

TB_INLINE __m256i loadu256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* acc + (u8 x s8 dot of 4-byte groups) as 8 x i32; u <= 128 so the
 * maddubs pairs (|u*s| * 2 <= 32512) never saturate. */
TB_INLINE __m256i dot_u8s8_256(__m256i acc, __m256i u, __m256i s, bool vnni) {
#if defined(__AVX512VNNI__)
    if (vnni) return _mm256_dpbusd_epi32(acc, u, s);
#endif
    (void)vnni;
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

/* ---------------------------------------------------------------------- */
/* Generators: vec_dot, matvec and gemm from one dot_<fmt>(nt, ...)        */
/* ---------------------------------------------------------------------- */

/* matvec_<out> / gemm_<out>: the repacked kernels matvec_<rp> / gemm_<rp>
 * (which return false when the loader registered no copy of W), else the
 * file-layout kernels matvec_<fb> / gemm_<fb>. */
#define TB_RP_WITH_FALLBACK(out, rp, fb)                                                            \
    static void matvec_##out(const void *W, size_t ws, const void *a, float *y, int64_t r0,         \
                             int64_t r1, int64_t n) {                                               \
        if (!matvec_##rp(W, ws, a, y, r0, r1, n)) matvec_##fb(W, ws, a, y, r0, r1, n);              \
    }                                                                                               \
    static void gemm_##out(const void *W, size_t ws, const void *A, size_t as, int64_t nt,          \
                           float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {              \
        if (!gemm_##rp(W, ws, A, as, nt, Y, ldy, r0, r1, n)) gemm_##fb(W, ws, A, as, nt, Y, ldy, r0, r1, n); \
    }

/* DOT(nt, n, s, w, a) must be an expression calling the format's body. */
#define TB_X86_KERNELS(name, DOT) \
    TB_KERNELS_FROM_NT_DOT(, vec_dot_##name, matvec_##name, gemm_##name, TB_NT, DOT)

/* matvec_<name> / gemm_<name> of a repacked format with R rows per group,
 * one per lane of a VEC of results: activation rows (blocks ABLK of QK
 * elements) are prepared once per row by PREP(a, nb, pact) into PACT[nb],
 * and the group body is DOT(nt, G + g * nb, nb, aa, pa, o[nt]) with G the
 * copy's GRP blocks (registered for TIER), whose lanes STORE(y, g, r0, r1,
 * v) writes where they fall in [r0, r1). Both return false (the caller
 * reads the file layout) when W has no copy or its rows exceed MAXNB
 * blocks. gemm runs NT tokens per pass over each group; the tokens' preps
 * (NT x MAXNB PACT) are on the stack. TB_RP16_KERNELS (AVX-512) and
 * TB_RP8_KERNELS (AVX2, x86_q4_0_rp.h) instantiate it. */
#define TB_RP_KERNELS(name, R, VEC, TIER, STORE, TYPE, GRP, ABLK, PACT, QK, MAXNB, NT, PREP, DOT)   \
    static bool matvec_##name(const void *W, size_t ws, const void *a, float *y, int64_t r0,        \
                              int64_t r1, int64_t n) {                                              \
        const int64_t nb = n / (QK);                                                               \
        if (r0 >= r1) return true;                                                                  \
        if (nb > (MAXNB)) return false;                                                             \
        const GRP *G = tb_repack_lookup(W, ws, TIER, TYPE);                                         \
        if (!G) return false;                                                                       \
        PACT pa0[MAXNB];   /* (nb) */                                                               \
        const ABLK *aa[1] = {a};                                                                    \
        const PACT *pa[1] = {pa0};                                                                  \
        PREP(a, nb, pa0);                                                                           \
        for (int64_t g = r0 / (R); g * (R) < r1; g++) {                                             \
            VEC o[NT];                                                                              \
            DOT(1, G + g * nb, nb, aa, pa, o);                                                      \
            STORE(y, g, r0, r1, o[0]);                                                              \
        }                                                                                           \
        return true;                                                                                \
    }                                                                                               \
    static bool gemm_##name(const void *W, size_t ws, const void *A, size_t as, int64_t nt,        \
                            float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {             \
        const int64_t nb = n / (QK);                                                               \
        if (r0 >= r1) return true;                                                                  \
        if (nb > (MAXNB)) return false;                                                             \
        const GRP *G = tb_repack_lookup(W, ws, TIER, TYPE);                                         \
        if (!G) return false;                                                                       \
        PACT prep[NT][MAXNB];   /* (NT, nb) on the stack */                                         \
        for (int64_t t0 = 0; t0 < nt; t0 += (NT)) {                                                 \
            const int ntk = (int)TB_MIN((NT), nt - t0);                                             \
            const ABLK *aa[NT];                                                                     \
            const PACT *pa[NT];                                                                     \
            for (int t = 0; t < ntk; t++) {                                                         \
                aa[t] = (const ABLK *)((const uint8_t *)A + (size_t)(t0 + t) * as);                 \
                PREP(aa[t], nb, prep[t]);                                                           \
                pa[t] = prep[t];                                                                    \
            }                                                                                       \
            for (int64_t g = r0 / (R); g * (R) < r1; g++) {                                         \
                VEC o[NT];                                                                          \
                if (ntk == (NT)) DOT((NT), G + g * nb, nb, aa, pa, o);                              \
                else if (ntk == 1) DOT(1, G + g * nb, nb, aa, pa, o);                               \
                else DOT(ntk, G + g * nb, nb, aa, pa, o);                                           \
                for (int t = 0; t < ntk; t++) STORE(Y + (t0 + t) * ldy, g, r0, r1, o[t]);           \
            }                                                                                       \
        }                                                                                           \
        return true;                                                                                \
    }

#if defined(__AVX512F__)
/* acc + vpdpbusd(u, the dword at p in all 16 lanes): u8 x s8 dots of
 * 4-byte groups, the activation dword taken as an embedded {1to16}
 * broadcast memory operand. GCC 12 turns _mm512_set1_epi32(load) into a
 * vpbroadcastd of its own, one extra instruction per dot; the decode
 * loops (nt == 1) are instruction-dense enough that it shows: TQ2_0
 * matvec with the weights in L2, 1 thread, 41.6-45.3 -> 46.8-49.0 GB/s.
 * The asm is a scheduling barrier; the gemm paths, which reuse each
 * broadcast less, keep the intrinsic (TQ2_0 gemm ran 6 % slower with it).
 * Callers are VNNI code paths (the dispatcher saw avx512_vnni). */
TB_INLINE __m512i tb_dpbusd_b32(__m512i acc, __m512i u, const void *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const int32_t *)p));
    return acc;
}

/* Lanes of 16-row group g (rows 16 g .. 16 g + 15, one per 32-bit lane)
 * that fall in [r0, r1): the store mask of every 16-row repacked kernel. */
TB_INLINE __mmask16 tb_grp_mask16(int64_t g, int64_t r0, int64_t r1) {
    const int64_t lo = TB_MAX(r0 - g * 16, 0), hi = TB_MIN(r1 - g * 16, 16);
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}
/* The store of a 16-row group's results: the lanes of group g (one row
 * each) that fall in [r0, r1), to y + 16 g. */
TB_INLINE void tb_grp_store16(float *y, int64_t g, int64_t r0, int64_t r1, __m512 v) {
    _mm512_mask_storeu_ps(y + g * 16, tb_grp_mask16(g, r0, r1), v);
}
/* matvec_<fmt>_rp / gemm_<fmt>_rp of a 16-row AVX-512 repacked format
 * (TB_RP_KERNELS, below). */
#define TB_RP16_KERNELS(fmt, TYPE, GRP, ABLK, PACT, QK, MAXNB, NT, PREP, DOT) \
    TB_RP_KERNELS(fmt##_rp, 16, __m512, TB_ISA_AVX512, tb_grp_store16, TYPE, GRP, ABLK, PACT, QK, MAXNB, NT, PREP, DOT)

/* Row-tiled generator: DOT(nr, nt, n, s, wrows, acts). matvec takes TB_NR
 * rows per pass, gemm TB_NR_GEMM rows x TB_NT tokens; tails use smaller
 * nr / nt, which leave each (row, token) result unchanged. */
#define TB_NR_GEMM 2
/* Rows per matvec pass. 4 is ~35% faster with W in cache, but streaming
 * from DRAM (decode) it measured slower than 1 on the loaded shared VM
 * (4 interleaved row streams vs the stream prefetcher): re-measure with
 * `ternbench kernels --format tq2_0` on a quiet machine. */
#ifndef TB_NR_MV
#define TB_NR_MV 1
#endif
#define TB_X86_KERNELS_RT(name, DOT)                                                       \
    static void vec_dot_##name(int64_t n, float *s, const void *w, const void *a) {       \
        const void *ww[1] = {w}, *aa[1] = {a};                                             \
        float o[TB_NT];                                                                    \
        DOT(1, 1, n, o, ww, aa);                                                           \
        *s = o[0];                                                                         \
    }                                                                                      \
    static void matvec_##name(const void *W, size_t ws, const void *a, float *y,          \
                              int64_t r0, int64_t r1, int64_t n) {                         \
        const void *aa[1] = {a};                                                           \
        for (int64_t r = r0; r < r1; r += TB_NR_MV) {                                      \
            int nr = (int)TB_MIN(TB_NR_MV, r1 - r);                                        \
            const void *ww[TB_NR];                                                         \
            float o[TB_NR * TB_NT];                                                        \
            for (int k = 0; k < nr; k++) ww[k] = (const uint8_t *)W + (size_t)(r + k) * ws; \
            if (nr == TB_NR_MV) DOT(TB_NR_MV, 1, n, o, ww, aa);                               \
            else DOT(nr, 1, n, o, ww, aa);                                                 \
            for (int k = 0; k < nr; k++) y[r + k] = o[k * TB_NT];                          \
        }                                                                                  \
    }                                                                                      \
    static void gemm_##name(const void *W, size_t ws, const void *A, size_t as, int64_t nt, \
                            float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {    \
        for (int64_t r = r0; r < r1; r += TB_NR_GEMM) {                                    \
            int nr = (int)TB_MIN(TB_NR_GEMM, r1 - r);                                      \
            const void *ww[TB_NR];                                                         \
            for (int k = 0; k < nr; k++) ww[k] = (const uint8_t *)W + (size_t)(r + k) * ws; \
            for (int64_t t = 0; t < nt; t += TB_NT) {                                      \
                int ntk = (int)TB_MIN(TB_NT, nt - t);                                      \
                const void *aa[TB_NT];                                                     \
                float o[TB_NR * TB_NT];                                                    \
                for (int k = 0; k < ntk; k++) aa[k] = (const uint8_t *)A + (size_t)(t + k) * as; \
                if (nr == TB_NR_GEMM && ntk == TB_NT) DOT(TB_NR_GEMM, TB_NT, n, o, ww, aa); \
                else DOT(nr, ntk, n, o, ww, aa);                                           \
                for (int q = 0; q < nr; q++)                                               \
                    for (int k = 0; k < ntk; k++) Y[(t + k) * ldy + r + q] = o[q * TB_NT + k]; \
            }                                                                              \
        }                                                                                  \
    }
#endif

#define TB_X86_SET(k, wt, name, quant)                       \
    do {                                                     \
        (k)->t[wt].quantize_act = (quant);                   \
        (k)->t[wt].vec_dot = vec_dot_##name;                 \
        (k)->t[wt].matvec = matvec_##name;                   \
        (k)->t[wt].gemm = gemm_##name;                       \
    } while (0)

/* Sum of 64-bit words, 64 bytes per step in four independent chains. */
TB_INLINE uint64_t read_sum_256(const void *p, size_t n) {
    const __m256i *v = p;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
    for (size_t i = 0; i < n / 32; i += 2) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256(v + i));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256(v + i + 1));
    }
    s0 = _mm256_add_epi64(s0, s1);
    uint64_t r[4];
    _mm256_storeu_si256((__m256i *)r, s0);
    return r[0] + r[1] + r[2] + r[3];
}

#endif
