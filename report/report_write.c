/*
 * report_write.c — tb_report_write: load the selected runs, build the
 * document section by section, render charts, save report.md/report.html.
 * Also the selector parser used by the CLI.
 */
#include "report_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

tb_report_opts_t tb_report_default_opts(void) {
    tb_report_opts_t o;
    memset(&o, 0, sizeof o);
    o.sel.kind = TB_REPORT_SEL_LAST;
    o.sel.n = 1;
    return o;
}

/* ===================================================================== */
/* Selector parsing                                                        */
/* ===================================================================== */

/* Comma-separated positive run ids into s->ids. */
static int parse_ids(const char *text, tb_report_sel_t *s) {
    const char *p = text;
    s->kind = TB_REPORT_SEL_RUNS;
    s->n = 0;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v <= 0)
            return tb_err(TB_ERR_ARG, "selector '%s': byte %td: expected a run id", text, p - text);
        if (s->n == TB_REPORT_MAX_RUNS) return tb_err(TB_ERR_RANGE, "selector '%s': too many run ids", text);
        s->ids[s->n++] = v;
        p = end;
        if (*p == ',') p++;
        else if (*p) return tb_err(TB_ERR_ARG, "selector '%s': byte %td: expected ',' or the end", text, p - text);
    }
    return s->n ? TB_OK : tb_err(TB_ERR_ARG, "selector '%s': no run id", text);
}

static int set_value(tb_report_sel_t *s, tb_report_sel_kind_t kind, const char *v, const char *text) {
    if (!*v) return tb_err(TB_ERR_ARG, "selector '%s': empty value", text);
    if (strlen(v) >= sizeof s->value) return tb_err(TB_ERR_ARG, "selector '%s': value too long", text);
    s->kind = kind;
    snprintf(s->value, sizeof s->value, "%s", v);
    return TB_OK;
}

int tb_report_parse_sel(const char *text, tb_report_sel_t *out) {
    if (!text || !out) return tb_err(TB_ERR_ARG, "selector: NULL argument");
    tb_report_sel_t s;
    memset(&s, 0, sizeof s);
    int rc;
    if (!strcmp(text, "last")) { s.kind = TB_REPORT_SEL_LAST; s.n = 1; rc = TB_OK; }
    else if (!strncmp(text, "last:", 5)) {
        char *end;
        long n = strtol(text + 5, &end, 10);
        if (end == text + 5 || *end || n <= 0 || n > TB_REPORT_MAX_RUNS)
            return tb_err(TB_ERR_ARG, "selector '%s': byte 5: expected a count 1..%d", text, TB_REPORT_MAX_RUNS);
        s.kind = TB_REPORT_SEL_LAST;
        s.n = (int)n;
        rc = TB_OK;
    } else if (!strncmp(text, "commit:", 7)) rc = set_value(&s, TB_REPORT_SEL_COMMIT, text + 7, text);
    else if (!strncmp(text, "format:", 7)) rc = set_value(&s, TB_REPORT_SEL_FORMAT, text + 7, text);
    else if (!strncmp(text, "model:", 6)) rc = set_value(&s, TB_REPORT_SEL_MODEL, text + 6, text);
    else if (!strncmp(text, "run:", 4)) rc = parse_ids(text + 4, &s);
    else if (text[0] >= '0' && text[0] <= '9') rc = parse_ids(text, &s);
    else {
        const char *kv = !strncmp(text, "tag:", 4) ? text + 4 : text;
        const char *eq = strchr(kv, '=');
        if (!eq || eq == kv || !eq[1])
            return tb_err(TB_ERR_ARG, "selector '%s': expected ID[,ID...], last[:N], K=V, tag:K=V, "
                                      "commit:SHA, format:TYPE or model:NAME", text);
        if ((size_t)(eq - kv) >= sizeof s.key) return tb_err(TB_ERR_ARG, "selector '%s': key too long", text);
        s.kind = TB_REPORT_SEL_TAG;
        snprintf(s.key, sizeof s.key, "%.*s", (int)(eq - kv), kv);
        rc = set_value(&s, TB_REPORT_SEL_TAG, eq + 1, text);
    }
    if (rc == TB_OK) *out = s;
    return rc;
}

/* ===================================================================== */
/* The report                                                              */
/* ===================================================================== */

/* mkdir -p of one level, accepting an existing directory. */
static int ensure_dir(const char *dir) {
    struct stat st;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return tb_err(TB_ERR_IO, "report: cannot create directory %s: %s", dir, strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return tb_err(TB_ERR_IO, "report: %s is not a directory", dir);
    return TB_OK;
}

/* The "Runs" overview table and the report's opening lines. */
static void overview(rp_ctx_t *c) {
    rp_doc_t *d = c->doc;
    rp_set_t *s = c->set;
    if (c->opts->diffable)
        rp_doc_para(d, "%d run%s from the results database.", s->n_runs, s->n_runs == 1 ? "" : "s");
    else
        rp_doc_para(d, "%d run%s from %s.", s->n_runs, s->n_runs == 1 ? "" : "s", c->opts->db_path);
    rp_doc_heading(d, 2, "Runs");
    static const char *const h[] = {"run", "model", "format", "host", "build", "scenario", "status", "tags"};
    rp_doc_table(d, 8, h, "rlllllll");
    for (int i = 0; i < s->n_runs; i++) {
        const rp_run_t *r = &s->runs[i];
        char id[24], host[256], build[128], scen[160];
        snprintf(id, sizeof id, "%lld", (long long)r->id);
        snprintf(host, sizeof host, "%s (%s)", r->cpu_brand, r->hostname);
        snprintf(build, sizeof build, "%.12s%s %s", r->commit, r->dirty ? "+dirty" : "", r->build_type);
        snprintf(scen, sizeof scen, "%s (%.12s)", r->scen_name, r->scen_hash);
        const char *cells[] = {id, r->has_model ? r->model_name : "—", r->has_model ? r->main_type : "—",
                               host, build, scen, r->status, r->tags[0] ? r->tags : "—"};
        rp_doc_row(d, cells);
    }
    rp_doc_table_end(d);
    for (int i = 0; i < s->n_runs; i++)
        if (strcmp(s->runs[i].status, "complete"))
            rp_doc_note(d, "Run %lld is '%s'%s%s: its numbers may be partial.", (long long)s->runs[i].id,
                        s->runs[i].status, s->runs[i].error[0] ? ": " : "", s->runs[i].error);
}

int tb_report_write(const tb_report_opts_t *opts, tb_report_result_t *res_out) {
    tb_report_result_t res_local;
    tb_report_result_t *res = res_out ? res_out : &res_local;
    memset(res, 0, sizeof *res);
    if (!opts || !opts->out_dir || !*opts->out_dir) return tb_err(TB_ERR_ARG, "report: no output directory");
    int rc = ensure_dir(opts->out_dir);
    if (rc) return rc;

    rp_set_t set;
    rp_doc_t doc;
    memset(&doc, 0, sizeof doc);
    rp_ctx_t c = {.opts = opts, .set = &set, .doc = &doc, .res = res};
    rc = rp_set_load(&set, opts, &c.in_base, &c.in_cmp);
    if (rc) goto done;
    res->n_runs = set.n_runs;

    if (!opts->no_charts && rp_gnuplot_find(opts->gnuplot, c.gnuplot, sizeof c.gnuplot) != TB_OK) {
        res->gnuplot_missing = true;
        snprintf(res->warning, sizeof res->warning,
                 "charts skipped: %s; tables, data files and gnuplot scripts were still written", tb_last_error());
        tb_clear_error();
    }

    rp_doc_begin(&doc, "ternbench report");
    overview(&c);
    if (!rc) rc = rp_compare_write(&c);
    if (!rc) rc = rp_engines_write(&c);
    if (!rc) rc = rp_tables_write(&c);
    if (!rc) rc = rp_quality_write(&c);
    if (!rc) rc = rp_groups_write(&c);
    if (!rc) rc = rp_states_write(&c);
    if (!rc) rc = rp_claims_write(&c);
    if (!rc && !opts->no_charts) rc = rp_charts_write(&c);
    if (!rc && opts->no_charts) {
        rp_doc_heading(&doc, 2, "Charts");
        rp_doc_note(&doc, "Charts were not requested (--no-charts).");
    }
    if (!rc) rc = rp_provenance_write(&c);
    rp_doc_end(&doc);
    if (!rc) rc = rp_buf_save(&doc.md, opts->out_dir, "report.md");
    if (!rc) rc = rp_buf_save(&doc.html, opts->out_dir, "report.html");
done:
    rp_doc_free(&doc);
    rp_set_free(&set);
    free(c.in_base);
    free(c.in_cmp);
    return rc;
}
