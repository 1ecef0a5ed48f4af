/*
 * session.c — tb_session_*: parameters, the KV cache, scratch buffers sized
 * once for n_batch tokens, chunked evaluation and the logits of the last
 * eval. Every buffer is allocated at creation except the logits, which grow
 * when an eval asks for all rows of a longer call.
 */
#include "model/session.h"
#include "model/attention.h"
#include "kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

tb_session_params_t tb_session_default_params(void) {
    return (tb_session_params_t){.n_ctx = 2048, .n_threads = 1, .n_batch = 512,
                                 .kv_type = TB_TYPE_F16};
}

/* ===================================================================== */
/* Allocation                                                             */
/* ===================================================================== */

static void *salloc(tb_session_t *s, size_t n, bool *fail) {
    void *p = tb_alloc_aligned(n);
    if (!p) *fail = true;
    else s->mem_bytes += (n + 63) & ~(size_t)63;
    return p;
}

static size_t act_of(const tb_weight_t *w) {
    return w->data ? tb_act_row_bytes(w->type, w->n_in) : 0;
}

/* Largest activation row of any weight (a row of n_in f32 at most). */
static size_t max_act_bytes(const tb_model_t *m) {
    size_t b = act_of(&m->output);
    for (int32_t il = 0; il < m->info.n_layer; il++) {
        const tb_layer_t *L = &m->layers[il];
        const tb_weight_t *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up,
                                   &L->ffn_down, &L->router, &L->gate_exps, &L->up_exps, &L->down_exps};
        for (size_t i = 0; i < TB_ARRAY_LEN(ws); i++) b = TB_MAX(b, act_of(ws[i]));
    }
    return b;
}

/* Bytes of one layer's K / V cache of cap slots, 64-byte multiples. */
static size_t kv_k_bytes(const tb_session_t *s, int32_t cap) {
    const tb_model_info_t *in = &s->m->info;
    const size_t T = TB_KV_TILE, slots = ((size_t)cap + T - 1) / T * T;
    return (slots * (size_t)in->n_head_kv * (size_t)in->head_dim * s->kv_elem + 63) & ~(size_t)63;
}
static size_t kv_v_bytes(const tb_session_t *s, int32_t cap) {
    const tb_model_info_t *in = &s->m->info;
    return ((size_t)cap * (size_t)in->n_head_kv * (size_t)in->head_dim * s->kv_elem + 63) & ~(size_t)63;
}

static int alloc_buffers(tb_session_t *s) {
    const tb_model_t *m = s->m;
    const tb_model_info_t *in = &m->info;
    const size_t nb = (size_t)s->p.n_batch, E = (size_t)in->n_embd;
    const size_t nq = (size_t)in->n_head * (size_t)in->head_dim;
    const size_t nkv = (size_t)in->n_head_kv * (size_t)in->head_dim;
    const size_t X = (size_t)in->n_expert, K = (size_t)in->n_expert_used;
    const size_t F = (size_t)in->n_ff, Fx = (size_t)in->n_ff_exp, nr = nb * K;
    const size_t f = sizeof(float);
    bool fail = false;

    /* KV of every layer in one huge-page arena: decode streams it like
     * the weights. Slices are 64-byte aligned. */
    s->kv = calloc((size_t)in->n_layer, sizeof *s->kv);
    if (!s->kv) return tb_err(TB_ERR_NOMEM, "out of memory for the KV cache table");
    /* K (n_head_kv, cap / TB_KV_TILE tiles rounded up, head_dim, TB_KV_TILE),
     * V (n_head_kv, cap, head_dim): attention.h. */
    size_t kv_total = 0;
    for (int32_t il = 0; il < in->n_layer; il++) {
        s->kv[il].cap = m->layers[il].sliding ? TB_MIN(in->n_swa, s->p.n_ctx) : s->p.n_ctx;
        kv_total += kv_k_bytes(s, s->kv[il].cap) + kv_v_bytes(s, s->kv[il].cap);
    }
    s->kv_arena = tb_huge_alloc(kv_total);
    if (!s->kv_arena) return tb_err(TB_ERR_NOMEM, "out of memory for %zu bytes of KV cache", kv_total);
    s->mem_bytes += kv_total;
    uint8_t *at = s->kv_arena;
    for (int32_t il = 0; il < in->n_layer; il++) {
        tb_kv_layer_t *kv = &s->kv[il];
        kv->k = at;
        kv->v = at + kv_k_bytes(s, kv->cap);
        at += kv_k_bytes(s, kv->cap) + kv_v_bytes(s, kv->cap);
    }
    s->act_bytes = max_act_bytes(m);
    s->x = salloc(s, nb * E * f, &fail);
    s->xn = salloc(s, nb * E * f, &fail);
    s->y = salloc(s, nb * E * f, &fail);
    s->y2 = salloc(s, nb * E * f, &fail);
    s->q = salloc(s, nb * nq * f, &fail);
    s->k = salloc(s, nb * nkv * f, &fail);
    s->v = salloc(s, nb * nkv * f, &fail);
    s->att = salloc(s, nb * nq * f, &fail);
    s->act = salloc(s, nb * s->act_bytes, &fail);
    s->act_own = salloc(s, 2 * s->act_bytes, &fail);
    s->x_own = salloc(s, 2 * E * f, &fail);
    s->xn_own = salloc(s, 2 * E * f, &fail);
    s->y_b = salloc(s, E * f, &fail);
    s->y2_b = salloc(s, E * f, &fail);
    s->split_plan = salloc(s, tb_split_plan_bytes(in), &fail);
    s->rope_cs = salloc(s, 2 * nb * (size_t)(in->rope_dims / 2) * f, &fail);
    s->rope_sn = salloc(s, 2 * nb * (size_t)(in->rope_dims / 2) * f, &fail);
    const size_t group = (size_t)(in->n_head / in->n_head_kv);
    s->sc_ld = ((int64_t)s->p.n_ctx + 15) / 16 * 16;
    s->sc_per_thread = group * (size_t)s->sc_ld;
    s->scores = salloc(s, (size_t)s->p.n_threads * s->sc_per_thread * f, &fail);
    s->jobs = salloc(s, (2 * X + 8) * sizeof *s->jobs, &fail);
    s->sched = salloc(s, (size_t)s->p.n_threads * sizeof *s->sched, &fail);
    s->clk = (tb_pass_clock_t){.nth = s->p.n_threads,
                               .t = salloc(s, (size_t)s->p.n_threads * TB_CLK_STRIDE * sizeof(uint64_t), &fail)};
    if (F) {
        s->ff_g = salloc(s, nb * F * f, &fail);
        s->ff_u = salloc(s, nb * F * f, &fail);
    }
    if (X) {
        size_t xg_row = 0, router_row = 0;
        const size_t hq_row = s->hq_stride = tb_moe_hq_stride(m);
        for (int32_t il = 0; il < in->n_layer; il++) {
            const tb_layer_t *L = &m->layers[il];
            xg_row = TB_MAX(xg_row, act_of(&L->gate_exps));
            if (tb_type_traits(L->router.type)->vec_dot_type != TB_TYPE_F32)
                router_row = TB_MAX(router_row, act_of(&L->router));
        }
        if (router_row) s->act2 = salloc(s, nb * router_row, &fail);
        s->router = salloc(s, nb * X * f, &fail);
        s->sel = salloc(s, nr * sizeof(int32_t), &fail);
        s->sel_w = salloc(s, nr * f, &fail);
        s->row_of = salloc(s, nr * sizeof(int32_t), &fail);
        s->tok_of = salloc(s, nr * sizeof(int32_t), &fail);
        s->exp_off = salloc(s, (2 * X + 1) * sizeof(int32_t), &fail);
        s->xg = salloc(s, nr * xg_row, &fail);
        s->eg = salloc(s, nr * Fx * f, &fail);
        s->eu = salloc(s, nr * Fx * f, &fail);
        s->hq = salloc(s, nr * hq_row, &fail);
        s->ed = salloc(s, nr * E * f, &fail);
    }
    s->logits_cap = 1;
    s->logits = salloc(s, (size_t)in->n_vocab * f, &fail);
    if (fail) return tb_err(TB_ERR_NOMEM, "out of memory for a session of n_ctx %d, n_batch %d",
                            s->p.n_ctx, s->p.n_batch);
    return TB_OK;
}

/* ===================================================================== */
/* Public API                                                             */
/* ===================================================================== */

int tb_session_new(const tb_model_t *m, const tb_session_params_t *p, tb_session_t **out) {
    if (!m || !out) return tb_err(TB_ERR_ARG, "tb_session_new: NULL argument");
    *out = NULL;
    tb_session_params_t sp = p ? *p : tb_session_default_params();
    if (sp.n_ctx < 1) return tb_err(TB_ERR_ARG, "session n_ctx %d must be at least 1", sp.n_ctx);
    if (sp.n_threads < 1 || sp.n_threads > 512)
        return tb_err(TB_ERR_ARG, "session n_threads %d out of range 1..512", sp.n_threads);
    if (sp.n_batch < 1) return tb_err(TB_ERR_ARG, "session n_batch %d must be at least 1", sp.n_batch);
    if (sp.kv_type != TB_TYPE_F32 && sp.kv_type != TB_TYPE_F16)
        return tb_err(TB_ERR_ARG, "session kv_type must be f32 or f16, got %s", tb_type_name(sp.kv_type));
    if (sp.pool && tb_pool_n_threads(sp.pool) != sp.n_threads)
        return tb_err(TB_ERR_ARG, "session n_threads %d differs from its pool's %d threads", sp.n_threads,
                      tb_pool_n_threads(sp.pool));
    if (sp.head && sp.head->m != m)
        return tb_err(TB_ERR_ARG, "session head was built for another model");
    sp.n_batch = TB_MIN(sp.n_batch, sp.n_ctx);
    tb_session_t *s = calloc(1, sizeof *s);
    if (!s) return tb_err(TB_ERR_NOMEM, "out of memory for session");
    s->m = m;
    s->p = sp;
    s->kv_elem = sp.kv_type == TB_TYPE_F16 ? 2 : 4;
    int rc = alloc_buffers(s);
    if (rc == TB_OK && sp.head) rc = tb_head_scratch_init(sp.head, &s->head_sc);
    if (rc == TB_OK && sp.pool) s->pool = sp.pool;
    else if (rc == TB_OK) rc = tb_pool_new(sp.n_threads, &s->pool);
    if (rc != TB_OK) {
        tb_session_free(s);
        return rc;
    }
    *out = s;
    return TB_OK;
}

void tb_session_free(tb_session_t *s) {
    if (!s) return;
    if (!s->p.pool) tb_pool_free(s->pool);   /* its own, not a borrowed one */
    tb_huge_free(s->kv_arena);
    free(s->kv);
    tb_head_scratch_free(&s->head_sc);
    void *bufs[] = {s->x, s->xn, s->y, s->y2, s->act_own, s->x_own, s->xn_own, s->y_b, s->y2_b, s->split_plan,
                    s->q, s->k, s->v, s->att, s->act, s->act2, s->ff_g, s->ff_u, s->rope_cs, s->rope_sn,
                    s->scores, s->jobs, s->sched, s->router, s->sel, s->sel_w, s->row_of, s->tok_of, s->exp_off, s->xg, s->eg,
                    s->eu, s->hq, s->ed, s->logits, s->clk.t};
    for (size_t i = 0; i < TB_ARRAY_LEN(bufs); i++) tb_free_aligned(bufs[i]);
    free(s);
}

int tb_session_eval(tb_session_t *s, const int32_t *tokens, int32_t n, bool all_logits) {
    if (!s || !tokens || n < 1) return tb_err(TB_ERR_ARG, "tb_session_eval: need a session and at least one token");
    const int32_t V = s->m->info.n_vocab;
    if (n > s->p.n_ctx - s->pos)
        return tb_err(TB_ERR_RANGE, "context full: %d cached + %d new tokens exceed n_ctx %d",
                      s->pos, n, s->p.n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return tb_err(TB_ERR_RANGE, "token id %d at index %d is outside the vocabulary 0..%d",
                          tokens[i], i, V - 1);
    const int32_t rows = all_logits ? n : 1;
    if (rows > s->logits_cap) {
        float *nl = tb_alloc_aligned((size_t)rows * (size_t)V * sizeof(float));
        if (!nl) return tb_err(TB_ERR_NOMEM, "out of memory for %d rows of logits", rows);
        s->mem_bytes -= ((size_t)s->logits_cap * (size_t)V * sizeof(float) + 63) & ~(size_t)63;
        s->mem_bytes += ((size_t)rows * (size_t)V * sizeof(float) + 63) & ~(size_t)63;
        tb_free_aligned(s->logits);
        s->logits = nl;
        s->logits_cap = rows;
    }
    s->n_logits = 0;
    s->n_last = 0;
    for (int32_t done = 0; done < n;) {
        const int32_t c = TB_MIN(s->p.n_batch, n - done);
        float *out = all_logits ? s->logits + (size_t)done * (size_t)V
                                : (done + c == n ? s->logits : NULL);
        int rc = tb_forward_chunk(s, tokens + done, c, all_logits, out);
        if (rc != TB_OK) return rc;
        done += c;
    }
    s->n_last = n;
    s->n_logits = rows;
    return TB_OK;
}

const float *tb_session_logits(const tb_session_t *s, int32_t i) {
    if (!s || s->n_last == 0) return NULL;
    if (i == -1) i = s->n_last - 1;
    if (i < 0 || i >= s->n_last) return NULL;
    if (s->n_logits == s->n_last) return s->logits + (size_t)i * (size_t)s->m->info.n_vocab;
    return i == s->n_last - 1 ? s->logits : NULL;
}

int32_t tb_session_pos(const tb_session_t *s) { return s ? s->pos : 0; }

void tb_session_reset(tb_session_t *s) {
    if (!s) return;
    s->pos = 0;
    s->n_last = 0;
    s->n_logits = 0;
}

uint64_t tb_session_memory_bytes(const tb_session_t *s) { return s ? s->mem_bytes : 0; }

void tb_session_get_head_stats(const tb_session_t *s, tb_head_stats_t *out) {
    if (!out) return;
    *out = s ? s->head_stats : (tb_head_stats_t){0};
}
