/*
 * x86_fx_rp.h — F32, F16 and BF16 weights x F32 activations on a load-time
 * repacked copy: TB_FXRP_ROWS rows interleaved per 16-element step (AVX-512).
 *
 * Why: the file-layout kernel (x86_float.h) reads one row at a time, so a
 * 5632-wide F32 activation (22.5 KB, llama's ffn_down) is re-read for every
 * row and competes with the weight stream for L1 (measured 18 GB/s per core
 * on 2048x5632 F16 vs 31-34 GB/s on 2048-wide rows); reading several rows
 * side by side in the file layout shares the activation loads but runs
 * several streams 4 KiB apart, which measured slower still (15-21 GB/s).
 * Interleaving the rows makes the group one contiguous stream and loads each
 * activation vector once per TB_FXRP_ROWS rows.
 *
 * Layout of one group of R = TB_FXRP_ROWS rows, n columns, element size es
 * (4 for F32, 2 for F16/BF16): R * n elements, exactly the file bytes of the
 * R rows (the copy is file-sized, rows padded to a multiple of R with zeros):
 *   steps s = 0 .. n/16 - 1     R x 16 elements: row k's elements
 *                               [16 s, 16 s + 16) at element (s R + k) 16
 *   tail (rem = n % 16 > 0)     R x rem elements: row k's last rem elements
 *                               at element (n/16) 16 R + k rem
 * Groups follow each other (group g at element g R n).
 *
 * F32 is not registered: on the interleaved layout its matvec measured 11.7
 * GB/s per core against 35 GB/s for the file layout (ternbench kernels
 * --format f32 -t 1, 2026-11-29; cause not found), and its only large use,
 * MoE routers (256 x 2048), has short rows. (kind 0 paths remain for
 * measuring it again; nothing registers or tests them.)
 *
 * Determinism: each row's arithmetic is exactly dot_fx512's for one token
 * (steps alternate two accumulators by parity, the tail is a masked step in
 * the accumulator whose turn it is, one reduce at the end), so the repacked
 * matvec, the repacked gemm and the file-layout kernels all agree bit for
 * bit per (row, token). (BF16 on a CPU with AVX512_BF16 takes
 * x86_bf16_dp.h's kernels on this copy instead, which round differently.)
 */
#ifndef TB_X86_FX_RP_H
#define TB_X86_FX_RP_H

#include "kernels/x86_float.h"

#if defined(__AVX512F__)

#define TB_FXRP_ROWS 8

/* Repack `rows` rows (file layout, stride ws, n columns of es bytes) into
 * groups of TB_FXRP_ROWS; missing rows of the last group are zeros. */
TB_INLINE void repack_fx_rows(const void *W, size_t ws, int64_t rows, int64_t n, void *out, size_t es) {
    const int R = TB_FXRP_ROWS;
    const int64_t ns = n / 16, rem = n % 16, ng = (rows + R - 1) / R;
    for (int64_t g = 0; g < ng; g++) {
        uint8_t *og = (uint8_t *)out + (size_t)(g * R * n) * es;   // (R, n) elements, interleaved
        const int kn = (int)TB_MIN(R, rows - g * R);
        if (kn < R) memset(og, 0, (size_t)(R * n) * es);
        for (int k = 0; k < kn; k++) {
            const uint8_t *x = (const uint8_t *)W + (size_t)(g * R + k) * ws;   // (n) elements
            for (int64_t s = 0; s < ns; s++)
                memcpy(og + (size_t)((s * R + k) * 16) * es, x + (size_t)(16 * s) * es, 16 * es);
            if (rem) memcpy(og + (size_t)(ns * 16 * R + k * rem) * es, x + (size_t)(16 * ns) * es, (size_t)rem * es);
        }
    }
}

static void repack_f16(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_fx_rows(W, ws, rows, n, out, 2);
}
static void repack_bf16(const void *W, size_t ws, int64_t rows, int64_t n, void *out) {
    repack_fx_rows(W, ws, rows, n, out, 2);
}

/* Element e of a group (base G, element size from kind) as a byte pointer. */
TB_INLINE const void *fxrp_at(const void *G, int64_t e, int kind) {
    return (const uint8_t *)G + (size_t)e * (kind ? 2 : 4);
}

/* ---------------------------------------------------------------------- */
/* matvec: one group of R rows per pass, the activation loaded once        */
/* ---------------------------------------------------------------------- */

/* s[k] = row k of the group at G . x, k < R; each step pair's lines are
 * requested pf bytes ahead (tb_pf_block; 0 for none). */
TB_INLINE void dot_fxrp_grp(const void *G, int64_t n, const float *x, float *s, int kind, uint32_t pf) {
    const int R = TB_FXRP_ROWS;
    const int64_t ns = n / 16, rem = n % 16;
    __m512 acc0[TB_FXRP_ROWS], acc1[TB_FXRP_ROWS];
    TB_UNROLL
    for (int k = 0; k < R; k++) acc0[k] = acc1[k] = _mm512_setzero_ps();
    int64_t st = 0;
    for (; st + 2 <= ns; st += 2) {
        const __m512 x0 = _mm512_loadu_ps(x + 16 * st), x1 = _mm512_loadu_ps(x + 16 * st + 16);
        const void *g0 = fxrp_at(G, st * 16 * R, kind), *g1 = fxrp_at(G, (st + 1) * 16 * R, kind);
        tb_pf_block(g0, (size_t)2 * 16 * TB_FXRP_ROWS * (kind ? 2 : 4), pf);   /* g0 and g1 (kind: a constant here) */
        TB_UNROLL
        for (int k = 0; k < R; k++) {
            acc0[k] = _mm512_fmadd_ps(load16_w(g0, 16 * k, kind, 0xFFFF), x0, acc0[k]);
            acc1[k] = _mm512_fmadd_ps(load16_w(g1, 16 * k, kind, 0xFFFF), x1, acc1[k]);
        }
    }
    bool odd = false;   /* the next step goes to acc1 */
    if (st < ns) {
        const __m512 x0 = _mm512_loadu_ps(x + 16 * st);
        const void *g0 = fxrp_at(G, st * 16 * R, kind);
        TB_UNROLL
        for (int k = 0; k < R; k++) acc0[k] = _mm512_fmadd_ps(load16_w(g0, 16 * k, kind, 0xFFFF), x0, acc0[k]);
        odd = true;
    }
    if (rem) {
        const __mmask16 m = (__mmask16)((1u << rem) - 1);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, x + 16 * ns);
        const void *gt = fxrp_at(G, ns * 16 * R, kind);
        TB_UNROLL
        for (int k = 0; k < R; k++) {
            const __m512 wv = load16_w(gt, k * rem, kind, m);
            if (odd) acc1[k] = _mm512_fmadd_ps(wv, x0, acc1[k]);
            else acc0[k] = _mm512_fmadd_ps(wv, x0, acc0[k]);
        }
    }
    TB_UNROLL
    for (int k = 0; k < R; k++) s[k] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[k], acc1[k]));
}

/* y[r] for r in [r0, r1) from the repacked copy of W; false when the
 * loader registered none (the caller then reads the file layout). */
TB_INLINE bool matvec_fxrp(tb_type_t t, int kind, const void *W, size_t ws, const void *a, float *y,
                           int64_t r0, int64_t r1, int64_t n) {
    if (r0 >= r1) return true;
    const uint8_t *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, t);
    if (!G) return false;
    const int R = TB_FXRP_ROWS;
    const size_t gb = (size_t)(R * n) * (kind ? 2 : 4);   /* bytes per group */
    for (int64_t g = r0 / R; g * R < r1; g++) {
        float o[TB_FXRP_ROWS];
        dot_fxrp_grp(G + (size_t)g * gb, n, a, o, kind, tb_pf_bytes);
        const int64_t lo = TB_MAX(r0, g * R), hi = TB_MIN(r1, g * R + R);
        for (int64_t r = lo; r < hi; r++) y[r] = o[r - g * R];
    }
    return true;
}

/* ---------------------------------------------------------------------- */
/* gemm: two rows of a group x up to TB_NT tokens per pass                  */
/* ---------------------------------------------------------------------- */

/* s[q * TB_NT + t] = row k + q of the group at G . a[t], q < nr <= 2,
 * t < nt: dot_fx512 per (row, token), reading the rows' steps R x 16
 * elements apart. Rows k and k + 1 share each step's cache lines. */
TB_INLINE void dot_fxrp_rows(int nr, int nt, const void *G, int k, int64_t n, float *s,
                             const void *const *a, int kind) {
    const int R = TB_FXRP_ROWS;
    const int64_t ns = n / 16, rem = n % 16;
    __m512 acc0[2][TB_NT], acc1[2][TB_NT];
    TB_UNROLL
    for (int q = 0; q < nr; q++)
        for (int t = 0; t < nt; t++) acc0[q][t] = acc1[q][t] = _mm512_setzero_ps();
    int64_t st = 0;
    for (; st + 2 <= ns; st += 2) {
        __m512 w0[2], w1[2];
        TB_UNROLL
        for (int q = 0; q < nr; q++) {
            w0[q] = load16_w(G, (st * R + k + q) * 16, kind, 0xFFFF);
            w1[q] = load16_w(G, ((st + 1) * R + k + q) * 16, kind, 0xFFFF);
        }
        TB_UNROLL
        for (int t = 0; t < nt; t++) {
            const float *x = (const float *)a[t] + 16 * st;
            const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
            TB_UNROLL
            for (int q = 0; q < nr; q++) {
                acc0[q][t] = _mm512_fmadd_ps(w0[q], x0, acc0[q][t]);
                acc1[q][t] = _mm512_fmadd_ps(w1[q], x1, acc1[q][t]);
            }
        }
    }
    bool odd = false;
    if (st < ns) {
        TB_UNROLL
        for (int q = 0; q < nr; q++) {
            const __m512 w0 = load16_w(G, (st * R + k + q) * 16, kind, 0xFFFF);
            TB_UNROLL
            for (int t = 0; t < nt; t++)
                acc0[q][t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps((const float *)a[t] + 16 * st), acc0[q][t]);
        }
        odd = true;
    }
    if (rem) {
        const __mmask16 m = (__mmask16)((1u << rem) - 1);
        TB_UNROLL
        for (int q = 0; q < nr; q++) {
            const __m512 wv = load16_w(G, ns * 16 * R + (k + q) * rem, kind, m);
            TB_UNROLL
            for (int t = 0; t < nt; t++) {
                const __m512 p = _mm512_maskz_loadu_ps(m, (const float *)a[t] + 16 * ns);
                if (odd) acc1[q][t] = _mm512_fmadd_ps(wv, p, acc1[q][t]);
                else acc0[q][t] = _mm512_fmadd_ps(wv, p, acc0[q][t]);
            }
        }
    }
    for (int q = 0; q < nr; q++)
        for (int t = 0; t < nt; t++) s[q * TB_NT + t] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[q][t], acc1[q][t]));
}

TB_INLINE bool gemm_fxrp(tb_type_t ty, int kind, const void *W, size_t ws, const void *A, size_t as,
                         int64_t nt, float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {
    if (r0 >= r1) return true;
    const uint8_t *G = tb_repack_lookup(W, ws, TB_ISA_AVX512, ty);
    if (!G) return false;
    const int R = TB_FXRP_ROWS;
    const size_t gb = (size_t)(R * n) * (kind ? 2 : 4);
    for (int64_t r = r0; r < r1;) {
        const uint8_t *Gg = G + (size_t)(r / R) * gb;
        const int k = (int)(r % R);
        const int nr = k + 1 < R && r + 1 < r1 ? 2 : 1;   /* a pair within one group */
        for (int64_t t = 0; t < nt; t += TB_NT) {
            const int ntk = (int)TB_MIN(TB_NT, nt - t);
            const void *aa[TB_NT];
            float o[2 * TB_NT] = {0};   /* all set by dot_fxrp_rows; keeps -Wmaybe-uninitialized quiet */
            for (int q = 0; q < ntk; q++) aa[q] = (const uint8_t *)A + (size_t)(t + q) * as;
            if (nr == 2 && ntk == TB_NT) dot_fxrp_rows(2, TB_NT, Gg, k, n, o, aa, kind);
            else if (ntk == TB_NT) dot_fxrp_rows(1, TB_NT, Gg, k, n, o, aa, kind);
            else dot_fxrp_rows(nr, ntk, Gg, k, n, o, aa, kind);
            for (int q = 0; q < nr; q++)
                for (int u = 0; u < ntk; u++) Y[(t + u) * ldy + r + q] = o[q * TB_NT + u];
        }
        r += nr;
    }
    return true;
}

/* matvec_<name>_rp / gemm_<name>_rp for TB_RP_WITH_FALLBACK. */
#define TB_FXRP_KERNELS(name, T, kind)                                                        \
    static bool matvec_##name##_rp(const void *W, size_t ws, const void *a, float *y, int64_t r0, \
                                   int64_t r1, int64_t n) {                                   \
        return matvec_fxrp(T, kind, W, ws, a, y, r0, r1, n);                                  \
    }                                                                                         \
    static bool gemm_##name##_rp(const void *W, size_t ws, const void *A, size_t as, int64_t nt, \
                                 float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {  \
        return gemm_fxrp(T, kind, W, ws, A, as, nt, Y, ldy, r0, r1, n);                       \
    }

#endif
#endif
