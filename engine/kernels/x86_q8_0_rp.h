/*
 * x86_q8_0_rp.h — Q8_0 x Q8_0 on a load-time repacked copy of the weights
 * (AVX-512 VNNI tier): 16 rows interleaved per 32-element block; the AVX2
 * tier's 8-row copy is the section at the end (q8_0_grp8).
 *
 * Included by tier_avx512.c and tier_avx2.c after x86_common.h. Follows the repacked Q4_0
 * path (x86_q4_0_rp.h): each int32 lane of a ZMM is one weight row, so one
 * vpdpbusd with a broadcast activation dword accumulates 4 elements of 16
 * rows, and the per-block float work (convert, scale, FMA) is shared by 16
 * rows. The file-layout kernel (x86_int512.h) instead loads 192 bytes of
 * prepared activation per 68 bytes of one row's weights; here a block of
 * 16 rows (544 bytes) takes 8 broadcast dwords and one 8-byte prep entry.
 *
 * Signs: vpdpbusd multiplies unsigned by signed bytes. The copy stores each
 * code as w ^ 0x80 = w + 128 (unsigned), the activation stays signed, and
 * the accumulator starts at -128 * sum(activation block) (the prep), so the
 * (row, block) integer dot is exactly sum(w * a), as in the _ref.
 *
 * Determinism contract (x86_common.h): one dot_q8_0_grp(nt) body serves
 * matvec (nt = 1) and gemm (nt = 1..TB_Q8RP_NT). A (row, block, token)
 * integer dot is exact whatever the accumulation order, and the float steps
 * (convert, d_w * d_a, one FMA per block in block order, one chain per
 * token) are the same for any nt, so gemm == matvec bit for bit.
 */
#ifndef TB_X86_Q8_0_RP_H
#define TB_X86_Q8_0_RP_H

#include "kernels/x86_common.h"

/* Rows of W (file layout, stride ws, n columns) into groups of R rows,
 * (group, block) order, a group block being 8 chunks of 4R bytes (lane k:
 * qs[4c..4c+3] of row k, each byte xor flip) then R fp16 d: the AVX-512
 * (R = 16, flip 0x80: w + 128, unsigned) and AVX2 (R = 8, flip 0: w as is)
 * layouts. Missing rows of the last group are codes flip (w = 0) with
 * d = 0 (their lanes compute 0 and are never stored). Each row is read
 * once in order; its group's blocks are the only bytes written meanwhile. */
TB_INLINE void repack_q8_0_rows(const void *W, size_t ws, int64_t rows, int64_t n, void *out, int R, uint8_t flip) {
    const int64_t nb = n / QK8_0, ng = (rows + R - 1) / R;
    const size_t gb = (size_t)R * sizeof(block_q8_0);   /* bytes of one group block */
    for (int64_t g = 0; g < ng; g++) {
        uint8_t *og = (uint8_t *)out + (size_t)(g * nb) * gb;   // (nb, 8, R, 4) codes + (R) d per block
        const int kn = (int)TB_MIN(R, rows - g * R);
        if (kn < R)   /* full groups: every byte is written below */
            for (int64_t i = 0; i < nb; i++) {
                memset(og + (size_t)i * gb, flip, 32 * (size_t)R);
                memset(og + (size_t)i * gb + 32 * (size_t)R, 0, 2 * (size_t)R);
            }
        for (int k = 0; k < kn; k++) {
            const block_q8_0 *x = (const block_q8_0 *)((const uint8_t *)W + (size_t)(g * R + k) * ws);   // (nb)
            for (int64_t i = 0; i < nb; i++) {
                uint8_t *o = og + (size_t)i * gb;
                uint32_t v[8];
                memcpy(v, x[i].qs, sizeof v);
                for (int c = 0; c < 8; c++) {
                    const uint32_t u = v[c] ^ (0x01010101u * flip);
                    memcpy(o + 4 * R * c + 4 * k, &u, 4);
                }
                memcpy(o + 32 * R + 2 * k, &x[i].d, 2);
            }
        }
    }
}

#if defined(__AVX512VNNI__)

#define TB_Q8RP_ROWS 16
static_assert(TB_Q8RP_ROWS == 16, "store masks are tb_grp_mask16 (x86_common.h)");
#define TB_Q8RP_MAXNB 1024   /* longer rows (n > 32768) use the file layout */
#ifndef TB_Q8RP_NT
#define TB_Q8RP_NT 8         /* tokens per gemm pass over a group          */
#endif

/* One group of 16 rows, one block: 544 bytes = 16 file blocks, so the copy
 * is exactly as large as the file rows (padded to a multiple of 16 rows):
 *   [0 .. 511]     8 chunks c of 64 bytes: lane k (bytes 4k..4k+3) holds
 *                  qs[4c..4c+3] of row k, each byte xor 0x80 (a 16 x 4
 *                  dword transpose of the codes, made unsigned)
 *   [512 .. 543]   d of rows 0..15 (fp16)
 * Groups are stored (group, block): a group's blocks are one contiguous
 * stream. The activation for chunk c is the dword at qs + 4c, broadcast. */
typedef struct {
    uint8_t q[8][64];
    tb_fp16_t d[TB_Q8RP_ROWS];
} q8_0_grp;
static_assert(sizeof(q8_0_grp) == TB_Q8RP_ROWS * sizeof(block_q8_0), "q8_0_grp size");

/* Repack `rows` rows of W into 16-row groups (repack_q8_0_rows). */
static void repack_q8_0(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_q8_0_rows(W, ws, rows, n, out, TB_Q8RP_ROWS, 0x80);
}

/* ---------------------------------------------------------------------- */
/* Activation prep: per Q8_0 block, -128 * sum(qs) and d as f32             */
/* ---------------------------------------------------------------------- */

typedef struct {
    int32_t nsum;   /* -128 * sum of the block's 32 codes (the +128 offset) */
    float d;        /* the block's scale                                     */
} q8rp_act_t;

/* p[i] for the nb blocks of one Q8_0 activation row a. */
TB_INLINE void prep_q8_0_rp(const block_q8_0 *a, int64_t nb, q8rp_act_t *p) {
    const __m256i one = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < nb; i++) {
        __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), one, loadu256(a[i].qs));   // (8) i32
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
        p[i].nsum = -128 * _mm_cvtsi128_si32(h);   /* |sum| <= 4096: no overflow */
        p[i].d = fp16_f32(a[i].d);
    }
}

TB_INLINE __m512i q8rp_bcast(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* ---------------------------------------------------------------------- */
/* One group times nt tokens                                                */
/* ---------------------------------------------------------------------- */

/* One group of 16 rows (nb blocks at G) times nt activations a[t] (pa[t]
 * their prep): out[t] = the 16 rows' results for token t. nt == 1 splits
 * the 8 chunks over two integer chains; nt > 1 loads each chunk once and
 * shares it across the tokens. */
TB_INLINE void dot_q8_0_grp(int nt, const q8_0_grp *G, int64_t nb, const block_q8_0 *const *a,
                            const q8rp_act_t *const *pa, __m512 *out) {
    __m512 acc[TB_Q8RP_NT];   /* all set: a runtime nt would trip -Wmaybe-uninitialized */
    TB_UNROLL
    for (int t = 0; t < TB_Q8RP_NT; t++) acc[t] = _mm512_setzero_ps();
    const uint32_t pf = nt == 1 ? tb_pf_bytes : 0;
    for (int64_t i = 0; i < nb; i++) {
        const q8_0_grp *x = &G[i];
        tb_pf_block(x, sizeof *x, pf);
        __m512i p[TB_Q8RP_NT];   /* (16) i32 per token; all set, as acc */
        TB_UNROLL
        for (int t = 0; t < TB_Q8RP_NT; t++) p[t] = _mm512_setzero_si512();
        if (nt == 1) {
            const int8_t *y = a[0][i].qs;
            __m512i p0 = _mm512_set1_epi32(pa[0][i].nsum), p1 = _mm512_setzero_si512();
            TB_UNROLL
            for (int c = 0; c < 8; c += 2) {
                p0 = tb_dpbusd_b32(p0, _mm512_loadu_si512(x->q[c]), y + 4 * c);
                p1 = tb_dpbusd_b32(p1, _mm512_loadu_si512(x->q[c + 1]), y + 4 * c + 4);
            }
            p[0] = _mm512_add_epi32(p0, p1);
        } else {
            TB_UNROLL
            for (int t = 0; t < nt; t++) p[t] = _mm512_set1_epi32(pa[t][i].nsum);
            TB_UNROLL
            for (int c = 0; c < 8; c++) {
                const __m512i q = _mm512_loadu_si512(x->q[c]);
                TB_UNROLL
                for (int t = 0; t < nt; t++) p[t] = _mm512_dpbusd_epi32(p[t], q, q8rp_bcast(a[t][i].qs + 4 * c));
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

/* matvec_q8_0_rp / gemm_q8_0_rp (x86_common.h): TB_Q8RP_NT tokens per gemm pass. */
_Static_assert(TB_Q8RP_ROWS == 16, "TB_RP16_KERNELS stores 16-row groups");
TB_RP16_KERNELS(q8_0, TB_TYPE_Q8_0, q8_0_grp, block_q8_0, q8rp_act_t, QK8_0, TB_Q8RP_MAXNB, TB_Q8RP_NT, prep_q8_0_rp, dot_q8_0_grp)

#elif !defined(__AVX512F__)

/* ---------------------------------------------------------------------- */
/* AVX2: 8 rows per group                                                   */
/* ---------------------------------------------------------------------- */

/* Included by tier_avx2.c after x86_q4_0_rp.h (its lane store,
 * q4rp8_store). One group of 8 rows, one
 * block: 272 bytes = 8 file blocks:
 *   [0 .. 255]    8 chunks c of 32 bytes: lane k holds qs[4c..4c+3] of
 *                 row k (w, signed, as in the file)
 *   [256 .. 271]  d of rows 0..7 (fp16)
 * w y = |w| sign(y, w): one vpabsb per chunk (shared by the tokens), and
 * per token a vpsignb of the broadcast activation dword, one vpmaddubsw
 * (|w| <= 128 unsigned times |y| <= 127: pairs <= 2 * 128 * 127 < 2^15)
 * and one vpmaddwd widening it into the int32 sum (6 ops per chunk and
 * token where splitting u = w + 128 into nibbles took 8). Exact for every
 * activation the quantizer writes (scale amax / 127, so y != -128: the
 * negation of -128 would wrap) and every code; the float steps are one
 * convert, d_w * d_a and one FMA per block in block order, one chain per
 * token, so gemm == matvec bit for bit. */
#define TB_Q8RP8_ROWS 8
#define TB_Q8RP8_NT 4        /* tokens per gemm pass                        */
typedef struct {
    int8_t q[8][32];
    tb_fp16_t d[TB_Q8RP8_ROWS];
} q8_0_grp8;
static_assert(sizeof(q8_0_grp8) == TB_Q8RP8_ROWS * sizeof(block_q8_0), "q8_0_grp8 size");

static void repack_q8_0_8(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_q8_0_rows(W, ws, rows, n, out, TB_Q8RP8_ROWS, 0);
}

/* da[i] = block i's activation scale as f32, for the nb blocks of a: the
 * signed codes need no offset sum. */
TB_INLINE void prep_q8_0_rp8(const block_q8_0 *a, int64_t nb, float *da) {
    for (int64_t i = 0; i < nb; i++) da[i] = fp16_f32(a[i].d);
}

/* One group of 8 rows (nb blocks at G) times nt activations a[t] (da[t]
 * their scales): out[t] = the 8 rows' results for token t. */
TB_INLINE void dot_q8_0_grp8(int nt, const q8_0_grp8 *G, int64_t nb, const block_q8_0 *const *a,
                             const float *const *da, __m256 *out) {
    __m256 acc[TB_Q8RP8_NT];   /* all set: a runtime nt would trip -Wmaybe-uninitialized */
    TB_UNROLL
    for (int t = 0; t < TB_Q8RP8_NT; t++) acc[t] = _mm256_setzero_ps();
    const __m256i one = _mm256_set1_epi16(1);
    const uint32_t pf = nt == 1 ? tb_pf_bytes : 0;
    for (int64_t i = 0; i < nb; i++) {
        const q8_0_grp8 *x = &G[i];
        tb_pf_block(x, sizeof *x, pf);
        __m256i s[TB_Q8RP8_NT];   /* (8) i32 per token */
        TB_UNROLL
        for (int t = 0; t < TB_Q8RP8_NT; t++) s[t] = _mm256_setzero_si256();
        TB_UNROLL
        for (int c = 0; c < 8; c++) {
            const __m256i w = _mm256_loadu_si256((const __m256i *)x->q[c]), aw = _mm256_abs_epi8(w);
            TB_UNROLL
            for (int t = 0; t < nt; t++) {
                const __m256i y = _mm256_sign_epi8(_mm256_set1_epi32(ld32(a[t][i].qs + 4 * c)), w);
                s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, y), one));
            }
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x->d));   /* (8) */
        TB_UNROLL
        for (int t = 0; t < nt; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(dx, _mm256_set1_ps(da[t][i])), acc[t]);
    }
    TB_UNROLL
    for (int t = 0; t < nt; t++) out[t] = acc[t];
}

/* matvec_q8_0_rp8 / gemm_q8_0_rp8 (TB_RP8_KERNELS, x86_q4_0_rp.h). */
TB_RP8_KERNELS(q8_0, TB_TYPE_Q8_0, q8_0_grp8, block_q8_0, float, QK8_0, TB_Q4RP_MAXNB, TB_Q8RP8_NT, prep_q8_0_rp8,
               dot_q8_0_grp8)

#endif /* __AVX512VNNI__ / AVX2 */
#endif
