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

/* True when weights of type t take f32 activations (no quantization). */
static bool act_is_f32(tb_type_t t) { return tb_type_traits(t)->vec_dot_type == TB_TYPE_F32; }

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
        p.q = act_is_f32(w[i]->type) ? NULL : s->act;
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

/* dst = (x + y) + y2 over elements [i0, i1): the one order in which every
 * path adds the two column slices' outputs to the residual stream. */
static void fold_rows(float *dst, const float *x, const float *y, const float *y2, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) dst[i] = (x[i] + y[i]) + y2[i];
}

static void fold_worker(void *arg, int ith, int nth) {
    const fold_ctx *c = arg;
    tb_session_t *s = c->s;
    const int64_t m = (int64_t)c->n * s->m->info.n_embd;
    fold_rows(s->x, s->x, s->y, s->y2, m * ith / nth, m * (ith + 1) / nth);
}

/* The two column slices' outputs (y, y2) into the residual stream, in the
 * order every path uses. One token: on the caller; a chunk: a pool pass. */
static void fold(tb_session_t *s, int32_t n) {
    if (n == 1) { fold_rows(s->x, s->x, s->y, s->y2, 0, s->m->info.n_embd); return; }
    fold_ctx c = {s, n};
    tb_pool_run(s->pool, fold_worker, &c);
}

/* ===================================================================== */
/* Split decode: two passes per dense layer on two threads                */
/* ===================================================================== */

/* Thread s of 2 owns kv heads [s n_kv / 2, (s + 1) n_kv / 2), Wo's column
 * slice s (exactly those heads' outputs) and down's column slice s (the
 * rows of gate and up it computes itself), so within a pass it needs no
 * activation the other thread made:
 *   A  x folded and xn = rmsnorm(x) quantized (split_prologue, each thread
 *      for itself); its Q, K, V rows; attention of its kv heads; its heads'
 *      outputs quantized; Wo_s . att_s
 *   B  the same prologue; its gate and up rows; SwiGLU and quantization of
 *      its half; down_s . h_s
 * Each pass's two slice outputs are folded into x, (x + y) + y2 as on every
 * other path, by the next prologue (or split_settle), so the results are
 * bit-identical to them. Whether a layer can split is decided at load
 * (model.c, split_fits: it then has the slices). */
typedef struct split_ctx {
    tb_session_t *s;
    const tb_layer_t *L;
    int32_t il;
    const float *norm_w;      /* this pass's RMSNorm weight        */
    tb_type_t wtype;          /* the format its activation feeds   */
    bool fold;                /* x is short of (+ yin[0]) + yin[1] */
    float *yin[2];            /* the previous pass's slice outputs (read in the prologue) */
    float *yout[2];           /* this pass's: the other pair, as the other thread may
                                 still be reading yin while this one writes           */
} split_ctx;

/* The pass's prologue, on each thread for itself (no waiting, no shared
 * activation): x' = fold(x) into this thread's x_own (its half also into
 * x_alt, which becomes x after the pass), then RMSNorm and quantization of
 * x' into its own activation row, by the same item code as the shared
 * prologue, so the same bytes. Returns that row. */
static const void *split_prologue(split_ctx *c, int ith, int nth) {
    assert(nth == 2);
    (void)nth;
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int64_t E = in->n_embd;
    float *xo = s->x_own + ith * E;                               /* (n_embd) */
    if (c->fold) {
        fold_rows(xo, s->x, c->yin[0], c->yin[1], 0, E);
        const int64_t r0 = E * ith / 2, r1 = E * (ith + 1) / 2;
        memcpy(s->x_alt + r0, xo + r0, (size_t)(r1 - r0) * sizeof *xo);
    } else {
        memcpy(xo, s->x, (size_t)E * sizeof *xo);
    }
    void *a = (uint8_t *)s->act_own + (size_t)ith * s->act_bytes;
    tb_lin_pro_t p = {.kind = TB_PRO_NORM, .x = xo, .ld = E, .n_in = E, .n = 1, .w = c->norm_w,
                      .eps = in->norm_eps, .wtype = c->wtype, .q = a, .q_stride = tb_act_row_bytes(c->wtype, E)};
    tb_lin_pro_items_run(&p, 0, tb_lin_pro_items(&p));
    return a;
}

/* Rows [r0, r1) of w on activation row a into y. */
static void split_rows(const tb_weight_t *w, const void *a, float *y, int64_t r0, int64_t r1) {
    const tb_lin_job_t j = {.w = w, .a = a, .n_tok = 1, .y = y, .ldy = w->n_out};
    tb_lin_rows(&j, r0, r1);
}

/* Thread ith's columns [c0, c1) of src (its own half of the activation)
 * quantized, at their place in its own activation row (whose norm row its
 * rows have read by now), and column slice sl[ith] over them into its
 * output. */
static void split_out(split_ctx *c, int ith, const tb_weight_t *sl, const float *src, int64_t c0, int64_t c1) {
    const tb_type_t t = sl[ith].type;
    uint8_t *qa = (uint8_t *)c->s->act_own + (size_t)ith * c->s->act_bytes + tb_act_row_bytes(t, c0);
    tb_kernels()->t[t].quantize_act(src + c0, qa, c1 - c0);
    split_rows(&sl[ith], qa, c->yout[ith], 0, sl[ith].n_out);
}

static void split_attn_worker(void *arg, int ith, int nth) {
    split_ctx *c = arg;
    const void *xa = split_prologue(c, ith, nth);
    tb_session_t *s = c->s;
    const tb_layer_t *L = c->L;
    const tb_model_info_t *in = &s->m->info;
    const int g0 = in->n_head_kv * ith / 2, g1 = in->n_head_kv * (ith + 1) / 2;
    const int64_t hd = in->head_dim, gq = (int64_t)(in->n_head / in->n_head_kv) * hd;
    split_rows(&L->wq, xa, s->q, g0 * gq, g1 * gq);
    split_rows(&L->wk, xa, s->k, g0 * hd, g1 * hd);
    split_rows(&L->wv, xa, s->v, g0 * hd, g1 * hd);
    tb_attention_heads(s, c->il, g0, g1, ith);
    assert(g0 * gq == (ith ? L->wo_cut : 0) && g1 * gq == (ith ? L->wo.n_in : L->wo_cut));
    split_out(c, ith, L->wo_sl, s->att, g0 * gq, g1 * gq);
}

static void split_ffn_worker(void *arg, int ith, int nth) {
    split_ctx *c = arg;
    const void *xa = split_prologue(c, ith, nth);
    tb_session_t *s = c->s;
    const tb_layer_t *L = c->L;
    const int64_t f0 = ith ? L->down_cut : 0, f1 = ith ? L->ffn_down.n_in : L->down_cut;
    split_rows(&L->ffn_gate, xa, s->ff_g, f0, f1);
    split_rows(&L->ffn_up, xa, s->ff_u, f0, f1);
    tb_op_swiglu_for(tb_kernels()->isa)(s->ff_g + f0, s->ff_u + f0, f1 - f0, INFINITY);
    split_out(c, ith, L->down_sl, s->ff_g, f0, f1);
}

/* True when layer L's step runs split now: one token on 2 threads, not
 * profiling (its passes are per phase), and the layer has the slices. */
static bool split_ok(const tb_session_t *s, const tb_layer_t *L, int32_t n) {
    return n == 1 && !s->prof_on && tb_pool_n_threads(s->pool) == 2 && L->wo_cut;
}

/* One split pass: the prologue folds x when y, y2 are pending, and then x
 * is the buffer it wrote (x_alt). */
static void split_pass(tb_session_t *s, split_ctx *c, void (*fn)(void *, int, int)) {
    c->fold = s->fold_pending;
    c->yin[0] = s->yp[0];
    c->yin[1] = s->yp[1];
    const bool a = s->yp[0] == s->y;
    c->yout[0] = a ? s->y_b : s->y;
    c->yout[1] = a ? s->y2_b : s->y2;
    tb_pool_run(s->pool, fn, c);
    s->yp[0] = c->yout[0];
    s->yp[1] = c->yout[1];
    if (c->fold) {
        float *t = s->x;
        s->x = s->x_alt;
        s->x_alt = t;
    }
    s->fold_pending = true;
}

static void split_layer(tb_session_t *s, int32_t il) {
    const tb_layer_t *L = &s->m->layers[il];
    split_ctx c = {.s = s, .L = L, .il = il, .norm_w = L->attn_norm, .wtype = L->wq.type};
    split_pass(s, &c, split_attn_worker);
    c.norm_w = L->ffn_norm;
    c.wtype = L->ffn_gate.type;
    split_pass(s, &c, split_ffn_worker);
}

/* x = (x + y) + y2 when a split pass left it pending. */
static void split_settle(tb_session_t *s) {
    if (!s->fold_pending) return;
    fold_rows(s->x, s->x, s->yp[0], s->yp[1], 0, s->m->info.n_embd);
    s->fold_pending = false;
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
    if (L->wo_cut) {   /* x = (x + Wo_0 . att[0:cut]) + Wo_1 . att[cut:] */
        const tb_weight_t *wo[2] = {&L->wo_sl[0], &L->wo_sl[1]};
        float *yo[2] = {s->y, s->y2};
        const int64_t ldo[2] = {E, E}, c0[2] = {0, L->wo_cut};
        lin_multi(s, TB_PHASE_ATTN_OUT, &pq, wo, yo, ldo, NULL, 2, c0);
        fold(s, n);
        return;
    }
    const tb_weight_t *wo[1] = {&L->wo};
    float *yo[1] = {s->y}, *acc[1] = {s->x};
    const int64_t ldo[1] = {E};
    lin_multi(s, TB_PHASE_ATTN_OUT, &pq, wo, yo, ldo, acc, 1, NULL);
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
    if (L->down_cut) {   /* x = (x + Wd_0 . h[0:cut]) + Wd_1 . h[cut:] */
        const tb_weight_t *wd[2] = {&L->down_sl[0], &L->down_sl[1]};
        float *yd[2] = {s->y, s->y2};
        const int64_t ldd[2] = {E, E}, c0[2] = {0, L->down_cut};
        lin_multi(s, TB_PHASE_FFN_DOWN, &ps, wd, yd, ldd, NULL, 2, c0);
        fold(s, n);
        return;
    }
    const tb_weight_t *wd[1] = {&L->ffn_down};
    float *yd[1] = {s->y}, *acc[1] = {s->x};
    const int64_t ldd[1] = {E};
    lin_multi(s, TB_PHASE_FFN_DOWN, &ps, wd, yd, ldd, acc, 1, NULL);
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
    for (int32_t il = 0; il < in->n_layer; il++) {
        if (split_ok(s, &m->layers[il], n)) {
            split_layer(s, il);
            continue;
        }
        split_settle(s);
        attn_block(s, il, n);
        ffn_block(s, il, n);
    }

    split_settle(s);

    /* ---- output head ---- */
    if (!logits) {
        s->pos += n;
        if (s->prof_on) { s->prof.total_ns += tb_now_ns() - t_chunk; s->prof.tokens += (uint64_t)n; }
        return TB_OK;
    }
    const int32_t t0 = all_logits ? 0 : n - 1, nl = n - t0;
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
