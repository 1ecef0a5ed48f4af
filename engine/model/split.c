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
 *      then softmax and top-k on thread 0 (tb_moe_route)
 *   E  its experts on R's quantized row: gate, up, SwiGLU, down, each
 *      expert whole; their weighted sum (tb_moe_experts_half)
 * For weights on f32 activations (F16, BF16, F32) "quantized" is "kept
 * in f32": the norm row in xn_own, the heads' outputs and h as they are.
 * Each pass's two outputs are folded into x, (x + y) + y2 as on every
 * other path, by the next prologue (or tb_split_settle), so the results
 * are bit-identical to them. Whether a layer can split is decided at load
 * (model.c, split_fits: it then has the slices).
 *
 * A run of split layers is one pool run (tb_split_layers): the caller
 * plans every pass first (which buffers each reads and writes), then both
 * threads go through the plan, each waiting before a pass only for the
 * other to be done with the previous one (split_run).
 */
#include "model/session.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

typedef enum { PASS_ATTN, PASS_FFN, PASS_ROUTER, PASS_EXPERTS } split_kind;
static_assert(PASS_ATTN == (int)TB_SPLIT_ATTN && PASS_FFN == (int)TB_SPLIT_FFN &&
              PASS_ROUTER == (int)TB_SPLIT_ROUTER && PASS_EXPERTS == (int)TB_SPLIT_EXPERTS,
              "a pass kind is its profile slot");

/* One pass of a token's plan (tb_split_layers), shared by both threads. */
typedef struct split_ctx {
    tb_session_t *s;
    const tb_layer_t *L;
    int32_t il;
    split_kind kind;
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
    /* fin[k]: thread k is done with the pass (after an R pass, thread 0
     * also routed) */
    struct { _Alignas(64) _Atomic int done; } fin[2];
    /* split profile (s->split_prof_on): thread k's clock at the pass's
     * start, after its wait, after its prologue and at its end; then at
     * the end of its own rows (before attention or SwiGLU) and at the
     * start of its output slice (or of thread 0's routing) */
    struct { _Alignas(64) uint64_t t[6]; } clk[2];
} split_ctx;

#define SPLIT_CHUNK 128           /* output rows per claim, at least */

/* ===================================================================== */
/* Pieces                                                                 */
/* ===================================================================== */

/* Split profile: thread ith's stamps k0..k1 (clk: 0 pass start, 1 wait
 * over, 2 prologue done, 3 pass end, 4 own rows done, 5 output slice
 * starts) set to one clock read. */
static void split_stamp(split_ctx *c, int ith, int k0, int k1) {
    if (!c->s->split_prof_on) return;
    const uint64_t now = tb_now_ns();
    for (int k = k0; k <= k1; k++) c->clk[ith].t[k] = now;
}

/* The pass's prologue, on each thread for itself (no waiting, no shared
 * activation): each thread keeps its own copy of x in x_own (from s->x at
 * the start of the run, split_run), folds the previous pass's outputs into it in
 * place (both copies get the same bits), then RMSNorm and quantization of
 * it into its own activation row (f32 activations: RMSNorm into its own
 * xn_own row), by the same item code as the shared prologue, so the same
 * bytes. Returns that row. (A shared x, each thread writing its half, cost
 * each prologue the other half's lines from the other core.) */
static const void *split_prologue(split_ctx *c, int ith) {
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int64_t E = in->n_embd;
    float *xo = s->x_own + ith * E;                               /* (n_embd) */
    if (c->fold) tb_fold_rows(xo, xo, c->yin[0], c->yin[1], 0, E);   /* in place: xo is this thread's x */
    const bool f32 = tb_act_is_f32(c->wtype);
    float *xn = s->xn_own + ith * E;                              /* (n_embd) */
    void *a = (uint8_t *)s->act_own + (size_t)ith * s->act_bytes;
    tb_lin_pro_t p = {.kind = TB_PRO_NORM, .x = xo, .ld = E, .n_in = E, .n = 1, .w = c->norm_w,
                      .eps = in->norm_eps, .xn = c->keep_xn || f32 ? xn : NULL, .wtype = c->wtype,
                      .q = f32 ? NULL : a, .q_stride = f32 ? 0 : tb_act_row_bytes(c->wtype, E)};
    tb_lin_pro_items_run(&p, 0, tb_lin_pro_items(&p));
    split_stamp(c, ith, 2, 2);
    return f32 ? (const void *)xn : a;
}

/* Rows [r0, r1) of w on activation row a into y. */
static void split_rows(const tb_weight_t *w, const void *a, float *y, int64_t r0, int64_t r1) {
    const tb_lin_job_t j = {.w = w, .a = a, .n_tok = 1, .y = y, .ldy = w->n_out};
    tb_lin_rows(&j, r0, r1);
}

/* Rows of slice sl[k] over act[k] into yout[k], claimed a quarter of
 * what is left at a time (16-row units, SPLIT_CHUNK at least) until none
 * is left: the owner's first claims are long, so a slice of 2048 rows is
 * 9 kernel calls, not 16, and the other thread still finds short ones at
 * the end. (Paired against fixed chunks of 128: llama-1b TQ2_0 88.3 ->
 * 89.6 %, TQ1_0 78.9 -> 80.9 % of roofline in the high state, Q4_0 93.1
 * both.) */
static void split_claim_rows(split_ctx *c, const tb_weight_t *sl, int k) {
    const tb_weight_t *w = &sl[k];
    const int64_t n = w->n_out;
    int64_t r0 = atomic_load_explicit(&c->claim[k].next, memory_order_relaxed);
    while (r0 < n) {
        const int64_t r1 = TB_MIN(n, r0 + TB_MAX(SPLIT_CHUNK, (n - r0) / 4 / 16 * 16));
        if (!atomic_compare_exchange_weak_explicit(&c->claim[k].next, &r0, r1, memory_order_relaxed,
                                                   memory_order_relaxed))
            continue;
        split_rows(w, c->own[k].act, c->yout[k], r0, r1);
        r0 = atomic_load_explicit(&c->claim[k].next, memory_order_relaxed);
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

static void split_attn(split_ctx *c, int ith) {
    const void *xa = split_prologue(c, ith);
    tb_session_t *s = c->s;
    const tb_layer_t *L = c->L;
    const tb_model_info_t *in = &s->m->info;
    const int g0 = in->n_head_kv * ith / 2, g1 = in->n_head_kv * (ith + 1) / 2;
    const int64_t hd = in->head_dim, gq = (int64_t)(in->n_head / in->n_head_kv) * hd;
    split_rows(&L->wq, xa, s->q, g0 * gq, g1 * gq);
    split_rows(&L->wk, xa, s->k, g0 * hd, g1 * hd);
    split_rows(&L->wv, xa, s->v, g0 * hd, g1 * hd);
    split_stamp(c, ith, 4, 4);
    tb_attention_heads(s, c->il, g0, g1, ith);
    split_stamp(c, ith, 5, 5);
    assert(g0 * gq == (ith ? L->wo_cut : 0) && g1 * gq == (ith ? L->wo.n_in : L->wo_cut));
    split_out(c, ith, L->wo_sl, s->att, g0 * gq, g1 * gq);
}

static void split_ffn(split_ctx *c, int ith) {
    const void *xa = split_prologue(c, ith);
    tb_session_t *s = c->s;
    const tb_layer_t *L = c->L;
    const int64_t f0 = ith ? L->down_cut : 0, f1 = ith ? L->ffn_down.n_in : L->down_cut;
    split_rows(&L->ffn_gate, xa, s->ff_g, f0, f1);
    split_rows(&L->ffn_up, xa, s->ff_u, f0, f1);
    split_stamp(c, ith, 4, 4);
    tb_op_swiglu_for(tb_kernels()->isa)(s->ff_g + f0, s->ff_u + f0, f1 - f0, INFINITY);
    split_stamp(c, ith, 5, 5);
    split_out(c, ith, L->down_sl, s->ff_g, f0, f1);
}

/* R: the norm row (f32 for the router, quantized for the experts, each
 * thread its own) and this thread's half of the router logits (cut at a
 * 16-row unit). */
static void split_router(split_ctx *c, int ith) {
    split_prologue(c, ith);
    tb_session_t *s = c->s;
    const tb_weight_t *r = &c->L->router;
    const int64_t cut = r->n_out / 32 * 16;
    split_rows(r, s->xn_own + ith * s->m->info.n_embd, s->router, ith ? cut : 0, ith ? r->n_out : cut);
    split_stamp(c, ith, 4, 5);   /* no middle step, no output slice */
}

/* E: this thread's experts on the row its R prologue quantized. */
static void split_experts(split_ctx *c, int ith) {
    tb_session_t *s = c->s;
    tb_moe_experts_half(s, c->L, (const uint8_t *)s->act_own + (size_t)ith * s->act_bytes, c->yout[ith], ith);
    split_stamp(c, ith, 4, 5);   /* no middle step, no output slice */
}

/* ===================================================================== */
/* Layer                                                                  */
/* ===================================================================== */

bool tb_split_ok(const tb_session_t *s, const tb_layer_t *L, int32_t n) {
    return n == 1 && !s->prof_on && tb_pool_n_threads(s->pool) == 2 && L->wo_cut;
}

size_t tb_split_plan_bytes(const tb_model_info_t *in) {
    return (size_t)(in->n_expert > 0 ? 3 : 2) * (size_t)in->n_layer * sizeof(split_ctx);
}

/* Append one pass to the plan and move the session's pending outputs past
 * it, as if it had run: the prologue folds them into x when there are
 * some; `out`: the pass leaves two outputs to fold (yout), else nothing is
 * pending after it. */
static void plan_pass(tb_session_t *s, split_ctx *c, const tb_layer_t *L, int32_t il, split_kind kind,
                      const float *norm_w, tb_type_t wtype, bool out) {
    *c = (split_ctx){.s = s, .L = L, .il = il, .kind = kind, .norm_w = norm_w, .wtype = wtype,
                     .keep_xn = kind == PASS_ROUTER, .fold = s->fold_pending,
                     .yin = {s->yp[0], s->yp[1]}};
    const bool a = s->yp[0] == s->y;
    c->yout[0] = a ? s->y_b : s->y;
    c->yout[1] = a ? s->y2_b : s->y2;
    for (int k = 0; k < 2; k++) {
        atomic_init(&c->claim[k].next, 0);
        atomic_init(&c->own[k].ready, 0);
        atomic_init(&c->fin[k].done, 0);
    }
    s->fold_pending = out;
    if (out) {
        s->yp[0] = c->yout[0];
        s->yp[1] = c->yout[1];
    }
}

typedef struct split_plan {
    split_ctx *c;             /* (n) the passes in order */
    int n;
} split_plan;

static void wait_fin(const split_ctx *c, int k) {
    int spins = 0;
    while (!atomic_load_explicit(&c->fin[k].done, memory_order_acquire)) tb_spin_wait(&spins);
}

/* Thread ith's side of every pass of the plan, in order. Before a pass
 * it waits until the other thread is done with the one before (its fin
 * flag), which is all the pool's join and wake gave: those took 2-3 us of
 * every pass on its critical path (rdtsc in a /tmp copy, llama-1b TQ2_0,
 * two-chiplet state: the worker entered 0.6-1.4 us after the caller's
 * start, and 1.45 us passed between a pass's end and the next start), a
 * flag each way is one cache-line transfer. After an R pass thread 0
 * routes (tb_moe_route) once the other's router rows are in, before it
 * raises its own flag. */
static void split_run(void *arg, int ith, int nth) {
    const split_plan *P = arg;
    assert(nth == 2);
    (void)nth;
    tb_session_t *s = P->c[0].s;
    const int64_t E = s->m->info.n_embd;
    memcpy(s->x_own + ith * E, s->x, (size_t)E * sizeof *s->x);   /* this thread's x */
    for (int p = 0; p < P->n; p++) {
        split_ctx *c = &P->c[p];
        split_stamp(c, ith, 0, 0);
        if (p > 0) wait_fin(&P->c[p - 1], 1 - ith);
        split_stamp(c, ith, 1, 2);   /* 2: the prologue's end, if it has one */
        switch (c->kind) {
        case PASS_ATTN: split_attn(c, ith); break;
        case PASS_FFN: split_ffn(c, ith); break;
        case PASS_ROUTER: split_router(c, ith); break;
        case PASS_EXPERTS: split_experts(c, ith); break;
        }
        if (c->kind == PASS_ROUTER && ith == 0) {
            wait_fin(c, 1);
            tb_moe_route(c->s, 1);
        }
        split_stamp(c, ith, 3, 3);
        atomic_store_explicit(&c->fin[ith].done, 1, memory_order_release);
    }
}

/* The plan's clocks into the session's split profile (after the run: the
 * threads wrote them before their fin flags, which the caller's join saw). */
static void split_profile_add(tb_session_t *s, const split_plan *P) {
    tb_split_profile_t *sp = &s->split_prof;
    for (int p = 0; p < P->n; p++) {
        const split_ctx *c = &P->c[p];
        tb_split_stats_t *st = &sp->pass[c->kind];
        for (int k = 0; k < 2; k++) {
            const uint64_t *t = c->clk[k].t;
            assert(t[0] <= t[1] && t[1] <= t[2] && t[2] <= t[3]);
            st->wait_ns[k] += t[1] - t[0];
            st->prologue_ns[k] += t[2] - t[1];
            st->work_ns[k] += t[3] - t[2];
            assert(t[2] <= t[4] && t[4] <= t[5] && t[5] <= t[3]);
            st->rows_ns[k] += t[4] - t[2];
            st->out_ns[k] += t[3] - t[5];
            if (c->kind == PASS_ATTN) st->attn_ns[k] += t[5] - t[4];
        }
        const uint64_t e0 = c->clk[0].t[3], e1 = c->clk[1].t[3];
        st->skew_ns += e1 > e0 ? e1 - e0 : e0 - e1;
        st->passes++;
    }
    sp->runs++;
}

void tb_split_layers(tb_session_t *s, int32_t il0, int32_t il1) {
    const tb_model_info_t *in = &s->m->info;
    split_plan P = {.c = s->split_plan, .n = 0};
    assert(il1 <= in->n_layer);
    for (int32_t il = il0; il < il1; il++) {
        const tb_layer_t *L = &s->m->layers[il];
        plan_pass(s, &P.c[P.n++], L, il, PASS_ATTN, L->attn_norm, L->wq.type, true);
        if (in->n_expert > 0) {
            plan_pass(s, &P.c[P.n++], L, il, PASS_ROUTER, L->ffn_norm, L->gate_exps.type, false);
            plan_pass(s, &P.c[P.n++], L, il, PASS_EXPERTS, L->ffn_norm, L->gate_exps.type, true);
        } else {
            plan_pass(s, &P.c[P.n++], L, il, PASS_FFN, L->ffn_norm, L->ffn_gate.type, true);
        }
    }
    assert((size_t)P.n * sizeof(split_ctx) <= tb_split_plan_bytes(in));
    tb_pool_run(s->pool, split_run, &P);
    if (s->split_prof_on) split_profile_add(s, &P);
    /* x as of the last prologue (both threads hold it; the last outputs
     * stay pending) */
    memcpy(s->x, s->x_own, (size_t)in->n_embd * sizeof *s->x);
}

void tb_split_settle(tb_session_t *s) {
    if (!s->fold_pending) return;
    tb_fold_rows(s->x, s->x, s->yp[0], s->yp[1], 0, s->m->info.n_embd);
    s->fold_pending = false;
}
