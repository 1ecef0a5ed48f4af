/*
 * claim_record.c — the conditions of a claim check as rows of the claims
 * table (results/store_claims.h): inputs, outputs, the calibration's hash
 * and, per condition, the assumptions it rests on as a JSON list.
 */
#include "claim.h"
#include "store_claims.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append s to b[*n..cap) as a JSON string. */
static void json_str(char *b, size_t cap, size_t *n, const char *s) {
    if (*n + 2 >= cap) return;
    b[(*n)++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p && *n + 8 < cap; p++) {
        if (*p == '"' || *p == '\\') { b[(*n)++] = '\\'; b[(*n)++] = (char)*p; }
        else if (*p < 0x20) *n += (size_t)snprintf(b + *n, cap - *n, "\\u%04x", *p);
        else b[(*n)++] = (char)*p;
    }
    b[(*n)++] = '"';
    b[*n] = '\0';
}

/* The assumptions of condition k as a JSON list into b. */
static void assumptions(const cl_check_t *ck, const cl_cond_t *k, char *b, size_t cap) {
    char a[6][256];
    const cl_device_t *d = ck->d;
    snprintf(a[0], sizeof a[0], "model %s, weights %s (%.2f bits per projection weight)", ck->g->name,
             ck->g->weights, cl_geom_bpw(ck->g));
    snprintf(a[1], sizeof a[1], "KV cache %s; context %d%s", tb_type_name(ck->kv), k->ctx,
             ck->ctx_given ? "" : " (not stated by the claim: one of several evaluated)");
    snprintf(a[2], sizeof a[2], "head %s%s", k->head.centroids ? "approximate (APPROXIMATE)" : "exact",
             ck->head_given ? ", as given" : " (not stated by the claim: one of several evaluated)");
    snprintf(a[3], sizeof a[3], "bandwidth %g GB/s, %s%s", d->bw_gbps, d->bw_measured ? "measured" : "nominal peak",
             d->bw_estimate ? " (ESTIMATE)" : "");
    snprintf(a[4], sizeof a[4], "efficiency basis: runtime %s, backend %s, class %s", ck->runtime ? ck->runtime : "any",
             ck->backend ? ck->backend : "any", d->cls);
    snprintf(a[5], sizeof a[5], "calibration %s, %d rows, hash %016llx", ck->calib_path, ck->c->n,
             cl_calib_hash(ck->c));
    size_t n = 0;
    b[n++] = '[';
    for (int i = 0; i < 6; i++) {
        if (i && n + 2 < cap) { b[n++] = ','; b[n++] = ' '; }
        json_str(b, cap, &n, a[i]);
    }
    if (n + 1 < cap) b[n++] = ']';
    b[n] = '\0';
}

/* The basis rows of k as a JSON list of "FILE:LINE". */
static void basis_refs(const cl_calib_t *c, const cl_cond_t *k, char *b, size_t cap) {
    size_t n = 0;
    b[n++] = '[';
    for (int i = 0; k->fitted && i < k->fit.n_idx; i++) {
        const cl_row_t *r = &c->rows[k->fit.idx[i]];
        const char *f = strrchr(r->file, '/') ? strrchr(r->file, '/') + 1 : r->file;
        char ref[300];
        snprintf(ref, sizeof ref, "%s:%d", f, r->line);
        if (i && n + 2 < cap) { b[n++] = ','; b[n++] = ' '; }
        json_str(b, cap, &n, ref);
    }
    if (n + 1 < cap) b[n++] = ']';
    b[n] = '\0';
}

int cl_record(struct tb_store *s, int64_t run_id, const cl_check_t *ck, const cl_cond_t *k, int n, int idx0) {
    if (n <= 0) return TB_OK;
    tb_claim_rec_t *r = calloc((size_t)n, sizeof *r);
    char (*heads)[48] = calloc((size_t)n, sizeof *heads);
    char (*refs)[4096] = calloc((size_t)n, sizeof *refs);
    char (*assume)[2048] = calloc((size_t)n, sizeof *assume);
    char hash[20];
    int rc;
    if (!r || !heads || !refs || !assume) { rc = tb_err(TB_ERR_NOMEM, "out of memory"); goto done; }
    snprintf(hash, sizeof hash, "%016llx", cl_calib_hash(ck->c));
    const cl_device_t *d = ck->d;
    for (int i = 0; i < n; i++) {
        const cl_cond_t *x = &k[i];
        cl_head_label(&x->head, heads[i], sizeof heads[i]);
        basis_refs(ck->c, x, refs[i], sizeof refs[i]);
        assumptions(ck, x, assume[i], sizeof assume[i]);
        r[i] = (tb_claim_rec_t){
            .section = ck->section, .idx = idx0 + i,
            .model = ck->g->name, .model_source = ck->model_path ? "gguf" : "preset",
            .model_path = ck->model_path, .weights = ck->g->weights, .bits_per_weight = cl_geom_bpw(ck->g),
            .device = d->id, .device_name = d->name, .device_class = d->cls,
            .backend = ck->backend, .runtime = ck->runtime,
            .ctx = x->ctx, .head = heads[i], .head_approx = x->b.head_approx != 0,
            .kv_type = tb_type_name(ck->kv),
            .claimed_tok_s = x->claimed > 0 ? x->claimed : NAN,
            .prompt_tokens = ck->prompt, .claimed_ttft_ms = ck->prompt > 0 ? ck->claimed_ttft : NAN,
            .bytes_per_token = (int64_t)x->b.total, .weight_bytes = (int64_t)x->b.weights,
            .head_bytes = (int64_t)x->b.output, .kv_bytes = (int64_t)x->b.kv,
            .bandwidth_gbps = d->bw_gbps,
            .bandwidth_kind = d->bw_measured ? "measured" : d->bw_estimate ? "estimate" : "nominal",
            .bandwidth_source = d->bw_source,
            .roofline_tok_s = x->roof,
            .projected_lo_tok_s = x->fitted ? x->lo : NAN, .projected_hi_tok_s = x->fitted ? x->hi : NAN,
            .basis_rows = x->fitted ? x->fit.n_basis : 0,
            .basis = x->fitted ? x->fit.basis : "no comparable calibration row",
            .basis_refs = refs[i], .best_efficiency = x->fitted ? x->fit.best : NAN,
            .verdict = x->verdict, .verdict_detail = x->verdict ? x->why : NULL,
            .implied_gbps = x->verdict ? x->implied : NAN, .implied_pct_peak = x->verdict ? 100 * x->need : NAN,
            .ttft_min_ms = ck->prompt > 0 ? ck->ttft_min : NAN, .ttft_verdict = ck->prompt > 0 ? ck->ttft_verdict : NULL,
            .measured_tok_s = x->measured > 0 ? x->measured : NAN, .measured_test_id = x->measured_test_id,
            .calibration_path = ck->calib_path, .calibration_rows = ck->c->n, .calibration_hash = hash,
            .assumptions = assume[i],
        };
    }
    rc = tb_store_add_claims(s, run_id, r, n);
done:
    free(r);
    free(heads);
    free(refs);
    free(assume);
    return rc;
}
