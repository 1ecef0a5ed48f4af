/*
 * session.h — the session state shared by session.c, forward.c,
 * attention.c and moe.c (not public).
 *
 * KV cache: per layer, position p in slot p % cap; cap = n_ctx for global
 * layers and min(n_swa, n_ctx) for sliding layers (a ring). K is stored
 * in tiles of TB_KV_TILE slots, each transposed (head_dim, TB_KV_TILE), V
 * as one row per slot (attention.h): the scores of a tile are
 * sum_d K[tile][d][:] * q[d] (each K line converted once for every query
 * head of the group, no horizontal sums), the weighted sum is p-weighted V
 * rows, and both read the cache as linear streams. attention.c writes a
 * token's K/V into its slot before the token attends, and orders the
 * writes so that a ring slot is never overwritten while a token of the
 * same chunk still needs it.
 *
 * Scratch buffers are sized once for n_batch tokens at session creation.
 */
#ifndef TB_SESSION_H
#define TB_SESSION_H

#include "model/model.h"
#include "model/head.h"
#include "quant/quant.h"
#include "ternbench_profile.h"

typedef struct tb_kv_layer {
    void *k;                         /* (n_head_kv, ceil(cap / TB_KV_TILE),
                                        head_dim, TB_KV_TILE) kv_type       */
    void *v;                         /* (n_head_kv, cap, head_dim) kv_type  */
    int32_t cap;
} tb_kv_layer_t;

struct tb_session {
    const tb_model_t *m;
    tb_session_params_t p;
    tb_pool_t *pool;
    tb_sched_t *sched;               /* (n_threads) work ranges of a pass  */
    int32_t pos;                     /* tokens in the cache */
    size_t kv_elem;                  /* 2 (f16) or 4 (f32) */
    tb_kv_layer_t *kv;               /* (n_layer) */
    void *kv_arena;                  /* every layer's K and V, huge pages */
    int64_t sc_ld;                   /* score row stride: n_ctx rounded up to 16 */
    size_t sc_per_thread;            /* floats of scores per thread        */

    /* ---- per-chunk scratch (nb = n_batch) ---- */
    float *x;                        /* (nb, n_embd) residual stream     */
    float *xn;                       /* (nb, n_embd) normed input         */
    float *y;                        /* (nb, n_embd) block output         */
    float *y2;                       /* (nb, n_embd) second column slice's output */
    void *act_own;                   /* (2, act_bytes) split decode: each half's own norm row   */
    float *x_own;                    /* (2, n_embd) split decode: each half's own copy of x   */
    float *xn_own;                   /* (2, n_embd) split decode: each half's f32 norm row   */
    float *y_b, *y2_b;               /* (n_embd) each: the split decode's second output pair   */
    bool fold_pending;               /* x is short of (+ yp[0]) + yp[1] (split decode)         */
    float *yp[2];                    /* the pending pair: y, y2 or y_b, y2_b                   */
    void *split_plan;                /* (tb_split_plan_bytes) the passes of a split run          */
    bool split_yield;                /* test hook: thread 0 alone takes the output rows */
    float *q;                        /* (nb, n_head * head_dim)           */
    float *k, *v;                    /* (nb, n_head_kv * head_dim)        */
    float *att;                      /* (nb, n_head * head_dim)           */
    void *act;                       /* (nb, max activation row bytes)    */
    void *act2;                      /* (nb, router act bytes) only for a
                                        quantized router, else NULL        */
    float *ff_g, *ff_u;              /* (nb, n_ff) dense gate/up          */
    float *rope_cs, *rope_sn;        /* (2, nb, rope_dims/2): [0] base, [1] base_swa */
    float *scores;                   /* (n_threads, sc_per_thread): per thread
                                        (group, sc_ld) scores                */
    size_t act_bytes;                /* max row bytes of act              */

    /* ---- MoE scratch (nr = nb * n_expert_used routed rows) ---- */
    float *router;                   /* (nb, n_expert) logits -> probs    */
    int32_t *sel;                    /* (nb, n_used) chosen experts       */
    float *sel_w;                    /* (nb, n_used) renormalised weights */
    int32_t *row_of;                 /* (nb, n_used) -> routed row        */
    int32_t *tok_of;                 /* (nr) routed row -> token          */
    int32_t *exp_off;                /* (n_expert + 1) first routed row   */
    void *xg;                        /* (nr, act bytes of n_embd) gathered */
    float *eg, *eu;                  /* (nr, n_ff_exp) expert gate/up     */
    void *hq;                        /* (nr, hq_stride) down activations   */
    size_t hq_stride;                /* tb_moe_hq_stride                    */
    float *ed;                       /* (nr, n_embd) weighted down output */
    tb_lin_job_t *jobs;              /* (2 * n_expert + 3)                */

    /* ---- logits of the last eval ---- */
    float *logits;                   /* (logits_cap, n_vocab)             */
    int32_t logits_cap;
    int32_t n_logits;                /* rows kept by the last eval        */
    int32_t n_last;                  /* tokens in the last eval           */
    uint64_t mem_bytes;

    /* ---- output head (head.c): the approximate head's scratch, reads ---- */
    tb_head_scratch_t head_sc;       /* allocated only with p.head         */
    tb_head_stats_t head_stats;

    /* ---- profile (profile.c; zero and off unless tb_session_set_profile) ---- */
    bool prof_on;
    tb_profile_t prof;
    tb_pass_clock_t clk;             /* the passes' timestamps (profile.c)  */
    bool split_prof_on;
    tb_split_profile_t split_prof;   /* tb_session_set_split_profile        */
};

/* ---- forward.c --------------------------------------------------------- */

/* Run n (<= n_batch) tokens at positions s->pos.. through the model;
 * writes logits for the last token (or all n when all_logits) to `logits`
 * (rows of n_vocab; NULL: skip the output head). Advances s->pos. */
int tb_forward_chunk(tb_session_t *s, const int32_t *tokens, int32_t n, bool all_logits,
                     float *logits);

/* True when weights of type t take f32 activations (F16, BF16, F32): no
 * quantization before their matvec. */
static inline bool tb_act_is_f32(tb_type_t t) { return tb_type_traits(t)->vec_dot_type == TB_TYPE_F32; }

/* dst = (x + y) + y2 over elements [i0, i1): the one order in which every
 * path adds two partial outputs (column slices, halves of the experts) to
 * the residual stream. */
static inline void tb_fold_rows(float *dst, const float *x, const float *y, const float *y2, int64_t i0,
                                int64_t i1) {
    for (int64_t i = i0; i < i1; i++) dst[i] = (x[i] + y[i]) + y2[i];
}

/* ---- split.c: a layer's decode step on 2+ threads (see there) --------- */

/* True when layer L's step runs split now: one token on 2 or more
 * threads (MoE: exactly 2), not profiling (its passes are per phase),
 * and the layer has the slices. */
bool tb_split_ok(const tb_session_t *s, const tb_layer_t *L, int32_t n);
/* The decode step of layers [il0, il1), all split (tb_split_ok), in one
 * pool run; x may be left short of the last pass's two outputs
 * (fold_pending). */
void tb_split_layers(tb_session_t *s, int32_t il0, int32_t il1);
/* Bytes of the pass plan tb_split_layers keeps (session: split_plan). */
size_t tb_split_plan_bytes(const tb_model_info_t *in);
/* x = (x + y) + y2 when a split pass left it pending. */
void tb_split_settle(tb_session_t *s);

/* ---- attention.c ------------------------------------------------------- */

/* Self-attention of layer il for n tokens starting at s->pos: q/k norm,
 * rope, K/V into the cache, attention over each token's window.
 * Input s->q, s->k, s->v (modified in place); output s->att
 * (n, n_head*head_dim). */
void tb_attention(tb_session_t *s, int32_t il, int32_t n);
/* One decode token's attention of kv heads [g0, g1) on the calling thread
 * (thread ith of its pass: its scores scratch), as tb_attention computes
 * each of them. */
void tb_attention_heads(tb_session_t *s, int32_t il, int g0, int g1, int ith);

/* ---- profile.c --------------------------------------------------------- */

/* The pass clock to hand to a pool pass: NULL when profiling is off. */
static inline tb_pass_clock_t *tb_prof_clock(tb_session_t *s) { return s->prof_on ? &s->clk : NULL; }
/* t0 for tb_prof_end: the clock when profiling is on, else 0. */
static inline uint64_t tb_prof_start(const tb_session_t *s) { return s->prof_on ? tb_now_ns() : 0; }
/* Charge the time since t0, `bytes` of weights and the pass clock's sums
 * (then zeroed) to phase ph (no-op when profiling is off). */
void tb_prof_end(tb_session_t *s, tb_phase_t ph, uint64_t t0, uint64_t bytes);
/* tb_prof_end with the weight bytes the jobs of one pass read (each job's
 * whole matrix), summed only when profiling is on. */
void tb_prof_end_jobs(tb_session_t *s, tb_phase_t ph, uint64_t t0, const tb_lin_job_t *jobs, int n_jobs);

/* ---- moe.c ------------------------------------------------------------- */

/* FFN of layer il: x = (x + y) + y2, the halves of the experts' weighted
 * sum (ranks below K/2 in y, the rest in y2). */
void tb_moe_ffn(tb_session_t *s, int32_t il, int32_t n);
/* Softmax and top-k of s->router for n tokens; routed rows by expert. */
void tb_moe_route(tb_session_t *s, int32_t n);
/* Split decode, thread ith of 2: its half of the experts on quantized
 * norm row xa, their weighted sum into y (n_embd). */
void tb_moe_experts_half(tb_session_t *s, const tb_layer_t *L, const void *xa, float *y, int ith);
/* Bytes between rows of s->hq: the largest down activation row of any
 * layer, rounded up to 64 (a cache line per row start). */
size_t tb_moe_hq_stride(const tb_model_t *m);

#endif
