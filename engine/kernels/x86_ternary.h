/*
 * x86_ternary.h — TQ2_0 and TQ1_0 kernel bodies (x86).
 * Included by tier_avx2.c and tier_avx512.c after x86_common.h (see its
 * determinism contract: one dot_<fmt>(NT tokens) body serves vec_dot,
 * matvec and gemm, so gemm and matvec agree bit for bit per row).
 */
#ifndef TB_X86_TERNARY_H
#define TB_X86_TERNARY_H

#include "kernels/x86_common.h"

#include <pthread.h>

/* ---------------------------------------------------------------------- */
/* TQ2_0 x Q8_K                                                             */
/* ---------------------------------------------------------------------- */

/* dot(q - 1, y) = dot(q, y) - sum(y): codes q in {0,1,2} are the unsigned
 * operand, sum(y) comes from the activation's bsums. */
TB_INLINE void dot_tq2_0(int nt, int64_t n, float *s, const void *w, const void *const *a,
                         bool vnni) {
    const int64_t nb = n / QK_K;
    const block_tq2_0 *x = w;
    __m256 acc[2][TB_NT];
    for (int t = 0; t < nt; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int64_t i0 = 0; i0 < nb; i0 += 2) {
        TB_UNROLL   /* blocks alternate acc[0]/acc[1]; unrolled, acc stays in registers */
        for (int u = 0; u < 2; u++) {
            const int64_t i = i0 + u;
            if (i >= nb) break;
            __m256i q0 = loadu256(x[i].qs), q1 = loadu256(x[i].qs + 32);
            float dx = fp16_f32(x[i].d);
            __m256i h[TB_NT];  /* (16) i16 partial sums per token */
            for (int t = 0; t < nt; t++) h[t] = _mm256_setzero_si256();
            for (int l = 0; l < 4; l++) {
                __m256i c0 = _mm256_and_si256(_mm256_srli_epi16(q0, 2 * l), m3);
                __m256i c1 = _mm256_and_si256(_mm256_srli_epi16(q1, 2 * l), m3);
                for (int t = 0; t < nt; t++) {
                    const block_q8_K *y = (const block_q8_K *)a[t] + i;
                    h[t] = _mm256_add_epi16(h[t], _mm256_maddubs_epi16(c0, loadu256(y->qs + 32 * l)));
                    h[t] = _mm256_add_epi16(h[t], _mm256_maddubs_epi16(c1, loadu256(y->qs + 128 + 32 * l)));
                }
            }
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = (const block_q8_K *)a[t] + i;
                const __m256i one = _mm256_set1_epi16(1);
                __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(h[t], one), _mm256_madd_epi16(loadu256(y->bsums), one));
                acc[u][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * y->d), acc[u][t]);
            }
        }
    }
    (void)vnni;
    for (int t = 0; t < nt; t++) s[t] = hsum_ps256(_mm256_add_ps(acc[0][t], acc[1][t]));
}

/* TQ1_0 decoding, used by both tiers' repacks (AVX-512: 5-bit fields;
 * AVX2: 2-bit codes). Trits of 32 bytes v: ((uint8)v * 3) >> 8 is 0 below
 * 86, 1 below 171, else 2. */
TB_INLINE __m256i tq1_trit32(__m256i v) {
    const __m256i ge1 = _mm256_cmpeq_epi8(_mm256_max_epu8(v, _mm256_set1_epi8(86)), v);
    const __m256i ge2 = _mm256_cmpeq_epi8(_mm256_max_epu8(v, _mm256_set1_epi8((char)171)), v);
    return _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(ge1, ge2));
}

/* The 256 trits (0..2) of a block in element order, by the format's rule
 * (quant/tq1_0.c): trit n of byte q is ((uint8)(q 3^n) * 3) >> 8. */
TB_INLINE void tq1_trits(const block_tq1_0 *x, uint8_t *t) {
    __m256i q = _mm256_loadu_si256((const __m256i *)x->qs);   /* elements 32 n + m */
    __m256i r = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(x->qs + 32)));   /* 160 + 16 n + m */
    for (int n = 0; n < 5; n++) {
        _mm256_storeu_si256((__m256i *)(t + 32 * n), tq1_trit32(q));
        _mm_storeu_si128((__m128i *)(t + 160 + 16 * n), _mm256_castsi256_si128(tq1_trit32(r)));
        q = _mm256_add_epi8(_mm256_add_epi8(q, q), q);
        r = _mm256_add_epi8(_mm256_add_epi8(r, r), r);
    }
    for (int n = 0, w = 1; n < 4; n++, w *= 3)   /* 240 + 4 n + m */
        for (int m = 0; m < 4; m++) t[240 + 4 * n + m] = (uint8_t)((((x->qh[m] * w) & 255) * 3) >> 8);
}

#if defined(__AVX512F__)
/* Software prefetch distance for row-tiled kernels: TB_NR rows streamed
 * side by side defeat the L2 stream prefetcher, so each row prefetches the
 * weight bytes this far ahead (rows are contiguous: the union is the
 * next tiles). */
#ifndef TB_PF_BYTES
#define TB_PF_BYTES 4096
#endif

/* Row-tiled TQ2_0 (AVX-512): nr weight rows w[r] times nt activations
 * a[t], s[r * TB_NT + t]. Activation loads are shared by the nr rows and
 * code extraction by the nt tokens. A 64-byte code register holds half 0
 * (elements 32l + m) in its low 256 bits and half 1 (128 + 32l + m) in its
 * high 256 bits, so the activation for shift l is [y(32l) | y(128 + 32l)].
 * Per (row, token) the arithmetic is the same for any nr, nt. */
TB_INLINE void dot_tq2_0_rt(int nr, int nt, int64_t n, float *s, const void *const *w,
                            const void *const *a, bool vnni) {
    const int64_t nb = n / QK_K;
    const __m512i m3 = _mm512_set1_epi8(3), one16 = _mm512_set1_epi16(1);
    __m512 acc[TB_NR][TB_NT];
    TB_UNROLL
    for (int r = 0; r < nr; r++)
        TB_UNROLL
        for (int t = 0; t < nt; t++) acc[r][t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m512i qs[TB_NR] = {0};   /* all set: -Wmaybe-uninitialized with runtime nr */
        float dx[TB_NR] = {0};
        TB_UNROLL
        for (int r = 0; r < nr; r++) {
            const block_tq2_0 *x = (const block_tq2_0 *)w[r] + i;
            _mm_prefetch((const char *)x + TB_PF_BYTES, _MM_HINT_T0);
            qs[r] = _mm512_loadu_si512(x->qs);
            dx[r] = fp16_f32(x->d);
        }
        __m512i nbs[TB_NT];          /* -(bsums) as 16 x i32: sum(y) = sum of lanes */
        __m512i p[TB_NR][TB_NT];     /* (16) i32, or (32) i16 without VNNI           */
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const block_q8_K *y = (const block_q8_K *)a[t] + i;
            nbs[t] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_cvtepi16_epi32(loadu256(y->bsums)));
            TB_UNROLL
            for (int r = 0; r < nr; r++) p[r][t] = vnni ? nbs[t] : _mm512_setzero_si512();
        }
        TB_UNROLL
        for (int l = 0; l < 4; l++) {
            __m512i yl[TB_NT] = {0};
            TB_UNROLL
            for (int t = 0; t < nt; t++) {
                const int8_t *q = ((const block_q8_K *)a[t] + i)->qs;
                yl[t] = _mm512_inserti64x4(_mm512_castsi256_si512(loadu256(q + 32 * l)), loadu256(q + 128 + 32 * l), 1);
            }
            TB_UNROLL
            for (int r = 0; r < nr; r++) {
                __m512i c = _mm512_and_si512(l ? _mm512_srli_epi16(qs[r], 2 * l) : qs[r], m3);
                TB_UNROLL
                for (int t = 0; t < nt; t++) {
#if defined(__AVX512VNNI__)
                    if (vnni) { p[r][t] = _mm512_dpbusd_epi32(p[r][t], c, yl[t]); continue; }
#endif
                    p[r][t] = _mm512_add_epi16(p[r][t], _mm512_maddubs_epi16(c, yl[t]));
                }
            }
        }
        for (int t = 0; t < nt; t++) {
            const float dy = ((const block_q8_K *)a[t] + i)->d;
            for (int r = 0; r < nr; r++) {
                __m512i q = vnni ? p[r][t] : _mm512_add_epi32(_mm512_madd_epi16(p[r][t], one16), nbs[t]);
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(dx[r] * dy), acc[r][t]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++) s[r * TB_NT + t] = _mm512_reduce_add_ps(acc[r][t]);
}

/* ---------------------------------------------------------------------- */
/* TQ2_0, repacked: 16 rows interleaved (AVX-512 VNNI)                      */
/* ---------------------------------------------------------------------- */

/* Layout (per group of 16 rows g, per block i; 1056 bytes = 16 x 66, so
 * the copy is exactly as large as the file rows, padded to 16 rows):
 *   [0..1023]    16 chunks j of 64 bytes: lane k (bytes 4k..4k+3) holds
 *                bytes 4j..4j+3 of row k's qs — a 16 x 16 dword transpose
 *   [1024..1055] d of rows 0..15 (fp16)
 * Bits 2l of lane byte b of chunk j are the code of element
 * 128 (j / 8) + 32 l + 4 (j % 8) + b, so the activation for (j, l) is one
 * dword broadcast to all 16 lanes: one vpdpbusd does 16 rows x 4 elements,
 * and the per-block float work (scale, convert, fma) is shared by 16 rows. */
#define TB_RP_ROWS 16
static_assert(TB_RP_ROWS == 16, "store masks are tb_grp_mask16 (x86_common.h)");
#define TB_RP_MAXNB 64     /* larger rows (n > 16384) use the file layout */
#define TB_RP_NT 8         /* tokens per gemm pass */
typedef struct {
    uint8_t q[16][64];
    tb_fp16_t d[TB_RP_ROWS];
} tq2_0_grp;
static_assert(sizeof(tq2_0_grp) == TB_RP_ROWS * sizeof(block_tq2_0), "tq2_0_grp size");

/* Repack rows of W (file layout) into groups of 16; missing rows of the
 * last group are zero codes with d = 0. */
static void repack_tq2_0(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    const int64_t nb = n / QK_K, ng = (rows + TB_RP_ROWS - 1) / TB_RP_ROWS;
    tq2_0_grp *G = out;   // (ng, nb)
    for (int64_t g = 0; g < ng; g++)
        for (int64_t i = 0; i < nb; i++) {
            tq2_0_grp *o = &G[g * nb + i];
            memset(o, 0, sizeof *o);
            for (int k = 0; k < TB_RP_ROWS && g * TB_RP_ROWS + k < rows; k++) {
                const block_tq2_0 *x = (const block_tq2_0 *)((const uint8_t *)W + (size_t)(g * TB_RP_ROWS + k) * ws) + i;
                for (int j = 0; j < 16; j++) memcpy(&o->q[j][4 * k], &x->qs[4 * j], 4);
                o->d[k] = x->d;
            }
        }
}

/* -(sum of the activation block): the code offset (w = q - 1). */
TB_INLINE int32_t neg_sum_q8_K(const block_q8_K *y) {
    int32_t s = 0;
    for (int k = 0; k < QK_K / 16; k++) s += y->bsums[k];
    return -s;
}

/* The gemm tile of ntk tokens from t0: aa[t] = activation row t0 + t of A
 * (row stride as), nsum[t][i] = neg_sum_q8_K of its block i, i < nb. */
TB_INLINE void tern_prep_tile(const void *A, size_t as, int64_t t0, int ntk, int64_t nb, const block_q8_K **aa,
                              int32_t (*nsum)[TB_RP_MAXNB]) {
    for (int t = 0; t < ntk; t++) {
        aa[t] = (const block_q8_K *)((const uint8_t *)A + (size_t)(t0 + t) * as);
        for (int64_t i = 0; i < nb; i++) nsum[t][i] = neg_sum_q8_K(&aa[t][i]);
    }
}

/* One group of 16 rows (nb blocks at G) times nt activations a[t] (nsum[t]
 * their -sums per block): out[t] = 16 row results. The integer dot of each
 * (row, block, token) is exact; the float steps (convert, scale, fma in
 * block order) are the same for any nt, so gemm == matvec bit for bit.
 * nt == 1 masks codes in place (4 accumulators, shifted once per block);
 * nt > 1 shifts codes once per chunk and shares them across tokens. */
TB_INLINE void dot_tq2_0_grp(int nt, const tq2_0_grp *G, int64_t nb, const block_q8_K *const *a,
                             const int32_t (*nsum)[TB_RP_MAXNB], __m512 *out) {
    __m512 acc[TB_RP_NT];   /* all set: a runtime nt would trip -Wmaybe-uninitialized */
    TB_UNROLL
    for (int t = 0; t < TB_RP_NT; t++) acc[t] = _mm512_setzero_ps();
    const __m512i m3 = _mm512_set1_epi8(3);
    const uint32_t pf = nt == 1 ? tb_pf_bytes : 0;
    for (int64_t i = 0; i < nb; i++) {
        const tq2_0_grp *x = &G[i];
        tb_pf_block(x, sizeof *x, pf);
        __m512i p[TB_RP_NT];   /* (16) i32 per token */
        TB_UNROLL
        for (int t = 0; t < TB_RP_NT; t++) p[t] = _mm512_setzero_si512();
        if (nt == 1) {
            const int8_t *y = a[0][i].qs;
            const __m512i m1 = _mm512_set1_epi8(12), m2 = _mm512_set1_epi8(48), m4 = _mm512_set1_epi8((char)192);
            __m512i c[8];   /* (l, chunk parity): codes scaled by 4^l */
            TB_UNROLL
            for (int k = 0; k < 8; k++) c[k] = _mm512_setzero_si512();
            TB_UNROLL
            for (int j2 = 0; j2 < 16; j2 += 2)      /* two chunks per step: constant indices into c */
                TB_UNROLL
                for (int h = 0; h < 8; h += 4) {
                    const int j = j2 + h / 4;
                    const __m512i q = _mm512_loadu_si512(x->q[j]);
                    const int8_t *yj = y + 128 * (j / 8) + 4 * (j % 8);
                    c[h + 0] = tb_dpbusd_b32(c[h + 0], _mm512_and_si512(q, m3), yj);
                    c[h + 1] = tb_dpbusd_b32(c[h + 1], _mm512_and_si512(q, m1), yj + 32);
                    c[h + 2] = tb_dpbusd_b32(c[h + 2], _mm512_and_si512(q, m2), yj + 64);
                    c[h + 3] = tb_dpbusd_b32(c[h + 3], _mm512_and_si512(q, m4), yj + 96);
                }
            __m512i s = _mm512_add_epi32(_mm512_add_epi32(c[0], c[4]), _mm512_set1_epi32(nsum[0][i]));
            s = _mm512_add_epi32(s, _mm512_srai_epi32(_mm512_add_epi32(c[1], c[5]), 2));
            s = _mm512_add_epi32(s, _mm512_srai_epi32(_mm512_add_epi32(c[2], c[6]), 4));
            p[0] = _mm512_add_epi32(s, _mm512_srai_epi32(_mm512_add_epi32(c[3], c[7]), 6));
        } else {
            TB_UNROLL
            for (int t = 0; t < nt; t++) p[t] = _mm512_set1_epi32(nsum[t][i]);
            TB_UNROLL
            for (int j = 0; j < 16; j++) {
                const __m512i q = _mm512_loadu_si512(x->q[j]);
                const __m512i c0 = _mm512_and_si512(q, m3), c1 = _mm512_and_si512(_mm512_srli_epi16(q, 2), m3);
                const __m512i c2 = _mm512_and_si512(_mm512_srli_epi16(q, 4), m3);
                const __m512i c3 = _mm512_and_si512(_mm512_srli_epi16(q, 6), m3);
                const int off = 128 * (j / 8) + 4 * (j % 8);
                TB_UNROLL
                for (int t = 0; t < nt; t++) {
                    const int8_t *yj = a[t][i].qs + off;
                    int32_t y0, y1, y2, y3;
                    memcpy(&y0, yj, 4); memcpy(&y1, yj + 32, 4); memcpy(&y2, yj + 64, 4); memcpy(&y3, yj + 96, 4);
                    p[t] = _mm512_dpbusd_epi32(p[t], c0, _mm512_set1_epi32(y0));
                    p[t] = _mm512_dpbusd_epi32(p[t], c1, _mm512_set1_epi32(y1));
                    p[t] = _mm512_dpbusd_epi32(p[t], c2, _mm512_set1_epi32(y2));
                    p[t] = _mm512_dpbusd_epi32(p[t], c3, _mm512_set1_epi32(y3));
                }
            }
        }
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)x->d));   /* (16) */
        TB_UNROLL
        for (int t = 0; t < nt; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p[t]), _mm512_mul_ps(dx, _mm512_set1_ps(a[t][i].d)), acc[t]);
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) out[t] = acc[t];
}

/* matvec on the repacked copy; false when W has none (caller falls back). */
static bool matvec_tq2_0_rp(const void *W, size_t ws, const void *a, float *y, int64_t r0, int64_t r1,
                            int64_t n) {
    const int64_t nb = n / QK_K;
    if (nb > TB_RP_MAXNB || r0 >= r1) return r0 >= r1;
    const tq2_0_grp *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_TQ2_0);
    if (!G) return false;
    int32_t nsum[1][TB_RP_MAXNB];
    const block_q8_K *aa[1] = {a};
    for (int64_t i = 0; i < nb; i++) nsum[0][i] = neg_sum_q8_K(&aa[0][i]);
    for (int64_t g = r0 / TB_RP_ROWS; g * TB_RP_ROWS < r1; g++) {
        __m512 o[1];
        dot_tq2_0_grp(1, G + g * nb, nb, aa, nsum, o);
        _mm512_mask_storeu_ps(y + g * TB_RP_ROWS, tb_grp_mask16(g, r0, r1), o[0]);
    }
    return true;
}

/* gemm on the repacked copy: TB_RP_NT tokens per pass over the rows. */
static bool gemm_tq2_0_rp(const void *W, size_t ws, const void *A, size_t as, int64_t nt, float *Y,
                          int64_t ldy, int64_t r0, int64_t r1, int64_t n) {
    const int64_t nb = n / QK_K;
    if (nb > TB_RP_MAXNB || r0 >= r1) return r0 >= r1;
    const tq2_0_grp *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_TQ2_0);
    if (!G) return false;
    int32_t nsum[TB_RP_NT][TB_RP_MAXNB];
    for (int64_t t0 = 0; t0 < nt; t0 += TB_RP_NT) {
        const int ntk = (int)TB_MIN(TB_RP_NT, nt - t0);
        const block_q8_K *aa[TB_RP_NT];
        tern_prep_tile(A, as, t0, ntk, nb, aa, nsum);
        for (int64_t g = r0 / TB_RP_ROWS; g * TB_RP_ROWS < r1; g++) {
            __m512 o[TB_RP_NT];
            if (ntk == TB_RP_NT) dot_tq2_0_grp(TB_RP_NT, G + g * nb, nb, aa, nsum, o);
            else if (ntk == 1) dot_tq2_0_grp(1, G + g * nb, nb, aa, nsum, o);
            else dot_tq2_0_grp(ntk, G + g * nb, nb, aa, nsum, o);
            const __mmask16 m = tb_grp_mask16(g, r0, r1);
            for (int t = 0; t < ntk; t++) _mm512_mask_storeu_ps(Y + (t0 + t) * ldy + g * TB_RP_ROWS, m, o[t]);
        }
    }
    return true;
}

/* ---------------------------------------------------------------------- */
/* TQ1_0, repacked: 16 rows interleaved (AVX-512 VNNI)                      */
/* ---------------------------------------------------------------------- */

/* Layout (per group of 16 rows, per block; 864 bytes = 16 x 54):
 *   [0..831]    13 chunks j of 64 bytes: lane k holds bytes 4j..4j+3 of
 *               row k's qs (j < 12) or its qh (j = 12)
 *   [832..863]  d of rows 0..15 (fp16)
 * Trits without extracting them: with v_0 = q and v_{l+1} = 3 v_l mod 256
 * (byte adds), trit l is t_l = (3 v_l - v_{l+1}) / 256 exactly, so
 *   sum_l t_l . y_l = (3 sum_l v_l . y_l - sum_l v_{l+1} . y_l) / 256,
 * two vpdpbusd on bytes that need no decoding. */
typedef struct {
    uint8_t q[13][64];
    tb_fp16_t d[TB_RP_ROWS];
} tq1_0_grp;
static_assert(sizeof(tq1_0_grp) == TB_RP_ROWS * sizeof(block_tq1_0), "tq1_0_grp size");
#define TB_RP_NT1 4   /* tokens per TQ1_0 gemm pass (two accumulators each) */

/* The 5-bit layout (AVX512_VBMI; defined below): repack, matvec, gemm. */
static void repack_tq1_0_g5(const void *W, size_t ws, int64_t rows, int64_t n, void *out);
static void matvec_tq1_0_g5(const void *G, const void *a, float *y, int64_t r0, int64_t r1, int64_t nb);
static void gemm_tq1_0_g5(const void *G, const void *A, size_t as, int64_t nt, float *Y, int64_t ldy,
                          int64_t r0, int64_t r1, int64_t nb);
/* The 5-bit layout (tq1_g5_codes, below) when the CPU has AVX512_VBMI. */
static void repack_tq1_0(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    if (tb_cpu.avx512vbmi) { repack_tq1_0_g5(W, ws, rows, n, out); return; }
    const int64_t nb = n / QK_K, ng = (rows + TB_RP_ROWS - 1) / TB_RP_ROWS;
    tq1_0_grp *G = out;   // (ng, nb)
    for (int64_t g = 0; g < ng; g++)
        for (int64_t i = 0; i < nb; i++) {
            tq1_0_grp *o = &G[g * nb + i];
            memset(o, 0, sizeof *o);
            for (int k = 0; k < TB_RP_ROWS && g * TB_RP_ROWS + k < rows; k++) {
                const block_tq1_0 *x = (const block_tq1_0 *)((const uint8_t *)W + (size_t)(g * TB_RP_ROWS + k) * ws) + i;
                for (int j = 0; j < 12; j++) memcpy(&o->q[j][4 * k], &x->qs[4 * j], 4);
                memcpy(&o->q[12][4 * k], x->qh, 4);
                o->d[k] = x->d;
            }
        }
}

/* Activation byte offset of (chunk j, trit l); trits per chunk. */
TB_INLINE int tq1_off(int j, int l) {
    return j < 8 ? 32 * l + 4 * j : j < 12 ? 160 + 16 * l + 4 * (j - 8) : 240 + 4 * l;
}

/* One chunk j (nl trits per byte) of one block into accumulators [h]. */
TB_INLINE void tq1_chunk(int nt, const uint8_t *q, int j, int nl, int h, int64_t i, const block_q8_K *const *a,
                         __m512i (*pa)[2], __m512i (*pb)[2]) {
    __m512i v = _mm512_loadu_si512(q);
    _Pragma("GCC unroll 5")
    for (int l = 0; l < nl; l++) {
        const __m512i v3 = _mm512_add_epi8(_mm512_add_epi8(v, v), v);   /* v_{l+1} */
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            int32_t yw;
            memcpy(&yw, a[t][i].qs + tq1_off(j, l), 4);
            const __m512i yb = _mm512_set1_epi32(yw);
            pa[t][h] = _mm512_dpbusd_epi32(pa[t][h], v, yb);
            pb[t][h] = _mm512_dpbusd_epi32(pb[t][h], v3, yb);
        }
        v = v3;
    }
}

/* As dot_tq2_0_grp for TQ1_0: out[t] = 16 row results of token t. With one
 * token, even and odd chunks use separate accumulators (shorter chains). */
TB_INLINE void dot_tq1_0_grp(int nt, const tq1_0_grp *G, int64_t nb, const block_q8_K *const *a,
                             const int32_t (*nsum)[TB_RP_MAXNB], __m512 *out) {
    __m512 acc[TB_RP_NT1];
    TB_UNROLL
    for (int t = 0; t < TB_RP_NT1; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const tq1_0_grp *x = &G[i];
        __m512i pa[TB_RP_NT1][2], pb[TB_RP_NT1][2];   /* (16) i32: sum v_l.y_l, sum v_{l+1}.y_l */
        TB_UNROLL
        for (int t = 0; t < TB_RP_NT1; t++)
            pa[t][0] = pa[t][1] = pb[t][0] = pb[t][1] = _mm512_setzero_si512();
        _Pragma("GCC unroll 6")
        for (int j2 = 0; j2 < 12; j2 += 2) {
            tq1_chunk(nt, x->q[j2], j2, 5, 0, i, a, pa, pb);
            tq1_chunk(nt, x->q[j2 + 1], j2 + 1, 5, nt == 1, i, a, pa, pb);
        }
        tq1_chunk(nt, x->q[12], 12, 4, 0, i, a, pa, pb);
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)x->d));   /* (16) */
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            __m512i A = _mm512_add_epi32(pa[t][0], pa[t][1]), B = _mm512_add_epi32(pb[t][0], pb[t][1]);
            __m512i p = _mm512_srai_epi32(_mm512_sub_epi32(_mm512_add_epi32(_mm512_add_epi32(A, A), A), B), 8);
            p = _mm512_add_epi32(p, _mm512_set1_epi32(nsum[t][i]));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dx, _mm512_set1_ps(a[t][i].d)), acc[t]);
        }
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) out[t] = acc[t];
}

static bool matvec_tq1_0_rp(const void *W, size_t ws, const void *a, float *y, int64_t r0, int64_t r1,
                            int64_t n) {
    const int64_t nb = n / QK_K;
    if (nb > TB_RP_MAXNB || r0 >= r1) return r0 >= r1;
    const tq1_0_grp *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_TQ1_0);
    if (!G) return false;
    if (tb_cpu.avx512vbmi) { matvec_tq1_0_g5(G, a, y, r0, r1, nb); return true; }
    int32_t nsum[1][TB_RP_MAXNB];
    const block_q8_K *aa[1] = {a};
    for (int64_t i = 0; i < nb; i++) nsum[0][i] = neg_sum_q8_K(&aa[0][i]);
    for (int64_t g = r0 / TB_RP_ROWS; g * TB_RP_ROWS < r1; g++) {
        __m512 o[TB_RP_NT1];
        dot_tq1_0_grp(1, G + g * nb, nb, aa, nsum, o);
        _mm512_mask_storeu_ps(y + g * TB_RP_ROWS, tb_grp_mask16(g, r0, r1), o[0]);
    }
    return true;
}

static bool gemm_tq1_0_rp(const void *W, size_t ws, const void *A, size_t as, int64_t nt, float *Y,
                          int64_t ldy, int64_t r0, int64_t r1, int64_t n) {
    const int64_t nb = n / QK_K;
    if (nb > TB_RP_MAXNB || r0 >= r1) return r0 >= r1;
    const tq1_0_grp *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_TQ1_0);
    if (!G) return false;
    if (tb_cpu.avx512vbmi) { gemm_tq1_0_g5(G, A, as, nt, Y, ldy, r0, r1, nb); return true; }
    int32_t nsum[TB_RP_NT1][TB_RP_MAXNB];
    for (int64_t t0 = 0; t0 < nt; t0 += TB_RP_NT1) {
        const int ntk = (int)TB_MIN(TB_RP_NT1, nt - t0);
        const block_q8_K *aa[TB_RP_NT1];
        tern_prep_tile(A, as, t0, ntk, nb, aa, nsum);
        for (int64_t g = r0 / TB_RP_ROWS; g * TB_RP_ROWS < r1; g++) {
            __m512 o[TB_RP_NT1];
            if (ntk == TB_RP_NT1) dot_tq1_0_grp(TB_RP_NT1, G + g * nb, nb, aa, nsum, o);
            else if (ntk == 1) dot_tq1_0_grp(1, G + g * nb, nb, aa, nsum, o);
            else dot_tq1_0_grp(ntk, G + g * nb, nb, aa, nsum, o);
            const __mmask16 m = tb_grp_mask16(g, r0, r1);
            for (int t = 0; t < ntk; t++) _mm512_mask_storeu_ps(Y + (t0 + t) * ldy + g * TB_RP_ROWS, m, o[t]);
        }
    }
    return true;
}

/* ---------------------------------------------------------------------- */
/* TQ1_0, repacked in 5-bit fields: 16 rows interleaved (AVX-512 VBMI+VNNI) */
/* ---------------------------------------------------------------------- */

/* Used instead of tq1_0_grp when the CPU has AVX512_VBMI (tb_cpu): the
 * layout above needs two vpdpbusd per 64 trits; here every 64 trits cost
 * one vpermb (trit lookup) and one vpdpbusd, for 7.4 % more bytes
 * (58 per row and block instead of 54).
 * Layout of a group of 16 rows (nb blocks, nb x 928 bytes rounded up to 64),
 * blocks in pairs (2 j, 2 j + 1) of 1856 bytes:
 *   [0..895]      block 2 j: tq1_g5_codes, 7 pairs p of 64-byte chunks
 *                 R0 = q[2p], R1 = q[2p + 1]; lane byte L = 4 k + b is row
 *                 k, element offset b
 *   [896..927]    d of block 2 j, rows 0..15 (fp16)
 *   [928..959]    d of block 2 j + 1 (padding when it does not exist)
 *   [960..1855]   block 2 j + 1: tq1_g5_codes
 * so every code load is 64-byte aligned and the copy is read as one
 * stream, in order (the scales in a separate stream after or before the
 * codes of the group cost up to 2x on 5632-column rows: their lines miss).
 * Trit vector v (0..63) is element 4 v + b of every row: it pairs with the
 * activation dword at 4 v, broadcast. Pair p carries v = 9 p .. 9 p + 8 as
 * three base-3 fields of three trits (f = 0, 1, 2; trit s of field f is
 * v = 9 p + 3 f + s, weight 3^s):
 *   A (f = 0) = bits 0..4 of R0 lane L,  B (f = 1) = bits 0..4 of R1,
 *   C (f = 2) + 27 x_p = bits 5..7 of R0 (low) and 5..7 of R1 (high),
 * and the last vector (v = 63) is x_0 + 2 x_1 (x_p = 0 for p >= 2).
 * vpermb reads the low 6 bits of each index byte, so A and B index their
 * tables directly (bit 5, from C, is ignored by the tables) and C takes
 * two 16-bit shifts and one vpternlogd. */
typedef struct {
    uint8_t q[14][64];
} tq1_g5_codes;
#define TB_G5_BLOCK (sizeof(tq1_g5_codes) + TB_RP_ROWS * sizeof(tb_fp16_t))   /* 928 */
static_assert(TB_G5_BLOCK == TB_RP_ROWS * 58, "tq1_0 5-bit layout size");
/* Bytes of one group of nb blocks; offsets of block i's codes and scales. */
TB_INLINE size_t tq1_g5_group_bytes(int64_t nb) { return ((size_t)nb * TB_G5_BLOCK + 63) & ~(size_t)63; }
TB_INLINE size_t tq1_g5_codes_at(int64_t i) { return (size_t)(i / 2) * 2 * TB_G5_BLOCK + (size_t)(i & 1) * (TB_G5_BLOCK + 32); }
TB_INLINE size_t tq1_g5_d_at(int64_t i) { return (size_t)(i / 2) * 2 * TB_G5_BLOCK + sizeof(tq1_g5_codes) + (size_t)(i & 1) * 32; }
static_assert(sizeof(tq1_g5_codes) % 64 == 0 && TB_G5_BLOCK + 32 == sizeof(tq1_g5_codes) + 64, "g5 pair layout");

/* Copy bytes of rows rows (row stride ws) in the layout the repack makes. */
static size_t repack_bytes_tq1_0(size_t ws, int64_t rows) {
    if (!tb_cpu.avx512vbmi) return tb_repack_bytes(ws, rows, TB_RP_ROWS);
    return tq1_g5_group_bytes((int64_t)(ws / sizeof(block_tq1_0))) * (size_t)((rows + TB_RP_ROWS - 1) / TB_RP_ROWS);
}

/* Row by row, in order; each row block's fields are built four lanes
 * (b = 0..3, one dword of t) at a time: no field exceeds 53, so the dword
 * sums do not carry between lanes. */
static void repack_tq1_0_g5(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    const int64_t nb = n / QK_K, ng = (rows + TB_RP_ROWS - 1) / TB_RP_ROWS;
    const size_t gb = tq1_g5_group_bytes(nb);
    if (rows % TB_RP_ROWS) memset((uint8_t *)out + (size_t)(ng - 1) * gb, 0, gb);
    uint32_t t[QK_K / 4];   /* (64 vectors) x 4 lanes: element 4 v + b is byte b of t[v] */
    const uint32_t low3 = 0x07070707u, ones = 0x01010101u;
    for (int64_t r = 0; r < rows; r++) {
        const int k = (int)(r % TB_RP_ROWS);
        uint8_t *grp = (uint8_t *)out + (size_t)(r / TB_RP_ROWS) * gb;
        const block_tq1_0 *x = (const block_tq1_0 *)((const uint8_t *)W + (size_t)r * ws);
        for (int64_t i = 0; i < nb; i++) {
            tq1_g5_codes *c = (tq1_g5_codes *)(grp + tq1_g5_codes_at(i));
            tq1_trits(&x[i], (uint8_t *)t);
            for (int p = 0; p < 7; p++) {
                const uint32_t *v = t + 9 * p;
                const uint32_t fa = v[0] + 3 * v[1] + 9 * v[2], fb = v[3] + 3 * v[4] + 9 * v[5];
                const uint32_t xb = p == 0 ? t[63] & ones : p == 1 ? (t[63] >> 1) & ones : 0;
                const uint32_t fc = v[6] + 3 * v[7] + 9 * v[8] + 27 * xb;
                const uint32_t r0 = fa | (fc & low3) << 5, r1 = fb | ((fc >> 3) & low3) << 5;
                memcpy(&c->q[2 * p][4 * k], &r0, 4);
                memcpy(&c->q[2 * p + 1][4 * k], &r1, 4);
            }
            memcpy(grp + tq1_g5_d_at(i) + sizeof(tb_fp16_t) * k, &x[i].d, sizeof(tb_fp16_t));
        }
    }
}

/* The 8 vpermb tables: trit s of an A/B index (bit 5 ignored), trit s of a
 * C index, and x_0, 2 x_1 of a C index. */
static void tq1_g5_tables(uint8_t T[8][64]) {
    for (int i = 0; i < 64; i++) {
        for (int s = 0, w = 1; s < 3; s++, w *= 3) {
            T[s][i] = (uint8_t)((i & 31) / w % 3);
            T[3 + s][i] = (uint8_t)(i < 54 ? i % 27 / w % 3 : 0);
        }
        T[6][i] = (uint8_t)(i < 54 ? i / 27 : 0);
        T[7][i] = (uint8_t)(2 * T[6][i]);
    }
}

/* As dot_tq1_0_grp on the 5-bit layout (group at grp, nb blocks; same
 * exact integers and float steps, so the results equal dot_tq1_0_grp's bit
 * for bit). One token spreads the 9 vectors of a pair over 9 accumulators,
 * more tokens use 3 each (by field). */
#define TB_G5_TARGET __attribute__((target("avx512vbmi")))
TB_G5_TARGET TB_INLINE void dot_tq1_0_g5(int nt, const uint8_t *grp, int64_t nb, const block_q8_K *const *a,
                                         const int32_t (*nsum)[TB_RP_MAXNB], const __m512i *T, __m512 *out) {
    __m512 acc[TB_RP_NT1];
    TB_UNROLL
    for (int t = 0; t < TB_RP_NT1; t++) acc[t] = _mm512_setzero_ps();
    const __m512i m7 = _mm512_set1_epi8(7);
    const uint32_t pf = nt == 1 ? tb_pf_bytes : 0;
    for (int64_t i = 0; i < nb; i++) {
        const tq1_g5_codes *x = (const tq1_g5_codes *)(grp + tq1_g5_codes_at(i));
        tb_pf_block((const uint8_t *)x + sizeof *x, 64, pf);   /* the line after the codes (block 2j: the pair's d) */
        __m512i p[TB_RP_NT1][9];   /* (16) i32 partial sums of t . y */
        TB_UNROLL
        for (int t = 0; t < TB_RP_NT1; t++)
            TB_UNROLL
            for (int h = 0; h < 9; h++) p[t][h] = _mm512_setzero_si512();
        __m512i last = _mm512_setzero_si512();
        _Pragma("GCC unroll 7")
        for (int pp = 0; pp < 7; pp++) {
            tb_pf_block(x->q[2 * pp], 128, pf);   /* each pair of code lines as it is read */
            const __m512i r0 = _mm512_load_si512(x->q[2 * pp]), r1 = _mm512_load_si512(x->q[2 * pp + 1]);
            const __m512i ic = _mm512_ternarylogic_epi32(m7, _mm512_srli_epi16(r0, 5), _mm512_srli_epi16(r1, 2), 0xCA);
            if (pp == 0) last = _mm512_permutexvar_epi8(ic, T[6]);
            if (pp == 1) last = _mm512_add_epi8(last, _mm512_permutexvar_epi8(ic, T[7]));
            TB_UNROLL
            for (int f = 0; f < 3; f++)
                TB_UNROLL
                for (int s = 0; s < 3; s++) {
                    const __m512i tv = _mm512_permutexvar_epi8(f == 0 ? r0 : f == 1 ? r1 : ic, T[(f == 2) * 3 + s]);
                    const int off = 4 * (9 * pp + 3 * f + s), h = nt == 1 ? 3 * f + s : f;
                    TB_UNROLL
                    for (int t = 0; t < nt; t++) {
                        int32_t yw;
                        memcpy(&yw, a[t][i].qs + off, 4);
                        p[t][h] = _mm512_dpbusd_epi32(p[t][h], tv, _mm512_set1_epi32(yw));
                    }
                }
        }
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(grp + tq1_g5_d_at(i))));   /* (16) */
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            int32_t yw;
            memcpy(&yw, a[t][i].qs + 4 * 63, 4);
            __m512i q = _mm512_dpbusd_epi32(_mm512_set1_epi32(nsum[t][i]), last, _mm512_set1_epi32(yw));
            if (nt == 1) {   /* a tree: the chains end at different times */
                q = _mm512_add_epi32(_mm512_add_epi32(q, p[t][0]), _mm512_add_epi32(p[t][1], p[t][2]));
                q = _mm512_add_epi32(q, _mm512_add_epi32(_mm512_add_epi32(p[t][3], p[t][4]), p[t][5]));
                q = _mm512_add_epi32(q, _mm512_add_epi32(_mm512_add_epi32(p[t][6], p[t][7]), p[t][8]));
            } else
                q = _mm512_add_epi32(_mm512_add_epi32(q, p[t][0]), _mm512_add_epi32(p[t][1], p[t][2]));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), _mm512_mul_ps(dx, _mm512_set1_ps(a[t][i].d)), acc[t]);
        }
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) out[t] = acc[t];
}

/* The tables, made once (a matvec may be called per 64 rows: building
 * them took longer than such a call's arithmetic). */
static uint8_t tq1_g5_tab[8][64] __attribute__((aligned(64)));
static pthread_once_t tq1_g5_once = PTHREAD_ONCE_INIT;
static void tq1_g5_make_tables(void) { tq1_g5_tables(tq1_g5_tab); }

TB_G5_TARGET static void tq1_g5_load_tables(__m512i *T) {
    pthread_once(&tq1_g5_once, tq1_g5_make_tables);
    for (int k = 0; k < 8; k++) T[k] = _mm512_load_si512(tq1_g5_tab[k]);
}

TB_G5_TARGET static void matvec_tq1_0_g5(const void *G, const void *a, float *y, int64_t r0, int64_t r1,
                                         int64_t nb) {
    __m512i T[8];
    tq1_g5_load_tables(T);
    int32_t nsum[1][TB_RP_MAXNB];
    const block_q8_K *aa[1] = {a};
    for (int64_t i = 0; i < nb; i++) nsum[0][i] = neg_sum_q8_K(&aa[0][i]);
    for (int64_t g = r0 / TB_RP_ROWS; g * TB_RP_ROWS < r1; g++) {
        __m512 o[TB_RP_NT1];
        dot_tq1_0_g5(1, (const uint8_t *)G + (size_t)g * tq1_g5_group_bytes(nb), nb, aa, nsum, T, o);
        _mm512_mask_storeu_ps(y + g * TB_RP_ROWS, tb_grp_mask16(g, r0, r1), o[0]);
    }
}

TB_G5_TARGET static void gemm_tq1_0_g5(const void *G, const void *A, size_t as, int64_t nt, float *Y,
                                       int64_t ldy, int64_t r0, int64_t r1, int64_t nb) {
    __m512i T[8];
    tq1_g5_load_tables(T);
    int32_t nsum[TB_RP_NT1][TB_RP_MAXNB];
    for (int64_t t0 = 0; t0 < nt; t0 += TB_RP_NT1) {
        const int ntk = (int)TB_MIN(TB_RP_NT1, nt - t0);
        const block_q8_K *aa[TB_RP_NT1];
        tern_prep_tile(A, as, t0, ntk, nb, aa, nsum);
        for (int64_t g = r0 / TB_RP_ROWS; g * TB_RP_ROWS < r1; g++) {
            const uint8_t *grp = (const uint8_t *)G + (size_t)g * tq1_g5_group_bytes(nb);
            __m512 o[TB_RP_NT1];
            if (ntk == TB_RP_NT1) dot_tq1_0_g5(TB_RP_NT1, grp, nb, aa, nsum, T, o);
            else if (ntk == 1) dot_tq1_0_g5(1, grp, nb, aa, nsum, T, o);
            else dot_tq1_0_g5(ntk, grp, nb, aa, nsum, T, o);
            const __mmask16 m = tb_grp_mask16(g, r0, r1);
            for (int t = 0; t < ntk; t++) _mm512_mask_storeu_ps(Y + (t0 + t) * ldy + g * TB_RP_ROWS, m, o[t]);
        }
    }
}
#endif

/* ---------------------------------------------------------------------- */
/* TQ1_0 x Q8_K                                                             */
/* ---------------------------------------------------------------------- */

/* Trits of 32 base-3 bytes: ((uint8)q * 3) >> 8 is 0 below 86, 1 below 171, else 2. */
TB_INLINE __m256i trit256(__m256i q) {
    __m256i ge1 = _mm256_cmpeq_epi8(_mm256_max_epu8(q, _mm256_set1_epi8(86)), q);
    __m256i ge2 = _mm256_cmpeq_epi8(_mm256_max_epu8(q, _mm256_set1_epi8((char)171)), q);
    return _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(ge1, ge2));
}
TB_INLINE __m256i mul3_256(__m256i q) { return _mm256_add_epi8(_mm256_add_epi8(q, q), q); }

TB_INLINE void dot_tq1_0(int nt, int64_t n, float *s, const void *w, const void *const *a,
                         bool vnni) {
    const int64_t nb = n / QK_K;
    const block_tq1_0 *x = w;
    __m256 acc[2][TB_NT];
    for (int t = 0; t < nt; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    for (int64_t i0 = 0; i0 < nb; i0 += 2) {
        TB_UNROLL   /* blocks alternate acc[0]/acc[1]; unrolled, acc stays in registers */
        for (int u = 0; u < 2; u++) {
            const int64_t i = i0 + u;
            if (i >= nb) break;
            /* codes c[k] (32 bytes) pair with activation bytes at off[k] */
            __m256i c[8];
            __m256i q = loadu256(x[i].qs);                /* elements 0..159: byte m, trit l -> 32l + m */
            for (int l = 0; l < 5; l++) { c[l] = trit256(q); q = mul3_256(q); }
            __m128i r = _mm_loadu_si128((const __m128i *)(x[i].qs + 32));  /* 160..239: 160 + 16l + m */
            __m256i r2 = _mm256_set_m128i(r, r);
            __m256i r3 = mul3_256(r2);
            r2 = _mm256_blend_epi32(r2, r3, 0xF0);        /* [r | 3r]   -> l = 0, 1 */
            c[5] = trit256(r2);
            r2 = mul3_256(mul3_256(r2));                  /* [9r | 27r] -> l = 2, 3 */
            c[6] = trit256(r2);
            uint32_t qh;
            memcpy(&qh, x[i].qh, 4);
            __m128i h = _mm_set1_epi32((int)qh);          /* 240..255: 240 + 4l + j */
            __m128i h3 = _mm_add_epi8(_mm_add_epi8(h, h), h);
            __m128i h9 = _mm_add_epi8(_mm_add_epi8(h3, h3), h3);
            __m128i h27 = _mm_add_epi8(_mm_add_epi8(h9, h9), h9);
            h = _mm_blend_epi32(_mm_blend_epi32(_mm_blend_epi32(h, h3, 2), h9, 4), h27, 8);
            __m256i r81 = mul3_256(mul3_256(r2));         /* [81r | 243r]: low half is l = 4 */
            c[7] = trit256(_mm256_set_m128i(h, _mm256_castsi256_si128(r81)));
            static const int off[8] = {0, 32, 64, 96, 128, 160, 192, 224};
            float dx = fp16_f32(x[i].d);
            for (int t = 0; t < nt; t++) {
                const block_q8_K *y = (const block_q8_K *)a[t] + i;
                const __m256i one = _mm256_set1_epi16(1);
                __m256i p;
                if (vnni) {
                    p = _mm256_setzero_si256();
                    for (int k = 0; k < 8; k++) p = dot_u8s8_256(p, c[k], loadu256(y->qs + off[k]), true);
                } else {
                    __m256i hs = _mm256_maddubs_epi16(c[0], loadu256(y->qs));
                    for (int k = 1; k < 8; k++)
                        hs = _mm256_add_epi16(hs, _mm256_maddubs_epi16(c[k], loadu256(y->qs + off[k])));
                    p = _mm256_madd_epi16(hs, one);
                }
                p = _mm256_sub_epi32(p, _mm256_madd_epi16(loadu256(y->bsums), one));
                acc[u][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * y->d), acc[u][t]);
            }
        }
    }
    for (int t = 0; t < nt; t++) s[t] = hsum_ps256(_mm256_add_ps(acc[0][t], acc[1][t]));
}


#endif
