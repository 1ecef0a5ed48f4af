/*
 * geometry_presets.c — tensor tables of published models, built from their
 * shapes (the config each preset cites) and a weight layout, without weights:
 * tb_geometry_preset. Tensor names follow ggml's, so the account in
 * geometry.c treats a preset exactly as it treats a GGUF file's table.
 *
 * A layout says what each class of tensor is stored as:
 *   f16, bf16, q8_0   every matrix in that type
 *   q4_0              matrices Q4_0, the head Q6_K (llama.cpp's quantize rule)
 *   q4_k              llama.cpp's Q4_K_M mix: Q4_K, with attn_v and ffn_down
 *                     Q6_K on its "more bits" layers, the head Q6_K
 *   tq2_0, tq1_0      projections and experts ternary, embedding F16, head Q4_K
 *                     (Maple-Preview's official GGUF); a tied head stays F16
 *   mlx-8bit/-4bit/-2bit  MLX affine quantization, groups of 64 with a bf16
 *                     scale and bias each, every matrix including embedding and head
 *   mlx-maple         DeepGrove's MLX release of Maple-Preview: projections and
 *                     experts 2-bit codes with one bf16 scale per output row,
 *                     embedding and head mlx-4bit
 *   mxfp4             gpt-oss in llama.cpp's GGUF: experts MXFP4 (32 4-bit
 *                     values and one 8-bit scale), the other matrices Q8_0
 * Norms, biases and the MoE router are F32 in the GGUF layouts (mxfp4 included), bf16 in the
 * MLX ones. A matrix whose rows do not fit a block type falls back
 * to Q8_0, then F16, as llama.cpp's quantizer does.
 */
#include "model/geometry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct preset {
    const char *name, *source, *layout;
    int32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff;
    int32_t n_expert, n_used, n_ff_exp, n_vocab;
    int32_t n_swa, swa_every;   /* layer il slides iff il % swa_every != swa_every - 1 (0: none);
                                   swa_every 2 with swa_first: even layers slide */
    int32_t lin_every;          /* layer il is linear attention iff il % lin_every != lin_every - 1 */
    int32_t lin_v_heads, lin_qk_heads, lin_head_dim, lin_conv;
    bool tied, qk_norm, qkv_bias, o_bias, sinks, router_bias, sub_norm, gated_q, maple;
} preset_t;

static const preset_t presets[] = {
    {.name = "maple-preview", .layout = "tq2_0", .maple = true,
     .source = "DeepGrove Maple-Preview, official GGUF layout: 24 layers (3 sliding of 512 + 1 global), "
               "2048 wide, 16/4 heads of 128, 256 experts (8 used) of 512, vocab 151936; "
               "https://huggingface.co/deepgrove/maple-preview-GGUF (read 2026-12-03), the same "
               "table `model synth --preset maple-preview` writes",
     .n_layer = 24, .n_embd = 2048, .n_head = 16, .n_head_kv = 4, .head_dim = 128,
     .n_expert = 256, .n_used = 8, .n_ff_exp = 512, .n_vocab = 151936, .n_swa = 512, .swa_every = 4,
     .qk_norm = true},
    {.name = "maple-preview-mlx", .layout = "mlx-maple", .maple = true,
     .source = "DeepGrove Maple-Preview, the vendor's MLX layout (2-bit codes + one bf16 scale per "
               "output row for attention and experts, 4-bit group-64 embedding and head, bf16 router "
               "and norms); shapes as maple-preview; https://huggingface.co/deepgrove/maple-preview "
               "(read 2026-12-03)",
     .n_layer = 24, .n_embd = 2048, .n_head = 16, .n_head_kv = 4, .head_dim = 128,
     .n_expert = 256, .n_used = 8, .n_ff_exp = 512, .n_vocab = 151936, .n_swa = 512, .swa_every = 4,
     .qk_norm = true},
    {.name = "bitnet-b1.58-2b4t", .layout = "tq2_0",
     .source = "microsoft/bitnet-b1.58-2B-4T config.json: 30 layers, 2560 wide, 20/5 heads of 128, "
               "ffn 6912, vocab 128256, tied, sub-norms; "
               "https://huggingface.co/microsoft/bitnet-b1.58-2B-4T (read 2026-12-03)",
     .n_layer = 30, .n_embd = 2560, .n_head = 20, .n_head_kv = 5, .head_dim = 128, .n_ff = 6912,
     .n_vocab = 128256, .tied = true, .sub_norm = true},
    {.name = "llama-2-7b", .layout = "q4_0",
     .source = "meta-llama/Llama-2-7b-hf config.json: 32 layers, 4096 wide, 32/32 heads of 128, "
               "ffn 11008, vocab 32000; https://huggingface.co/meta-llama/Llama-2-7b-hf (read 2026-12-03)",
     .n_layer = 32, .n_embd = 4096, .n_head = 32, .n_head_kv = 32, .head_dim = 128, .n_ff = 11008,
     .n_vocab = 32000},
    {.name = "mistral-7b", .layout = "q4_0",
     .source = "mistralai/Mistral-7B-v0.1 config.json: 32 layers, 4096 wide, 32/8 heads of 128, "
               "ffn 14336, vocab 32000; its 4096-position sliding window is not applied (llama.cpp runs "
               "it as llama); https://huggingface.co/mistralai/Mistral-7B-v0.1 (read 2026-12-03)",
     .n_layer = 32, .n_embd = 4096, .n_head = 32, .n_head_kv = 8, .head_dim = 128, .n_ff = 14336,
     .n_vocab = 32000},
    {.name = "llama-3.2-1b", .layout = "q4_k",
     .source = "meta-llama/Llama-3.2-1B config.json: 16 layers, 2048 wide, 32/8 heads of 64, "
               "ffn 8192, vocab 128256, tied; https://huggingface.co/meta-llama/Llama-3.2-1B (read 2026-12-03)",
     .n_layer = 16, .n_embd = 2048, .n_head = 32, .n_head_kv = 8, .head_dim = 64, .n_ff = 8192,
     .n_vocab = 128256, .tied = true},
    {.name = "llama-3.2-3b", .layout = "q4_k",
     .source = "meta-llama/Llama-3.2-3B config.json: 28 layers, 3072 wide, 24/8 heads of 128, "
               "ffn 8192, vocab 128256, tied; https://huggingface.co/meta-llama/Llama-3.2-3B (read 2026-12-03)",
     .n_layer = 28, .n_embd = 3072, .n_head = 24, .n_head_kv = 8, .head_dim = 128, .n_ff = 8192,
     .n_vocab = 128256, .tied = true},
    {.name = "llama-3.1-8b", .layout = "q4_k",
     .source = "meta-llama/Llama-3.1-8B config.json: 32 layers, 4096 wide, 32/8 heads of 128, "
               "ffn 14336, vocab 128256; https://huggingface.co/meta-llama/Llama-3.1-8B (read 2026-12-03)",
     .n_layer = 32, .n_embd = 4096, .n_head = 32, .n_head_kv = 8, .head_dim = 128, .n_ff = 14336,
     .n_vocab = 128256},
    {.name = "qwen3-0.6b", .layout = "q8_0",
     .source = "Qwen/Qwen3-0.6B config.json: 28 layers, 1024 wide, 16/8 heads of 128, ffn 3072, "
               "vocab 151936, tied, QK-norm; https://huggingface.co/Qwen/Qwen3-0.6B (read 2026-12-03)",
     .n_layer = 28, .n_embd = 1024, .n_head = 16, .n_head_kv = 8, .head_dim = 128, .n_ff = 3072,
     .n_vocab = 151936, .tied = true, .qk_norm = true},
    {.name = "qwen3-4b", .layout = "q4_k",
     .source = "Qwen/Qwen3-4B config.json: 36 layers, 2560 wide, 32/8 heads of 128, ffn 9728, "
               "vocab 151936, tied, QK-norm; https://huggingface.co/Qwen/Qwen3-4B (read 2026-12-03)",
     .n_layer = 36, .n_embd = 2560, .n_head = 32, .n_head_kv = 8, .head_dim = 128, .n_ff = 9728,
     .n_vocab = 151936, .tied = true, .qk_norm = true},
    {.name = "qwen2.5-1.5b", .layout = "q4_k",
     .source = "Qwen/Qwen2.5-1.5B config.json (= DeepSeek-R1-Distill-Qwen-1.5B's shapes, which unties "
               "the head: the same bytes read): 28 layers, 1536 wide, 12/2 heads of 128, ffn 8960, "
               "vocab 151936, QKV biases; https://huggingface.co/Qwen/Qwen2.5-1.5B (read 2026-12-03)",
     .n_layer = 28, .n_embd = 1536, .n_head = 12, .n_head_kv = 2, .head_dim = 128, .n_ff = 8960,
     .n_vocab = 151936, .tied = true, .qkv_bias = true},
    {.name = "gpt-oss-20b", .layout = "mxfp4",
     .source = "openai/gpt-oss-20b config.json: 24 layers alternating sliding (128) and full "
               "attention, 2880 wide, 64/8 heads of 64, 32 experts (4 used) of 2880, vocab 201088, "
               "attention sinks and biases; https://huggingface.co/openai/gpt-oss-20b (read 2026-12-03)",
     .n_layer = 24, .n_embd = 2880, .n_head = 64, .n_head_kv = 8, .head_dim = 64,
     .n_expert = 32, .n_used = 4, .n_ff_exp = 2880, .n_vocab = 201088, .n_swa = 128, .swa_every = 2,
     .qkv_bias = true, .o_bias = true, .sinks = true, .router_bias = true},
    {.name = "qwen3.6-27b", .layout = "tq2_0",
     .source = "Ternary-Bonsai-27B's Qwen3.6-27B dense geometry: 64 layers in 16 x (3 Gated DeltaNet "
               "+ 1 gated attention), 5120 wide, attention 24/4 heads of 256, DeltaNet 48 V / 16 QK "
               "heads of 128, ffn 17408, vocab 248320; https://huggingface.co/prism-ml/Ternary-Bonsai-27B-gguf "
               "(read 2026-12-03); shapes from the Qwen3.5/3.6-27B model card, not checked against a "
               "config file: an estimate",
     .n_layer = 64, .n_embd = 5120, .n_head = 24, .n_head_kv = 4, .head_dim = 256, .n_ff = 17408,
     .n_vocab = 248320, .lin_every = 4, .lin_v_heads = 48, .lin_qk_heads = 16, .lin_head_dim = 128,
     .lin_conv = 4, .qk_norm = true, .gated_q = true},
};

static const char *const preset_names[] = {
    "maple-preview", "maple-preview-mlx", "bitnet-b1.58-2b4t", "llama-2-7b", "mistral-7b", "llama-3.2-1b",
    "llama-3.2-3b", "llama-3.1-8b", "qwen3-0.6b", "qwen3-4b", "qwen2.5-1.5b", "gpt-oss-20b", "qwen3.6-27b", NULL,
};

static const char *const layout_names[] = {
    "f16", "bf16", "q8_0", "q4_0", "q4_k", "tq2_0", "tq1_0", "mlx-8bit", "mlx-4bit", "mlx-2bit", "mlx-maple", "mxfp4", NULL,
};

const char *const *tb_geometry_presets(void) { return preset_names; }
const char *const *tb_geometry_layouts(void) { return layout_names; }

static const preset_t *find_preset(const char *name) {
    for (size_t i = 0; name && i < TB_ARRAY_LEN(presets); i++)
        if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

const char *tb_geometry_preset_source(const char *name) {
    const preset_t *p = find_preset(name);
    return p ? p->source : NULL;
}

/* ---- storage formats ---------------------------------------------------- */

typedef enum { FMT_GGML, FMT_MLX8, FMT_MLX4, FMT_MLX2, FMT_ROW2, FMT_MXFP4 } fmt_kind_t;
typedef struct { fmt_kind_t kind; tb_type_t type; } fmt_t;

#define GGML(t) ((fmt_t){FMT_GGML, (t)})

/* Bytes of one row of ne0 elements; a block type the row does not fit falls
 * back to Q8_0, then F16. */
static uint64_t row_bytes(fmt_t f, int64_t ne0) {
    const uint64_t n = (uint64_t)ne0, g64 = (n + 63) / 64;
    switch (f.kind) {
    case FMT_MLX8: return n + g64 * 4;           /* 8-bit codes, bf16 scale + bias per 64 */
    case FMT_MLX4: return n / 2 + g64 * 4;       /* 4-bit codes, bf16 scale + bias per 64 */
    case FMT_MLX2: return (n + 3) / 4 + g64 * 4; /* 2-bit codes, bf16 scale + bias per 64 */
    case FMT_ROW2: return (n + 3) / 4 + 2;       /* 2-bit codes, one bf16 scale per row   */
    case FMT_MXFP4: return (n + 31) / 32 * 17;   /* 16 bytes of codes + 1 scale per 32    */
    default: break;
    }
    size_t r = tb_type_row_bytes(f.type, ne0);
    if (!r) r = tb_type_row_bytes(TB_TYPE_Q8_0, ne0);
    if (!r) r = tb_type_row_bytes(TB_TYPE_F16, ne0);
    return r;
}

typedef struct layout {
    fmt_t proj, proj_more, expert, embd, head, small;
} layout_t;

static bool more_bits(int il, int n) { return il < n / 8 || il >= 7 * n / 8 || (il - n / 8) % 3 == 2; }

static int layout_of(const char *name, bool tied, layout_t *L) {
    const fmt_t F32 = GGML(TB_TYPE_F32), BF16 = GGML(TB_TYPE_BF16);
    tb_type_t t;
    if (!strcmp(name, "mlx-8bit") || !strcmp(name, "mlx-4bit") || !strcmp(name, "mlx-2bit")) {
        fmt_t q = {name[4] == '8' ? FMT_MLX8 : name[4] == '4' ? FMT_MLX4 : FMT_MLX2, TB_TYPE_COUNT};
        *L = (layout_t){q, q, q, q, q, BF16};
    } else if (!strcmp(name, "mlx-maple")) {
        fmt_t r = {FMT_ROW2, TB_TYPE_COUNT}, q = {FMT_MLX4, TB_TYPE_COUNT};
        *L = (layout_t){r, r, r, q, q, BF16};
    } else if (!strcmp(name, "mxfp4")) {
        const fmt_t q8 = GGML(TB_TYPE_Q8_0);
        *L = (layout_t){q8, q8, {FMT_MXFP4, TB_TYPE_COUNT}, q8, q8, F32};
    } else if (!strcmp(name, "q4_k")) {
        *L = (layout_t){GGML(TB_TYPE_Q4_K), GGML(TB_TYPE_Q6_K), GGML(TB_TYPE_Q4_K), GGML(TB_TYPE_Q4_K),
                        GGML(TB_TYPE_Q6_K), F32};
        if (tied) L->embd = L->head;
    } else if (!strcmp(name, "q4_0")) {
        *L = (layout_t){GGML(TB_TYPE_Q4_0), GGML(TB_TYPE_Q4_0), GGML(TB_TYPE_Q4_0), GGML(TB_TYPE_Q4_0),
                        GGML(TB_TYPE_Q6_K), F32};
        if (tied) L->embd = L->head;
    } else if (!strcmp(name, "tq2_0") || !strcmp(name, "tq1_0")) {
        fmt_t q = GGML(name[2] == '2' ? TB_TYPE_TQ2_0 : TB_TYPE_TQ1_0);
        *L = (layout_t){q, q, q, GGML(TB_TYPE_F16), tied ? GGML(TB_TYPE_F16) : GGML(TB_TYPE_Q4_K), F32};
    } else if ((!strcmp(name, "f16") || !strcmp(name, "bf16") || !strcmp(name, "q8_0")) &&
               tb_type_from_name(name, &t) == TB_OK) {
        *L = (layout_t){GGML(t), GGML(t), GGML(t), GGML(t), GGML(t), F32};
    } else {
        return tb_err(TB_ERR_ARG, "unknown weight layout '%s' (f16, bf16, q8_0, q4_0, q4_k, tq2_0, tq1_0, "
                      "mlx-8bit, mlx-4bit, mlx-2bit, mlx-maple, mxfp4)", name);
    }
    return TB_OK;
}

/* ---- building the table --------------------------------------------------- */

typedef struct builder {
    tb_geometry_t *g;
    int64_t cap;
} builder_t;

/* A tensor of n_mat matrices of `rows` rows of ne0 elements each. */
static void put(builder_t *b, const char *name, fmt_t f, int64_t ne0, int64_t rows, int64_t n_mat) {
    if (b->g->n_tensors >= b->cap) return;   /* sized generously; checked by the caller */
    tb_geom_tensor_t *t = &b->g->tensors[b->g->n_tensors++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->nbytes = row_bytes(f, ne0) * (uint64_t)rows * (uint64_t)n_mat;
    t->n_params = ne0 * rows * n_mat;
}

static void put_blk(builder_t *b, int il, const char *what, fmt_t f, int64_t ne0, int64_t rows, int64_t n_mat) {
    char name[64];
    snprintf(name, sizeof name, "blk.%d.%s", il, what);
    put(b, name, f, ne0, rows, n_mat);
}

static void attention(builder_t *b, const preset_t *P, const layout_t *L, int il) {
    const int64_t E = P->n_embd, QD = (int64_t)P->n_head * P->head_dim, KD = (int64_t)P->n_head_kv * P->head_dim;
    const fmt_t v = more_bits(il, P->n_layer) ? L->proj_more : L->proj;
    put_blk(b, il, "attn_q", L->proj, E, P->gated_q ? 2 * QD : QD, 1);
    put_blk(b, il, "attn_k", L->proj, E, KD, 1);
    put_blk(b, il, "attn_v", v, E, KD, 1);
    put_blk(b, il, "attn_output", L->proj, QD, E, 1);
    if (P->qkv_bias) {
        put_blk(b, il, "attn_q.bias", L->small, QD, 1, 1);
        put_blk(b, il, "attn_k.bias", L->small, KD, 1, 1);
        put_blk(b, il, "attn_v.bias", L->small, KD, 1, 1);
    }
    if (P->o_bias) put_blk(b, il, "attn_output.bias", L->small, E, 1, 1);
    if (P->sinks) put_blk(b, il, "attn_sinks", L->small, P->n_head, 1, 1);
    if (P->qk_norm) {
        put_blk(b, il, "attn_q_norm", L->small, P->head_dim, 1, 1);
        put_blk(b, il, "attn_k_norm", L->small, P->head_dim, 1, 1);
    }
    if (P->sub_norm) put_blk(b, il, "attn_sub_norm", L->small, E, 1, 1);
}

/* Gated DeltaNet (Qwen3-Next style): fused q/k/v and gate projections, the
 * per-head decay and step inputs, a short causal convolution, the output. */
static void linear_attention(builder_t *b, const preset_t *P, const layout_t *L, int il) {
    const int64_t E = P->n_embd, D = P->lin_head_dim;
    const int64_t QK = (int64_t)P->lin_qk_heads * D, V = (int64_t)P->lin_v_heads * D;
    put_blk(b, il, "attn_qkv", L->proj, E, 2 * QK + V, 1);
    put_blk(b, il, "attn_gate", L->proj, E, V, 1);
    put_blk(b, il, "ssm_ba", L->proj, E, 2 * P->lin_v_heads, 1);
    put_blk(b, il, "ssm_conv1d", L->small, P->lin_conv, 2 * QK + V, 1);
    put_blk(b, il, "ssm_a", L->small, P->lin_v_heads, 1, 1);
    put_blk(b, il, "ssm_dt", L->small, P->lin_v_heads, 1, 1);
    put_blk(b, il, "ssm_norm", L->small, D, 1, 1);
    put_blk(b, il, "ssm_out", L->proj, V, E, 1);
}

static void ffn(builder_t *b, const preset_t *P, const layout_t *L, int il) {
    const int64_t E = P->n_embd;
    if (P->n_expert > 0) {
        const int64_t X = P->n_expert, FF = P->n_ff_exp;
        put_blk(b, il, "ffn_gate_inp", L->small, E, X, 1);
        if (P->router_bias) put_blk(b, il, "ffn_gate_inp.bias", L->small, X, 1, 1);
        put_blk(b, il, "ffn_gate_exps", L->expert, E, FF, X);
        put_blk(b, il, "ffn_up_exps", L->expert, E, FF, X);
        put_blk(b, il, "ffn_down_exps", L->expert, FF, E, X);
        if (P->router_bias) {   /* gpt-oss: expert biases, read for the active experts only */
            put_blk(b, il, "ffn_gate_exps.bias", L->small, FF, X, 1);
            put_blk(b, il, "ffn_up_exps.bias", L->small, FF, X, 1);
            put_blk(b, il, "ffn_down_exps.bias", L->small, E, X, 1);
        }
    } else {
        const fmt_t d = more_bits(il, P->n_layer) ? L->proj_more : L->proj;
        put_blk(b, il, "ffn_gate", L->proj, E, P->n_ff, 1);
        put_blk(b, il, "ffn_up", L->proj, E, P->n_ff, 1);
        put_blk(b, il, "ffn_down", d, P->n_ff, E, 1);
        if (P->sub_norm) put_blk(b, il, "ffn_sub_norm", L->small, P->n_ff, 1, 1);
    }
}

int tb_geometry_preset(const char *name, const char *weights, tb_geometry_t **out) {
    if (!out) return tb_err(TB_ERR_ARG, "tb_geometry_preset: NULL argument");
    *out = NULL;
    const preset_t *P = find_preset(name);
    if (!P) {
        char list[512] = "";
        for (size_t i = 0; preset_names[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", preset_names[i]);
        return tb_err(TB_ERR_NOT_FOUND, "unknown model preset '%s' (presets: %s)", name ? name : "(null)", list);
    }
    const char *lname = weights ? weights : P->layout;
    layout_t L = {0};
    int rc = layout_of(lname, P->tied, &L);
    if (rc != TB_OK) return rc;
    builder_t b = {.cap = 4 + 24 * (int64_t)P->n_layer};
    if ((rc = tb_geom_alloc(&b.g, P->n_layer, b.cap)) != TB_OK) return rc;
    tb_geometry_t *g = b.g;
    snprintf(g->name, sizeof g->name, "%s", P->name);
    snprintf(g->weights, sizeof g->weights, "%s", lname);
    g->n_embd = P->n_embd;
    g->n_head = P->n_head;
    g->n_head_kv = P->n_head_kv;
    g->head_dim = P->head_dim;
    g->n_vocab = P->n_vocab;
    g->n_expert = P->n_expert;
    g->n_expert_used = P->n_used;
    g->n_swa = P->n_swa;
    if (P->lin_every)   /* f32 state of (key dim x value dim) per value head */
        g->state_bytes = (uint64_t)P->lin_v_heads * (uint64_t)P->lin_head_dim * (uint64_t)P->lin_head_dim * 4u;
    const int64_t E = P->n_embd;
    put(&b, "token_embd", L.embd, E, P->n_vocab, 1);
    for (int il = 0; il < P->n_layer; il++) {
        bool lin = P->lin_every && il % P->lin_every != P->lin_every - 1;
        bool swa = P->swa_every && il % P->swa_every != P->swa_every - 1;
        g->layer_kind[il] = lin ? TB_LAYER_RECURRENT : swa ? TB_LAYER_SLIDING : TB_LAYER_FULL;
        put_blk(&b, il, "attn_norm", L.small, E, 1, 1);
        if (lin) linear_attention(&b, P, &L, il);
        else attention(&b, P, &L, il);
        put_blk(&b, il, "ffn_norm", L.small, E, 1, 1);
        ffn(&b, P, &L, il);
    }
    put(&b, "output_norm", L.small, E, 1, 1);
    if (!P->tied) put(&b, "output", L.head, E, P->n_vocab, 1);
    if (g->n_tensors >= b.cap) {
        tb_geometry_free(g);
        return tb_err(TB_ERR_INTERNAL, "preset %s: tensor table overflow", P->name);
    }
    *out = g;
    return TB_OK;
}
