/*
 * kvshift.c — tb_session_kv_shift: forget the oldest positions of the KV
 * cache and renumber the rest, without evaluating anything again.
 *
 * The cache keeps position p in slot p % cap (session.h), cap = n_ctx for
 * global layers and min(n_swa, n_ctx) for sliding layers. After dropping
 * the oldest d positions, the row of old position p (p >= d) belongs to
 * position p - d, slot (p - d) % cap: every layer's live rows move by -d
 * slots (modulo cap: for a ring, a rotation). A layer without positional
 * encoding (Maple's global layers) needs only that move, and the rows keep
 * their bits. A RoPE layer's keys carry the rotation of their position,
 * R(p * theta_i) on each pair of dims; R(-d * theta_i) R(p * theta_i) =
 * R((p - d) * theta_i), so the kept keys are rotated by -d positions (the
 * K-shift of llama.cpp): in f32, with the angles from tb_op_rope_table
 * (double), then stored back in the cache type. Values carry no position.
 *
 * Per layer and kv head, the live rows are read into scratch first (f32
 * for a RoPE layer, the cache's own bytes otherwise) and written to their
 * new slots after, so overlapping moves need no order.
 */
#include "model/session.h"
#include "model/attention.h"

#include <stdlib.h>
#include <string.h>

/* K(g) element (d, slot) of a layer of cap slots: attention.h's layout. */
static size_t k_at(size_t cap, int hd, int g, size_t slot, int d) {
    const size_t T = TB_KV_TILE, ntile = (cap + T - 1) / T;
    return (((size_t)g * ntile + slot / T) * (size_t)hd + (size_t)d) * T + slot % T;
}

static float kv_get(const void *base, size_t i, bool f16) {
    return f16 ? tb_fp16_to_fp32(((const tb_fp16_t *)base)[i]) : ((const float *)base)[i];
}

static void kv_put(void *base, size_t i, float x, bool f16) {
    if (f16) ((tb_fp16_t *)base)[i] = tb_op_f16(x);
    else ((float *)base)[i] = x;
}

/* Layer il: the rows of new positions [lo, hi) from slots (p + d) % cap to
 * p % cap, keys re-rotated by -d when the layer uses RoPE. tk, tv: scratch
 * of (hi - lo, head_dim) f32 each. */
static void shift_layer(tb_session_t *s, int32_t il, int32_t lo, int32_t hi, int32_t d, float *tk,
                        float *tv, const float *cs, const float *sn) {
    const tb_model_t *m = s->m;
    const tb_model_info_t *in = &m->info;
    const tb_layer_t *L = &m->layers[il];
    const tb_kv_layer_t *kv = &s->kv[il];
    const int hd = in->head_dim;
    const size_t cap = (size_t)kv->cap;
    const bool f16 = s->p.kv_type == TB_TYPE_F16;
    const int32_t n = hi - lo;
    const size_t el = s->kv_elem, row = (size_t)hd * el, T = TB_KV_TILE;
    if (!L->rope) {   /* rows moved as bytes: K element by element down its tile, V row by row */
        uint8_t *bk = (uint8_t *)tk, *bv = (uint8_t *)tv;   /* (n, head_dim) cache elements each */
        const uint8_t *K = kv->k, *V = kv->v;
        for (int g = 0; g < in->n_head_kv; g++) {
            for (int32_t j = 0; j < n; j++) {
                const size_t src = (size_t)(lo + j + d) % cap;
                const uint8_t *ks = K + k_at(cap, hd, g, src, 0) * el;   /* K(g)(0, src), stride T */
                for (int e = 0; e < hd; e++) memcpy(bk + (size_t)j * row + (size_t)e * el, ks + (size_t)e * T * el, el);
                memcpy(bv + (size_t)j * row, V + ((size_t)g * cap + src) * row, row);
            }
            for (int32_t j = 0; j < n; j++) {
                const size_t dst = (size_t)(lo + j) % cap;
                uint8_t *kd = (uint8_t *)kv->k + k_at(cap, hd, g, dst, 0) * el;
                for (int e = 0; e < hd; e++) memcpy(kd + (size_t)e * T * el, bk + (size_t)j * row + (size_t)e * el, el);
                memcpy((uint8_t *)kv->v + ((size_t)g * cap + dst) * row, bv + (size_t)j * row, row);
            }
        }
        return;
    }
    for (int g = 0; g < in->n_head_kv; g++) {
        for (int32_t j = 0; j < n; j++) {
            const size_t src = (size_t)(lo + j + d) % cap;
            float *kr = tk + (size_t)j * hd, *vr = tv + (size_t)j * hd;   /* (head_dim) each */
            for (int e = 0; e < hd; e++) {
                kr[e] = kv_get(kv->k, k_at(cap, hd, g, src, e), f16);
                vr[e] = kv_get(kv->v, ((size_t)g * cap + src) * (size_t)hd + (size_t)e, f16);
            }
            if (L->rope) tb_op_rope(kr, cs, sn, in->rope_dims, m->rope_neox);
        }
        for (int32_t j = 0; j < n; j++) {
            const size_t dst = (size_t)(lo + j) % cap;
            const float *kr = tk + (size_t)j * hd, *vr = tv + (size_t)j * hd;
            for (int e = 0; e < hd; e++) {
                kv_put(kv->k, k_at(cap, hd, g, dst, e), kr[e], f16);
                kv_put(kv->v, ((size_t)g * cap + dst) * (size_t)hd + (size_t)e, vr[e], f16);
            }
        }
    }
}

int tb_session_kv_shift(tb_session_t *s, int32_t n_discard) {
    if (!s) return tb_err(TB_ERR_ARG, "tb_session_kv_shift: NULL session");
    if (n_discard < 0 || n_discard > s->pos)
        return tb_err(TB_ERR_ARG, "kv shift of %d positions: the cache holds %d", n_discard, s->pos);
    if (n_discard == 0) return TB_OK;
    const tb_model_info_t *in = &s->m->info;
    const int32_t d = n_discard, np = s->pos - d;   /* positions kept */
    const int half = in->rope_dims / 2;
    int32_t cap_max = 0;
    for (int32_t il = 0; il < in->n_layer; il++) cap_max = TB_MAX(cap_max, s->kv[il].cap);
    const size_t rows = (size_t)TB_MIN(cap_max, TB_MAX(np, 1));
    float *tk = malloc(2 * rows * (size_t)in->head_dim * sizeof *tk);    /* (2, rows, head_dim) */
    float *tab = malloc(4 * (size_t)TB_MAX(half, 1) * sizeof *tab);       /* cs, sn of base, base_swa */
    if (!tk || !tab) {
        free(tk);
        free(tab);
        return tb_err(TB_ERR_NOMEM, "out of memory for a kv shift of %d positions", n_discard);
    }
    /* [0] rope_base, [1] rope_base_swa: forward.c's tables at position -d */
    tb_op_rope_table(tab, tab + half, -d, in->rope_dims, in->rope_base);
    tb_op_rope_table(tab + 2 * half, tab + 3 * half, -d, in->rope_dims, in->rope_base_swa);
    for (int32_t il = 0; il < in->n_layer && np > 0; il++) {
        const int32_t lo = TB_MAX(0, np - s->kv[il].cap);   /* the rows a layer keeps */
        const float *cs = tab + (s->m->layers[il].sliding ? 2 * half : 0);
        shift_layer(s, il, lo, np, d, tk, tk + rows * (size_t)in->head_dim, cs, cs + half);
    }
    free(tk);
    free(tab);
    s->pos = np;
    return TB_OK;
}
