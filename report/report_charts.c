/*
 * report_charts.c — chart plumbing (data file + gnuplot script + render +
 * document) and the charts over per-test medians: decode tok/s against
 * context depth, prefill tok/s against prompt length, the weight-format
 * comparison and the roofline. Time-series charts (sustained windows, ITL
 * CDF) live in report_charts_time.c.
 *
 * Every script renders both files from one body:
 *     do for [fmt in "svg png"] { set terminal ...; set output ...; BODY }
 * and uses pngcairo when this gnuplot has it, else the libgd png terminal.
 */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Plumbing                                                                */
/* ===================================================================== */

void rp_gp_quote(rp_buf_t *out, const char *s) {
    rp_buf_puts(out, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') { rp_buf_put(out, "\\", 1); rp_buf_put(out, s, 1); }
        else if (*s == '\n') rp_buf_puts(out, "\\n");
        else if ((unsigned char)*s >= 0x20) rp_buf_put(out, s, 1);
    }
    rp_buf_puts(out, "\"");
}

/* Distinct values of a run string field over the runs (only `only` when
 * not NULL), joined with ", " (at most 4, then "…"). */
static void distinct(rp_set_t *s, const rp_run_t *only, size_t off, rp_buf_t *out) {
    int shown = 0;
    for (int i = 0; i < s->n_runs; i++) {
        if (only && &s->runs[i] != only) continue;
        const char *v = *(char **)((char *)&s->runs[i] + off);
        int dup = 0;
        for (int j = 0; j < i && !dup && !only; j++) dup = !strcmp(v, *(char **)((char *)&s->runs[j] + off));
        if (dup) continue;
        if (shown == 4) { rp_buf_puts(out, ", …"); break; }
        rp_buf_printf(out, "%s%s", shown++ ? ", " : "", v);
    }
}

/* Two lines: "model(s): A, B" and "host: CPU (name) · build: commit type". */
void rp_chart_subtitle(rp_ctx_t *c, const rp_run_t *only, rp_buf_t *out) {
    rp_set_t *s = c->set;
    rp_buf_puts(out, only || s->n_runs == 1 ? "model: " : "models: ");
    distinct(s, only, offsetof(rp_run_t, series), out);
    rp_buf_puts(out, "\nhost: ");
    distinct(s, only, offsetof(rp_run_t, cpu_brand), out);
    rp_buf_puts(out, " (");
    distinct(s, only, offsetof(rp_run_t, hostname), out);
    rp_buf_puts(out, ")  ·  build: ");
    for (int i = 0, shown = 0; i < s->n_runs; i++) {
        const rp_run_t *r = &s->runs[i];
        if (only && r != only) continue;
        int dup = 0;
        for (int j = 0; j < i && !dup && !only; j++)   /* one run alone: no earlier duplicate */
            dup = !strcmp(r->commit, s->runs[j].commit) && !strcmp(r->build_type, s->runs[j].build_type);
        if (dup) continue;
        if (shown == 3) { rp_buf_puts(out, ", …"); break; }
        rp_buf_printf(out, "%s%.7s%s %s", shown++ ? ", " : "", r->commit, r->dirty ? "+dirty" : "", r->build_type);
    }
}

/* Common settings after `reset`: look, palette, missing-value marker. */
static const char PREAMBLE[] =
    "  reset\n"
    "  set encoding utf8\n"
    "  set datafile missing \"?\"\n"
    "  set grid back lc rgb \"#dddddd\" lw 1\n"
    "  set border lc rgb \"#444444\"\n"
    "  set key below center horizontal Left reverse noautotitle nobox maxcols 2 title \" \"\n"
    "  set linetype 1 lc rgb \"#1b9e77\" lw 2 pt 7 ps 0.8\n"
    "  set linetype 2 lc rgb \"#d95f02\" lw 2 pt 5 ps 0.8\n"
    "  set linetype 3 lc rgb \"#7570b3\" lw 2 pt 9 ps 0.9\n"
    "  set linetype 4 lc rgb \"#e7298a\" lw 2 pt 11 ps 0.9\n"
    "  set linetype 5 lc rgb \"#66a61e\" lw 2 pt 13 ps 0.9\n"
    "  set linetype 6 lc rgb \"#e6ab02\" lw 2 pt 7 ps 0.8\n"
    "  set linetype 7 lc rgb \"#a6761d\" lw 2 pt 5 ps 0.8\n"
    "  set linetype 8 lc rgb \"#666666\" lw 2 pt 9 ps 0.9\n"
    "  set linetype cycle 8\n";

int rp_chart_emit(rp_ctx_t *c, rp_chart_t *ch) {
    const char *dir = c->opts->out_dir;
    char file[256];
    rp_buf_t gp = {0};
    rp_buf_printf(&gp, "# %s.gp — %s\n", ch->name, ch->title);
    rp_buf_printf(&gp, "# Written by `ternbench report`. Re-render in this directory with: gnuplot %s.gp\n"
                       "# Data: %s.dat. Output: %s.svg and %s.png.\n", ch->name, ch->name, ch->name, ch->name);
    rp_buf_printf(&gp,
        "do for [fmt in \"svg png\"] {\n"
        "  if (fmt eq \"svg\") {\n"
        "    set terminal svg size %d,%d noenhanced font \"Sans,11\" background rgb \"white\"\n"
        "    set output \"%s.svg\"\n"
        "  } else {\n"
        "    if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
        "      set terminal pngcairo size %d,%d noenhanced font \"Sans,10\" background rgb \"white\"\n"
        "    } else {\n"
        "      set terminal png size %d,%d noenhanced background rgb \"white\"\n"
        "    }\n"
        "    set output \"%s.png\"\n"
        "  }\n", ch->width, ch->height, ch->name, ch->width, ch->height, ch->width, ch->height, ch->name);
    rp_buf_puts(&gp, PREAMBLE);
    if (ch->body.p) rp_buf_puts(&gp, ch->body.p);
    rp_buf_puts(&gp, "  unset output\n}\n");

    snprintf(file, sizeof file, "%s.dat", ch->name);
    int rc = rp_buf_save(&ch->dat, dir, file);
    snprintf(file, sizeof file, "%s.gp", ch->name);
    if (!rc) rc = rp_buf_save(&gp, dir, file);
    rp_buf_free(&gp);
    if (rc) return rc;
    c->res->n_charts++;

    rp_doc_heading(c->doc, 3, ch->title);
    if (!c->gnuplot[0]) {
        rp_doc_note(c->doc, "Not rendered (gnuplot unavailable): data in %s.dat, script in %s.gp.", ch->name, ch->name);
        return TB_OK;
    }
    rc = rp_gnuplot_run(c->gnuplot, dir, file);
    if (rc == TB_OK) rc = rp_doc_chart(c->doc, dir, ch->name, ch->title);
    if (rc != TB_OK) {
        rp_doc_note(c->doc, "Chart %s could not be rendered: %s", ch->name, tb_last_error());
        if (!c->res->warning[0])
            snprintf(c->res->warning, sizeof c->res->warning, "chart %s not rendered: %s", ch->name, tb_last_error());
        tb_clear_error();
        return TB_OK;
    }
    c->res->n_rendered++;
    return TB_OK;
}

void rp_chart_skip(rp_ctx_t *c, const char *title, const char *why) {
    rp_doc_heading(c->doc, 3, title);
    rp_doc_note(c->doc, "Skipped: %s.", why);
    c->res->n_skipped++;
}

static void chart_free(rp_chart_t *ch) {
    rp_buf_free(&ch->dat);
    rp_buf_free(&ch->body);
}

/* `set title "TITLE\nSUBTITLE"` into the body. */
static void set_title(rp_ctx_t *c, rp_buf_t *body, const char *title) {
    rp_buf_t t = {0};
    rp_buf_printf(&t, "%s\n", title);
    rp_chart_subtitle(c, NULL, &t);
    rp_buf_puts(body, "  set title ");
    if (t.p) rp_gp_quote(body, t.p);
    rp_buf_puts(body, " font \",12\"\n");
    rp_buf_free(&t);
}

/* ===================================================================== */
/* Line charts of a metric against a test parameter                        */
/* ===================================================================== */

typedef struct pt { double x, y, sd; } pt_t;

static int cmp_pt(const void *a, const void *b) {
    double x = ((const pt_t *)a)->x, y = ((const pt_t *)b)->x;
    return (x > y) - (x < y);
}

/* Points (x = test parameter, y = metric median ± sd) of one run's tests of
 * `kind`; returns the count written to p (at most cap). */
static int run_points(const rp_run_t *r, const char *kind, const char *metric, int use_prompt,
                      pt_t *p, int cap) {
    int n = 0;
    for (int j = 0; j < r->n_tests && n < cap; j++) {
        const rp_test_t *t = &r->tests[j];
        if (strcmp(t->kind, kind)) continue;
        const rp_metric_t *m = rp_metric(t, metric);
        double x = use_prompt ? t->prompt_tokens : t->depth;
        if (!m || !isfinite(x)) continue;
        p[n++] = (pt_t){x, m->median, isfinite(m->sd) ? m->sd : 0};
    }
    qsort(p, (size_t)n, sizeof *p, cmp_pt);
    return n;
}

/* One run's points into a chart's data file: in a bar chart (single) one
 * row "x y [sd] label", else a block of its own headed by the series. */
static void dat_points(rp_buf_t *dat, const rp_run_t *r, const pt_t *p, int n, int series, bool single,
                       bool sd, const char *label) {
    if (single) {
        rp_buf_printf(dat, sd ? "%.9g %.9g %.9g " : "%.9g %.9g ", p[0].x, p[0].y, p[0].sd);
        rp_gp_quote(dat, label);
        rp_buf_puts(dat, "\n");
        return;
    }
    rp_buf_printf(dat, "%s# series %d: %s (run %lld)\n", series ? "\n\n" : "", series, r->series, (long long)r->id);
    for (int k = 0; k < n; k++)
        rp_buf_printf(dat, sd ? "%.9g %.9g %.9g\n" : "%.9g %.9g\n", p[k].x, p[k].y, p[k].sd);
}

/* The labels of the runs' series with the words every one of them starts
 * with taken away ("synthetic llama-tiny q8_0", "synthetic llama-tiny
 * q4_0" -> "q8_0", "q4_0"), so category axes stay readable; the chart's
 * subtitle names the models in full. *out (n_runs) points into the series. */
static void short_labels(const rp_set_t *set, const char **out) {
    size_t common = (size_t)-1;
    const char *first = NULL;
    for (int i = 0; i < set->n_runs; i++) {
        const char *s = set->runs[i].series;
        if (!first) { first = s; common = strlen(s); continue; }
        size_t k = 0;
        while (k < common && s[k] && s[k] == first[k]) k++;
        common = k;
    }
    /* back to a word boundary, and keep at least one word */
    while (common != (size_t)-1 && common > 0 && first[common - 1] != ' ') common--;
    for (int i = 0; i < set->n_runs; i++) {
        const char *s = set->runs[i].series;
        out[i] = set->n_runs > 1 && common != (size_t)-1 && common < strlen(s) ? s + common : s;
    }
}

/* One line per run: metric of tests of `kind` against depth or prompt
 * length; when every run has the one value of that parameter, a line would
 * be a vertical stack of points, so the runs are bars side by side. */
static int line_chart(rp_ctx_t *c, const char *name, const char *title, const char *kind,
                      const char *metric, int use_prompt, const char *xlabel, const char *ylabel) {
    rp_chart_t ch = {.name = name, .title = title, .width = 960, .height = 540};
    pt_t p[512];
    int series = 0, single = 1;
    double x0 = NAN;
    for (int i = 0; i < c->set->n_runs; i++) {
        int n = run_points(&c->set->runs[i], kind, metric, use_prompt, p, 512);
        for (int k = 0; k < n; k++) {
            if (isnan(x0)) x0 = p[k].x;
            single &= p[k].x == x0;
        }
    }
    const char *lab[TB_REPORT_MAX_RUNS];
    short_labels(c->set, lab);
    rp_buf_printf(&ch.dat, "# %s.dat — %s\n# one block per series (gnuplot index i, legend in the"
                           " '# series' line); columns: %s  %s_median  %s_sd%s\n",
                  name, title, use_prompt ? "prompt_tokens" : "depth_tokens", metric, metric,
                  single ? "  label" : "");
    rp_buf_t plot = {0};
    for (int i = 0; i < c->set->n_runs; i++) {
        const rp_run_t *r = &c->set->runs[i];
        int n = run_points(r, kind, metric, use_prompt, p, 512);
        if (!n) continue;
        dat_points(&ch.dat, r, p, n, series, single, true, lab[i]);
        if (single) { series++; continue; }   /* one row per run in one block */
        rp_buf_printf(&plot, "%s\"%s.dat\" index %d using 1:2:3 with yerrorlines lt %d title ",
                      series ? ", \\\n       " : "  plot ", name, series, series + 1);
        rp_gp_quote(&plot, r->series);
        series++;
    }
    if (!series) {
        chart_free(&ch);
        rp_buf_free(&plot);
        char why[256];
        snprintf(why, sizeof why, "no %s test with %s in the selected runs", kind, metric);
        rp_chart_skip(c, title, why);
        return TB_OK;
    }
    set_title(c, &ch.body, title);
    if (single) {
        rp_buf_printf(&ch.body, "  set xlabel \"%s: %g\"\n  set ylabel \"%s\"\n", xlabel, x0, ylabel);
        rp_buf_printf(&ch.body, "  set style fill solid 0.75 border rgb \"#333333\"\n  set boxwidth 0.6\n"
                                "  set yrange [0:*]\n  set xrange [-0.6:%d.6]\n  set key off\n  set grid noxtics\n"
                                "  set xtics rotate by -30 left nomirror\n"
                                "  plot \"%s.dat\" using 0:2:($0+1):xtic(4) with boxes lc variable, \\\n"
                                "       \"\" using 0:2:3 with yerrorbars lc rgb \"#333333\" pt 0\n",
                      series - 1, name);
    } else {
        rp_buf_printf(&ch.body, "  set xlabel \"%s\"\n  set ylabel \"%s\"\n", xlabel, ylabel);
        rp_buf_puts(&ch.body, "  set yrange [0:*]\n  set autoscale xfix\n  set offsets graph 0.04, graph 0.04, graph 0.05, 0\n");
        rp_buf_puts(&ch.body, plot.p);
        rp_buf_puts(&ch.body, "\n");
    }
    rp_buf_free(&plot);
    int rc = rp_chart_emit(c, &ch);
    chart_free(&ch);
    return rc;
}

/* ===================================================================== */
/* Weight-format comparison and roofline                                   */
/* ===================================================================== */

/* The run's headline decode test: the decode test at the smallest depth
 * with a decode_tok_per_s value (else any test with one). */
static const rp_test_t *headline(const rp_run_t *r) {
    const rp_test_t *best = NULL;
    for (int pass = 0; pass < 2 && !best; pass++)
        for (int j = 0; j < r->n_tests; j++) {
            const rp_test_t *t = &r->tests[j];
            if (pass == 0 && strcmp(t->kind, "decode")) continue;
            if (!rp_metric(t, "decode_tok_per_s")) continue;
            if (!best || t->depth < best->depth) best = t;
        }
    return best;
}

static double ceiling_gbps(const rp_run_t *r) {
    double a = r->bw_before, b = r->bw_after;
    if (isfinite(a) && isfinite(b)) return a > b ? a : b;
    return isfinite(a) ? a : b;
}

/* Achieved GB/s of a test: recorded, or bytes/token × tok/s. */
static double achieved(const rp_test_t *t) {
    double g = rp_value(t, "achieved_gbps");
    if (isfinite(g)) return g;
    double bpt = rp_value(t, "bytes_per_token"), tps = rp_value(t, "decode_tok_per_s");
    return isfinite(bpt) && isfinite(tps) ? bpt * tps / 1e9 : NAN;
}

static void dat_val(rp_buf_t *b, double v) {
    if (isfinite(v)) rp_buf_printf(b, " %.9g", v);
    else rp_buf_puts(b, " ?");
}

static int format_chart(rp_ctx_t *c) {
    static const char *title = "Weight formats: decode speed, bandwidth and size";
    rp_chart_t ch = {.name = "formats", .title = title, .width = 1100, .height = 680};
    static const char *const cols[] = {"decode (tok/s)", "achieved bandwidth (GB/s)", "% of roofline",
                                       "model file (MiB)", "bytes read per token (MiB)"};
    int have[5] = {0}, rows = 0;
    const char *lab[TB_REPORT_MAX_RUNS];
    short_labels(c->set, lab);
    rp_buf_puts(&ch.dat, "# formats.dat — per run, its headline decode test (smallest depth)\n"
                         "# columns: run series decode_tok_per_s achieved_gbps roofline_pct file_mib bytes_per_token_mib"
                         "  (? = not recorded)\n");
    for (int i = 0; i < c->set->n_runs; i++) {
        const rp_run_t *r = &c->set->runs[i];
        const rp_test_t *t = headline(r);
        if (!t) continue;
        double v[5];
        v[0] = rp_value(t, "decode_tok_per_s");
        v[1] = achieved(t);
        v[2] = rp_value(t, "roofline_pct");
        if (!isfinite(v[2]) && isfinite(v[1]) && ceiling_gbps(r) > 0) v[2] = 100 * v[1] / ceiling_gbps(r);
        v[3] = r->has_model && r->file_bytes >= 0 ? r->file_bytes / (1024.0 * 1024) : NAN;
        v[4] = rp_value(t, "bytes_per_token") / (1024.0 * 1024);
        rp_buf_printf(&ch.dat, "%lld ", (long long)r->id);
        rp_gp_quote(&ch.dat, lab[i]);
        for (int k = 0; k < 5; k++) { dat_val(&ch.dat, v[k]); have[k] |= isfinite(v[k]); }
        rp_buf_puts(&ch.dat, "\n");
        rows++;
    }
    if (!rows) {
        chart_free(&ch);
        rp_chart_skip(c, title, "no decode test with decode_tok_per_s in the selected runs");
        return TB_OK;
    }
    rp_buf_t t = {0};
    rp_buf_printf(&t, "%s\n", title);
    rp_chart_subtitle(c, NULL, &t);
    rp_buf_puts(&ch.body, "  set style fill solid 0.75 border rgb \"#333333\"\n  set boxwidth 0.6\n"
                          "  set yrange [0:*]\n  set xrange [-0.6:*]\n  set offsets 0, 0.6, graph 0.12, 0\n"
                          "  set xtics rotate by -40 left nomirror font \",9\"\n  set key off\n  set grid noxtics\n"
                          "  set bmargin 6\n"
                          "  set multiplot layout 2,3 title ");
    rp_gp_quote(&ch.body, t.p ? t.p : title);
    rp_buf_free(&t);
    rp_buf_puts(&ch.body, " font \",12\"\n");
    for (int k = 0; k < 5; k++) {
        if (!have[k]) continue;
        rp_buf_printf(&ch.body, "  set title \"%s\"\n  set ylabel \"%s\"\n", cols[k], cols[k]);
        rp_buf_printf(&ch.body, "  plot \"formats.dat\" using 0:%d:($0+1):xtic(2) with boxes lc variable, \\\n"
                                "       \"\" using 0:%d:(sprintf(\"%%.3g\", $%d)) with labels offset 0,0.8 font \",9\"\n",
                      k + 3, k + 3, k + 3);
    }
    rp_buf_puts(&ch.body, "  unset multiplot\n");
    int rc = rp_chart_emit(c, &ch);
    chart_free(&ch);
    return rc;
}

/* The read bandwidth a host's runs were charged against: every
 * repetition's roofline (the higher of its two probes) over the host's
 * selected runs, or, for runs recorded before per-repetition probes, the
 * probes taken around each run. */
typedef struct host_bw { const char *host; double lo, med, hi; int n; } host_bw_t;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int host_bandwidth(const rp_set_t *set, host_bw_t *hb, int cap) {
    int nh = 0;
    for (int i = 0; i < set->n_runs; i++) {
        const char *h = set->runs[i].hostname ? set->runs[i].hostname : "?";
        int k = 0;
        while (k < nh && strcmp(hb[k].host, h)) k++;
        if (k == nh && nh < cap) hb[nh++] = (host_bw_t){h, NAN, NAN, NAN, 0};
    }
    for (int k = 0; k < nh; k++) {
        double *v = NULL;
        int n = 0, cv = 0;
        for (int pass = 0; pass < 2 && n == 0; pass++)
            for (int i = 0; i < set->n_runs; i++) {
                const rp_run_t *r = &set->runs[i];
                if (strcmp(r->hostname ? r->hostname : "?", hb[k].host)) continue;
                double run_v[2] = {r->bw_before, r->bw_after};
                for (int j = 0; pass == 0 && j < r->n_tests; j++) {
                    const rp_metric_t *m = rp_metric(&r->tests[j], "roofline_gbps");
                    for (int q = 0; m && q < m->n; q++) {
                        if (n == cv) { cv = cv ? 2 * cv : 64; double *nv = realloc(v, (size_t)cv * sizeof *v); if (!nv) { free(v); return -1; } v = nv; }
                        v[n++] = m->vals[q];
                    }
                }
                for (int q = 0; pass == 1 && q < 2; q++) {
                    if (!isfinite(run_v[q]) || !(run_v[q] > 0)) continue;
                    if (n == cv) { cv = cv ? 2 * cv : 64; double *nv = realloc(v, (size_t)cv * sizeof *v); if (!nv) { free(v); return -1; } v = nv; }
                    v[n++] = run_v[q];
                }
            }
        if (n) {
            qsort(v, (size_t)n, sizeof *v, cmp_d);
            hb[k].lo = v[0];
            hb[k].hi = v[n - 1];
            hb[k].med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
            hb[k].n = n;
        }
        free(v);
    }
    return nh;
}

/* The x of a test on the roofline chart: the KV depth it decoded at. */
static double roof_x(const rp_test_t *t) {
    if (!strcmp(t->kind, "generate") && isfinite(t->prompt_tokens))
        return t->prompt_tokens + (isfinite(t->gen_tokens) ? t->gen_tokens / 2 : 0);
    return t->depth;
}

static int roofline_chart(rp_ctx_t *c) {
    static const char *title = "Roofline: achieved bandwidth against the measured ceiling";
    rp_chart_t ch = {.name = "roofline", .title = title, .width = 960, .height = 540};
    rp_buf_t plot = {0};
    int series = 0, single = 1;
    double x0 = NAN;
    /* decode and generate tests: both stream the weights once per token */
    for (int i = 0; i < c->set->n_runs; i++)
        for (int j = 0; j < c->set->runs[i].n_tests; j++) {
            const rp_test_t *t = &c->set->runs[i].tests[j];
            if ((strcmp(t->kind, "decode") && strcmp(t->kind, "generate")) || !isfinite(achieved(t))) continue;
            if (isnan(x0)) x0 = roof_x(t);
            single &= roof_x(t) == x0;
        }
    const char *lab[TB_REPORT_MAX_RUNS];
    short_labels(c->set, lab);
    rp_buf_printf(&ch.dat, "# roofline.dat — achieved read bandwidth of decode and generate tests (recorded"
                           " achieved_gbps, else bytes_per_token x decode_tok_per_s)%s;\n# columns: %s\n",
                  single ? ", one row per series" : ", one block per series",
                  single ? "depth_tokens achieved_gbps label" : "depth_tokens achieved_gbps");
    for (int i = 0; i < c->set->n_runs; i++) {
        const rp_run_t *r = &c->set->runs[i];
        pt_t p[512];
        int n = 0;
        for (int j = 0; j < r->n_tests && n < 512; j++) {
            const rp_test_t *t = &r->tests[j];
            double g = achieved(t);
            if ((strcmp(t->kind, "decode") && strcmp(t->kind, "generate")) || !isfinite(g)) continue;
            p[n++] = (pt_t){roof_x(t), g, 0};
        }
        if (!n) continue;
        qsort(p, (size_t)n, sizeof *p, cmp_pt);
        dat_points(&ch.dat, r, p, n, series, single, false, lab[i]);
        if (single) { series++; continue; }
        char ach[300];
        snprintf(ach, sizeof ach, "achieved %s", r->series);
        rp_buf_printf(&plot, "%s\"roofline.dat\" index %d using 1:2 with linespoints lt %d title ",
                      series ? ", \\\n       " : "  plot ", series, series + 1);
        rp_gp_quote(&plot, ach);
        series++;
    }
    if (!series) {
        chart_free(&ch);
        rp_buf_free(&plot);
        rp_chart_skip(c, title, "no decode or generate test with achieved_gbps (or bytes_per_token) in the selected runs");
        return TB_OK;
    }
    /* one ceiling per machine, as a band: every repetition was charged against its own probes */
    host_bw_t hb[16];
    int nh = host_bandwidth(c->set, hb, 16), ceilings = 0;
    if (nh < 0) { chart_free(&ch); rp_buf_free(&plot); return tb_err(TB_ERR_NOMEM, "report: out of memory"); }
    static const char *const band[] = {"#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb"};
    rp_buf_t bands = {0}, keys = {0};
    for (int k = 0; k < nh; k++) {
        if (!hb[k].n) continue;
        rp_buf_printf(&bands, "  set object %d rect from graph 0, first %.6g to graph 1, first %.6g behind"
                              " fc rgb \"%s\" fs transparent solid 0.5 noborder\n", 200 + ceilings, hb[k].lo,
                      fmax(hb[k].hi, hb[k].lo * 1.002), band[ceilings % 4]);
        char l[400];
        snprintf(l, sizeof l, "%s: read bandwidth, median %.2f GB/s (range %.2f-%.2f over %d probes)", hb[k].host,
                 hb[k].med, hb[k].lo, hb[k].hi, hb[k].n);
        rp_buf_printf(&keys, ", \\\n       %.6g with lines lc rgb \"#08519c\" dt 2 lw 1.5 title ", hb[k].med);
        rp_gp_quote(&keys, l);
        ceilings++;
    }
    set_title(c, &ch.body, title);
    if (bands.p) rp_buf_puts(&ch.body, bands.p);
    if (single) {
        rp_buf_printf(&ch.body, "  set xlabel \"context depth %g tokens\"\n  set ylabel \"read bandwidth (GB/s)\"\n"
                                "  set style fill solid 0.75 border rgb \"#333333\"\n  set boxwidth 0.6\n"
                                "  set yrange [0:*]\n  set xrange [-0.6:%d.6]\n  set grid noxtics\n"
                                "  set xtics rotate by -30 left nomirror\n"
                                "  plot \"roofline.dat\" using 0:2:($0+1):xtic(3) with boxes lc variable title"
                                " \"achieved\"%s\n", x0, series - 1, keys.p ? keys.p : "");
    } else {
        rp_buf_puts(&ch.body, "  set xlabel \"context depth (tokens)\"\n  set ylabel \"read bandwidth (GB/s)\"\n"
                              "  set yrange [0:*]\n  set autoscale xfix\n  set offsets graph 0.04, graph 0.04, graph 0.1, 0\n");
        rp_buf_puts(&ch.body, plot.p);
        if (keys.p) rp_buf_puts(&ch.body, keys.p);
        rp_buf_puts(&ch.body, "\n");
    }
    rp_buf_free(&bands);
    rp_buf_free(&keys);
    rp_buf_free(&plot);
    int rc = rp_chart_emit(c, &ch);
    if (!rc && !ceilings) rp_doc_note(c->doc, "No bandwidth probe was recorded for these runs: the ceiling is not drawn.");
    if (!rc && ceilings)
        rp_doc_note(c->doc, "Roofline: the band is the read bandwidth of each machine as probed just before and just"
                            " after every repetition (each repetition is charged against the higher of its two"
                            " probes); the dashed line is its median.");
    chart_free(&ch);
    return rc;
}

/* ===================================================================== */
/* All charts                                                              */
/* ===================================================================== */

int rp_charts_write(rp_ctx_t *c) {
    rp_doc_heading(c->doc, 2, "Charts");
    if (!c->gnuplot[0])
        rp_doc_note(c->doc, "Charts were not rendered: %s.", c->res->warning);
    int rc = line_chart(c, "decode_depth", "Decode speed against context depth", "decode",
                        "decode_tok_per_s", 0, "context depth (tokens)", "decode (tok/s)");
    if (!rc) rc = line_chart(c, "prefill_prompt", "Prefill speed against prompt length", "prefill",
                             "prefill_tok_per_s", 1, "prompt length (tokens)", "prefill (tok/s)");
    if (!rc) rc = rp_charts_time_write(c);
    if (!rc) rc = format_chart(c);
    if (!rc) rc = rp_quality_chart(c);
    if (!rc) rc = roofline_chart(c);
    return rc;
}
