/*
 * report_groups.c — run groups: the runs a group ran together (tags
 * group=UUID, group.index=K, interleave=rep|token; bench/harness/runner.h)
 * shown as one table, a column per member in group.index order, every
 * member's figure with its ratio to the first member's. The members took
 * turns on the same machine, so their ratios are the fair comparison.
 */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The value of tag `key` in "k=v, k=v" tags into buf ("" when absent). */
static const char *tag_of(const char *tags, const char *key, char *buf, size_t n) {
    const size_t kl = strlen(key);
    buf[0] = '\0';
    for (const char *p = tags; p && *p;) {
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            const char *v = p + kl + 1, *e = strstr(v, ", ");
            size_t l = e ? (size_t)(e - v) : strlen(v);
            if (l >= n) l = n - 1;
            memcpy(buf, v, l);
            buf[l] = '\0';
            return buf;
        }
        p = strstr(p, ", ");
        if (p) p += 2;
    }
    return buf;
}

static const rp_test_t *test_of(const rp_run_t *r, const char *kind, const char *label) {
    for (int j = 0; j < r->n_tests; j++)
        if (!strcmp(r->tests[j].kind, kind) && !strcmp(r->tests[j].label, label)) return &r->tests[j];
    return NULL;
}

/* The headline figures a group table shows, when the first member has them. */
static const char *const METRICS[] = {"prefill_tok_per_s", "decode_tok_per_s", "ttft_ms", "window_tok_per_s",
                                      "stability_pct", "roofline_pct"};

enum { MAX_MEMBERS = 16 };

/* The table of the group whose members are runs idx[0..n) (group.index order). */
static void group_table(rp_ctx_t *c, const char *uuid, const int *idx, int n) {
    rp_doc_t *d = c->doc;
    const rp_run_t *r0 = &c->set->runs[idx[0]];
    char il[32], head[96];
    tag_of(r0->tags, "interleave", il, sizeof il);
    snprintf(head, sizeof head, "Run group %.8s", uuid);
    rp_doc_heading(d, 3, head);
    rp_doc_para(d, "%d runs taking turns (interleave %s); each figure is the median over its run's "
                   "repetitions, the ratio is that figure over the first member's.", n, il[0] ? il : "?");
    const char *h[2 + MAX_MEMBERS];
    char names[MAX_MEMBERS][160], align[2 + MAX_MEMBERS + 1];
    h[0] = "test";
    h[1] = "metric";
    align[0] = align[1] = 'l';
    for (int k = 0; k < n; k++) {
        const rp_run_t *r = &c->set->runs[idx[k]];
        snprintf(names[k], sizeof names[k], "%s (run %lld)", r->series, (long long)r->id);
        h[2 + k] = names[k];
        align[2 + k] = 'r';
    }
    align[2 + n] = '\0';
    rp_doc_table(d, 2 + n, h, align);
    for (int j = 0; j < r0->n_tests; j++) {
        const rp_test_t *t0 = &r0->tests[j];
        for (size_t mi = 0; mi < TB_ARRAY_LEN(METRICS); mi++) {
            const rp_metric_t *m0 = rp_metric(t0, METRICS[mi]);
            if (!m0 || !isfinite(m0->median)) continue;
            char cell[MAX_MEMBERS][64];
            const char *v[2 + MAX_MEMBERS] = {t0->label, METRICS[mi]};
            for (int k = 0; k < n; k++) {
                const rp_test_t *t = k ? test_of(&c->set->runs[idx[k]], t0->kind, t0->label) : t0;
                double x = t ? rp_value(t, METRICS[mi]) : NAN;
                char num[32];
                rp_fmt(num, sizeof num, x, 2);
                if (k == 0 || !isfinite(x)) snprintf(cell[k], sizeof cell[k], "%s", num);
                else snprintf(cell[k], sizeof cell[k], "%s (×%.3f)", num, x / m0->median);
                v[2 + k] = cell[k];
            }
            rp_doc_row(d, v);
        }
    }
    rp_doc_table_end(d);
}

int rp_groups_write(rp_ctx_t *c) {
    const int nr = c->set->n_runs;
    unsigned char *done = calloc((size_t)(nr > 0 ? nr : 1), 1);   /* (n_runs) run placed in a table */
    if (!done) return tb_err(TB_ERR_NOMEM, "report: out of memory for run groups");
    int n_groups = 0;
    for (int i = 0; i < nr; i++) {
        char g[96], gi[96];
        if (done[i] || !tag_of(c->set->runs[i].tags, "group", g, sizeof g)[0]) continue;
        int idx[MAX_MEMBERS], pos[MAX_MEMBERS], n = 0;
        for (int j = i; j < nr && n < MAX_MEMBERS; j++) {
            if (strcmp(tag_of(c->set->runs[j].tags, "group", gi, sizeof gi), g)) continue;
            done[j] = 1;
            int p = atoi(tag_of(c->set->runs[j].tags, "group.index", gi, sizeof gi)), k = n++;
            for (; k > 0 && pos[k - 1] > p; k--) { idx[k] = idx[k - 1]; pos[k] = pos[k - 1]; }
            idx[k] = j;
            pos[k] = p;
        }
        if (n < 2) continue;
        if (n_groups++ == 0) rp_doc_heading(c->doc, 2, "Run groups");
        group_table(c, g, idx, n);
    }
    free(done);
    return TB_OK;
}
