/*
 * analysis.c — the analysis rules over per-repetition rows (analysis.h).
 */
#include "analysis.h"
#include "infer.h"
#include "tbutil.h"
#include "ternbench.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

bool tb_an_settled(double a, double b) {
    double hi = fmax(a, b);
    return isfinite(a) && isfinite(b) && fabs(a - b) <= TB_AN_PROBE_AGREE * hi;
}

bool tb_an_full_speed(double a, double b, double best) {
    return isfinite(a) && isfinite(b) && fmin(a, b) >= TB_AN_CPU_FULL * best;
}

size_t tb_an_vec_shared(const double *before, const double *after, size_t n, double best, double *lo) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(before[i]) || !isfinite(after[i])) continue;
        const double hi = fmax(before[i], after[i]);
        if (hi >= TB_AN_CPU_FULL * best) continue;
        if (lo && (!k || hi < *lo)) *lo = hi;
        k++;
    }
    return k;
}


int tb_an_paired(const double *a, const double *b, size_t n, tb_an_paired_t *out) {
    memset(out, 0, sizeof *out);
    out->median = out->q25 = out->q75 = out->min = out->max = NAN;
    out->sign_p = 1.0;
    double *r = malloc(sizeof(double) * (n ? n : 1));   // (n) ratios
    if (!r) return tb_err(TB_ERR_NOMEM, "out of memory for %zu pairs", n);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(isfinite(a[i]) && isfinite(b[i]) && a[i] > 0)) continue;
        r[m++] = b[i] / a[i];
        out->faster += b[i] > a[i];
    }
    out->n = m;
    if (m) {
        tb_stats_summary_t s;
        tb_stats_summarize(r, m, &s);
        out->median = s.median;
        out->min = s.min;
        out->max = s.max;
        out->q25 = tb_stats_percentile(r, m, 25.0);
        out->q75 = tb_stats_percentile(r, m, 75.0);
        out->sign_p = tb_infer_sign_test_p((int)out->faster, (int)m);
    }
    free(r);
    return TB_OK;
}

void tb_an_test_free(tb_an_test_t *t) {
    free(t->v);
    free(t->tok_ns);
    memset(t, 0, sizeof *t);
}

static int sql_fail(sqlite3 *db, const char *what) {
    return tb_err(TB_ERR_IO, "%s: %s", what, sqlite3_errmsg(db));
}

int tb_an_test_load(sqlite3 *db, int64_t test_id, tb_an_test_t *t) {
    memset(t, 0, sizeof *t);
    t->test_id = test_id;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT label, kind, status, (SELECT COALESCE(max(repetition), -1) FROM"
                               " measurements WHERE test_id = ?1), (SELECT COALESCE(max(idx) + 1, 0) FROM"
                               " token_events WHERE test_id = ?1 AND phase = 'decode' AND dur_ns IS NOT NULL)"
                               " FROM tests WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "load test");
    sqlite3_bind_int64(st, 1, test_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return tb_err(TB_ERR_NOT_FOUND, "no test %lld", (long long)test_id);
    }
    snprintf(t->label, sizeof t->label, "%s", (const char *)sqlite3_column_text(st, 0));
    snprintf(t->kind, sizeof t->kind, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(t->status, sizeof t->status, "%s", (const char *)sqlite3_column_text(st, 2));
    t->n_rep = sqlite3_column_int(st, 3) + 1;
    int idx_max = sqlite3_column_int(st, 4);   /* tokens are indexed from the repetition's first event */
    sqlite3_finalize(st);
    size_t cells = (size_t)TB_M_COUNT * (size_t)TB_MAX(t->n_rep, 1);
    if (!(t->v = malloc(cells * sizeof *t->v))) return tb_err(TB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < cells; i++) t->v[i] = NAN;
    if (sqlite3_prepare_v2(db, "SELECT repetition, metric, value FROM measurements WHERE test_id = ?1"
                               " AND repetition >= 0", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "load measurements");
    sqlite3_bind_int64(st, 1, test_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const tb_metric_def_t *d = tb_metric_find((const char *)sqlite3_column_text(st, 1));
        int rep = sqlite3_column_int(st, 0);
        if (!d || rep >= t->n_rep) continue;   /* another build's metric: not ours to judge */
        t->v[(size_t)(d - tb_metrics) * (size_t)t->n_rep + (size_t)rep] = sqlite3_column_double(st, 2);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return sql_fail(db, "load measurements");
    if (idx_max <= 0 || t->n_rep <= 0) return TB_OK;
    /* decode steps, indexed from each repetition's first decode event */
    if (sqlite3_prepare_v2(db, "WITH f AS (SELECT repetition, min(idx) AS i0 FROM token_events WHERE"
                               " test_id = ?1 AND phase = 'decode' GROUP BY repetition)"
                               " SELECT e.repetition, e.idx - f.i0, e.dur_ns FROM token_events e JOIN f"
                               " USING (repetition) WHERE e.test_id = ?1 AND e.phase = 'decode'"
                               " AND e.dur_ns IS NOT NULL AND e.repetition >= 0", -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "load token events");
    sqlite3_bind_int64(st, 1, test_id);
    t->n_tok = idx_max;
    size_t nt = (size_t)t->n_rep * (size_t)t->n_tok;
    if (!(t->tok_ns = malloc(nt * sizeof *t->tok_ns))) { sqlite3_finalize(st); return tb_err(TB_ERR_NOMEM, "out of memory"); }
    for (size_t i = 0; i < nt; i++) t->tok_ns[i] = -1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int rep = sqlite3_column_int(st, 0), i = sqlite3_column_int(st, 1);
        if (rep < t->n_rep && i >= 0 && i < t->n_tok)
            t->tok_ns[(size_t)rep * (size_t)t->n_tok + (size_t)i] = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? TB_OK : sql_fail(db, "load token events");
}

int tb_an_token_ms(const tb_an_test_t *t, double **lat, size_t *n) {
    size_t nt = (size_t)t->n_rep * (size_t)t->n_tok, m = 0;
    *lat = malloc(sizeof(double) * (nt ? nt : 1));   // (nt)
    if (!*lat) return tb_err(TB_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < nt; i++)
        if (t->tok_ns[i] >= 0) (*lat)[m++] = (double)t->tok_ns[i] / 1e6;
    *n = m;
    return TB_OK;
}

/* The finite values of x (n) into out; their count. */
static size_t finite_of(const double *x, size_t n, double *out) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) out[m++] = x[i];
    return m;
}

int tb_an_reps(const tb_an_test_t *t, tb_metric_id_t headline, tb_an_reps_t *o) {
    memset(o, 0, sizeof *o);
    const size_t R = (size_t)t->n_rep;
    double *buf = calloc(R ? R : 1, sizeof(double));   // (R)
    if (!buf) return tb_err(TB_ERR_NOMEM, "out of memory");
    const double *hv = tb_an_series(t, headline), *pct = tb_an_series(t, TB_M_ROOFLINE_PCT);
    const double *bb = tb_an_series(t, TB_M_BW_BEFORE_GBPS), *ba = tb_an_series(t, TB_M_BW_AFTER_GBPS);
    const double *cb = tb_an_series(t, TB_M_CPU_GHZ_BEFORE), *ca = tb_an_series(t, TB_M_CPU_GHZ_AFTER);
    const double *vb = tb_an_series(t, TB_M_VEC_GOPS_BEFORE), *va = tb_an_series(t, TB_M_VEC_GOPS_AFTER);
    const double *st = tb_an_series(t, TB_M_STEAL_PCT);
    o->n = finite_of(hv, R, buf);
    tb_stats_summarize(buf, o->n, &o->head);
    size_t k = finite_of(pct, R, buf);
    tb_stats_summarize(buf, k, &o->pct);
    k = finite_of(tb_an_series(t, TB_M_ROOFLINE_GBPS), R, buf);
    o->roof_median = tb_stats_median(buf, k);
    o->cpu_min = o->vec_min = INFINITY;
    o->cpu_max = o->vec_max = -INFINITY;
    for (size_t i = 0; i < R; i++) {
        o->cpu_min = fmin(o->cpu_min, fmin(cb[i], ca[i]));
        o->cpu_max = fmax(o->cpu_max, fmax(cb[i], ca[i]));
        o->vec_min = fmin(o->vec_min, fmin(vb[i], va[i]));
        o->vec_max = fmax(o->vec_max, fmax(vb[i], va[i]));
    }
    if (!isfinite(o->cpu_max)) o->cpu_min = o->cpu_max = NAN;
    if (!isfinite(o->vec_max)) o->vec_min = o->vec_max = NAN;
    size_t m = 0;
    for (size_t i = 0; i < R; i++)
        if (isfinite(pct[i]) && tb_an_settled(bb[i], ba[i])) buf[m++] = pct[i];
    o->settled = m;
    o->pct_settled = m ? tb_stats_median(buf, m) : NAN;
    m = 0;
    for (size_t i = 0; i < R; i++)
        if (isfinite(pct[i]) && tb_an_full_speed(cb[i], ca[i], o->cpu_max)) buf[m++] = pct[i];
    o->full = m;
    o->pct_full = m ? tb_stats_median(buf, m) : NAN;
    o->steal_max = NAN;
    o->vec_shared = tb_an_vec_shared(vb, va, R, o->vec_max, NULL);
    for (size_t i = 0; i < R; i++) {
        o->steal_over += st[i] >= 1.0;
        if (isfinite(st[i])) o->steal_max = isnan(o->steal_max) ? st[i] : fmax(o->steal_max, st[i]);
    }
    free(buf);
    o->tok_p50 = o->tok_p90 = o->tok_p99 = o->tok_max = o->stall_pct = o->p50_roofline_pct = NAN;
    if (t->n_tok > 0) {
        double *lat;
        int rc = tb_an_token_ms(t, &lat, &o->tok_n);
        if (rc) return rc;
        if (o->tok_n) {
            o->tok_p50 = tb_stats_percentile(lat, o->tok_n, 50.0);
            o->tok_p90 = tb_stats_percentile(lat, o->tok_n, 90.0);
            o->tok_p99 = tb_stats_percentile(lat, o->tok_n, 99.0);
            o->tok_max = tb_stats_percentile(lat, o->tok_n, 100.0);
            o->stall_pct = tb_stats_stall_pct(lat, o->tok_n, TB_STALL_FACTOR);
            double *bpt = tb_an_series(t, TB_M_BYTES_PER_TOKEN), b = NAN;
            for (size_t i = 0; i < R && isnan(b); i++) b = bpt[i];
            o->p50_roofline_pct = 100.0 * (1e3 / o->tok_p50) * b / 1e9 / o->roof_median;
        }
        free(lat);
    }
    return TB_OK;
}
