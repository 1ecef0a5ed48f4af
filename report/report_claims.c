/*
 * report_claims.c — the claim checks recorded with the selected runs
 * (the claims table, schema 5): a table of every condition and one chart
 * of claimed vs roofline vs projected interval vs measured, per device and
 * condition (device, context, head). Nothing is written when the runs
 * carry no claims.
 */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct claim_row {
    int64_t run;
    char section[64], device[64], head[48], verdict[40];
    int ctx, approx;
    double mb, roof, lo, hi, claimed, pct, measured;
} claim_row_t;

static double col_real(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static void col_text(sqlite3_stmt *st, int i, char *buf, size_t cap) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, cap, "%s", t ? (const char *)t : "");
}

/* Every claim row of the selected runs, in run, section, index order. */
static int load(rp_ctx_t *c, claim_row_t **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    sqlite3 *db = c->set->db;
    sqlite3_stmt *st = NULL;
    static const char sql[] =
        "SELECT run_id, section, device, head, coalesce(verdict, ''), ctx, head_approx, bytes_per_token / 1e6,"
        " roofline_tok_s, projected_lo_tok_s, projected_hi_tok_s, claimed_tok_s, implied_pct_peak, measured_tok_s"
        " FROM claims WHERE run_id = ?1 ORDER BY section, idx";
    int r = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (r != SQLITE_OK) return tb_err(TB_ERR_IO, "report: claims: %s", sqlite3_errmsg(db));
    claim_row_t *v = NULL;
    int n = 0, cap = 0, rc = TB_OK;
    for (int i = 0; i < c->set->n_runs && !rc; i++) {
        sqlite3_reset(st);
        if ((r = sqlite3_bind_int64(st, 1, c->set->runs[i].id)) != SQLITE_OK) {
            rc = tb_err(TB_ERR_IO, "report: claims: %s", sqlite3_errmsg(db));
            break;
        }
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                claim_row_t *p = realloc(v, (size_t)cap * sizeof *p);
                if (!p) { rc = tb_err(TB_ERR_NOMEM, "out of memory"); break; }
                v = p;
            }
            claim_row_t *x = &v[n++];
            x->run = sqlite3_column_int64(st, 0);
            col_text(st, 1, x->section, sizeof x->section);
            col_text(st, 2, x->device, sizeof x->device);
            col_text(st, 3, x->head, sizeof x->head);
            col_text(st, 4, x->verdict, sizeof x->verdict);
            x->ctx = sqlite3_column_int(st, 5);
            x->approx = sqlite3_column_int(st, 6);
            x->mb = col_real(st, 7);
            x->roof = col_real(st, 8);
            x->lo = col_real(st, 9);
            x->hi = col_real(st, 10);
            x->claimed = col_real(st, 11);
            x->pct = col_real(st, 12);
            x->measured = col_real(st, 13);
        }
        if (!rc && r != SQLITE_DONE) rc = tb_err(TB_ERR_IO, "report: claims: %s", sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    if (rc) { free(v); return rc; }
    *out = v;
    *n_out = n;
    return TB_OK;
}

/* Rows i and j are the same condition (only the claimed speed differs). */
static bool same_cond(const claim_row_t *a, const claim_row_t *b) {
    return a->run == b->run && !strcmp(a->section, b->section) && !strcmp(a->device, b->device) &&
           a->ctx == b->ctx && !strcmp(a->head, b->head);
}

static void table(rp_ctx_t *c, const claim_row_t *v, int n) {
    rp_doc_t *d = c->doc;
    static const char *const h[] = {"run", "section", "device", "ctx", "head", "MB/token", "roofline tok/s",
                                    "projected tok/s", "measured tok/s", "claimed tok/s", "% of peak", "verdict"};
    rp_doc_table(d, 12, h, "rllrlrrrrrrl");
    for (int i = 0; i < n; i++) {
        const claim_row_t *x = &v[i];
        char run[24], ctx[16], head[64], mb[32], roof[32], pj[64], a[32], b[32], meas[32], cl[32], pct[32];
        snprintf(run, sizeof run, "%lld", (long long)x->run);
        snprintf(ctx, sizeof ctx, "%d", x->ctx);
        snprintf(head, sizeof head, "%s%s", x->head, x->approx ? " (approximate)" : "");
        rp_fmt(mb, sizeof mb, x->mb, 1);
        rp_fmt(roof, sizeof roof, x->roof, 1);
        if (isfinite(x->lo)) snprintf(pj, sizeof pj, "%s – %s", rp_fmt(a, sizeof a, x->lo, 1), rp_fmt(b, sizeof b, x->hi, 1));
        else snprintf(pj, sizeof pj, "—");
        rp_fmt(meas, sizeof meas, x->measured, 1);
        rp_fmt(cl, sizeof cl, x->claimed, 1);
        rp_fmt(pct, sizeof pct, x->pct, 0);
        const char *cells[] = {run, x->section, x->device, ctx, head, mb, roof, pj, meas, cl, pct,
                               x->verdict[0] ? x->verdict : "—"};
        rp_doc_row(d, cells);
    }
    rp_doc_table_end(d);
}

/* One x slot per condition: the interval as a box, the roofline, the
 * measured speed and every claimed speed as points; log y (a phone's
 * claim and a cache-resident model on this machine differ by 100x). */
static int chart(rp_ctx_t *c, const claim_row_t *v, int n) {
    const char *title = "Claims: claimed vs roofline vs projected interval vs measured";
    rp_chart_t ch = {.name = "claims", .title = title, .width = 1200, .height = 640};
    rp_buf_puts(&ch.dat, "# claims.dat — one line per condition (run, section, device, ctx, head)\n"
                         "# columns: x label roofline_tok_s projected_lo projected_hi measured_tok_s\n");
    int slots = 0, n_claims = 0;
    bool have_meas = false;
    for (int i = 0; i < n; i++) {
        if (i && same_cond(&v[i], &v[i - 1])) continue;
        const claim_row_t *x = &v[i];
        char lab[192];
        snprintf(lab, sizeof lab, "%s %d %s", x->device, x->ctx, x->approx ? "approx" : "exact");
        rp_buf_printf(&ch.dat, "%d ", slots);
        rp_gp_quote(&ch.dat, lab);
        rp_buf_printf(&ch.dat, " %.6g", x->roof);
        if (isfinite(x->lo)) rp_buf_printf(&ch.dat, " %.6g %.6g", x->lo, x->hi);
        else rp_buf_puts(&ch.dat, " ? ?");
        if (isfinite(x->measured)) { rp_buf_printf(&ch.dat, " %.6g\n", x->measured); have_meas = true; }
        else rp_buf_puts(&ch.dat, " ?\n");
        slots++;
    }
    rp_buf_puts(&ch.dat, "\n\n# claimed speeds: x claimed_tok_s\n");
    for (int i = 0, slot = -1; i < n; i++) {
        if (!i || !same_cond(&v[i], &v[i - 1])) slot++;
        if (isfinite(v[i].claimed)) { rp_buf_printf(&ch.dat, "%d %.6g\n", slot, v[i].claimed); n_claims++; }
    }
    if (!n_claims) rp_buf_puts(&ch.dat, "? ?\n");
    rp_buf_puts(&ch.body, "  set title ");
    rp_gp_quote(&ch.body, title);
    rp_buf_puts(&ch.body, " font \",12\"\n  set ylabel \"decode tok/s (log)\"\n  set logscale y\n"
                          "  set xtics rotate by -60 font \",8\"\n  set xrange [-0.7:*]\n"
                          "  set offsets 0, 0.7, 0, 0\n  set boxwidth 0.5\n  set style fill solid 0.35 border\n");
    rp_buf_puts(&ch.body, "  plot \"claims.dat\" index 0 using 1:4:4:5:5:xtic(2) with candlesticks lt 1 "
                          "title \"projected interval\", \\\n"
                          "       \"claims.dat\" index 0 using 1:3 with points pt 9 ps 1.2 lc rgb \"#333333\" "
                          "title \"roofline (peak bandwidth / bytes per token)\"");
    if (have_meas)
        rp_buf_puts(&ch.body, ", \\\n       \"claims.dat\" index 0 using 1:6 with points pt 7 ps 1.2 lc rgb \"#1f78b4\" "
                              "title \"measured (this machine)\"");
    if (n_claims)
        rp_buf_puts(&ch.body, ", \\\n       \"claims.dat\" index 1 using 1:2 with points pt 2 ps 1.4 lw 2 lc rgb \"#d7301f\" "
                              "title \"claimed\"");
    rp_buf_puts(&ch.body, "\n");
    int rc = rp_chart_emit(c, &ch);
    rp_buf_free(&ch.dat);
    rp_buf_free(&ch.body);
    return rc;
}

int rp_claims_write(rp_ctx_t *c) {
    claim_row_t *v;
    int n, rc = load(c, &v, &n);
    if (rc || n == 0) return rc;
    rp_doc_heading(c->doc, 2, "Claims");
    rp_doc_para(c->doc, "Every recorded claim condition of these runs (`ternbench claim`, `[claim]` sections; "
                        "docs/claims.md). Roofline = the device's bandwidth / bytes per token; the projected "
                        "interval = roofline x the efficiency range of comparable published rows. Approximate "
                        "heads are labelled; measured speeds are this machine's own decode tests.");
    table(c, v, n);
    if (!c->opts->no_charts) rc = chart(c, v, n);
    free(v);
    return rc;
}
