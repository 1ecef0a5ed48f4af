/*
 * report_int.h — what the report's files share: the in-memory picture of
 * the selected runs (loaded once from SQLite), small statistics and text
 * helpers, the document builder (Markdown + HTML side by side) and the
 * gnuplot runner. Not installed; include only from report/ and its tests.
 */
#ifndef TB_REPORT_INT_H
#define TB_REPORT_INT_H

#include "tbutil.h"
#include "ternbench.h"
#include "report.h"

#include <sqlite3.h>
#include <stdio.h>

/* ===================================================================== */
/* Growable text buffer                                                   */
/* ===================================================================== */

typedef struct rp_buf {
    char *p;        /* NUL-terminated; NULL until the first append */
    size_t len, cap;
    int oom;        /* sticky: an append failed                      */
} rp_buf_t;

void rp_buf_put(rp_buf_t *b, const char *s, size_t n);
void rp_buf_puts(rp_buf_t *b, const char *s);
void rp_buf_printf(rp_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rp_buf_free(rp_buf_t *b);
/* Write the buffer to dir/name; TB_ERR_IO / TB_ERR_NOMEM with the path. */
int rp_buf_save(const rp_buf_t *b, const char *dir, const char *name);

/* ===================================================================== */
/* The loaded results                                                     */
/* ===================================================================== */

/* One metric of one test, with its statistics over repetitions >= 0, or
 * the stored summary (repetition -1, *_median/_stddev) when no
 * per-repetition rows exist. */
typedef struct rp_metric {
    char name[64];      /* base name, summary suffix stripped        */
    char unit[16];
    int n;              /* per-repetition values                     */
    int *reps;          /* (n) repetition index, ascending           */
    double *vals;       /* (n) values, in repetition order           */
    double median;      /* NAN when neither rows nor summary exist   */
    double sd;          /* sample sd; NAN when unknown               */
} rp_metric_t;

struct rp_run;

typedef struct rp_test {
    int64_t id;
    struct rp_run *run;
    char *section, *kind, *label, *params, *status, *thermal;  /* thermal may be NULL */
    double depth;           /* params.depth, 0 when absent            */
    double prompt_tokens;   /* params.prompt_tokens, or from "ppN"     */
    double gen_tokens;      /* params.gen_tokens, or from "tgN"        */
    int n_metrics;
    rp_metric_t *metrics;   /* (n_metrics), sorted by name            */
} rp_test_t;

typedef struct rp_run {
    int64_t id;
    char *uuid, *started, *ended, *status, *error;
    int threads;
    char *isa, *kv_type;
    double bw_before, bw_after;     /* GB/s, NAN when not recorded */
    /* host */
    char *hostname, *cpu_vendor, *cpu_brand, *isa_flags, *os, *kernel;
    int64_t cores, hw_threads, l1d_kb, l2_kb, l3_kb, mem_bytes;   /* -1 when NULL */
    /* build */
    char *version, *commit, *compiler, *cflags, *build_type, *isa_best;
    int dirty;
    /* model (has_model false when model_id is NULL) */
    int has_model;
    char *model_name, *model_path, *arch, *main_type, *weight_types, *model_hash;
    int64_t file_bytes, n_params, n_params_active, n_layer, n_embd, n_expert, n_expert_used;
    /* scenario */
    char *scen_name, *scen_hash, *scen_path;
    char *tags;             /* "k=v, k=v" sorted by key, "" when none     */
    char *series;           /* legend label, unique within the report    */
    int n_tests;
    rp_test_t *tests;       /* (n_tests) in test id order                */
} rp_run_t;

typedef struct rp_set {
    sqlite3 *db;            /* open read-only for the report's lifetime   */
    struct tb_store *store; /* the store that owns db (tb_store_open_read) */
    int n_runs;
    rp_run_t *runs;         /* (n_runs) in run id order                   */
    void *arena;            /* owns every string of runs and tests        */
} rp_set_t;

/* Open db read-only, resolve the selection(s) and load every run. With
 * opts->compare the set is baseline ∪ target and *base_ids / *cmp_ids
 * (caller frees) flag membership per run index. */
int rp_set_load(rp_set_t *set, const tb_report_opts_t *opts,
                unsigned char **in_base, unsigned char **in_cmp);
void rp_set_free(rp_set_t *set);

/* Metric of a test by base name, NULL when absent or without a value. */
const rp_metric_t *rp_metric(const rp_test_t *t, const char *name);
/* Median of the metric, NAN when absent. */
double rp_value(const rp_test_t *t, const char *name);

/* ===================================================================== */
/* Statistics and text helpers (report_util.c)                            */
/* ===================================================================== */

/* Median of v (n) (sorts a copy); NAN when n == 0. */
double rp_median(const double *v, int n);
/* Sample standard deviation (n - 1); 0 when n == 1, NAN when n == 0. */
double rp_stddev(const double *v, int n);
/* Percentile q in [0,100] of sorted s (n), linear interpolation; NAN if n == 0. */
double rp_percentile_sorted(const double *s, int n, double q);
void rp_sort_doubles(double *v, int n);

/* Numeric member `key` of the top-level JSON object `json`; TB_OK, or
 * TB_ERR_NOT_FOUND when absent / not a number, TB_ERR_FORMAT on malformed
 * JSON (message names the byte offset). */
int rp_json_number(const char *json, const char *key, double *out);

/* "%.2f"-style number with `prec` decimals, or "—" for NAN/inf, into buf. */
const char *rp_fmt(char *buf, size_t n, double v, int prec);
/* Bytes as "1.23 GiB" / "456.7 MiB" / "12.0 KiB". */
const char *rp_fmt_bytes(char *buf, size_t n, double bytes);
/* Parameter count as "1.10 B" / "260.5 M" / "12.3 K". */
const char *rp_fmt_count(char *buf, size_t n, double count);

/* ===================================================================== */
/* Document: Markdown and HTML written side by side (report_doc.c)        */
/* ===================================================================== */

typedef struct rp_doc {
    rp_buf_t md, html;
    int in_table, n_cols;
    char align[32];     /* current table: 'l' / 'r' per column */
} rp_doc_t;

void rp_doc_begin(rp_doc_t *d, const char *title);
void rp_doc_end(rp_doc_t *d);
void rp_doc_free(rp_doc_t *d);
void rp_doc_heading(rp_doc_t *d, int level, const char *text);
void rp_doc_para(rp_doc_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rp_doc_note(rp_doc_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* align: one char per column, 'l' or 'r'. */
void rp_doc_table(rp_doc_t *d, int n_cols, const char *const *head, const char *align);
void rp_doc_row(rp_doc_t *d, const char *const *cells);
void rp_doc_table_end(rp_doc_t *d);
/* Preformatted block (key: value lines). */
void rp_doc_pre(rp_doc_t *d, const char *text);
/* A rendered chart: Markdown links dir-relative files, HTML inlines the
 * sanitised SVG read from dir/name.svg. TB_ERR_IO when it cannot be read. */
int rp_doc_chart(rp_doc_t *d, const char *dir, const char *name, const char *title);

/* Strip what a standalone SVG needs but inline HTML must not carry: the
 * XML prolog, DOCTYPE (external DTD), xmlns attributes, comments; prefix
 * ids and #refs with `idp` so several charts can live in one page. */
int rp_svg_inline(const char *svg, const char *idp, rp_buf_t *out);

/* ===================================================================== */
/* gnuplot (report_gnuplot.c)                                             */
/* ===================================================================== */

/* Resolve the program: explicit, else $TB_GNUPLOT, else "gnuplot" on PATH.
 * Fills path (absolute or as found); TB_ERR_NOT_FOUND with a message
 * naming what was looked for. */
int rp_gnuplot_find(const char *explicit_prog, char *path, size_t n);
/* Run `path script` with the working directory dir, stderr into
 * dir/<script>.log (removed on success). TB_ERR_IO when it fails. */
int rp_gnuplot_run(const char *path, const char *dir, const char *script);

/* ===================================================================== */
/* Tables and charts                                                      */
/* ===================================================================== */

typedef struct rp_ctx {
    const tb_report_opts_t *opts;
    rp_set_t *set;
    rp_doc_t *doc;
    unsigned char *in_base, *in_cmp;    /* (n_runs) or NULL */
    char gnuplot[4096];                 /* "" when not rendering       */
    tb_report_result_t *res;
} rp_ctx_t;

/* Each adds its section to the document. */
int rp_tables_write(rp_ctx_t *c);           /* report_tables.c  */
int rp_provenance_write(rp_ctx_t *c);       /* report_tables.c  */
int rp_compare_write(rp_ctx_t *c);          /* report_tables.c  */
int rp_engines_write(rp_ctx_t *c);          /* report_engines.c: ternbench beside a peer */
int rp_groups_write(rp_ctx_t *c);           /* report_groups.c: runs of one group */
int rp_states_write(rp_ctx_t *c);           /* report_states.c: --split */
int rp_charts_write(rp_ctx_t *c);           /* report_charts.c  */
int rp_claims_write(rp_ctx_t *c);           /* report_claims.c: the claims table and chart */

/* Chart plumbing shared by report_charts*.c (report_charts.c). A chart
 * with data: write NAME.dat and NAME.gp, render, add to the document. */
typedef struct rp_chart {
    const char *name;       /* file stem                           */
    const char *title;      /* section heading                     */
    rp_buf_t dat;           /* data file text                      */
    rp_buf_t body;          /* gnuplot commands after the terminal */
    int width, height;      /* pixels                              */
} rp_chart_t;

int rp_chart_emit(rp_ctx_t *c, rp_chart_t *ch);
void rp_chart_skip(rp_ctx_t *c, const char *title, const char *why);
/* Chart title lines naming the model(s), host(s) and build(s) of the set
 * (or of run `only`), lines separated by '\n'. */
void rp_chart_subtitle(rp_ctx_t *c, const rp_run_t *only, rp_buf_t *out);
/* Quote s as a gnuplot double-quoted string literal into out. */
void rp_gp_quote(rp_buf_t *out, const char *s);

int rp_charts_time_write(rp_ctx_t *c);      /* report_charts_time.c: sustained, ITL CDF */
int rp_quality_write(rp_ctx_t *c);          /* report_quality.c: speed and quality table */
int rp_quality_chart(rp_ctx_t *c);          /* report_quality.c: decode tok/s against mean KLD */

#endif
