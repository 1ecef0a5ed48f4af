/*
 * moe.c — mixture-of-experts FFN: router, expert grouping, expert MLPs.
 *
 *   router   p = softmax(W_r · x) in f32 over all experts; top-k (ties: the
 *            lower expert id); weights renormalised to sum to 1.
 *   experts  h = silu(min(g, c)) * clamp(u, -c, c) with g = W_gate·x,
 *            u = W_up·x (c = +inf: plain SwiGLU); the weighted outputs
 *            w_k · W_down_k·h_k summed in top-k rank order in two halves,
 *            x = (x + Σ_{k < K/2}) + Σ_{k >= K/2}, the order of every path
 *            (the split decode gives each thread one half).
 *
 * The routed (token, slot) pairs are sorted by expert ("routed rows"), so
 * each active expert sees one contiguous group of token rows. Passes:
 *   1  rmsnorm + quantization of the input (prologue), router logits;
 *      then softmax/top-k on the caller (cheap);
 *   2  gate and up of all active experts (matvec for a group of one, gemm
 *      otherwise);
 *   3  h = swiglu and its quantization (prologue), every expert's down
 *      projection; decode: each thread then combines its own output rows
 *      into x (router weights in the epilogue); prefill: a 4th pass sums
 *      the weighted outputs into x.
 * A decode step at 2 threads runs split instead where the layer allows
 * (split.c): each thread its half of the router rows, then its half of the
 * selected experts whole (tb_moe_experts_half).
 * The input is quantized once per token, not once per expert.
 */
#include "model/session.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

typedef struct moe_ctx {
    tb_session_t *s;
    const tb_layer_t *L;
    int32_t n, nr;
    tb_lin_pro_t pro;         /* SwiGLU + quantization of the routed rows */
    const void *h;            /* (nr, h_stride) down activations          */
    size_t h_stride;
    tb_lin_pro_claim_t claim;
    _Atomic int taken[TB_SCHED_MAX_THREADS];   /* decode down: share k claimed */
    tb_pass_clock_t *clk;     /* NULL unless profiling                   */
} moe_ctx;

/* ===================================================================== */
/* Router                                                                 */
/* ===================================================================== */

/* Top-k of p (n values) into sel/w (k), renormalised: descending p, ties
 * to the lower expert id (one insertion pass, O(n k)). */
static void route(const float *p, int n, int k, int32_t *sel, float *w) {
    int m = 0;                                   /* entries kept so far */
    for (int e = 0; e < n; e++) {
        if (m == k && !(p[e] > p[sel[k - 1]])) continue;
        int i = m < k ? m++ : k - 1;             /* drop the last when full */
        while (i > 0 && p[e] > p[sel[i - 1]]) { sel[i] = sel[i - 1]; i--; }
        sel[i] = e;
    }
    float sum = 0.0f;
    for (int i = 0; i < k; i++) sum += w[i] = p[sel[i]];
    for (int i = 0; i < k; i++) w[i] /= sum;
}

/* Softmax and top-k of the router logits s->router (n, n_expert) into
 * sel, sel_w; the routed rows sorted by expert: row_of, tok_of, and each
 * expert's first row in exp_off (n_expert + 1). On the caller;
 * O(n * n_expert * k). */
void tb_moe_route(tb_session_t *s, int32_t n) {
    const int X = s->m->info.n_expert, K = s->m->info.n_expert_used;
    int32_t *off = s->exp_off, *cur = s->exp_off + X + 1;   /* (n_expert + 1), (n_expert) */
    memset(off, 0, (size_t)(X + 1) * sizeof *off);
    for (int32_t t = 0; t < n; t++) {
        float *p = s->router + (int64_t)t * X;      /* (n_expert) */
        tb_op_softmax(p, X, 1.0f);
        route(p, X, K, s->sel + t * K, s->sel_w + t * K);
        for (int k = 0; k < K; k++) off[s->sel[t * K + k] + 1]++;
    }
    for (int e = 0; e < X; e++) { off[e + 1] += off[e]; cur[e] = off[e]; }
    for (int32_t t = 0; t < n; t++)
        for (int k = 0; k < K; k++) {
            int32_t r = cur[s->sel[t * K + k]]++;
            s->row_of[t * K + k] = r;
            s->tok_of[r] = t;
        }
}

/* ===================================================================== */
/* Combine                                                                */
/* ===================================================================== */

/* y[i] (0 when first) + w · d[i] for i in [i0, i1): one term of a half's
 * weighted sum, the one statement that adds it on every path. */
static void moe_add(float *y, const float *d, float w, bool first, int64_t i0, int64_t i1) {
    if (first)
        for (int64_t i = i0; i < i1; i++) y[i] = 0.0f + w * d[i];
    else
        for (int64_t i = i0; i < i1; i++) y[i] = y[i] + w * d[i];
}

/* y[i] = Σ_{k0 <= k < k1} w[t,k] · down_out[row_of[t,k], i] in rank order,
 * for i in [i0, i1): one half of a token's expert sum (tb_moe_ffn). */
static void moe_sum(const tb_session_t *s, float *y, int32_t t, int k0, int k1, int64_t i0, int64_t i1) {
    const int64_t E = s->m->info.n_embd;
    const int K = s->m->info.n_expert_used;
    if (k0 == k1)
        for (int64_t i = i0; i < i1; i++) y[i] = 0.0f;
    for (int k = k0; k < k1; k++) {
        const float *d = s->ed + (int64_t)s->row_of[t * K + k] * E;  /* (n_embd) */
        moe_add(y, d, s->sel_w[t * K + k], k == k0, i0, i1);
    }
}

/* x[t, i] = (x[t, i] + Σ_{k < K/2}) + Σ_{k >= K/2} of w[t,k] · down_out,
 * for i in [i0, i1) (y, y2 hold the two sums): the order of every path,
 * the split decode's (split.c) included, so all round identically. */
static void combine_rows(tb_session_t *s, int32_t t, int64_t i0, int64_t i1) {
    const int64_t E = s->m->info.n_embd;
    const int K = s->m->info.n_expert_used;
    float *y = s->y + (int64_t)t * E, *y2 = s->y2 + (int64_t)t * E, *x = s->x + (int64_t)t * E;
    moe_sum(s, y, t, 0, K / 2, i0, i1);
    moe_sum(s, y2, t, K / 2, K, i0, i1);
    tb_fold_rows(x, x, y, y2, i0, i1);
}

/* Prefill: combine per (token, 256-wide chunk). */
static void combine_worker(void *arg, int ith, int nth) {
    const moe_ctx *c = arg;
    tb_pass_clock_enter(c->clk, ith);
    const int64_t E = c->s->m->info.n_embd, ce = 256, nc = (E + ce - 1) / ce;
    const int64_t items = (int64_t)c->n * nc;
    for (int64_t it = items * ith / nth; it < items * (ith + 1) / nth; it++) {
        const int64_t c0 = (it % nc) * ce;
        combine_rows(c->s, (int32_t)(it / nc), c0, TB_MIN(E, c0 + ce));
    }
    tb_pass_clock_mark(c->clk, ith, TB_CLK_DONE);
}

/* Share sh of nth of the decode down pass: its 16-row-aligned output rows
 * of every selected expert's down matrix, combined into x. */
static void down1_share(moe_ctx *c, int sh, int nth) {
    tb_session_t *s = c->s;
    const int64_t E = s->m->info.n_embd;
    const int K = s->m->info.n_expert_used;
    const int64_t blocks = (E + 15) / 16;
    const int64_t r0 = TB_MIN(E, blocks * sh / nth * 16), r1 = TB_MIN(E, blocks * (sh + 1) / nth * 16);
    if (r0 >= r1) return;
    for (int k = 0; k < K; k++) {
        const int32_t r = s->row_of[k];
        const tb_lin_job_t j = {.w = &c->L->down_exps, .mat = (size_t)s->sel[k],
                                .a = (const uint8_t *)c->h + (size_t)r * c->h_stride,
                                .a_stride = c->h_stride, .n_tok = 1, .y = s->ed + (int64_t)r * E,
                                .ldy = E};
        tb_lin_rows(&j, r0, r1);
    }
    combine_rows(s, 0, r0, r1);
}

/* Decode (one token): SwiGLU prologue (claimed, so a late thread finds it
 * done), then each thread claims its own share (down1_share: a fixed
 * 16-row-aligned part of the output rows of every selected expert, combined
 * into x; no separate combine pass) and then any share nobody has taken,
 * so the caller finishes alone when the worker is late. Shares are not cut
 * finer: every claim restarts K expert streams, and claiming them (3/4,
 * then 3/16, ... of a share) measured 2.6 % slower than one claim per share
 * (maple-preview, ctx 512, 2 threads, reps alternating in one process). */
static void down1_worker(void *arg, int ith, int nth) {
    moe_ctx *c = arg;
    tb_pass_clock_mark(c->clk, ith, TB_CLK_ENTRY);
    tb_lin_pro_claim_run(&c->claim, &c->pro, nth);
    tb_pass_clock_mark(c->clk, ith, TB_CLK_ROWS);
    for (int i = 0; i < nth; i++) {
        const int sh = (ith + i) % nth;
        if (!atomic_exchange_explicit(&c->taken[sh], 1, memory_order_relaxed)) down1_share(c, sh, nth);
    }
    tb_pass_clock_mark(c->clk, ith, TB_CLK_DONE);
}

/* ===================================================================== */
/* Split decode (split.c): one thread's half of the experts               */
/* ===================================================================== */

size_t tb_moe_hq_stride(const tb_model_t *m) {
    size_t b = 0;
    for (int32_t il = 0; il < m->info.n_layer; il++) {
        const tb_weight_t *d = &m->layers[il].down_exps;
        if (d->data) b = TB_MAX(b, tb_act_row_bytes(d->type, d->n_in));
    }
    return (b + 63) & ~(size_t)63;
}

/* Thread ith of a 2-thread split decode (one token, routed by tb_moe_route):
 * experts of ranks [ith K/2 ...) (ith 0: [0, K/2), 1: [K/2, K)), each
 * streamed whole on this thread: gate and up rows on xa (the quantized
 * norm row, n_embd), SwiGLU, h quantized, down; its output weighted into
 * y right after (the router weight in the down's epilogue, while the row
 * is in cache), so y is the half's weighted sum in rank order, the sum
 * combine_rows computes on every other path (moe_add). No activation
 * crosses threads, and neither do the scratch rows: rank k's g, u, h and
 * down output are row k of eg, eu, hq (64-byte strides) and ed, the same
 * lines token after token, where the routed row (row_of) would hand them
 * between the cores as the experts' order changes. */
void tb_moe_experts_half(tb_session_t *s, const tb_layer_t *L, const void *xa, float *y, int ith) {
    const tb_model_info_t *in = &s->m->info;
    const int64_t E = in->n_embd, F = in->n_ff_exp;
    const int K = in->n_expert_used, k0 = ith ? K / 2 : 0, k1 = ith ? K : K / 2;
    const tb_type_t dt = L->down_exps.type;
    const size_t hs = s->hq_stride;
    const tb_swiglu_fn swiglu = tb_op_swiglu_for(tb_kernels()->isa);
    assert(tb_act_row_bytes(dt, F) <= hs);
    if (k0 == k1)
        for (int64_t i = 0; i < E; i++) y[i] = 0.0f;
    for (int k = k0; k < k1; k++) {
        const size_t e = (size_t)s->sel[k];
        float *g = s->eg + (int64_t)k * F, *u = s->eu + (int64_t)k * F;   /* (n_ff_exp) */
        float *d = s->ed + (int64_t)k * E;                                /* (n_embd) */
        uint8_t *h = (uint8_t *)s->hq + (size_t)k * hs;
        const tb_lin_job_t jg = {.w = &L->gate_exps, .mat = e, .a = xa, .n_tok = 1, .y = g, .ldy = F};
        const tb_lin_job_t ju = {.w = &L->up_exps, .mat = e, .a = xa, .n_tok = 1, .y = u, .ldy = F};
        tb_lin_rows(&jg, 0, F);
        tb_lin_rows(&ju, 0, F);
        swiglu(g, u, F, L->clamp);
        tb_kernels()->t[dt].quantize_act(g, h, F);
        const tb_lin_job_t jd = {.w = &L->down_exps, .mat = e, .a = h, .n_tok = 1, .y = d, .ldy = E};
        tb_lin_rows(&jd, 0, E);
        moe_add(y, d, s->sel_w[k], k == k0, 0, E);
    }
}

/* ===================================================================== */
/* FFN                                                                    */
/* ===================================================================== */

void tb_moe_ffn(tb_session_t *s, int32_t il, int32_t n) {
    const tb_model_info_t *in = &s->m->info;
    const tb_layer_t *L = &s->m->layers[il];
    const int64_t E = in->n_embd, F = in->n_ff_exp;
    const int X = in->n_expert, K = in->n_expert_used;
    tb_pass_clock_t *clk = tb_prof_clock(s);
    moe_ctx c = {.s = s, .L = L, .n = n, .nr = n * K, .clk = clk};
    atomic_init(&c.claim.next, 0);
    atomic_init(&c.claim.done, 0);
    const bool router_f32 = tb_act_is_f32(L->router.type);
    const bool gate_f32 = tb_act_is_f32(L->gate_exps.type);

    /* ---- pass: xn = rmsnorm(x), quantized for the experts; router logits ---- */
    const size_t st = gate_f32 ? (size_t)E * sizeof(float) : tb_act_row_bytes(L->gate_exps.type, E);
    const void *xa = gate_f32 ? (const void *)s->xn : s->act;       /* (n, st) expert input */
    tb_lin_pro_t pn = {.kind = TB_PRO_NORM, .x = s->x, .ld = E, .n_in = E, .n = n,
                       .w = L->ffn_norm, .eps = in->norm_eps, .xn = s->xn,
                       .wtype = L->gate_exps.type, .q = gate_f32 ? NULL : s->act, .q_stride = st};
    tb_lin_job_t rj = {.w = &L->router, .a = s->xn, .a_stride = (size_t)E * sizeof(float),
                       .n_tok = n, .y = s->router, .ldy = X};
    uint64_t t0 = tb_prof_start(s);
    if (router_f32) {
        tb_lin_run(s->pool, s->sched, &pn, &rj, 1, clk);
    } else {    /* a quantized router (not in our presets): its own activation rows */
        tb_lin_run(s->pool, s->sched, &pn, NULL, 0, clk);
        rj.a = s->act2;
        rj.a_stride = tb_lin_quantize(L->router.type, s->xn, E, n, E, s->act2);
        tb_lin_run(s->pool, s->sched, NULL, &rj, 1, clk);
    }
    tb_prof_end(s, TB_PHASE_ROUTER, t0, L->router.mat_bytes);

    tb_moe_route(s, n);
    const int32_t *off = s->exp_off;

    /* ---- gather the input rows in expert order (one token: no copy) ---- */
    const void *xg = xa;
    if (n > 1) {
        for (int32_t r = 0; r < c.nr; r++)
            memcpy((uint8_t *)s->xg + (size_t)r * st, (const uint8_t *)xa + (size_t)s->tok_of[r] * st, st);
        xg = s->xg;
    }

    /* ---- gate + up of every active expert: one pass ---- */
    int nj = 0;
    for (int e = 0; e < X; e++) {
        int32_t cnt = off[e + 1] - off[e];
        if (!cnt) continue;
        const void *a = (const uint8_t *)xg + (size_t)(n > 1 ? off[e] : 0) * st;
        s->jobs[nj++] = (tb_lin_job_t){.w = &L->gate_exps, .mat = (size_t)e, .a = a, .a_stride = st,
                                       .n_tok = cnt, .y = s->eg + off[e] * F, .ldy = F};
        s->jobs[nj++] = (tb_lin_job_t){.w = &L->up_exps, .mat = (size_t)e, .a = a, .a_stride = st,
                                       .n_tok = cnt, .y = s->eu + off[e] * F, .ldy = F};
    }
    t0 = tb_prof_start(s);
    tb_lin_run(s->pool, s->sched, NULL, s->jobs, nj, clk);
    tb_prof_end_jobs(s, TB_PHASE_FFN_UP, t0, s->jobs, nj);

    /* ---- h = swiglu(g, u) quantized (prologue), down of every active expert ---- */
    const bool down_f32 = tb_act_is_f32(L->down_exps.type);
    c.h_stride = down_f32 ? (size_t)F * sizeof(float) : s->hq_stride;
    c.h = down_f32 ? (const void *)s->eg : s->hq;
    c.pro = (tb_lin_pro_t){.kind = TB_PRO_SWIGLU, .x = s->eg, .u = s->eu, .ld = F, .n_in = F,
                           .n = c.nr, .clamp = L->clamp, .wtype = L->down_exps.type,
                           .q = down_f32 ? NULL : s->hq, .q_stride = c.h_stride};
    t0 = tb_prof_start(s);
    if (n == 1) {   /* the K experts' down matrices, combined in the same pass */
        for (int k = 0; k < tb_pool_n_threads(s->pool); k++) atomic_init(&c.taken[k], 0);
        tb_pass_clock_run(clk, s->pool, down1_worker, &c, true);
        tb_prof_end(s, TB_PHASE_FFN_DOWN, t0, (uint64_t)K * L->down_exps.mat_bytes);
        return;
    }
    nj = 0;
    for (int e = 0; e < X; e++) {
        int32_t cnt = off[e + 1] - off[e];
        if (!cnt) continue;
        s->jobs[nj++] = (tb_lin_job_t){.w = &L->down_exps, .mat = (size_t)e,
                                       .a = (const uint8_t *)c.h + (size_t)off[e] * c.h_stride,
                                       .a_stride = c.h_stride, .n_tok = cnt,
                                       .y = s->ed + off[e] * E, .ldy = E};
    }
    tb_lin_run(s->pool, s->sched, &c.pro, s->jobs, nj, clk);
    tb_pass_clock_run(clk, s->pool, combine_worker, &c, false);
    tb_prof_end_jobs(s, TB_PHASE_FFN_DOWN, t0, s->jobs, nj);
}
