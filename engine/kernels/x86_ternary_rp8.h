/*
 * x86_ternary_rp8.h — TQ2_0 and TQ1_0 x Q8_K on the AVX2 tier's load-time
 * repacked copy: 16 rows interleaved per block (lane = row), computed as
 * two 8-row halves of a YMM each (the name is the 8-row half the
 * kernels compute); TQ1_0's trits are stored as TQ2_0's 2-bit
 * codes (one kernel for both).
 *
 * Included by tier_avx2.c only, after x86_q4_0_rp.h (its q4rp8_store writes
 * a group's lanes that fall in [r0, r1)) and x86_ternary.h (tq1_trits, the
 * TQ1_0 decoding). The AVX-512 tier keeps its own 16-row layouts in
 * x86_ternary.h.
 *
 * One vpmaddubsw multiplies 8 rows x 4 elements (codes, unsigned) by one
 * broadcast activation dword, so the Q8_K block is read once for 16 rows
 * (decode broadcasts each dword once for both halves), no row is reduced
 * horizontally, and the per-block float work (fp16 convert, d_w * d_a,
 * one FMA) is shared by 8 rows.
 *
 * Determinism contract (x86_common.h): every (row, block, token) integer
 * dot is exact whatever path computed it (nt == 1 and nt > 1 decode
 * differently), and the float steps (convert, d_w * d_a, one FMA per block
 * in block order, one chain per token) do not depend on nt, so gemm ==
 * matvec bit for bit per row.
 */
#ifndef TB_X86_TERNARY_RP8_H
#define TB_X86_TERNARY_RP8_H

#include "kernels/x86_common.h"
#include "kernels/x86_q4_0_rp.h"

#define TB_TRP_ROWS 16      /* rows per group: two 8-row halves, one stream  */
#define TB_TRP8_MAXNB 64   /* longer rows (n > 16384) use the file layout */
#define TB_TRP8_NT 4       /* tokens per gemm pass (16 YMM registers)      */
static_assert(TB_TRP_ROWS == TB_Q4RP16H_ROWS, "groups are stored by rp16h_store (x86_q4_0_rp.h)");

/* ---------------------------------------------------------------------- */
/* Layouts                                                                  */
/* ---------------------------------------------------------------------- */

/* TQ2_0, one group of 16 rows, one block: 1056 bytes = 16 file blocks, so
 * the copy is as large as the file rows padded to a multiple of 16 rows:
 *   [0 .. 1023]    16 chunks j of 64 bytes: lane k (bytes 4k..4k+3) holds
 *                  bytes 4j..4j+3 of row k's qs (a 16 x 16 dword transpose);
 *                  a YMM load of bytes 32h.. of a chunk is row half h
 *   [1024 .. 1055] d of rows 0..15 (fp16)
 * Bits 2l..2l+1 of lane byte b of chunk j code element
 * 128 (j / 8) + 32 l + 4 (j % 8) + b: its activation dword is at that
 * offset (b = 0) of the Q8_K block's qs.
 * 16 rows, not 8, so that a decode matvec can broadcast each activation
 * dword once for 16 rows from one memory stream: two 8-row groups read
 * side by side ran at half the speed from memory (two streams). */
typedef struct {
    uint8_t q[16][64];
    tb_fp16_t d[TB_TRP_ROWS];
} tq2_0_grp16;
static_assert(sizeof(tq2_0_grp16) == TB_TRP_ROWS * sizeof(block_tq2_0), "tq2_0_grp16 size");

/* TQ1_0 is repacked into tq2_0_grp16 (its trits as 2-bit codes, d copied):
 * 1056 bytes per 16 file blocks of 54, 22 % more than the file. Decoding
 * base-3 bytes on AVX2 costs ~9 vector ops per trit (two compares and a
 * x3 recurrence per byte lane, no byte multiply): the direct kernel on a
 * base-3 copy ran at 9 GB/s, the 2-bit codes at ~25 (ternbench kernels,
 * --isa avx2, 1 thread, this machine), so 22 % more bytes cost less than
 * the decoding. The integer dots are exact either way, so the results are
 * those of the base-3 kernels bit for bit. */
static size_t repack_bytes_tq1_0_16(size_t ws, int64_t rows) {
    return (size_t)((rows + TB_TRP_ROWS - 1) / TB_TRP_ROWS) * (ws / sizeof(block_tq1_0)) * sizeof(tq2_0_grp16);
}

/* A file block's codes as TQ2_0's qs (element 128 (m / 32) + 32 l + m % 32
 * in bits 2l of byte m): TQ2_0's own, or TQ1_0's trits (tq1_trits, the
 * format's decoding) packed that way. */
typedef void (*trp8_codes_fn)(const void *block, uint8_t *qs);

static void codes_tq2_0(const void *block, uint8_t *qs) { memcpy(qs, ((const block_tq2_0 *)block)->qs, QK_K / 4); }

static void codes_tq1_0(const void *block, uint8_t *qs) {
    uint8_t t[QK_K];
    tq1_trits(block, t);
    for (int m = 0; m < QK_K / 4; m++) {
        const uint8_t *e = t + 128 * (m / 32) + m % 32;
        qs[m] = (uint8_t)(e[0] | e[32] << 2 | e[64] << 4 | e[96] << 6);
    }
}

/* Rows of `bsize`-byte blocks (fp16 d last) into tq2_0_grp16 groups: each
 * block's 16 code dwords to lane k of the group block's chunks, d to d[k].
 * Missing rows of the last group are zero bytes (d = 0: their lanes
 * compute 0 and are never stored). Each row is read once in order; its
 * group's blocks are the only bytes written meanwhile. */
TB_INLINE void repack_trp(const void *W, size_t ws, int64_t rows, int64_t nb, void *out, size_t bsize,
                          trp8_codes_fn codes) {
    const int R = TB_TRP_ROWS;
    const int64_t ng = (rows + R - 1) / R;
    uint8_t qs[QK_K / 4];
    for (int64_t g = 0; g < ng; g++) {
        tq2_0_grp16 *og = (tq2_0_grp16 *)out + g * nb;   // (nb)
        const int kn = (int)TB_MIN(R, rows - g * R);
        if (kn < R) memset(og, 0, (size_t)nb * sizeof *og);
        for (int k = 0; k < kn; k++) {
            const uint8_t *x = (const uint8_t *)W + (size_t)(g * R + k) * ws;   // (nb, bsize)
            for (int64_t i = 0; i < nb; i++, x += bsize) {
                codes(x, qs);
                for (int c = 0; c < 16; c++) memcpy(&og[i].q[c][4 * k], &qs[4 * c], 4);
                memcpy(&og[i].d[k], x + bsize - sizeof(tb_fp16_t), sizeof(tb_fp16_t));
            }
        }
    }
}

static void repack_tq2_0_16(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_trp(W, ws, rows, n / QK_K, out, sizeof(block_tq2_0), codes_tq2_0);
}

static void repack_tq1_0_16(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_trp(W, ws, rows, n / QK_K, out, sizeof(block_tq1_0), codes_tq1_0);
}

/* -(sum of the activation block's 256 codes): w = code - 1, so the offset
 * of every row's dot is this. */
TB_INLINE void prep_trp8(const block_q8_K *a, int64_t nb, int32_t *nsum) {
    const __m256i one = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < nb; i++) {
        __m256i s = _mm256_madd_epi16(loadu256(a[i].bsums), one);   // (8) i32
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
        nsum[i] = -_mm_cvtsi128_si32(h);
    }
}

TB_INLINE __m256i bcast8(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* ---------------------------------------------------------------------- */
/* TQ2_0                                                                    */
/* ---------------------------------------------------------------------- */

/* Chunk j's row half rh: 8 rows x 4 code bytes. */
TB_INLINE __m256i trp_chunk(const tq2_0_grp16 *x, int j, int rh) { return loadu256(x->q[j] + 32 * rh); }

/* One group of 16 rows (nb blocks at G) times one activation a (nsum its
 * -sums): out->h[rh] = row half rh's results. Every activation dword is
 * broadcast once for both halves (per chunk: 2 loads, 2 shifts, 8 masks, 8
 * vpmaddubsw, 8 adds and 4 broadcasts, where a single 8-row half takes 4
 * broadcasts of its own: kernels --ceiling --format tq2_0 --isa avx2, one
 * thread, 21.1 -> 24.2 GB/s against the 8-row copy). Codes of
 * shifts 0 and 2 are masked with 3 (h1: int16 sums of 32 vpmaddubsw of
 * |.| <= 2 * 3 * 128, < 2^15), of shifts 1 and 3 masked in place with 12,
 * i.e. times 4 (h4: 8 vpmaddubsw of <= 2 * 12 * 128 at most before
 * vpmaddwd widens them; the int32 sum is exactly divisible by 4, one
 * arithmetic shift per block): 5 ops per chunk and half instead of 7. */
TB_INLINE void dot1_tq2_0_grp16(const tq2_0_grp16 *G, int64_t nb, const block_q8_K *a, const int32_t *nsum,
                                rp16h_v *out) {
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    const __m256i m3 = _mm256_set1_epi8(3), m12 = _mm256_set1_epi8(12), one = _mm256_set1_epi16(1);
    const uint32_t pf = tb_pf_bytes;
    for (int64_t i = 0; i < nb; i++) {
        const tq2_0_grp16 *x = &G[i];
        tb_pf_block(x, sizeof *x, pf);
        const int8_t *y = a[i].qs;
        __m256i h1[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
        __m256i s4[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};   /* (8) i32: 4 x the shift-1/3 dots */
        TB_UNROLL
        for (int jg = 0; jg < 16; jg += 4) {
            __m256i h4[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            TB_UNROLL
            for (int jj = 0; jj < 4; jj++) {
                const int j = jg + jj;
                const int8_t *yj = y + 128 * (j / 8) + 4 * (j % 8);
                const __m256i b0 = bcast8(yj), b1 = bcast8(yj + 32), b2 = bcast8(yj + 64), b3 = bcast8(yj + 96);
                TB_UNROLL
                for (int rh = 0; rh < 2; rh++) {
                    const __m256i q = trp_chunk(x, j, rh), q4 = _mm256_srli_epi16(q, 4);
                    h1[rh] = _mm256_add_epi16(h1[rh], _mm256_maddubs_epi16(_mm256_and_si256(q, m3), b0));
                    TB_CHAIN(h1[rh]);
                    h4[rh] = _mm256_add_epi16(h4[rh], _mm256_maddubs_epi16(_mm256_and_si256(q, m12), b1));
                    TB_CHAIN(h4[rh]);
                    h1[rh] = _mm256_add_epi16(h1[rh], _mm256_maddubs_epi16(_mm256_and_si256(q4, m3), b2));
                    TB_CHAIN(h1[rh]);
                    h4[rh] = _mm256_add_epi16(h4[rh], _mm256_maddubs_epi16(_mm256_and_si256(q4, m12), b3));
                    TB_CHAIN(h4[rh]);
                }
            }
            TB_UNROLL
            for (int rh = 0; rh < 2; rh++) s4[rh] = _mm256_add_epi32(s4[rh], _mm256_madd_epi16(h4[rh], one));
        }
        TB_UNROLL
        for (int rh = 0; rh < 2; rh++) {
            const __m256i s1 = _mm256_add_epi32(_mm256_madd_epi16(h1[rh], one), _mm256_set1_epi32(nsum[i]));
            const __m256i p = _mm256_add_epi32(s1, _mm256_srai_epi32(s4[rh], 2));
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x->d + 8 * rh)));   /* (8) */
            acc[rh] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dx, _mm256_set1_ps(a[i].d)), acc[rh]);
        }
    }
    out->h[0] = acc[0];
    out->h[1] = acc[1];
}

/* One group of 16 rows (nb blocks at G), both halves, times nt (> 1)
 * activations a[t] (nsum[t] their -sums): out[t] = the group's results for
 * token t. Each activation dword is broadcast once for both row halves and
 * each code vector extracted once for the nt tokens: per chunk and
 * token-pair of halves one broadcast, two vpmaddubsw and two adds. */
TB_INLINE void dotn_tq2_0_grp16(int nt, const tq2_0_grp16 *G, int64_t nb, const block_q8_K *const *a,
                                const int32_t *const *nsum, rp16h_v *out) {
    __m256 acc[2][TB_TRP8_NT];   /* all set: a runtime nt would trip -Wmaybe-uninitialized */
    TB_UNROLL
    for (int t = 0; t < TB_TRP8_NT; t++) acc[0][t] = acc[1][t] = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi16(1);
    for (int64_t i = 0; i < nb; i++) {
        const tq2_0_grp16 *x = &G[i];
        __m256i p[2][TB_TRP8_NT];   /* (8) i32 per row half and token */
        TB_UNROLL
        for (int t = 0; t < TB_TRP8_NT; t++)
            p[0][t] = p[1][t] = t < nt ? _mm256_set1_epi32(nsum[t][i]) : _mm256_setzero_si256();
        for (int half = 0; half < 2; half++) {
            __m256i h[2][TB_TRP8_NT];   /* (16) i16 per row half and token */
            TB_UNROLL
            for (int t = 0; t < TB_TRP8_NT; t++) h[0][t] = h[1][t] = _mm256_setzero_si256();
            TB_UNROLL
            for (int jj = 0; jj < 8; jj++) {
                const int j = 8 * half + jj;
                const __m256i q0 = trp_chunk(x, j, 0), q1 = trp_chunk(x, j, 1);
                TB_UNROLL
                for (int l = 0; l < 4; l++) {
                    const __m256i c0 = _mm256_and_si256(l ? _mm256_srli_epi16(q0, 2 * l) : q0, m3);
                    const __m256i c1 = _mm256_and_si256(l ? _mm256_srli_epi16(q1, 2 * l) : q1, m3);
                    TB_UNROLL
                    for (int t = 0; t < nt; t++) {
                        const __m256i b = bcast8(a[t][i].qs + 128 * half + 32 * l + 4 * jj);
                        h[0][t] = _mm256_add_epi16(h[0][t], _mm256_maddubs_epi16(c0, b));
                        TB_CHAIN(h[0][t]);
                        h[1][t] = _mm256_add_epi16(h[1][t], _mm256_maddubs_epi16(c1, b));
                        TB_CHAIN(h[1][t]);
                    }
                }
            }
            TB_UNROLL
            for (int t = 0; t < nt; t++) {
                p[0][t] = _mm256_add_epi32(p[0][t], _mm256_madd_epi16(h[0][t], one));
                p[1][t] = _mm256_add_epi32(p[1][t], _mm256_madd_epi16(h[1][t], one));
            }
        }
        TB_UNROLL
        for (int rh = 0; rh < 2; rh++) {
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x->d + 8 * rh)));   /* (8) */
            TB_UNROLL
            for (int t = 0; t < nt; t++)
                acc[rh][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[rh][t]), _mm256_mul_ps(dx, _mm256_set1_ps(a[t][i].d)),
                                             acc[rh][t]);
        }
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) {
        out[t].h[0] = acc[0][t];
        out[t].h[1] = acc[1][t];
    }
}

/* One group of 16 rows times nt activations: out[t] = its results for
 * token t. Both paths compute each (row, block, token) integer dot exactly
 * and then the same float steps (convert, d_w * d_a, one FMA per block in
 * block order), so gemm == matvec bit for bit per row. */
TB_RP16H_DOT(dot_tq2_0_grp16, tq2_0_grp16, block_q8_K, int32_t, dot1_tq2_0_grp16, dotn_tq2_0_grp16)

/* ---------------------------------------------------------------------- */
/* matvec / gemm                                                            */
/* ---------------------------------------------------------------------- */

/* matvec_tq2_0_rp16h / gemm_tq2_0_rp16h and the same for TQ1_0 (TB_RP16H_KERNELS,
 * x86_q4_0_rp.h): TB_TRP8_NT tokens per gemm pass over the rows. */
TB_RP16H_KERNELS(tq2_0, TB_TYPE_TQ2_0, tq2_0_grp16, block_q8_K, int32_t, QK_K, TB_TRP8_MAXNB, TB_TRP8_NT, prep_trp8,
                 dot_tq2_0_grp16)
TB_RP16H_KERNELS(tq1_0, TB_TYPE_TQ1_0, tq2_0_grp16, block_q8_K, int32_t, QK_K, TB_TRP8_MAXNB, TB_TRP8_NT, prep_trp8,
                 dot_tq2_0_grp16)   /* TQ1_0 repacked as 2-bit codes */

#endif
