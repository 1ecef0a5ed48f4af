/*
 * report.h — plotted reports from the ternbench results database.
 *
 * Reads runs from the SQLite store (results/schema.sql, opened read-only),
 * and writes into an output directory:
 *
 *     report.md      llama-bench-style tables, latency, stability, provenance
 *     report.html    the same, self-contained: CSS inline, every SVG inlined,
 *                    no reference to anything outside the file
 *     NAME.dat       one data file per chart (whitespace columns, # header)
 *     NAME.gp        the gnuplot script: `cd DIR && gnuplot NAME.gp` renders
 *     NAME.svg/.png  NAME.svg and NAME.png again
 *
 * gnuplot is run as an external program (fork + exec, never a shell). When
 * it cannot be found the tables, .dat and .gp files are still written and
 * the result carries one warning. A chart whose data is absent is skipped
 * with a note in the report, never drawn empty.
 *
 * Errors follow the engine's model: functions return TB_OK or a negative
 * tb_status_t and set the sticky message (tb_last_error()). Nothing here
 * prints or exits.
 */
#ifndef TB_REPORT_H
#define TB_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#define TB_REPORT_MAX_RUNS 256

/* Which runs a selector picks. Exactly one kind per selector. */
typedef enum tb_report_sel_kind {
    TB_REPORT_SEL_LAST = 0,   /* the n most recent runs (by id)          */
    TB_REPORT_SEL_RUNS,       /* explicit run ids                        */
    TB_REPORT_SEL_TAG,        /* runs tagged key=value                   */
    TB_REPORT_SEL_COMMIT,     /* runs whose build git_commit starts with value */
    TB_REPORT_SEL_FORMAT,     /* runs whose model main_type equals value (case-insensitive) */
    TB_REPORT_SEL_MODEL,      /* runs whose model name equals value      */
} tb_report_sel_kind_t;

typedef struct tb_report_sel {
    tb_report_sel_kind_t kind;
    int n;                              /* LAST: count; RUNS: entries used in ids */
    int64_t ids[TB_REPORT_MAX_RUNS];    /* RUNS                                   */
    char key[64];                       /* TAG                                    */
    char value[128];                    /* TAG, COMMIT, FORMAT, MODEL             */
} tb_report_sel_t;

typedef struct tb_report_opts {
    const char *db_path;        /* results database (opened read-only)              */
    const char *out_dir;        /* created if absent (one level)                    */
    tb_report_sel_t sel;        /* runs to report (ignored when comparing)          */
    bool compare;               /* baseline/compare given: report their union       */
    tb_report_sel_t baseline;   /* speedup = compare ÷ baseline per matching test   */
    tb_report_sel_t target;     /* the "compare" selection                          */
    bool diffable;              /* omit timestamps and filesystem paths             */
    bool no_charts;             /* write tables only (no .dat/.gp/.svg/.png)        */
    const char *gnuplot;        /* program to run; NULL: $TB_GNUPLOT, else "gnuplot" on PATH */
    double split_gbps;          /* > 0: a table of repetitions by machine state split here */
} tb_report_opts_t;

typedef struct tb_report_result {
    int n_runs;                 /* runs in the report                               */
    int n_charts;               /* charts with data (scripts written)               */
    int n_rendered;             /* charts rendered to SVG and PNG                   */
    int n_skipped;              /* charts skipped for lack of data                  */
    bool gnuplot_missing;       /* charts not rendered: gnuplot not found           */
    char warning[512];          /* one human-readable warning, "" when none         */
} tb_report_result_t;

/* Defaults: no database, --last 1, charts on. */
tb_report_opts_t tb_report_default_opts(void);

/* Parse a selector as given to --baseline/--compare:
 *   "12" or "12,14"      run ids
 *   "last" / "last:N"    most recent run(s)
 *   "tag:K=V" or "K=V"   tagged runs
 *   "commit:SHA"         build commit prefix
 *   "format:TYPE"        model main weight type (tq2_0, q4_0, f16, ...)
 *   "model:NAME"         model name
 * TB_ERR_ARG with a message naming the text on anything else. */
int tb_report_parse_sel(const char *text, tb_report_sel_t *out);

/* The run ids sel picks in db (an open results database), in order, into
 * *ids (allocated; free it) and *n. strict: a RUNS id that is absent is
 * TB_ERR_NOT_FOUND; else it is left out. The report's and compare's one
 * reading of a selector. */
typedef struct sqlite3 sqlite3;
int tb_report_sel_ids(sqlite3 *db, const tb_report_sel_t *sel, bool strict, int64_t **ids, int *n);

/* Write the whole report. res may be NULL. Returns TB_OK even when charts
 * could not be rendered (see res->warning); an error only when the database
 * cannot be read, the selection is empty, or the output cannot be written. */
int tb_report_write(const tb_report_opts_t *opts, tb_report_result_t *res);

#endif
