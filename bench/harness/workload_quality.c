/*
 * workload_quality.c — the [quality] test kind: the run's model scored
 * against a reference on a text, with `ternbench quality`'s pipeline
 * (bench/quality/quality.h, docs/quality.md for every formula).
 *
 * The reference is the plan's synthesized preset in another weight type
 * (reference = f32), a GGUF model, or a reference file saved by
 * `ternbench quality --save-ref` (reference_file, told apart by its magic).
 * The pipeline opens its own sessions of ctx tokens on both models, so the
 * runner gives a quality case no session of its own. Its figures are
 * deterministic (the same logits give the same bits for any thread count),
 * so the runner runs it once, without warm-up: one repetition, index 0.
 */
#include "workload.h"
#include "quality.h"
#include "runner.h"
#include "ternbench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The quality library's message as the engine's sticky error. */
static int qfail(int rc) {
    return tb_err(rc, "%s", tb_quality_last_error());
}

/* Classify a reference file by its first bytes; a saved reference's model
 * hash (header offset 40) into sha. */
static int ref_file_kind(const char *path, const char **kind, char sha[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return tb_err(TB_ERR_IO, "%s: cannot open the reference: %s", path, strerror(errno));
    uint8_t h[72];
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    if (n >= 4 && !memcmp(h, "GGUF", 4)) {
        *kind = "model";
        return TB_OK;
    }
    if (n >= 8 && !memcmp(h, TB_QREF_MAGIC, 8)) {
        if (n < sizeof h) return tb_err(TB_ERR_FORMAT, "%s: truncated reference file (%zu bytes)", path, n);
        *kind = "file";
        tb_quality_hex(h + 40, sha);
        return TB_OK;
    }
    return tb_err(TB_ERR_FORMAT, "%s: neither a GGUF model nor a ternbench reference file "
                  "(`ternbench quality --save-ref`)", path);
}

int tb_work_quality_prepare(const tb_plan_t *plan, const tb_section_t *sec, const char *model_path,
                            const char *engine_head, int quiet, tb_work_quality_t *q) {
    memset(q, 0, sizeof *q);
    q->text_path = sec->text_path;
    q->ref_type = sec->v[K_QUAL_REFERENCE].s;
    snprintf(q->text_sha256, sizeof q->text_sha256, "%s", sec->text_sha256);
    const char *h = *sec->v[K_QUAL_HEAD].s ? sec->v[K_QUAL_HEAD].s : engine_head && *engine_head ? engine_head : "exact";
    snprintf(q->head, sizeof q->head, "%s", h);
    int rc = tb_head_parse(q->head, &q->approx, &q->hp);
    if (rc) return tb_err_prefix(rc, "[%s] head = %s", sec->name, q->head);
    if (!(q->model_path = strdup(model_path))) return tb_err(TB_ERR_NOMEM, "out of memory");
    uint8_t hash[32];
    if ((rc = tb_quality_file_hash(model_path, hash))) return qfail(rc);
    tb_quality_hex(hash, q->model_sha256);
    if (*q->ref_type) {
        q->ref_kind = "type";
        if ((rc = tb_runner_synth_path(plan, q->ref_type, &q->ref_path, quiet)))
            return tb_err_prefix(rc, "[%s] reference = %s", sec->name, q->ref_type);
    } else {
        if (!(q->ref_path = strdup(sec->ref_path))) return tb_err(TB_ERR_NOMEM, "out of memory");
        if ((rc = ref_file_kind(q->ref_path, &q->ref_kind, q->ref_sha256))) return rc;
    }
    if (strcmp(q->ref_kind, "file") != 0) {
        if ((rc = tb_quality_file_hash(q->ref_path, hash))) return qfail(rc);
        tb_quality_hex(hash, q->ref_sha256);
    }
    return TB_OK;
}

void tb_work_quality_free(tb_work_quality_t *q) {
    free(q->model_path);
    free(q->ref_path);
    memset(q, 0, sizeof *q);
}

typedef struct qtick { const tb_work_t *w; } qtick_t;

static void on_chunk(void *ud, int32_t chunk, int32_t n_chunk) {
    const tb_work_t *w = ((qtick_t *)ud)->w;
    if (w->tick && n_chunk > 0) w->tick(w->tick_ud, (double)chunk / (double)n_chunk);
}

int tb_work_quality_run(const tb_work_t *w, tb_rep_t *rep) {
    const tb_work_quality_t *q = w->quality;
    const tb_section_t *sec = w->sec;
    tb_rep_reset(rep);
    if (!q || !q->model_path || !q->ref_path) return tb_err(TB_ERR_INTERNAL, "[%s]: quality case not prepared", sec->name);
    if (*w->stop) return TB_INTERRUPTED;
    qtick_t tk = {w};
    bool file = !strcmp(q->ref_kind, "file");
    tb_quality_opts_t o = {.model = q->model_path, .ref_model = file ? NULL : q->ref_path,
                           .ref_file = file ? q->ref_path : NULL, .text = q->text_path,
                           .n_ctx = (int32_t)sec->v[K_QUAL_CTX].i, .n_chunks = (int32_t)sec->v[K_QUAL_CHUNKS].i,
                           .n_threads = w->threads > 0 ? w->threads : 1, .approx_head = q->approx, .head = q->hp,
                           .progress = on_chunk, .progress_ud = &tk};
    tb_quality_result_t r;
    int rc = tb_quality_run(&o, &r);
    if (rc) return qfail(rc);
    if (*w->stop) return TB_INTERRUPTED;
    const tb_quality_stats_t *s = &r.st;
    tb_rep_metric(rep, TB_M_PPL, s->ppl);
    tb_rep_metric(rep, TB_M_PPL_UNC, s->ppl_unc);
    tb_rep_metric(rep, TB_M_PPL_BASE, s->ppl_base);
    tb_rep_metric(rep, TB_M_PPL_RATIO, s->ppl_ratio);
    tb_rep_metric(rep, TB_M_KLD_MEAN, s->kld_mean);
    tb_rep_metric(rep, TB_M_KLD_UNC, s->kld_unc);
    tb_rep_metric(rep, TB_M_KLD_MEDIAN, s->kld_median);
    tb_rep_metric(rep, TB_M_KLD_P99, s->kld_p99);
    tb_rep_metric(rep, TB_M_KLD_MAX, s->kld_max);
    tb_rep_metric(rep, TB_M_SAME_TOP_PCT, 100.0 * s->same_top);
    tb_rep_metric(rep, TB_M_DP_RMS, 100.0 * s->dp_rms);
    tb_rep_metric(rep, TB_M_HEAD_ROWS_PER_TOKEN, r.head_rows_per_token);
    tb_rep_metric(rep, TB_M_SCORED_TOKENS, (double)s->n);
    return TB_OK;
}
