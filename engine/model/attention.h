/*
 * attention.h — the attention kernels of one kv-head group over one run of
 * contiguous KV cache slots (attention.c drives them; not public).
 *
 * Cache layout (session.h): per layer and kv head, K and V are both stored
 * transposed, Kt and Vt of shape (head_dim, cap) in the cache type (f16 or
 * f32); element (d, slot) at d * cap + slot. A run of n slots starting at
 * `slot` is passed as the pointer to (0, slot) and the row stride cap.
 *
 * Contracts every tier keeps (tests/model/test_attention.c):
 *   scores   each sc[h, j] is one multiply-add chain over d ascending, so
 *            it depends on column j of Kt and on q[h] alone: not on n, on
 *            where the run starts, or on which other heads are computed;
 *   wsum     each o[h, d] depends on p[h, 0..n) and row d of Vt[0..n) and
 *            on n (the summation order follows n only);
 *   softmax  deterministic per row.
 * So a token's attention is bit-identical alone (decode) or inside a
 * prefill chunk, on any thread count.
 */
#ifndef TB_ATTENTION_H
#define TB_ATTENTION_H

#include "internal.h"

/* sc[h * ld + j] = sum_{d < hd} Kt[d * ks + j] * q[h * hd + d], for j in
 * [0, n), h in [0, G). Kt: (hd, ks) f16 when f16 else f32, only columns
 * [0, n) read; q: (G, hd) f32; sc: (G, ld) f32, only columns [0, n)
 * written. */
typedef void (*tb_att_scores_fn)(const void *Kt, size_t ks, bool f16, const float *q, int G,
                                 int hd, float *sc, int64_t ld, int32_t n);

/* o[h * hd + d] = sum_{j < n} p[h * ld + j] * Vt[d * vs + j], for d in
 * [0, hd), h in [0, G). Vt: (hd, vs) f16 when f16 else f32; p: (G, ld)
 * f32; o: (G, hd) f32, overwritten. */
typedef void (*tb_att_wsum_fn)(const void *Vt, size_t vs, bool f16, const float *p, int64_t ld,
                               int G, int hd, float *o, int32_t n);

/* In place: x[i] = exp(x[i] * scale - max * scale) / sum, i in [0, n),
 * n >= 1, scale > 0 (as tb_op_softmax; the sum's order is the tier's). */
typedef void (*tb_att_softmax_fn)(float *x, int n, float scale);

typedef struct tb_att_kernels {
    tb_att_scores_fn scores;         /* any G >= 1, any hd >= 1              */
    tb_att_wsum_fn wsum;             /* needs G | wsum_lanes and
                                        hd % wsum_lanes == 0 (else the caller
                                        uses tb_att_wsum_c)                   */
    int wsum_lanes;
    tb_att_softmax_fn softmax;
} tb_att_kernels_t;

/* The attention kernels of tier isa (never NULL; tiers without their own
 * kernels get the portable C ones). The caller must only ask for a tier
 * the CPU has (tb_kernels_for(isa) != NULL). */
const tb_att_kernels_t *tb_att_kernels_for(tb_isa_t isa);

/* The portable C kernels (the ref/generic/neon tiers' entries; plain
 * loops that vectorise): scores with one multiply-add chain per (h, j);
 * wsum with 8 partial sums per output (position j into partial sum
 * j % 8), summed in a fixed tree: any G and hd. */
void tb_att_scores_c(const void *Kt, size_t ks, bool f16, const float *q, int G, int hd,
                     float *sc, int64_t ld, int32_t n);
void tb_att_wsum_c(const void *Vt, size_t vs, bool f16, const float *p, int64_t ld, int G, int hd,
                   float *o, int32_t n);

#if defined(__x86_64__)
/* attention_x86.c: AVX-512 (F/BW/VL/FMA/F16C) and AVX2 (FMA/F16C). */
void tb_att_scores_avx512(const void *Kt, size_t ks, bool f16, const float *q, int G, int hd,
                          float *sc, int64_t ld, int32_t n);
void tb_att_wsum_avx512(const void *Vt, size_t vs, bool f16, const float *p, int64_t ld, int G,
                        int hd, float *o, int32_t n);
void tb_att_softmax_avx512(float *x, int n, float scale);
void tb_att_scores_avx2(const void *Kt, size_t ks, bool f16, const float *q, int G, int hd,
                        float *sc, int64_t ld, int32_t n);
void tb_att_wsum_avx2(const void *Vt, size_t vs, bool f16, const float *p, int64_t ld, int G,
                      int hd, float *o, int32_t n);
void tb_att_softmax_avx2(float *x, int n, float scale);
#endif

#endif
