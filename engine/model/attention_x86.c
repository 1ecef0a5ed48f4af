/*
 * attention_x86.c — AVX-512 and AVX2 attention kernels (attention.h),
 * compiled with per-function target attributes and called only when the
 * dispatcher selected that tier (so the CPU has the features).
 *
 * scores  K tiles (hd, 32 slots): a tile is sum_d K[tile][d][:] *
 *         broadcast(q_h[d]) for up to 8 (AVX-512, 2 x 16 lanes) / 4 (AVX2,
 *         2 x 8 lanes, a half tile per pass) query heads at once: each
 *         tile line is loaded and converted once for the heads of the
 *         batch, no horizontal reduction. A tile only partly in the run is
 *         computed whole (the padding/other slots are ignored lanes) and
 *         only the run's lanes stored: one FMA chain per (h, j), d
 *         ascending, wherever the run starts or ends.
 *  wsum   V rows (n, hd): per block of WS_ROWS rows, for each batch of up
 *         to 4 heads and each chunk of up to 4 (AVX-512) / 2 (AVX2) vectors
 *         of head dims, acc[h][k] += broadcast(p[h][j]) * V[j][chunk k],
 *         j ascending, the accumulators carried in o between blocks: one
 *         FMA chain per (h, d) in position order. The first pass over a
 *         block prefetches the whole rows; the others hit L1.
 * softmax the e^x of tb_op_exp lane-wise (the same operations, so the same
 *         bits), max and sum in vector lanes then a fixed tree.
 */
#include "model/attention.h"
#include "model/model.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "model/x86_exp.h"     /* T512, T256, INLINE, exp16, exp8, mask16, mask8 */
/* Software prefetch. The K tiles and V rows of a kv head are linear
 * streams the hardware prefetchers follow: measured (/tmp microbench,
 * maple-preview shape, 24 layers at depth 512, KV evicted between layers,
 * 1 thread) prefetching 1-8 KB ahead in scores or wsum only costs issue
 * slots (1.41 -> 1.65-1.84 ms/token), so scores prefetch nothing (PF_SC 0)
 * and wsum's first pass over a block only requests the lines of each row
 * its later passes read (PF_WS rows ahead, 0: the current row). */
#ifndef PF_SC
#define PF_SC 0
#endif
#ifndef PF_WS
#define PF_WS 0
#endif
/* V rows per block of wsum (the block's later passes read it from L1). */
#ifndef WS_ROWS
#define WS_ROWS 32
#endif

/* ===================================================================== */
/* AVX-512                                                                */
/* ===================================================================== */

/* acc + v * (*s in all 16 lanes), the scalar as an embedded {1to16}
 * broadcast operand of the FMA. GCC 12 keeps _mm512_set1_ps(*s) as a
 * vbroadcastss of its own when the value feeds several FMAs, and those
 * broadcasts take FP issue slots the FMAs need. With the scalar folded,
 * per kv head at maple-preview's shape (depth 512, 4 heads, 1 thread,
 * /tmp microbenchmark, builds alternated): scores 5.78-5.89 -> 4.50-4.59
 * us and wsum 5.00-5.64 -> 4.75-4.80 us with K/V in cache, 13.6-14.6 ->
 * 11.6-12.3 us in all from memory. Same fma, same bits. */
T512 INLINE __m512 fmadd_b(__m512 acc, __m512 v, const float *s) {
    __asm__("vfmadd231ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(v), "m"(*s));
    return acc;
}

/* 16 elements at element offset off of a (f16 or f32) row. */
T512 INLINE __m512 ld16(const void *p, size_t off, const bool f16) {
    if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + off)));
    return _mm512_loadu_ps((const float *)p + off);
}

/* Scores of NH (<= 8) heads q (NH, hd) over slots [s0, s0 + n), tile by
 * tile. */
T512 INLINE void scores512_nh(const void *Kt, int32_t s0, const bool f16, const float *q,
                              const int NH, int hd, float *sc, int64_t ld, int32_t n) {
    enum { T = TB_KV_TILE };
    const size_t el = f16 ? 2 : 4;
    for (int32_t j = 0; j < n;) {
        const int32_t s = s0 + j, c0 = s % T, nj = TB_MIN(T - c0, n - j);
        const char *tile = (const char *)Kt + (size_t)(s / T) * (size_t)hd * T * el; /* (hd, T) */
        __m512 a0[8], a1[8];                                       /* (NH, 2 x 16 slots) */
        for (int h = 0; h < NH; h++) a0[h] = a1[h] = _mm512_setzero_ps();
        for (int d = 0; d < hd; d++) {
            const char *row = tile + (size_t)d * T * el;
#if PF_SC
            _mm_prefetch(row + PF_SC, _MM_HINT_T0);
            if (!f16) _mm_prefetch(row + PF_SC + 64, _MM_HINT_T0);
#endif
            const __m512 k0 = ld16(row, 0, f16), k1 = ld16(row, 16, f16);
            for (int h = 0; h < NH; h++) {
                a0[h] = fmadd_b(a0[h], k0, q + (size_t)h * hd + d);
                a1[h] = fmadd_b(a1[h], k1, q + (size_t)h * hd + d);
            }
        }
        for (int h = 0; h < NH; h++) {
            float *r = sc + (size_t)h * (size_t)ld + j;            /* (nj) */
            if (nj == T) {
                _mm512_storeu_ps(r, a0[h]);
                _mm512_storeu_ps(r + 16, a1[h]);
            } else {                                               /* lanes [c0, c0 + nj) */
                float b[T];
                _mm512_storeu_ps(b, a0[h]);
                _mm512_storeu_ps(b + 16, a1[h]);
                memcpy(r, b + c0, (size_t)nj * sizeof *r);
            }
        }
        j += nj;
    }
}

#define SCORES_CASE(NH)                                                                  \
    case NH:                                                                             \
        if (f16) scores512_nh(Kt, s0, true, qh, NH, hd, sch, ld, n);                     \
        else scores512_nh(Kt, s0, false, qh, NH, hd, sch, ld, n);                        \
        break;

T512 void tb_att_scores_avx512(const void *Kt, int32_t s0, bool f16, const float *q, int G, int hd,
                               float *sc, int64_t ld, int32_t n) {
    for (int h0 = 0; h0 < G; h0 += 8) {
        const float *qh = q + (size_t)h0 * hd;                     /* (nh, hd) */
        float *sch = sc + (size_t)h0 * (size_t)ld;                 /* (nh, ld) */
        switch (TB_MIN(8, G - h0)) {
            SCORES_CASE(1) SCORES_CASE(2) SCORES_CASE(3) SCORES_CASE(4)
            SCORES_CASE(5) SCORES_CASE(6) SCORES_CASE(7) default: SCORES_CASE(8)
        }
    }
}

/* Rows [j0, j1) of V (n, hd) into NH (<= 4) heads x ND (<= 4) vectors of
 * 16 dims: o[h][k] (loaded unless first) += sum_j p[h][j] * Vd[j][k], j
 * ascending. Vd: V from the chunk's first dim; o: (NH, hd) from it. pf:
 * prefetch the whole row PF_WS rows ahead of each row read. */
T512 INLINE void wsum512_blk(const char *Vd, size_t rb, const bool f16, const float *p, int64_t ld,
                             const int NH, const int ND, int hd, float *o, int32_t j0, int32_t j1,
                             bool first, bool pf) {
    __m512 acc[4][4];                                              /* (NH, ND x 16 dims) */
    for (int h = 0; h < NH; h++)
        for (int k = 0; k < ND; k++)
            acc[h][k] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(o + (size_t)h * hd + 16 * k);
    for (int32_t j = j0; j < j1; j++) {
        const char *row = Vd + (size_t)j * rb;
        if (pf)   /* the lines of this row (PF_WS rows ahead) the later passes read */
            for (size_t l = 0; l < rb; l += 64) _mm_prefetch(row + PF_WS * rb + l, _MM_HINT_T0);
        __m512 v[4];
        for (int k = 0; k < ND; k++) v[k] = ld16(row, (size_t)(16 * k), f16);
        for (int h = 0; h < NH; h++)
            for (int k = 0; k < ND; k++) acc[h][k] = fmadd_b(acc[h][k], v[k], p + (size_t)h * (size_t)ld + (size_t)j);
    }
    for (int h = 0; h < NH; h++)
        for (int k = 0; k < ND; k++) _mm512_storeu_ps(o + (size_t)h * hd + 16 * k, acc[h][k]);
}

#define WSUM_ND(NH, ND)                                                                  \
    case ND:                                                                             \
        if (f16) wsum512_blk(Vd, rb, true, ph, ld, NH, ND, hd, od, j0, j1, first, pf);   \
        else wsum512_blk(Vd, rb, false, ph, ld, NH, ND, hd, od, j0, j1, first, pf);      \
        break;
#define WSUM_NH(NH)                                                                      \
    case NH:                                                                             \
        switch (nd) { WSUM_ND(NH, 1) WSUM_ND(NH, 2) WSUM_ND(NH, 3) default: WSUM_ND(NH, 4) } \
        break;

T512 void tb_att_wsum_avx512(const void *V, bool f16, const float *p, int64_t ld, int G, int hd,
                             float *o, int32_t n, bool acc) {
    const size_t el = f16 ? 2 : 4, rb = (size_t)hd * el;           /* bytes per V row */
    if (n <= 0 && !acc) memset(o, 0, (size_t)G * (size_t)hd * sizeof *o);
    for (int32_t j0 = 0; j0 < n; j0 += WS_ROWS) {
        const int32_t j1 = TB_MIN(n, j0 + WS_ROWS);
        const bool first = !acc && j0 == 0;
        for (int h0 = 0; h0 < G; h0 += 4) {
            const int nh = TB_MIN(4, G - h0);
            const float *ph = p + (size_t)h0 * (size_t)ld;         /* (nh, ld) */
            for (int d0 = 0; d0 < hd; d0 += 64) {
                const int nd = TB_MIN(4, (hd - d0) / 16);
                const char *Vd = (const char *)V + (size_t)d0 * el;
                float *od = o + (size_t)h0 * hd + d0;              /* (nh, hd) from d0 */
                const bool pf = h0 == 0 && d0 == 0;
                switch (nh) { WSUM_NH(1) WSUM_NH(2) WSUM_NH(3) default: WSUM_NH(4) }
            }
        }
    }
}

T512 void tb_att_softmax_avx512(float *x, int n, float scale) {
    const int nf = n & ~15;
    const __mmask16 mt = mask16(n - nf);                           /* tail lanes */
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int i = 0; i < nf; i += 16) mx = _mm512_max_ps(_mm512_loadu_ps(x + i), mx);
    if (mt) mx = _mm512_mask_max_ps(mx, mt, _mm512_maskz_loadu_ps(mt, x + nf), mx);
    const __m512 sv = _mm512_set1_ps(scale);
    const __m512 ms = _mm512_set1_ps(_mm512_reduce_max_ps(mx) * scale);
    __m512 sum = _mm512_setzero_ps();
    for (int i = 0; i < nf; i += 16) {
        const __m512 e = exp16(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), sv), ms));
        _mm512_storeu_ps(x + i, e);
        sum = _mm512_add_ps(sum, e);
    }
    if (mt) {
        const __m512 e = exp16(_mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(mt, x + nf), sv), ms));
        _mm512_mask_storeu_ps(x + nf, mt, e);
        sum = _mm512_mask_add_ps(sum, mt, sum, e);
    }
    /* fixed tree: 16 -> 8 -> 4 -> 2 -> 1 */
    __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(sum),
                              _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sum), 1)));
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
    const __m512 inv = _mm512_set1_ps(1.0f / _mm_cvtss_f32(s4));
    for (int i = 0; i < nf; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inv));
    if (mt) _mm512_mask_storeu_ps(x + nf, mt, _mm512_mul_ps(_mm512_maskz_loadu_ps(mt, x + nf), inv));
}

/* vcvtps2ph rounds to nearest even, flushes nothing and quiets NaNs
 * keeping the top payload bits: tb_op_f16's bits. The tail is masked. */
T512 void tb_att_to_f16_avx512(const float *x, uint16_t *h, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(h + i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        const __mmask16 m = mask16(n - i);
        _mm256_mask_storeu_epi16(h + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
    }
}

/* ===================================================================== */
/* AVX2                                                                   */
/* ===================================================================== */

T256 INLINE __m256 ld8(const void *p, size_t off, const bool f16) {
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + off)));
    return _mm256_loadu_ps((const float *)p + off);
}

/* Scores of NH (<= 4) heads over slots [s0, s0 + n), tile by tile, each
 * tile in two halves of 16 slots (those holding run slots). */
T256 INLINE void scores256_nh(const void *Kt, int32_t s0, const bool f16, const float *q,
                              const int NH, int hd, float *sc, int64_t ld, int32_t n) {
    enum { T = TB_KV_TILE };
    const size_t el = f16 ? 2 : 4;
    for (int32_t j = 0; j < n;) {
        const int32_t s = s0 + j, c0 = s % T, nj = TB_MIN(T - c0, n - j);
        const char *tile = (const char *)Kt + (size_t)(s / T) * (size_t)hd * T * el; /* (hd, T) */
        for (int c = c0 / 16 * 16; c < c0 + nj; c += 16) {         /* half tile [c, c + 16) */
            __m256 a0[4], a1[4];                                   /* (NH, 2 x 8 slots) */
            for (int h = 0; h < NH; h++) a0[h] = a1[h] = _mm256_setzero_ps();
            for (int d = 0; d < hd; d++) {
                const char *row = tile + ((size_t)d * T + (size_t)c) * el;
#if PF_SC
                if (c == c0 / 16 * 16) _mm_prefetch(row + PF_SC, _MM_HINT_T0);
#endif
                const __m256 k0 = ld8(row, 0, f16), k1 = ld8(row, 8, f16);
                for (int h = 0; h < NH; h++) {
                    const __m256 qb = _mm256_broadcast_ss(q + (size_t)h * hd + d);
                    a0[h] = _mm256_fmadd_ps(k0, qb, a0[h]);
                    a1[h] = _mm256_fmadd_ps(k1, qb, a1[h]);
                }
            }
            const int l0 = TB_MAX(c, c0), l1 = TB_MIN(c + 16, c0 + nj);   /* run lanes */
            for (int h = 0; h < NH; h++) {
                float *r = sc + (size_t)h * (size_t)ld + j + (l0 - c0);
                if (l1 - l0 == 16) {
                    _mm256_storeu_ps(r, a0[h]);
                    _mm256_storeu_ps(r + 8, a1[h]);
                } else {
                    float b[16];
                    _mm256_storeu_ps(b, a0[h]);
                    _mm256_storeu_ps(b + 8, a1[h]);
                    memcpy(r, b + (l0 - c), (size_t)(l1 - l0) * sizeof *r);
                }
            }
        }
        j += nj;
    }
}

#define SCORES2_CASE(NH)                                                                 \
    case NH:                                                                             \
        if (f16) scores256_nh(Kt, s0, true, qh, NH, hd, sch, ld, n);                     \
        else scores256_nh(Kt, s0, false, qh, NH, hd, sch, ld, n);                        \
        break;

T256 void tb_att_scores_avx2(const void *Kt, int32_t s0, bool f16, const float *q, int G, int hd,
                             float *sc, int64_t ld, int32_t n) {
    for (int h0 = 0; h0 < G; h0 += 4) {
        const float *qh = q + (size_t)h0 * hd;                     /* (nh, hd) */
        float *sch = sc + (size_t)h0 * (size_t)ld;                 /* (nh, ld) */
        switch (TB_MIN(4, G - h0)) {
            SCORES2_CASE(1) SCORES2_CASE(2) SCORES2_CASE(3) default: SCORES2_CASE(4)
        }
    }
}

/* As wsum512_blk with NH (<= 4) heads x ND (<= 2) vectors of 8 dims. */
T256 INLINE void wsum256_blk(const char *Vd, size_t rb, const bool f16, const float *p, int64_t ld,
                             const int NH, const int ND, int hd, float *o, int32_t j0, int32_t j1,
                             bool first, bool pf) {
    __m256 acc[4][2];                                              /* (NH, ND x 8 dims) */
    for (int h = 0; h < NH; h++)
        for (int k = 0; k < ND; k++)
            acc[h][k] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(o + (size_t)h * hd + 8 * k);
    for (int32_t j = j0; j < j1; j++) {
        const char *row = Vd + (size_t)j * rb;
        if (pf)   /* the lines of this row (PF_WS rows ahead) the later passes read */
            for (size_t l = 0; l < rb; l += 64) _mm_prefetch(row + PF_WS * rb + l, _MM_HINT_T0);
        __m256 v[2];
        for (int k = 0; k < ND; k++) v[k] = ld8(row, (size_t)(8 * k), f16);
        for (int h = 0; h < NH; h++) {
            const __m256 pb = _mm256_broadcast_ss(p + (size_t)h * (size_t)ld + (size_t)j);
            for (int k = 0; k < ND; k++) acc[h][k] = _mm256_fmadd_ps(v[k], pb, acc[h][k]);
        }
    }
    for (int h = 0; h < NH; h++)
        for (int k = 0; k < ND; k++) _mm256_storeu_ps(o + (size_t)h * hd + 8 * k, acc[h][k]);
}

#define WSUM2_ND(NH, ND)                                                                 \
    case ND:                                                                             \
        if (f16) wsum256_blk(Vd, rb, true, ph, ld, NH, ND, hd, od, j0, j1, first, pf);   \
        else wsum256_blk(Vd, rb, false, ph, ld, NH, ND, hd, od, j0, j1, first, pf);      \
        break;
#define WSUM2_NH(NH)                                                                     \
    case NH:                                                                             \
        switch (nd) { WSUM2_ND(NH, 1) default: WSUM2_ND(NH, 2) }                         \
        break;

T256 void tb_att_wsum_avx2(const void *V, bool f16, const float *p, int64_t ld, int G, int hd,
                           float *o, int32_t n, bool acc) {
    const size_t el = f16 ? 2 : 4, rb = (size_t)hd * el;           /* bytes per V row */
    if (n <= 0 && !acc) memset(o, 0, (size_t)G * (size_t)hd * sizeof *o);
    for (int32_t j0 = 0; j0 < n; j0 += WS_ROWS) {
        const int32_t j1 = TB_MIN(n, j0 + WS_ROWS);
        const bool first = !acc && j0 == 0;
        for (int h0 = 0; h0 < G; h0 += 4) {
            const int nh = TB_MIN(4, G - h0);
            const float *ph = p + (size_t)h0 * (size_t)ld;         /* (nh, ld) */
            for (int d0 = 0; d0 < hd; d0 += 16) {
                const int nd = TB_MIN(2, (hd - d0) / 8);
                const char *Vd = (const char *)V + (size_t)d0 * el;
                float *od = o + (size_t)h0 * hd + d0;              /* (nh, hd) from d0 */
                const bool pf = h0 == 0 && d0 == 0;
                switch (nh) { WSUM2_NH(1) WSUM2_NH(2) WSUM2_NH(3) default: WSUM2_NH(4) }
            }
        }
    }
}

/* As tb_att_to_f16_avx512, 8 at a time; the tail through a buffer. */
T256 void tb_att_to_f16_avx2(const float *x, uint16_t *h, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        float b[8] = {0};
        uint16_t o[8];
        memcpy(b, x + i, (size_t)(n - i) * sizeof *b);
        _mm_storeu_si128((__m128i *)o, _mm256_cvtps_ph(_mm256_loadu_ps(b), _MM_FROUND_TO_NEAREST_INT));
        memcpy(h + i, o, (size_t)(n - i) * sizeof *o);
    }
}

T256 INLINE float hsum8(__m256 s) {
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s4, _mm_movehdup_ps(s4)));
}

T256 void tb_att_softmax_avx2(float *x, int n, float scale) {
    const int nf = n & ~7;
    const __m256i mt = mask8(n - nf);                              /* tail lanes */
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 mx = ninf;
    for (int i = 0; i < nf; i += 8) mx = _mm256_max_ps(_mm256_loadu_ps(x + i), mx);
    if (nf < n)
        mx = _mm256_max_ps(_mm256_blendv_ps(ninf, _mm256_maskload_ps(x + nf, mt), _mm256_castsi256_ps(mt)), mx);
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const __m256 sv = _mm256_set1_ps(scale);
    const __m256 ms = _mm256_set1_ps(_mm_cvtss_f32(m4) * scale);
    __m256 sum = _mm256_setzero_ps();
    for (int i = 0; i < nf; i += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv), ms));
        _mm256_storeu_ps(x + i, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (nf < n) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_mul_ps(_mm256_maskload_ps(x + nf, mt), sv), ms));
        e = _mm256_and_ps(e, _mm256_castsi256_ps(mt));
        _mm256_maskstore_ps(x + nf, mt, e);
        sum = _mm256_add_ps(sum, e);
    }
    const __m256 inv = _mm256_set1_ps(1.0f / hsum8(sum));
    for (int i = 0; i < nf; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    if (nf < n)
        _mm256_maskstore_ps(x + nf, mt, _mm256_mul_ps(_mm256_maskload_ps(x + nf, mt), inv));
}

#endif
