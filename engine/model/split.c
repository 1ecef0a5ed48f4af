/*
 * split.c — the split decode: a layer's decode step on two threads in few
 * passes, each thread streaming its own half of the weights.
 *
 * Thread s of 2 owns kv heads [s n_kv / 2, (s + 1) n_kv / 2), Wo's column
 * slice s (exactly those heads' outputs) and, in a dense layer, down's
 * column slice s (the rows of gate and up it computes itself); in an MoE
 * layer, router rows [s X / 2, (s + 1) X / 2) and the experts of ranks
 * [s K / 2, ...) whole. Within a pass a thread needs no activation the
 * other one made, up to the pass's last step (split_out: the output rows
 * of both slices are shared once both activations are ready):
 *   A  x folded and xn = rmsnorm(x) quantized (split_prologue, each thread
 *      for itself); its Q, K, V rows; attention of its kv heads; its heads'
 *      outputs quantized; Wo_s . att_s
 *   dense layer:
 *   B  the same prologue; its gate and up rows; SwiGLU and quantization of
 *      its half; down_s . h_s
 *   MoE layer:
 *   R  the same prologue (the norm row also kept in f32); its router rows;
 *      then softmax and top-k on the caller (tb_moe_route)
 *   E  its experts on R's quantized row: gate, up, SwiGLU, down, each
 *      expert whole; their weighted sum (tb_moe_experts_half)
 * For weights on f32 activations (F16, BF16, F32) "quantized" is "kept
 * in f32": the norm row in xn_own, the heads' outputs and h as they are.
 * Each pass's two outputs are folded into x, (x + y) + y2 as on every
 * other path, by the next prologue (or tb_split_settle), so the results
 * are bit-identical to them. Whether a layer can split is decided at load
 * (model.c, split_fits: it then has the slices).
 */
#include "model/session.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

typedef struct split_ctx {
    tb_session_t *s;
    const tb_layer_t *L;
    int32_t il;
    const float *norm_w;      /* this pass's RMSNorm weight        */
    tb_type_t wtype;          /* the format its activation feeds   */
    bool keep_xn;             /* the norm row is also kept in f32 (xn_own) */
    bool fold;                /* x is short of (+ yin[0]) + yin[1] */
    float *yin[2];            /* the previous pass's outputs (read in the prologue) */
    float *yout[2];           /* this pass's: the other pair, as the other thread may
                                 still be reading yin while this one writes           */
    /* the pass's last step, column slice k over its activation: its rows
     * are claimed in chunks from claim[k] by its owner and, once done with
     * its own, by the other thread (ready[k] says act[k] is written) */
    struct { _Alignas(64) _Atomic int64_t next; } claim[2];
    struct { _Alignas(64) _Atomic int ready; const void *act; } own[2];
} split_ctx;

#define SPLIT_CHUNK 128           /* output rows per claim */

/* ===================================================================== */
/* Pieces                                                                 */
/* ===================================================================== */

/* The pass's prologue, on each thread for itself (no waiting, no shared
 * activation): x' = fold(x) into this thread's x_own (its half also into
 * x_alt, which becomes x after the pass), then RMSNorm and quantization of
 * x' into its own activation row (f32 activations: RMSNorm into its own
 * xn_own row), by the same item code as the shared prologue, so the same
 * bytes. Returns that row. */
static const void *split_prologue(split_ctx *c, int ith, int nth) {
    assert(nth == 2);
    (void)nth;
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int64_t E = in->n_embd;
    float *xo = s->x_own + ith * E;                               /* (n_embd) */
    if (c->fold) {
        tb_fold_rows(xo, s->x, c->yin[0], c->yin[1], 0, E);
        const int64_t r0 = E * ith / 2, r1 = E * (ith + 1) / 2;
        memcpy(s->x_alt + r0, xo + r0, (size_t)(r1 - r0) * sizeof *xo);
    } else {
        memcpy(xo, s->x, (size_t)E * sizeof *xo);
    }
    const bool f32 = tb_act_is_f32(c->wtype);
    float *xn = s->xn_own + ith * E;                              /* (n_embd) */
    void *a = (uint8_t *)s->act_own + (size_t)ith * s->act_bytes;
    tb_lin_pro_t p = {.kind = TB_PRO_NORM, .x = xo, .ld = E, .n_in = E, .n = 1, .w = c->norm_w,
                      .eps = in->norm_eps, .xn = c->keep_xn || f32 ? xn : NULL, .wtype = c->wtype,
                      .q = f32 ? NULL : a, .q_stride = f32 ? 0 : tb_act_row_bytes(c->wtype, E)};
    tb_lin_pro_items_run(&p, 0, tb_lin_pro_items(&p));
    return f32 ? (const void *)xn : a;
}

/* Rows [r0, r1) of w on activation row a into y. */
static void split_rows(const tb_weight_t *w, const void *a, float *y, int64_t r0, int64_t r1) {
    const tb_lin_job_t j = {.w = w, .a = a, .n_tok = 1, .y = y, .ldy = w->n_out};
    tb_lin_rows(&j, r0, r1);
}

/* Rows of slice sl[k] over act[k] into yout[k], claimed SPLIT_CHUNK at a
 * time until none is left. */
static void split_claim_rows(split_ctx *c, const tb_weight_t *sl, int k) {
    const tb_weight_t *w = &sl[k];
    for (;;) {
        const int64_t r0 = atomic_fetch_add_explicit(&c->claim[k].next, SPLIT_CHUNK, memory_order_relaxed);
        if (r0 >= w->n_out) return;
        split_rows(w, c->own[k].act, c->yout[k], r0, TB_MIN(r0 + SPLIT_CHUNK, w->n_out));
    }
}

/* Thread ith's columns [c0, c1) of src (its own half of the activation)
 * quantized, at their place in its own activation row (whose norm row its
 * rows have read by now), or read in place on f32 activations, and column
 * slice sl[ith] over them into its output; then, as the two halves rarely
 * end together (the cores stream at different rates), it takes rows of the
 * other slice that are still unclaimed, once the other thread's activation
 * is ready. Every row is still one kernel call's on the same bytes, so the
 * outputs do not depend on who computed it. */
static void split_out(split_ctx *c, int ith, const tb_weight_t *sl, const float *src, int64_t c0, int64_t c1) {
    const tb_type_t t = sl[ith].type;
    const void *a = src + c0;                      /* f32 activations: the columns as they are */
    if (!tb_act_is_f32(t)) {
        uint8_t *qa = (uint8_t *)c->s->act_own + (size_t)ith * c->s->act_bytes + tb_act_row_bytes(t, c0);
        tb_kernels()->t[t].quantize_act(src + c0, qa, c1 - c0);
        a = qa;
    }
    c->own[ith].act = a;
    atomic_store_explicit(&c->own[ith].ready, 1, memory_order_release);
    int spins = 0;
    if (ith == 1 && c->s->split_yield)   /* test hook: thread 0 takes every row of both slices */
        while (atomic_load_explicit(&c->claim[1].next, memory_order_relaxed) < sl[1].n_out) tb_spin_wait(&spins);
    split_claim_rows(c, sl, ith);
    const int o = 1 - ith;
    while (atomic_load_explicit(&c->claim[o].next, memory_order_relaxed) < sl[o].n_out) {
        if (atomic_load_explicit(&c->own[o].ready, memory_order_acquire)) {
            split_claim_rows(c, sl, o);
            return;
        }
        tb_spin_wait(&spins);
    }
}

/* ===================================================================== */
/* Pass workers                                                           */
/* ===================================================================== */

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

/* R: the norm row (f32 for the router, quantized for the experts, each
 * thread its own) and this thread's half of the router logits (cut at a
 * 16-row unit). */
static void split_router_worker(void *arg, int ith, int nth) {
    split_ctx *c = arg;
    split_prologue(c, ith, nth);
    tb_session_t *s = c->s;
    const tb_weight_t *r = &c->L->router;
    const int64_t cut = r->n_out / 32 * 16;
    split_rows(r, s->xn_own + ith * s->m->info.n_embd, s->router, ith ? cut : 0, ith ? r->n_out : cut);
}

/* E: this thread's experts on the row its R prologue quantized. */
static void split_experts_worker(void *arg, int ith, int nth) {
    split_ctx *c = arg;
    assert(nth == 2);
    (void)nth;
    tb_session_t *s = c->s;
    tb_moe_experts_half(s, c->L, (const uint8_t *)s->act_own + (size_t)ith * s->act_bytes, c->yout[ith], ith);
}

/* ===================================================================== */
/* Layer                                                                  */
/* ===================================================================== */

bool tb_split_ok(const tb_session_t *s, const tb_layer_t *L, int32_t n) {
    return n == 1 && !s->prof_on && tb_pool_n_threads(s->pool) == 2 && L->wo_cut;
}

/* One split pass: the prologue folds x when outputs are pending, and then
 * x is the buffer it wrote (x_alt); `out`: the pass leaves two outputs to
 * fold (yout), else nothing is pending after it. */
static void split_pass(tb_session_t *s, split_ctx *c, void (*fn)(void *, int, int), bool out) {
    c->fold = s->fold_pending;
    c->yin[0] = s->yp[0];
    c->yin[1] = s->yp[1];
    const bool a = s->yp[0] == s->y;
    c->yout[0] = a ? s->y_b : s->y;
    c->yout[1] = a ? s->y2_b : s->y2;
    for (int k = 0; k < 2; k++) {
        atomic_init(&c->claim[k].next, 0);
        atomic_init(&c->own[k].ready, 0);
    }
    tb_pool_run(s->pool, fn, c);
    if (c->fold) {
        float *t = s->x;
        s->x = s->x_alt;
        s->x_alt = t;
    }
    s->fold_pending = out;
    if (out) {
        s->yp[0] = c->yout[0];
        s->yp[1] = c->yout[1];
    }
}

void tb_split_layer(tb_session_t *s, int32_t il) {
    const tb_layer_t *L = &s->m->layers[il];
    split_ctx c = {.s = s, .L = L, .il = il, .norm_w = L->attn_norm, .wtype = L->wq.type};
    split_pass(s, &c, split_attn_worker, true);
    c.norm_w = L->ffn_norm;
    if (s->m->info.n_expert > 0) {
        c.wtype = L->gate_exps.type;
        c.keep_xn = true;
        split_pass(s, &c, split_router_worker, false);
        tb_moe_route(s, 1);
        split_pass(s, &c, split_experts_worker, true);
        return;
    }
    c.wtype = L->ffn_gate.type;
    split_pass(s, &c, split_ffn_worker, true);
}

void tb_split_settle(tb_session_t *s) {
    if (!s->fold_pending) return;
    tb_fold_rows(s->x, s->x, s->yp[0], s->yp[1], 0, s->m->info.n_embd);
    s->fold_pending = false;
}
