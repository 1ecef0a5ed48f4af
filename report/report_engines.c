/*
 * report_engines.c — the "Engines" section: ternbench's engine and a peer
 * (llama.cpp) measured in one group on the same file, side by side.
 *
 * A pair is a ternbench run and a peer run of the set with the same group
 * tag and the same model file (`[engine] kind = ternbench, llama.cpp`).
 * Per test (same kind and label) it shows each engine's headline tok/s
 * (median, with the range over repetitions), its median share of the
 * roofline (both charged against the same probes: the runner brackets every
 * repetition of either engine), and the ratio ternbench ÷ peer over the
 * repetitions paired by index (they took turns): the paired Hodges–Lehmann
 * estimate with its 95 % interval (infer.h), and how many pairs ternbench
 * was faster in (analysis.h). The section is absent when no pair exists.
 */
#include "analysis.h"
#include "infer.h"
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The engine and version of run id (from the runs table); "ternbench" and
 * "" when the columns are NULL or the query fails. */
static void run_engine(sqlite3 *db, int64_t id, char *eng, size_t ne, char *ver, size_t nv) {
    snprintf(eng, ne, "ternbench");
    ver[0] = '\0';
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT engine, engine_version FROM runs WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
        return;
    if (sqlite3_bind_int64(st, 1, id) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *e = sqlite3_column_text(st, 0), *v = sqlite3_column_text(st, 1);
        if (e) snprintf(eng, ne, "%s", (const char *)e);
        if (v) snprintf(ver, nv, "%s", (const char *)v);
    }
    sqlite3_finalize(st);
}

/* The value of tag key in r->tags ("k=v, k=v") into out; 0 when present. */
static int run_tag(const rp_run_t *r, const char *key, char *out, size_t cap) {
    size_t kl = strlen(key);
    for (const char *s = r->tags; s && *s;) {
        if (!strncmp(s, key, kl) && s[kl] == '=') {
            const char *v = s + kl + 1;
            snprintf(out, cap, "%.*s", (int)strcspn(v, ","), v);
            return 0;
        }
        s = strchr(s, ',');
        if (s) s += strspn(s, ", ");
    }
    return -1;
}

static const char *headline(const rp_test_t *t) {
    return !strcmp(t->kind, "prefill") ? "prefill_tok_per_s"
         : !strcmp(t->kind, "decode") ? "decode_tok_per_s" : NULL;
}

/* "median [min–max]" of a metric's repetitions. */
static const char *spread(char *b, size_t n, const rp_metric_t *m) {
    if (!m) return "—";
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < m->n; i++) { lo = fmin(lo, m->vals[i]); hi = fmax(hi, m->vals[i]); }
    if (m->n > 1) snprintf(b, n, "%.2f [%.2f–%.2f]", m->median, lo, hi);
    else snprintf(b, n, "%.2f", m->median);
    return b;
}

/* Values of a and b at the repetitions both have, in index order. */
static size_t pair_up(const rp_metric_t *a, const rp_metric_t *b, double *x, double *y) {
    size_t n = 0;
    for (int i = 0, j = 0; i < a->n && j < b->n;) {
        if (a->reps[i] < b->reps[j]) i++;
        else if (a->reps[i] > b->reps[j]) j++;
        else { x[n] = a->vals[i++]; y[n++] = b->vals[j++]; }
    }
    return n;
}

/* One table row per test the two runs share. */
static int pair_rows(rp_doc_t *d, const rp_run_t *tb, const rp_run_t *peer, const char *pname, int *rows) {
    /* pname: at most 63 characters (run_engine) */
    static const char *const h[] = {"test", "model", "ternbench t/s", "peer t/s", "ternbench % roofline",
                                    "peer % roofline", "ternbench ÷ peer (95 % CI)", "pairs"};
    for (int i = 0; i < tb->n_tests; i++) {
        const rp_test_t *a = &tb->tests[i];
        const char *hm = headline(a);
        if (!hm) continue;
        const rp_test_t *b = NULL;
        for (int j = 0; j < peer->n_tests && !b; j++)
            if (!strcmp(peer->tests[j].kind, a->kind) && !strcmp(peer->tests[j].label, a->label)) b = &peer->tests[j];
        if (!b) continue;
        const rp_metric_t *ma = rp_metric(a, hm), *mb = rp_metric(b, hm);
        char c[6][96], model[192];
        snprintf(model, sizeof model, "%s %s", tb->has_model ? tb->model_name : "?", tb->has_model ? tb->main_type : "");
        snprintf(c[4], sizeof c[4], "—");
        snprintf(c[5], sizeof c[5], "—");
        if (ma && mb && ma->n > 0 && mb->n > 0) {
            int cap = ma->n < mb->n ? ma->n : mb->n;
            double *x = malloc((size_t)cap * sizeof *x), *y = malloc((size_t)cap * sizeof *y);   // (cap)
            if (!x || !y) { free(x); free(y); return tb_err(TB_ERR_NOMEM, "out of memory"); }
            size_t n = pair_up(mb, ma, x, y);   /* x: peer, y: ternbench */
            tb_infer_ratio_t r;
            tb_an_paired_t p;
            if (n > 0 && tb_infer_hl_paired(x, y, n, 0.95, &r) == TB_OK) {
                if (!isfinite(r.lo) || !isfinite(r.hi) || r.lo <= 0)
                    snprintf(c[4], sizeof c[4], "%.3fx (too few pairs for a 95 %% interval)", r.estimate);
                else if (r.method == TB_INFER_POINT || !(r.hi > r.lo))
                    snprintf(c[4], sizeof c[4], "%.3fx (no spread)", r.estimate);
                else snprintf(c[4], sizeof c[4], "%.3fx [%.3f–%.3f]", r.estimate, r.lo, r.hi);
            }
            if (n > 0 && tb_an_paired(x, y, n, &p) == TB_OK)
                snprintf(c[5], sizeof c[5], "%zu pairs, ternbench faster in %zu", p.n, p.faster);
            free(x);
            free(y);
        }
        if (!(*rows)++) {
            const char *hh[8];
            memcpy(hh, h, sizeof hh);
            char hp[96], hq[96], hr[128];
            snprintf(hp, sizeof hp, "%s t/s", pname);
            snprintf(hq, sizeof hq, "%s %% roofline", pname);
            snprintf(hr, sizeof hr, "ternbench ÷ %s (95 %% CI)", pname);
            hh[3] = hp;
            hh[5] = hq;
            hh[6] = hr;
            rp_doc_table(d, 8, hh, "llrrrrrl");
        }
        const char *cells[] = {a->label, model, spread(c[0], sizeof c[0], ma), spread(c[1], sizeof c[1], mb),
                               rp_fmt(c[2], sizeof c[2], rp_value(a, "roofline_pct"), 1),
                               rp_fmt(c[3], sizeof c[3], rp_value(b, "roofline_pct"), 1), c[4], c[5]};
        rp_doc_row(d, cells);
    }
    return TB_OK;
}

int rp_engines_write(rp_ctx_t *c) {
    rp_set_t *s = c->set;
    rp_doc_t *d = c->doc;
    int rows = 0, rc = TB_OK;
    char pname[64] = "", pver[160] = "";
    for (int i = 0; i < s->n_runs && !rc; i++) {
        const rp_run_t *peer = &s->runs[i];
        char eng[64], ver[160], grp[64], g2[64], e2[64], v2[160];
        run_engine(s->db, peer->id, eng, sizeof eng, ver, sizeof ver);
        if (!strcmp(eng, "ternbench") || run_tag(peer, "group", grp, sizeof grp)) continue;
        for (int k = 0; k < s->n_runs && !rc; k++) {
            const rp_run_t *tb = &s->runs[k];
            if (k == i || run_tag(tb, "group", g2, sizeof g2) || strcmp(grp, g2)) continue;
            if (!tb->has_model || !peer->has_model || strcmp(tb->model_hash, peer->model_hash)) continue;
            run_engine(s->db, tb->id, e2, sizeof e2, v2, sizeof v2);
            if (strcmp(e2, "ternbench")) continue;
            if (!rows && !pname[0]) {
                snprintf(pname, sizeof pname, "%s", eng);
                snprintf(pver, sizeof pver, "%s", ver);
                rp_doc_heading(d, 2, "Engines");
                rp_doc_para(d, "ternbench's engine and %s%s%s on the same file, in one group: their "
                               "repetitions took turns (order reversed on odd ones), each bracketed by the "
                               "same bandwidth, clock and vector probes, so both are charged against the "
                               "same roofline. t/s: median [range] over repetitions. Ratio: paired "
                               "Hodges–Lehmann estimate of ternbench ÷ %s over the repetitions with its "
                               "95 %% interval; pairs: repetitions measured by both.",
                            eng, ver[0] ? " " : "", ver, eng);
            }
            rc = pair_rows(d, tb, peer, eng, &rows);
        }
    }
    if (rows) rp_doc_table_end(d);
    else if (pname[0]) rp_doc_note(d, "The paired runs share no prefill or decode test.");
    return rc;
}
