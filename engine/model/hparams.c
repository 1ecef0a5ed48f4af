/*
 * hparams.c — architecture metadata ("<arch>.*" keys) into tb_model_info_t
 * and the per-layer flags (sliding window, rope, swiglu clamp).
 *
 * Two architectures:
 *   llama  dense or Mixtral-style MoE; RoPE with adjacent pairs on every layer.
 *   maple  MoE on every layer; sliding layers (pattern[il] == true) attend to
 *          the last n_swa positions and use RoPE (rotate-half pairing on the
 *          first rope_dims dims, base rope_base_swa); global layers attend to
 *          everything with no positional encoding; swiglu clamp per layer.
 */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Key helpers                                                            */
/* ===================================================================== */

typedef struct keyctx {
    const tb_gguf_t *g;
    const char *path;
    const char *arch;
    char key[128];
} keyctx;

static const char *kname(keyctx *c, const char *suffix) {
    snprintf(c->key, sizeof c->key, "%s.%s", c->arch, suffix);
    return c->key;
}

/* Required positive integer key. */
static int req_i32(keyctx *c, const char *suffix, int32_t *out) {
    uint32_t v;
    int rc = tb_gguf_get_u32(c->g, kname(c, suffix), &v);
    if (rc == TB_ERR_NOT_FOUND)
        return tb_err(TB_ERR_NOT_FOUND, "%s: missing required key '%s'", c->path, c->key);
    if (rc != TB_OK) return tb_err_prefix(rc, "%s: key '%s'", c->path, c->key);
    if (v == 0 || v > (1u << 30))
        return tb_err(TB_ERR_FORMAT, "%s: key '%s' = %u, expected 1..2^30", c->path, c->key, v);
    *out = (int32_t)v;
    return TB_OK;
}

/* Optional non-negative integer key (def when absent). */
static int opt_i32(keyctx *c, const char *suffix, int32_t def, int32_t *out) {
    uint32_t v;
    int rc = tb_gguf_get_u32(c->g, kname(c, suffix), &v);
    if (rc == TB_ERR_NOT_FOUND) { *out = def; return TB_OK; }
    if (rc != TB_OK) return tb_err_prefix(rc, "%s: key '%s'", c->path, c->key);
    if (v > (1u << 30))
        return tb_err(TB_ERR_FORMAT, "%s: key '%s' = %u, expected at most 2^30", c->path, c->key, v);
    *out = (int32_t)v;
    return TB_OK;
}

static int opt_f32(keyctx *c, const char *suffix, float def, float *out) {
    int rc = tb_gguf_get_f32(c->g, kname(c, suffix), out);
    if (rc == TB_ERR_NOT_FOUND) { *out = def; return TB_OK; }
    if (rc != TB_OK) return tb_err_prefix(rc, "%s: key '%s'", c->path, c->key);
    if (!isfinite(*out))
        return tb_err(TB_ERR_FORMAT, "%s: key '%s' is not a finite number", c->path, c->key);
    return TB_OK;
}

/* A per-layer array key: either an array of n_layer numbers/bools or a
 * scalar applying to every layer. vals gets doubles. NOT_FOUND if absent. */
static int per_layer(keyctx *c, const char *suffix, int32_t n_layer, double *vals) {
    int64_t i = tb_gguf_find_kv(c->g, kname(c, suffix));
    if (i < 0) return TB_ERR_NOT_FOUND;
    tb_gguf_value_t v;
    int rc = tb_gguf_kv_value(c->g, i, &v);
    if (rc != TB_OK) return tb_err_prefix(rc, "%s: key '%s'", c->path, c->key);
    if (v.type != TB_GGUF_ARRAY) {
        double x;
        switch (v.type) {
        case TB_GGUF_FLOAT32: case TB_GGUF_FLOAT64: x = v.v.f64; break;
        case TB_GGUF_INT8: case TB_GGUF_INT16: case TB_GGUF_INT32: case TB_GGUF_INT64:
            x = (double)v.v.i64; break;
        case TB_GGUF_STRING: case TB_GGUF_ARRAY: case TB_GGUF_VTYPE_COUNT:
            return tb_err(TB_ERR_FORMAT, "%s: key '%s' has type %s, expected a number or an array of %d",
                          c->path, c->key, tb_gguf_vtype_name(v.type), n_layer);
        default: x = (double)v.v.u64; break;
        }
        for (int32_t l = 0; l < n_layer; l++) vals[l] = x;
        return TB_OK;
    }
    if (v.v.arr.n != (uint64_t)n_layer)
        return tb_err(TB_ERR_FORMAT, "%s: key '%s' has %llu elements, expected one per layer (%d)",
                      c->path, c->key, (unsigned long long)v.v.arr.n, n_layer);
    for (int32_t l = 0; l < n_layer; l++) {
        tb_gguf_value_t e;
        rc = tb_gguf_arr_get(c->g, &v, (uint64_t)l, &e);
        if (rc != TB_OK) return tb_err_prefix(rc, "%s: key '%s' element %d", c->path, c->key, l);
        switch (e.type) {
        case TB_GGUF_FLOAT32: case TB_GGUF_FLOAT64: vals[l] = e.v.f64; break;
        case TB_GGUF_INT8: case TB_GGUF_INT16: case TB_GGUF_INT32: case TB_GGUF_INT64:
            vals[l] = (double)e.v.i64; break;
        case TB_GGUF_UINT8: case TB_GGUF_UINT16: case TB_GGUF_UINT32: case TB_GGUF_UINT64:
        case TB_GGUF_BOOL:
            vals[l] = (double)e.v.u64; break;
        default:
            return tb_err(TB_ERR_FORMAT, "%s: key '%s' element %d has type %s, expected a number or bool",
                          c->path, c->key, l, tb_gguf_vtype_name(e.type));
        }
    }
    return TB_OK;
}

/* ===================================================================== */
/* Shared attention keys                                                  */
/* ===================================================================== */

static int read_common(keyctx *c, tb_model_info_t *in) {
    int rc;
    if ((rc = req_i32(c, "block_count", &in->n_layer))) return rc;
    /* every layer has tensors of its own: a larger count is a lie, not a reason to allocate */
    if (in->n_layer > tb_gguf_n_tensors(c->g))
        return tb_err(TB_ERR_FORMAT, "%s: key '%s' = %d, but the file holds only %lld tensors",
                      c->path, c->key, in->n_layer, (long long)tb_gguf_n_tensors(c->g));
    if ((rc = req_i32(c, "embedding_length", &in->n_embd))) return rc;
    if ((rc = req_i32(c, "attention.head_count", &in->n_head))) return rc;
    if ((rc = opt_i32(c, "attention.head_count_kv", in->n_head, &in->n_head_kv))) return rc;
    if (in->n_head_kv == 0 || in->n_head % in->n_head_kv)
        return tb_err(TB_ERR_FORMAT, "%s: head_count_kv %d must divide head_count %d",
                      c->path, in->n_head_kv, in->n_head);
    if ((rc = opt_i32(c, "attention.key_length", in->n_embd / in->n_head, &in->head_dim))) return rc;
    if (in->head_dim <= 0 || in->head_dim % 2)
        return tb_err(TB_ERR_FORMAT, "%s: head dimension %d must be positive and even", c->path, in->head_dim);
    int32_t vlen = 0;
    if ((rc = opt_i32(c, "attention.value_length", in->head_dim, &vlen))) return rc;
    if (vlen != in->head_dim)
        return tb_err(TB_ERR_UNSUPPORTED, "%s: value_length %d differs from key_length %d",
                      c->path, vlen, in->head_dim);
    if ((rc = opt_f32(c, "attention.layer_norm_rms_epsilon", 1e-5f, &in->norm_eps))) return rc;
    if ((rc = opt_i32(c, "rope.dimension_count", in->head_dim, &in->rope_dims))) return rc;
    if (in->rope_dims % 2 || in->rope_dims > in->head_dim)
        return tb_err(TB_ERR_FORMAT, "%s: rope.dimension_count %d must be even and at most the head dim %d",
                      c->path, in->rope_dims, in->head_dim);
    if ((rc = opt_f32(c, "rope.freq_base", 10000.0f, &in->rope_base))) return rc;
    if ((rc = opt_f32(c, "rope.freq_base_swa", in->rope_base, &in->rope_base_swa))) return rc;
    if ((rc = opt_i32(c, "context_length", 0, &in->n_ctx_train))) return rc;
    if ((rc = opt_i32(c, "expert_count", 0, &in->n_expert))) return rc;
    if ((rc = opt_i32(c, "expert_used_count", 0, &in->n_expert_used))) return rc;
    if (in->n_expert > 0 && (in->n_expert_used < 1 || in->n_expert_used > in->n_expert))
        return tb_err(TB_ERR_FORMAT, "%s: expert_used_count %d must be in 1..expert_count (%d)",
                      c->path, in->n_expert_used, in->n_expert);
    return TB_OK;
}

/* ===================================================================== */
/* Architectures                                                          */
/* ===================================================================== */

static int read_llama(keyctx *c, tb_model_t *m) {
    tb_model_info_t *in = &m->info;
    int rc = read_common(c, in);
    if (rc) return rc;
    int32_t ff;
    if ((rc = req_i32(c, "feed_forward_length", &ff))) return rc;
    if (in->n_expert > 0) {
        in->n_ff = 0;
        if ((rc = opt_i32(c, "expert_feed_forward_length", ff, &in->n_ff_exp))) return rc;
    } else {
        in->n_ff = ff;
        in->n_expert_used = 0;
    }
    m->arch = TB_ARCH_LLAMA;
    m->rope_neox = false;
    m->layers = calloc((size_t)in->n_layer, sizeof *m->layers);
    if (!m->layers) return tb_err(TB_ERR_NOMEM, "out of memory for %d layers", in->n_layer);
    for (int32_t l = 0; l < in->n_layer; l++) {
        m->layers[l].rope = true;
        m->layers[l].rope_base = in->rope_base;
        m->layers[l].clamp = INFINITY;
    }
    in->rope_base_swa = in->rope_base;
    return TB_OK;
}

static int read_maple(keyctx *c, tb_model_t *m) {
    tb_model_info_t *in = &m->info;
    int rc = read_common(c, in);
    if (rc) return rc;
    if (in->n_expert == 0)
        return tb_err(TB_ERR_NOT_FOUND, "%s: missing required key 'maple.expert_count'", c->path);
    if ((rc = req_i32(c, "expert_feed_forward_length", &in->n_ff_exp))) return rc;
    if ((rc = req_i32(c, "attention.sliding_window", &in->n_swa))) return rc;
    in->n_ff = 0;
    m->arch = TB_ARCH_MAPLE;
    m->rope_neox = true;
    m->layers = calloc((size_t)in->n_layer, sizeof *m->layers);
    double *vals = malloc((size_t)in->n_layer * sizeof *vals);
    if (!m->layers || !vals) {
        free(vals);
        return tb_err(TB_ERR_NOMEM, "out of memory for %d layers", in->n_layer);
    }
    rc = per_layer(c, "attention.sliding_window_pattern", in->n_layer, vals);
    if (rc == TB_ERR_NOT_FOUND)
        rc = tb_err(TB_ERR_NOT_FOUND, "%s: missing required key '%s'", c->path, c->key);
    if (rc) { free(vals); return rc; }
    in->n_swa_layers = 0;
    for (int32_t l = 0; l < in->n_layer; l++) {
        tb_layer_t *L = &m->layers[l];
        L->sliding = vals[l] != 0;
        L->rope = L->sliding;                 /* global layers: no positional encoding */
        L->rope_base = in->rope_base_swa;
        in->n_swa_layers += L->sliding;
    }
    rc = per_layer(c, "swiglu_clamp_exp", in->n_layer, vals);
    if (rc == TB_ERR_NOT_FOUND) {
        for (int32_t l = 0; l < in->n_layer; l++) vals[l] = INFINITY;
        rc = TB_OK;
    }
    if (rc) { free(vals); return rc; }
    for (int32_t l = 0; l < in->n_layer; l++) {
        if (!(vals[l] > 0))
            rc = tb_err(TB_ERR_FORMAT, "%s: swiglu_clamp_exp[%d] = %g, expected > 0", c->path, l, vals[l]);
        m->layers[l].clamp = (float)vals[l];
    }
    in->swiglu_clamp = isfinite(vals[0]) ? (float)vals[0] : 0.0f;
    free(vals);
    return rc;
}

int tb_model_read_hparams(tb_model_t *m, const char *path) {
    keyctx c = {.g = m->gguf, .path = path, .arch = NULL};
    int rc = tb_gguf_get_str(m->gguf, "general.architecture", m->info.arch, sizeof m->info.arch);
    if (rc == TB_ERR_NOT_FOUND)
        return tb_err(TB_ERR_NOT_FOUND, "%s: missing key 'general.architecture'", path);
    if (rc != TB_OK) return tb_err_prefix(rc, "%s: key 'general.architecture'", path);
    rc = tb_gguf_get_str(m->gguf, "general.name", m->info.name, sizeof m->info.name);
    if (rc != TB_OK) m->info.name[0] = '\0';
    tb_clear_error();
    c.arch = m->info.arch;
    if (strcmp(c.arch, "llama") == 0) return read_llama(&c, m);
    if (strcmp(c.arch, "maple") == 0) return read_maple(&c, m);
    return tb_err(TB_ERR_UNSUPPORTED, "%s: unknown architecture '%s' (supported: llama, maple)",
                  path, c.arch);
}
