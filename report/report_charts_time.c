/*
 * report_charts_time.c — charts over raw samples: sustained decode speed
 * per window (temperature / CPU frequency on a second axis, throttled
 * spans shaded) and the inter-token latency CDF with p50/p90/p99 marked.
 *
 * Time bases: token_events.t_ns counts from the start of a repetition,
 * sensor_samples.t_ns from the start of the run. A sustained test's sensor
 * samples are placed relative to the first sample tagged with that test,
 * which the harness takes when the test starts.
 */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Growable (x, y) series                                                  */
/* ===================================================================== */

typedef struct xy { int n, cap; double *x, *y; } xy_t;

static int xy_add(xy_t *s, double x, double y) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 256;
        double *nx = realloc(s->x, (size_t)cap * sizeof *nx);
        if (!nx) return tb_err(TB_ERR_NOMEM, "report: out of memory");
        s->x = nx;
        double *ny = realloc(s->y, (size_t)cap * sizeof *ny);
        if (!ny) return tb_err(TB_ERR_NOMEM, "report: out of memory");
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
    return TB_OK;
}

static void xy_free(xy_t *s) { free(s->x); free(s->y); memset(s, 0, sizeof *s); }

static void xy_dat(rp_buf_t *b, const xy_t *s, const char *header) {
    rp_buf_printf(b, "# %s\n", header);
    for (int i = 0; i < s->n; i++) rp_buf_printf(b, "%.9g %.9g\n", s->x[i], s->y[i]);
    rp_buf_puts(b, "\n\n");
}

/* ===================================================================== */
/* Sustained                                                               */
/* ===================================================================== */

/* Decode tok/s per window from the token events of the test's first
 * repetition (a database without a windows table): windows of params
 * "window" tokens, else 1/20 of the decode span;
 * x = window midpoint in seconds since the first decoded token. Returns
 * the window count (0 when there are too few events). */
static int windows_from_events(rp_ctx_t *c, const rp_test_t *t, xy_t *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->set->db, "SELECT t_ns FROM token_events WHERE test_id = ?1 AND phase = 'decode'"
                                       " AND repetition = (SELECT min(repetition) FROM token_events"
                                       " WHERE test_id = ?1 AND phase = 'decode') ORDER BY idx",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, t->id);
    xy_t ev = {0};
    int rc = TB_OK;
    while (rc == TB_OK && sqlite3_step(st) == SQLITE_ROW) rc = xy_add(&ev, sqlite3_column_int64(st, 0) / 1e9, 0);
    sqlite3_finalize(st);
    int n = 0;
    if (rc == TB_OK && ev.n >= 10 && ev.x[ev.n - 1] > ev.x[0]) {
        double t0 = ev.x[0], t1 = ev.x[ev.n - 1], w, wt;
        if (rp_json_number(t->params, "window", &wt) == TB_OK && wt >= 1 && wt < ev.n) {
            /* windows of wt tokens: rate = wt / time those tokens took */
            int step = (int)wt;
            for (int k = 0; k + step < ev.n && rc == TB_OK; k += step) {
                double a = ev.x[k], b = ev.x[k + step];
                if (b > a) rc = xy_add(out, 0.5 * (a + b) - t0, step / (b - a));
            }
        } else {
            w = (t1 - t0) / 20;
            int nw = (int)ceil((t1 - t0) / w - 1e-9);
            if (nw > 10000) nw = 10000, w = (t1 - t0) / nw;
            /* tokens completed in (a, b]; the first event only marks the start */
            for (int k = 0, e = 1; k < nw && rc == TB_OK; k++) {
                double a = t0 + k * w, b = k == nw - 1 ? t1 : a + w;
                int cnt = 0;
                while (e < ev.n && ev.x[e] <= b) { cnt++; e++; }
                if (b > a) rc = xy_add(out, 0.5 * (a + b) - t0, cnt / (b - a));
            }
        }
        n = out->n;
    }
    tb_clear_error();
    xy_free(&ev);
    return rc == TB_OK ? n : 0;
}

/* The windows the runner recorded for the test's first repetition (the
 * windows table: every window, the last partial one included) into *win,
 * and each window's count of context re-fills (the harness's work, whose
 * windows stay out of stability) into *refill at the same x; x = window
 * midpoint in seconds since the repetition started.
 * Returns the window count (0: none recorded, e.g. an older database). */
static int windows_from_table(rp_ctx_t *c, const rp_test_t *t, xy_t *clean, xy_t *refill) {   /* clean: every window */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->set->db, "SELECT t0_ns, t1_ns, tok_per_s, refills FROM windows WHERE test_id = ?1"
                                       " AND repetition = (SELECT min(repetition) FROM windows WHERE test_id = ?1)"
                                       " ORDER BY idx", -1, &st, NULL) != SQLITE_OK) {
        tb_clear_error();
        return 0;   /* a database without the refills column: reconstruct from events */
    }
    sqlite3_bind_int64(st, 1, t->id);
    int rc = TB_OK, n = 0;
    while (rc == TB_OK && sqlite3_step(st) == SQLITE_ROW) {
        double x = 0.5 * (double)(sqlite3_column_int64(st, 0) + sqlite3_column_int64(st, 1)) / 1e9;
        rc = xy_add(clean, x, sqlite3_column_double(st, 2));
        if (rc == TB_OK) rc = xy_add(refill, x, sqlite3_column_int(st, 3));   /* y: context re-fills */
        n++;
    }
    sqlite3_finalize(st);
    return rc == TB_OK ? n : 0;
}

/* One aggregated sensor series of the test (max over thermal zones for
 * "C", mean over CPUs for "MHz"), x in seconds from the test's first sample. */
static int sensor_series(rp_ctx_t *c, const rp_test_t *t, const char *unit, xy_t *out) {
    const char *sql = !strcmp(unit, "C")
        ? "SELECT t_ns, max(value) FROM sensor_samples WHERE test_id = ?1 AND unit = 'C' GROUP BY t_ns ORDER BY t_ns"
        : "SELECT t_ns, avg(value) FROM sensor_samples WHERE test_id = ?1 AND unit = 'MHz' GROUP BY t_ns ORDER BY t_ns";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->set->db, sql, -1, &st, NULL) != SQLITE_OK) return TB_OK;
    sqlite3_bind_int64(st, 1, t->id);
    int rc = TB_OK;
    int64_t t0 = 0;
    while (rc == TB_OK && sqlite3_step(st) == SQLITE_ROW) {
        int64_t ns = sqlite3_column_int64(st, 0);
        if (out->n == 0) t0 = ns;
        rc = xy_add(out, (ns - t0) / 1e9, sqlite3_column_double(st, 1));
    }
    sqlite3_finalize(st);
    return rc;
}

/* Spans where the mean CPU clock is below 90% of its peak in the test. */
static void throttle_spans(const xy_t *f, rp_buf_t *body, rp_buf_t *dat, int *n_spans) {
    double peak = 0;
    for (int i = 0; i < f->n; i++) if (f->y[i] > peak) peak = f->y[i];
    *n_spans = 0;
    rp_buf_puts(dat, "# throttled spans (mean CPU clock < 90% of its peak): start_s end_s\n");
    for (int i = 0; i < f->n;) {
        if (!(f->y[i] < 0.9 * peak)) { i++; continue; }
        int j = i;
        while (j + 1 < f->n && f->y[j + 1] < 0.9 * peak) j++;
        double a = f->x[i], b = j + 1 < f->n ? f->x[j + 1] : f->x[j];
        if (b <= a) b = a + (f->n > 1 ? (f->x[f->n - 1] - f->x[0]) / f->n : 1);
        rp_buf_printf(dat, "%.9g %.9g\n", a, b);
        rp_buf_printf(body, "  set object %d rect from %.6g, graph 0 to %.6g, graph 1 behind"
                            " fc rgb \"#f4a582\" fs transparent solid 0.35 noborder\n", 100 + *n_spans, a, b);
        ++*n_spans;
        i = j + 1;
    }
    rp_buf_puts(dat, "\n\n");
}

static int sustained_chart(rp_ctx_t *c, const rp_test_t *t) {
    const rp_run_t *r = t->run;
    char name[96], title[512];
    snprintf(name, sizeof name, "sustained_r%lld_t%lld", (long long)r->id, (long long)t->id);
    snprintf(title, sizeof title, "Sustained decode — %s, %s (run %lld)", r->series, t->label, (long long)r->id);
    xy_t win = {0}, refill = {0}, temp = {0}, freq = {0};
    int timed = 1, rc = TB_OK;
    const char *how = "recorded windows";
    if (windows_from_table(c, t, &win, &refill) < 2) {
        win.n = refill.n = 0;
        how = "from token events";
    }
    if (win.n < 2 && windows_from_events(c, t, &win) < 2) {
        win.n = 0;
        const rp_metric_t *m = NULL;
        for (int k = 0; k < t->n_metrics; k++)
            if (!strcmp(t->metrics[k].name, "window_tok_per_s")) m = &t->metrics[k];
        timed = 0;   /* no window times recorded: one point per repetition */
        for (int k = 0; m && k < m->n && rc == TB_OK; k++)
            rc = xy_add(&win, m->reps[k], m->vals[k]);
        how = "window_tok_per_s";
    }
    if (rc == TB_OK && timed) rc = sensor_series(c, t, "C", &temp);
    if (rc == TB_OK && timed) rc = sensor_series(c, t, "MHz", &freq);
    if (rc != TB_OK || win.n < 2) {
        xy_free(&win); xy_free(&refill); xy_free(&temp); xy_free(&freq);
        if (rc == TB_OK) rp_chart_skip(c, title, "fewer than two windows (no token events, no window_tok_per_s)");
        return rc;
    }
    int panels = (temp.n > 0) + (freq.n > 0);
    if (panels == 0) panels = 1;
    rp_chart_t ch = {.name = name, .title = title, .width = 960, .height = panels == 2 ? 760 : 520};
    rp_buf_printf(&ch.dat, "# %s.dat — %s\n# blocks: index 0 windows, 1 temperature, 2 CPU clock, 3 throttled spans"
                  "\n", name, title);
    char hdr[160];
    snprintf(hdr, sizeof hdr, "index 0: decode tok/s per window (%s): %s tok_per_s context_refills", how,
             timed ? "time_s" : "window");
    int n_refill = 0;
    rp_buf_printf(&ch.dat, "# %s\n", hdr);
    for (int i = 0; i < win.n; i++) {
        double f = i < refill.n ? refill.y[i] : 0;
        n_refill += f > 0;
        rp_buf_printf(&ch.dat, "%.9g %.9g %.0f\n", win.x[i], win.y[i], f);
    }
    rp_buf_puts(&ch.dat, "\n\n");
    xy_dat(&ch.dat, &temp, "index 1: hottest thermal zone: time_s celsius");
    xy_dat(&ch.dat, &freq, "index 2: mean CPU clock: time_s MHz");
    int n_spans = 0;
    rp_buf_t spans = {0};
    if (freq.n > 1) throttle_spans(&freq, &spans, &ch.dat, &n_spans);

    rp_buf_t t2 = {0};
    rp_buf_printf(&t2, "%s\n", title);
    rp_chart_subtitle(c, r, &t2);
    if (panels == 2) {
        rp_buf_puts(&ch.body, "  set multiplot layout 2,1 title ");
        rp_gp_quote(&ch.body, t2.p ? t2.p : title);
        rp_buf_puts(&ch.body, " font \",12\"\n");
    } else {
        rp_buf_puts(&ch.body, "  set title ");
        rp_gp_quote(&ch.body, t2.p ? t2.p : title);
        rp_buf_puts(&ch.body, " font \",12\"\n");
    }
    rp_buf_free(&t2);
    rp_buf_printf(&ch.body, "  set xlabel \"%s\"\n  set ylabel \"decode (tok/s)\"\n  set yrange [0:*]\n"
                            "  set ytics nomirror\n",
                  timed ? "time since test start (s)" : "window index (window length not recorded)");
    if (spans.p) rp_buf_puts(&ch.body, spans.p);
    rp_buf_free(&spans);
    const char *sp = n_spans ? ", \\\n       keyentry with boxes fc rgb \"#f4a582\" fs transparent solid 0.35 noborder"
                               " title \"throttled: clock < 90% of peak\"" : "";
    /* clean windows joined by a line; a window that held the harness's context re-fill (its
     * time left out of the rate, the window left out of stability) as its own marker */
    char win_plot[640];
    snprintf(win_plot, sizeof win_plot, "  plot \"%%s.dat\" index 0 using 1:($3 == 0 ? $2 : 1/0) with linespoints"
             " lt 1 title \"decode tok/s per window\"%s", n_refill ? ", \\\n       \"%s.dat\" index 0 using"
             " 1:($3 > 0 ? $2 : 1/0) with points pt 6 ps 1.5 lc rgb \"#b2182b\" title \"window with a context"
             " re-fill (not in stability)\"" : "%.0s");
    if (temp.n > 0) {
        rp_buf_puts(&ch.body, "  set y2label \"hottest thermal zone (°C)\"\n  set y2tics\n");
        rp_buf_printf(&ch.body, win_plot, name, name);
        rp_buf_printf(&ch.body, ", \\\n       \"%s.dat\" index 1 using 1:2 axes x1y2 with lines lt 2 title \"temperature (°C)\"%s\n",
                      name, sp);
    }
    if (freq.n > 0) {
        if (temp.n > 0) rp_buf_puts(&ch.body, "  unset title\n");
        rp_buf_puts(&ch.body, "  set y2label \"mean CPU clock (MHz)\"\n  set y2tics\n  set y2range [0:*]\n");
        rp_buf_printf(&ch.body, win_plot, name, name);
        rp_buf_printf(&ch.body, ", \\\n       \"%s.dat\" index 2 using 1:2 axes x1y2 with steps lt 3 title \"CPU clock (MHz)\"%s\n",
                      name, sp);
    }
    if (!temp.n && !freq.n) {
        rp_buf_printf(&ch.body, win_plot, name, name);
        rp_buf_puts(&ch.body, "\n");
    }
    if (panels == 2) rp_buf_puts(&ch.body, "  unset multiplot\n");
    rc = rp_chart_emit(c, &ch);
    if (!rc && !temp.n && !freq.n)
        rp_doc_note(c->doc, "No temperature or CPU-clock samples were recorded for this test.");
    if (!rc && !n_spans && !strcmp(t->thermal, "throttled"))
        rp_doc_note(c->doc, "The test was recorded as throttled, but no CPU-clock samples locate the spans.");
    rp_buf_free(&ch.dat);
    rp_buf_free(&ch.body);
    xy_free(&win); xy_free(&refill); xy_free(&temp); xy_free(&freq);
    return rc;
}

/* ===================================================================== */
/* ITL CDF                                                                 */
/* ===================================================================== */

/* Decode inter-token gaps (ms) of the run's tests of kind `kind`, from
 * consecutive decode events within each repetition. */
static int run_itls(rp_ctx_t *c, const rp_run_t *r, const char *kind, xy_t *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->set->db, "SELECT e.test_id, e.repetition, e.t_ns FROM token_events e"
                                       " JOIN tests t ON t.id = e.test_id WHERE t.run_id = ?1 AND t.kind = ?2"
                                       " AND e.phase = 'decode' ORDER BY e.test_id, e.repetition, e.idx",
                           -1, &st, NULL) != SQLITE_OK)
        return tb_err(TB_ERR_FORMAT, "results database: %s", sqlite3_errmsg(c->set->db));
    sqlite3_bind_int64(st, 1, r->id);
    sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
    int64_t pt = -1, pr = -1, pns = 0;
    int rc = TB_OK;
    while (rc == TB_OK && sqlite3_step(st) == SQLITE_ROW) {
        int64_t tid = sqlite3_column_int64(st, 0), rep = sqlite3_column_int64(st, 1), ns = sqlite3_column_int64(st, 2);
        if (tid == pt && rep == pr && ns >= pns) rc = xy_add(out, (ns - pns) / 1e6, 0);
        pt = tid, pr = rep, pns = ns;
    }
    sqlite3_finalize(st);
    return rc;
}

static int itl_chart(rp_ctx_t *c) {
    static const char *title = "Inter-token latency distribution (CDF)";
    static const char *const kinds[] = {"generate", "ttft", "decode", "sustained"};
    rp_chart_t ch = {.name = "itl_cdf", .title = title, .width = 960, .height = 540};
    rp_buf_t plot = {0}, marks = {0};
    int series = 0, rc = TB_OK;
    double xmax = 0;
    rp_buf_puts(&ch.dat, "# itl_cdf.dat — decode inter-token latency; per series two blocks:\n"
                         "#   CDF (itl_ms fraction_le) and percentile marks (itl_ms fraction point_type label)\n");
    for (int i = 0; i < c->set->n_runs && rc == TB_OK; i++) {
        const rp_run_t *r = &c->set->runs[i];
        xy_t itl = {0};
        const char *kind = NULL;
        for (int k = 0; k < 4 && rc == TB_OK && itl.n < 2; k++) {
            itl.n = 0;
            kind = kinds[k];
            rc = run_itls(c, r, kind, &itl);
        }
        if (rc != TB_OK || itl.n < 2) { xy_free(&itl); continue; }
        rp_sort_doubles(itl.x, itl.n);
        double p[3] = {rp_percentile_sorted(itl.x, itl.n, 50), rp_percentile_sorted(itl.x, itl.n, 90),
                       rp_percentile_sorted(itl.x, itl.n, 99)};
        double lim = 1.5 * p[2] > itl.x[itl.n - 1] ? itl.x[itl.n - 1] : 1.5 * p[2];
        if (lim > xmax) xmax = lim;
        rp_buf_printf(&ch.dat, "# series %d: %s (run %lld), %d gaps from %s tests\n", series, r->series,
                      (long long)r->id, itl.n, kind);
        int step = itl.n > 2000 ? itl.n / 2000 : 1;   /* at most ~2000 points per curve */
        for (int k = 0; k < itl.n; k += step)
            rp_buf_printf(&ch.dat, "%.6g %.6g\n", itl.x[k], (k + 1.0) / itl.n);
        if ((itl.n - 1) % step) rp_buf_printf(&ch.dat, "%.6g 1\n", itl.x[itl.n - 1]);
        rp_buf_puts(&ch.dat, "\n\n");
        static const char *const pn[] = {"p50", "p90", "p99"};
        static const double pq[] = {0.5, 0.9, 0.99};
        static const int pt[] = {7, 5, 9};   /* circle, square, triangle */
        for (int k = 0; k < 3; k++)
            rp_buf_printf(&ch.dat, "%.6g %.3g %d \"%s\"\n", p[k], pq[k], pt[k], pn[k]);
        rp_buf_puts(&ch.dat, "\n\n");
        char lab[400];
        snprintf(lab, sizeof lab, "%s: p50 %.2f, p90 %.2f, p99 %.2f ms", r->series, p[0], p[1], p[2]);
        rp_buf_printf(&plot, "%s\"itl_cdf.dat\" index %d using 1:2 with steps lt %d title ",
                      series ? ", \\\n       " : "  plot ", 2 * series, series + 1);
        rp_gp_quote(&plot, lab);
        rp_buf_printf(&marks, ", \\\n       \"itl_cdf.dat\" index %d using 1:2:3 with points lt %d pt variable ps 1.4 notitle",
                      2 * series + 1, series + 1);
        series++;
        xy_free(&itl);
    }
    if (rc != TB_OK || !series) {
        rp_buf_free(&plot); rp_buf_free(&marks);
        rp_buf_free(&ch.dat);
        if (rc == TB_OK)
            rp_chart_skip(c, title, "no decode token events recorded (ITL percentiles, if measured, are in the Latency table)");
        return rc;
    }
    rp_buf_t t = {0};
    rp_buf_printf(&t, "%s\n", title);
    rp_chart_subtitle(c, NULL, &t);
    rp_buf_puts(&ch.body, "  set title ");
    rp_gp_quote(&ch.body, t.p ? t.p : title);
    rp_buf_free(&t);
    rp_buf_printf(&ch.body, " font \",12\"\n  set xlabel \"inter-token latency (ms)\"\n"
                            "  set ylabel \"fraction of tokens at or below\"\n  set yrange [0:1.02]\n"
                            "  set xrange [0:%.6g]\n  set ytics 0.1\n", xmax > 0 ? xmax * 1.05 : 1);
    rp_buf_puts(&ch.body, plot.p);
    rp_buf_puts(&ch.body, marks.p);
    rp_buf_puts(&ch.body, ", \\\n       keyentry with points pt 7 lc rgb \"black\" title \"p50\""
                          ", keyentry with points pt 5 lc rgb \"black\" title \"p90\""
                          ", keyentry with points pt 9 lc rgb \"black\" title \"p99\"\n");
    rp_buf_free(&plot); rp_buf_free(&marks);
    rc = rp_chart_emit(c, &ch);
    if (!rc) rp_doc_note(c->doc, "x axis ends at 1.5 × the largest p99 (the maximum gap is in the Latency table).");
    rp_buf_free(&ch.dat);
    rp_buf_free(&ch.body);
    return rc;
}

/* ===================================================================== */
/* Entry                                                                   */
/* ===================================================================== */

int rp_charts_time_write(rp_ctx_t *c) {
    int any = 0, rc = TB_OK;
    for (int i = 0; i < c->set->n_runs && rc == TB_OK; i++) {
        const rp_run_t *r = &c->set->runs[i];
        for (int j = 0; j < r->n_tests && rc == TB_OK; j++)
            if (!strcmp(r->tests[j].kind, "sustained")) { any = 1; rc = sustained_chart(c, &r->tests[j]); }
    }
    if (rc == TB_OK && !any)
        rp_chart_skip(c, "Sustained decode per window", "no sustained test in the selected runs");
    if (rc == TB_OK) rc = itl_chart(c);
    return rc;
}
