/*
 * forward.c — one chunk of tokens through the model.
 *
 *   x = token_embd[tokens]                                   (n, n_embd)
 *   per layer:
 *     xn = rmsnorm(x) ; q,k,v = Wq,Wk,Wv · xn   (one quantization, one pass)
 *     att = attention(q, k, v)                  (attention.c)
 *     x += Wo · att
 *     xn = rmsnorm(x) ; x += ffn(xn)            (dense SwiGLU or moe.c)
 *   logits = output · rmsnorm(x)   for the last token, or all when asked
 *
 * The same code runs a prefill chunk (gemm) and a single decode token
 * (matvec); every per-token operation is identical in both.
 */
#include "model/session.h"
#include "kernels/kernels.h"

#include <string.h>

/* ===================================================================== */
/* Fused linear over one input                                            */
/* ===================================================================== */

/* ys[i] (n, w[i]->n_out, row stride ld[i]) = w[i] · x for the n rows of x
 * (n_in floats each). Weights sharing an activation format share one
 * quantization of x and one pool pass. */
static void lin_multi(tb_session_t *s, const tb_weight_t *const *w, float *const *ys,
                      const int64_t *ld, int nw, const float *x, int64_t n) {
    bool done[8] = {false};
    assert(nw <= 8);
    for (int i = 0; i < nw; i++) {
        if (done[i]) continue;
        const tb_type_t act = tb_type_traits(w[i]->type)->vec_dot_type;
        const size_t st = tb_lin_quantize(w[i]->type, x, w[i]->n_in, n, w[i]->n_in, s->act);
        int nj = 0;
        for (int j = i; j < nw; j++) {
            if (done[j] || tb_type_traits(w[j]->type)->vec_dot_type != act) continue;
            done[j] = true;
            s->jobs[nj++] = (tb_lin_job_t){.w = w[j], .a = s->act, .a_stride = st, .n_tok = n,
                                           .y = ys[j], .ldy = ld[j]};
        }
        tb_lin_run(s->pool, s->jobs, nj);
    }
}

static void add_rows(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

/* ===================================================================== */
/* Blocks                                                                 */
/* ===================================================================== */

static void attn_block(tb_session_t *s, int32_t il, int32_t n) {
    const tb_model_info_t *in = &s->m->info;
    const tb_layer_t *L = &s->m->layers[il];
    const int64_t E = in->n_embd;
    const int64_t nq = (int64_t)in->n_head * in->head_dim, nkv = (int64_t)in->n_head_kv * in->head_dim;
    for (int32_t t = 0; t < n; t++) tb_op_rmsnorm(s->xn + t * E, s->x + t * E, L->attn_norm, (int)E, in->norm_eps);
    const tb_weight_t *w[3] = {&L->wq, &L->wk, &L->wv};
    float *ys[3] = {s->q, s->k, s->v};
    const int64_t ld[3] = {nq, nkv, nkv};
    lin_multi(s, w, ys, ld, 3, s->xn, n);
    tb_attention(s, il, n);
    const tb_weight_t *wo[1] = {&L->wo};
    float *yo[1] = {s->y};
    const int64_t ldo[1] = {E};
    lin_multi(s, wo, yo, ldo, 1, s->att, n);
    add_rows(s->x, s->y, (int64_t)n * E);
}

static void dense_ffn(tb_session_t *s, int32_t il, int32_t n) {
    const tb_model_info_t *in = &s->m->info;
    const tb_layer_t *L = &s->m->layers[il];
    const int64_t F = in->n_ff;
    const tb_weight_t *w[2] = {&L->ffn_gate, &L->ffn_up};
    float *ys[2] = {s->ff_g, s->ff_u};
    const int64_t ld[2] = {F, F};
    lin_multi(s, w, ys, ld, 2, s->xn, n);
    for (int64_t i = 0; i < (int64_t)n * F; i++) s->ff_g[i] = tb_op_silu(s->ff_g[i]) * s->ff_u[i];
    const tb_weight_t *wd[1] = {&L->ffn_down};
    float *yd[1] = {s->y};
    const int64_t ldd[1] = {in->n_embd};
    lin_multi(s, wd, yd, ldd, 1, s->ff_g, n);
}

static void ffn_block(tb_session_t *s, int32_t il, int32_t n) {
    const tb_model_info_t *in = &s->m->info;
    const tb_layer_t *L = &s->m->layers[il];
    const int64_t E = in->n_embd;
    for (int32_t t = 0; t < n; t++) tb_op_rmsnorm(s->xn + t * E, s->x + t * E, L->ffn_norm, (int)E, in->norm_eps);
    if (in->n_expert > 0) tb_moe_ffn(s, il, n);
    else dense_ffn(s, il, n);
    add_rows(s->x, s->y, (int64_t)n * E);
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
    const tb_to_float_fn deq = tb_type_traits(m->tok_embd.type)->to_float_ref;
    for (int32_t t = 0; t < n; t++) {
        if (tokens[t] < 0 || tokens[t] >= in->n_vocab)
            return tb_err(TB_ERR_RANGE, "token id %d at index %d is outside the vocabulary 0..%d",
                          tokens[t], t, in->n_vocab - 1);
        deq((const uint8_t *)m->tok_embd.data + (size_t)tokens[t] * m->tok_embd.row_bytes, s->x + t * E, E);
    }

    /* ---- rope tables: [0] rope_base, [1] rope_base_swa ---- */
    for (int32_t t = 0; t < n; t++) {
        size_t o0 = (size_t)t * (size_t)half, o1 = ((size_t)s->p.n_batch + (size_t)t) * (size_t)half;
        tb_op_rope_table(s->rope_cs + o0, s->rope_sn + o0, s->pos + t, in->rope_dims, in->rope_base);
        tb_op_rope_table(s->rope_cs + o1, s->rope_sn + o1, s->pos + t, in->rope_dims, in->rope_base_swa);
    }

    /* ---- layers ---- */
    for (int32_t il = 0; il < in->n_layer; il++) {
        attn_block(s, il, n);
        ffn_block(s, il, n);
    }

    /* ---- output head ---- */
    if (!logits) { s->pos += n; return TB_OK; }
    const int32_t t0 = all_logits ? 0 : n - 1, nl = n - t0;
    for (int32_t t = 0; t < nl; t++)
        tb_op_rmsnorm(s->xn + t * E, s->x + (t0 + t) * E, m->output_norm, (int)E, in->norm_eps);
    const tb_weight_t *w[1] = {&m->output};
    float *ys[1] = {logits};
    const int64_t ld[1] = {in->n_vocab};
    lin_multi(s, w, ys, ld, 1, s->xn, nl);
    s->pos += n;
    return TB_OK;
}
