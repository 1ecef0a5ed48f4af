/*
 * attention.h — the attention kernels of one kv-head group over one run of
 * contiguous KV cache slots (attention.c drives them; not public).
 *
 * Cache layout (session.h), per layer and kv head, in the cache type (f16
 * or f32), both laid out so that attending over a run of slots reads one
 * linear stream (a stride the hardware prefetchers follow):
 *   K  tiled transposed: tiles of TB_KV_TILE slots, each tile (head_dim,
 *      TB_KV_TILE); element (d, slot) at
 *      ((slot / TB_KV_TILE) * head_dim + d) * TB_KV_TILE + slot % TB_KV_TILE;
 *      the last tile is allocated whole (cap rounded up to the tile);
 *   V  row per slot: (cap, head_dim), element (slot, d) at slot * head_dim + d.
 * A K run of n slots is passed as the head's tile 0 and the first slot s0;
 * a V run as the pointer to its first row.
 *
 * Contracts every tier keeps (tests/model/test_attention.c):
 *   scores   each sc[h, j] is one multiply-add chain over d ascending, so
 *            it depends on K(:, s0 + j) and on q[h] alone: not on n, on
 *            where the run starts, or on which other heads are computed;
 *   wsum     each o[h, d] is one multiply-add chain over j ascending,
 *            continued from o[h, d] when accumulating: it depends on
 *            p[h, :] and V(:, d) alone, and a run cut in two (the second
 *            part accumulated) gives the same bits as the whole run;
 *   softmax  deterministic per row.
 * So a token's attention is bit-identical alone (decode) or inside a
 * prefill chunk, on any thread count.
 */
#ifndef TB_ATTENTION_H
#define TB_ATTENTION_H

#include "internal.h"

/* Slots per K tile: one 64-byte line of f16 per head dim (two of f32). */
#define TB_KV_TILE 32

/* sc[h * ld + j] = sum_{d < hd} K(d, s0 + j) * q[h * hd + d], for j in
 * [0, n), h in [0, G). Kt: the head's tiles (see above) f16 when f16 else
 * f32, only slots [s0, s0 + n) used (other slots of their tiles may be
 * read and are ignored, NaN included); q: (G, hd) f32; sc: (G, ld) f32,
 * only columns [0, n) written. */
typedef void (*tb_att_scores_fn)(const void *Kt, int32_t s0, bool f16, const float *q, int G,
                                 int hd, float *sc, int64_t ld, int32_t n);

/* o[h * hd + d] = (acc ? o[h * hd + d] : 0) + sum_{j < n} p[h * ld + j] *
 * V[j * hd + d], for d in [0, hd), h in [0, G). V: (n, hd) f16 when f16
 * else f32; p: (G, ld) f32; o: (G, hd) f32. */
typedef void (*tb_att_wsum_fn)(const void *V, bool f16, const float *p, int64_t ld, int G, int hd,
                               float *o, int32_t n, bool acc);

/* In place: x[i] = exp(x[i] * scale - max * scale) / sum, i in [0, n),
 * n >= 1, scale > 0 (as tb_op_softmax; the sum's order is the tier's). */
typedef void (*tb_att_softmax_fn)(float *x, int n, float scale);

/* h[i] = tb_op_f16(x[i]) (IEEE binary16 bits), i in [0, n), bit for bit (RNE; subnormals, inf
 * and NaN as tb_op_f16): the KV store's conversion. */
typedef void (*tb_att_to_f16_fn)(const float *x, uint16_t *h, int n);

typedef struct tb_att_kernels {
    tb_att_scores_fn scores;         /* any G >= 1, any hd >= 1              */
    tb_att_wsum_fn wsum;             /* any G >= 1; needs hd % wsum_lanes
                                        == 0 (else the caller uses
                                        tb_att_wsum_c)                        */
    int wsum_lanes;
    tb_att_softmax_fn softmax;
    tb_att_to_f16_fn to_f16;
} tb_att_kernels_t;

/* The attention kernels of tier isa (never NULL; tiers without their own
 * kernels get the portable C ones). The caller must only ask for a tier
 * the CPU has (tb_kernels_for(isa) != NULL). */
const tb_att_kernels_t *tb_att_kernels_for(tb_isa_t isa);

/* The portable C kernels (the ref/generic/neon tiers' entries; plain
 * loops that vectorise over positions (scores) or head dims (wsum)): one
 * multiply-add chain per (h, j) / (h, d); any G and hd. */
void tb_att_scores_c(const void *Kt, int32_t s0, bool f16, const float *q, int G, int hd,
                     float *sc, int64_t ld, int32_t n);
void tb_att_wsum_c(const void *V, bool f16, const float *p, int64_t ld, int G, int hd, float *o,
                   int32_t n, bool acc);
void tb_att_to_f16_c(const float *x, uint16_t *h, int n);

#if defined(__x86_64__)
/* attention_x86.c: AVX-512 (F/BW/VL/FMA/F16C) and AVX2 (FMA/F16C). */
void tb_att_scores_avx512(const void *Kt, int32_t s0, bool f16, const float *q, int G, int hd,
                          float *sc, int64_t ld, int32_t n);
void tb_att_wsum_avx512(const void *V, bool f16, const float *p, int64_t ld, int G, int hd,
                        float *o, int32_t n, bool acc);
void tb_att_softmax_avx512(float *x, int n, float scale);
void tb_att_to_f16_avx512(const float *x, uint16_t *h, int n);
void tb_att_scores_avx2(const void *Kt, int32_t s0, bool f16, const float *q, int G, int hd,
                        float *sc, int64_t ld, int32_t n);
void tb_att_wsum_avx2(const void *V, bool f16, const float *p, int64_t ld, int G, int hd, float *o,
                      int32_t n, bool acc);
void tb_att_softmax_avx2(float *x, int n, float scale);
void tb_att_to_f16_avx2(const float *x, uint16_t *h, int n);
#endif

#endif
