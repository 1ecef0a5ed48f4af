/*
 * plan.c — presets and the plan of a synthetic GGUF: every metadata key,
 * every tensor (name, type, shape, bytes) and the exact file size, computed
 * without generating a single weight. tb_synth_model() executes a plan;
 * tests inspect one (the 5.9 GB maple-preview is only ever planned there).
 */
#include "synth/synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGUF_ALIGN 32u
/* Tensor-name suffix: llama.cpp's names ("blk.0.attn_q.weight"), which every
 * converted model uses; the loader also accepts the bare form ("blk.0.attn_q"). */
#define WSUFFIX ".weight"

/* ===================================================================== */
/* Presets                                                                */
/* ===================================================================== */

static const synth_preset_t presets[] = {
    /* Maple-Preview at true scale, with the official GGUF's tensor types. */
    {.name = "maple-preview", .arch = SYNTH_ARCH_MAPLE,
     .n_layer = 24, .n_embd = 2048, .n_head = 16, .n_head_kv = 4, .head_dim = 128,
     .n_expert = 256, .n_expert_used = 8, .n_ff_exp = 512,
     .n_swa = 512, .global_every = 4, .rope_dims = 64, .n_vocab = 151936,
     .n_ctx_train = 32768, .rope_base = 1000000.0f, .rope_base_swa = 10000.0f,
     .norm_eps = 1e-6f, .swiglu_clamp = 7.0f,
     .proj_type = TB_TYPE_TQ2_0, .embd_type = TB_TYPE_F16, .output_type = TB_TYPE_Q4_K,
     .pre = "qwen2"},
    /* Same topology, every feature, small: 3 sliding + 1 global layer,
     * 8 experts with 2 used, a 16-token window so test contexts wrap. */
    {.name = "maple-tiny", .arch = SYNTH_ARCH_MAPLE,
     .n_layer = 4, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .head_dim = 64,
     .n_expert = 8, .n_expert_used = 2, .n_ff_exp = 256,
     .n_swa = 16, .global_every = 4, .rope_dims = 32, .n_vocab = 512,
     .n_ctx_train = 4096, .rope_base = 1000000.0f, .rope_base_swa = 10000.0f,
     .norm_eps = 1e-6f, .swiglu_clamp = 7.0f,
     .proj_type = TB_TYPE_F32, .embd_type = TB_TYPE_F32, .output_type = TB_TYPE_F32,
     .pre = "qwen2"},
    {.name = "llama-tiny", .arch = SYNTH_ARCH_LLAMA,
     .n_layer = 2, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .head_dim = 64,
     .n_ff = 512, .rope_dims = 64, .n_vocab = 512, .n_ctx_train = 2048,
     .rope_base = 10000.0f, .norm_eps = 1e-5f,
     .proj_type = TB_TYPE_F32, .embd_type = TB_TYPE_F32, .output_type = TB_TYPE_F32,
     .pre = "gpt-2"},
    /* llama MoE (Mixtral layout): feed_forward_length is the expert width. */
    {.name = "moe-tiny", .arch = SYNTH_ARCH_LLAMA,
     .n_layer = 2, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .head_dim = 64,
     .n_expert = 4, .n_expert_used = 2, .n_ff_exp = 256,
     .rope_dims = 64, .n_vocab = 512, .n_ctx_train = 2048,
     .rope_base = 10000.0f, .norm_eps = 1e-5f,
     .proj_type = TB_TYPE_F32, .embd_type = TB_TYPE_F32, .output_type = TB_TYPE_F32,
     .pre = "gpt-2"},
    /* Dense ~0.85B llama (TinyLlama-like geometry). */
    {.name = "llama-1b", .arch = SYNTH_ARCH_LLAMA,
     .n_layer = 16, .n_embd = 2048, .n_head = 32, .n_head_kv = 8, .head_dim = 64,
     .n_ff = 5632, .rope_dims = 64, .n_vocab = 32000, .n_ctx_train = 2048,
     .rope_base = 10000.0f, .norm_eps = 1e-5f,
     .proj_type = TB_TYPE_F16, .embd_type = TB_TYPE_F16, .output_type = TB_TYPE_F16,
     .pre = "gpt-2"},
};

static const char *const preset_names[] = {
    "maple-preview", "maple-tiny", "llama-tiny", "moe-tiny", "llama-1b", NULL,
};

const char *const *tb_synth_presets(void) { return preset_names; }

const synth_preset_t *synth_preset_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < TB_ARRAY_LEN(presets); i++)
        if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

uint32_t synth_ftype_of(tb_type_t t) {
    switch (t) {
    case TB_TYPE_F32: return 0;
    case TB_TYPE_F16: return 1;
    case TB_TYPE_Q4_0: return 2;
    case TB_TYPE_Q8_0: return 7;
    case TB_TYPE_Q4_K: return 15;    /* Q4_K_M */
    case TB_TYPE_Q6_K: return 18;
    case TB_TYPE_BF16: return 32;
    case TB_TYPE_TQ1_0: return 36;
    case TB_TYPE_TQ2_0: return 37;
    default: return 0;
    }
}

/* ===================================================================== */
/* Building the lists                                                     */
/* ===================================================================== */

static synth_kv_t *kv_push(synth_plan_t *pl, const char *key, synth_kv_kind_t kind) {
    if (pl->n_kv == pl->cap_kv) {
        int cap = pl->cap_kv ? 2 * pl->cap_kv : 32;
        synth_kv_t *kv = realloc(pl->kv, (size_t)cap * sizeof *kv);
        if (!kv) return NULL;
        pl->kv = kv;
        pl->cap_kv = cap;
    }
    synth_kv_t *e = &pl->kv[pl->n_kv++];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->kind = kind;
    return e;
}

synth_kv_t *synth_plan_push_kv(synth_plan_t *pl, const char *key, synth_kv_kind_t kind) {
    return kv_push(pl, key, kind);
}

/* Key "<arch>.<suffix>" */
static synth_kv_t *akv(synth_plan_t *pl, const char *suffix, synth_kv_kind_t kind) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s",
             pl->preset->arch == SYNTH_ARCH_MAPLE ? "maple" : "llama", suffix);
    return kv_push(pl, key, kind);
}

#define PUT_U32(pl, k, x)  do { synth_kv_t *e_ = akv(pl, k, SYNTH_KV_U32); if (!e_) goto nomem; e_->v.u32 = (uint32_t)(x); } while (0)
#define PUT_F32(pl, k, x)  do { synth_kv_t *e_ = akv(pl, k, SYNTH_KV_F32); if (!e_) goto nomem; e_->v.f32 = (x); } while (0)

static int add_tensor(synth_plan_t *pl, const char *name, tb_type_t type, int n_dims,
                      int64_t ne0, int64_t ne1, int64_t ne2, synth_init_t init) {
    if (pl->n_tensors == pl->cap_tensors) {
        int cap = pl->cap_tensors ? 2 * pl->cap_tensors : 64;
        synth_tensor_t *t = realloc(pl->tensors, (size_t)cap * sizeof *t);
        if (!t) return tb_err(TB_ERR_NOMEM, "out of memory for the tensor plan");
        pl->tensors = t;
        pl->cap_tensors = cap;
    }
    synth_tensor_t *t = &pl->tensors[pl->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_dims = n_dims;
    t->ne[0] = ne0; t->ne[1] = ne1; t->ne[2] = ne2; t->ne[3] = 1;
    t->init = init;
    size_t row = tb_type_row_bytes(type, ne0);
    if (row == 0)
        return tb_err(TB_ERR_ARG, "tensor %s: row of %lld elements does not fit type %s "
                      "(block of %lld)", name, (long long)ne0, tb_type_name(type),
                      (long long)tb_type_block_elems(type));
    t->nbytes = (uint64_t)row * (uint64_t)(ne1 * ne2);
    pl->n_params += ne0 * ne1 * ne2;
    pl->n_tensors++;
    return TB_OK;
}

static int add_blk(synth_plan_t *pl, int il, const char *what, tb_type_t type, int n_dims,
                   int64_t ne0, int64_t ne1, int64_t ne2, synth_init_t init) {
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%s" WSUFFIX, il, what);
    return add_tensor(pl, name, type, n_dims, ne0, ne1, ne2, init);
}

/* The tensor list of the preset, in file order. */
static int plan_tensors(synth_plan_t *pl) {
    const synth_preset_t *P = pl->preset;
    const int64_t E = P->n_embd, V = pl->n_vocab;
    const int64_t QD = (int64_t)P->n_head * P->head_dim, KD = (int64_t)P->n_head_kv * P->head_dim;
    const tb_type_t T = pl->proj_type, F = TB_TYPE_F32;
    const synth_init_t W = SYNTH_INIT_WEIGHT, N = SYNTH_INIT_NORM;
    int rc;
#define TRY(x) do { if ((rc = (x)) != TB_OK) return rc; } while (0)
    TRY(add_tensor(pl, "token_embd" WSUFFIX, P->embd_type, 2, E, V, 1, W));
    for (int il = 0; il < P->n_layer; il++) {
        TRY(add_blk(pl, il, "attn_norm", F, 1, E, 1, 1, N));
        TRY(add_blk(pl, il, "attn_q", T, 2, E, QD, 1, W));
        TRY(add_blk(pl, il, "attn_k", T, 2, E, KD, 1, W));
        TRY(add_blk(pl, il, "attn_v", T, 2, E, KD, 1, W));
        TRY(add_blk(pl, il, "attn_output", T, 2, QD, E, 1, W));
        if (P->arch == SYNTH_ARCH_MAPLE) {
            TRY(add_blk(pl, il, "attn_q_norm", F, 1, P->head_dim, 1, 1, N));
            TRY(add_blk(pl, il, "attn_k_norm", F, 1, P->head_dim, 1, 1, N));
        }
        TRY(add_blk(pl, il, "ffn_norm", F, 1, E, 1, 1, N));
        if (P->n_expert > 0) {
            const int64_t X = P->n_expert, FF = P->n_ff_exp;
            TRY(add_blk(pl, il, "ffn_gate_inp", F, 2, E, X, 1, W));
            TRY(add_blk(pl, il, "ffn_gate_exps", T, 3, E, FF, X, W));
            TRY(add_blk(pl, il, "ffn_up_exps", T, 3, E, FF, X, W));
            TRY(add_blk(pl, il, "ffn_down_exps", T, 3, FF, E, X, W));
        } else {
            TRY(add_blk(pl, il, "ffn_gate", T, 2, E, P->n_ff, 1, W));
            TRY(add_blk(pl, il, "ffn_up", T, 2, E, P->n_ff, 1, W));
            TRY(add_blk(pl, il, "ffn_down", T, 2, P->n_ff, E, 1, W));
        }
    }
    TRY(add_tensor(pl, "output_norm" WSUFFIX, F, 1, E, 1, 1, N));
    TRY(add_tensor(pl, "output" WSUFFIX, P->output_type, 2, E, V, 1, W));
#undef TRY
    return TB_OK;
}

/* The model's metadata (tokenizer keys are added at declaration time). */
static int plan_keys(synth_plan_t *pl) {
    const synth_preset_t *P = pl->preset;
    const bool maple = P->arch == SYNTH_ARCH_MAPLE;
    synth_kv_t *e;
    if (!(e = kv_push(pl, "general.architecture", SYNTH_KV_STR))) goto nomem;
    snprintf(e->v.str, sizeof e->v.str, "%s", maple ? "maple" : "llama");
    if (!(e = kv_push(pl, "general.name", SYNTH_KV_STR))) goto nomem;
    snprintf(e->v.str, sizeof e->v.str, "synthetic %s", P->name);
    if (!(e = kv_push(pl, "general.file_type", SYNTH_KV_U32))) goto nomem;
    e->v.u32 = synth_ftype_of(pl->proj_type);

    PUT_U32(pl, "context_length", P->n_ctx_train);
    PUT_U32(pl, "block_count", P->n_layer);
    PUT_U32(pl, "embedding_length", P->n_embd);
    if (!maple) PUT_U32(pl, "feed_forward_length", P->n_expert ? P->n_ff_exp : P->n_ff);
    PUT_U32(pl, "attention.head_count", P->n_head);
    PUT_U32(pl, "attention.head_count_kv", P->n_head_kv);
    if (maple) {
        PUT_U32(pl, "attention.key_length", P->head_dim);
        PUT_U32(pl, "attention.value_length", P->head_dim);
    }
    PUT_F32(pl, "attention.layer_norm_rms_epsilon", P->norm_eps);
    PUT_F32(pl, "rope.freq_base", P->rope_base);
    PUT_U32(pl, "rope.dimension_count", P->rope_dims);
    if (P->n_expert > 0) {
        PUT_U32(pl, "expert_count", P->n_expert);
        PUT_U32(pl, "expert_used_count", P->n_expert_used);
    }
    if (maple) {
        PUT_U32(pl, "expert_feed_forward_length", P->n_ff_exp);
        PUT_U32(pl, "attention.sliding_window", P->n_swa);
        PUT_F32(pl, "rope.freq_base_swa", P->rope_base_swa);
        /* per-layer arrays: sliding pattern (true = sliding) and clamp */
        if (!(e = akv(pl, "attention.sliding_window_pattern", SYNTH_KV_ARR))) goto nomem;
        e->arr_type = TB_GGUF_BOOL;
        e->arr_n = (uint64_t)P->n_layer;
        uint8_t *pat = malloc((size_t)P->n_layer);
        if (!(e->arr = pat)) goto nomem;
        for (int il = 0; il < P->n_layer; il++)
            pat[il] = (il % P->global_every) != P->global_every - 1;
        if (!(e = akv(pl, "swiglu_clamp_exp", SYNTH_KV_ARR))) goto nomem;
        e->arr_type = TB_GGUF_FLOAT32;
        e->arr_n = (uint64_t)P->n_layer;
        float *cl = malloc((size_t)P->n_layer * sizeof *cl);
        if (!(e->arr = cl)) goto nomem;
        for (int il = 0; il < P->n_layer; il++) cl[il] = P->swiglu_clamp;
    }
    return TB_OK;
nomem:
    return tb_err(TB_ERR_NOMEM, "out of memory for the metadata plan");
}

/* ===================================================================== */
/* Exact file size                                                        */
/* ===================================================================== */

static uint64_t str_bytes(uint64_t len) { return 8 + len; }

static uint64_t elem_bytes(tb_gguf_vtype_t t) {
    switch (t) {
    case TB_GGUF_UINT8: case TB_GGUF_INT8: case TB_GGUF_BOOL: return 1;
    case TB_GGUF_UINT16: case TB_GGUF_INT16: return 2;
    case TB_GGUF_UINT32: case TB_GGUF_INT32: case TB_GGUF_FLOAT32: return 4;
    default: return 8;
    }
}

/* Encoded size of a value read from another GGUF (for --vocab-from). */
static uint64_t value_bytes(const tb_gguf_t *g, const tb_gguf_value_t *v) {
    if (v->type == TB_GGUF_STRING) return str_bytes(v->v.str.len);
    if (v->type != TB_GGUF_ARRAY) return elem_bytes(v->type);
    uint64_t n = 4 + 8;
    if (v->v.arr.type != TB_GGUF_STRING && v->v.arr.type != TB_GGUF_ARRAY)
        return n + v->v.arr.n * elem_bytes(v->v.arr.type);
    for (uint64_t i = 0; i < v->v.arr.n; i++) {
        tb_gguf_value_t e;
        if (tb_gguf_arr_get(g, v, i, &e) != TB_OK) break;
        n += value_bytes(g, &e);
    }
    return n;
}

static uint64_t plan_kv_bytes(const synth_kv_t *e) {
    uint64_t n = str_bytes(strlen(e->key)) + 4;
    switch (e->kind) {
    case SYNTH_KV_U32: case SYNTH_KV_F32: return n + 4;
    case SYNTH_KV_BOOL: return n + 1;
    case SYNTH_KV_STR: return n + str_bytes(strlen(e->v.str));
    case SYNTH_KV_U64: return n + 8;
    case SYNTH_KV_ARR: return n + 12 + e->arr_n * elem_bytes(e->arr_type);
    }
    return n;
}

/* Header + metadata + tensor infos + padding + data, as the writer lays it out. */
static void plan_size(synth_plan_t *pl) {
    uint64_t n = 4 + 4 + 8 + 8;
    for (int i = 0; i < pl->n_kv; i++) n += plan_kv_bytes(&pl->kv[i]);
    if (pl->vocab_src) {
        for (int64_t i = 0; i < tb_gguf_n_kv(pl->vocab_src); i++) {
            const char *k = tb_gguf_kv_key(pl->vocab_src, i);
            tb_gguf_value_t v;
            if (strncmp(k, "tokenizer.", 10) || tb_gguf_kv_value(pl->vocab_src, i, &v)) continue;
            n += str_bytes(strlen(k)) + 4 + value_bytes(pl->vocab_src, &v);
        }
    } else {
        const synth_vocab_t *vo = &pl->vocab;
        n += str_bytes(strlen("tokenizer.ggml.model")) + 4 + str_bytes(4);
        n += str_bytes(strlen("tokenizer.ggml.pre")) + 4 + str_bytes(strlen(pl->preset->pre));
        n += str_bytes(strlen("tokenizer.ggml.tokens")) + 4 + 12;
        for (int32_t i = 0; i < vo->n_tokens; i++) n += str_bytes(strlen(vo->tokens[i]));
        n += str_bytes(strlen("tokenizer.ggml.token_type")) + 4 + 12 + 4 * (uint64_t)vo->n_tokens;
        n += str_bytes(strlen("tokenizer.ggml.merges")) + 4 + 12;
        for (int32_t i = 0; i < vo->n_merges; i++) n += str_bytes(strlen(vo->merges[i]));
        n += str_bytes(strlen("tokenizer.ggml.bos_token_id")) + 4 + 4;
        n += str_bytes(strlen("tokenizer.ggml.eos_token_id")) + 4 + 4;
        n += str_bytes(strlen("tokenizer.ggml.add_bos_token")) + 4 + 1;
    }
    uint64_t data = 0;
    for (int i = 0; i < pl->n_tensors; i++) {
        const synth_tensor_t *t = &pl->tensors[i];
        n += str_bytes(strlen(t->name)) + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
        data = (data + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN;
        data += t->nbytes;
    }
    n = (n + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN;
    pl->data_bytes = data;
    pl->file_bytes = n + data;
}

/* ===================================================================== */
/* Plan build / free / declare                                            */
/* ===================================================================== */

int synth_plan_build(const tb_synth_params_t *p, synth_plan_t *pl) {
    memset(pl, 0, sizeof *pl);
    if (!p) return tb_err(TB_ERR_ARG, "synth: params are NULL");
    const synth_preset_t *P = synth_preset_find(p->preset);
    if (!P) return tb_err(TB_ERR_ARG, "synth: unknown preset '%s' (expected maple-preview, "
                          "maple-tiny, llama-tiny, moe-tiny or llama-1b)",
                          p->preset ? p->preset : "(null)");
    pl->preset = P;
    pl->seed = p->seed;
    pl->proj_type = p->type < 0 ? P->proj_type : (tb_type_t)p->type;
    if (!tb_type_supported((uint32_t)pl->proj_type) || pl->proj_type == TB_TYPE_Q8_K)
        return tb_err(TB_ERR_ARG, "synth: type %d cannot hold weights (expected f32, f16, "
                      "bf16, q8_0, q4_0, q4_k, q6_k, tq1_0 or tq2_0)", p->type);
    int rc;
    if (p->vocab_from) {
        if ((rc = tb_gguf_open(p->vocab_from, &pl->vocab_src)) != TB_OK)
            return tb_err_prefix(rc, "synth: --vocab-from");
        int64_t k = tb_gguf_find_kv(pl->vocab_src, "tokenizer.ggml.tokens");
        tb_gguf_value_t v;
        if (k < 0 || tb_gguf_kv_value(pl->vocab_src, k, &v) != TB_OK || v.type != TB_GGUF_ARRAY
            || v.v.arr.type != TB_GGUF_STRING || v.v.arr.n < 1 || v.v.arr.n > INT32_MAX)
            return tb_err(TB_ERR_FORMAT, "synth: %s: expected a string array "
                          "tokenizer.ggml.tokens", p->vocab_from);
        pl->n_vocab = (int32_t)v.v.arr.n;
    } else {
        pl->n_vocab = P->n_vocab;
        if ((rc = synth_vocab_build(P->n_vocab, &pl->vocab)) != TB_OK) return rc;
    }
    if ((rc = plan_keys(pl)) != TB_OK) return rc;
    if ((rc = synth_plan_provenance(pl)) != TB_OK) return rc;
    if ((rc = plan_tensors(pl)) != TB_OK) return rc;
    plan_size(pl);
    return TB_OK;
}

void synth_plan_free(synth_plan_t *pl) {
    if (!pl) return;
    for (int i = 0; i < pl->n_kv; i++) free(pl->kv[i].arr);
    free(pl->kv);
    free(pl->tensors);
    synth_vocab_free(&pl->vocab);
    if (pl->vocab_src) tb_gguf_close(pl->vocab_src);
    memset(pl, 0, sizeof *pl);
}

const synth_kv_t *synth_plan_find_kv(const synth_plan_t *pl, const char *key) {
    for (int i = 0; i < pl->n_kv; i++)
        if (!strcmp(pl->kv[i].key, key)) return &pl->kv[i];
    return NULL;
}

/* Exact name, or the bare form of a ".weight" name ("blk.0.attn_q"). */
const synth_tensor_t *synth_plan_find_tensor(const synth_plan_t *pl, const char *name) {
    const size_t n = strlen(name);
    for (int i = 0; i < pl->n_tensors; i++) {
        const char *t = pl->tensors[i].name;
        if (!strcmp(t, name) || (!strncmp(t, name, n) && !strcmp(t + n, ".weight")))
            return &pl->tensors[i];
    }
    return NULL;
}

/* Built-in tokenizer keys. */
static int declare_vocab(const synth_plan_t *pl, tb_gguf_writer_t *w) {
    const synth_vocab_t *vo = &pl->vocab;
    int rc;
    uint64_t *lens = malloc((size_t)TB_MAX(vo->n_tokens, vo->n_merges) * sizeof *lens);
    if (!lens) return tb_err(TB_ERR_NOMEM, "out of memory for the vocabulary");
    for (int32_t i = 0; i < vo->n_tokens; i++) lens[i] = strlen(vo->tokens[i]);
    if ((rc = tb_gguf_set_str(w, "tokenizer.ggml.model", "gpt2")) ||
        (rc = tb_gguf_set_str(w, "tokenizer.ggml.pre", pl->preset->pre)) ||
        (rc = tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)vo->tokens,
                                  lens, (uint64_t)vo->n_tokens)) ||
        (rc = tb_gguf_set_arr(w, "tokenizer.ggml.token_type", TB_GGUF_INT32, vo->types,
                              (uint64_t)vo->n_tokens)))
        goto out;
    for (int32_t i = 0; i < vo->n_merges; i++) lens[i] = strlen(vo->merges[i]);
    if ((rc = tb_gguf_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)vo->merges,
                                  lens, (uint64_t)vo->n_merges)) ||
        (rc = tb_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)vo->bos)) ||
        (rc = tb_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)vo->eos)) ||
        (rc = tb_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", false)))
        goto out;
out:
    free(lens);
    return rc;
}

int synth_plan_declare(const synth_plan_t *pl, tb_gguf_writer_t *w) {
    int rc = TB_OK;
    for (int i = 0; i < pl->n_kv && rc == TB_OK; i++) {
        const synth_kv_t *e = &pl->kv[i];
        switch (e->kind) {
        case SYNTH_KV_U32: rc = tb_gguf_set_u32(w, e->key, e->v.u32); break;
        case SYNTH_KV_F32: rc = tb_gguf_set_f32(w, e->key, e->v.f32); break;
        case SYNTH_KV_BOOL: rc = tb_gguf_set_bool(w, e->key, e->v.b); break;
        case SYNTH_KV_STR: rc = tb_gguf_set_str(w, e->key, e->v.str); break;
        case SYNTH_KV_U64: rc = tb_gguf_set_u64(w, e->key, e->v.u64); break;
        case SYNTH_KV_ARR: rc = tb_gguf_set_arr(w, e->key, e->arr_type, e->arr, e->arr_n); break;
        }
    }
    if (rc != TB_OK) return rc;
    if (pl->vocab_src) {
        for (int64_t i = 0; i < tb_gguf_n_kv(pl->vocab_src); i++)
            if (!strncmp(tb_gguf_kv_key(pl->vocab_src, i), "tokenizer.", 10) &&
                (rc = tb_gguf_copy_kv(w, pl->vocab_src, i)) != TB_OK)
                return rc;
    } else if ((rc = declare_vocab(pl, w)) != TB_OK) {
        return rc;
    }
    for (int i = 0; i < pl->n_tensors; i++) {
        const synth_tensor_t *t = &pl->tensors[i];
        if ((rc = tb_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne)) != TB_OK)
            return rc;
    }
    return TB_OK;
}
