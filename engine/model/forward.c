/*
 * forward.c — one chunk of tokens through the model.
 *
 *   x = token_embd[tokens]                                   (n, n_embd)
 *   per layer:
 *     xn = rmsnorm(x) ; q,k,v = Wq,Wk,Wv · xn   (one pass: norm + quantization
 *                                                as its prologue)
 *     att = attention(q, k, v)                  (attention.c)
 *     x += Wo · att                             (one pass; the add is the
 *                                                epilogue of each row range)
 *     xn = rmsnorm(x) ; x += ffn(xn)            (dense SwiGLU or moe.c; the
 *                                                SwiGLU is the down pass's prologue)
 *   logits = output · rmsnorm(x)   for the last token, or all when asked
 *
 * The same code runs a prefill chunk (gemm) and a single decode token
 * (matvec); every per-token operation is identical in both.
 */
#include "model/session.h"
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

/* ===================================================================== */
/* Fused linear over one input                                            */
/* ===================================================================== */

/* ys[i] (n, w[i]->n_out, row stride ld[i]) = w[i] · act(x) (+= into acc[i]
 * when acc and acc[i]), for the n rows of x (row stride x_ld). act(x) is
 * `pro` applied to x (its x, n, ld already set by the caller: NORM,
 * SWIGLU or QUANT). Weights sharing an activation format share one
 * prologue and one pool pass; a second format (mixed files) gets a
 * plain quantization of the prologue's output in a pass of its own. */
static void lin_multi(tb_session_t *s, tb_phase_t ph, tb_lin_pro_t *pro, const tb_weight_t *const *w,
                      float *const *ys, const int64_t *ld, float *const *acc, int nw, const int64_t *col0) {
    bool done[8] = {false}, mixed = false;
    assert(nw <= 8);
    for (int i = 1; i < nw; i++)
        mixed |= tb_type_traits(w[i]->type)->vec_dot_type != tb_type_traits(w[0]->type)->vec_dot_type;
    bool first = true;
    for (int i = 0; i < nw; i++) {
        if (done[i]) continue;
        const tb_type_t act = tb_type_traits(w[i]->type)->vec_dot_type;
        tb_lin_pro_t p = *pro;
        if (!first) {               /* later formats: the prologue already ran */
            p.kind = TB_PRO_QUANT;
            p.x = pro->kind == TB_PRO_NORM ? pro->xn : pro->x;
        }
        const float *src = p.kind == TB_PRO_NORM ? p.xn : p.x;    /* (n, ld) act input */
        p.wtype = w[i]->type;
        p.q = tb_act_is_f32(w[i]->type) ? NULL : s->act;
        p.q_stride = p.q ? tb_act_row_bytes(w[i]->type, p.n_in) : 0;
        if (p.kind == TB_PRO_NORM && p.q && !mixed) p.xn = NULL;   /* nobody reads it */
        const void *a = p.q ? p.q : (const void *)src;
        const size_t st = p.q ? p.q_stride : (size_t)p.ld * sizeof(float);
        int nj = 0;
        for (int j = i; j < nw; j++) {
            if (done[j] || tb_type_traits(w[j]->type)->vec_dot_type != act) continue;
            done[j] = true;
            const int64_t c0 = col0 ? col0[j] : 0;   /* a column slice reads its part of the row */
            const size_t ca = p.q ? tb_act_row_bytes(w[i]->type, c0) : (size_t)c0 * sizeof(float);
            assert(!p.q || c0 % tb_type_traits(act)->blck == 0);   /* whole activation blocks */
            s->jobs[nj++] = (tb_lin_job_t){.w = w[j], .a = (const uint8_t *)a + ca, .a_stride = st, .n_tok = p.n,
                                           .y = ys[j], .ldy = ld[j], .acc = acc ? acc[j] : NULL};
        }
        if (p.kind == TB_PRO_QUANT && !p.q) p.kind = TB_PRO_NONE;
        const uint64_t t0 = tb_prof_start(s);
        tb_lin_run(s->pool, s->sched, &p, s->jobs, nj, tb_prof_clock(s));
        tb_prof_end_jobs(s, ph, t0, s->jobs, nj);
        first = false;
    }
}

/* ===================================================================== */
/* Column slices                                                          */
/* ===================================================================== */

typedef struct fold_ctx { tb_session_t *s; int32_t n; } fold_ctx;

static void fold_worker(void *arg, int ith, int nth) {
    const fold_ctx *c = arg;
    tb_session_t *s = c->s;
    const int64_t m = (int64_t)c->n * s->m->info.n_embd;
    tb_fold_rows(s->x, s->x, s->y, s->y2, m * ith / nth, m * (ith + 1) / nth);
}

/* The two column slices' outputs (y, y2) into the residual stream, in the
 * order every path uses. One token: on the caller; a chunk: a pool pass. */
static void fold(tb_session_t *s, int32_t n) {
    if (n == 1) { tb_fold_rows(s->x, s->x, s->y, s->y2, 0, s->m->info.n_embd); return; }
    fold_ctx c = {s, n};
    tb_pool_run(s->pool, fold_worker, &c);
}

/* x += W . act(pro) for n rows, W whole (cut 0: the add is the pass's
 * epilogue) or as its two column slices sl (cut: slice 1's first column):
 * x = (x + W_0 . a[0:cut]) + W_1 . a[cut:]. */
static void out_proj(tb_session_t *s, tb_phase_t ph, tb_lin_pro_t *pro, const tb_weight_t *w,
                     const tb_weight_t *sl, int64_t cut, int32_t n) {
    const int64_t E = s->m->info.n_embd;
    if (cut) {
        const tb_weight_t *ws[2] = {&sl[0], &sl[1]};
        float *ys[2] = {s->y, s->y2};
        const int64_t ld[2] = {E, E}, c0[2] = {0, cut};
        lin_multi(s, ph, pro, ws, ys, ld, NULL, 2, c0);
        fold(s, n);
        return;
    }
    float *ys[1] = {s->y}, *acc[1] = {s->x};
    const int64_t ld[1] = {E};
    lin_multi(s, ph, pro, &w, ys, ld, acc, 1, NULL);
}

/* ===================================================================== */
/* Blocks                                                                 */
/* ===================================================================== */

static void attn_block(tb_session_t *s, int32_t il, int32_t n) {
    const tb_model_info_t *in = &s->m->info;
    const tb_layer_t *L = &s->m->layers[il];
    const int64_t E = in->n_embd;
    const int64_t nq = (int64_t)in->n_head * in->head_dim, nkv = (int64_t)in->n_head_kv * in->head_dim;
    /* xn = rmsnorm(x) ; q, k, v = Wq, Wk, Wv · xn */
    tb_lin_pro_t pn = {.kind = TB_PRO_NORM, .x = s->x, .ld = E, .n_in = E, .n = n,
                       .w = L->attn_norm, .eps = in->norm_eps, .xn = s->xn};
    const tb_weight_t *w[3] = {&L->wq, &L->wk, &L->wv};
    float *ys[3] = {s->q, s->k, s->v};
    const int64_t ld[3] = {nq, nkv, nkv};
    lin_multi(s, TB_PHASE_QKV, &pn, w, ys, ld, NULL, 3, NULL);
    const uint64_t t0 = tb_prof_start(s);
    tb_attention(s, il, n);
    tb_prof_end(s, TB_PHASE_ATTENTION, t0, 0);
    /* x += Wo · att */
    tb_lin_pro_t pq = {.kind = TB_PRO_QUANT, .x = s->att, .ld = nq, .n_in = nq, .n = n};
    out_proj(s, TB_PHASE_ATTN_OUT, &pq, &L->wo, L->wo_sl, L->wo_cut, n);
}

static void dense_ffn(tb_session_t *s, int32_t il, int32_t n) {
    const tb_model_info_t *in = &s->m->info;
    const tb_layer_t *L = &s->m->layers[il];
    const int64_t E = in->n_embd, F = in->n_ff;
    /* g, u = Wg, Wu · rmsnorm(x) */
    tb_lin_pro_t pn = {.kind = TB_PRO_NORM, .x = s->x, .ld = E, .n_in = E, .n = n,
                       .w = L->ffn_norm, .eps = in->norm_eps, .xn = s->xn};
    const tb_weight_t *w[2] = {&L->ffn_gate, &L->ffn_up};
    float *ys[2] = {s->ff_g, s->ff_u};
    const int64_t ld[2] = {F, F};
    lin_multi(s, TB_PHASE_FFN_UP, &pn, w, ys, ld, NULL, 2, NULL);
    /* x += Wd · (silu(g) * u) */
    tb_lin_pro_t ps = {.kind = TB_PRO_SWIGLU, .x = s->ff_g, .u = s->ff_u, .ld = F, .n_in = F,
                       .n = n, .clamp = INFINITY};
    out_proj(s, TB_PHASE_FFN_DOWN, &ps, &L->ffn_down, L->down_sl, L->down_cut, n);
}

static void ffn_block(tb_session_t *s, int32_t il, int32_t n) {
    if (s->m->info.n_expert > 0) tb_moe_ffn(s, il, n);
    else dense_ffn(s, il, n);
}

/* ===================================================================== */
/* Chunk                                                                  */
/* ===================================================================== */

int tb_forward_chunk(tb_session_t *s, const int32_t *tokens, int32_t n, bool all_logits,
                     float *logits) {
    const tb_model_t *m = s->m;
    const tb_model_info_t *in = &m->info;
    const int64_t E = in->n_embd;
    const int half = in->rope_dims / 2;

    /* ---- embeddings ---- */
    const uint64_t t_chunk = tb_prof_start(s);
    const tb_to_float_fn deq = tb_type_traits(m->tok_embd.type)->to_float_ref;
    for (int32_t t = 0; t < n; t++) {
        if (tokens[t] < 0 || tokens[t] >= in->n_vocab)
            return tb_err(TB_ERR_RANGE, "token id %d at index %d is outside the vocabulary 0..%d",
                          tokens[t], t, in->n_vocab - 1);
        deq((const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes, s->x + t * E, E);
    }
    tb_prof_end(s, TB_PHASE_EMBED, t_chunk, (uint64_t)n * m->tok_embd.row_bytes);
    s->fold_pending = false;     /* x is the embeddings; no slice output is pending */
    s->yp[0] = s->y;
    s->yp[1] = s->y2;

    /* ---- rope tables: [0] rope_base, [1] rope_base_swa ---- */
    for (int32_t t = 0; t < n; t++) {
        size_t o0 = (size_t)t * (size_t)half, o1 = ((size_t)s->p.n_batch + (size_t)t) * (size_t)half;
        tb_op_rope_table(s->rope_cs + o0, s->rope_sn + o0, s->pos + t, in->rope_dims, in->rope_base);
        tb_op_rope_table(s->rope_cs + o1, s->rope_sn + o1, s->pos + t, in->rope_dims, in->rope_base_swa);
    }

    /* ---- layers ---- */
    for (int32_t il = 0; il < in->n_layer;) {
        int32_t il1 = il;        /* a run of split layers: one pool run */
        while (il1 < in->n_layer && tb_split_ok(s, &m->layers[il1], n)) il1++;
        if (il1 > il) {
            tb_split_layers(s, il, il1);
            il = il1;
            continue;
        }
        tb_split_settle(s);
        attn_block(s, il, n);
        ffn_block(s, il, n);
        il++;
    }

    tb_split_settle(s);

    /* ---- output head ---- */
    if (!logits) {
        s->pos += n;
        if (s->prof_on) { s->prof.total_ns += tb_now_ns() - t_chunk; s->prof.tokens += (uint64_t)n; }
        return TB_OK;
    }
    const int32_t t0 = all_logits ? 0 : n - 1, nl = n - t0;
    s->head_stats.positions += (uint64_t)nl;
    if (s->p.head) {             /* approximate head (head.c), token by token */
        const uint64_t th = tb_prof_start(s);
        for (int32_t t = 0; t < nl; t++) {
            const float *xt = s->x + (t0 + t) * E;
            float *xn = s->xn + t * E;
            tb_op_norm_mul(xn, xt, tb_op_rms_inv(xt, E, in->norm_eps), m->output_norm, E);
            uint64_t rows = 0;
            tb_head_logits(s->p.head, s->pool, xn, &s->head_sc, logits + (size_t)t * (size_t)in->n_vocab, &rows);
            s->head_stats.rows += rows;
            s->head_stats.centroid_rows += (uint64_t)s->p.head->C;
        }
        tb_prof_end(s, TB_PHASE_OUTPUT, th, 0);
        s->pos += n;
        if (s->prof_on) { s->prof.total_ns += tb_now_ns() - t_chunk; s->prof.tokens += (uint64_t)n; }
        return TB_OK;
    }
    s->head_stats.rows += (uint64_t)nl * (uint64_t)in->n_vocab;
    tb_lin_pro_t pn = {.kind = TB_PRO_NORM, .x = s->x + t0 * E, .ld = E, .n_in = E, .n = nl,
                       .w = m->output_norm, .eps = in->norm_eps, .xn = s->xn};
    const tb_weight_t *w[1] = {&m->output};
    float *ys[1] = {logits};
    const int64_t ld[1] = {in->n_vocab};
    lin_multi(s, TB_PHASE_OUTPUT, &pn, w, ys, ld, NULL, 1, NULL);
    s->pos += n;
    if (s->prof_on) { s->prof.total_ns += tb_now_ns() - t_chunk; s->prof.tokens += (uint64_t)n; }
    return TB_OK;
}
