/*
 * x86_q4_0_rp.h — Q4_0 x Q8_0 on a load-time repacked copy of the weights:
 * R = 16 rows interleaved per 32-element block, computed whole by AVX-512
 * VNNI (vpdpbusd) and as two 8-row halves of a YMM by AVX2 (vpmaddubsw;
 * its 8-row lane store and generator also serve Q8_0's, Q4_K's and Q6_K's
 * 8-row copies).
 *
 * Included by tier_avx512.c and tier_avx2.c after x86_common.h. Follows the
 * TQ2_0 repacked path of x86_ternary.h: each int32 lane of a vector is one
 * weight row, so one multiply-add with a broadcast activation dword
 * accumulates 4 elements of R rows, and the per-block float work (convert,
 * scale, FMA) is shared by R rows instead of being done per row and
 * reduced horizontally.
 *
 * Determinism contract (x86_common.h): one dot_q4_0_grp*(nt) body serves
 * matvec (nt = 1) and gemm (nt = 1..NT). A (row, block, token) integer dot
 * is exact whatever the accumulation order, and the float steps (convert,
 * d_w * d_a, one FMA per block in block order, one chain per token) are the
 * same for any nt, so gemm == matvec bit for bit.
 */
#ifndef TB_X86_Q4_0_RP_H
#define TB_X86_Q4_0_RP_H

#include "kernels/x86_common.h"

/* ---------------------------------------------------------------------- */
/* Layout (both tiers)                                                      */
/* ---------------------------------------------------------------------- */

/* One group of R rows, one block: 18 R bytes (R file blocks, so the copy is
 * exactly as large as the file rows, padded to a multiple of R rows):
 *   [0 .. 16R-1]      4 chunks c of 4R bytes: lane k (bytes 4k..4k+3) holds
 *                     bytes 4c..4c+3 of row k's qs (an R x 4 dword transpose)
 *   [16R .. 18R-1]    d of rows 0..R-1 (fp16)
 * Groups are stored (group, block): a group's blocks are one contiguous
 * stream. Lane byte b of chunk c: low nibble = element 4c + b, high
 * nibble = element 16 + 4c + b. The activation for (c, low) is the dword
 * at qs + 4c, for (c, high) the dword at qs + 16 + 4c, broadcast to all R
 * lanes. (Measured: splitting a group into a code stream and a scale
 * stream, which makes every 64-byte code load line-aligned, was ~2x slower
 * from DRAM and no faster in L2.) */
#define TB_Q4RP_MAXNB 1024   /* longer rows (n > 32768) use the file layout */

/* Repack `rows` rows of W (file layout, stride ws, n columns) into groups
 * of R; missing rows of the last group are zero codes with d = 0 (their
 * lanes compute 0 and are never stored). Each row is read once in order;
 * its group's blocks (18 R nb bytes) are the only bytes written meanwhile. */
TB_INLINE void repack_q4_0_rows(const void *W, size_t ws, int64_t rows, int64_t n, void *out, int R) {
    const int64_t nb = n / QK4_0, ng = (rows + R - 1) / R;
    const size_t gb = (size_t)R * sizeof(block_q4_0);   /* bytes of one group block */
    for (int64_t g = 0; g < ng; g++) {
        uint8_t *og = (uint8_t *)out + (size_t)(g * nb) * gb;   // (nb, 4, R, 4) codes + (R) d per block
        const int kn = (int)TB_MIN(R, rows - g * R);
        if (kn < R) memset(og, 0, (size_t)nb * gb);   /* full groups: every byte is written below */
        for (int k = 0; k < kn; k++) {
            const block_q4_0 *x = (const block_q4_0 *)((const uint8_t *)W + (size_t)(g * R + k) * ws);   // (nb)
            for (int64_t i = 0; i < nb; i++) {
                uint8_t *o = og + (size_t)i * gb;
                for (int c = 0; c < 4; c++) memcpy(o + 4 * R * c + 4 * k, &x[i].qs[4 * c], 4);
                memcpy(o + 16 * R + 2 * k, &x[i].d, 2);
            }
        }
    }
}

/* Rows [lo, hi) of group g (R rows) that fall in [r0, r1), as lane bounds. */
TB_INLINE void q4rp_lanes(int64_t g, int R, int64_t r0, int64_t r1, int *lo, int *hi) {
    *lo = (int)TB_MAX(r0 - g * R, 0);
    *hi = (int)TB_MIN(r1 - g * R, R);
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
    const __m256i m8 = _mm256_set1_epi8(8), one = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < nb; i++) {
        __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(m8, loadu256(a[i].qs)), one);   // (8) i32
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
        p[i].nsum = -_mm_cvtsi128_si32(h);
        p[i].d = fp16_f32(a[i].d);
    }
}

TB_INLINE int32_t ld32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The group layout both tiers read: 16 rows (AVX-512 whole, AVX2 as two
 * 8-row halves of a YMM: bytes 32h.. of a chunk, d[8h..]). */
#define TB_Q4RP_ROWS 16
typedef struct {
    uint8_t q[4][64];
    tb_fp16_t d[TB_Q4RP_ROWS];
} q4_0_grp;
static_assert(sizeof(q4_0_grp) == TB_Q4RP_ROWS * sizeof(block_q4_0), "q4_0_grp size");

static void repack_q4_0(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_q4_0_rows(W, ws, rows, n, out, TB_Q4RP_ROWS);
}

#if defined(__AVX512VNNI__)

/* ---------------------------------------------------------------------- */
/* AVX-512 VNNI: R = 16                                                     */
/* ---------------------------------------------------------------------- */

static_assert(TB_Q4RP_ROWS == 16, "store masks are tb_grp_mask16 (x86_common.h)");
#ifndef TB_Q4RP_NT
#define TB_Q4RP_NT 8         /* tokens per gemm pass over a group          */
#endif

/* ---------------------------------------------------------------------- */
/* One group times nt tokens                                                */
/* ---------------------------------------------------------------------- */

TB_INLINE __m512i bcast32(const int8_t *p) { return _mm512_set1_epi32(ld32(p)); }

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
    const uint32_t pf = nt == 1 ? tb_pf_bytes : 0;
    for (int64_t i = 0; i < nb; i++) {
        const q4_0_grp *x = &G[i];
        tb_pf_block(x, sizeof *x, pf);
        __m512i p[TB_Q4RP_NT];   /* (16) i32 per token; all set, as acc */
        TB_UNROLL
        for (int t = 0; t < TB_Q4RP_NT; t++) p[t] = _mm512_setzero_si512();
        if (nt == 1) {
            const int8_t *y = a[0][i].qs;
            __m512i pl = _mm512_set1_epi32(pa[0][i].nsum), ph = _mm512_setzero_si512();
            TB_UNROLL
            for (int c = 0; c < 4; c++) {
                const __m512i q = _mm512_loadu_si512(x->q[c]);
                pl = tb_dpbusd_b32(pl, _mm512_and_si512(q, m4), y + 4 * c);
                ph = tb_dpbusd_b32(ph, _mm512_and_si512(_mm512_srli_epi16(q, 4), m4), y + 16 + 4 * c);
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

/* ---------------------------------------------------------------------- */
/* matvec / gemm                                                            */
/* ---------------------------------------------------------------------- */

/* matvec_q4_0_rp / gemm_q4_0_rp (x86_common.h): TB_Q4RP_NT tokens per gemm pass. */
_Static_assert(TB_Q4RP_ROWS == 16, "TB_RP16_KERNELS stores 16-row groups");
TB_RP16_KERNELS(q4_0, TB_TYPE_Q4_0, q4_0_grp, block_q8_0, q4rp_act_t, QK4_0, TB_Q4RP_MAXNB, TB_Q4RP_NT, prep_q4_0_rp, dot_q4_0_grp)

#elif !defined(__AVX512F__)

/* ---------------------------------------------------------------------- */
/* AVX2: 16-row groups in 8-row halves                                     */
/* ---------------------------------------------------------------------- */

#define TB_Q4RP8_ROWS 8      /* rows of one YMM of results (a half)        */
#define TB_Q4RP16H_ROWS TB_Q4RP_ROWS   /* rows per group: two halves, one stream */
#define TB_Q4RP8_NT 4        /* tokens per gemm pass (16 YMM registers)    */
/* AVX2 reads q4_0_grp as two 8-row halves: a YMM load of bytes 32h.. of a
 * chunk is half h's 8 rows x 4 code bytes, d[8h..] their scales. 16 rows
 * so that a decode matvec broadcasts each activation dword once for both
 * halves from one memory stream (see x86_ternary_rp8.h: two 8-row groups
 * side by side ran at half the speed from memory). */

/* The results of one 16-row group for one token: rows 0..7 and 8..15. */
typedef struct {
    __m256 h[2];
} rp16h_v;

/* DOT, the group body of a 16-row format read as two halves:
 * DOT(nt, G, nb, a, pa, out) runs DOT1(G, nb, a[0], pa[0], out) for one
 * token and DOTN(nt, G, nb, a, pa, out) for more; both take the two
 * halves at once, each activation dword broadcast once for both. */
#define TB_RP16H_DOT(DOT, GRP, ABLK, PACT, DOT1, DOTN)                                                   \
    TB_INLINE void DOT(int nt, const GRP *G, int64_t nb, const ABLK *const *a, const PACT *const *pa,    \
                       rp16h_v *out) {                                                                  \
        if (nt == 1) DOT1(G, nb, a[0], pa[0], out);                                                     \
        else DOTN(nt, G, nb, a, pa, out);                                                               \
    }

/* One group of 16 rows (nb blocks at G) times one activation a (pa its
 * prep): out->h[rh] = row half rh's results, each activation dword
 * broadcast once for both halves. The 8 (chunk, nibble) vpmaddubsw results
 * of a (block, half) are summed in int16: each is two products
 * |q y| <= 15 * 128, so the sum stays within 8 * 3840 < 2^15; one vpmaddwd
 * then widens the row's two halves to int32. */
TB_INLINE void dot1_q4_0_grp16h(const q4_0_grp *G, int64_t nb, const block_q8_0 *a, const q4rp_act_t *pa,
                                rp16h_v *out) {
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi16(1);
    const uint32_t pf = tb_pf_bytes;
    for (int64_t i = 0; i < nb; i++) {
        const q4_0_grp *x = &G[i];
        tb_pf_block(x, sizeof *x, pf);
        const int8_t *y = a[i].qs;
        __m256i h[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};   /* (16) i16 per half */
        TB_UNROLL
        for (int c = 0; c < 4; c++) {
            const __m256i bl = _mm256_set1_epi32(ld32(y + 4 * c)), bh = _mm256_set1_epi32(ld32(y + 16 + 4 * c));
            TB_UNROLL
            for (int rh = 0; rh < 2; rh++) {
                const __m256i q = loadu256(x->q[c] + 32 * rh);
                const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                h[rh] = _mm256_add_epi16(h[rh], _mm256_maddubs_epi16(lo, bl));
                TB_CHAIN(h[rh]);
                h[rh] = _mm256_add_epi16(h[rh], _mm256_maddubs_epi16(hi, bh));
                TB_CHAIN(h[rh]);
            }
        }
        const __m256i ns = _mm256_set1_epi32(pa[i].nsum);
        const __m256 da = _mm256_set1_ps(pa[i].d);
        TB_UNROLL
        for (int rh = 0; rh < 2; rh++) {
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x->d + 8 * rh)));   /* (8) */
            const __m256i p = _mm256_add_epi32(_mm256_madd_epi16(h[rh], one), ns);
            acc[rh] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dx, da), acc[rh]);
        }
    }
    out->h[0] = acc[0];
    out->h[1] = acc[1];
}

/* One group of 16 rows (nb blocks at G), both halves, times nt (> 1)
 * activations a[t] (pa[t] their prep): out[t] = the group's results for
 * token t. Each code vector is extracted once for the nt tokens and each
 * activation dword broadcast once for both halves (the same int16 sums as
 * dot1_q4_0_grp16h). */
TB_INLINE void dotn_q4_0_grp16h(int nt, const q4_0_grp *G, int64_t nb, const block_q8_0 *const *a,
                                const q4rp_act_t *const *pa, rp16h_v *out) {
    __m256 acc[2][TB_Q4RP8_NT];   /* all set: a runtime nt would trip -Wmaybe-uninitialized */
    TB_UNROLL
    for (int t = 0; t < TB_Q4RP8_NT; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < nb; i++) {
        const q4_0_grp *x = &G[i];
        __m256i h[2][TB_Q4RP8_NT];   /* (16) i16 per row half and token: row k in words 2k, 2k + 1 */
        TB_UNROLL
        for (int t = 0; t < TB_Q4RP8_NT; t++) h[0][t] = h[1][t] = _mm256_setzero_si256();
        TB_UNROLL
        for (int c = 0; c < 4; c++) {
            TB_UNROLL
            for (int nib = 0; nib < 2; nib++) {   /* low nibbles: y[4c..], high: y[16 + 4c..] */
                const __m256i q0 = loadu256(x->q[c]), q1 = loadu256(x->q[c] + 32);
                const __m256i c0 = _mm256_and_si256(nib ? _mm256_srli_epi16(q0, 4) : q0, m4);
                const __m256i c1 = _mm256_and_si256(nib ? _mm256_srli_epi16(q1, 4) : q1, m4);
                TB_UNROLL
                for (int t = 0; t < nt; t++) {
                    const __m256i b = _mm256_set1_epi32(ld32(a[t][i].qs + 16 * nib + 4 * c));
                    h[0][t] = _mm256_add_epi16(h[0][t], _mm256_maddubs_epi16(c0, b));
                    TB_CHAIN(h[0][t]);
                    h[1][t] = _mm256_add_epi16(h[1][t], _mm256_maddubs_epi16(c1, b));
                    TB_CHAIN(h[1][t]);
                }
            }
        }
        TB_UNROLL
        for (int rh = 0; rh < 2; rh++) {
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x->d + 8 * rh)));   /* (8) */
            TB_UNROLL
            for (int t = 0; t < nt; t++) {
                const __m256i p = _mm256_add_epi32(_mm256_madd_epi16(h[rh][t], one), _mm256_set1_epi32(pa[t][i].nsum));
                acc[rh][t] =
                    _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dx, _mm256_set1_ps(pa[t][i].d)), acc[rh][t]);
            }
        }
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) {
        out[t].h[0] = acc[0][t];
        out[t].h[1] = acc[1][t];
    }
}

/* One group of 16 rows times nt activations: out[t] = its results for
 * token t. Both paths compute the same int16 sums and float steps per
 * (row, block, token), so gemm == matvec bit for bit per row. */
TB_RP16H_DOT(dot_q4_0_grp16h, q4_0_grp, block_q8_0, q4rp_act_t, dot1_q4_0_grp16h, dotn_q4_0_grp16h)

/* Store the lanes of 8-row unit g that fall in [r0, r1) to y + 8 g. */
TB_INLINE void q4rp8_store(float *y, int64_t g, int64_t r0, int64_t r1, __m256 v) {
    int lo, hi;
    q4rp_lanes(g, TB_Q4RP8_ROWS, r0, r1, &lo, &hi);
    const __m256i k = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(lo), k),
                                          _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), k));
    _mm256_maskstore_ps(y + g * TB_Q4RP8_ROWS, m, v);
}

/* A 16-row group's results for rows [r0, r1): its two 8-row halves. */
TB_INLINE void rp16h_store(float *y, int64_t g, int64_t r0, int64_t r1, rp16h_v v) {
    q4rp8_store(y, 2 * g, r0, r1, v.h[0]);
    q4rp8_store(y, 2 * g + 1, r0, r1, v.h[1]);
}

/* matvec_<fmt>_rp8 / gemm_<fmt>_rp8 of an 8-row AVX2 repacked format
 * (TB_RP_KERNELS, x86_common.h). */
#define TB_RP8_KERNELS(fmt, TYPE, GRP, ABLK, PACT, QK, MAXNB, NT, PREP, DOT) \
    TB_RP_KERNELS(fmt##_rp8, TB_Q4RP8_ROWS, __m256, TB_ISA_AVX2, q4rp8_store, TYPE, GRP, ABLK, PACT, QK, MAXNB, NT, PREP, DOT)
/* ... and of a 16-row one computed as two 8-row halves (rp16h_v). */
#define TB_RP16H_KERNELS(fmt, TYPE, GRP, ABLK, PACT, QK, MAXNB, NT, PREP, DOT) \
    TB_RP_KERNELS(fmt##_rp16h, TB_Q4RP16H_ROWS, rp16h_v, TB_ISA_AVX2, rp16h_store, TYPE, GRP, ABLK, PACT, QK, MAXNB, NT, \
                  PREP, DOT)

TB_RP16H_KERNELS(q4_0, TB_TYPE_Q4_0, q4_0_grp, block_q8_0, q4rp_act_t, QK4_0, TB_Q4RP_MAXNB, TB_Q4RP8_NT,
                 prep_q4_0_rp, dot_q4_0_grp16h)

#endif
#endif
