/*
 * moe.c — mixture-of-experts FFN: router, expert grouping, expert MLPs.
 *
 *   router   p = softmax(W_r · x) in f32 over all experts; top-k (ties: the
 *            lower expert id); weights renormalised to sum to 1.
 *   experts  h = silu(min(g, c)) * clamp(u, -c, c) with g = W_gate·x,
 *            u = W_up·x (c = +inf: plain SwiGLU); y = Σ_k w_k · W_down_k·h_k
 *            summed in top-k rank order.
 *
 * The routed (token, slot) pairs are sorted by expert ("routed rows"), so
 * each active expert sees one contiguous group of token rows: ONE pool pass
 * runs gate and up of all active experts (matvec for a group of one, gemm
 * otherwise), one pass forms h and quantizes it, one pass runs every
 * expert's down projection, one pass sums the weighted outputs. The input
 * is quantized once per token, not once per expert.
 */
#include "model/session.h"
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

typedef struct moe_ctx {
    tb_session_t *s;
    const tb_layer_t *L;
    int32_t n, nr;
    size_t h_stride;          /* bytes per quantized h row */
} moe_ctx;

/* Top-k of p (n values) into sel/w (k), renormalised. */
static void route(const float *p, int n, int k, int32_t *sel, float *w) {
    float sum = 0.0f;
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int e = 0; e < n; e++) {
            bool taken = false;
            for (int j = 0; j < i; j++) taken |= sel[j] == e;
            if (!taken && (best < 0 || p[e] > p[best])) best = e;
        }
        sel[i] = best;
        w[i] = p[best];
        sum += p[best];
    }
    for (int i = 0; i < k; i++) w[i] /= sum;
}

/* h = silu(min(g, c)) * clamp(u, -c, c) per routed row, then quantized. */
static void act_worker(void *arg, int ith, int nth) {
    const moe_ctx *c = arg;
    tb_session_t *s = c->s;
    const int64_t F = s->m->info.n_ff_exp;
    const float cl = c->L->clamp;
    const tb_from_float_fn quant = tb_kernels()->t[c->L->down_exps.type].quantize_act;
    for (int32_t r = ith; r < c->nr; r += nth) {
        float *g = s->eg + (int64_t)r * F;          /* (n_ff_exp) */
        const float *u = s->eu + (int64_t)r * F;    /* (n_ff_exp) */
        for (int64_t i = 0; i < F; i++) {
            float gi = fminf(g[i], cl);
            float ui = fminf(fmaxf(u[i], -cl), cl);
            g[i] = tb_op_silu(gi) * ui;
        }
        quant(g, (uint8_t *)s->hq + (size_t)r * c->h_stride, F);
    }
}

/* y[t] = Σ_k w[t,k] · down_out[row_of[t,k]] in rank order. */
static void combine_worker(void *arg, int ith, int nth) {
    const moe_ctx *c = arg;
    tb_session_t *s = c->s;
    const int64_t E = s->m->info.n_embd;
    const int K = s->m->info.n_expert_used;
    for (int32_t t = ith; t < c->n; t += nth) {
        float *y = s->y + (int64_t)t * E;           /* (n_embd) */
        memset(y, 0, (size_t)E * sizeof *y);
        for (int k = 0; k < K; k++) {
            const float w = s->sel_w[t * K + k];
            const float *d = s->ed + (int64_t)s->row_of[t * K + k] * E;   /* (n_embd) */
            for (int64_t i = 0; i < E; i++) y[i] += w * d[i];
        }
    }
}

void tb_moe_ffn(tb_session_t *s, int32_t il, int32_t n) {
    const tb_model_info_t *in = &s->m->info;
    const tb_layer_t *L = &s->m->layers[il];
    const int64_t E = in->n_embd, F = in->n_ff_exp;
    const int X = in->n_expert, K = in->n_expert_used;
    moe_ctx c = {.s = s, .L = L, .n = n, .nr = n * K};

    /* ---- router ---- */
    size_t st = tb_lin_quantize(L->router.type, s->xn, E, n, E, s->act);
    tb_lin_job_t rj = {.w = &L->router, .a = s->act, .a_stride = st, .n_tok = n,
                       .y = s->router, .ldy = X};
    tb_lin_run(s->pool, &rj, 1);
    int32_t *off = s->exp_off, *cur = s->exp_off + X + 1;   /* (n_expert + 1), (n_expert) */
    memset(off, 0, (size_t)(X + 1) * sizeof *off);
    for (int32_t t = 0; t < n; t++) {
        float *p = s->router + (int64_t)t * X;      /* (n_expert) */
        tb_op_softmax(p, X);
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

    /* ---- gather the quantized input rows in expert order ---- */
    st = tb_lin_quantize(L->gate_exps.type, s->xn, E, n, E, s->act);
    for (int32_t r = 0; r < c.nr; r++)
        memcpy((uint8_t *)s->xg + (size_t)r * st, (uint8_t *)s->act + (size_t)s->tok_of[r] * st, st);

    /* ---- gate + up of every active expert: one pass ---- */
    int nj = 0;
    for (int e = 0; e < X; e++) {
        int32_t cnt = off[e + 1] - off[e];
        if (!cnt) continue;
        const void *a = (uint8_t *)s->xg + (size_t)off[e] * st;
        s->jobs[nj++] = (tb_lin_job_t){.w = &L->gate_exps, .mat = (size_t)e, .a = a, .a_stride = st,
                                       .n_tok = cnt, .y = s->eg + off[e] * F, .ldy = F};
        s->jobs[nj++] = (tb_lin_job_t){.w = &L->up_exps, .mat = (size_t)e, .a = a, .a_stride = st,
                                       .n_tok = cnt, .y = s->eu + off[e] * F, .ldy = F};
    }
    tb_lin_run(s->pool, s->jobs, nj);

    /* ---- activation + quantization of h ---- */
    c.h_stride = tb_act_row_bytes(L->down_exps.type, F);
    tb_pool_run(s->pool, act_worker, &c);

    /* ---- down of every active expert: one pass ---- */
    nj = 0;
    for (int e = 0; e < X; e++) {
        int32_t cnt = off[e + 1] - off[e];
        if (!cnt) continue;
        s->jobs[nj++] = (tb_lin_job_t){.w = &L->down_exps, .mat = (size_t)e,
                                       .a = (uint8_t *)s->hq + (size_t)off[e] * c.h_stride,
                                       .a_stride = c.h_stride, .n_tok = cnt,
                                       .y = s->ed + off[e] * E, .ldy = E};
    }
    tb_lin_run(s->pool, s->jobs, nj);
    tb_pool_run(s->pool, combine_worker, &c);
}
