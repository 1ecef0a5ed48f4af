/*
 * geometry.c — the one account of what a decoded token reads and what a
 * prompt token costs, over a tensor table (tb_geometry_t): from a loaded
 * model's GGUF here, from a named preset in geometry_presets.c. Both
 * `model info` and `claim` print figures computed by the functions below.
 */
#include "model/geometry.h"
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "base" or "base.weight" */
static bool name_is(const char *name, const char *base) {
    size_t n = strlen(base);
    return !strncmp(name, base, n) && (name[n] == '\0' || !strcmp(name + n, ".weight"));
}

tb_geom_role_t tb_geom_role(const char *name) {
    if (name_is(name, "token_embd")) return TB_GEOM_EMBD;
    if (name_is(name, "output")) return TB_GEOM_HEAD;
    if (strstr(name, "_exps")) return TB_GEOM_EXPERT;
    return TB_GEOM_DENSE;
}

int tb_geom_alloc(tb_geometry_t **out, int32_t n_layer, int64_t cap_tensors) {
    *out = NULL;
    if (n_layer < 1 || cap_tensors < 1)
        return tb_err(TB_ERR_ARG, "geometry: need >= 1 layer and tensor, got %d and %lld", n_layer,
                      (long long)cap_tensors);
    tb_geometry_t *g = calloc(1, sizeof *g);
    if (!g) return tb_err(TB_ERR_NOMEM, "out of memory for a geometry");
    g->layer_kind = calloc((size_t)n_layer, 1);
    g->tensors = calloc((size_t)cap_tensors, sizeof *g->tensors);
    if (!g->layer_kind || !g->tensors) {
        tb_geometry_free(g);
        return tb_err(TB_ERR_NOMEM, "out of memory for a geometry of %lld tensors", (long long)cap_tensors);
    }
    g->n_layer = n_layer;
    *out = g;
    return TB_OK;
}

void tb_geometry_free(tb_geometry_t *g) {
    if (!g) return;
    free(g->layer_kind);
    free(g->tensors);
    free(g);
}

/* Rows the approximate head scores: centroids + probes clusters of
 * ceil(n_vocab / centroids) rows, never more than the exact head. */
static int head_rows(const tb_geometry_t *g, const tb_head_opts_t *h, int64_t *rows) {
    *rows = g->n_vocab;
    if (!h || h->centroids == 0) return TB_OK;
    if (h->centroids < 1 || h->centroids > g->n_vocab || h->probes < 1 || h->probes > h->centroids)
        return tb_err(TB_ERR_ARG, "approximate head: need 1 <= centroids <= vocab (%d) and "
                      "1 <= probes <= centroids, got %d centroids, %d probes",
                      g->n_vocab, h->centroids, h->probes);
    int64_t per = ((int64_t)g->n_vocab + h->centroids - 1) / h->centroids;
    int64_t r = (int64_t)h->centroids + (int64_t)h->probes * per;
    *rows = r < g->n_vocab ? r : g->n_vocab;
    return TB_OK;
}

int tb_geometry_bytes_per_token(const tb_geometry_t *g, int32_t ctx, tb_type_t kv_type,
                                const tb_head_opts_t *head, tb_bytes_per_token_t *out) {
    if (!g || !out) return tb_err(TB_ERR_ARG, "tb_geometry_bytes_per_token: NULL argument");
    if (ctx < 0) return tb_err(TB_ERR_ARG, "negative context %d", ctx);
    if (g->n_vocab < 1 || g->n_layer < 1)
        return tb_err(TB_ERR_ARG, "geometry %s: no vocabulary or no layers", g->name);
    size_t kv_head = tb_type_row_bytes(kv_type, g->head_dim);
    if (kv_head == 0)
        return tb_err(TB_ERR_ARG, "KV type %s cannot hold rows of head_dim %d", tb_type_name(kv_type),
                      g->head_dim);
    int64_t rows;
    int rc = head_rows(g, head, &rows);
    if (rc != TB_OK) return rc;
    memset(out, 0, sizeof *out);
    uint64_t embd = 0, outw = 0;
    bool has_out = false;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const tb_geom_tensor_t *t = &g->tensors[i];
        switch (tb_geom_role(t->name)) {
        case TB_GEOM_EMBD: embd = t->nbytes; break;
        case TB_GEOM_HEAD: outw = t->nbytes; has_out = true; break;
        case TB_GEOM_EXPERT:
            out->weights += g->n_expert > 0 ? t->nbytes / (uint64_t)g->n_expert * (uint64_t)g->n_expert_used
                                            : t->nbytes;
            break;
        default: out->weights += t->nbytes; break;
        }
    }
    if (!has_out) outw = embd;   /* tied head */
    out->embd_row = embd / (uint64_t)g->n_vocab;
    /* the head's rows are n_vocab rows of equal size */
    out->output = rows == g->n_vocab ? outw : outw / (uint64_t)g->n_vocab * (uint64_t)rows;
    out->head_approx = rows != g->n_vocab || (head && head->centroids > 0);
    const uint64_t kv_row = 2u * (uint64_t)g->n_head_kv * kv_head;
    for (int32_t il = 0; il < g->n_layer; il++) {
        switch (g->layer_kind[il]) {
        case TB_LAYER_SLIDING: out->kv += kv_row * (uint64_t)(ctx < g->n_swa ? ctx : g->n_swa); break;
        case TB_LAYER_RECURRENT: out->kv += 2u * g->state_bytes; break;
        default: out->kv += kv_row * (uint64_t)ctx; break;
        }
    }
    out->total = out->weights + out->embd_row + out->output + out->kv;
    return TB_OK;
}

int tb_geometry_prefill_flops(const tb_geometry_t *g, int32_t n_prompt, double *flops) {
    if (!g || !flops) return tb_err(TB_ERR_ARG, "tb_geometry_prefill_flops: NULL argument");
    if (n_prompt < 0) return tb_err(TB_ERR_ARG, "negative prompt length %d", n_prompt);
    double active = 0, embd = 0;
    bool has_out = false;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const tb_geom_tensor_t *t = &g->tensors[i];
        switch (tb_geom_role(t->name)) {
        case TB_GEOM_EMBD: embd = (double)t->n_params; break;
        case TB_GEOM_HEAD: active += (double)t->n_params; has_out = true; break;
        case TB_GEOM_EXPERT:
            active += g->n_expert > 0 ? (double)t->n_params * g->n_expert_used / g->n_expert
                                      : (double)t->n_params;
            break;
        default: active += (double)t->n_params; break;
        }
    }
    if (!has_out) active += embd;   /* the tied head multiplies token_embd */
    double attended = 0;            /* positions attended, summed over the prompt and layers */
    const double n = n_prompt;
    for (int32_t il = 0; il < g->n_layer; il++) {
        if (g->layer_kind[il] == TB_LAYER_RECURRENT) continue;
        if (g->layer_kind[il] == TB_LAYER_SLIDING && g->n_swa < n_prompt) {
            const double w = g->n_swa;
            attended += w * (w + 1) / 2 + (n - w) * w;
        } else {
            attended += n * (n + 1) / 2;
        }
    }
    *flops = 2.0 * active * n + 4.0 * (double)g->n_head * g->head_dim * attended;
    return TB_OK;
}

int tb_geometry_from_model(const tb_model_t *m, tb_geometry_t **out) {
    if (!m || !out) return tb_err(TB_ERR_ARG, "tb_geometry_from_model: NULL argument");
    const tb_model_info_t *in = &m->info;
    int64_t n = tb_gguf_n_tensors(m->gguf);
    tb_geometry_t *g;
    int rc = tb_geom_alloc(&g, in->n_layer, n > 0 ? n : 1);
    if (rc != TB_OK) return rc;
    snprintf(g->name, sizeof g->name, "%.63s", in->name[0] ? in->name : in->arch);
    snprintf(g->weights, sizeof g->weights, "%s", tb_type_name(in->main_type));
    g->n_embd = in->n_embd;
    g->n_head = in->n_head;
    g->n_head_kv = in->n_head_kv;
    g->head_dim = in->head_dim;
    g->n_vocab = in->n_vocab;
    g->n_expert = in->n_expert;
    g->n_expert_used = in->n_expert_used;
    g->n_swa = in->n_swa;
    for (int32_t il = 0; il < in->n_layer; il++)
        g->layer_kind[il] = m->layers[il].sliding ? TB_LAYER_SLIDING : TB_LAYER_FULL;
    for (int64_t i = 0; i < n; i++) {
        tb_gguf_tensor_t t;
        if ((rc = tb_gguf_tensor(m->gguf, i, &t)) != TB_OK) {
            tb_geometry_free(g);
            return rc;
        }
        tb_geom_tensor_t *d = &g->tensors[g->n_tensors++];
        snprintf(d->name, sizeof d->name, "%s", t.name);
        d->nbytes = t.nbytes;
        d->n_params = 1;
        for (int k = 0; k < t.n_dims; k++) d->n_params *= t.ne[k];
    }
    *out = g;
    return TB_OK;
}
