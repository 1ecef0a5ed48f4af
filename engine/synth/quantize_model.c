/*
 * quantize_model.c — tb_quantize_model(): requantize a GGUF's projection and
 * expert tensors to one type, streaming tensor by tensor.
 *
 * Policy (llama.cpp-like):
 *   - 1-D tensors (norms), the MoE router (ffn_gate_inp), token_embd and
 *     output keep their type (token_embd / output: unless an embedding /
 *     output type is given, as llama.cpp's Q6_K head and Q4_K embeddings);
 *   - every other 2-D+ tensor becomes `type`; when its rows (ne[0]) are not
 *     a multiple of the type's block it takes a wider type instead — q8_0
 *     when the rows fit blocks of 32, else f16 — and on_keep() is told;
 *   - every metadata key is copied but ternbench.synth.* (the provenance of
 *     a synthesized input, which the output no longer matches);
 *     general.file_type is set for `type`;
 *   - with ternarization (tb_quantize_model_ex), every tensor that takes
 *     `type` (or its wider fallback) is first made ternary by BitNet
 *     b1.58's absmean rule, per matrix (each expert of a stack its own):
 *       gamma = mean |W|,  W' = gamma * clamp(round(W / (gamma + 1e-8)), -1, 1)
 *     then stored in its type, and the file says so (ternbench.ternarize =
 *     "absmean", ternbench.ternarize.post_hoc = true): post-hoc, from a
 *     model trained in full precision, not a natively ternary one.
 * Rows are converted in batches (tb_dequantize_row → tb_quantize_row) on a
 * thread pool; unchanged tensors are copied straight from the mapping.
 */
#include "synth/synth.h"
#include "quant/quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_BYTES (8u << 20)    /* target output bytes per converted batch */

/* Bare tensor name: "blk.3.attn_q.weight" → compares as "blk.3.attn_q". */
static bool name_is(const char *name, const char *base) {
    size_t n = strlen(base);
    return !strncmp(name, base, n) && (name[n] == '\0' || !strcmp(name + n, ".weight"));
}

/* Output type of tensor t for requested `type`; *kept set when the block
 * size forced a wider type. */
static tb_type_t target_type(const tb_gguf_tensor_t *t, tb_type_t type, tb_type_t embd_type,
                             tb_type_t output_type, bool *kept) {
    *kept = false;
    if (t->n_dims >= 2 && name_is(t->name, "token_embd") && embd_type != TB_TYPE_COUNT) type = embd_type;
    else if (t->n_dims >= 2 && name_is(t->name, "output") && output_type != TB_TYPE_COUNT) type = output_type;
    else if (t->n_dims < 2 || name_is(t->name, "token_embd") || name_is(t->name, "output") ||
             strstr(t->name, "ffn_gate_inp"))
        return t->type;
    if (t->ne[0] % tb_type_block_elems(type) == 0) return type;
    *kept = true;
    return t->ne[0] % 32 == 0 ? TB_TYPE_Q8_0 : TB_TYPE_F16;
}

/* ===================================================================== */
/* Row conversion on the pool                                             */
/* ===================================================================== */

typedef struct conv_job {
    tb_type_t src_type, dst_type;
    int64_t ne0, rows;
    const uint8_t *src;           /* (rows, src row bytes) */
    uint8_t *dst;                 /* (rows, dst row bytes); NULL: only row_abs */
    synth_workers_t wk;           /* scratch (ne0) and errors per thread */
    int64_t row0, mat_rows;       /* first row's index in the tensor; rows per matrix */
    const float *gamma;           /* (n_mat) absmean scale per matrix, or NULL */
    double *row_abs;              /* (rows) Σ|x| per row when dst is NULL */
} conv_job_t;

/* BitNet b1.58's absmean rounding of one row with its matrix's gamma. */
static void ternarize_row(float *x, int64_t n, float gamma) {
    const float inv = 1.0f / (gamma + 1e-8f);
    for (int64_t i = 0; i < n; i++) {
        const float q = roundf(x[i] * inv);
        x[i] = gamma * (q > 1 ? 1.0f : q < -1 ? -1.0f : q);
    }
}

static void conv_worker(void *arg, int ith, int nth) {
    conv_job_t *j = arg;
    const size_t sb = tb_type_row_bytes(j->src_type, j->ne0);
    const size_t db = j->dst ? tb_type_row_bytes(j->dst_type, j->ne0) : 0;
    const int64_t per = (j->rows + nth - 1) / nth;
    const int64_t r0 = per * ith, r1 = TB_MIN(j->rows, r0 + per);
    for (int64_t r = r0; r < r1; r++) {
        float *x = j->wk.scratch[ith];   // (ne0)
        int rc = tb_dequantize_row(j->src_type, j->src + (size_t)r * sb, x, j->ne0);
        if (rc == TB_OK && !j->dst) {
            double a = 0;
            for (int64_t i = 0; i < j->ne0; i++) a += fabs((double)x[i]);
            j->row_abs[r] = a;
            continue;
        }
        if (rc == TB_OK && j->gamma) ternarize_row(x, j->ne0, j->gamma[(j->row0 + r) / j->mat_rows]);
        if (rc == TB_OK) rc = tb_quantize_row(j->dst_type, x, j->dst + (size_t)r * db, j->ne0);
        if (rc != TB_OK) {
            synth_workers_fail(&j->wk, ith, rc);
            return;
        }
    }
}

/* gamma (ne[2] * ne[3]) = mean |W| of each matrix of tensor t. */
static int absmean(tb_pool_t *pool, conv_job_t *j, const tb_gguf_tensor_t *t, float *gamma) {
    const size_t sb = tb_type_row_bytes(t->type, t->ne[0]);
    const int64_t n_mat = t->ne[2] * t->ne[3];
    j->row_abs = malloc((size_t)t->ne[1] * sizeof *j->row_abs);
    if (!j->row_abs) return tb_err(TB_ERR_NOMEM, "tensor %s: out of memory", t->name);
    j->src_type = t->type;
    j->ne0 = t->ne[0];
    j->dst = NULL;
    j->rows = t->ne[1];
    for (int64_t m = 0; m < n_mat; m++) {
        j->src = (const uint8_t *)t->data + (size_t)(m * t->ne[1]) * sb;
        tb_pool_run(pool, conv_worker, j);
        const int f = synth_workers_failed(&j->wk);
        if (f >= 0) {
            free(j->row_abs);
            j->row_abs = NULL;
            return tb_err(j->wk.rc[f], "tensor %s: %s", t->name, j->wk.msg[f]);
        }
        double s = 0;
        for (int64_t r = 0; r < t->ne[1]; r++) s += j->row_abs[r];
        gamma[m] = (float)(s / ((double)t->ne[0] * (double)t->ne[1]));
    }
    free(j->row_abs);
    j->row_abs = NULL;
    return TB_OK;
}

/* Convert and write one tensor; buf holds BATCH_BYTES (or one row). */
static int convert_tensor(tb_pool_t *pool, conv_job_t *j, tb_gguf_writer_t *w,
                          const tb_gguf_tensor_t *t, tb_type_t dst, uint8_t *buf, size_t buf_cap) {
    const size_t sb = tb_type_row_bytes(t->type, t->ne[0]);
    const size_t db = tb_type_row_bytes(dst, t->ne[0]);
    const int64_t n_rows = t->ne[1] * t->ne[2] * t->ne[3];
    const int64_t batch = TB_MAX((int64_t)1, (int64_t)(buf_cap / db));
    j->src_type = t->type;
    j->dst_type = dst;
    j->ne0 = t->ne[0];
    j->dst = buf;
    j->mat_rows = t->ne[1];
    for (int64_t r0 = 0; r0 < n_rows; r0 += batch) {
        j->rows = TB_MIN(batch, n_rows - r0);
        j->row0 = r0;
        j->src = (const uint8_t *)t->data + (size_t)r0 * sb;
        tb_pool_run(pool, conv_worker, j);
        const int f = synth_workers_failed(&j->wk);
        if (f >= 0) return tb_err(j->wk.rc[f], "tensor %s: %s", t->name, j->wk.msg[f]);
        int rc = tb_gguf_write_tensor_data(w, buf, (size_t)j->rows * db);
        if (rc != TB_OK) return rc;
    }
    return TB_OK;
}

/* ===================================================================== */
/* Entry point                                                            */
/* ===================================================================== */

/* True when tensor t takes the projection type (norms, router, token_embd
 * and output excepted): the tensors a ternarization rounds. */
static bool is_projection(const tb_gguf_tensor_t *t) {
    return t->n_dims >= 2 && !name_is(t->name, "token_embd") && !name_is(t->name, "output") &&
           !strstr(t->name, "ffn_gate_inp");
}

static int declare(const tb_gguf_t *g, tb_gguf_writer_t *w, tb_type_t type, tb_type_t embd_type,
                   tb_type_t output_type, tb_ternarize_t tern, tb_type_t *out_types,
                   void (*on_keep)(void *, const char *, tb_type_t), void *ud) {
    int rc;
    for (int64_t i = 0; i < tb_gguf_n_kv(g); i++) {
        const char *key = tb_gguf_kv_key(g, i);
        if (!strcmp(key, "general.file_type") || (tern && !strncmp(key, "ternbench.ternarize", 19))) continue;
        /* a requantized file is no longer the synthesized one it came from */
        if (!strncmp(key, SYNTH_KEY_PREFIX, strlen(SYNTH_KEY_PREFIX))) continue;
        if ((rc = tb_gguf_copy_kv(w, g, i)) != TB_OK) return rc;
    }
    if ((rc = tb_gguf_set_u32(w, "general.file_type", synth_ftype_of(type))) != TB_OK) return rc;
    if (tern == TB_TERNARIZE_ABSMEAN &&
        ((rc = tb_gguf_set_str(w, "ternbench.ternarize", "absmean")) != TB_OK ||
         (rc = tb_gguf_set_bool(w, "ternbench.ternarize.post_hoc", true)) != TB_OK))
        return rc;
    for (int64_t i = 0; i < tb_gguf_n_tensors(g); i++) {
        tb_gguf_tensor_t t;
        if ((rc = tb_gguf_tensor(g, i, &t)) != TB_OK) return rc;
        bool kept;
        out_types[i] = target_type(&t, type, embd_type, output_type, &kept);
        if (kept && on_keep) on_keep(ud, t.name, out_types[i]);
        if (out_types[i] != t.type && !tb_type_traits(t.type))
            return tb_err(TB_ERR_UNSUPPORTED, "tensor %s has type %d, which cannot be dequantized",
                          t.name, (int)t.type);
        if ((rc = tb_gguf_add_tensor(w, t.name, out_types[i], t.n_dims, t.ne)) != TB_OK) return rc;
    }
    return TB_OK;
}

int tb_quantize_model(const char *in_path, const char *out_path, tb_type_t type,
                      void (*on_keep)(void *ud, const char *name, tb_type_t kept), void *ud) {
    return tb_quantize_model_types(in_path, out_path, type, TB_TYPE_COUNT, TB_TYPE_COUNT, on_keep, ud);
}

int tb_quantize_model_types(const char *in_path, const char *out_path, tb_type_t type,
                            tb_type_t embd_type, tb_type_t output_type,
                            void (*on_keep)(void *ud, const char *name, tb_type_t kept), void *ud) {
    const tb_quantize_params_t p = {.type = type, .embd_type = embd_type, .output_type = output_type,
                                    .on_keep = on_keep, .ud = ud};
    return tb_quantize_model_ex(in_path, out_path, &p);
}

int tb_quantize_model_ex(const char *in_path, const char *out_path, const tb_quantize_params_t *p) {
    if (!in_path || !out_path || !p) return tb_err(TB_ERR_ARG, "quantize: NULL path or parameters");
    const tb_type_t type = p->type, embd_type = p->embd_type, output_type = p->output_type;
    const tb_ternarize_t tern = p->ternarize;
    if (tern != TB_TERNARIZE_NONE && tern != TB_TERNARIZE_ABSMEAN)
        return tb_err(TB_ERR_ARG, "quantize: unknown ternarization %d", (int)tern);
    if (tern && type != TB_TYPE_TQ2_0 && type != TB_TYPE_TQ1_0)
        return tb_err(TB_ERR_ARG, "quantize: ternarization stores ternary types only (tq2_0, tq1_0), not %s",
                      tb_type_name(type));
    const tb_type_t req[3] = {type, embd_type, output_type};
    for (int i = 0; i < 3; i++)
        if ((i == 0 || req[i] != TB_TYPE_COUNT) && (!tb_type_supported((uint32_t)req[i]) || req[i] == TB_TYPE_Q8_K))
            return tb_err(TB_ERR_ARG, "quantize: %s type %d cannot hold weights",
                          i == 0 ? "projection" : i == 1 ? "embedding" : "output", (int)req[i]);
    tb_gguf_t *g = NULL;
    tb_gguf_writer_t *w = NULL;
    tb_pool_t *pool = NULL;
    tb_type_t *types = NULL;      /* (n_tensors) output type of each tensor */
    uint8_t *buf = NULL;          /* (cap) one batch of converted rows      */
    float *gamma = NULL;          /* (n_mat) absmean scales of one tensor   */
    conv_job_t job = {0};
    int rc = tb_gguf_open(in_path, &g);
    if (rc != TB_OK) return rc;
    const int64_t nt = tb_gguf_n_tensors(g);
    int64_t max_ne0 = 1;
    size_t max_row = 1;
    for (int64_t i = 0; i < nt; i++) {
        tb_gguf_tensor_t t;
        if ((rc = tb_gguf_tensor(g, i, &t)) != TB_OK) goto done;
        max_ne0 = TB_MAX(max_ne0, t.ne[0]);
        max_row = TB_MAX(max_row, (size_t)t.ne[0] * sizeof(float));
    }
    const size_t cap = TB_MAX((size_t)BATCH_BYTES, max_row);
    types = malloc((size_t)TB_MAX(nt, 1) * sizeof *types);
    buf = tb_alloc_aligned(cap);
    if (!types || !buf || !synth_workers_alloc(&job.wk, max_ne0)) { rc = tb_err(TB_ERR_NOMEM, "quantize: out of memory"); goto done; }
    if ((rc = tb_pool_new(synth_threads(), &pool)) != TB_OK) goto done;
    if ((rc = tb_gguf_writer_new(&w)) != TB_OK) goto done;
    if ((rc = declare(g, w, type, embd_type, output_type, tern, types, p->on_keep, p->ud)) != TB_OK) goto done;
    if ((rc = tb_gguf_writer_begin(w, out_path)) != TB_OK) goto done;
    for (int64_t i = 0; i < nt && rc == TB_OK; i++) {
        tb_gguf_tensor_t t;
        if ((rc = tb_gguf_tensor(g, i, &t)) != TB_OK) break;
        job.gamma = NULL;
        if (tern && is_projection(&t)) {
            gamma = realloc(gamma, (size_t)(t.ne[2] * t.ne[3]) * sizeof *gamma);
            if (!gamma) { rc = tb_err(TB_ERR_NOMEM, "quantize: out of memory"); break; }
            if ((rc = absmean(pool, &job, &t, gamma)) != TB_OK) break;
            job.gamma = gamma;
        }
        if (types[i] == t.type && !job.gamma)
            rc = tb_gguf_write_tensor_data(w, t.data, (size_t)t.nbytes);
        else
            rc = convert_tensor(pool, &job, w, &t, types[i], buf, cap);
    }
    if (rc == TB_OK) rc = tb_gguf_writer_finish(w);
done:
    synth_workers_free(&job.wk);
    free(gamma);
    tb_free_aligned(buf);
    free(types);
    if (pool) tb_pool_free(pool);
    if (w) tb_gguf_writer_free(w);
    tb_gguf_close(g);
    if (rc != TB_OK) tb_err_prefix(rc, "quantize %s -> %s", in_path, out_path);
    return rc;
}
