/*
 * split.c — the split decode: a layer's decode step on N >= 2 threads in
 * few passes, each thread streaming its own share of the weights.
 *
 * The arithmetic is that of two halves, whatever N is: half h of 2 owns
 * kv heads [h n_kv / 2, (h + 1) n_kv / 2), Wo's column slice h (exactly
 * those heads' outputs) and, in a dense layer, down's column slice h (the
 * rows of gate and up it computes); in an MoE layer (N = 2 only), router
 * rows [h X / 2, (h + 1) X / 2) and the experts of ranks [h K / 2, ...)
 * whole. The threads form two groups, threads [0, N0) half 0 and
 * [N0, N) half 1 (N0 = ceil(N / 2)); a group's threads share its half's
 * heads (attention) or gate and up rows (FFN) in contiguous ranges. Within
 * a pass a group needs no activation the other group made, up to the
 * pass's last step (split_out: the output rows of both slices are shared
 * by all threads once each half's activation is ready):
 *   A  x folded and xn = rmsnorm(x) quantized (split_prologue, by each
 *      group's first thread for its group); its Q, K, V rows; attention of
 *      its kv heads; the half's head outputs quantized (by the group's last
 *      thread to get there); Wo_h . att_h
 *   dense layer:
 *   B  the same prologue; its gate and up rows; SwiGLU and quantization of
 *      the half (its last thread); down_h . h_h
 *   MoE layer:
 *   R  the same prologue (the norm row also kept in f32); its router rows;
 *      then softmax and top-k on thread 0 (tb_moe_route)
 *   E  its experts on R's quantized row: gate, up, SwiGLU, down, each
 *      expert whole; their weighted sum (tb_moe_experts_half)
 * For weights on f32 activations (F16, BF16, F32) "quantized" is "kept
 * in f32": the norm row in xn_own, the heads' outputs and h as they are.
 * Each pass's two outputs are folded into x, (x + y) + y2 as on every
 * other path, by the next prologue (or tb_split_settle), so the results
 * are bit-identical to them for every N: every row is one kernel call on
 * the same bytes, and every step over a half (SwiGLU, quantization) is
 * one call over the whole half, whichever thread makes it. Whether a layer
 * can split is decided at load (model.c, split_fits: it then has the
 * slices).
 *
 * A run of split layers is one pool run (tb_split_layers): the caller
 * plans every pass first (which buffers each reads and writes), then all
 * threads go through the plan, each waiting before a pass only for every
 * thread to be done with the previous one (split_run).
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

/* One pass of a token's plan (tb_split_layers), shared by all threads.
 * Indices h below are halves (thread groups), not threads. */
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
    float *yout[2];           /* this pass's: the other pair, as another thread may
                                 still be reading yin while this one writes           */
    /* the pass's last step, column slice h over its activation: its rows
     * are claimed in chunks from claim[h] by any thread once ready[h] says
     * act[h] is written (by the last of group h's threads to arrive[h]);
     * pro[h]: group h's prologue (its first thread's) is done */
    struct { _Alignas(64) _Atomic int64_t next; } claim[2];
    struct { _Alignas(64) _Atomic int ready; _Atomic int arrive; _Atomic int pro; const void *act; } own[2];
    /* threads done with the pass (after an R pass, thread 0 also routed) */
    struct { _Alignas(64) _Atomic int done; } fin;
    /* split profile (s->split_prof_on): group h's first thread's clock at
     * the pass's start, after its wait, after its prologue and at its end;
     * then at the end of its own rows (before attention or SwiGLU) and at
     * the start of its output slice (or of thread 0's routing) */
    struct { _Alignas(64) uint64_t t[6]; } clk[2];
} split_ctx;

/* Thread ith of nth: its group (half) h, its rank in the group and the
 * group's size. */
typedef struct split_who {
    int h, rank, size;
} split_who;

static split_who split_who_of(int ith, int nth) {
    const int n0 = (nth + 1) / 2;
    return ith < n0 ? (split_who){0, ith, n0} : (split_who){1, ith - n0, nth - n0};
}

/* Share `rank` of `size` of [b0, b1) in units of u (the last share takes
 * the remainder): [*r0, *r1). */
static void split_share(int64_t b0, int64_t b1, int64_t u, int rank, int size, int64_t *r0, int64_t *r1) {
    const int64_t nu = (b1 - b0) / u;
    *r0 = b0 + u * (nu * rank / size);
    *r1 = rank + 1 == size ? b1 : b0 + u * (nu * (rank + 1) / size);
}

#define SPLIT_CHUNK 128           /* output rows per claim, at least */

/* ===================================================================== */
/* Pieces                                                                 */
/* ===================================================================== */

/* Split profile: stamps k0..k1 of group w.h (clk: 0 pass start, 1 wait
 * over, 2 prologue done, 3 pass end, 4 own rows done, 5 output slice
 * starts) set to one clock read, by the group's first thread only. */
static void split_stamp(split_ctx *c, split_who w, int k0, int k1) {
    if (!c->s->split_prof_on || w.rank) return;
    const uint64_t now = tb_now_ns();
    for (int k = k0; k <= k1; k++) c->clk[w.h].t[k] = now;
}

/* The pass's prologue, by each group's first thread for its group (no
 * shared activation between groups): each group keeps its own copy of x
 * in x_own (from s->x at the start of the run, split_run), folds the
 * previous pass's outputs into it in place (both copies get the same
 * bits), then RMSNorm and quantization of it into the group's activation
 * row (f32 activations: RMSNorm into its xn_own row), by the same item
 * code as the shared prologue, so the same bytes. The group's other
 * threads wait for it. Returns that row. (A shared x, each thread writing
 * its half, cost each prologue the other half's lines from the other
 * core.) */
static const void *split_prologue(split_ctx *c, split_who w) {
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int64_t E = in->n_embd;
    const bool f32 = tb_act_is_f32(c->wtype);
    float *xn = s->xn_own + w.h * E;                              /* (n_embd) */
    void *a = (uint8_t *)s->act_own + (size_t)w.h * s->act_bytes;
    if (w.rank == 0) {
        float *xo = s->x_own + w.h * E;                           /* (n_embd) */
        if (c->fold) tb_fold_rows(xo, xo, c->yin[0], c->yin[1], 0, E);   /* in place: xo is this group's x */
        tb_lin_pro_t p = {.kind = TB_PRO_NORM, .x = xo, .ld = E, .n_in = E, .n = 1, .w = c->norm_w,
                          .eps = in->norm_eps, .xn = c->keep_xn || f32 ? xn : NULL, .wtype = c->wtype,
                          .q = f32 ? NULL : a, .q_stride = f32 ? 0 : tb_act_row_bytes(c->wtype, E)};
        tb_lin_pro_items_run(&p, 0, tb_lin_pro_items(&p));
        atomic_store_explicit(&c->own[w.h].pro, 1, memory_order_release);
        split_stamp(c, w, 2, 2);
    } else {
        int spins = 0;
        while (!atomic_load_explicit(&c->own[w.h].pro, memory_order_acquire)) tb_spin_wait(&spins);
    }
    return f32 ? (const void *)xn : a;
}

/* Rows [r0, r1) of w on activation row a into y. */
static void split_rows(const tb_weight_t *w, const void *a, float *y, int64_t r0, int64_t r1) {
    if (r0 >= r1) return;
    const tb_lin_job_t j = {.w = w, .a = a, .n_tok = 1, .y = y, .ldy = w->n_out};
    tb_lin_rows(&j, r0, r1);
}

/* Rows of slice sl[k] over act[k] into yout[k], claimed a quarter of
 * what is left at a time (16-row units, SPLIT_CHUNK at least) until none
 * is left: the first claims are long, so a slice of 2048 rows is 9 kernel
 * calls, not 16, and the other threads still find short ones at the end.
 * (Paired against fixed chunks of 128 at 2 threads: llama-1b TQ2_0 88.3 ->
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

/* The pass's last step for a thread of group w.h, done with its share of
 * the half's rows: the group's last thread to get here makes the half's
 * activation, columns [c0, c1) of src (after SwiGLU over them first when
 * `swiglu`: src is then ff_g, with ff_u), quantized at their place in the
 * group's activation row (whose norm row every thread of the group has
 * read by now), or read in place on f32 activations. Then every thread
 * takes rows of column slice sl[h] over it and, as the two halves rarely
 * end together (the cores stream at different rates), rows of the other
 * slice that are still unclaimed, once the other half's activation is
 * ready. Every row is still one kernel call's on the same bytes, and the
 * half's SwiGLU and quantization one call each, so the outputs do not
 * depend on who computed them. */
static void split_out(split_ctx *c, int ith, split_who w, const tb_weight_t *sl, float *src, int64_t c0,
                      int64_t c1, bool swiglu) {
    tb_session_t *s = c->s;
    const int h = w.h;
    if (atomic_fetch_add_explicit(&c->own[h].arrive, 1, memory_order_acq_rel) == w.size - 1) {
        if (swiglu) tb_op_swiglu_for(tb_kernels()->isa)(src + c0, s->ff_u + c0, c1 - c0, INFINITY);
        const tb_type_t t = sl[h].type;
        const void *a = src + c0;                  /* f32 activations: the columns as they are */
        if (!tb_act_is_f32(t)) {
            uint8_t *qa = (uint8_t *)s->act_own + (size_t)h * s->act_bytes + tb_act_row_bytes(t, c0);
            tb_kernels()->t[t].quantize_act(src + c0, qa, c1 - c0);
            a = qa;
        }
        c->own[h].act = a;
        atomic_store_explicit(&c->own[h].ready, 1, memory_order_release);
    }
    int spins = 0;
    if (ith != 0 && s->split_yield)   /* test hook: thread 0 takes every row of both slices */
        while (atomic_load_explicit(&c->claim[0].next, memory_order_relaxed) < sl[0].n_out ||
               atomic_load_explicit(&c->claim[1].next, memory_order_relaxed) < sl[1].n_out)
            tb_spin_wait(&spins);
    for (;;) {   /* own slice first, then the other's */
        bool left = false, took = false;
        for (int q = 0; q < 2 && !took; q++) {
            const int k = q ? 1 - h : h;
            if (atomic_load_explicit(&c->claim[k].next, memory_order_relaxed) >= sl[k].n_out) continue;
            left = true;
            if (atomic_load_explicit(&c->own[k].ready, memory_order_acquire)) {
                split_claim_rows(c, sl, k);
                took = true;
            }
        }
        if (!left) return;
        if (!took) tb_spin_wait(&spins);
    }
}

/* ===================================================================== */
/* Pass workers                                                           */
/* ===================================================================== */

/* A: the group's share of its half's kv heads (whole heads, contiguous). */
static void split_attn(split_ctx *c, int ith, split_who w) {
    const void *xa = split_prologue(c, w);
    tb_session_t *s = c->s;
    const tb_layer_t *L = c->L;
    const tb_model_info_t *in = &s->m->info;
    const int64_t hk0 = in->n_head_kv * w.h / 2, hk1 = in->n_head_kv * (w.h + 1) / 2;
    int64_t g0, g1;
    split_share(hk0, hk1, 1, w.rank, w.size, &g0, &g1);
    const int64_t hd = in->head_dim, gq = (int64_t)(in->n_head / in->n_head_kv) * hd;
    split_rows(&L->wq, xa, s->q, g0 * gq, g1 * gq);
    split_rows(&L->wk, xa, s->k, g0 * hd, g1 * hd);
    split_rows(&L->wv, xa, s->v, g0 * hd, g1 * hd);
    split_stamp(c, w, 4, 4);
    if (g0 < g1) tb_attention_heads(s, c->il, (int)g0, (int)g1, ith);
    split_stamp(c, w, 5, 5);
    assert(hk0 * gq == (w.h ? L->wo_cut : 0) && hk1 * gq == (w.h ? L->wo.n_in : L->wo_cut));
    split_out(c, ith, w, L->wo_sl, s->att, hk0 * gq, hk1 * gq, false);
}

/* B: the group's share of its half's gate and up rows (16-row units). */
static void split_ffn(split_ctx *c, int ith, split_who w) {
    const void *xa = split_prologue(c, w);
    tb_session_t *s = c->s;
    const tb_layer_t *L = c->L;
    const int64_t f0 = w.h ? L->down_cut : 0, f1 = w.h ? L->ffn_down.n_in : L->down_cut;
    int64_t r0, r1;
    split_share(f0, f1, 16, w.rank, w.size, &r0, &r1);
    split_rows(&L->ffn_gate, xa, s->ff_g, r0, r1);
    split_rows(&L->ffn_up, xa, s->ff_u, r0, r1);
    split_stamp(c, w, 4, 5);   /* SwiGLU: the half's, in split_out */
    split_out(c, ith, w, L->down_sl, s->ff_g, f0, f1, true);
}

/* R (2 threads: a group is one thread): the norm row (f32 for the router,
 * quantized for the experts, each thread its own) and this thread's half
 * of the router logits (cut at a 16-row unit). */
static void split_router(split_ctx *c, split_who w) {
    split_prologue(c, w);
    tb_session_t *s = c->s;
    const tb_weight_t *r = &c->L->router;
    const int64_t cut = r->n_out / 32 * 16;
    split_rows(r, s->xn_own + w.h * s->m->info.n_embd, s->router, w.h ? cut : 0, w.h ? r->n_out : cut);
    split_stamp(c, w, 4, 5);   /* no middle step, no output slice */
}

/* E (2 threads): this thread's experts on the row its R prologue
 * quantized. */
static void split_experts(split_ctx *c, split_who w) {
    tb_session_t *s = c->s;
    tb_moe_experts_half(s, c->L, (const uint8_t *)s->act_own + (size_t)w.h * s->act_bytes, c->yout[w.h], w.h);
    split_stamp(c, w, 4, 5);   /* no middle step, no output slice */
}

/* ===================================================================== */
/* Layer                                                                  */
/* ===================================================================== */

bool tb_split_ok(const tb_session_t *s, const tb_layer_t *L, int32_t n) {
    const int nth = tb_pool_n_threads(s->pool);
    return n == 1 && !s->prof_on && L->wo_cut && (s->m->info.n_expert > 0 ? nth == 2 : nth >= 2);
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
        atomic_init(&c->own[k].arrive, 0);
        atomic_init(&c->own[k].pro, 0);
    }
    atomic_init(&c->fin.done, 0);
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

/* Wait until n threads are done with pass c. */
static void wait_fin(const split_ctx *c, int n) {
    int spins = 0;
    while (atomic_load_explicit(&c->fin.done, memory_order_acquire) < n) tb_spin_wait(&spins);
}

/* Thread ith's side of every pass of the plan, in order. Before a pass
 * it waits until every thread is done with the one before (the fin
 * count), which is all the pool's join and wake gave: those took 2-3 us of
 * every pass on its critical path (rdtsc in a /tmp copy, llama-1b TQ2_0,
 * two-chiplet state: the worker entered 0.6-1.4 us after the caller's
 * start, and 1.45 us passed between a pass's end and the next start), a
 * count is one cache line. After an R pass thread 0 routes
 * (tb_moe_route) once the other's router rows are in, before it counts
 * itself. */
static void split_run(void *arg, int ith, int nth) {
    const split_plan *P = arg;
    assert(nth >= 2);
    tb_session_t *s = P->c[0].s;
    const split_who w = split_who_of(ith, nth);
    assert(s->m->info.n_expert == 0 || nth == 2);
    const int64_t E = s->m->info.n_embd;
    if (w.rank == 0) memcpy(s->x_own + w.h * E, s->x, (size_t)E * sizeof *s->x);   /* this group's x */
    for (int p = 0; p < P->n; p++) {
        split_ctx *c = &P->c[p];
        split_stamp(c, w, 0, 0);
        if (p > 0) wait_fin(&P->c[p - 1], nth);
        split_stamp(c, w, 1, 2);   /* 2: the prologue's end, if it has one */
        switch (c->kind) {
        case PASS_ATTN: split_attn(c, ith, w); break;
        case PASS_FFN: split_ffn(c, ith, w); break;
        case PASS_ROUTER: split_router(c, w); break;
        case PASS_EXPERTS: split_experts(c, w); break;
        }
        if (c->kind == PASS_ROUTER && ith == 0) {
            wait_fin(c, nth - 1);
            tb_moe_route(c->s, 1);
        }
        split_stamp(c, w, 3, 3);
        atomic_fetch_add_explicit(&c->fin.done, 1, memory_order_release);
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
    /* x as of the last prologue (both groups hold it; the last outputs
     * stay pending) */
    memcpy(s->x, s->x_own, (size_t)in->n_embd * sizeof *s->x);
}

void tb_split_settle(tb_session_t *s) {
    if (!s->fold_pending) return;
    tb_fold_rows(s->x, s->x, s->yp[0], s->yp[1], 0, s->m->info.n_embd);
    s->fold_pending = false;
}
