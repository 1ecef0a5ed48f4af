/*
 * count_baseline.c — the baseline file of `ternbench count`: a small text
 * file in the repository holding the instruction counts the gate compares
 * against (see count.h).
 *
 * Format: '#' lines are comments; then
 *     isa TIER
 *     compiler TEXT...
 *     entry NAME INSTRUCTIONS UNITS UNIT THRESHOLD_PCT
 * one `entry` line per counted region (INSTRUCTIONS over UNITS calls or
 * tokens, UNIT instr/call or instr/token). Any other line is an error
 * naming the file and the line.
 */
#include "commands.h"
#include "count.h"
#include "facts.h"
#include "infer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BASE 128

typedef struct base_entry {
    char name[NAME_LEN];
    uint64_t instr;
    int units;
    double threshold;        /* fraction */
    int seen;
} base_entry_t;

typedef struct baseline {
    char isa[32];
    char compiler[256];
    base_entry_t e[MAX_BASE];
    int n;
} baseline_t;

int count_baseline_write(const char *path, const count_entry_t *e, int n, const char *isa, double threshold) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) { fprintf(stderr, "ternbench count: --update-baseline %s: %s\n", path, strerror(errno)); return 1; }
    tb_build_facts_t b;
    tb_facts_build(&b);
    fprintf(f, "# Instruction counts of `ternbench count` (valgrind --tool=callgrind), the baseline\n"
               "# tools/test.sh checks every build against (`ternbench count --baseline FILE`).\n"
               "# After an intended change, regenerate it from a release build and commit it:\n"
               "#     build/bench/ternbench count --update-baseline %s\n"
               "# Counts depend on the compiler and the kernel tier recorded below. The last\n"
               "# column is each entry's threshold in percent (edit it to loosen one entry).\n"
               "isa %s\ncompiler %s\n"
               "# entry NAME INSTRUCTIONS UNITS UNIT THRESHOLD_PCT\n",
            path, isa, b.compiler);
    for (int i = 0; i < n; i++)
        fprintf(f, "entry %s %llu %d %s %g\n", e[i].name, (unsigned long long)e[i].instr, e[i].units,
                e[i].unit, threshold * 100);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "ternbench count: --update-baseline %s: %s\n", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    fprintf(stderr, "count: wrote %d entries to %s\n", n, path);
    return 0;
}

static int baseline_read(const char *path, baseline_t *bl) {
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "ternbench count: --baseline %s: %s\n", path, strerror(errno)); return 2; }
    memset(bl, 0, sizeof *bl);
    char line[1024];
    int ln = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        ln++;
        if (!strchr(line, '\n') && !feof(f)) {
            fprintf(stderr, "ternbench count: %s:%d: line too long\n", path, ln);
            rc = 2;
            break;
        }
        line[strcspn(line, "\r\n")] = 0;
        char *p = line + strspn(line, " \t");
        if (!*p || *p == '#') continue;
        if (!strncmp(p, "isa ", 4)) { snprintf(bl->isa, sizeof bl->isa, "%s", p + 4); continue; }
        if (!strncmp(p, "compiler ", 9)) { snprintf(bl->compiler, sizeof bl->compiler, "%s", p + 9); continue; }
        base_entry_t be = {0};
        char unit[32], name[NAME_LEN], extra[2];
        unsigned long long ir;
        double thr;
        if (strncmp(p, "entry ", 6) ||
            sscanf(p + 6, "%159s %llu %d %31s %lf %1s", name, &ir, &be.units, unit, &thr, extra) != 5 ||
            be.units < 1 || !(thr >= 0 && thr < 100)) {
            fprintf(stderr, "ternbench count: %s:%d: expected 'entry NAME INSTRUCTIONS UNITS UNIT THRESHOLD_PCT'"
                            " (or isa/compiler/#), got '%s'\n", path, ln, p);
            rc = 2;
            break;
        }
        if (bl->n == MAX_BASE) { fprintf(stderr, "ternbench count: %s:%d: more than %d entries\n", path, ln, MAX_BASE); rc = 2; break; }
        memcpy(be.name, name, sizeof be.name);
        be.instr = ir;
        be.threshold = thr / 100;
        bl->e[bl->n++] = be;
    }
    if (!rc && ferror(f)) { fprintf(stderr, "ternbench count: %s: read error\n", path); rc = 2; }
    fclose(f);
    if (!rc && !bl->isa[0]) { fprintf(stderr, "ternbench count: %s: no 'isa' line\n", path); rc = 2; }
    return rc;
}

int count_baseline_validate(const char *path) {
    static baseline_t bl;
    return baseline_read(path, &bl);
}

int count_baseline_check(const char *path, const count_entry_t *e, int n, double threshold,
                         const char *isa, int json) {
    static baseline_t bl;
    int rc = baseline_read(path, &bl);
    if (rc) return rc;
    if (strcmp(bl.isa, isa)) {
        fprintf(stderr, "ternbench count: %s was counted at tier %s, this run at %s: not comparable\n",
                path, bl.isa, isa);
        return 2;
    }
    tb_build_facts_t b;
    tb_facts_build(&b);
    if (bl.compiler[0] && strcmp(bl.compiler, b.compiler))
        fprintf(stderr, "ternbench count: warning: %s was made with %s, this build with %s;"
                        " counts may differ for that alone\n", path, bl.compiler, b.compiler);
    int regressed = 0, improved = 0, absent = 0;
    if (!json) {
        printf("count against %s (tier %s)\n\n", path, isa);
        printf("| %-36s | %14s | %14s | %8s | %9s | %-12s |\n", "entry", "baseline", "current", "change", "threshold", "verdict");
        printf("|%.*s|%.*s|%.*s|%.*s|%.*s|%.*s|\n", 38, "--------------------------------------",
               16, "----------------", 16, "----------------", 10, "----------", 11, "-----------",
               14, "--------------");
    } else {
        printf("{\"baseline\":");
        cmd_json_str(path);
        printf(",\"entries\":[");
    }
    int first = 1;
    for (int i = 0; i < n; i++) {
        base_entry_t *be = NULL;
        for (int k = 0; k < bl.n; k++)
            if (!strcmp(bl.e[k].name, e[i].name)) be = &bl.e[k];
        double cur = count_per_unit(&e[i]);
        double base = be ? (double)be->instr / be->units : NAN;
        double thr = be ? be->threshold : threshold;
        double ratio = cur / base;
        const char *v = "new";
        if (be) {
            be->seen = 1;
            tb_infer_verdict_t vd = tb_infer_verdict(ratio, ratio, thr, TB_INFER_LOWER_BETTER);
            v = tb_infer_verdict_name(vd);
            regressed += vd == TB_VERDICT_REGRESSED;
            improved += vd == TB_VERDICT_IMPROVED;
        }
        if (json) {
            printf("%s{\"name\":", first ? "" : ",");
            cmd_json_str(e[i].name);
            printf(",\"baseline\":");
            if (be) printf("%.1f", base); else printf("null");
            printf(",\"current\":%.1f,\"ratio\":", cur);
            if (be) printf("%.6f", ratio); else printf("null");
            printf(",\"threshold_pct\":%g,\"verdict\":\"%s\"}", thr * 100, v);
        } else {
            char bs[32] = "-", ch[32] = "-";
            if (be) {
                snprintf(bs, sizeof bs, "%.1f", base);
                snprintf(ch, sizeof ch, "%+.2f %%", (ratio - 1) * 100);
            }
            printf("| %-36s | %14s | %14.1f | %8s | %7g %% | %-12s |\n", e[i].name, bs, cur, ch, thr * 100,
                   !strcmp(v, "regressed") ? "**regressed**" : v);
        }
        first = 0;
    }
    for (int k = 0; k < bl.n; k++)
        if (!bl.e[k].seen) {
            absent++;
            if (json) {
                printf("%s{\"name\":", first ? "" : ",");
                cmd_json_str(bl.e[k].name);
                printf(",\"baseline\":%.1f,\"current\":null,\"ratio\":null,\"threshold_pct\":%g,\"verdict\":\"absent\"}",
                       (double)bl.e[k].instr / bl.e[k].units, bl.e[k].threshold * 100);
            } else {
                printf("| %-36s | %14.1f | %14s | %8s | %7g %% | %-12s |\n", bl.e[k].name,
                       (double)bl.e[k].instr / bl.e[k].units, "-", "-", bl.e[k].threshold * 100, "absent");
            }
            first = 0;
        }
    if (json) {
        printf("],\"regressed\":%d,\"improved\":%d,\"absent\":%d}\n", regressed, improved, absent);
    } else {
        printf("%d regressed, %d improved, %d absent from this run\n", regressed, improved, absent);
        if (regressed || improved)
            printf("if the change is intended: ternbench count --update-baseline %s\n", path);
    }
    return regressed ? 1 : 0;
}
