/*
 * model.c — tb_model_load: map the GGUF, read the architecture, find and
 * validate every tensor (presence, supported type, exact shape), convert the
 * norm vectors to f32; plus model info and the bytes-per-token account.
 */
#include "model/model.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

/* ===================================================================== */
/* Tensor lookup and validation                                           */
/* ===================================================================== */

typedef struct loadctx {
    tb_model_t *m;
    const char *path;
    float *norm_next;        /* bump pointer into m->norm_store */
    float *norm_end;
} loadctx;

static void fmt_shape(char *buf, size_t cap, int n, const int64_t *ne) {
    int k = snprintf(buf, cap, "[");
    for (int i = 0; i < n && k > 0 && (size_t)k < cap; i++)
        k += snprintf(buf + k, cap - (size_t)k, i ? ", %lld" : "%lld", (long long)ne[i]);
    if (k > 0 && (size_t)k < cap) snprintf(buf + k, cap - (size_t)k, "]");
}

/* Index of tensor `name` or, as llama.cpp names them, `name`.weight; -1. */
static int64_t find_named(const tb_gguf_t *g, const char *name) {
    int64_t i = tb_gguf_find_tensor(g, name);
    if (i >= 0) return i;
    char full[128];
    snprintf(full, sizeof full, "%s.weight", name);
    return tb_gguf_find_tensor(g, full);
}

static bool name_is(const char *name, const char *base) {
    size_t n = strlen(base);
    return !strncmp(name, base, n) && (name[n] == '\0' || !strcmp(name + n, ".weight"));
}

/* Find tensor `name`, check it has exactly the n_dims-dimensional shape
 * `ne` (ggml order, ne[0] = input dim) and a computable type. Absent and
 * optional: *t zeroed, TB_OK. */
static int find_tensor(loadctx *c, const char *name, int n_dims, const int64_t *ne,
                       bool optional, tb_gguf_tensor_t *t) {
    memset(t, 0, sizeof *t);
    int64_t i = find_named(c->m->gguf, name);
    if (i < 0) {
        if (optional) return TB_OK;
        char want[96];
        fmt_shape(want, sizeof want, n_dims, ne);
        return tb_err(TB_ERR_NOT_FOUND, "%s: missing tensor '%s' (expected shape %s)", c->path, name, want);
    }
    int rc = tb_gguf_tensor(c->m->gguf, i, t);
    if (rc != TB_OK) return tb_err_prefix(rc, "%s: tensor '%s'", c->path, name);
    int64_t got[4] = {1, 1, 1, 1}, exp[4] = {1, 1, 1, 1};
    for (int d = 0; d < 4; d++) got[d] = d < t->n_dims ? t->ne[d] : 1;
    for (int d = 0; d < n_dims; d++) exp[d] = ne[d];
    if (memcmp(got, exp, sizeof got) != 0) {
        char want[96], have[96];
        fmt_shape(want, sizeof want, n_dims, ne);
        fmt_shape(have, sizeof have, t->n_dims, t->ne);
        return tb_err(TB_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s", c->path, name, have, want);
    }
    const tb_type_traits_t *tr = tb_type_traits(t->type);
    if (!tr || !tr->vec_dot_ref || !tr->to_float_ref)
        return tb_err(TB_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s (%d), which ternbench cannot compute with",
                      c->path, name, tb_type_name(t->type), (int)t->type);
    if (ne[0] % tr->blck)
        return tb_err(TB_ERR_FORMAT, "%s: tensor '%s' rows of %lld are not a multiple of the %s block (%lld)",
                      c->path, name, (long long)ne[0], tr->name, (long long)tr->blck);
    return TB_OK;
}

/* A matrix or stack of matrices: ne = (n_in, n_out[, n_mat]). */
static int get_weight(loadctx *c, const char *name, int64_t n_in, int64_t n_out, int64_t n_mat,
                      bool optional, tb_weight_t *w) {
    memset(w, 0, sizeof *w);
    int64_t ne[3] = {n_in, n_out, n_mat};
    tb_gguf_tensor_t t;
    int rc = find_tensor(c, name, n_mat > 1 ? 3 : 2, ne, optional, &t);
    if (rc != TB_OK || !t.data) return rc;
    w->data = t.data;
    w->type = t.type;
    w->n_in = n_in;
    w->n_out = n_out;
    w->n_mat = n_mat;
    w->row_bytes = tb_type_row_bytes(t.type, n_in);
    w->mat_bytes = w->row_bytes * (size_t)n_out;
    return TB_OK;
}

/* A 1-D norm vector of n elements, converted to f32 in norm_store. */
static int get_norm(loadctx *c, const char *name, int64_t n, const float **out) {
    tb_gguf_tensor_t t;
    int rc = find_tensor(c, name, 1, &n, false, &t);
    if (rc != TB_OK) return rc;
    if (c->norm_next + n > c->norm_end)
        return tb_err(TB_ERR_INTERNAL, "%s: norm storage exhausted at '%s'", c->path, name);
    tb_type_traits(t.type)->to_float_ref(t.data, c->norm_next, n);
    *out = c->norm_next;
    c->norm_next += n;
    return TB_OK;
}

static int load_layer(loadctx *c, int32_t il) {
    tb_model_t *m = c->m;
    const tb_model_info_t *in = &m->info;
    tb_layer_t *L = &m->layers[il];
    const int64_t E = in->n_embd, hd = in->head_dim;
    const int64_t nq = (int64_t)in->n_head * hd, nkv = (int64_t)in->n_head_kv * hd;
    char nm[96];
    int rc;
#define NAME(s) (snprintf(nm, sizeof nm, "blk.%d." s, il), nm)
    if ((rc = get_norm(c, NAME("attn_norm"), E, &L->attn_norm))) return rc;
    if ((rc = get_weight(c, NAME("attn_q"), E, nq, 1, false, &L->wq))) return rc;
    if ((rc = get_weight(c, NAME("attn_k"), E, nkv, 1, false, &L->wk))) return rc;
    if ((rc = get_weight(c, NAME("attn_v"), E, nkv, 1, false, &L->wv))) return rc;
    if ((rc = get_weight(c, NAME("attn_output"), nq, E, 1, false, &L->wo))) return rc;
    if (m->arch == TB_ARCH_MAPLE) {
        if ((rc = get_norm(c, NAME("attn_q_norm"), hd, &L->q_norm))) return rc;
        if ((rc = get_norm(c, NAME("attn_k_norm"), hd, &L->k_norm))) return rc;
    }
    if ((rc = get_norm(c, NAME("ffn_norm"), E, &L->ffn_norm))) return rc;
    if (in->n_expert > 0) {
        const int64_t X = in->n_expert, F = in->n_ff_exp;
        if ((rc = get_weight(c, NAME("ffn_gate_inp"), E, X, 1, false, &L->router))) return rc;
        if ((rc = get_weight(c, NAME("ffn_gate_exps"), E, F, X, false, &L->gate_exps))) return rc;
        if ((rc = get_weight(c, NAME("ffn_up_exps"), E, F, X, false, &L->up_exps))) return rc;
        if ((rc = get_weight(c, NAME("ffn_down_exps"), F, E, X, false, &L->down_exps))) return rc;
        if (L->gate_exps.type != L->up_exps.type)
            return tb_err(TB_ERR_UNSUPPORTED, "%s: blk.%d.ffn_gate_exps (%s) and ffn_up_exps (%s) must share a type",
                          c->path, il, tb_type_name(L->gate_exps.type), tb_type_name(L->up_exps.type));
    } else {
        const int64_t F = in->n_ff;
        if ((rc = get_weight(c, NAME("ffn_gate"), E, F, 1, false, &L->ffn_gate))) return rc;
        if ((rc = get_weight(c, NAME("ffn_up"), E, F, 1, false, &L->ffn_up))) return rc;
        if ((rc = get_weight(c, NAME("ffn_down"), F, E, 1, false, &L->ffn_down))) return rc;
    }
#undef NAME
    return TB_OK;
}

static int load_tensors(tb_model_t *m, const char *path) {
    tb_model_info_t *in = &m->info;
    loadctx c = {.m = m, .path = path};
    int64_t iemb = find_named(m->gguf, "token_embd");
    if (iemb < 0) return tb_err(TB_ERR_NOT_FOUND, "%s: missing tensor 'token_embd' (expected shape [%d, n_vocab])",
                                path, in->n_embd);
    tb_gguf_tensor_t te;
    int rc = tb_gguf_tensor(m->gguf, iemb, &te);
    if (rc != TB_OK) return rc;
    if (te.n_dims != 2 || te.ne[1] < 1 || te.ne[1] > INT32_MAX)
        return tb_err(TB_ERR_FORMAT, "%s: tensor 'token_embd' must be 2-D [%d, n_vocab]", path, in->n_embd);
    in->n_vocab = (int32_t)te.ne[1];
    if ((rc = get_weight(&c, "token_embd", in->n_embd, in->n_vocab, 1, false, &m->tok_embd))) return rc;
    bool out_optional = m->arch == TB_ARCH_LLAMA;
    if ((rc = get_weight(&c, "output", in->n_embd, in->n_vocab, 1, out_optional, &m->output))) return rc;
    m->tied = m->output.data == NULL;
    if (m->tied) m->output = m->tok_embd;

    /* norm vectors: attn + ffn per layer, q/k per layer, output */
    size_t n_norm = (size_t)in->n_embd * (2u * (size_t)in->n_layer + 1) +
                    (size_t)in->head_dim * 2u * (size_t)in->n_layer;
    m->norm_store = malloc(n_norm * sizeof(float));
    if (!m->norm_store) return tb_err(TB_ERR_NOMEM, "out of memory for norm vectors");
    c.norm_next = m->norm_store;
    c.norm_end = m->norm_store + n_norm;
    if ((rc = get_norm(&c, "output_norm", in->n_embd, &m->output_norm))) return rc;
    for (int32_t il = 0; il < in->n_layer; il++)
        if ((rc = load_layer(&c, il))) return rc;
    return TB_OK;
}

/* ===================================================================== */
/* Info                                                                   */
/* ===================================================================== */

static bool is_expert_tensor(const char *name) {
    return strstr(name, "_exps") != NULL;
}

static void compute_info(tb_model_t *m) {
    tb_model_info_t *in = &m->info;
    uint64_t by_type[TB_TYPE_COUNT] = {0}, by_type_all[TB_TYPE_COUNT] = {0};
    int64_t n = tb_gguf_n_tensors(m->gguf);
    in->n_params = in->n_params_active = 0;
    in->weight_bytes = 0;
    for (int64_t i = 0; i < n; i++) {
        tb_gguf_tensor_t t;
        if (tb_gguf_tensor(m->gguf, i, &t) != TB_OK) continue;
        int64_t ne = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
        in->n_params += ne;
        if (is_expert_tensor(t.name) && in->n_expert > 0)
            in->n_params_active += ne / in->n_expert * in->n_expert_used;
        else
            in->n_params_active += ne;
        in->weight_bytes += t.nbytes;
        /* The main type is the projections' and experts' (what --type
         * sets): embedding and output head are often kept wider. */
        bool io = name_is(t.name, "token_embd") || name_is(t.name, "output");
        if ((unsigned)t.type < TB_TYPE_COUNT) {
            by_type[t.type] += io ? 0 : t.nbytes;
            by_type_all[t.type] += t.nbytes;
        }
    }
    bool any = false;
    for (int t = 0; t < TB_TYPE_COUNT; t++) any |= by_type[t] > 0;
    const uint64_t *count = any ? by_type : by_type_all;
    in->main_type = TB_TYPE_F32;
    for (int t = 0; t < TB_TYPE_COUNT; t++)
        if (count[t] > count[in->main_type]) in->main_type = (tb_type_t)t;
    in->file_bytes = tb_gguf_file_size(m->gguf);
    in->repack_bytes = 0;
    in->resident_bytes = 0;
    in->split_layers = 0;
}

/* ===================================================================== */
/* Column slices                                                          */
/* ===================================================================== */

/* The first column of w's second slice when it splits at `want` (a whole
 * number of blocks inside the row), else 0. */
static int64_t slice_cut(const tb_weight_t *w, int64_t want) {
    const int64_t blck = tb_type_traits(w->type)->blck;
    return w->data && w->n_mat == 1 && want > 0 && want < w->n_in && want % blck == 0 ? want : 0;
}

/* Slices s = 0, 1 of w cut at column `cut`, as views of w's rows (no
 * copy: the placement copies or repacks each on its own). */
static void slice_view(const tb_weight_t *w, int64_t cut, tb_weight_t *sl) {
    const tb_type_traits_t *tr = tb_type_traits(w->type);
    for (int k = 0; k < 2; k++) {
        const int64_t c0 = k ? cut : 0, c1 = k ? w->n_in : cut;
        sl[k] = (tb_weight_t){.data = (const uint8_t *)w->data + (size_t)(c0 / tr->blck) * tr->bytes,
                              .type = w->type, .n_in = c1 - c0, .n_out = w->n_out, .n_mat = 1,
                              .row_bytes = w->row_bytes, .mat_bytes = w->mat_bytes};
    }
}

/* True when w's activation is quantized (not f32), in format `act` when
 * act is not TB_TYPE_COUNT. */
static bool act_quantized(const tb_weight_t *w, tb_type_t act) {
    const tb_type_t t = tb_type_traits(w->type)->vec_dot_type;
    return w->data && t != TB_TYPE_F32 && (act == TB_TYPE_COUNT || t == act);
}

/* True when w exists and takes activation format `act` (f32 included). */
static bool act_is(const tb_weight_t *w, tb_type_t act) {
    return w->data && tb_type_traits(w->type)->vec_dot_type == act;
}

/* True when layer L's decode step can run split at 2 threads (split.c):
 * an even number of kv heads; Q, K, V and Wo on one activation format
 * (quantized, or f32 for F16/BF16/F32 weights), Wo cut between the two
 * halves of its kv heads (whole blocks, 16-row units); dense: gate, up and
 * down on that format too and down cut at its middle block; MoE: an
 * f32-activation router (its rows cut at a 16-row unit), gate and up on
 * one quantized format, down on a quantized one (each thread runs its
 * experts whole: no cut). */
static bool split_fits(const tb_model_info_t *in, const tb_layer_t *L, int64_t wo_cut, int64_t down_cut) {
    const tb_type_t act = tb_type_traits(L->wq.type)->vec_dot_type;
    const tb_weight_t *w[] = {&L->wq, &L->wk, &L->wv, &L->wo};
    for (size_t i = 0; i < TB_ARRAY_LEN(w); i++)
        if (!act_is(w[i], act)) return false;
    const int64_t hd = in->head_dim, gq = (int64_t)(in->n_head / in->n_head_kv) * hd;
    if (in->n_head_kv % 2 || !wo_cut || hd % 16 || gq % 16) return false;
    if (in->n_expert > 0)
        return act_is(&L->router, TB_TYPE_F32) && act_quantized(&L->gate_exps, TB_TYPE_COUNT) &&
               act_quantized(&L->up_exps, tb_type_traits(L->gate_exps.type)->vec_dot_type) &&
               act_quantized(&L->down_exps, TB_TYPE_COUNT);
    return act_is(&L->ffn_gate, act) && act_is(&L->ffn_up, act) && act_is(&L->ffn_down, act) && down_cut &&
           down_cut % 16 == 0;
}

/* Cut Wo (and a dense layer's ffn_down) of every layer whose decode step
 * can run split (split_fits) into two column slices, views of its rows
 * that take the whole matrix's place: the placement gives each slice its
 * own copy (compact rows) or repacked layout, so the slices cost no more
 * memory than the matrix. Other layers compute as before. */
static void split_columns(tb_model_t *m) {
    const tb_model_info_t *in = &m->info;
    const int64_t group = in->n_head / in->n_head_kv;
    const bool moe = in->n_expert > 0;
    for (int32_t il = 0; il < in->n_layer; il++) {
        tb_layer_t *L = &m->layers[il];
        if (!moe && !L->ffn_down.data) continue;
        const int64_t wc = slice_cut(&L->wo, (int64_t)(in->n_head_kv / 2) * group * in->head_dim);
        int64_t dc = 0;
        if (!moe) {
            const int64_t bd = tb_type_traits(L->ffn_down.type)->blck;
            dc = slice_cut(&L->ffn_down, L->ffn_down.n_in / bd / 2 * bd);
        }
        if (!split_fits(in, L, wc, dc)) continue;
        L->wo_cut = wc;
        L->down_cut = dc;
        slice_view(&L->wo, wc, L->wo_sl);
        if (dc) slice_view(&L->ffn_down, dc, L->down_sl);
        /* each thread's rows of Q, K, V (its kv heads) and of gate and up
         * (down's slice): halves, placed next to its slice (place_weights) */
        L->wq.half_rows = L->wq.n_out / 2;
        L->wk.half_rows = L->wk.n_out / 2;
        L->wv.half_rows = L->wv.n_out / 2;
        if (dc && 2 * dc == L->ffn_gate.n_out && L->ffn_up.n_out == L->ffn_gate.n_out)
            L->ffn_gate.half_rows = L->ffn_up.half_rows = dc;
        m->info.split_layers++;
    }
}

/* Every matrix the forward pass multiplies, each once (a tied output head
 * is the embedding and is visited as `output` only). Returns the count. */
static int weight_list(tb_model_t *m, tb_weight_t **w, int cap) {
    int n = 0;
#define ADD(x) if ((x).data && n < cap) w[n++] = &(x);
    for (int32_t il = 0; il < m->info.n_layer; il++) {
        tb_layer_t *L = &m->layers[il];
        ADD(L->wq) ADD(L->wk) ADD(L->wv)
        if (L->wo_cut) { ADD(L->wo_sl[0]) ADD(L->wo_sl[1]) } else { ADD(L->wo) }
        ADD(L->ffn_gate) ADD(L->ffn_up)
        if (L->down_cut) { ADD(L->down_sl[0]) ADD(L->down_sl[1]) } else { ADD(L->ffn_down) }
        ADD(L->router)
        ADD(L->gate_exps) ADD(L->up_exps) ADD(L->down_exps)
    }
    ADD(m->output)
#undef ADD
    return n;
}

#define ARENA_ALIGN 4096u   /* each matrix stack starts on its own page */

/* The layer whose struct holds weight x, or NULL (the output head). */
static const tb_layer_t *layer_of(const tb_model_t *m, const tb_weight_t *x) {
    const uintptr_t p = (uintptr_t)x, b = (uintptr_t)m->layers;
    if (p < b || p >= b + (uintptr_t)m->info.n_layer * sizeof(tb_layer_t)) return NULL;
    return &m->layers[(p - b) / sizeof(tb_layer_t)];
}

/* How many of w[i], w[i+1], w[i+2] form one expert group: 3 when they are
 * one layer's expert gate, up and down stacks, 2 for its gate and up alone,
 * all repacked to the same 64-byte multiple per matrix; else 1. A group
 * is placed as one region, expert by expert (gate_e, up_e, down_e,
 * gate_e+1, ...), so a decode step reads each selected expert as one
 * stream: a stream start measured ~1.2 us per 135 KB segment on a 2-vCPU
 * AMD EPYC (Zen 4) KVM guest, and an expert is three segments. */
static int expert_group(tb_model_t *m, tb_weight_t *const *w, const size_t *sz, const bool *rp, int i, int n) {
    if (i + 1 >= n || !rp[i] || !rp[i + 1] || sz[i] != sz[i + 1]) return 1;
    const tb_weight_t *g = w[i], *u = w[i + 1];
    const tb_layer_t *L = layer_of(m, g);
    if (!L || g != &L->gate_exps || u != &L->up_exps || g->type != u->type || g->row_bytes != u->row_bytes ||
        g->n_out != u->n_out || g->n_mat != u->n_mat || g->n_mat < 2 || (sz[i] / (size_t)g->n_mat) % 64)
        return 1;
    const bool down = i + 2 < n && w[i + 2] == &L->down_exps && rp[i + 2] && sz[i + 2] == sz[i] &&
                      w[i + 2]->n_mat == g->n_mat;
    return down ? 3 : 2;
}

/* How many of w[i], w[i+1], ... form one split group: a split layer's
 * Q, K, V and Wo's two slices (5), or its dense gate, up and down's two
 * slices (4), all repacked, each half and slice a 64-byte multiple; else
 * 0. A group is placed thread by thread, Q_0 K_0 V_0 Wo_0 then Q_1 K_1
 * V_1 Wo_1 (gate_0 up_0 down_0 then gate_1 up_1 down_1; _0: the first
 * half's rows, or slice 0), so that each thread of the split decode
 * (split.c) reads a pass's matrices as one stream instead of four. */
static int split_group(tb_model_t *m, tb_weight_t *const *w, const size_t *sz, const bool *rp, int i, int n) {
    const tb_layer_t *L = layer_of(m, w[i]);
    if (!L || (w[i] != &L->wq && w[i] != &L->ffn_gate)) return 0;
    const bool attn = w[i] == &L->wq;
    const tb_weight_t *const wa[5] = {&L->wq, &L->wk, &L->wv, &L->wo_sl[0], &L->wo_sl[1]};
    const tb_weight_t *const wf[4] = {&L->ffn_gate, &L->ffn_up, &L->down_sl[0], &L->down_sl[1]};
    const tb_weight_t *const *want = attn ? wa : wf;
    const int cnt = attn ? 5 : 4, halves = cnt - 2;
    if (!(attn ? L->wo_cut : L->down_cut) || i + cnt > n) return 0;
    for (int j = 0; j < cnt; j++) {
        const tb_weight_t *x = w[i + j];
        if (x != want[j] || !rp[i + j] || !sz[i + j]) return 0;
        if (j < halves ? !x->half_rows || (sz[i + j] / 2) % 64 : sz[i + j] % 64) return 0;
    }
    return cnt;
}

/* One region of the arena: a weight, an expert group or a split group,
 * and where it goes. */
typedef struct place_region {
    int first;                /* index into the weight list               */
    int count;                /* first .. first + count - 1, interleaved  */
    int halves;               /* a split group: its halved weights (3, 2) */
    size_t bytes;             /* their sz summed                          */
    size_t off;               /* its offset in the arena                  */
} place_region;

typedef struct place_ctx {
    tb_model_t *m;
    tb_weight_t **w;
    const size_t *sz;
    const bool *rp;
    place_region *reg;        /* (n_reg) largest first */
    int n_reg;
    _Atomic int next;         /* next region to claim  */
    _Atomic uint64_t repacked;
    _Atomic int rc;           /* first failure         */
    char msg[512];            /* its message           */
} place_ctx;

/* Copy or repack weight j to `at`, its matrices (its halves when it has
 * two) `stride` bytes apart (0: one after the other); *repacked: bytes
 * repacked. */
static int place_weight(place_ctx *c, int j, uint8_t *at, size_t stride, uint64_t *repacked) {
    tb_weight_t *x = c->w[j];
    if (!c->sz[j]) return TB_OK;
    /* the file bytes x's rows span (a slice's: parts of the rows) */
    const size_t rb = tb_type_row_bytes(x->type, x->n_in);
    const size_t span = x->mat_bytes * (size_t)(x->n_mat - 1) + x->row_bytes * (size_t)(x->n_out - 1) + rb;
    tb_mapping_populate(x->data, span);
    if (c->rp[j]) {
        const int64_t h = x->half_rows;
        size_t got;
        const int rc = tb_repack_register_at(c->m, x->type, x->data, x->row_bytes, h ? h : x->n_out, x->n_in,
                                             h ? 2 : x->n_mat, at, stride, &got);
        if (rc != TB_OK) return rc;
        assert(got == c->sz[j]);
        *repacked += got;
    } else if (rb == x->row_bytes) {
        memcpy(at, x->data, x->mat_bytes * (size_t)x->n_mat);
    } else {                           /* a slice: its parts of the rows, packed */
        assert(x->n_mat == 1);
        for (int64_t i = 0; i < x->n_out; i++)
            memcpy(at + (size_t)i * rb, (const uint8_t *)x->data + (size_t)i * x->row_bytes, rb);
    }
    /* (the other slice of a matrix may still read these pages: they
     * come back from the file) */
    tb_mapping_release(x->data, span);
    if (!c->rp[j]) {
        if (c->m->tied && x == &c->m->output) c->m->tok_embd.data = at;
        x->data = at;
        x->row_bytes = rb;
        x->mat_bytes = rb * (size_t)x->n_out;
    }
    return TB_OK;
}

/* Copy or repack region r into its place; *repacked: bytes repacked. */
static int place_one(place_ctx *c, const place_region *r, uint64_t *repacked) {
    uint8_t *at = (uint8_t *)c->m->arena + r->off;
    int rc = TB_OK;
    if (r->halves) {              /* part k: every halved weight's half k, then slice k */
        const int s0 = r->first + r->halves;
        size_t off = 0, part = c->sz[s0];
        for (int j = r->first; j < s0; j++) part += c->sz[j] / 2;
        for (int j = r->first; j < s0 && rc == TB_OK; j++) {
            rc = place_weight(c, j, at + off, part, repacked);
            off += c->sz[j] / 2;
        }
        if (rc == TB_OK) rc = place_weight(c, s0, at + off, 0, repacked);
        if (rc == TB_OK) rc = place_weight(c, s0 + 1, at + part + off, 0, repacked);
        return rc;
    }
    /* a group of c: matrix e of its j-th stack at (e c + j) mb */
    for (int j = r->first; j < r->first + r->count && rc == TB_OK; j++) {
        const size_t mb = c->rp[j] ? c->sz[j] / (size_t)c->w[j]->n_mat : 0;
        rc = place_weight(c, j, at + (size_t)(j - r->first) * mb, r->count > 1 ? (size_t)r->count * mb : 0,
                          repacked);
    }
    return rc;
}

static void place_worker(void *arg, int ith, int nth) {
    place_ctx *c = arg;
    (void)ith;
    (void)nth;
    int i;
    while ((i = atomic_fetch_add(&c->next, 1)) < c->n_reg && atomic_load(&c->rc) == TB_OK) {
        uint64_t got = 0;
        const int rc = place_one(c, &c->reg[i], &got);
        atomic_fetch_add(&c->repacked, got);
        int ok = TB_OK;
        if (rc != TB_OK && atomic_compare_exchange_strong(&c->rc, &ok, rc))
            snprintf(c->msg, sizeof c->msg, "%s", tb_last_error());   /* this thread's message */
    }
}

static int cmp_region(const void *a, const void *b) {
    const place_region *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : x->first - y->first;
}

/* Give every matrix its run-time home in one huge-page arena:
 *   - a repacked copy when the active tier has a faster layout for the type
 *     (registered with kernels/repack.c under the file address, which the
 *     weight keeps, so other tiers still read the file layout);
 *   - else, in TB_WEIGHTS_COPY mode, a plain copy (the weight then points to
 *     it);
 *   - else the file mapping, untouched.
 * Source pages of the file mapping are dropped from the resident set after
 * they were copied, so resident memory stays ~ one copy of the weights.
 * Regions are laid out in the forward pass's order, then filled by
 * n_threads threads, largest region first (the same bytes for any count). */
static int place_weights(tb_model_t *m, tb_weights_mode_t mode, int n_threads) {
    const int cap = 13 * m->info.n_layer + 1;
    tb_weight_t **w = malloc(sizeof *w * (size_t)cap);
    size_t *sz = malloc(sizeof *sz * (size_t)cap);
    bool *rp = malloc(sizeof *rp * (size_t)cap);
    place_region *reg = malloc(sizeof *reg * (size_t)cap);
    tb_pool_t *pool = NULL;
    int rc = TB_OK;
    if (!w || !sz || !rp || !reg) {
        rc = tb_err(TB_ERR_NOMEM, "out of memory placing weights");
        goto done;
    }
    const int n = weight_list(m, w, cap);
    for (int i = 0; i < n; i++) {
        const tb_weight_t *x = w[i];
        const int64_t h = x->half_rows;    /* halves: a stack of two */
        const size_t r = tb_repack_size(x->type, tb_type_row_bytes(x->type, x->n_in), h ? h : x->n_out,
                                        h ? 2 : x->n_mat);
        rp[i] = r > 0;
        sz[i] = r ? r : mode == TB_WEIGHTS_COPY ? tb_weight_bytes(x) * (size_t)x->n_mat : 0;
    }
    int n_reg = 0;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const int sg = split_group(m, w, sz, rp, i, n);
        const int cnt = sg ? sg : expert_group(m, w, sz, rp, i, n);
        size_t bytes = 0;
        for (int j = i; j < i + cnt; j++) bytes += sz[j];
        reg[n_reg] = (place_region){.first = i, .count = cnt, .halves = sg ? sg - 2 : 0, .bytes = bytes,
                                    .off = total};
        total += (reg[n_reg].bytes + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
        n_reg += reg[n_reg].bytes > 0;
        i += cnt - 1;
    }
    if (total == 0) goto done;
    m->arena = tb_huge_alloc(total);
    if (!m->arena) {
        rc = tb_err(TB_ERR_NOMEM, "out of memory for %zu bytes of model weights "
                    "(try loading with the weights mapped from the file)", total);
        goto done;
    }
    m->arena_bytes = total;
    qsort(reg, (size_t)n_reg, sizeof *reg, cmp_region);
    if (n_threads > 1 && (rc = tb_pool_new(TB_MIN(n_threads, n_reg), &pool)) != TB_OK) goto done;
    place_ctx c = {.m = m, .w = w, .sz = sz, .rp = rp, .reg = reg, .n_reg = n_reg};
    atomic_init(&c.next, 0);
    atomic_init(&c.repacked, 0);
    atomic_init(&c.rc, TB_OK);
    tb_pool_run(pool, place_worker, &c);
    rc = atomic_load(&c.rc);
    if (rc != TB_OK) {
        tb_err(rc, "%s", c.msg);
        goto done;
    }
    m->info.repack_bytes = atomic_load(&c.repacked);
    m->info.resident_bytes = total;
done:
    tb_pool_free(pool);
    free(reg);
    free(w);
    free(sz);
    free(rp);
    return rc;
}

/* ===================================================================== */
/* Public API                                                             */
/* ===================================================================== */

int tb_model_load(const char *path, tb_model_t **out) {
    return tb_model_load_ex(path, NULL, out);
}

int tb_model_load_ex(const char *path, const tb_model_params_t *p, tb_model_t **out) {
    if (!path || !out) return tb_err(TB_ERR_ARG, "tb_model_load: NULL argument");
    const tb_weights_mode_t mode = p ? p->weights : TB_WEIGHTS_COPY;
    if (mode != TB_WEIGHTS_COPY && mode != TB_WEIGHTS_MMAP)
        return tb_err(TB_ERR_ARG, "tb_model_load: unknown weights mode %d", (int)mode);
    *out = NULL;
    uint64_t t0 = tb_now_ns();
    tb_model_t *m = calloc(1, sizeof *m);
    if (!m) return tb_err(TB_ERR_NOMEM, "out of memory for model");
    int rc = tb_gguf_open(path, &m->gguf);
    if (rc == TB_OK) rc = tb_model_read_hparams(m, path);
    if (rc == TB_OK) rc = load_tensors(m, path);
    if (rc == TB_OK && tb_gguf_find_kv(m->gguf, "tokenizer.ggml.model") >= 0) {
        rc = tb_tokenizer_from_gguf(m->gguf, &m->tok);
        if (rc != TB_OK) rc = tb_err_prefix(rc, "%s: tokenizer", path);
        /* every id the tokenizer can produce needs an embedding row, and
         * every logit a token: the two counts must agree (as llama.cpp) */
        else if (tb_tokenizer_n_vocab(m->tok) != m->info.n_vocab)
            rc = tb_err(TB_ERR_FORMAT, "%s: tokenizer has %d tokens, token_embd has %d rows",
                        path, tb_tokenizer_n_vocab(m->tok), m->info.n_vocab);
    }
    if (rc != TB_OK) {
        tb_model_free(m);
        return rc;
    }
    compute_info(m);
    m->info.weights_mode = (int32_t)mode;
    split_columns(m);
    if ((rc = place_weights(m, mode, p ? p->n_threads : 1)) != TB_OK) {
        tb_model_free(m);
        return rc;
    }
    m->info.load_ns = tb_now_ns() - t0;
    *out = m;
    return TB_OK;
}

void tb_model_free(tb_model_t *m) {
    if (!m) return;
    tb_repack_release(m);
    tb_huge_free(m->arena);
    tb_tokenizer_free(m->tok);
    free(m->layers);
    free(m->norm_store);
    tb_gguf_close(m->gguf);
    free(m);
}

int tb_model_get_info(const tb_model_t *m, tb_model_info_t *out) {
    if (!m || !out) return tb_err(TB_ERR_ARG, "tb_model_get_info: NULL argument");
    *out = m->info;
    return TB_OK;
}

int32_t tb_model_n_vocab(const tb_model_t *m) { return m ? m->info.n_vocab : 0; }
const tb_gguf_t *tb_model_gguf(const tb_model_t *m) { return m ? m->gguf : NULL; }
const tb_tokenizer_t *tb_model_tokenizer(const tb_model_t *m) { return m ? m->tok : NULL; }

/* See ternbench.h for the formula: the account is tb_geometry_bytes_per_token
 * over the file's own tensor table (geometry.c). */
int tb_model_bytes_per_token(const tb_model_t *m, int32_t ctx, tb_type_t kv_type,
                             tb_bytes_per_token_t *out) {
    if (!m || !out) return tb_err(TB_ERR_ARG, "tb_model_bytes_per_token: NULL argument");
    if (ctx < 0) return tb_err(TB_ERR_ARG, "tb_model_bytes_per_token: negative context %d", ctx);
    if (kv_type != TB_TYPE_F32 && kv_type != TB_TYPE_F16)
        return tb_err(TB_ERR_ARG, "tb_model_bytes_per_token: KV type must be f32 or f16, got %s",
                      tb_type_name(kv_type));
    tb_geometry_t *g;
    int rc = tb_geometry_from_model(m, &g);
    if (rc == TB_OK) rc = tb_geometry_bytes_per_token(g, ctx, kv_type, NULL, out);
    tb_geometry_free(g);
    return rc;
}
