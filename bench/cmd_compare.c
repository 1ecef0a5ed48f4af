/*
 * cmd_compare.c — `ternbench compare`: verdicts between two sets of
 * recorded runs.
 *
 *   ternbench compare --base SEL --cand SEL [--db FILE ...] [--threshold PCT]
 *                     [--count-threshold PCT] [--json | --md]
 *
 * SEL is the report's selector syntax (tb_report_parse_sel): run ids
 * "12" / "12,14", "last[:N]", "tag:K=V" (or "K=V"), "commit:SHA",
 * "format:TYPE", "model:NAME". With several --db files each selector is
 * resolved in every one (run ids only with a single file). A side given
 * several selectors (--base A --base B) is the runs all of them pick.
 *
 * Per test (matched by kind and label, and by model name when a side holds
 * more than one model) and metric: the repetitions' values (rows with
 * repetition >= 0) of each side, their medians, the Hodges–Lehmann ratio
 * cand / base with its 95 % Mann–Whitney interval (infer.h) — or, when
 * the runs are `ab` turns tagged ab.pair with one value per pair and side,
 * the paired ratio with its signed-rank interval — and the
 * verdict against --threshold (default 3 %). Instruction counts (units
 * instr/...) are deterministic: the ratio of medians is the verdict, no
 * interval, against --count-threshold (default 1 %). Per-token decode
 * latencies from token_events get the ratio of median latencies with an
 * interval widened by each side's effective sample size (autocorrelated
 * tokens). Better directions come from the metric registry (metrics.h);
 * its metrics without one (probes, steal) are not judged.
 *
 * Exit status: 0 nothing regressed, 1 something did, 2 usage or input
 * error (including a selection that matches no run, the same run on both
 * sides, or sides that overlap).
 */
#include "commands.h"
#include "infer.h"
#include "metrics.h"
#include "../report/report.h"
#include "ternbench.h"

#include <math.h>
#include <stddef.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DB 8
#define KEY_LEN 400

typedef struct run_ref {
    int db;
    int64_t id;
    char model[128], hash[65], type[16], host[65], hostname[256], commit[64];
    int threads;
    int pair;                 /* its ab.pair tag, -1 when it has none */
} run_ref_t;

typedef struct side {
    run_ref_t *r;
    int n, cap;
} side_t;

typedef struct vec { double *v; size_t n, cap; } vec_t;

typedef struct row {
    char kind[16], label[128], model[128], metric[64], unit[16];
    vec_t s[2];               /* base, cand */
    vec_t pair[2];            /* each value's run's ab.pair (-1: none) */
} row_t;

typedef struct rows { row_t *r; int n, cap; } rows_t;

typedef struct cmp_opts {
    const char *db[MAX_DB];
    int n_db;
    double threshold, count_threshold;   /* fractions */
    int json, md;
} cmp_opts_t;

static int vec_push(vec_t *v, double x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 16;
        double *p = realloc(v->v, cap * sizeof *p);
        if (!p) return -1;
        v->v = p;
        v->cap = cap;
    }
    v->v[v->n++] = x;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Selection                                                                */
/* ---------------------------------------------------------------------- */

static int side_add(side_t *s, int db, int64_t id) {
    for (int i = 0; i < s->n; i++) if (s->r[i].db == db && s->r[i].id == id) return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        run_ref_t *p = realloc(s->r, (size_t)cap * sizeof *p);
        if (!p) return -1;
        s->r = p;
        s->cap = cap;
    }
    memset(&s->r[s->n], 0, sizeof s->r[s->n]);
    s->r[s->n].db = db;
    s->r[s->n].id = id;
    s->n++;
    return 0;
}

/* The runs sel picks in db (tb_report_sel_ids), added to out. */
static int resolve(sqlite3 *db, int dbi, const char *dbpath, const tb_report_sel_t *sel, side_t *out) {
    int64_t *ids;
    int n;
    if (tb_report_sel_ids(db, sel, false, &ids, &n) != TB_OK) {
        fprintf(stderr, "ternbench compare: %s: %s\n", dbpath, tb_last_error());
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++)
        if (side_add(out, dbi, ids[i])) rc = 1;
    free(ids);
    return rc;
}

/* The runs of db that every one of the n selectors picks, added to out. */
static int resolve_all(sqlite3 *db, int dbi, const char *dbpath, const tb_report_sel_t *sel, int n, side_t *out) {
    side_t acc = {0};
    int rc = resolve(db, dbi, dbpath, &sel[0], &acc);
    for (int j = 1; j < n && !rc; j++) {
        side_t more = {0};
        rc = resolve(db, dbi, dbpath, &sel[j], &more);
        int w = 0;
        for (int i = 0; i < acc.n; i++) {
            int in = 0;
            for (int m = 0; m < more.n; m++) in |= more.r[m].id == acc.r[i].id;
            if (in) acc.r[w++] = acc.r[i];
        }
        acc.n = w;
        free(more.r);
    }
    for (int i = 0; i < acc.n && !rc; i++)
        if (side_add(out, dbi, acc.r[i].id)) rc = 1;
    free(acc.r);
    return rc;
}

static void copy_col(sqlite3_stmt *st, int i, char *dst, size_t cap) {
    const char *s = (const char *)sqlite3_column_text(st, i);
    snprintf(dst, cap, "%s", s ? s : "");
}

static int load_meta(sqlite3 *db, const char *dbpath, run_ref_t *r) {
    sqlite3_stmt *st;
    const char *q = "SELECT COALESCE(m.name, ''), COALESCE(m.content_hash, ''), COALESCE(m.main_type, ''),"
                    " h.fingerprint, h.hostname, r.threads, b.git_commit FROM runs r"
                    " JOIN hosts h ON h.id = r.host_id JOIN builds b ON b.id = r.build_id"
                    " LEFT JOIN models m ON m.id = r.model_id WHERE r.id = ?1";
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "ternbench compare: %s: %s\n", dbpath, sqlite3_errmsg(db));
        return 2;
    }
    sqlite3_bind_int64(st, 1, r->id);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        copy_col(st, 0, r->model, sizeof r->model);
        copy_col(st, 1, r->hash, sizeof r->hash);
        copy_col(st, 2, r->type, sizeof r->type);
        copy_col(st, 3, r->host, sizeof r->host);
        copy_col(st, 4, r->hostname, sizeof r->hostname);
        r->threads = sqlite3_column_int(st, 5);
        copy_col(st, 6, r->commit, sizeof r->commit);
    } else {
        fprintf(stderr, "ternbench compare: %s: run %lld lacks its host or build row\n", dbpath, (long long)r->id);
        rc = 2;
    }
    sqlite3_finalize(st);
    r->pair = -1;
    if (rc) return rc;
    if (sqlite3_prepare_v2(db, "SELECT value FROM run_tags WHERE run_id = ?1 AND key = 'ab.pair'", -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "ternbench compare: %s: %s\n", dbpath, sqlite3_errmsg(db));
        return 2;
    }
    sqlite3_bind_int64(st, 1, r->id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        char *end;
        long p = v ? strtol(v, &end, 10) : -1;
        if (v && !*end && p >= 0 && p < 1000000) r->pair = (int)p;
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Samples                                                                  */
/* ---------------------------------------------------------------------- */

/* Not judged: diagnostics and bookkeeping (the registry's metrics without
 * a better direction, and names older databases used for them). */
static int is_diagnostic(const char *metric, const char *unit) {
    const tb_metric_def_t *d = tb_metric_find(metric);
    if (d) return d->better == TB_BETTER_NONE;
    static const char *const skip[] = {"steal_pct", "throttle_pct", "ref_slowdown_pct", "repetitions",
                                       "cpu_ghz_min", "vec_gops_min"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++) if (!strcmp(metric, skip[i])) return 1;
    return !strcmp(unit, "count");
}

/* The registry's direction (metrics.h); for names it does not know
 * (instruction counts, token latencies, older databases) rates are
 * higher-better and everything else (ms, instr/..., B, J/tok) lower. */
static tb_infer_better_t better_of(const char *metric, const char *unit) {
    const tb_metric_def_t *d = tb_metric_find(metric);
    if (d && d->better == TB_BETTER_HIGHER) return TB_INFER_HIGHER_BETTER;
    if (d && d->better == TB_BETTER_LOWER) return TB_INFER_LOWER_BETTER;
    if (strstr(unit, "/s") || strstr(metric, "roofline") || strstr(metric, "stability")) return TB_INFER_HIGHER_BETTER;
    return TB_INFER_LOWER_BETTER;
}

static int is_count(const char *unit) { return !strncmp(unit, "instr", 5); }

static row_t *row_get(rows_t *rs, const char *kind, const char *label, const char *model, const char *metric,
                      const char *unit) {
    for (int i = 0; i < rs->n; i++) {
        row_t *r = &rs->r[i];
        if (!strcmp(r->kind, kind) && !strcmp(r->label, label) && !strcmp(r->model, model) &&
            !strcmp(r->metric, metric) && !strcmp(r->unit, unit))
            return r;
    }
    if (rs->n == rs->cap) {
        int cap = rs->cap ? 2 * rs->cap : 32;
        row_t *p = realloc(rs->r, (size_t)cap * sizeof *p);
        if (!p) return NULL;
        rs->r = p;
        rs->cap = cap;
    }
    row_t *r = &rs->r[rs->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->kind, sizeof r->kind, "%s", kind);
    snprintf(r->label, sizeof r->label, "%s", label);
    snprintf(r->model, sizeof r->model, "%s", model);
    snprintf(r->metric, sizeof r->metric, "%s", metric);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    return r;
}

/* Every repetition's measurements and decode token latencies of run r
 * into rows, side k; by_model: key rows by the model name too. */
static int load_samples(sqlite3 *db, const char *dbpath, const run_ref_t *r, int k, int by_model, rows_t *rs) {
    const char *model = by_model ? r->model : "";
    sqlite3_stmt *st;
    const char *q = "SELECT t.kind, t.label, ms.metric, ms.unit, ms.value FROM measurements ms"
                    " JOIN tests t ON t.id = ms.test_id WHERE t.run_id = ?1 AND ms.repetition >= 0"
                    " ORDER BY t.id, ms.repetition";
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) goto sqlerr;
    sqlite3_bind_int64(st, 1, r->id);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 0), *label = (const char *)sqlite3_column_text(st, 1);
        const char *metric = (const char *)sqlite3_column_text(st, 2), *unit = (const char *)sqlite3_column_text(st, 3);
        double v = sqlite3_column_double(st, 4);
        if (is_diagnostic(metric, unit) || !(v > 0) || !isfinite(v)) continue;
        row_t *row = row_get(rs, kind, label, model, metric, unit);
        if (!row || vec_push(&row->s[k], v) || vec_push(&row->pair[k], r->pair)) { sqlite3_finalize(st); goto oom; }
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) goto sqlerr;

    /* per-token decode latencies: a token's own step time (dur_ns, schema 3)
     * where recorded, else the gap since the previous token of its rep */
    q = "SELECT t.kind, t.label, te.test_id, te.repetition, te.t_ns, te.dur_ns FROM token_events te"
        " JOIN tests t ON t.id = te.test_id WHERE t.run_id = ?1 AND te.phase = 'decode'"
        " AND te.repetition >= 0 ORDER BY te.test_id, te.repetition, te.idx";
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {   /* a database before dur_ns */
        q = "SELECT t.kind, t.label, te.test_id, te.repetition, te.t_ns, NULL FROM token_events te"
            " JOIN tests t ON t.id = te.test_id WHERE t.run_id = ?1 AND te.phase = 'decode'"
            " AND te.repetition >= 0 ORDER BY te.test_id, te.repetition, te.idx";
        if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) goto sqlerr;
    }
    sqlite3_bind_int64(st, 1, r->id);
    int64_t prev_test = -1, prev_rep = -1, prev_t = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t test = sqlite3_column_int64(st, 2), rep = sqlite3_column_int64(st, 3), t = sqlite3_column_int64(st, 4);
        int has_dur = sqlite3_column_type(st, 5) != SQLITE_NULL;
        int64_t dur = has_dur ? sqlite3_column_int64(st, 5) : 0;
        if (has_dur ? dur > 0 : (test == prev_test && rep == prev_rep && t > prev_t)) {
            row_t *row = row_get(rs, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
                                 model, "token_latency_ms", "ms/token");
            if (!row || vec_push(&row->s[k], (double)(has_dur ? dur : t - prev_t) / 1e6) ||
                vec_push(&row->pair[k], -1)) { sqlite3_finalize(st); goto oom; }
        }
        prev_test = test;
        prev_rep = rep;
        prev_t = t;
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) goto sqlerr;
    return 0;
sqlerr:
    fprintf(stderr, "ternbench compare: %s: %s\n", dbpath, sqlite3_errmsg(db));
    return 2;
oom:
    fprintf(stderr, "ternbench compare: out of memory\n");
    return 1;
}

/* ---------------------------------------------------------------------- */
/* Differences between the sides                                            */
/* ---------------------------------------------------------------------- */

/* The distinct values of a field over a side, "a, b" (at most cap bytes). */
static void distinct(const side_t *s, size_t off, char *out, size_t cap) {
    out[0] = 0;
    for (int i = 0; i < s->n; i++) {
        const char *v = (const char *)&s->r[i] + off;
        int seen = 0;
        for (int j = 0; j < i; j++) if (!strcmp((const char *)&s->r[j] + off, v)) seen = 1;
        if (seen) continue;
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%s", len ? ", " : "", *v ? v : "(none)");
    }
}

static int n_distinct(const side_t *s, size_t off) {
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            if (!strcmp((const char *)&s->r[j] + off, (const char *)&s->r[i] + off)) seen = 1;
        n += !seen;
    }
    return n;
}

/* Notes (into notes[], up to 8) where formats, models, hosts or threads differ. */
static int differences(const side_t *b, const side_t *c, char notes[][600]) {
    static const struct { const char *what; size_t off; } f[] = {
        {"formats", offsetof(run_ref_t, type)},
        {"models", offsetof(run_ref_t, hash)},
        {"hosts", offsetof(run_ref_t, host)},
    };
    int n = 0;
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        char vb[256], vc[256];
        size_t off = k == 1 ? offsetof(run_ref_t, model) : k == 2 ? offsetof(run_ref_t, hostname) : f[k].off;
        distinct(b, f[k].off, vb, sizeof vb);
        distinct(c, f[k].off, vc, sizeof vc);
        if (strcmp(vb, vc)) {
            distinct(b, off, vb, sizeof vb);
            distinct(c, off, vc, sizeof vc);
            snprintf(notes[n++], 600, "%s differ: base %s; candidate %s", f[k].what, vb, vc);
        }
    }
    int tb = b->r[0].threads, tc = c->r[0].threads, same = 1;
    for (int i = 0; i < b->n; i++) same &= b->r[i].threads == tb;
    for (int i = 0; i < c->n; i++) same &= c->r[i].threads == tb;
    if (!same) snprintf(notes[n++], 600, "thread counts differ (base %d, candidate %d)", tb, tc);
    return n;
}

/* ---------------------------------------------------------------------- */
/* Output                                                                   */
/* ---------------------------------------------------------------------- */

typedef struct result {
    tb_infer_ratio_t r;
    tb_infer_verdict_t v;
    double threshold;
    int have;                 /* both sides have samples */
    int paired;               /* matched by ab.pair */
} result_t;

static void fmt_ci(const result_t *x, char *buf, size_t cap) {
    if (x->r.method == TB_INFER_POINT) snprintf(buf, cap, "exact");
    else if (isinf(x->r.hi)) snprintf(buf, cap, "(too few)");
    else snprintf(buf, cap, "%.3f-%.3f%s", x->r.lo, x->r.hi, x->paired ? " paired" : "");
}

static void fmt_n(const row_t *row, const result_t *x, int k, char *buf, size_t cap) {
    if (x->r.method == TB_INFER_ESS)
        snprintf(buf, cap, "%zu (ess %zu)", row->s[k].n, k ? x->r.n_cand : x->r.n_base);
    else snprintf(buf, cap, "%zu", row->s[k].n);
}

static void print_text(const rows_t *rs, const result_t *res, const char notes[][600], int n_notes, int md,
                       const side_t *b, const side_t *c, const char *bsel, const char *csel) {
    if (md) {
        printf("Base: `%s` (%d run%s), candidate: `%s` (%d run%s). Ratio = candidate / base with its 95 %% interval.\n\n",
               bsel, b->n, b->n == 1 ? "" : "s", csel, c->n, c->n == 1 ? "" : "s");
        for (int i = 0; i < n_notes; i++) printf("> note: %s\n", notes[i]);
        if (n_notes) printf("\n");
        printf("| Model | Test | Metric | n base | n cand | base | cand | Ratio | 95 %% CI | Verdict |\n");
        printf("|---|---|---|--:|--:|--:|--:|--:|---|---|\n");
    } else {
        for (int i = 0; i < n_notes; i++) fprintf(stderr, "ternbench compare: note: %s\n", notes[i]);
        printf("%-20s %-12s %-22s %7s %7s %12s %12s %7s %-20s %s\n", "model", "test", "metric", "n base", "n cand",
               "base", "cand", "ratio", "95% CI", "verdict");
    }
    for (int i = 0; i < rs->n; i++) {
        const row_t *row = &rs->r[i];
        const result_t *x = &res[i];
        char test[160], ci[48], nb[48], nc[48];
        snprintf(test, sizeof test, "%s", row->label);
        if (!x->have) continue;
        fmt_ci(x, ci, sizeof ci);
        fmt_n(row, x, 0, nb, sizeof nb);
        fmt_n(row, x, 1, nc, sizeof nc);
        const char *v = tb_infer_verdict_name(x->v);
        const char *model = row->model[0] ? row->model : (b->r[0].model[0] ? b->r[0].model : "-");
        if (md)
            printf("| %s | %s | %s (%s) | %s | %s | %.4g | %.4g | %.3f | %s | %s%s%s |\n", model, test, row->metric,
                   row->unit, nb, nc, x->r.median_base, x->r.median_cand, x->r.ratio_medians, ci,
                   x->v == TB_VERDICT_REGRESSED ? "**" : "", v, x->v == TB_VERDICT_REGRESSED ? "**" : "");
        else
            printf("%-20.20s %-12.12s %-22.22s %7s %7s %12.4g %12.4g %7.3f %-20s %s\n", model, test, row->metric, nb,
                   nc, x->r.median_base, x->r.median_cand, x->r.ratio_medians, ci, v);
    }
}

static void print_json(const rows_t *rs, const result_t *res, const char notes[][600], int n_notes, int n_regressed) {
    printf("{\"notes\":[");
    for (int i = 0; i < n_notes; i++) { if (i) printf(","); cmd_json_str(notes[i]); }
    printf("],\"rows\":[");
    int first = 1;
    for (int i = 0; i < rs->n; i++) {
        const row_t *row = &rs->r[i];
        const result_t *x = &res[i];
        if (!x->have) continue;
        printf("%s{\"kind\":", first ? "" : ",");
        first = 0;
        cmd_json_str(row->kind);
        printf(",\"label\":"); cmd_json_str(row->label);
        printf(",\"model\":"); cmd_json_str(row->model);
        printf(",\"metric\":"); cmd_json_str(row->metric);
        printf(",\"unit\":"); cmd_json_str(row->unit);
        printf(",\"n_base\":%zu,\"n_cand\":%zu,\"median_base\":%.6g,\"median_cand\":%.6g,\"ratio\":%.6f,",
               row->s[0].n, row->s[1].n, x->r.median_base, x->r.median_cand, x->r.ratio_medians);
        printf("\"estimate\":%.6f,\"ci_lo\":", x->r.estimate);
        if (isinf(x->r.hi)) printf("null,\"ci_hi\":null"); else printf("%.6f,\"ci_hi\":%.6f", x->r.lo, x->r.hi);
        printf(",\"method\":\"%s\",\"paired\":%s", tb_infer_method_name(x->r.method), x->paired ? "true" : "false");
        if (x->r.method == TB_INFER_ESS) printf(",\"ess_base\":%zu,\"ess_cand\":%zu", x->r.n_base, x->r.n_cand);
        printf(",\"threshold_pct\":%g,\"verdict\":\"%s\"}", x->threshold * 100, tb_infer_verdict_name(x->v));
    }
    printf("],\"regressed\":%d}\n", n_regressed);
}

/* ---------------------------------------------------------------------- */
/* Command                                                                  */
/* ---------------------------------------------------------------------- */

static void usage(FILE *f) {
    fprintf(f,
        "usage: ternbench compare --base SEL --cand SEL [--db FILE ...] [--threshold PCT]\n"
        "                         [--count-threshold PCT] [--json | --md]\n"
        "\n"
        "  SEL                ID[,ID...], last[:N], tag:K=V (or K=V), commit:SHA, format:TYPE, model:NAME\n"
        "                     (repeat --base/--cand: the runs every one of its selectors picks)\n"
        "  --db FILE          results database (default " "results/ternbench.db" " or $TB_DB); repeatable\n"
        "  --threshold PCT    timings: a change is a verdict beyond this (default 3)\n"
        "  --count-threshold PCT  instruction counts (default 1)\n"
        "  --md               a Markdown table for a pull request; --json one object\n"
        "exit status: 0 nothing regressed, 1 something regressed, 2 error\n");
}

static int parse_pct(const char *opt, const char *v, double *out) {
    char *end;
    double t = v ? strtod(v, &end) : -1;
    if (!v || *end || !(t >= 0 && t < 100)) {
        fprintf(stderr, "ternbench compare: %s expects a percentage in [0, 100), got '%s'\n", opt, v ? v : "");
        return 2;
    }
    *out = t / 100;
    return 0;
}

/* When every value of both sides comes from a run tagged ab.pair and each
 * pair holds exactly one value per side (ab's turns, one repetition each),
 * the paired Hodges-Lehmann ratio over the pairs (x->paired = 1); returns
 * 1 when it applied (x->have = 0 when that failed), 0 when not paired. */
static int pair_up(const row_t *row, result_t *x) {
    size_t n = row->s[0].n;
    if (n < 2 || row->s[1].n != n) return 0;
    for (size_t i = 0; i < n; i++) {
        if (row->pair[0].v[i] < 0) return 0;
        int found = 0;
        for (size_t j = 0; j < n; j++) {
            if (j != i && row->pair[0].v[j] == row->pair[0].v[i]) return 0;
            found += row->pair[1].v[j] == row->pair[0].v[i];
        }
        if (found != 1) return 0;
    }
    double *c = malloc(n * sizeof *c);
    if (!c) { x->have = 0; return 1; }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (row->pair[1].v[j] == row->pair[0].v[i]) c[i] = row->s[1].v[j];
    x->have = tb_infer_hl_paired(row->s[0].v, c, n, 0.95, &x->r) == TB_OK;
    x->paired = 1;
    free(c);
    return 1;
}

static result_t judge(const row_t *row, const cmp_opts_t *o) {
    result_t x = {.have = row->s[0].n > 0 && row->s[1].n > 0};
    if (!x.have) return x;
    tb_infer_better_t better = better_of(row->metric, row->unit);
    int rc;
    if (is_count(row->unit)) {
        /* medians only: a count has no spread to draw an interval from */
        rc = tb_infer_hl_unpaired(row->s[0].v, row->s[0].n, row->s[1].v, row->s[1].n, 0.95, &x.r);
        x.r.method = TB_INFER_POINT;
        x.r.lo = x.r.hi = x.r.estimate = x.r.ratio_medians;
        x.threshold = o->count_threshold;
    } else if (!strcmp(row->metric, "token_latency_ms")) {
        rc = row->s[0].n < 2 || row->s[1].n < 2 ? TB_ERR_ARG
             : tb_infer_median_ratio_ess(row->s[0].v, row->s[0].n, row->s[1].v, row->s[1].n, 0.95, &x.r);
        x.threshold = o->threshold;
    } else if (pair_up(row, &x)) {
        x.threshold = o->threshold;
        rc = x.have ? TB_OK : TB_ERR_NOMEM;
    } else {
        rc = tb_infer_hl_unpaired(row->s[0].v, row->s[0].n, row->s[1].v, row->s[1].n, 0.95, &x.r);
        x.threshold = o->threshold;
    }
    if (rc) { x.have = 0; return x; }
    x.v = tb_infer_verdict(x.r.lo, x.r.hi, x.threshold, better);
    return x;
}

int cmd_compare(int argc, char **argv) {
    cmp_opts_t o = {.threshold = 0.03, .count_threshold = 0.01};
    const char *sel_s[2][4] = {{0}};   /* --base, --cand: repeated, their runs intersect */
    int n_sel[2] = {0, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--json")) o.json = 1;
        else if (!strcmp(a, "--md")) o.md = 1;
        else if (!v && (!strcmp(a, "--base") || !strcmp(a, "--cand") || !strcmp(a, "--db") ||
                        !strcmp(a, "--threshold") || !strcmp(a, "--count-threshold"))) {
            fprintf(stderr, "ternbench compare: %s needs a value\n", a);
            return 2;
        } else if (!strcmp(a, "--base") || !strcmp(a, "--cand")) {
            int k = !strcmp(a, "--cand");
            if (n_sel[k] == 4) { fprintf(stderr, "ternbench compare: at most 4 %s selectors\n", a); return 2; }
            sel_s[k][n_sel[k]++] = v;
            i++;
        }
        else if (!strcmp(a, "--db")) {
            if (o.n_db == MAX_DB) { fprintf(stderr, "ternbench compare: at most %d --db files\n", MAX_DB); return 2; }
            o.db[o.n_db++] = v;
            i++;
        } else if (!strcmp(a, "--threshold")) { if (parse_pct(a, v, &o.threshold)) return 2; i++; }
        else if (!strcmp(a, "--count-threshold")) { if (parse_pct(a, v, &o.count_threshold)) return 2; i++; }
        else { cmd_arg_reject("compare", a, NULL); usage(stderr); return 2; }
    }
    if (!n_sel[0] || !n_sel[1]) { fprintf(stderr, "ternbench compare: --base and --cand are required\n"); usage(stderr); return 2; }
    if (o.json && o.md) { fprintf(stderr, "ternbench compare: --json or --md, not both\n"); return 2; }
    static tb_report_sel_t sels[2][4];
    int ids_sel = 0;
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < n_sel[k]; j++) {
            if (tb_report_parse_sel(sel_s[k][j], &sels[k][j])) {
                fprintf(stderr, "ternbench compare: %s\n", tb_last_error());
                return 2;
            }
            ids_sel |= sels[k][j].kind == TB_REPORT_SEL_RUNS || sels[k][j].kind == TB_REPORT_SEL_LAST;
        }
    char bsel_s[600] = "", csel_s[600] = "";   /* as printed: "A and B" */
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < n_sel[k]; j++) {
            char *d = k ? csel_s : bsel_s;
            size_t len = strlen(d);
            snprintf(d + len, 600 - len, "%s%s", j ? " and " : "", sel_s[k][j]);
        }
    if (!o.n_db) {
        const char *env = getenv("TB_DB");
        o.db[o.n_db++] = env && *env ? env : "results/ternbench.db";
    }
    if (o.n_db > 1 && ids_sel) {
        fprintf(stderr, "ternbench compare: run ids and last:N name runs of one database; with several --db use tag:, commit:, format: or model:\n");
        return 2;
    }

    sqlite3 *db[MAX_DB] = {0};
    side_t side[2] = {{0}};
    rows_t rs = {0};
    result_t *res = NULL;
    int rc = 0;
    for (int d = 0; d < o.n_db && !rc; d++) {
        if (sqlite3_open_v2(o.db[d], &db[d], SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
            fprintf(stderr, "ternbench compare: --db %s: %s\n", o.db[d], db[d] ? sqlite3_errmsg(db[d]) : "cannot open");
            rc = 2;
            break;
        }
        for (int k = 0; k < 2 && !rc; k++) rc = resolve_all(db[d], d, o.db[d], sels[k], n_sel[k], &side[k]);
    }
    if (!rc)
        for (int k = 0; k < 2; k++)
            if (!side[k].n) {
                fprintf(stderr, "ternbench compare: --%s %s matches no run\n", k ? "cand" : "base", k ? csel_s : bsel_s);
                rc = 2;
                break;
            }
    if (!rc) {
        int overlap = 0;
        for (int i = 0; i < side[0].n; i++)
            for (int j = 0; j < side[1].n; j++)
                overlap += side[0].r[i].db == side[1].r[j].db && side[0].r[i].id == side[1].r[j].id;
        if (overlap == side[0].n && overlap == side[1].n) {
            fprintf(stderr, "ternbench compare: base and candidate select the same run%s: nothing to compare\n",
                    overlap > 1 ? "s" : "");
            rc = 2;
        } else if (overlap) {
            fprintf(stderr, "ternbench compare: %d run%s on both sides: the sides must not overlap\n", overlap,
                    overlap > 1 ? "s are" : " is");
            rc = 2;
        }
    }
    for (int k = 0; k < 2 && !rc; k++)
        for (int i = 0; i < side[k].n && !rc; i++) rc = load_meta(db[side[k].r[i].db], o.db[side[k].r[i].db], &side[k].r[i]);
    int by_model = !rc && (n_distinct(&side[0], offsetof(run_ref_t, model)) > 1 ||
                           n_distinct(&side[1], offsetof(run_ref_t, model)) > 1);
    for (int k = 0; k < 2 && !rc; k++)
        for (int i = 0; i < side[k].n && !rc; i++)
            rc = load_samples(db[side[k].r[i].db], o.db[side[k].r[i].db], &side[k].r[i], k, by_model, &rs);
    int n_regressed = 0, n_rows = 0;
    if (!rc && !(res = calloc((size_t)(rs.n ? rs.n : 1), sizeof *res))) { fprintf(stderr, "ternbench compare: out of memory\n"); rc = 1; }
    for (int i = 0; !rc && i < rs.n; i++) {
        res[i] = judge(&rs.r[i], &o);
        n_rows += res[i].have;
        n_regressed += res[i].have && res[i].v == TB_VERDICT_REGRESSED;
    }
    if (!rc && !n_rows) {
        fprintf(stderr, "ternbench compare: no test and metric was measured on both sides\n");
        rc = 2;
    }
    if (!rc) {
        char notes[8][600];
        int n_notes = differences(&side[0], &side[1], notes);
        if (o.json) print_json(&rs, res, notes, n_notes, n_regressed);
        else print_text(&rs, res, notes, n_notes, o.md, &side[0], &side[1], bsel_s, csel_s);
        if (!o.json) {
            if (o.md) printf("\n");
            printf("%d of %d compared %s regressed (threshold %g %%, counts %g %%)\n", n_regressed, n_rows,
                   n_rows == 1 ? "metric" : "metrics", o.threshold * 100, o.count_threshold * 100);
        }
        rc = n_regressed ? 1 : 0;
    }
    for (int i = 0; i < rs.n; i++)
        for (int k = 0; k < 2; k++) { free(rs.r[i].s[k].v); free(rs.r[i].pair[k].v); }
    free(rs.r);
    free(res);
    free(side[0].r);
    free(side[1].r);
    for (int d = 0; d < o.n_db; d++) if (db[d]) sqlite3_close(db[d]);
    return rc;
}
