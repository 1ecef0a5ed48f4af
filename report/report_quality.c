/*
 * report_quality.c — speed beside quality: per format (a run's model and
 * output head), its decode speed and bytes per token next to what its
 * [quality] tests measured against their reference (perplexity ratio,
 * mean KL divergence, same top-1), as a table and as a chart of decode
 * tok/s against mean KLD, one labelled point per format.
 *
 * A format is its run's model (legend label) with its tensors by type (a
 * file's main type alone can hide its quantization: stories260K quantized
 * to Q4_0 reports main type f16, its ffn_down tensors kept in F16). Its
 * speed is its run's headline decode test (the smallest depth; a run
 * without one has no speed: "—"); its quality is each quality test
 * of the same run, one row per test (a run may compare against several
 * references). Anything that ran the approximate output head — the run's
 * decode (tag head=approx:...) or the quality test's test model (test
 * parameter approximate = 1) — is labelled APPROXIMATE in every cell that
 * names the format, in the table and on the chart.
 */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The string member `key` of a flat JSON object as the store writes it
 * ("key":"value", no spaces); "" when absent. Escapes are kept verbatim
 * except \" and \\. */
static void json_str(const char *json, const char *key, char *out, size_t cap) {
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    out[0] = '\0';
    const char *p = json ? strstr(json, pat) : NULL;
    if (!p) return;
    p += strlen(pat);
    size_t n = 0;
    for (; *p && *p != '"' && n + 1 < cap; p++) {
        if (*p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
        out[n++] = *p;
    }
    out[n] = '\0';
}

/* The value of tag `key` in a run's "k=v, k=v" tag text; "" when absent. */
static void run_tag(const rp_run_t *r, const char *key, char *out, size_t cap) {
    out[0] = '\0';
    size_t kl = strlen(key);
    for (const char *p = r->tags; p && *p;) {
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            p += kl + 1;
            size_t n = strcspn(p, ",");
            snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
            return;
        }
        p = strstr(p, ", ");
        if (p) p += 2;
    }
}

/* The run's headline decode test: kind decode, smallest depth. */
static const rp_test_t *decode_test(const rp_run_t *r) {
    const rp_test_t *best = NULL;
    for (int j = 0; j < r->n_tests; j++) {
        const rp_test_t *t = &r->tests[j];
        if (strcmp(t->kind, "decode") || !rp_metric(t, "decode_tok_per_s")) continue;
        if (!best || t->depth < best->depth) best = t;
    }
    return best;
}

/* One row: a quality test with its run's speed. */
typedef struct qrow {
    const rp_run_t *run;
    const rp_test_t *q, *speed;
    char label[256];        /* "llama-tiny q4_0", "... [APPROXIMATE head approx:64:4]" */
    char head[64];          /* the quality test's head                                 */
    char run_head[64];      /* the run's (its decode's) head                           */
    char ref[160];
    int approx;             /* quality or decode ran the approximate head             */
} qrow_t;

/* Collect every complete quality test with a KLD; *n rows into rows (cap). */
static int collect(const rp_set_t *s, qrow_t *rows, int cap) {
    int n = 0;
    for (int i = 0; i < s->n_runs; i++) {
        const rp_run_t *r = &s->runs[i];
        for (int j = 0; j < r->n_tests && n < cap; j++) {
            const rp_test_t *t = &r->tests[j];
            if (strcmp(t->kind, "quality") || !rp_metric(t, "kld_mean")) continue;
            qrow_t *w = &rows[n++];
            memset(w, 0, sizeof *w);
            w->run = r;
            w->q = t;
            w->speed = decode_test(r);
            json_str(t->params, "head", w->head, sizeof w->head);
            run_tag(r, "head", w->run_head, sizeof w->run_head);
            if (!w->run_head[0]) snprintf(w->run_head, sizeof w->run_head, "exact");
            double ap;
            int qa = (rp_json_number(t->params, "approximate", &ap) == TB_OK && ap != 0) ||
                     !strncmp(w->head, "approx", 6);
            int ra = !strncmp(w->run_head, "approx", 6);
            w->approx = qa || ra;
            char kind[16], name[128], sha[72];
            json_str(t->params, "reference_kind", kind, sizeof kind);
            json_str(t->params, "reference", name, sizeof name);
            json_str(t->params, "reference_sha256", sha, sizeof sha);
            const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
            snprintf(w->ref, sizeof w->ref, "%s%s%s (%.12s)", !strcmp(kind, "type") ? "type " : "",
                     !strcmp(kind, "file") ? "saved " : "", base, sha);
            if (qa && ra && !strcmp(w->head, w->run_head))
                snprintf(w->label, sizeof w->label, "%s [APPROXIMATE head %s]", r->series, w->head);
            else if (qa || ra)
                snprintf(w->label, sizeof w->label, "%s [APPROXIMATE head: decode %s, quality %s]", r->series,
                         w->run_head, w->head[0] ? w->head : "exact");
            else
                snprintf(w->label, sizeof w->label, "%s", r->series);
        }
    }
    tb_clear_error();   /* absent params members are not errors */
    return n;
}

#define MAX_ROWS 512

int rp_quality_write(rp_ctx_t *c) {
    qrow_t *rows = malloc(MAX_ROWS * sizeof *rows);
    if (!rows) return tb_err(TB_ERR_NOMEM, "report: out of memory");
    int n = collect(c->set, rows, MAX_ROWS);
    if (n == 0) { free(rows); return TB_OK; }
    rp_doc_t *d = c->doc;
    rp_doc_heading(d, 2, "Speed and quality");
    rp_doc_para(d, "Per format: its run's decode speed and bytes per token (the decode test at the smallest "
                   "depth) beside its quality against the reference ([quality] tests, llama-perplexity's "
                   "definitions: perplexity ratio PPL/PPL(ref), mean KL divergence of its next-token "
                   "distribution from the reference's, and the share of scored tokens whose most likely next "
                   "token is the reference's). Formats that ran the approximate output head are labelled "
                   "APPROXIMATE.");
    static const char *const h[] = {"format", "tensors by type", "decode t/s", "bytes/token", "PPL", "PPL ratio",
                                    "mean KLD", "same top-1 %", "reference", "text"};
    rp_doc_table(d, 10, h, "llrrrrrrll");
    int approx = 0;
    for (int i = 0; i < n; i++) {
        const qrow_t *w = &rows[i];
        char x[8][96];
        double tps = w->speed ? rp_value(w->speed, "decode_tok_per_s") : NAN;
        double bpt = w->speed ? rp_value(w->speed, "bytes_per_token") : NAN;
        rp_fmt(x[0], 96, tps, 2);
        if (isfinite(bpt)) rp_fmt_bytes(x[1], 96, bpt);
        else snprintf(x[1], 96, "—");
        const rp_metric_t *pp = rp_metric(w->q, "ppl"), *pu = rp_metric(w->q, "ppl_unc");
        if (pp && pu) snprintf(x[2], 96, "%.4f ± %.4f", pp->median, pu->median);
        else rp_fmt(x[2], 96, pp ? pp->median : NAN, 4);
        rp_fmt(x[3], 96, rp_value(w->q, "ppl_ratio"), 4);
        const rp_metric_t *km = rp_metric(w->q, "kld_mean"), *ku = rp_metric(w->q, "kld_unc");
        if (km && ku) snprintf(x[4], 96, "%.6f ± %.6f", km->median, ku->median);
        else rp_fmt(x[4], 96, km ? km->median : NAN, 6);
        rp_fmt(x[5], 96, rp_value(w->q, "same_top_pct"), 2);
        char text[96], ctx[32];
        json_str(w->q->params, "text", text, sizeof text);
        double cv;
        snprintf(ctx, sizeof ctx, "ctx %.0f", rp_json_number(w->q->params, "ctx", &cv) == TB_OK ? cv : NAN);
        snprintf(x[6], 96, "%.40s, %s, %.0f tok", strrchr(text, '/') ? strrchr(text, '/') + 1 : text, ctx,
                 rp_value(w->q, "scored_tokens"));
        const char *cells[] = {w->label, w->run->weight_types, x[0], x[1], x[2], x[3], x[4], x[5], w->ref, x[6]};
        rp_doc_row(d, cells);
        approx |= w->approx;
    }
    rp_doc_table_end(d);
    tb_clear_error();
    if (approx)
        rp_doc_note(d, "APPROXIMATE: the output head scored only the rows of the clusters it picked "
                       "(approx:CENTROIDS:TOPC); its logits are not the model's, its bytes per token count the "
                       "rows it read. Its quality row measures that approximation against the reference.");
    free(rows);
    return TB_OK;
}

int rp_quality_chart(rp_ctx_t *c) {
    static const char *title = "Decode speed against mean KL divergence";
    qrow_t *rows = malloc(MAX_ROWS * sizeof *rows);
    if (!rows) return tb_err(TB_ERR_NOMEM, "report: out of memory");
    int n = collect(c->set, rows, MAX_ROWS), pts = 0;
    double kmin = INFINITY, kmax = 0;
    if (n == 0) { free(rows); return TB_OK; }   /* no quality test: not a chart this report has */
    rp_chart_t ch = {.name = "speed_quality", .title = title, .width = 960, .height = 600};
    rp_buf_puts(&ch.dat, "# speed_quality.dat — per format: mean KLD against its reference, its decode speed\n"
                         "# columns: run kld_mean decode_tok_per_s approximate label\n");
    for (int i = 0; i < n; i++) {
        const qrow_t *w = &rows[i];
        double k = rp_value(w->q, "kld_mean"), t = w->speed ? rp_value(w->speed, "decode_tok_per_s") : NAN;
        if (!isfinite(k) || !isfinite(t)) continue;
        kmin = fmin(kmin, k);
        kmax = fmax(kmax, k);
        rp_buf_printf(&ch.dat, "%lld %.9g %.9g %d ", (long long)w->run->id, k, t, w->approx);
        rp_gp_quote(&ch.dat, w->label);
        rp_buf_puts(&ch.dat, "\n");
        pts++;
    }
    free(rows);
    if (!pts) {
        rp_buf_free(&ch.dat);
        rp_chart_skip(c, title, "no run with both a quality test and a decode test");
        return TB_OK;
    }
    rp_buf_t t = {0};
    rp_buf_printf(&t, "%s\n", title);
    rp_chart_subtitle(c, NULL, &t);
    rp_buf_puts(&ch.body, "  set title ");
    rp_gp_quote(&ch.body, t.p ? t.p : title);
    rp_buf_free(&t);
    /* KLDs spanning orders of magnitude (Q8_0 to ternary) read on a log axis, unless one is 0 */
    const int logx = kmin > 0 && kmax / kmin > 50;
    rp_buf_puts(&ch.body, logx ? "\n  set logscale x\n  set xrange [*:*]" : "\n  set xrange [0:*]");
    rp_buf_puts(&ch.body, "\n  set xlabel \"mean KL divergence from the reference (nats; lower is closer)\"\n"
                          "  set ylabel \"decode (tok/s)\"\n  set yrange [0:*]\n"
                          "  set offsets graph 0.05, graph 0.3, graph 0.12, 0\n  set key off\n"
                          "  plot \"speed_quality.dat\" using 2:3:(int($4) ? 2 : 1) with points lc variable pt 7 ps 1.4, \\\n"
                          "       \"\" using 2:3:5 with labels left offset 1,0.6 font \",9\"\n");
    int rc = rp_chart_emit(c, &ch);
    rp_buf_free(&ch.dat);
    rp_buf_free(&ch.body);
    return rc;
}
