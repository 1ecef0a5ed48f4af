/*
 * x86_q4_K_rp.h — Q4_K x Q8_K on a load-time repacked copy of the weights:
 * 16 rows interleaved per 256-element block (AVX-512 VNNI), and 8 rows on
 * the AVX2 tier (its own section at the end, q4_K_grp8).
 *
 * Included by tier_avx512.c and tier_avx2.c after x86_common.h. Follows the TQ2_0 and Q4_0
 * repacked paths (x86_ternary.h, x86_q4_0_rp.h): each int32 lane of a ZMM
 * is one weight row, so one vpdpbusd with a broadcast activation dword
 * accumulates 4 elements of 16 rows, and the per-block work (6-bit scale
 * unpacking, scale multiplies, mins, convert, FMA) is shared by 16 rows
 * instead of being done per row with a horizontal reduction.
 *
 * Arithmetic per (row, block, token), all integer steps exact:
 *   P_j  = sum over sub-block j (32 elements) of q * y        (vpdpbusd)
 *          odd sub-blocks come from the high nibbles masked in place
 *          (q & 0xF0 = 16 q), so their P is 16 x the true value;
 *   S    = sum_j P_j * (16 sc_j for even j, sc_j for odd j)   (= 16 sumi)
 *   M    = sum_j m_j * (bsums of j)                          (= summ)
 *   acc += float(S) * (d * d_y / 16);  acc -= float(M) * (dmin * d_y)
 * |S| <= 16 * 8 * 63 * 32 * 15 * 128 < 2^29, so no int32 overflow.
 *
 * Determinism contract (x86_common.h): one dot_q4_K_grp(nt) body serves
 * matvec (nt = 1) and gemm (nt = 1..TB_Q4KRP_NT). The integer results do
 * not depend on the order they are accumulated in, and the float steps
 * (two converts, two scale products, two FMAs per block in block order,
 * one chain per token) are the same for any nt: gemm == matvec bit for bit.
 */
#ifndef TB_X86_Q4_K_RP_H
#define TB_X86_Q4_K_RP_H

#include "kernels/x86_common.h"

#if defined(__AVX512VNNI__) || !defined(__AVX512F__)

/* Rows of W (file layout, stride ws, n columns) into groups of R rows,
 * (group, block) order, a group block being d[R], dmin[R] (fp16), 3 scale
 * chunks and 32 code chunks of 4R bytes (lane k: 4 bytes of row k): the
 * AVX-512 (R = 16, q4_K_grp) and AVX2 (R = 8, q4_K_grp8) layouts. Missing
 * rows of the last group are zero (d = dmin = 0: their lanes compute 0 and
 * are never stored). */
TB_INLINE void repack_q4_K_rows(const void *W, size_t ws, int64_t rows, int64_t n, void *out, int R) {
    const int64_t nb = n / QK_K, ng = (rows + R - 1) / R;
    const size_t gb = (size_t)R * sizeof(block_q4_K), cw = 4 * (size_t)R;   /* group block, chunk */
    for (int64_t g = 0; g < ng; g++)
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *o = (uint8_t *)out + (size_t)(g * nb + i) * gb;
            uint8_t *sc = o + 4 * (size_t)R, *q = sc + 3 * cw;
            memset(o, 0, gb);
            for (int k = 0; k < R && g * R + k < rows; k++) {
                const block_q4_K *x = (const block_q4_K *)((const uint8_t *)W + (size_t)(g * R + k) * ws) + i;
                memcpy(o + 2 * k, &x->d, 2);
                memcpy(o + 2 * (size_t)R + 2 * k, &x->dmin, 2);
                for (int w = 0; w < 3; w++) memcpy(sc + w * cw + 4 * k, &x->scales[4 * w], 4);
                for (int j = 0; j < 32; j++) memcpy(q + j * cw + 4 * k, &x->qs[4 * j], 4);
            }
        }
}

/* ---------------------------------------------------------------------- */
/* Activation prep                                                          */
/* ---------------------------------------------------------------------- */

/* Per Q8_K block: the sub-block sums paired for vpdpwssd against the
 * (m_0, m_2), (m_1, m_3), (m_4, m_6), (m_5, m_7) i16 pairs of a lane, the
 * block scale, and the scale / 16 (S carries a factor 16). */
typedef struct {
    int32_t bs[4];   /* (bsum_0 | bsum_2 << 16), (1, 3), (4, 6), (5, 7); bsum_j = sum of sub-block j */
    float d, d16;    /* d_y, d_y / 16 (exact)                                                       */
} q4krp_act_t;
static_assert(sizeof(q4krp_act_t) == 24, "q4krp_act_t size");

TB_INLINE int32_t q4krp_pair(int lo, int hi) { return (int32_t)((uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16); }

/* p[i] for the nb blocks of one Q8_K activation row a. |bsum_j| <= 32 * 128
 * fits an i16. */
TB_INLINE void prep_q4_K_rp(const block_q8_K *a, int64_t nb, q4krp_act_t *p) {
    for (int64_t i = 0; i < nb; i++) {
        int s[8];
        for (int j = 0; j < 8; j++) s[j] = a[i].bsums[2 * j] + a[i].bsums[2 * j + 1];
        p[i].bs[0] = q4krp_pair(s[0], s[2]);
        p[i].bs[1] = q4krp_pair(s[1], s[3]);
        p[i].bs[2] = q4krp_pair(s[4], s[6]);
        p[i].bs[3] = q4krp_pair(s[5], s[7]);
        p[i].d = a[i].d;
        p[i].d16 = a[i].d * 0.0625f;
    }
}

#endif

#if defined(__AVX512VNNI__)

/* ---------------------------------------------------------------------- */
/* Layout                                                                   */
/* ---------------------------------------------------------------------- */

/* One block of a group of 16 rows: 2304 bytes = 16 x 144, so the copy is
 * exactly as large as the file rows (padded to a multiple of 16 rows), and
 * every field is whole 64-byte lines (a copy is 64-byte aligned):
 *   [0..31]      d    of rows 0..15 (fp16)
 *   [32..63]     dmin of rows 0..15 (fp16)
 *   [64..255]    sc: 3 chunks w of 64 bytes, lane k (bytes 4k..4k+3) holds
 *                scales[4w..4w+3] of row k (still 6-bit packed: unpacked
 *                per lane in registers, see q4k_grp_scales)
 *   [256..2303]  q: 32 chunks 8h + c (h < 4, c < 8) of 64 bytes, lane k
 *                holds qs[32h + 4c .. 32h + 4c + 3] of row k
 * Lane byte b of code chunk 8h + c: low nibble = element 64h + 4c + b
 * (sub-block 2h), high nibble = element 64h + 32 + 4c + b (sub-block
 * 2h + 1). The activation for (chunk, low) is the dword at qs + 64h + 4c,
 * for (chunk, high) the dword at qs + 64h + 32 + 4c, broadcast to all 16
 * lanes. */
#define TB_Q4KRP_ROWS 16
static_assert(TB_Q4KRP_ROWS == 16, "store masks are tb_grp_mask16 (x86_common.h)");
#define TB_Q4K_RP_MAXNB 64   /* rows of more than 16384 columns use the file layout */
#ifndef TB_Q4KRP_NT
#define TB_Q4KRP_NT 4        /* tokens per gemm pass over a group                  */
#endif
#ifndef TB_Q4KRP_TB
#define TB_Q4KRP_TB 2048     /* gemm: (token, block) activation preps per chunk    */
#endif
typedef struct {
    tb_fp16_t d[TB_Q4KRP_ROWS];
    tb_fp16_t dmin[TB_Q4KRP_ROWS];
    uint8_t sc[3][64];       /* (dword w, lane * 4 + byte) packed 6-bit scales */
    uint8_t q[32][64];       /* (chunk, lane * 4 + byte) codes                  */
} q4_K_grp;
static_assert(sizeof(q4_K_grp) == TB_Q4KRP_ROWS * sizeof(block_q4_K), "q4_K_grp size");
static_assert(offsetof(q4_K_grp, q) % 64 == 0, "q4_K_grp code chunks on cache lines");

/* Repack `rows` rows of W into groups of 16 (repack_q4_K_rows). */
static void repack_q4_K(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_q4_K_rows(W, ws, rows, n, out, TB_Q4KRP_ROWS);
}

/* ---------------------------------------------------------------------- */
/* One group times nt tokens                                                */
/* ---------------------------------------------------------------------- */

TB_INLINE __m512i q4krp_bcast(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* The scales of block x of a group as i32 per lane: se[h] = 16 sc_2h,
 * so[h] = sc_2h+1, and the mins as i16 pairs mp[0..3] = (m_0, m_2),
 * (m_1, m_3), (m_4, m_6), (m_5, m_7). With the lane's packed scale dwords
 * D0 = s[0..3], D1 = s[4..7], D2 = s[8..11] (byte b of each):
 *   sc_b = D0 & 63          sc_4+b = (D2 & 15) | (D0 >> 6) << 4
 *   m_b  = D1 & 63          m_4+b  = (D2 >> 4) | (D1 >> 6) << 4           */
TB_INLINE void q4k_grp_scales(const q4_K_grp *x, __m512i se[4], __m512i so[4], __m512i mp[4]) {
    const __m512i D0 = _mm512_load_si512(x->sc[0]), D1 = _mm512_load_si512(x->sc[1]);
    const __m512i D2 = _mm512_load_si512(x->sc[2]);
    const __m512i m3f = _mm512_set1_epi32(0x3f3f3f3f), m0f = _mm512_set1_epi32(0x0f0f0f0f);
    const __m512i m30 = _mm512_set1_epi32(0x30303030);
    /* ternarylogic 0xEA: (a & b) | c */
    const __m512i SL = _mm512_and_si512(D0, m3f);
    const __m512i SH = _mm512_ternarylogic_epi32(D2, m0f, _mm512_and_si512(_mm512_srli_epi32(D0, 2), m30), 0xEA);
    const __m512i ML = _mm512_and_si512(D1, m3f);
    const __m512i MH = _mm512_ternarylogic_epi32(_mm512_srli_epi32(D2, 4), m0f,
                                                 _mm512_and_si512(_mm512_srli_epi32(D1, 2), m30), 0xEA);
    const __m512i e16 = _mm512_set1_epi32(0x3f0), b8 = _mm512_set1_epi32(0x3f), p16 = _mm512_set1_epi32(0x00ff00ff);
    se[0] = _mm512_and_si512(_mm512_slli_epi32(SL, 4), e16);
    so[0] = _mm512_and_si512(_mm512_srli_epi32(SL, 8), b8);
    se[1] = _mm512_and_si512(_mm512_srli_epi32(SL, 12), e16);
    so[1] = _mm512_srli_epi32(SL, 24);
    se[2] = _mm512_and_si512(_mm512_slli_epi32(SH, 4), e16);
    so[2] = _mm512_and_si512(_mm512_srli_epi32(SH, 8), b8);
    se[3] = _mm512_and_si512(_mm512_srli_epi32(SH, 12), e16);
    so[3] = _mm512_srli_epi32(SH, 24);
    mp[0] = _mm512_and_si512(ML, p16);
    mp[1] = _mm512_and_si512(_mm512_srli_epi32(ML, 8), p16);
    mp[2] = _mm512_and_si512(MH, p16);
    mp[3] = _mm512_and_si512(_mm512_srli_epi32(MH, 8), p16);
}

/* One group of 16 rows (nb blocks at G) times nt activations a[t] (pa[t]
 * their preps): out[t] = the 16 rows' results for token t. nt == 1 keeps
 * 8 integer chains per block (one per sub-block); nt > 1 masks each code
 * chunk once and shares it across the tokens. */
TB_INLINE void dot_q4_K_grp(int nt, const q4_K_grp *G, int64_t nb, const block_q8_K *const *a,
                            const q4krp_act_t *const *pa, __m512 *out) {
    __m512 acc[TB_Q4KRP_NT];   /* all set: a runtime nt would trip -Wmaybe-uninitialized */
    TB_UNROLL
    for (int t = 0; t < TB_Q4KRP_NT; t++) acc[t] = _mm512_setzero_ps();
    const __m512i mlo = _mm512_set1_epi8(0x0F), mhi = _mm512_set1_epi8((char)0xF0);
    const uint32_t pf = nt == 1 ? tb_pf_bytes : 0;
    for (int64_t i = 0; i < nb; i++) {
        const q4_K_grp *x = &G[i];
        tb_pf_block(x, offsetof(q4_K_grp, q), pf);   /* d, dmin, sc; each code chunk's line as it is read */
        __m512i se[4], so[4], mp[4];
        q4k_grp_scales(x, se, so, mp);
        __m512i S[TB_Q4KRP_NT];   /* (16) i32 per token: 16 sumi */
        TB_UNROLL
        for (int t = 0; t < TB_Q4KRP_NT; t++) S[t] = _mm512_setzero_si512();
        if (nt == 1) {
            const int8_t *y = a[0][i].qs;
            TB_UNROLL
            for (int h = 0; h < 4; h++) {
                __m512i pl = _mm512_setzero_si512(), ph = _mm512_setzero_si512();
                TB_UNROLL
                for (int c = 0; c < 8; c++) {
                    tb_pf_block(x->q[8 * h + c], 64, pf);
                    const __m512i q = _mm512_load_si512(x->q[8 * h + c]);
                    pl = tb_dpbusd_b32(pl, _mm512_and_si512(q, mlo), y + 64 * h + 4 * c);
                    ph = tb_dpbusd_b32(ph, _mm512_and_si512(q, mhi), y + 64 * h + 32 + 4 * c);
                }
                S[0] = _mm512_add_epi32(S[0], _mm512_add_epi32(_mm512_mullo_epi32(pl, se[h]),
                                                               _mm512_mullo_epi32(ph, so[h])));
            }
        } else {
            TB_UNROLL
            for (int h = 0; h < 4; h++) {
                __m512i pl[TB_Q4KRP_NT], ph[TB_Q4KRP_NT];
                TB_UNROLL
                for (int t = 0; t < TB_Q4KRP_NT; t++) pl[t] = ph[t] = _mm512_setzero_si512();
                TB_UNROLL
                for (int c = 0; c < 8; c++) {
                    const __m512i q = _mm512_load_si512(x->q[8 * h + c]);
                    const __m512i lo = _mm512_and_si512(q, mlo), hi = _mm512_and_si512(q, mhi);
                    TB_UNROLL
                    for (int t = 0; t < nt; t++) {
                        const int8_t *y = a[t][i].qs + 64 * h + 4 * c;
                        pl[t] = _mm512_dpbusd_epi32(pl[t], lo, q4krp_bcast(y));
                        ph[t] = _mm512_dpbusd_epi32(ph[t], hi, q4krp_bcast(y + 32));
                    }
                }
                TB_UNROLL
                for (int t = 0; t < nt; t++)
                    S[t] = _mm512_add_epi32(S[t], _mm512_add_epi32(_mm512_mullo_epi32(pl[t], se[h]),
                                                                   _mm512_mullo_epi32(ph[t], so[h])));
            }
        }
        const __m512 dx = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)x->d));      /* (16) */
        const __m512 dm = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)x->dmin));   /* (16) */
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const q4krp_act_t *p = &pa[t][i];
            __m512i M = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mp[0], _mm512_set1_epi32(p->bs[0]));
            TB_UNROLL
            for (int k = 1; k < 4; k++) M = _mm512_dpwssd_epi32(M, mp[k], _mm512_set1_epi32(p->bs[k]));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(dx, _mm512_set1_ps(p->d16)), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dm, _mm512_set1_ps(p->d)), acc[t]);
        }
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) out[t] = acc[t];
}

/* ---------------------------------------------------------------------- */
/* matvec / gemm                                                            */
/* ---------------------------------------------------------------------- */

/* y[r] = W[r]·a for r in [r0, r1) on the repacked copy of W; false when W
 * has none or its rows are too long (the caller runs the file layout). */
static bool matvec_q4_K_rp(const void *W, size_t ws, const void *a, float *y, int64_t r0, int64_t r1,
                           int64_t n) {
    const int64_t nb = n / QK_K;
    if (r0 >= r1) return true;
    if (nb > TB_Q4K_RP_MAXNB) return false;
    const q4_K_grp *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_Q4_K);
    if (!G) return false;
    q4krp_act_t pa0[TB_Q4K_RP_MAXNB];   // (nb)
    const block_q8_K *aa[1] = {a};
    const q4krp_act_t *pa[1] = {pa0};
    prep_q4_K_rp(a, nb, pa0);
    for (int64_t g = r0 / TB_Q4KRP_ROWS; g * TB_Q4KRP_ROWS < r1; g++) {
        __m512 o[TB_Q4KRP_NT];
        dot_q4_K_grp(1, G + g * nb, nb, aa, pa, o);
        _mm512_mask_storeu_ps(y + g * TB_Q4KRP_ROWS, tb_grp_mask16(g, r0, r1), o[0]);
    }
    return true;
}

/* Y[t * ldy + r] = W[r]·A[t] on the repacked copy; false as matvec_q4_K_rp.
 * Tokens go in chunks of TB_Q4KRP_TB / nb (their activations stay in L2);
 * per chunk each group is read once and passed TB_Q4KRP_NT tokens at a
 * time (it stays in L1 between passes). */
static bool gemm_q4_K_rp(const void *W, size_t ws, const void *A, size_t as, int64_t nt, float *Y,
                         int64_t ldy, int64_t r0, int64_t r1, int64_t n) {
    const int64_t nb = n / QK_K;
    if (r0 >= r1) return true;
    if (nb > TB_Q4K_RP_MAXNB) return false;
    const q4_K_grp *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_Q4_K);
    if (!G) return false;
    q4krp_act_t prep[TB_Q4KRP_TB];   // (chunk tokens, nb) 48 KiB of stack
    const int64_t tch = TB_Q4KRP_TB / nb;   /* >= 32 */
    for (int64_t c0 = 0; c0 < nt; c0 += tch) {
        const int64_t ntc = TB_MIN(tch, nt - c0);
        for (int64_t t = 0; t < ntc; t++)
            prep_q4_K_rp((const block_q8_K *)((const uint8_t *)A + (size_t)(c0 + t) * as), nb, prep + t * nb);
        for (int64_t g = r0 / TB_Q4KRP_ROWS; g * TB_Q4KRP_ROWS < r1; g++) {
            const __mmask16 m = tb_grp_mask16(g, r0, r1);
            for (int64_t t0 = 0; t0 < ntc; t0 += TB_Q4KRP_NT) {
                const int ntk = (int)TB_MIN(TB_Q4KRP_NT, ntc - t0);
                const block_q8_K *aa[TB_Q4KRP_NT];
                const q4krp_act_t *pa[TB_Q4KRP_NT];
                for (int t = 0; t < ntk; t++) {
                    aa[t] = (const block_q8_K *)((const uint8_t *)A + (size_t)(c0 + t0 + t) * as);
                    pa[t] = prep + (t0 + t) * nb;
                }
                __m512 o[TB_Q4KRP_NT];
                if (ntk == TB_Q4KRP_NT) dot_q4_K_grp(TB_Q4KRP_NT, G + g * nb, nb, aa, pa, o);
                else if (ntk == 1) dot_q4_K_grp(1, G + g * nb, nb, aa, pa, o);
                else dot_q4_K_grp(ntk, G + g * nb, nb, aa, pa, o);
                for (int t = 0; t < ntk; t++) _mm512_mask_storeu_ps(Y + (c0 + t0 + t) * ldy + g * TB_Q4KRP_ROWS, m, o[t]);
            }
        }
    }
    return true;
}

#elif !defined(__AVX512F__)

/* ---------------------------------------------------------------------- */
/* AVX2: 8 rows per group                                                   */
/* ---------------------------------------------------------------------- */

/* The AVX2 tier's copy: the same fields for 8 rows, lane k = row k of a
 * YMM. One block of a group: 1152 bytes = 8 x 144, so the copy is as large
 * as the file rows padded to a multiple of 8 (18 lines per block):
 *   [0..15]      d    of rows 0..7 (fp16)
 *   [16..31]     dmin of rows 0..7 (fp16)
 *   [32..127]    sc: 3 chunks w of 32 bytes, lane k holds scales[4w..4w+3]
 *                of row k (6-bit packed, unpacked per lane in registers)
 *   [128..1151]  q: 32 chunks 8h + c of 32 bytes, lane k holds
 *                qs[32h + 4c .. 32h + 4c + 3] of row k
 * As in the 16-row layout: low nibble of lane byte b of chunk 8h + c is
 * element 64h + 4c + b (sub-block 2h), the high one element 64h + 32 +
 * 4c + b (sub-block 2h + 1).
 *
 * Arithmetic per (row, block), all integer steps exact (vpmaddubsw has no
 * int32 accumulate, so the sums go through int16):
 *   P_j = sum over sub-block j of q * y: 8 vpmaddubsw of |.| <= 2 * 15 *
 *         128 summed in int16, <= 30720 < 2^15 (high nibbles shifted down,
 *         not masked in place: 16 q would overflow);
 *   S   = sum_j P_j * sc_j (vpmaddwd against sc_j in both words of a lane)
 *   M   = sum_j m_j * bsums_j (vpmaddwd against the (m_a, m_b) pairs)
 *   acc += float(S) * (d * d_y);  acc -= float(M) * (dmin * d_y)
 * gemm runs the same body once per token (the group stays in L1 between
 * tokens), so gemm == matvec bit for bit. */
#define TB_Q4KRP8_ROWS 8
#define TB_Q4K_RP8_MAXNB 64   /* rows of more than 16384 columns use the file layout */
typedef struct {
    tb_fp16_t d[TB_Q4KRP8_ROWS];
    tb_fp16_t dmin[TB_Q4KRP8_ROWS];
    uint8_t sc[3][32];       /* (dword w, lane * 4 + byte) packed 6-bit scales */
    uint8_t q[32][32];       /* (chunk, lane * 4 + byte) codes                  */
} q4_K_grp8;
static_assert(sizeof(q4_K_grp8) == TB_Q4KRP8_ROWS * sizeof(block_q4_K), "q4_K_grp8 size");
static_assert(offsetof(q4_K_grp8, q) % 64 == 0, "q4_K_grp8 code chunks on cache lines");

/* Repack `rows` rows of W into groups of 8 (repack_q4_K_rows). */
static void repack_q4_K_8(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_q4_K_rows(W, ws, rows, n, out, TB_Q4KRP8_ROWS);
}

/* The scales of block x of a group: sw[j] = sc_j in both int16 words of
 * each lane (vpshufb of the unpacked bytes), and the mins as int16 pairs
 * mp[0..3] = (m_0, m_2), (m_1, m_3), (m_4, m_6), (m_5, m_7). Unpacking as
 * q4k_grp_scales: SL = sc_0..3, SH = sc_4..7, ML = m_0..3, MH = m_4..7. */
TB_INLINE void q4k_grp8_scales(const q4_K_grp8 *x, __m256i sw[8], __m256i mp[4]) {
    const __m256i D0 = _mm256_load_si256((const __m256i *)x->sc[0]);
    const __m256i D1 = _mm256_load_si256((const __m256i *)x->sc[1]);
    const __m256i D2 = _mm256_load_si256((const __m256i *)x->sc[2]);
    const __m256i m3f = _mm256_set1_epi32(0x3f3f3f3f), m0f = _mm256_set1_epi32(0x0f0f0f0f);
    const __m256i m30 = _mm256_set1_epi32(0x30303030), p16 = _mm256_set1_epi32(0x00ff00ff);
    const __m256i SL = _mm256_and_si256(D0, m3f);
    const __m256i SH = _mm256_or_si256(_mm256_and_si256(D2, m0f), _mm256_and_si256(_mm256_srli_epi32(D0, 2), m30));
    const __m256i ML = _mm256_and_si256(D1, m3f);
    const __m256i MH = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(D2, 4), m0f),
                                       _mm256_and_si256(_mm256_srli_epi32(D1, 2), m30));
    TB_UNROLL
    for (int b = 0; b < 4; b++) {   /* byte b of each lane to both of its words, zero-extended */
        const __m256i sh = _mm256_setr_epi8(b, -128, b, -128, 4 + b, -128, 4 + b, -128, 8 + b, -128, 8 + b, -128,
                                            12 + b, -128, 12 + b, -128, b, -128, b, -128, 4 + b, -128, 4 + b, -128,
                                            8 + b, -128, 8 + b, -128, 12 + b, -128, 12 + b, -128);
        sw[b] = _mm256_shuffle_epi8(SL, sh);
        sw[4 + b] = _mm256_shuffle_epi8(SH, sh);
    }
    mp[0] = _mm256_and_si256(ML, p16);
    mp[1] = _mm256_and_si256(_mm256_srli_epi32(ML, 8), p16);
    mp[2] = _mm256_and_si256(MH, p16);
    mp[3] = _mm256_and_si256(_mm256_srli_epi32(MH, 8), p16);
}

/* One group of 8 rows (nb blocks at G) times one activation a (pa its
 * prep): the 8 rows' results. */
TB_INLINE __m256 dot_q4_K_grp8(const q4_K_grp8 *G, int64_t nb, const block_q8_K *a, const q4krp_act_t *pa) {
    __m256 acc = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const uint32_t pf = tb_pf_bytes;
    for (int64_t i = 0; i < nb; i++) {
        const q4_K_grp8 *x = &G[i];
        tb_pf_block(x, sizeof *x, pf);
        __m256i sw[8], mp[4];
        q4k_grp8_scales(x, sw, mp);
        const int8_t *y = a[i].qs;
        __m256i S = _mm256_setzero_si256();   /* (8) i32: sumi */
        TB_UNROLL
        for (int h = 0; h < 4; h++) {
            __m256i pl = _mm256_setzero_si256(), ph = _mm256_setzero_si256();   /* (16) i16 */
            TB_UNROLL
            for (int c = 0; c < 8; c++) {
                const __m256i q = _mm256_load_si256((const __m256i *)x->q[8 * h + c]);
                pl = _mm256_add_epi16(pl, _mm256_maddubs_epi16(_mm256_and_si256(q, m4),
                                                               _mm256_set1_epi32(ld32(y + 64 * h + 4 * c))));
                TB_CHAIN(pl);
                ph = _mm256_add_epi16(ph, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
                                                               _mm256_set1_epi32(ld32(y + 64 * h + 32 + 4 * c))));
                TB_CHAIN(ph);
            }
            S = _mm256_add_epi32(S, _mm256_add_epi32(_mm256_madd_epi16(pl, sw[2 * h]),
                                                     _mm256_madd_epi16(ph, sw[2 * h + 1])));
        }
        const q4krp_act_t *p = &pa[i];
        __m256i M = _mm256_madd_epi16(mp[0], _mm256_set1_epi32(p->bs[0]));
        TB_UNROLL
        for (int k = 1; k < 4; k++) M = _mm256_add_epi32(M, _mm256_madd_epi16(mp[k], _mm256_set1_epi32(p->bs[k])));
        const __m256 dx = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)x->d));      /* (8) */
        const __m256 dm = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)x->dmin));   /* (8) */
        const __m256 dy = _mm256_set1_ps(p->d);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S), _mm256_mul_ps(dx, dy), acc);
        acc = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M), _mm256_mul_ps(dm, dy), acc);
    }
    return acc;
}

/* matvec_q4_K_rp8 / gemm_q4_K_rp8 (TB_RP8_KERNELS, x86_q4_0_rp.h): each
 * token runs the single-token body on its prep, TB_Q4KRP8_NT tokens per
 * pass over a group (one group row of a 2048-column matrix is 9 KB, read
 * from L1 after the first). Q4_K weights are rarely in a prefill's hot
 * path (llama.cpp files put them in embeddings and heads, which prefill
 * reads once per prompt). */
#define TB_Q4KRP8_NT 8
TB_INLINE void dotn_q4_K_grp8(int nt, const q4_K_grp8 *G, int64_t nb, const block_q8_K *const *a,
                              const q4krp_act_t *const *pa, __m256 *out) {
    for (int t = 0; t < nt; t++) out[t] = dot_q4_K_grp8(G, nb, a[t], pa[t]);
}
TB_RP8_KERNELS(q4_K, TB_TYPE_Q4_K, q4_K_grp8, block_q8_K, q4krp_act_t, QK_K, TB_Q4K_RP8_MAXNB, TB_Q4KRP8_NT,
               prep_q4_K_rp, dotn_q4_K_grp8)

#endif /* __AVX512VNNI__ / AVX2 */
#endif
