/*
 * x86_q4_0_rp.h — Q4_0 x Q8_0 on a load-time repacked copy of the weights:
 * 16 rows interleaved per 32-element block (AVX-512 VNNI).
 *
 * Included by tier_avx512.c after x86_common.h. Follows the TQ2_0 repacked
 * path of x86_ternary.h: each int32 lane of a ZMM is one weight row, so one
 * vpdpbusd with a broadcast activation dword accumulates 4 elements of 16
 * rows, and the per-block float work (convert, scale, FMA) is shared by 16
 * rows instead of being done per row and reduced horizontally.
 *
 * Determinism contract (x86_common.h): one dot_q4_0_grp(nt) body serves
 * matvec (nt = 1) and gemm (nt = 1..TB_Q4RP_NT). A (row, block, token)
 * integer dot is exact whatever the accumulation order, and the float steps
 * (convert, d_w * d_a, one FMA per block in block order, one chain per
 * token) are the same for any nt, so gemm == matvec bit for bit.
 */
#ifndef TB_X86_Q4_0_RP_H
#define TB_X86_Q4_0_RP_H

#include "kernels/x86_common.h"

#if defined(__AVX512VNNI__)

/* ---------------------------------------------------------------------- */
/* Layout                                                                   */
/* ---------------------------------------------------------------------- */

/* One group of 16 rows, one block (288 bytes = 16 x 18, so the copy is
 * exactly as large as the file rows, padded to a multiple of 16 rows):
 *   [0..255]    4 chunks c of 64 bytes: lane k (bytes 4k..4k+3) holds bytes
 *               4c..4c+3 of row k's qs (a 16 x 4 dword transpose)
 *   [256..287]  d of rows 0..15 (fp16)
 * Lane byte b of chunk c: low nibble = element 4c + b, high nibble =
 * element 16 + 4c + b. The activation for (c, low) is the dword at qs + 4c,
 * for (c, high) the dword at qs + 16 + 4c, broadcast to all 16 lanes. */
#define TB_Q4RP_ROWS 16
#define TB_Q4RP_MAXNB 1024   /* longer rows (n > 32768) use the file layout */
#ifndef TB_Q4RP_NT
#define TB_Q4RP_NT 8         /* tokens per gemm pass over a group          */
#endif
typedef struct {
    uint8_t q[4][64];
    tb_fp16_t d[TB_Q4RP_ROWS];
} q4_0_grp;
static_assert(sizeof(q4_0_grp) == TB_Q4RP_ROWS * sizeof(block_q4_0), "q4_0_grp size");

/* Repack `rows` rows of W (file layout, stride ws, n columns) into groups
 * of 16, (groups, blocks) order; missing rows of the last group are zero
 * codes with d = 0 (their lanes compute 0 and are never stored). */
static void repack_q4_0(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    const int64_t nb = n / QK4_0, ng = (rows + TB_Q4RP_ROWS - 1) / TB_Q4RP_ROWS;
    q4_0_grp *G = out;   // (ng, nb)
    for (int64_t g = 0; g < ng; g++)
        for (int64_t i = 0; i < nb; i++) {
            q4_0_grp *o = &G[g * nb + i];
            memset(o, 0, sizeof *o);
            for (int k = 0; k < TB_Q4RP_ROWS && g * TB_Q4RP_ROWS + k < rows; k++) {
                const block_q4_0 *x =
                    (const block_q4_0 *)((const uint8_t *)W + (size_t)(g * TB_Q4RP_ROWS + k) * ws) + i;
                for (int c = 0; c < 4; c++) memcpy(&o->q[c][4 * k], &x->qs[4 * c], 4);
                o->d[k] = x->d;
            }
        }
}

/* ---------------------------------------------------------------------- */
/* Activation prep: per Q8_0 block, -8 * sum(qs) and d as f32               */
/* ---------------------------------------------------------------------- */

typedef struct {
    int32_t nsum;   /* -8 * sum of the block's 32 codes (the nibble offset) */
    float d;        /* the block's scale                                      */
} q4rp_act_t;

/* p[i] for the nb blocks of one Q8_0 activation row a. */
TB_INLINE void prep_q4_0_rp(const block_q8_0 *a, int64_t nb, q4rp_act_t *p) {
    const __m256i m8 = _mm256_set1_epi8(8);
    for (int64_t i = 0; i < nb; i++) {
        __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), m8, loadu256(a[i].qs));   // (8) i32
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
        p[i].nsum = -_mm_cvtsi128_si32(h);
        p[i].d = fp16_f32(a[i].d);
    }
}

/* ---------------------------------------------------------------------- */
/* One group times nt tokens                                                */
/* ---------------------------------------------------------------------- */

TB_INLINE __m512i bcast32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* One group of 16 rows (nb blocks at G) times nt activations a[t] (pa[t]
 * their prep): out[t] = the 16 rows' results for token t. nt == 1 keeps
 * low and high nibbles in two integer chains; nt > 1 unpacks each chunk
 * once and shares it across the tokens. */
TB_INLINE void dot_q4_0_grp(int nt, const q4_0_grp *G, int64_t nb, const block_q8_0 *const *a,
                            const q4rp_act_t *const *pa, __m512 *out) {
    __m512 acc[TB_Q4RP_NT];   /* all set: a runtime nt would trip -Wmaybe-uninitialized */
    TB_UNROLL
    for (int t = 0; t < TB_Q4RP_NT; t++) acc[t] = _mm512_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int64_t i = 0; i < nb; i++) {
        const q4_0_grp *x = &G[i];
        __m512i p[TB_Q4RP_NT];   /* (16) i32 per token; all set, as acc */
        TB_UNROLL
        for (int t = 0; t < TB_Q4RP_NT; t++) p[t] = _mm512_setzero_si512();
        if (nt == 1) {
            const int8_t *y = a[0][i].qs;
            __m512i pl = _mm512_set1_epi32(pa[0][i].nsum), ph = _mm512_setzero_si512();
            TB_UNROLL
            for (int c = 0; c < 4; c++) {
                const __m512i q = _mm512_loadu_si512(x->q[c]);
                pl = _mm512_dpbusd_epi32(pl, _mm512_and_si512(q, m4), bcast32(y + 4 * c));
                ph = _mm512_dpbusd_epi32(ph, _mm512_and_si512(_mm512_srli_epi16(q, 4), m4), bcast32(y + 16 + 4 * c));
            }
            p[0] = _mm512_add_epi32(pl, ph);
        } else {
            TB_UNROLL
            for (int t = 0; t < nt; t++) p[t] = _mm512_set1_epi32(pa[t][i].nsum);
            TB_UNROLL
            for (int c = 0; c < 4; c++) {
                const __m512i q = _mm512_loadu_si512(x->q[c]);
                const __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
                TB_UNROLL
                for (int t = 0; t < nt; t++) {
                    const int8_t *y = a[t][i].qs;
                    p[t] = _mm512_dpbusd_epi32(p[t], lo, bcast32(y + 4 * c));
                    p[t] = _mm512_dpbusd_epi32(p[t], hi, bcast32(y + 16 + 4 * c));
                }
            }
        }
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)x->d));   /* (16) */
        TB_UNROLL
        for (int t = 0; t < nt; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p[t]), _mm512_mul_ps(dx, _mm512_set1_ps(pa[t][i].d)), acc[t]);
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) out[t] = acc[t];
}

/* Lanes of group g that fall in [r0, r1). */
TB_INLINE __mmask16 q4rp_mask(int64_t g, int64_t r0, int64_t r1) {
    int64_t lo = TB_MAX(r0 - g * TB_Q4RP_ROWS, 0), hi = TB_MIN(r1 - g * TB_Q4RP_ROWS, TB_Q4RP_ROWS);
    return (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* ---------------------------------------------------------------------- */
/* matvec / gemm                                                            */
/* ---------------------------------------------------------------------- */

/* y[r] = W[r]·a for r in [r0, r1) on the repacked copy of W; false when W
 * has none or its rows are too long (the caller runs the file layout). */
static bool matvec_q4_0_rp(const void *W, size_t ws, const void *a, float *y, int64_t r0, int64_t r1,
                           int64_t n) {
    const int64_t nb = n / QK4_0;
    if (r0 >= r1) return true;
    if (nb > TB_Q4RP_MAXNB) return false;
    const q4_0_grp *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_Q4_0);
    if (!G) return false;
    q4rp_act_t pa0[TB_Q4RP_MAXNB];   // (nb) 8 KiB
    const block_q8_0 *aa[1] = {a};
    const q4rp_act_t *pa[1] = {pa0};
    prep_q4_0_rp(a, nb, pa0);
    for (int64_t g = r0 / TB_Q4RP_ROWS; g * TB_Q4RP_ROWS < r1; g++) {
        __m512 o[TB_Q4RP_NT];
        dot_q4_0_grp(1, G + g * nb, nb, aa, pa, o);
        _mm512_mask_storeu_ps(y + g * TB_Q4RP_ROWS, q4rp_mask(g, r0, r1), o[0]);
    }
    return true;
}

/* Y[t * ldy + r] = W[r]·A[t] on the repacked copy: TB_Q4RP_NT tokens per
 * pass over the rows [r0, r1); false as matvec_q4_0_rp. */
static bool gemm_q4_0_rp(const void *W, size_t ws, const void *A, size_t as, int64_t nt, float *Y,
                         int64_t ldy, int64_t r0, int64_t r1, int64_t n) {
    const int64_t nb = n / QK4_0;
    if (r0 >= r1) return true;
    if (nb > TB_Q4RP_MAXNB) return false;
    const q4_0_grp *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_Q4_0);
    if (!G) return false;
    q4rp_act_t prep[TB_Q4RP_NT][TB_Q4RP_MAXNB];   // (TB_Q4RP_NT, nb) 64 KiB of stack
    for (int64_t t0 = 0; t0 < nt; t0 += TB_Q4RP_NT) {
        const int ntk = (int)TB_MIN(TB_Q4RP_NT, nt - t0);
        const block_q8_0 *aa[TB_Q4RP_NT];
        const q4rp_act_t *pa[TB_Q4RP_NT];
        for (int t = 0; t < ntk; t++) {
            aa[t] = (const block_q8_0 *)((const uint8_t *)A + (size_t)(t0 + t) * as);
            prep_q4_0_rp(aa[t], nb, prep[t]);
            pa[t] = prep[t];
        }
        for (int64_t g = r0 / TB_Q4RP_ROWS; g * TB_Q4RP_ROWS < r1; g++) {
            __m512 o[TB_Q4RP_NT];
            if (ntk == TB_Q4RP_NT) dot_q4_0_grp(TB_Q4RP_NT, G + g * nb, nb, aa, pa, o);
            else if (ntk == 1) dot_q4_0_grp(1, G + g * nb, nb, aa, pa, o);
            else dot_q4_0_grp(ntk, G + g * nb, nb, aa, pa, o);
            const __mmask16 m = q4rp_mask(g, r0, r1);
            for (int t = 0; t < ntk; t++) _mm512_mask_storeu_ps(Y + (t0 + t) * ldy + g * TB_Q4RP_ROWS, m, o[t]);
        }
    }
    return true;
}

#endif /* __AVX512VNNI__ */
#endif
