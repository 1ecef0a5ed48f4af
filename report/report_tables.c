/*
 * report_tables.c — the report's tables: llama-bench-style throughput,
 * latency (TTFT, ITL percentiles, chars/s), memory traffic, stability and
 * throttling, energy, the comparison (speedup) table and the provenance
 * block. Row order is the runs' id order, then the tests' id order.
 */
#include "analysis.h"
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Helpers                                                                 */
/* ===================================================================== */

/* The throughput metric that stands for a test in the llama-bench table. */
static const char *main_metric(const rp_test_t *t) {
    if (!strcmp(t->kind, "prefill")) return "prefill_tok_per_s";
    if (!strcmp(t->kind, "sustained") && !rp_metric(t, "decode_tok_per_s")) return "window_tok_per_s";
    return "decode_tok_per_s";
}

/* "median ± sd" with prec decimals; sd omitted when unknown. */
static const char *fmt_msd(char *b, size_t n, const rp_metric_t *m, int prec) {
    if (!m) return snprintf(b, n, "—"), b;
    if (isfinite(m->sd)) snprintf(b, n, "%.*f ± %.*f", prec, m->median, prec, m->sd);
    else snprintf(b, n, "%.*f", prec, m->median);
    return b;
}

static const char *fmt_metric(char *b, size_t n, const rp_test_t *t, const char *name, int prec) {
    return rp_fmt(b, n, rp_value(t, name), prec);
}

static int has_any(const rp_test_t *t, const char *const *names) {
    for (; *names; names++) if (rp_metric(t, *names)) return 1;
    return 0;
}

/* Lowest and highest CPU frequency sampled during the test (MHz); 0 when none. */
static int freq_range(sqlite3 *db, int64_t test_id, double *lo, double *hi) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT min(value), max(value) FROM sensor_samples"
                               " WHERE test_id = ?1 AND unit = 'MHz'", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, test_id);
    int ok = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (ok) { *lo = sqlite3_column_double(st, 0); *hi = sqlite3_column_double(st, 1); }
    sqlite3_finalize(st);
    return ok;
}

/* The slowest and fastest of a test's per-repetition CPU probes `name`
 * (cpu_ghz_after, the core clock, or vec_gops_after, the vector throughput:
 * the slowest thread's, after each repetition); 0 when it has fewer than
 * two. */
static int probe_range(const rp_test_t *t, const char *name, double *lo, double *hi) {
    const rp_metric_t *m = rp_metric(t, name);
    if (!m || m->n < 2) return 0;
    *lo = *hi = m->vals[0];
    for (int i = 1; i < m->n; i++) {
        *lo = fmin(*lo, m->vals[i]);
        *hi = fmax(*hi, m->vals[i]);
    }
    return 1;
}

/* A CPU probe's (before, after) pair of every repetition of t, into
 * b and a (cap); the count. A database from before the probes bracketed
 * each repetition has only the after probes: the previous repetition's
 * after probe is then this one's before (it was taken just before it). */
static int probe_pairs(const rp_test_t *t, const char *before, const char *after, double *b, double *a, int cap) {
    const rp_metric_t *mb = rp_metric(t, before), *ma = rp_metric(t, after);
    if (!ma) return 0;
    int n = 0;
    for (int i = 0; i < ma->n && n < cap; i++) {
        double bv = NAN;
        for (int k = 0; mb && k < mb->n; k++)
            if (mb->reps[k] == ma->reps[i]) bv = mb->vals[k];
        if (!mb && i > 0 && ma->reps[i - 1] == ma->reps[i] - 1) bv = ma->vals[i - 1];
        b[n] = bv;
        a[n++] = ma->vals[i];
    }
    return n;
}

/* Whether t has repetitions whose vector probes on both sides fell under
 * 85 % of the test's best (tb_an_vec_shared); *lo and *best: the higher
 * probe of the lowest such repetition, and the best. A single low probe is
 * not enough: the host takes the vector units for milliseconds often,
 * which one probe catches and a repetition hardly feels (docs/method.md,
 * "Vector units shared"). */
static int vec_shared(const rp_test_t *t, double *lo, double *best) {
    double b[256], a[256];
    int n = probe_pairs(t, "vec_gops_before", "vec_gops_after", b, a, 256);
    if (n < 2) return 0;
    *best = -INFINITY;
    for (int i = 0; i < n; i++) *best = fmax(*best, fmax(b[i], a[i]));
    return tb_an_vec_shared(b, a, (size_t)n, *best, lo) > 0;
}

/* Whether a repetition of t ran with a core slowed: a clock probe beside
 * it under 85 % of the test's best (tb_an_full_speed); *lo and *best the
 * lowest and the best probe. */
static int cores_slowed(const rp_test_t *t, double *lo, double *best) {
    double b[256], a[256];
    int n = probe_pairs(t, "cpu_ghz_before", "cpu_ghz_after", b, a, 256);
    if (n < 2) return 0;
    *best = -INFINITY;
    *lo = INFINITY;
    for (int i = 0; i < n; i++) {
        *best = fmax(*best, fmax(b[i], a[i]));
        *lo = fmin(*lo, fmin(isfinite(b[i]) ? b[i] : a[i], a[i]));
    }
    int slow = 0;
    for (int i = 0; i < n; i++)
        slow |= !tb_an_full_speed(isfinite(b[i]) ? b[i] : a[i], a[i], *best);
    return slow;
}

/* The throttle verdict of a test, from its recorded thermal state, the
 * CPU frequency samples, its core clock and vector probes and its
 * stability. A core whose clock probe fell under 85 % of the test's best
 * (bench's full-speed rule) ran slowed by the host or its thermals; one
 * whose vector probes on both sides of a repetition fell so with its
 * clock steady shared its vector units (an SMT sibling on the host). */
static const char *verdict(rp_ctx_t *c, const rp_test_t *t, char *b, size_t n) {
    double lo, hi, plo = 0, phi = 0, stab = rp_value(t, "stability_pct");
    int freq = freq_range(c->set->db, t->id, &lo, &hi);
    if (!strcmp(t->thermal, "throttled")) snprintf(b, n, "throttled");
    else if (freq && hi > 0 && lo < 0.9 * hi) snprintf(b, n, "throttled (CPU clock fell to %.0f%%)", 100 * lo / hi);
    else if (cores_slowed(t, &plo, &phi) && phi > 0)
        snprintf(b, n, "cores slowed (clock probe fell to %.0f%%: %.2f of %.2f GHz)", 100 * plo / phi, plo, phi);
    else if (vec_shared(t, &plo, &phi) && phi > 0)
        snprintf(b, n, "vector units shared (probes either side of a repetition <= %.0f%%: %.2f of %.2f ops/ns)",
                 100 * plo / phi, plo, phi);
    else if (isfinite(stab) && stab < 90) snprintf(b, n, "sagging (stability %.1f%%)", stab);
    else if (!strcmp(t->thermal, "nominal") || freq) snprintf(b, n, "no throttling");
    else if (probe_range(t, "cpu_ghz_after", &plo, &phi))
        snprintf(b, n, probe_range(t, "vec_gops_after", &plo, &phi) ? "no slowdown seen (clock and vector probes)"
                                                                    : "no slowdown seen (clock probe)");
    else snprintf(b, n, "unknown (no thermal data)");
    return b;
}

/* One note per run listing the sensors recorded as absent (sensor_absent),
 * so an empty energy or temperature column reads as "not measurable here". */
static void absent_note(rp_ctx_t *c) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->set->db, "SELECT sensor, reason FROM sensor_absent WHERE run_id = ?1"
                                       " ORDER BY sensor", -1, &st, NULL) != SQLITE_OK)
        return;   /* an older database without the table */
    for (int i = 0; i < c->set->n_runs; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, c->set->runs[i].id);
        rp_buf_t b = {0};
        while (sqlite3_step(st) == SQLITE_ROW)
            rp_buf_printf(&b, "%s%s (%s)", b.len ? "; " : "", (const char *)sqlite3_column_text(st, 0),
                          (const char *)sqlite3_column_text(st, 1));
        if (b.p) rp_doc_note(c->doc, "Run %lld: sensors absent on this host: %s.", (long long)c->set->runs[i].id, b.p);
        rp_buf_free(&b);
    }
    sqlite3_finalize(st);
}

/* ===================================================================== */
/* Throughput, latency, memory, stability                                  */
/* ===================================================================== */

int rp_tables_write(rp_ctx_t *c) {
    rp_doc_t *d = c->doc;
    rp_set_t *s = c->set;
    char b[8][96];

    rp_doc_heading(d, 2, "Throughput (llama-bench style)");
    static const char *const h1[] = {"model", "size", "params", "ISA", "threads", "test", "t/s"};
    int rows = 0;
    for (int i = 0; i < s->n_runs; i++) {
        const rp_run_t *r = &s->runs[i];
        for (int j = 0; j < r->n_tests; j++) {
            const rp_test_t *t = &r->tests[j];
            const rp_metric_t *m = rp_metric(t, main_metric(t));
            if (!m) continue;
            if (!rows++) rp_doc_table(d, 7, h1, "lrrlrlr");
            char params[96], thr[16];
            rp_fmt_count(params, sizeof params, r->has_model ? (double)r->n_params : NAN);
            if (r->has_model && r->n_params_active > 0 && r->n_params_active < r->n_params) {
                char act[32];
                size_t l = strlen(params);
                snprintf(params + l, sizeof params - l, " (%s active)",
                         rp_fmt_count(act, sizeof act, (double)r->n_params_active));
            }
            snprintf(thr, sizeof thr, "%d", r->threads);
            const char *cells[] = {r->series, rp_fmt_bytes(b[0], 96, r->has_model ? (double)r->file_bytes : NAN),
                                   params, r->isa, thr, t->label, fmt_msd(b[1], 96, m, 2)};
            rp_doc_row(d, cells);
        }
    }
    if (!rows) rp_doc_note(d, "No throughput measurements in the selected runs.");

    rp_doc_heading(d, 2, "Latency");
    static const char *const lat[] = {"ttft_ms", "itl_p50_ms", "itl_p99_ms", "e2e_ms", "chars_per_s", NULL};
    static const char *const h2[] = {"model", "test", "TTFT ms", "prefill ms", "first decode ms",
                                     "ITL p50 ms", "ITL p90 ms", "ITL p99 ms", "ITL max ms",
                                     "stalls %", "e2e ms", "chars/s", "chars/token"};
    rows = 0;
    for (int i = 0; i < s->n_runs; i++) {
        const rp_run_t *r = &s->runs[i];
        for (int j = 0; j < r->n_tests; j++) {
            const rp_test_t *t = &r->tests[j];
            if (!has_any(t, lat)) continue;
            if (!rows++) rp_doc_table(d, 13, h2, "llrrrrrrrrrrr");
            char x[11][32];
            const char *cells[] = {r->series, t->label,
                fmt_metric(x[0], 32, t, "ttft_ms", 2), fmt_metric(x[1], 32, t, "ttft_prefill_ms", 2),
                fmt_metric(x[2], 32, t, "ttft_first_decode_ms", 2), fmt_metric(x[3], 32, t, "itl_p50_ms", 2),
                fmt_metric(x[4], 32, t, "itl_p90_ms", 2), fmt_metric(x[5], 32, t, "itl_p99_ms", 2),
                fmt_metric(x[6], 32, t, "itl_max_ms", 2), fmt_metric(x[10], 32, t, "stall_pct", 1),
                fmt_metric(x[7], 32, t, "e2e_ms", 1), fmt_metric(x[8], 32, t, "chars_per_s", 1),
                fmt_metric(x[9], 32, t, "chars_per_token", 2)};
            rp_doc_row(d, cells);
        }
    }
    if (!rows) rp_doc_note(d, "No latency measurements (TTFT, ITL, chars/s) in the selected runs.");

    rp_doc_heading(d, 2, "Memory traffic");
    static const char *const mem[] = {"bytes_per_token", "achieved_gbps", "roofline_pct",
                                      "peak_rss_bytes", "session_bytes", NULL};
    static const char *const h3[] = {"model", "test", "bytes/token", "achieved GB/s", "% of roofline",
                                     "peak RSS", "session"};
    rows = 0;
    for (int i = 0; i < s->n_runs; i++) {
        const rp_run_t *r = &s->runs[i];
        for (int j = 0; j < r->n_tests; j++) {
            const rp_test_t *t = &r->tests[j];
            if (!has_any(t, mem)) continue;
            if (!rows++) rp_doc_table(d, 7, h3, "llrrrrr");
            char x[5][32];
            const char *cells[] = {r->series, t->label,
                rp_fmt_bytes(x[0], 32, rp_value(t, "bytes_per_token")),
                fmt_metric(x[1], 32, t, "achieved_gbps", 2), fmt_metric(x[2], 32, t, "roofline_pct", 1),
                rp_fmt_bytes(x[3], 32, rp_value(t, "peak_rss_bytes")),
                rp_fmt_bytes(x[4], 32, rp_value(t, "session_bytes"))};
            rp_doc_row(d, cells);
        }
    }
    if (!rows) rp_doc_note(d, "No memory-traffic measurements in the selected runs.");

    rp_doc_heading(d, 2, "Stability, throttling and energy");
    static const char *const stab[] = {"stability_pct", "energy_j_per_tok", "cpu_ghz_after", "vec_gops_after", NULL};
    static const char *const h4[] = {"model", "test", "stability %", "thermal state", "core clock GHz",
                                     "vector ops/ns", "throttle verdict", "energy J/token"};
    rows = 0;
    for (int i = 0; i < s->n_runs; i++) {
        const rp_run_t *r = &s->runs[i];
        for (int j = 0; j < r->n_tests; j++) {
            const rp_test_t *t = &r->tests[j];
            if (!strcmp(t->kind, "quality")) continue;   /* its own table (report_quality.c) */
            if (!has_any(t, stab) && strcmp(t->kind, "sustained") && !t->thermal[0]) continue;
            if (!rows++) rp_doc_table(d, 8, h4, "llrlrrlr");
            char x[5][96];
            double plo, phi;
            if (probe_range(t, "cpu_ghz_after", &plo, &phi)) snprintf(x[3], 96, "%.2f-%.2f", plo, phi);
            else snprintf(x[3], 96, "—");
            if (probe_range(t, "vec_gops_after", &plo, &phi)) snprintf(x[4], 96, "%.2f-%.2f", plo, phi);
            else snprintf(x[4], 96, "—");
            const char *cells[] = {r->series, t->label, fmt_metric(x[0], 96, t, "stability_pct", 1),
                                   t->thermal[0] ? t->thermal : "not recorded", x[3], x[4], verdict(c, t, x[1], 96),
                                   fmt_metric(x[2], 96, t, "energy_j_per_tok", 4)};
            rp_doc_row(d, cells);
        }
    }
    if (!rows) rp_doc_note(d, "No stability, thermal or energy data in the selected runs.");
    rp_doc_table_end(d);
    absent_note(c);
    return TB_OK;
}

/* ===================================================================== */
/* Comparison                                                              */
/* ===================================================================== */

/* Median over the runs flagged in `in` of the metric of the test labelled
 * `label` (same kind); NAN when no flagged run has it. */
static double across(rp_ctx_t *c, const unsigned char *in, const char *kind, const char *label,
                     const char *metric) {
    double v[TB_REPORT_MAX_RUNS];
    int n = 0;
    for (int i = 0; i < c->set->n_runs; i++) {
        if (!in[i]) continue;
        const rp_run_t *r = &c->set->runs[i];
        for (int j = 0; j < r->n_tests; j++) {
            const rp_test_t *t = &r->tests[j];
            if (strcmp(t->kind, kind) || strcmp(t->label, label)) continue;
            double x = rp_value(t, metric ? metric : main_metric(t));
            if (isfinite(x)) { v[n++] = x; break; }
        }
    }
    return rp_median(v, n);
}

static void run_list(rp_ctx_t *c, const unsigned char *in, char *b, size_t n) {
    size_t l = 0;
    b[0] = 0;
    for (int i = 0; i < c->set->n_runs && l < n; i++)
        if (in[i]) l += (size_t)snprintf(b + l, n - l, "%s%s (run %lld)", l ? ", " : "",
                                         c->set->runs[i].series, (long long)c->set->runs[i].id);
}

int rp_compare_write(rp_ctx_t *c) {
    if (!c->opts->compare || !c->in_base || !c->in_cmp) return TB_OK;
    rp_doc_t *d = c->doc;
    rp_doc_heading(d, 2, "Comparison");
    char lb[1024], lc[1024];
    run_list(c, c->in_base, lb, sizeof lb);
    run_list(c, c->in_cmp, lc, sizeof lc);
    rp_doc_para(d, "Baseline: %s. Compare: %s. Throughput speedup = compare ÷ baseline; "
                   "TTFT speedup = baseline ÷ compare (latency: lower is better). "
                   "Tests match by kind and label; several runs on one side give their median.", lb, lc);
    static const char *const h[] = {"test", "baseline t/s", "compare t/s", "speedup",
                                    "baseline TTFT ms", "compare TTFT ms", "TTFT speedup"};
    int rows = 0;
    /* every (kind, label) of the baseline runs, first appearance order */
    for (int i = 0; i < c->set->n_runs; i++) {
        if (!c->in_base[i]) continue;
        const rp_run_t *r = &c->set->runs[i];
        for (int j = 0; j < r->n_tests; j++) {
            const rp_test_t *t = &r->tests[j];
            int seen = 0;   /* an earlier baseline test with this kind+label */
            for (int i2 = 0; i2 <= i && !seen; i2++) {
                if (!c->in_base[i2]) continue;
                const rp_run_t *r2 = &c->set->runs[i2];
                int lim = i2 == i ? j : r2->n_tests;
                for (int j2 = 0; j2 < lim && !seen; j2++)
                    seen = !strcmp(r2->tests[j2].kind, t->kind) && !strcmp(r2->tests[j2].label, t->label);
            }
            if (seen) continue;
            double bt = across(c, c->in_base, t->kind, t->label, NULL);
            double ct = across(c, c->in_cmp, t->kind, t->label, NULL);
            double bf = across(c, c->in_base, t->kind, t->label, "ttft_ms");
            double cf = across(c, c->in_cmp, t->kind, t->label, "ttft_ms");
            if (!(isfinite(bt) && isfinite(ct)) && !(isfinite(bf) && isfinite(cf))) continue;
            if (!rows++) rp_doc_table(d, 7, h, "lrrrrrr");
            char x[6][32];
            if (isfinite(bt) && isfinite(ct) && bt > 0) snprintf(x[2], 32, "%.2fx", ct / bt);
            else snprintf(x[2], 32, "—");
            if (isfinite(bf) && isfinite(cf) && cf > 0) snprintf(x[5], 32, "%.2fx", bf / cf);
            else snprintf(x[5], 32, "—");
            const char *cells[] = {t->label, rp_fmt(x[0], 32, bt, 2), rp_fmt(x[1], 32, ct, 2), x[2],
                                   rp_fmt(x[3], 32, bf, 2), rp_fmt(x[4], 32, cf, 2), x[5]};
            rp_doc_row(d, cells);
        }
    }
    if (!rows) rp_doc_note(d, "No test label appears in both the baseline and the compare runs.");
    rp_doc_table_end(d);
    return TB_OK;
}

/* ===================================================================== */
/* Provenance                                                              */
/* ===================================================================== */

static const char *opt_i(char *b, size_t n, int64_t v, const char *suffix) {
    if (v < 0) snprintf(b, n, "?");
    else snprintf(b, n, "%lld%s", (long long)v, suffix);
    return b;
}

int rp_provenance_write(rp_ctx_t *c) {
    rp_doc_t *d = c->doc;
    int diff = c->opts->diffable;
    rp_doc_heading(d, 2, "Provenance");
    for (int i = 0; i < c->set->n_runs; i++) {
        const rp_run_t *r = &c->set->runs[i];
        rp_buf_t p = {0};
        char x[8][64];
        rp_buf_printf(&p, "run        %lld  %s  status %s\n", (long long)r->id, r->uuid, r->status);
        if (!diff) rp_buf_printf(&p, "time       %s → %s\n", r->started, r->ended[0] ? r->ended : "(not ended)");
        if (r->error[0]) rp_buf_printf(&p, "error      %s\n", r->error);
        if (r->tags[0]) rp_buf_printf(&p, "tags       %s\n", r->tags);
        rp_buf_printf(&p, "host       %s: %s (%s), %s cores / %s threads, L1d %s L2 %s L3 %s, RAM %s\n",
                      r->hostname, r->cpu_brand, r->cpu_vendor, opt_i(x[0], 64, r->cores, ""),
                      opt_i(x[1], 64, r->hw_threads, ""), opt_i(x[2], 64, r->l1d_kb, " KiB"),
                      opt_i(x[3], 64, r->l2_kb, " KiB"), opt_i(x[4], 64, r->l3_kb, " KiB"),
                      rp_fmt_bytes(x[5], 64, r->mem_bytes >= 0 ? (double)r->mem_bytes : NAN));
        rp_buf_printf(&p, "os         %s; %s\n", r->os, r->kernel);
        rp_buf_printf(&p, "cpu flags  %s\n", r->isa_flags);
        rp_buf_printf(&p, "build      ternbench %s, commit %s%s, %s, %s\n", r->version, r->commit,
                      r->dirty ? " (dirty)" : "", r->build_type, r->compiler);
        rp_buf_printf(&p, "cflags     %s\n", r->cflags);
        rp_buf_printf(&p, "execution  ISA %s (best %s), %d threads, KV %s\n", r->isa, r->isa_best,
                      r->threads, r->kv_type);
        if (isfinite(r->bw_before) || isfinite(r->bw_after))
            rp_buf_printf(&p, "bandwidth  %s GB/s before, %s GB/s after\n",
                          rp_fmt(x[6], 64, r->bw_before, 2), rp_fmt(x[7], 64, r->bw_after, 2));
        if (r->has_model) {
            rp_buf_printf(&p, "model      %s (%s), main type %s, %s params", r->model_name, r->arch,
                          r->main_type, rp_fmt_count(x[0], 64, (double)r->n_params));
            if (r->n_expert > 0)
                rp_buf_printf(&p, ", %lld experts (%lld used)", (long long)r->n_expert, (long long)r->n_expert_used);
            rp_buf_printf(&p, ", %lld layers, n_embd %lld, %s\n", (long long)r->n_layer, (long long)r->n_embd,
                          rp_fmt_bytes(x[1], 64, (double)r->file_bytes));
            rp_buf_printf(&p, "weights    %s\n", r->weight_types);
            rp_buf_printf(&p, "model hash %s\n", r->model_hash);
            if (!diff) rp_buf_printf(&p, "model path %s\n", r->model_path);
        } else {
            rp_buf_puts(&p, "model      (none recorded)\n");
        }
        rp_buf_printf(&p, "scenario   %s, hash %s\n", r->scen_name, r->scen_hash);
        if (!diff) rp_buf_printf(&p, "scenario   file %s\n", r->scen_path);
        if (p.oom) { rp_buf_free(&p); return tb_err(TB_ERR_NOMEM, "report: out of memory"); }
        rp_doc_pre(d, p.p);
        rp_buf_free(&p);
    }
    return TB_OK;
}
