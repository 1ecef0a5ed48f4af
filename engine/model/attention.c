/*
 * attention.c — self-attention over the KV cache (see session.h for the
 * cache/staging layout).
 *
 * Per layer, two pool passes:
 *   prep    per token: per-head RMSNorm of Q and K (maple), RoPE (when the
 *           layer uses it), K/V rounded to the cache type into staging;
 *   attend  per (token, head): scores = q·k * 1/sqrt(head_dim) over the
 *           token's window in position order, f32 softmax, weighted sum of V.
 * Every (token, head) is computed by one thread in the same order whether
 * the token arrives in a prefill chunk or alone, so prefill == decode.
 */
#include "model/session.h"
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

typedef struct att_ctx {
    tb_session_t *s;
    const tb_layer_t *L;
    const tb_kv_layer_t *kv;
    int32_t n, pos0, il;
} att_ctx;

/* ===================================================================== */
/* KV rows                                                                */
/* ===================================================================== */

static void kv_store(void *dst, const float *src, int64_t n, bool f16) {
    if (!f16) { memcpy(dst, src, (size_t)n * sizeof(float)); return; }
    tb_fp16_t *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = tb_fp32_to_fp16(src[i]);
}

/* K or V row of position j: from staging when inside the chunk. */
static const uint8_t *kv_row(const att_ctx *c, const void *cache, const void *stage, int32_t j) {
    const tb_model_info_t *in = &c->s->m->info;
    const size_t row = (size_t)in->n_head_kv * (size_t)in->head_dim * c->s->kv_elem;
    if (j >= c->pos0) return (const uint8_t *)stage + (size_t)(j - c->pos0) * row;
    return (const uint8_t *)cache + (size_t)(j % c->kv->cap) * row;
}

/* f16 bits -> f32, inline: move exponent/mantissa into f32 position and
 * rescale by 2^112 (covers normals and subnormals); Inf/NaN kept. */
static inline float h2f(uint16_t h) {
    const uint32_t em = (uint32_t)(h & 0x7fffu);
    uint32_t bits = em << 13;
    float f;
    memcpy(&f, &bits, 4);
    f *= 0x1p112f;
    memcpy(&bits, &f, 4);
    if (em >= 0x7c00u) bits = 0x7f800000u | (em << 13);
    bits |= (uint32_t)(h & 0x8000u) << 16;
    memcpy(&f, &bits, 4);
    return f;
}

static void axpy_kv(float *y, float a, const uint8_t *v, int n, bool f16) {
    if (f16) {
        const tb_fp16_t *vh = (const tb_fp16_t *)v;
        for (int i = 0; i < n; i++) y[i] += a * h2f(vh[i]);
    } else {
        const float *vf = (const float *)v;
        for (int i = 0; i < n; i++) y[i] += a * vf[i];
    }
}

/* sc[j - j0] = K_j[kvh] · q for j in [j0, j1], by the kernel table's
 * F16/F32 matvec over contiguous runs of rows (staging, or the ring
 * before and after its wrap point). Each score is one kernel row, so its
 * value does not depend on how the window is split into runs. */
static void scores(const att_ctx *c, const float *q, int kvh, int32_t j0, int32_t j1, float *sc) {
    const tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int hd = in->head_dim;
    const size_t row = (size_t)in->n_head_kv * (size_t)hd * s->kv_elem;
    const size_t off = (size_t)kvh * (size_t)hd * s->kv_elem;
    const tb_matvec_fn mv = tb_kernels()->t[s->p.kv_type].matvec;
    for (int32_t j = j0; j <= j1;) {
        const uint8_t *base;
        int32_t len;
        if (j >= c->pos0) {
            base = (const uint8_t *)s->k_stage + (size_t)(j - c->pos0) * row;
            len = j1 - j + 1;
        } else {
            const int32_t slot = j % c->kv->cap;
            base = (const uint8_t *)c->kv->k + (size_t)slot * row;
            len = TB_MIN(TB_MIN(c->pos0, j1 + 1) - j, c->kv->cap - slot);
        }
        mv(base + off, row, q, sc + (j - j0), 0, len, hd);
        j += len;
    }
}

/* ===================================================================== */
/* Passes                                                                 */
/* ===================================================================== */

static void prep_worker(void *arg, int ith, int nth) {
    const att_ctx *c = arg;
    tb_session_t *s = c->s;
    const tb_model_t *m = s->m;
    const tb_model_info_t *in = &m->info;
    const int hd = in->head_dim, half = in->rope_dims / 2;
    const int64_t nq = (int64_t)in->n_head * hd, nkv = (int64_t)in->n_head_kv * hd;
    const bool f16 = s->p.kv_type == TB_TYPE_F16;
    const int tab = c->L->sliding ? 1 : 0;
    for (int32_t t = ith; t < c->n; t += nth) {
        float *q = s->q + t * nq;        /* (n_head, head_dim) */
        float *k = s->k + t * nkv;       /* (n_head_kv, head_dim) */
        const float *cs = s->rope_cs + ((size_t)tab * s->p.n_batch + (size_t)t) * (size_t)half;
        const float *sn = s->rope_sn + ((size_t)tab * s->p.n_batch + (size_t)t) * (size_t)half;
        for (int h = 0; h < in->n_head; h++) {
            if (c->L->q_norm) tb_op_rmsnorm(q + h * hd, q + h * hd, c->L->q_norm, hd, in->norm_eps);
            if (c->L->rope) tb_op_rope(q + h * hd, cs, sn, in->rope_dims, m->rope_neox);
        }
        for (int h = 0; h < in->n_head_kv; h++) {
            if (c->L->k_norm) tb_op_rmsnorm(k + h * hd, k + h * hd, c->L->k_norm, hd, in->norm_eps);
            if (c->L->rope) tb_op_rope(k + h * hd, cs, sn, in->rope_dims, m->rope_neox);
        }
        kv_store((uint8_t *)s->k_stage + (size_t)t * (size_t)nkv * s->kv_elem, k, nkv, f16);
        kv_store((uint8_t *)s->v_stage + (size_t)t * (size_t)nkv * s->kv_elem, s->v + t * nkv, nkv, f16);
    }
}

static void attend_worker(void *arg, int ith, int nth) {
    const att_ctx *c = arg;
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int hd = in->head_dim, n_head = in->n_head, group = in->n_head / in->n_head_kv;
    const bool f16 = s->p.kv_type == TB_TYPE_F16;
    const float scale = 1.0f / sqrtf((float)hd);
    float *sc = s->scores + (size_t)ith * (size_t)s->p.n_ctx;   /* (window) */
    const int64_t items = (int64_t)c->n * n_head;
    const int64_t i0 = items * ith / nth, i1 = items * (ith + 1) / nth;
    for (int64_t it = i0; it < i1; it++) {
        const int32_t t = (int32_t)(it / n_head);
        const int h = (int)(it % n_head), kvh = h / group;
        const int32_t p = c->pos0 + t;
        const int32_t j0 = c->L->sliding ? TB_MAX(0, p - in->n_swa + 1) : 0;
        const float *q = s->q + ((int64_t)t * n_head + h) * hd;     /* (head_dim) */
        float *o = s->att + ((int64_t)t * n_head + h) * hd;         /* (head_dim) */
        const size_t off = (size_t)kvh * (size_t)hd * s->kv_elem;
        scores(c, q, kvh, j0, p, sc);
        for (int32_t j = j0; j <= p; j++) sc[j - j0] *= scale;
        tb_op_softmax(sc, p - j0 + 1);
        memset(o, 0, (size_t)hd * sizeof *o);
        for (int32_t j = j0; j <= p; j++)
            axpy_kv(o, sc[j - j0], kv_row(c, c->kv->v, s->v_stage, j) + off, hd, f16);
    }
}

void tb_attention(tb_session_t *s, int32_t il, int32_t n) {
    const tb_model_info_t *in = &s->m->info;
    att_ctx c = {.s = s, .L = &s->m->layers[il], .kv = &s->kv[il], .n = n, .pos0 = s->pos, .il = il};
    tb_pool_run(s->pool, prep_worker, &c);
    tb_pool_run(s->pool, attend_worker, &c);
    /* staging -> cache (only the last cap rows can survive in a ring) */
    const size_t row = (size_t)in->n_head_kv * (size_t)in->head_dim * s->kv_elem;
    for (int32_t t = TB_MAX(0, n - c.kv->cap); t < n; t++) {
        const size_t slot = (size_t)((s->pos + t) % c.kv->cap);
        memcpy((uint8_t *)c.kv->k + slot * row, (uint8_t *)s->k_stage + (size_t)t * row, row);
        memcpy((uint8_t *)c.kv->v + slot * row, (uint8_t *)s->v_stage + (size_t)t * row, row);
    }
}
