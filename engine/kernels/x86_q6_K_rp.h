/*
 * x86_q6_K_rp.h — Q6_K x Q8_K on a load-time repacked copy of the weights:
 * 16 rows interleaved per 256-element block (AVX-512 VNNI), and 8 rows on
 * the AVX2 tier (its own section at the end, q6_K_grp8).
 *
 * Included by tier_avx512.c and tier_avx2.c after x86_common.h. Q6_K is the head (output)
 * format llama.cpp's quantizer writes for every other type, so it decides
 * the head's speed of most files people download. The file-layout kernel
 * (x86_kquant.h) reduces every row horizontally and rebuilds the scales per
 * row: ~34 GB/s per core with the weights in cache, which is the rate the
 * high bandwidth state asks of each core. As the other repacked formats,
 * each int32 lane of a ZMM here is one row, one vpdpbusd with a broadcast
 * activation dword multiplies 4 elements of 16 rows, and the per-block
 * work is shared by 16 rows.
 *
 * Arithmetic per (row, block, token), all integer steps exact:
 *   q    = ql nibble | qh 2 bits << 4, in 0..63 (unsigned operand)
 *   P_j  = sum over sub-block j (16 elements) of q * y          (vpdpbusd)
 *   S    = sum_j sc_j * (P_j - 32 * bsum_j)   (= the block's integer dot)
 *   acc += float(S) * (d * d_y)
 * |P_j - 32 bsum_j| <= 16 * 32 * 128 and |sc_j| <= 128, so
 * |S| <= 16 * 2^16 * 128 = 2^27: no int32 overflow.
 *
 * Determinism contract (x86_common.h): one dot_q6_K_grp(nt) body serves
 * matvec (nt = 1) and gemm (nt <= TB_Q6KRP_NT); the integers do not depend
 * on the order they are summed in and the float steps (one convert, one
 * scale product, one FMA per block in block order) are the same for any
 * nt: gemm == matvec bit for bit.
 */
#ifndef TB_X86_Q6_K_RP_H
#define TB_X86_Q6_K_RP_H

#include "kernels/x86_common.h"

/* One row's block x into a group block's code chunks of cw = 4R bytes (lane
 * k): sc, 4 chunks of scales; t, 16 x 3 chunks (qh, ql low half, ql high
 * half of chunk c, as the layouts below describe): the AVX-512 (R = 16)
 * and AVX2 (R = 8) layouts. */
TB_INLINE void q6k_codes_row(uint8_t *sc, uint8_t *t, size_t cw, int k, const block_q6_K *x) {
    for (int j = 0; j < 32; j++)   /* ql chunk j: half j / 16, first or second 32 bytes */
        memcpy(t + (size_t)(3 * (8 * (j / 16) + j % 8) + 1 + (j % 16) / 8) * cw + 4 * k, &x->ql[4 * j], 4);
    for (int j = 0; j < 16; j++) memcpy(t + (size_t)(3 * j) * cw + 4 * k, &x->qh[4 * j], 4);
    for (int j = 0; j < 4; j++) memcpy(sc + (size_t)j * cw + 4 * k, &x->scales[4 * j], 4);
}

#if defined(__AVX512VNNI__)

/* ---------------------------------------------------------------------- */
/* Layout                                                                   */
/* ---------------------------------------------------------------------- */

/* The codes and scales of one block of a group of 16 rows, 3328 bytes (52
 * lines), in the order the kernel reads them (one stream: on a Zen 4 core a
 * block read as three interleaved streams, ql low, ql high and qh, ran at
 * half the speed from memory). Each 64-byte chunk has lane k (bytes
 * 4k..4k+3) = 4 consecutive bytes of that field of row k:
 *   sc        4 chunks: int8 scales 4w..4w+3
 *   t[c][0]   qh bytes 4c..4c+3 (c = 8h + c8; h: half of 128 elements,
 *             l0 = 4 c8): lane byte b holds the high bits of elements
 *             128h + {0, 32, 64, 96} + l0 + b
 *   t[c][1]   ql bytes 64h + l0 ..: low nibbles of 128h + l0 + b,
 *             high nibbles of 128h + 64 + l0 + b
 *   t[c][2]   ql bytes 64h + 32 + l0 ..: elements + 32 and + 96
 * A group's blocks go in pairs of 6720 bytes, every load 64-byte aligned:
 *   [0..3327] codes of block 2j   [3328..3359] d of 2j (fp16, rows 0..15)
 *   [3360..3391] d of 2j + 1      [3392..6719] codes of block 2j + 1
 * so the copy is the file's size (16 x 210 per block) rounded up to a line
 * per group, read as one stream in order. */
typedef struct {
    uint8_t sc[4][64];
    uint8_t t[16][3][64];
} q6_K_codes;
static_assert(sizeof(q6_K_codes) == 3328, "q6_K_codes size");
#define TB_Q6KRP_ROWS 16
#define TB_Q6KRP_BLOCK (sizeof(q6_K_codes) + TB_Q6KRP_ROWS * sizeof(tb_fp16_t))   /* 3360 */
static_assert(TB_Q6KRP_BLOCK == TB_Q6KRP_ROWS * sizeof(block_q6_K), "q6_K group block = 16 file blocks");
#define TB_Q6K_RP_MAXNB 64   /* rows of more than 16384 columns use the file layout */
#define TB_Q6KRP_NT 2        /* tokens per gemm pass (4 sub-block sums each)         */

TB_INLINE size_t q6krp_group_bytes(int64_t nb) { return ((size_t)nb * TB_Q6KRP_BLOCK + 63) & ~(size_t)63; }
TB_INLINE size_t q6krp_codes_at(int64_t i) {
    return (size_t)(i / 2) * 2 * TB_Q6KRP_BLOCK + (size_t)(i & 1) * (TB_Q6KRP_BLOCK + 32);
}
TB_INLINE size_t q6krp_d_at(int64_t i) {
    return (size_t)(i / 2) * 2 * TB_Q6KRP_BLOCK + sizeof(q6_K_codes) + (size_t)(i & 1) * 32;
}

static size_t repack_bytes_q6_K(size_t ws, int64_t rows) {
    return q6krp_group_bytes((int64_t)(ws / sizeof(block_q6_K))) * (size_t)((rows + TB_Q6KRP_ROWS - 1) / TB_Q6KRP_ROWS);
}

/* Row by row, in order; missing rows of the last group are zero (d = 0:
 * their lanes compute 0 and are never stored). */
static void repack_q6_K(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    const int64_t nb = n / QK_K, ng = (rows + TB_Q6KRP_ROWS - 1) / TB_Q6KRP_ROWS;
    const size_t gb = q6krp_group_bytes(nb);
    if (rows % TB_Q6KRP_ROWS) memset((uint8_t *)out + (size_t)(ng - 1) * gb, 0, gb);
    for (int64_t r = 0; r < rows; r++) {
        const int k = (int)(r % TB_Q6KRP_ROWS);
        uint8_t *grp = (uint8_t *)out + (size_t)(r / TB_Q6KRP_ROWS) * gb;
        const block_q6_K *x = (const block_q6_K *)((const uint8_t *)W + (size_t)r * ws);   // (nb)
        for (int64_t i = 0; i < nb; i++) {
            q6_K_codes *c = (q6_K_codes *)(grp + q6krp_codes_at(i));
            q6k_codes_row(c->sc[0], c->t[0][0], sizeof c->sc[0], k, &x[i]);
            memcpy(grp + q6krp_d_at(i) + sizeof(tb_fp16_t) * (size_t)k, &x[i].d, sizeof(tb_fp16_t));
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Activation prep                                                          */
/* ---------------------------------------------------------------------- */

/* o32[16 i + j] = 32 * bsum_j of block i (the code offset, q - 32). */
TB_INLINE void prep_q6_K_rp(const block_q8_K *a, int64_t nb, int32_t *o32) {
    for (int64_t i = 0; i < nb; i++)
        for (int j = 0; j < QK_K / 16; j++) o32[16 * i + j] = 32 * a[i].bsums[j];
}

/* ---------------------------------------------------------------------- */
/* One group times nt tokens                                                */
/* ---------------------------------------------------------------------- */

/* Scale j of every lane, sign-extended: byte j % 4 of scale dword j / 4. */
TB_INLINE __m512i q6krp_scale(const q6_K_codes *x, int j) {
    const __m512i D = _mm512_load_si512(x->sc[j / 4]);
    return _mm512_srai_epi32(_mm512_slli_epi32(D, 24 - 8 * (j % 4)), 24);
}

/* One group of 16 rows (nb blocks at grp) times nt activations a[t] (o32[t]
 * their offsets): out[t] = the 16 rows' results for token t. Quarter
 * (h, qq) of a block is the 4 qh chunks 8h + 4qq .. + 3: 16 elements of
 * each of the sub-blocks 8h + qq + {0, 2, 4, 6}. */
TB_INLINE void dot_q6_K_grp(int nt, const uint8_t *grp, int64_t nb, const block_q8_K *const *a,
                            const int32_t *const *o32, __m512 *out) {
    __m512 acc[TB_Q6KRP_NT];   /* all set: a runtime nt would trip -Wmaybe-uninitialized */
    TB_UNROLL
    for (int t = 0; t < TB_Q6KRP_NT; t++) acc[t] = _mm512_setzero_ps();
    const __m512i m0f = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const uint32_t pf = nt == 1 ? tb_pf_bytes : 0;
    for (int64_t i = 0; i < nb; i++) {
        const q6_K_codes *x = (const q6_K_codes *)(grp + q6krp_codes_at(i));
        tb_pf_block(x, TB_Q6KRP_BLOCK, pf);   /* the codes and the pair's scales after them */
        __m512i S[TB_Q6KRP_NT];   /* (16) i32 per token */
        TB_UNROLL
        for (int t = 0; t < TB_Q6KRP_NT; t++) S[t] = _mm512_setzero_si512();
        TB_UNROLL
        for (int h = 0; h < 2; h++)
            TB_UNROLL
            for (int qq = 0; qq < 2; qq++) {
                __m512i P[TB_Q6KRP_NT][4];   /* (token, u): sub-block 8h + qq + 2u */
                TB_UNROLL
                for (int t = 0; t < TB_Q6KRP_NT; t++)
                    TB_UNROLL
                    for (int u = 0; u < 4; u++) P[t][u] = _mm512_setzero_si512();
                TB_UNROLL
                for (int cc = 0; cc < 4; cc++) {
                    const int c8 = 4 * qq + cc;
                    const __m512i qh = _mm512_load_si512(x->t[8 * h + c8][0]);
                    const __m512i la = _mm512_load_si512(x->t[8 * h + c8][1]);
                    const __m512i lb = _mm512_load_si512(x->t[8 * h + c8][2]);
                    /* ternarylogic 0xEA: (a & b) | c */
                    __m512i v[4];   /* codes of elements 128h + 32u + 4 c8 + b */
                    v[0] = _mm512_ternarylogic_epi32(la, m0f, _mm512_and_si512(_mm512_slli_epi16(qh, 4), m30), 0xEA);
                    v[1] = _mm512_ternarylogic_epi32(lb, m0f, _mm512_and_si512(_mm512_slli_epi16(qh, 2), m30), 0xEA);
                    v[2] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(la, 4), m0f, _mm512_and_si512(qh, m30), 0xEA);
                    v[3] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(lb, 4), m0f,
                                                     _mm512_and_si512(_mm512_srli_epi16(qh, 2), m30), 0xEA);
                    TB_UNROLL
                    for (int u = 0; u < 4; u++) {
                        const int off = 128 * h + 32 * u + 4 * c8;
                        if (nt == 1) {
                            P[0][u] = tb_dpbusd_b32(P[0][u], v[u], a[0][i].qs + off);
                            continue;
                        }
                        TB_UNROLL
                        for (int t = 0; t < nt; t++) {
                            int32_t yw;
                            memcpy(&yw, a[t][i].qs + off, 4);
                            P[t][u] = _mm512_dpbusd_epi32(P[t][u], v[u], _mm512_set1_epi32(yw));
                        }
                    }
                }
                TB_UNROLL
                for (int u = 0; u < 4; u++) {
                    const int j = 8 * h + qq + 2 * u;
                    const __m512i sc = q6krp_scale(x, j);
                    TB_UNROLL
                    for (int t = 0; t < nt; t++) {
                        const __m512i p = _mm512_sub_epi32(P[t][u], _mm512_set1_epi32(o32[t][16 * i + j]));
                        S[t] = _mm512_add_epi32(S[t], _mm512_mullo_epi32(p, sc));
                    }
                }
            }
        const __m512 dx = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(grp + q6krp_d_at(i))));   /* (16) */
        TB_UNROLL
        for (int t = 0; t < nt; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[t]), _mm512_mul_ps(dx, _mm512_set1_ps(a[t][i].d)), acc[t]);
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) out[t] = acc[t];
}

/* ---------------------------------------------------------------------- */
/* matvec / gemm                                                            */
/* ---------------------------------------------------------------------- */

/* y[r] = W[r]·a for r in [r0, r1) on the repacked copy of W; false when W
 * has none or its rows are too long (the caller runs the file layout). */
static bool matvec_q6_K_rp(const void *W, size_t ws, const void *a, float *y, int64_t r0, int64_t r1,
                           int64_t n) {
    const int64_t nb = n / QK_K;
    if (r0 >= r1) return true;
    if (nb > TB_Q6K_RP_MAXNB) return false;
    const uint8_t *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_Q6_K);
    if (!G) return false;
    int32_t o0[TB_Q6K_RP_MAXNB * 16];   // (nb, 16)
    prep_q6_K_rp(a, nb, o0);
    const block_q8_K *aa[1] = {a};
    const int32_t *o32[1] = {o0};
    const size_t gb = q6krp_group_bytes(nb);
    for (int64_t g = r0 / TB_Q6KRP_ROWS; g * TB_Q6KRP_ROWS < r1; g++) {
        __m512 o[TB_Q6KRP_NT];
        dot_q6_K_grp(1, G + (size_t)g * gb, nb, aa, o32, o);
        _mm512_mask_storeu_ps(y + g * TB_Q6KRP_ROWS, tb_grp_mask16(g, r0, r1), o[0]);
    }
    return true;
}

/* Y[t * ldy + r] = W[r]·A[t] on the repacked copy; false as matvec.
 * Tokens go in chunks whose offsets fit TB_Q6KRP_TB ints; per chunk each
 * group is read once and passed TB_Q6KRP_NT tokens at a time (it stays in
 * L1 between passes). */
#define TB_Q6KRP_TB 8192   /* 32 KiB of stack: (chunk tokens, nb, 16) offsets */
static bool gemm_q6_K_rp(const void *W, size_t ws, const void *A, size_t as, int64_t nt, float *Y,
                         int64_t ldy, int64_t r0, int64_t r1, int64_t n) {
    const int64_t nb = n / QK_K;
    if (r0 >= r1) return true;
    if (nb > TB_Q6K_RP_MAXNB) return false;
    const uint8_t *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, TB_TYPE_Q6_K);
    if (!G) return false;
    enum { NT = TB_Q6KRP_NT };
    int32_t prep[TB_Q6KRP_TB];
    const int64_t tch = TB_Q6KRP_TB / (16 * nb);   /* >= 8 */
    const size_t gb = q6krp_group_bytes(nb);
    for (int64_t c0 = 0; c0 < nt; c0 += tch) {
        const int64_t ntc = TB_MIN(tch, nt - c0);
        for (int64_t t = 0; t < ntc; t++)
            prep_q6_K_rp((const block_q8_K *)((const uint8_t *)A + (size_t)(c0 + t) * as), nb, prep + t * 16 * nb);
        for (int64_t g = r0 / TB_Q6KRP_ROWS; g * TB_Q6KRP_ROWS < r1; g++) {
            const __mmask16 m = tb_grp_mask16(g, r0, r1);
            for (int64_t t0 = 0; t0 < ntc; t0 += NT) {
                const int ntk = (int)TB_MIN(NT, ntc - t0);
                const block_q8_K *aa[NT];
                const int32_t *o32[NT];
                for (int t = 0; t < ntk; t++) {
                    aa[t] = (const block_q8_K *)((const uint8_t *)A + (size_t)(c0 + t0 + t) * as);
                    o32[t] = prep + (t0 + t) * 16 * nb;
                }
                __m512 o[NT];
                if (ntk == NT) dot_q6_K_grp(NT, G + (size_t)g * gb, nb, aa, o32, o);
                else dot_q6_K_grp(1, G + (size_t)g * gb, nb, aa, o32, o);
                for (int t = 0; t < ntk; t++) _mm512_mask_storeu_ps(Y + (c0 + t0 + t) * ldy + g * TB_Q6KRP_ROWS, m, o[t]);
            }
        }
    }
    return true;
}

#elif !defined(__AVX512F__)

/* ---------------------------------------------------------------------- */
/* AVX2: 8 rows per group                                                   */
/* ---------------------------------------------------------------------- */

/* Included by tier_avx2.c after x86_q4_0_rp.h (q4rp8_store). The AVX-512
 * layout's fields at half width, one block of a group of 8 rows in 1680
 * bytes = 8 x 210 (the copy is the file's size, rows padded to 8):
 *   sc  4 chunks of 32 bytes: lane k holds int8 scales 4w..4w+3 of row k
 *   t   16 x 3 chunks of 32 bytes, as t[c][0..2] of the 16-row layout
 *   d   rows 0..7 (fp16)
 * Without VNNI the sums go through int16: a code is 0..63, so a vpmaddubsw
 * pair is |.| <= 2 * 63 * 128 = 16128 and two chunks' pairs (8 elements of
 * a sub-block) sum below 2^15; each such sum meets its row's scale in a
 * vpmaddwd (sc_j sign-extended into both words of the row's lane by one
 * vpshufb and one vpsraw), and the code offset is taken out per block:
 *   S = sum_j sc_j P_j - 32 sum_j sc_j bsum_j      (the block's integer dot)
 * |sum_j sc_j P_j| <= 16 * 128 * 16 * 63 * 128 < 2^29, so no overflow.
 * gemm runs the same body once per token, so gemm == matvec bit for bit. */
#define TB_Q6KRP8_ROWS 8
#define TB_Q6K_RP8_MAXNB 64   /* rows of more than 16384 columns use the file layout */
typedef struct {
    uint8_t sc[4][32];
    uint8_t t[16][3][32];
    tb_fp16_t d[TB_Q6KRP8_ROWS];
} q6_K_grp8;
static_assert(sizeof(q6_K_grp8) == TB_Q6KRP8_ROWS * sizeof(block_q6_K), "q6_K_grp8 size");

/* Rows of W into 8-row groups, (groups, blocks) order; missing rows of the
 * last group are zero (d = 0: their lanes compute 0 and are never stored). */
static void repack_q6_K_8(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    const int64_t nb = n / QK_K, ng = (rows + TB_Q6KRP8_ROWS - 1) / TB_Q6KRP8_ROWS;
    q6_K_grp8 *G = out;   // (ng, nb)
    for (int64_t g = 0; g < ng; g++)
        for (int64_t i = 0; i < nb; i++) {
            q6_K_grp8 *o = &G[g * nb + i];
            memset(o, 0, sizeof *o);
            for (int k = 0; k < TB_Q6KRP8_ROWS && g * TB_Q6KRP8_ROWS + k < rows; k++) {
                const block_q6_K *x =
                    (const block_q6_K *)((const uint8_t *)W + (size_t)(g * TB_Q6KRP8_ROWS + k) * ws) + i;
                q6k_codes_row(o->sc[0], o->t[0][0], sizeof o->sc[0], k, x);
                o->d[k] = x->d;
            }
        }
}

/* Scale j of every row, sign-extended into both int16 words of its lane. */
TB_INLINE __m256i q6krp8_scale(const q6_K_grp8 *x, int j) {
    const int b = j % 4;
    const __m256i sh = _mm256_setr_epi8(-128, b, -128, b, -128, 4 + b, -128, 4 + b, -128, 8 + b, -128, 8 + b,
                                        -128, 12 + b, -128, 12 + b, -128, b, -128, b, -128, 4 + b, -128, 4 + b,
                                        -128, 8 + b, -128, 8 + b, -128, 12 + b, -128, 12 + b);
    return _mm256_srai_epi16(_mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)x->sc[j / 4]), sh), 8);
}

/* Scales j and j + 1 (j even) of every row, sign-extended into the low and
 * the high int16 word of its lane. */
TB_INLINE __m256i q6krp8_scale_pair(const q6_K_grp8 *x, int j) {
    const int b = j % 4;
    const __m256i sh = _mm256_setr_epi8(-128, b, -128, b + 1, -128, 4 + b, -128, 5 + b, -128, 8 + b, -128, 9 + b,
                                        -128, 12 + b, -128, 13 + b, -128, b, -128, b + 1, -128, 4 + b, -128, 5 + b,
                                        -128, 8 + b, -128, 9 + b, -128, 12 + b, -128, 13 + b);
    return _mm256_srai_epi16(_mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)x->sc[j / 4]), sh), 8);
}

/* One group of 8 rows (nb blocks at G) times one activation a: the 8 rows'
 * results. The offset sum C = sum_j sc_j bsum_j goes two sub-blocks per
 * vpmaddwd (scales j, j + 1 in a lane's two words against the adjacent
 * bsums broadcast as one dword), 8 per block, before the codes. Quarter
 * (h, qq) of a block is chunks 8h + 4qq .. + 3: 16 elements of each of the
 * sub-blocks 8h + qq + {0, 2, 4, 6}, summed two chunks at a time. (Taking
 * one sub-block at a time instead, to keep fewer vectors live, ran slower:
 * kernels --ceiling --format q6_K --isa avx2 -t 1, best GB/s over 7
 * alternated runs, mean 25.4 against 27.9.) */
TB_INLINE __m256 dot_q6_K_grp8(const q6_K_grp8 *G, int64_t nb, const block_q8_K *a) {
    __m256 acc = _mm256_setzero_ps();
    const __m256i m0f = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    const uint32_t pf = tb_pf_bytes;
    for (int64_t i = 0; i < nb; i++) {
        const q6_K_grp8 *x = &G[i];
        tb_pf_block(x, sizeof *x, pf);
        const int8_t *y = a[i].qs;
        __m256i S = _mm256_setzero_si256(), C = _mm256_setzero_si256();   /* (8) i32: sum sc P, sum sc bsum */
        TB_UNROLL
        for (int j = 0; j < 16; j += 2)
            C = _mm256_add_epi32(C, _mm256_madd_epi16(q6krp8_scale_pair(x, j),
                                                      _mm256_set1_epi32(ld32((const int8_t *)(a[i].bsums + j)))));
        TB_UNROLL
        for (int h = 0; h < 2; h++)
            TB_UNROLL
            for (int qq = 0; qq < 2; qq++) {
                __m256i sw[4];   /* scales of sub-blocks 8h + qq + 2u */
                TB_UNROLL
                for (int u = 0; u < 4; u++) {
                    const int j = 8 * h + qq + 2 * u;
                    sw[u] = q6krp8_scale(x, j);
                }
                TB_UNROLL
                for (int pr = 0; pr < 2; pr++) {
                    __m256i P[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                                    _mm256_setzero_si256()};   /* (16) i16 per sub-block */
                    TB_UNROLL
                    for (int cc = 2 * pr; cc < 2 * pr + 2; cc++) {
                        const int c8 = 4 * qq + cc;
                        const __m256i qh = _mm256_loadu_si256((const __m256i *)x->t[8 * h + c8][0]);
                        const __m256i la = _mm256_loadu_si256((const __m256i *)x->t[8 * h + c8][1]);
                        const __m256i lb = _mm256_loadu_si256((const __m256i *)x->t[8 * h + c8][2]);
                        __m256i v[4];   /* codes of elements 128h + 32u + 4 c8 + b */
                        v[0] = _mm256_or_si256(_mm256_and_si256(la, m0f), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
                        v[1] = _mm256_or_si256(_mm256_and_si256(lb, m0f), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
                        v[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m0f), _mm256_and_si256(qh, m30));
                        v[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m0f),
                                               _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
                        TB_UNROLL
                        for (int u = 0; u < 4; u++) {
                            P[u] = _mm256_add_epi16(P[u], _mm256_maddubs_epi16(v[u], _mm256_set1_epi32(
                                                                  ld32(y + 128 * h + 32 * u + 4 * c8))));
                            TB_CHAIN(P[u]);
                        }
                    }
                    TB_UNROLL
                    for (int u = 0; u < 4; u++) S = _mm256_add_epi32(S, _mm256_madd_epi16(P[u], sw[u]));
                }
            }
        S = _mm256_sub_epi32(S, _mm256_slli_epi32(C, 5));
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d));   /* (8) */
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S), _mm256_mul_ps(dx, _mm256_set1_ps(a[i].d)), acc);
    }
    return acc;
}

/* matvec_q6_K_rp8 / gemm_q6_K_rp8 (TB_RP8_KERNELS, x86_q4_0_rp.h): Q6_K
 * needs no activation prep; each token runs the single-token body,
 * TB_Q6KRP8_NT tokens per pass over a group (a group row, 13 KB at 2048
 * columns, stays in L1 between them). */
#define TB_Q6KRP8_NT 8
TB_INLINE void prep_q6_K_rp8(const block_q8_K *a, int64_t nb, uint8_t *none) {
    (void)a;
    (void)nb;
    (void)none;
}
TB_INLINE void dotn_q6_K_grp8(int nt, const q6_K_grp8 *G, int64_t nb, const block_q8_K *const *a,
                              const uint8_t *const *none, __m256 *out) {
    (void)none;
    for (int t = 0; t < nt; t++) out[t] = dot_q6_K_grp8(G, nb, a[t]);
}
TB_RP8_KERNELS(q6_K, TB_TYPE_Q6_K, q6_K_grp8, block_q8_K, uint8_t, QK_K, TB_Q6K_RP8_MAXNB, TB_Q6KRP8_NT,
               prep_q6_K_rp8, dotn_q6_K_grp8)

#endif /* __AVX512VNNI__ / AVX2 */
#endif
