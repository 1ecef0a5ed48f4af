/*
 * split.c — the split decode: a layer's decode step on N >= 2 threads in
 * few passes, with few waits between them.
 *
 * The arithmetic is that of two halves, whatever N is: half h of 2 owns
 * kv heads [h n_kv / 2, (h + 1) n_kv / 2), Wo's column slice h (exactly
 * those heads' outputs) and, in a dense layer, down's column slice h (the
 * rows of gate and up it computes); in an MoE layer (N = 2 only: thread h
 * is half h), router rows [h X / 2, (h + 1) X / 2) and the experts of
 * ranks [h K / 2, ...) whole. Threads [0, ceil(N / 2)) work on half 0
 * first, the others on half 1, then on what is left of the other half.
 * Within a pass a half needs no activation the other half made, up to
 * the pass's last step (the output rows of both slices, claimed by every
 * thread once each half's activation is ready):
 *   A  x folded and xn = rmsnorm(x) quantized (split_prologue, once per
 *      half by the first thread to need it); the half's kv heads, claimed
 *      one at a time: a head's Q, K, V rows and attention; the half's head
 *      outputs quantized (by the thread that completes its last head);
 *      Wo_h . att_h
 *   dense layer:
 *   B  the same prologue; the half's gate and up rows, claimed in chunks;
 *      SwiGLU and quantization of the half (by the thread that completes
 *      its last chunk); down_h . h_h
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
 * one call over the whole half, whichever thread makes it. As the work is
 * claimed, a thread that is late (descheduled, or on a slower core) holds
 * a pass up only by what it has claimed. Whether a layer can split is
 * decided at load (model.c, split_fits: it then has the slices).
 *
 * A run of split layers is one pool run (tb_split_layers): the caller
 * plans every pass first (which buffers each reads and writes), then all
 * threads go through the plan, each waiting before a pass only for the
 * one before to be complete (split_run).
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
 * Indices h below are halves, not threads. */
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
    int64_t n_units[2];       /* A, B: half h's kv heads / gate-up chunks        */
    int64_t n_rows[2];        /* A, B: rows of output slice h                    */
    /* per half h: pro 0 / 1 / 2: its prologue not started / under way / done
     * (by the first thread to need it); its first-stage units (a kv head's
     * Q, K, V rows and attention, or a chunk of gate and up rows) claimed
     * from unit and counted in unit_done; the thread that completes the
     * last one makes the half's activation act and sets ready; then the
     * rows of output slice h are claimed from claim by any thread and
     * counted in rows_done. A pass is complete when both slices' rows are
     * (A, B), or when all threads counted themselves in fin (R, E). */
    struct {
        _Alignas(64) _Atomic int pro;
        _Atomic int64_t unit, unit_done;
        _Alignas(64) _Atomic int ready;
        const void *act;
        _Alignas(64) _Atomic int64_t claim;
        _Alignas(64) _Atomic int64_t rows_done;
    } half[2];
    struct { _Alignas(64) _Atomic int done; } fin;
    /* split profile (s->split_prof_on): thread h's (h = 0: thread 0, h = 1:
     * the first thread of the second group) clock at the pass's start,
     * after its wait, after its half's prologue and at its end; then at
     * the end of its first-stage units (before attention or SwiGLU) and at
     * the start of its output rows (or of thread 0's routing) */
    struct { _Alignas(64) uint64_t t[6]; } clk[2];
} split_ctx;

/* Thread ith of nth: its half h (threads [0, ceil(nth / 2)) prefer half
 * 0, the others half 1) and whether it stamps the split profile. */
typedef struct split_who {
    int h;
    bool stamps;
} split_who;

static split_who split_who_of(int ith, int nth) {
    const int n0 = (nth + 1) / 2;
    return (split_who){ith >= n0, ith == 0 || ith == n0};
}

#define SPLIT_CHUNK 128           /* output rows per claim, at least */
#define SPLIT_FFN_UNIT 64         /* gate and up rows per first-stage unit of B */

/* ===================================================================== */
/* Pieces                                                                 */
/* ===================================================================== */

/* Split profile: stamps k0..k1 of w.h (clk: 0 pass start, 1 wait over,
 * 2 prologue done, 3 pass end, 4 first stage done, 5 output rows start)
 * set to one clock read, by the stamping threads only. */
static void split_stamp(split_ctx *c, split_who w, int k0, int k1) {
    if (!c->s->split_prof_on || !w.stamps) return;
    const uint64_t now = tb_now_ns();
    for (int k = k0; k <= k1; k++) c->clk[w.h].t[k] = now;
}

/* Half h's prologue, made once by the first thread to need it (the others
 * wait for it): half h keeps its own copy of x in x_own (from s->x at the
 * start of the run, split_run), folds the previous pass's outputs into it
 * in place (both copies get the same bits), then RMSNorm and quantization
 * of it into the half's activation row (f32 activations: RMSNorm into its
 * xn_own row), by the same item code as the shared prologue, so the same
 * bytes. Returns that row. (A shared x, each thread writing its part,
 * cost each prologue the other half's lines from the other cores.) */
static const void *split_prologue(split_ctx *c, int h) {
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int64_t E = in->n_embd;
    const bool f32 = tb_act_is_f32(c->wtype);
    float *xn = s->xn_own + h * E;                                /* (n_embd) */
    void *a = (uint8_t *)s->act_own + (size_t)h * s->act_bytes;
    int st = 0;
    if (atomic_compare_exchange_strong_explicit(&c->half[h].pro, &st, 1, memory_order_acquire,
                                                memory_order_acquire)) {
        float *xo = s->x_own + h * E;                             /* (n_embd) */
        if (c->fold) tb_fold_rows(xo, xo, c->yin[0], c->yin[1], 0, E);   /* in place: xo is this half's x */
        tb_lin_pro_t p = {.kind = TB_PRO_NORM, .x = xo, .ld = E, .n_in = E, .n = 1, .w = c->norm_w,
                          .eps = in->norm_eps, .xn = c->keep_xn || f32 ? xn : NULL, .wtype = c->wtype,
                          .q = f32 ? NULL : a, .q_stride = f32 ? 0 : tb_act_row_bytes(c->wtype, E)};
        tb_lin_pro_items_run(&p, 0, tb_lin_pro_items(&p));
        atomic_store_explicit(&c->half[h].pro, 2, memory_order_release);
    } else {
        int spins = 0;
        while (atomic_load_explicit(&c->half[h].pro, memory_order_acquire) != 2) tb_spin_wait(&spins);
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
    int64_t r0 = atomic_load_explicit(&c->half[k].claim, memory_order_relaxed);
    while (r0 < n) {
        const int64_t r1 = TB_MIN(n, r0 + TB_MAX(SPLIT_CHUNK, (n - r0) / 4 / 16 * 16));
        if (!atomic_compare_exchange_weak_explicit(&c->half[k].claim, &r0, r1, memory_order_relaxed,
                                                   memory_order_relaxed))
            continue;
        split_rows(w, c->half[k].act, c->yout[k], r0, r1);
        atomic_fetch_add_explicit(&c->half[k].rows_done, r1 - r0, memory_order_release);
        r0 = atomic_load_explicit(&c->half[k].claim, memory_order_relaxed);
    }
}

/* First-stage unit u of half h (its prologue's row xa). A: kv head
 * hk0 + u: its Q, K and V rows and its attention (its ns added to
 * *attn_ns when not NULL). B: gate and up rows f0 + [u, u + 1) *
 * SPLIT_FFN_UNIT (cut at the half's end). */
static void split_unit(split_ctx *c, int ith, int h, const void *xa, int64_t u, uint64_t *attn_ns) {
    tb_session_t *s = c->s;
    const tb_layer_t *L = c->L;
    if (c->kind == PASS_ATTN) {
        const tb_model_info_t *in = &s->m->info;
        const int64_t g = in->n_head_kv * h / 2 + u;
        const int64_t hd = in->head_dim, gq = (int64_t)(in->n_head / in->n_head_kv) * hd;
        split_rows(&L->wq, xa, s->q, g * gq, (g + 1) * gq);
        split_rows(&L->wk, xa, s->k, g * hd, (g + 1) * hd);
        split_rows(&L->wv, xa, s->v, g * hd, (g + 1) * hd);
        const uint64_t t0 = attn_ns ? tb_now_ns() : 0;
        tb_attention_heads(s, c->il, (int)g, (int)g + 1, ith);
        if (attn_ns) *attn_ns += tb_now_ns() - t0;
    } else {
        const int64_t f0 = h ? L->down_cut : 0, f1 = h ? L->ffn_down.n_in : L->down_cut;
        const int64_t r0 = f0 + u * SPLIT_FFN_UNIT, r1 = TB_MIN(f1, r0 + SPLIT_FFN_UNIT);
        split_rows(&L->ffn_gate, xa, s->ff_g, r0, r1);
        split_rows(&L->ffn_up, xa, s->ff_u, r0, r1);
    }
}

/* Half h's activation, by the thread that completed its last unit: its
 * columns of the head outputs (A) or of SwiGLU(gate, up) (B, SwiGLU over
 * the half first) quantized at their place in the half's activation row
 * (whose norm row every unit has read by now), or read in place on f32
 * activations. One call over the whole half each, whoever makes it. */
static void split_half_act(split_ctx *c, int h) {
    tb_session_t *s = c->s;
    const tb_layer_t *L = c->L;
    const tb_model_info_t *in = &s->m->info;
    const bool attn = c->kind == PASS_ATTN;
    const int64_t gq = (int64_t)(in->n_head / in->n_head_kv) * in->head_dim;
    const int64_t c0 = attn ? in->n_head_kv * h / 2 * gq : (h ? L->down_cut : 0);
    const int64_t c1 = attn ? in->n_head_kv * (h + 1) / 2 * gq : (h ? L->ffn_down.n_in : L->down_cut);
    float *src = attn ? s->att : s->ff_g;
    assert(!attn || (c0 == (h ? L->wo_cut : 0) && c1 == (h ? L->wo.n_in : L->wo_cut)));
    if (!attn) tb_op_swiglu_for(tb_kernels()->isa)(src + c0, s->ff_u + c0, c1 - c0, INFINITY);
    const tb_type_t t = (attn ? L->wo_sl : L->down_sl)[h].type;
    const void *a = src + c0;                      /* f32 activations: the columns as they are */
    if (!tb_act_is_f32(t)) {
        uint8_t *qa = (uint8_t *)s->act_own + (size_t)h * s->act_bytes + tb_act_row_bytes(t, c0);
        tb_kernels()->t[t].quantize_act(src + c0, qa, c1 - c0);
        a = qa;
    }
    c->half[h].act = a;
    atomic_store_explicit(&c->half[h].ready, 1, memory_order_release);
}

/* Claim and run half h's first-stage units until none is left. */
static void split_units(split_ctx *c, int ith, int h, uint64_t *attn_ns) {
    const int64_t n = c->n_units[h];
    if (atomic_load_explicit(&c->half[h].unit, memory_order_relaxed) >= n) return;
    const void *xa = split_prologue(c, h);
    for (int64_t u; (u = atomic_fetch_add_explicit(&c->half[h].unit, 1, memory_order_relaxed)) < n;) {
        split_unit(c, ith, h, xa, u, attn_ns);
        if (atomic_fetch_add_explicit(&c->half[h].unit_done, 1, memory_order_acq_rel) == n - 1)
            split_half_act(c, h);
    }
}

/* ===================================================================== */
/* Pass workers                                                           */
/* ===================================================================== */

/* A or B on thread ith: the units of its half, then those left of the
 * other half (whose prologue it makes if no one has yet), then output
 * rows of its half's slice and of the other's, each once its activation
 * is ready, until every row is claimed. Which thread computes a row,
 * attention head or activation does not change its bytes. */
static void split_layer_pass(split_ctx *c, int ith, split_who w) {
    tb_session_t *s = c->s;
    const int h = w.h, o = 1 - h;
    split_prologue(c, h);
    split_stamp(c, w, 2, 2);
    const bool prof = s->split_prof_on && w.stamps;
    uint64_t attn_ns = 0;
    split_units(c, ith, h, prof ? &attn_ns : NULL);
    split_units(c, ith, o, prof ? &attn_ns : NULL);
    if (prof) {   /* 2..4: Q, K, V (gate, up) rows; 4..5: attention (all its heads') */
        c->clk[h].t[5] = tb_now_ns();
        c->clk[h].t[4] = c->clk[h].t[5] - attn_ns;
    }
    if (ith != 0 && s->split_yield) return;   /* test hook: thread 0 takes every output row */
    const tb_weight_t *sl = c->kind == PASS_ATTN ? c->L->wo_sl : c->L->down_sl;
    int spins = 0;
    for (;;) {   /* its own half's slice first, then the other's */
        bool left = false, took = false;
        for (int q = 0; q < 2 && !took; q++) {
            const int k = q ? o : h;
            if (atomic_load_explicit(&c->half[k].claim, memory_order_relaxed) >= sl[k].n_out) continue;
            left = true;
            if (atomic_load_explicit(&c->half[k].ready, memory_order_acquire)) {
                split_claim_rows(c, sl, k);
                took = true;
            }
        }
        if (!left) return;
        if (!took) tb_spin_wait(&spins);
    }
}

/* R (2 threads: a group is one thread): the norm row (f32 for the router,
 * quantized for the experts, each thread its own) and this thread's half
 * of the router logits (cut at a 16-row unit). */
static void split_router(split_ctx *c, split_who w) {
    split_prologue(c, w.h);
    split_stamp(c, w, 2, 2);
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
    const tb_model_info_t *in = &s->m->info;
    for (int k = 0; k < 2; k++) {
        atomic_init(&c->half[k].pro, 0);
        atomic_init(&c->half[k].unit, 0);
        atomic_init(&c->half[k].unit_done, 0);
        atomic_init(&c->half[k].ready, 0);
        c->half[k].act = NULL;
        atomic_init(&c->half[k].claim, 0);
        atomic_init(&c->half[k].rows_done, 0);
        if (kind == PASS_ATTN) {
            c->n_units[k] = in->n_head_kv * (k + 1) / 2 - in->n_head_kv * k / 2;
            c->n_rows[k] = L->wo_sl[k].n_out;
        } else if (kind == PASS_FFN) {
            const int64_t f = k ? L->ffn_down.n_in - L->down_cut : L->down_cut;
            c->n_units[k] = (f + SPLIT_FFN_UNIT - 1) / SPLIT_FFN_UNIT;
            c->n_rows[k] = L->down_sl[k].n_out;
        }
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

/* Wait until pass c is complete: every row of both output slices done
 * (A, B), or n threads counted in fin (R, E; also for R's routing). */
static void wait_fin(const split_ctx *c, int n) {
    int spins = 0;
    if (c->kind == PASS_ATTN || c->kind == PASS_FFN)
        while (atomic_load_explicit(&c->half[0].rows_done, memory_order_acquire) < c->n_rows[0] ||
               atomic_load_explicit(&c->half[1].rows_done, memory_order_acquire) < c->n_rows[1])
            tb_spin_wait(&spins);
    else
        while (atomic_load_explicit(&c->fin.done, memory_order_acquire) < n) tb_spin_wait(&spins);
}

/* Thread ith's side of every pass of the plan, in order. Before a pass
 * it waits until the one before is complete (its rows counted, or the fin
 * count), which is all the pool's join and wake gave: those took 2-3 us of
 * every pass on its critical path (rdtsc in a /tmp copy, llama-1b TQ2_0,
 * two-chiplet state: the worker entered 0.6-1.4 us after the caller's
 * start, and 1.45 us passed between a pass's end and the next start), a
 * count is one cache line; and a thread that is late (descheduled, or on
 * a slower core) holds up a pass only by what it has claimed. After an R pass thread 0 routes
 * (tb_moe_route) once the other's router rows are in, before it counts
 * itself. */
static void split_run(void *arg, int ith, int nth) {
    const split_plan *P = arg;
    assert(nth >= 2);
    const split_who w = split_who_of(ith, nth);
    assert(P->c[0].s->m->info.n_expert == 0 || nth == 2);
    for (int p = 0; p < P->n; p++) {
        split_ctx *c = &P->c[p];
        split_stamp(c, w, 0, 0);
        if (p > 0) wait_fin(&P->c[p - 1], nth);
        split_stamp(c, w, 1, 2);   /* 2: the prologue's end, if it has one */
        switch (c->kind) {
        case PASS_ATTN:
        case PASS_FFN: split_layer_pass(c, ith, w); break;
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
    for (int h = 0; h < 2; h++) memcpy(s->x_own + h * in->n_embd, s->x, (size_t)in->n_embd * sizeof *s->x);
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
