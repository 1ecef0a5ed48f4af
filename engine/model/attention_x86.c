/*
 * attention_x86.c — AVX-512 and AVX2 attention kernels (attention.h),
 * compiled with per-function target attributes and called only when the
 * dispatcher selected that tier (so the CPU has the features).
 *
 * scores  Kt (hd, ks): a block of 32 (AVX-512) / 16 (AVX2) positions is
 *         sum_d Kt[d][block] * broadcast(q_h[d]) for up to 8 / 4 query
 *         heads at once: each Kt chunk is loaded and converted once for
 *         the heads of the batch, 2 x heads accumulators, no horizontal
 *         reduction. One FMA chain per (h, j), d ascending: the same value
 *         whether j falls in a full block, a masked block or a scalar tail.
 *  wsum   Vt (hd, vs): a step takes R = L / G rows of Vt (L lanes), each
 *         L-position chunk loaded once for all G queries, accumulator
 *         h * R + r = (query h, row r), one transpose-add tree per L
 *         outputs at the end of the run. The order depends on n only.
 * softmax the e^x of tb_op_exp lane-wise (the same operations, so the same
 *         bits), max and sum in vector lanes then a fixed tree.
 */
#include "model/attention.h"
#include "model/model.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define T256 __attribute__((target("avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline))
/* scores: software prefetch distance in positions (two 32-position blocks
 * ahead in each Kt row: 128 rows are 128 streams, more than the hardware
 * prefetchers follow). Measured on Zen 4: 4.3 -> 2.8 ms/token CPU for
 * maple-preview's 24 layers at depth 512 (32: no gain, 128: 3.1). */
#ifndef PF_SC
#define PF_SC 64
#endif

/* ===================================================================== */
/* AVX-512                                                                */
/* ===================================================================== */

/* 16 elements at element offset off of a (f16 or f32) row; masked: lanes
 * outside m are 0 and their memory is not touched. */
T512 INLINE __m512 ld16(const void *p, size_t off, const bool f16) {
    if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + off)));
    return _mm512_loadu_ps((const float *)p + off);
}
T512 INLINE __m512 ld16m(const void *p, size_t off, const bool f16, __mmask16 m) {
    if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + off));
    return _mm512_maskz_loadu_ps(m, (const float *)p + off);
}

/* Scores of NH (<= 8) heads q (NH, hd), all n positions. */
T512 INLINE void scores512_nh(const void *Kt, size_t ks, const bool f16, const float *q,
                              const int NH, int hd, float *sc, int64_t ld, int32_t n) {
    const size_t el = f16 ? 2 : 4;
    int32_t j = 0;
    for (; j + 32 <= n; j += 32) {
        __m512 a0[8], a1[8];                                       /* (NH, 2 x 16 positions) */
        for (int h = 0; h < NH; h++) a0[h] = a1[h] = _mm512_setzero_ps();
        for (int d = 0; d < hd; d++) {
            const size_t off = (size_t)d * ks + (size_t)j;
            /* this row two blocks ahead (DRAM latency) */
            _mm_prefetch((const char *)Kt + (off + PF_SC) * el, _MM_HINT_T0);
            if (!f16) _mm_prefetch((const char *)Kt + (off + PF_SC + 16) * el, _MM_HINT_T0);
            const __m512 k0 = ld16(Kt, off, f16), k1 = ld16(Kt, off + 16, f16);
            for (int h = 0; h < NH; h++) {
                const __m512 qb = _mm512_set1_ps(q[(size_t)h * hd + d]);
                a0[h] = _mm512_fmadd_ps(k0, qb, a0[h]);
                a1[h] = _mm512_fmadd_ps(k1, qb, a1[h]);
            }
        }
        for (int h = 0; h < NH; h++) {
            _mm512_storeu_ps(sc + (size_t)h * (size_t)ld + j, a0[h]);
            _mm512_storeu_ps(sc + (size_t)h * (size_t)ld + j + 16, a1[h]);
        }
    }
    for (; j < n; j += 16) {
        const __mmask16 m = (__mmask16)(n - j >= 16 ? 0xFFFF : (1u << (n - j)) - 1);
        __m512 a[8];                                               /* (NH, 16 positions) */
        for (int h = 0; h < NH; h++) a[h] = _mm512_setzero_ps();
        for (int d = 0; d < hd; d++) {
            const __m512 k = ld16m(Kt, (size_t)d * ks + (size_t)j, f16, m);
            for (int h = 0; h < NH; h++)
                a[h] = _mm512_fmadd_ps(k, _mm512_set1_ps(q[(size_t)h * hd + d]), a[h]);
        }
        for (int h = 0; h < NH; h++) _mm512_mask_storeu_ps(sc + (size_t)h * (size_t)ld + j, m, a[h]);
    }
}

#define SCORES_CASE(NH)                                                                  \
    case NH:                                                                             \
        if (f16) scores512_nh(Kt, ks, true, qh, NH, hd, sch, ld, n);                     \
        else scores512_nh(Kt, ks, false, qh, NH, hd, sch, ld, n);                        \
        break;

T512 void tb_att_scores_avx512(const void *Kt, size_t ks, bool f16, const float *q, int G, int hd,
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

/* Lane i of the result = horizontal sum of v[i], i = 0..15 (a fixed tree). */
T512 INLINE __m512 reduce16(__m512 v[16]) {
    __m512 w[8], x[4], y[2];
    for (int i = 0; i < 8; i++)      /* per 128-bit lane: rows 2i, 2i+1 at 0,2 / 1,3 */
        w[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                             _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 4; i++) {    /* per 128-bit lane: rows 4i..4i+3 */
        __m512d a = _mm512_castps_pd(w[2 * i]), b = _mm512_castps_pd(w[2 * i + 1]);
        x[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    for (int i = 0; i < 2; i++)      /* lane pairs summed: rows 8i..8i+7 */
        y[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(y[0], y[1], 0x88),
                         _mm512_shuffle_f32x4(y[0], y[1], 0xDD));
}

/* wsum for G dividing 16, hd % 16 == 0 (R = 16 / G rows per step). */
T512 INLINE void wsum512_g(const void *Vt, size_t vs, const bool f16, const float *p, int64_t ld,
                           const int G, int hd, float *o, int32_t n) {
    const int R = 16 / G;
    for (int d0 = 0; d0 < hd; d0 += R) {
        __m512 acc[16];                                            /* (G * R, 16 lanes) */
        for (int a = 0; a < 16; a++) acc[a] = _mm512_setzero_ps();
        for (int32_t j = 0; j < n; j += 16) {
            const __mmask16 m = (__mmask16)(n - j >= 16 ? 0xFFFF : (1u << (n - j)) - 1);
            __m512 vv[16];                                         /* (R, 16 lanes) */
            for (int r = 0; r < R; r++) vv[r] = ld16m(Vt, (size_t)(d0 + r) * vs + (size_t)j, f16, m);
#ifdef PF_WG
            if (d0 + PF_WG * R < hd)
                for (int r = 0; r < R; r++)
                    _mm_prefetch((const char *)Vt + ((size_t)(d0 + PF_WG * R + r) * vs + (size_t)j) * (f16 ? 2 : 4), _MM_HINT_T0);
#endif
            for (int h = 0; h < G; h++) {
                const __m512 pv = _mm512_maskz_loadu_ps(m, p + (size_t)h * (size_t)ld + j);
                for (int r = 0; r < R; r++) acc[h * R + r] = _mm512_fmadd_ps(vv[r], pv, acc[h * R + r]);
            }
        }
        const __m512 ov = reduce16(acc);                           /* (G, R) */
        for (int h = 0; h < G; h++)
            _mm512_mask_storeu_ps(o + (size_t)h * hd + d0 - h * R, (__mmask16)(((1u << R) - 1) << (h * R)), ov);
    }
}

#define WSUM_CASE(GG)                                                                    \
    case GG:                                                                             \
        if (f16) wsum512_g(Vt, vs, true, p, ld, GG, hd, o, n);                           \
        else wsum512_g(Vt, vs, false, p, ld, GG, hd, o, n);                              \
        break;

T512 void tb_att_wsum_avx512(const void *Vt, size_t vs, bool f16, const float *p, int64_t ld,
                             int G, int hd, float *o, int32_t n) {
    switch (G) {
        WSUM_CASE(1) WSUM_CASE(2) WSUM_CASE(4) WSUM_CASE(8) default: WSUM_CASE(16)
    }
}

/* tb_op_exp on 16 lanes, the same operations in the same order. */
T512 INLINE __m512 exp16(__m512 x) {
    const __m512 hi = _mm512_set1_ps(TB_EXP_HI), lo = _mm512_set1_ps(TB_EXP_LO);
    const __m512 big = _mm512_set1_ps(TB_EXP_BIG);
    __m512 xc = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), hi);
    xc = _mm512_mask_mov_ps(xc, _mm512_cmp_ps_mask(xc, lo, _CMP_LT_OQ), lo);
    const __m512 kf = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(TB_EXP_LOG2E)), big), big);
    __m512 r = _mm512_sub_ps(xc, _mm512_mul_ps(kf, _mm512_set1_ps(TB_EXP_LN2_HI)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(kf, _mm512_set1_ps(TB_EXP_LN2_LO)));
    __m512 pp = _mm512_set1_ps(1.0f / 5040.0f);
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f / 720.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f / 120.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f / 24.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f / 6.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(0.5f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f));
    pp = _mm512_add_ps(_mm512_mul_ps(pp, r), _mm512_set1_ps(1.0f));
    const __m512i e = _mm512_add_epi32(_mm512_castps_si512(pp),
                                       _mm512_slli_epi32(_mm512_cvtps_epi32(kf), 23));
    __m512 v = _mm512_mask_mov_ps(_mm512_castsi512_ps(e), _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ),
                                  _mm512_set1_ps(INFINITY));
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), _mm512_setzero_ps());
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

T512 void tb_att_softmax_avx512(float *x, int n, float scale) {
    const int nf = n & ~15;
    const __mmask16 mt = (__mmask16)((1u << (n - nf)) - 1);        /* tail lanes */
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

/* ===================================================================== */
/* AVX2                                                                   */
/* ===================================================================== */

T256 INLINE __m256 ld8(const void *p, size_t off, const bool f16) {
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + off)));
    return _mm256_loadu_ps((const float *)p + off);
}

/* Lanes [0, k) of 8 set (k in 0..8). */
T256 INLINE __m256i mask8(int k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* 8 elements at off, lanes >= k are 0 and not read (k in 1..8). */
T256 INLINE __m256 ld8m(const void *p, size_t off, const bool f16, int k) {
    if (f16) {
        uint16_t b[8] = {0};
        for (int i = 0; i < k; i++) b[i] = ((const uint16_t *)p)[off + (size_t)i];
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b));
    }
    return _mm256_maskload_ps((const float *)p + off, mask8(k));
}

T256 INLINE float ld1(const void *p, size_t off, const bool f16) {
    if (f16) return _cvtsh_ss(((const uint16_t *)p)[off]);
    return ((const float *)p)[off];
}

/* Scores of NH (<= 4) heads. Full blocks of 16 then of 8 positions; the
 * last n % 8 positions one by one with the same fused multiply-adds. */
T256 INLINE void scores256_nh(const void *Kt, size_t ks, const bool f16, const float *q,
                              const int NH, int hd, float *sc, int64_t ld, int32_t n) {
    const size_t el = f16 ? 2 : 4;
    int32_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m256 a0[4], a1[4];                                       /* (NH, 2 x 8 positions) */
        for (int h = 0; h < NH; h++) a0[h] = a1[h] = _mm256_setzero_ps();
        for (int d = 0; d < hd; d++) {
            const size_t off = (size_t)d * ks + (size_t)j;
            _mm_prefetch((const char *)Kt + (off + 32) * el, _MM_HINT_T0);
            const __m256 k0 = ld8(Kt, off, f16), k1 = ld8(Kt, off + 8, f16);
            for (int h = 0; h < NH; h++) {
                const __m256 qb = _mm256_broadcast_ss(q + (size_t)h * hd + d);
                a0[h] = _mm256_fmadd_ps(k0, qb, a0[h]);
                a1[h] = _mm256_fmadd_ps(k1, qb, a1[h]);
            }
        }
        for (int h = 0; h < NH; h++) {
            _mm256_storeu_ps(sc + (size_t)h * (size_t)ld + j, a0[h]);
            _mm256_storeu_ps(sc + (size_t)h * (size_t)ld + j + 8, a1[h]);
        }
    }
    for (; j + 8 <= n; j += 8) {
        __m256 a[4];
        for (int h = 0; h < NH; h++) a[h] = _mm256_setzero_ps();
        for (int d = 0; d < hd; d++) {
            const __m256 k = ld8(Kt, (size_t)d * ks + (size_t)j, f16);
            for (int h = 0; h < NH; h++)
                a[h] = _mm256_fmadd_ps(k, _mm256_broadcast_ss(q + (size_t)h * hd + d), a[h]);
        }
        for (int h = 0; h < NH; h++) _mm256_storeu_ps(sc + (size_t)h * (size_t)ld + j, a[h]);
    }
    for (; j < n; j++)
        for (int h = 0; h < NH; h++) {
            float a = 0.0f;
            for (int d = 0; d < hd; d++) a = __builtin_fmaf(ld1(Kt, (size_t)d * ks + (size_t)j, f16), q[(size_t)h * hd + d], a);
            sc[(size_t)h * (size_t)ld + j] = a;
        }
}

#define SCORES2_CASE(NH)                                                                 \
    case NH:                                                                             \
        if (f16) scores256_nh(Kt, ks, true, qh, NH, hd, sch, ld, n);                     \
        else scores256_nh(Kt, ks, false, qh, NH, hd, sch, ld, n);                        \
        break;

T256 void tb_att_scores_avx2(const void *Kt, size_t ks, bool f16, const float *q, int G, int hd,
                             float *sc, int64_t ld, int32_t n) {
    for (int h0 = 0; h0 < G; h0 += 4) {
        const float *qh = q + (size_t)h0 * hd;                     /* (nh, hd) */
        float *sch = sc + (size_t)h0 * (size_t)ld;                 /* (nh, ld) */
        switch (TB_MIN(4, G - h0)) {
            SCORES2_CASE(1) SCORES2_CASE(2) SCORES2_CASE(3) default: SCORES2_CASE(4)
        }
    }
}

/* Lane i of the result = horizontal sum of v[i], i = 0..7 (a fixed tree). */
T256 INLINE __m256 reduce8(__m256 v[8]) {
    __m256 w[4], x[2];
    for (int i = 0; i < 4; i++)      /* per 128-bit lane: rows 2i, 2i+1 at 0,2 / 1,3 */
        w[i] = _mm256_add_ps(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                             _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 2; i++) {    /* per 128-bit lane: rows 4i..4i+3 */
        __m256d a = _mm256_castps_pd(w[2 * i]), b = _mm256_castps_pd(w[2 * i + 1]);
        x[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)),
                             _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
    }
    return _mm256_add_ps(_mm256_permute2f128_ps(x[0], x[1], 0x20),
                         _mm256_permute2f128_ps(x[0], x[1], 0x31));
}

/* wsum for G dividing 8, hd % 8 == 0 (R = 8 / G rows per step). */
T256 INLINE void wsum256_g(const void *Vt, size_t vs, const bool f16, const float *p, int64_t ld,
                           const int G, int hd, float *o, int32_t n) {
    const int R = 8 / G;
    const int32_t nf = n & ~7;
    for (int d0 = 0; d0 < hd; d0 += R) {
        __m256 acc[8];                                             /* (G * R, 8 lanes) */
        for (int a = 0; a < 8; a++) acc[a] = _mm256_setzero_ps();
        for (int32_t j = 0; j < nf; j += 8) {
            __m256 vv[8];                                          /* (R, 8 lanes) */
            for (int r = 0; r < R; r++) vv[r] = ld8(Vt, (size_t)(d0 + r) * vs + (size_t)j, f16);
            for (int h = 0; h < G; h++) {
                const __m256 pv = _mm256_loadu_ps(p + (size_t)h * (size_t)ld + j);
                for (int r = 0; r < R; r++) acc[h * R + r] = _mm256_fmadd_ps(vv[r], pv, acc[h * R + r]);
            }
        }
        if (nf < n) {
            __m256 vv[8];
            for (int r = 0; r < R; r++) vv[r] = ld8m(Vt, (size_t)(d0 + r) * vs + (size_t)nf, f16, n - nf);
            for (int h = 0; h < G; h++) {
                const __m256 pv = _mm256_maskload_ps(p + (size_t)h * (size_t)ld + nf, mask8(n - nf));
                for (int r = 0; r < R; r++) acc[h * R + r] = _mm256_fmadd_ps(vv[r], pv, acc[h * R + r]);
            }
        }
        float ov[8];                                               /* (G, R) */
        _mm256_storeu_ps(ov, reduce8(acc));
        for (int h = 0; h < G; h++)
            for (int r = 0; r < R; r++) o[(size_t)h * hd + d0 + r] = ov[h * R + r];
    }
}

#define WSUM2_CASE(GG)                                                                   \
    case GG:                                                                             \
        if (f16) wsum256_g(Vt, vs, true, p, ld, GG, hd, o, n);                           \
        else wsum256_g(Vt, vs, false, p, ld, GG, hd, o, n);                              \
        break;

T256 void tb_att_wsum_avx2(const void *Vt, size_t vs, bool f16, const float *p, int64_t ld, int G,
                           int hd, float *o, int32_t n) {
    switch (G) {
        WSUM2_CASE(1) WSUM2_CASE(2) WSUM2_CASE(4) default: WSUM2_CASE(8)
    }
}

/* tb_op_exp on 8 lanes, the same operations in the same order. */
T256 INLINE __m256 exp8(__m256 x) {
    const __m256 hi = _mm256_set1_ps(TB_EXP_HI), lo = _mm256_set1_ps(TB_EXP_LO);
    const __m256 big = _mm256_set1_ps(TB_EXP_BIG);
    __m256 xc = _mm256_blendv_ps(x, hi, _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    xc = _mm256_blendv_ps(xc, lo, _mm256_cmp_ps(xc, lo, _CMP_LT_OQ));
    const __m256 kf = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(xc, _mm256_set1_ps(TB_EXP_LOG2E)), big), big);
    __m256 r = _mm256_sub_ps(xc, _mm256_mul_ps(kf, _mm256_set1_ps(TB_EXP_LN2_HI)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(kf, _mm256_set1_ps(TB_EXP_LN2_LO)));
    __m256 pp = _mm256_set1_ps(1.0f / 5040.0f);
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f / 720.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f / 120.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f / 24.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f / 6.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(0.5f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f));
    pp = _mm256_add_ps(_mm256_mul_ps(pp, r), _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_add_epi32(_mm256_castps_si256(pp),
                                       _mm256_slli_epi32(_mm256_cvtps_epi32(kf), 23));
    __m256 v = _mm256_blendv_ps(_mm256_castsi256_ps(e), _mm256_set1_ps(INFINITY),
                                _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    v = _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(v, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
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
