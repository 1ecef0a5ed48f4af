/*
 * cmd_report.c — `ternbench report`: plotted report of recorded runs.
 *
 *   ternbench report [--db PATH] [--run ID... | --tag K=V | --last N] --out DIR
 *                    [--baseline SEL --compare SEL] [--split GBPS] [--diffable] [--no-charts]
 *
 * A thin layer over report/report.h: parse arguments, call
 * tb_report_write, print where the report is and at most one warning.
 */
#include "commands.h"
#include "../report/report.h"
#include "store.h"
#include "ternbench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f,
        "usage: ternbench report [--db PATH] [--run ID... | --tag K=V | --last N] --out DIR\n"
        "                        [--baseline SEL --compare SEL] [--split GBPS] [--diffable] [--no-charts]\n"
        "\n"
        "  --db PATH        results database (default " TB_STORE_DEFAULT_PATH ", or $TB_DB)\n"
        "  --run ID...      these runs (several ids, or --run repeated)\n"
        "  --tag K=V        runs tagged K=V\n"
        "  --last N         the N most recent runs (default: 1)\n"
        "  --out DIR        output directory (created): report.md, report.html, charts\n"
        "  --baseline SEL   with --compare: speedup columns (compare / baseline) per matching test\n"
        "  --compare SEL    SEL is ID[,ID...], last[:N], K=V or tag:K=V, commit:SHA,\n"
        "                   format:TYPE (tq2_0, q4_0, f16, ...) or model:NAME\n"
        "  --split GBPS     a table of every test's repetitions by machine state: low or high when\n"
        "                   both probes lie on one side of GBPS and agree, else mixed\n"
        "  --diffable       omit timestamps and paths (for golden files)\n"
        "  --no-charts      tables only\n"
        "\n"
        "environment: TB_GNUPLOT=PROGRAM  gnuplot to run (default: gnuplot on PATH)\n");
}

static int is_number(const char *s) {
    if (!*s) return 0;
    for (; *s; s++) if (*s < '0' || *s > '9') return 0;
    return 1;
}

/* Options followed by a value (--run takes its ids itself). */
static int takes_value(const char *a) {
    static const char *const opts[] = {"--db", "--out", "-o", "--tag", "--last", "--baseline", "--compare", "--split"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (!strcmp(a, opts[i])) return 1;
    return 0;
}

int cmd_report(int argc, char **argv) {
    tb_report_opts_t o = tb_report_default_opts();
    o.db_path = tb_store_default_path();
    int have_sel = 0, have_base = 0, have_cmp = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--diffable")) o.diffable = true;
        else if (!strcmp(a, "--no-charts")) o.no_charts = true;
        else if (!v && takes_value(a)) { fprintf(stderr, "ternbench report: %s needs a value\n", a); usage(stderr); return 2; }
        else if (!strcmp(a, "--db")) { o.db_path = v; i++; }
        else if (!strcmp(a, "--split")) {
            char *end;
            o.split_gbps = strtod(v, &end);
            if (end == v || *end || !(o.split_gbps > 0) || !isfinite(o.split_gbps)) {
                fprintf(stderr, "ternbench report: --split '%s': expected a bandwidth in GB/s above 0\n", v);
                return 2;
            }
            i++;
        }
        else if (!strcmp(a, "--out") || !strcmp(a, "-o")) { o.out_dir = v; i++; }
        else if (!strcmp(a, "--run")) {
            if (have_sel && o.sel.kind != TB_REPORT_SEL_RUNS) goto one_sel;
            if (!have_sel) o.sel.n = 0;
            have_sel = 1;
            o.sel.kind = TB_REPORT_SEL_RUNS;
            for (i++; i < argc && argv[i][0] != '-'; i++) {
                tb_report_sel_t s;
                if (tb_report_parse_sel(argv[i], &s) != TB_OK || s.kind != TB_REPORT_SEL_RUNS) {
                    fprintf(stderr, "ternbench report: --run: '%s' is not a run id\n", argv[i]);
                    return 2;
                }
                for (int k = 0; k < s.n && o.sel.n < TB_REPORT_MAX_RUNS; k++) o.sel.ids[o.sel.n++] = s.ids[k];
            }
            i--;
            if (o.sel.n == 0) { fprintf(stderr, "ternbench report: --run needs at least one id\n"); return 2; }
        } else if (!strcmp(a, "--tag") || !strcmp(a, "--last")) {
            if (have_sel) goto one_sel;
            have_sel = 1;
            char buf[256];
            snprintf(buf, sizeof buf, "%s%s", !strcmp(a, "--tag") ? "tag:" : "last:", v);
            if ((!strcmp(a, "--last") && !is_number(v)) || tb_report_parse_sel(buf, &o.sel) != TB_OK) {
                fprintf(stderr, "ternbench report: %s '%s': %s\n", a, v,
                        !strcmp(a, "--last") ? "expected a positive count" : tb_last_error());
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--baseline") || !strcmp(a, "--compare")) {
            tb_report_sel_t *s = !strcmp(a, "--baseline") ? &o.baseline : &o.target;
            if (tb_report_parse_sel(v, s) != TB_OK) {
                fprintf(stderr, "ternbench report: %s: %s\n", a, tb_last_error());
                return 2;
            }
            *(!strcmp(a, "--baseline") ? &have_base : &have_cmp) = 1;
            i++;
        } else {
            cmd_arg_reject("report", a, NULL);
            usage(stderr);
            return 2;
        }
    }
    if (!o.out_dir) { fprintf(stderr, "ternbench report: --out DIR is required\n"); usage(stderr); return 2; }
    if (have_base != have_cmp) {
        fprintf(stderr, "ternbench report: --baseline and --compare go together\n");
        return 2;
    }
    if (have_base && have_sel) {
        fprintf(stderr, "ternbench report: --baseline/--compare select the runs themselves;"
                        " drop --run/--tag/--last\n");
        return 2;
    }
    o.compare = have_base;

    tb_report_result_t res;
    if (tb_report_write(&o, &res) != TB_OK) {
        fprintf(stderr, "ternbench %s\n", tb_last_error());   /* messages start with "report: " */
        return 1;
    }
    if (res.warning[0]) fprintf(stderr, "ternbench report: warning: %s\n", res.warning);
    printf("report: %d run%s, %d chart%s rendered (%d skipped for lack of data) -> %s/report.html\n",
           res.n_runs, res.n_runs == 1 ? "" : "s", res.n_rendered, res.n_rendered == 1 ? "" : "s",
           res.n_skipped, o.out_dir);
    return 0;

one_sel:
    fprintf(stderr, "ternbench report: use one of --run, --tag, --last\n");
    return 2;
}
