/*
 * cmd_results.c — reading results back:
 *   ternbench list   [--db PATH] [--last N]
 *   ternbench show   RUN [--db PATH]            (RUN: id, or uuid prefix; find_run)
 *   ternbench export [--db PATH] [--format csv|json|md] [--run RUN]... [--all]
 * export writes one row per measurement (repetition >= 0, and the -1
 * summaries); --all adds the spread rows ("metric:stddev" ...).
 */
#include "analysis.h"
#include "commands.h"
#include "peers.h"
#include "store.h"
#include "ternbench.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sqlite3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ===================================================================== */
/* Shared                                                                 */
/* ===================================================================== */

/* Open the store for reading (tb_store_open_read): it writes only when
 * something is due and the file is writable; say what was done or is
 * pending. */
static tb_store_t *open_store(const char *cmd, const char *db) {
    tb_store_t *s;
    tb_store_read_info_t info;
    if (tb_store_open_read(db, &s, &info) != TB_OK) {
        fprintf(stderr, "ternbench %s: %s\n", cmd, tb_last_error());
        return NULL;
    }
    if (info.n_recovered > 0)
        fprintf(stderr, "ternbench %s: marked %d run(s) left by dead processes as interrupted\n", cmd,
                info.n_recovered);
    const char *why = info.write_error[0] ? info.write_error : "the database is read-only";
    if (info.old_version > 0)
        fprintf(stderr, "ternbench %s: %s has schema version %d (this build: %d) and cannot be migrated (%s): "
                "read through a migrated copy in memory; the file is unchanged\n", cmd, db, info.old_version,
                tb_store_version(), why);
    if (info.n_pending > 0)
        fprintf(stderr, "ternbench %s: %d run(s) of dead processes still show 'running': recovery pending (%s); "
                "the next writable open marks them interrupted\n", cmd, info.n_pending, why);
    return s;
}

/* Prepare or report. */
static sqlite3_stmt *prep(sqlite3 *db, const char *cmd, const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "ternbench %s: %s\n", cmd, sqlite3_errmsg(db));
        return NULL;
    }
    return st;
}

static const char *col(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

/* How RUN names a run (the rule the usage texts state): all digits is a
 * run id, never a uuid; "id:N" the same explicitly; "uuid:PREFIX" a uuid
 * prefix of any length; otherwise a uuid prefix of at least
 * RUN_UUID_MIN_PREFIX hex digits (dashes allowed). */
#define RUN_UUID_MIN_PREFIX 8
#define RUN_RULE "RUN is a run id (digits, as `list` shows), or a uuid prefix of at least 8 hex\n" \
                 "digits, or uuid:PREFIX (any length) / id:N to say which explicitly\n"

/* Resolve RUN to a run id; -1 (message printed) if malformed, unknown or
 * ambiguous. */
static int64_t find_run(sqlite3 *db, const char *cmd, const char *arg) {
    const char *a = arg;
    bool by_id = false, by_uuid = false;
    if (!strncmp(a, "id:", 3)) { a += 3; by_id = true; }
    else if (!strncmp(a, "uuid:", 5)) { a += 5; by_uuid = true; }
    size_t n_digits = strspn(a, "0123456789"), n_hex = 0;
    for (const char *c = a; *c; c++) n_hex += *c != '-';
    bool hex = *a && strspn(a, "0123456789abcdefABCDEF-") == strlen(a);
    if (!by_uuid && *a && !a[n_digits]) by_id = true;
    else if (by_id || !hex || (!by_uuid && n_hex < RUN_UUID_MIN_PREFIX)) {
        fprintf(stderr, "ternbench %s: \"%s\" is not a run: " RUN_RULE, cmd, arg);
        return -1;
    }
    char low[64];
    if (!by_id) {   /* uuids are stored lower-case */
        if (strlen(a) >= sizeof low) { fprintf(stderr, "ternbench %s: no run matches \"%s\"\n", cmd, arg); return -1; }
        for (size_t k = 0; k <= strlen(a); k++) low[k] = (char)(a[k] >= 'A' && a[k] <= 'F' ? a[k] + 32 : a[k]);
    }
    long long want = -1;
    if (by_id && cmd_parse_ll(a, 0, INT64_MAX, &want)) want = -1;   /* too many digits: no such run */
    sqlite3_stmt *st = prep(db, cmd, by_id ? "SELECT id FROM runs WHERE id = ?1"
                                           : "SELECT id FROM runs WHERE substr(uuid, 1, length(?1)) = ?1");
    if (!st) return -1;
    int64_t id = -1;
    int n = 0, rc = by_id ? sqlite3_bind_int64(st, 1, want) : sqlite3_bind_text(st, 1, low, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) { id = sqlite3_column_int64(st, 0); n++; }
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "ternbench %s: %s\n", cmd, sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    if (n == 0) fprintf(stderr, "ternbench %s: no run %s \"%s\"\n", cmd, by_id ? "has the id" : "has a uuid starting", arg);
    if (n > 1) fprintf(stderr, "ternbench %s: \"%s\" is the start of %d runs' uuids; give more of it\n", cmd, arg, n);
    return n == 1 ? id : -1;
}

/* ===================================================================== */
/* list                                                                   */
/* ===================================================================== */

static const char list_usage[] = "usage: ternbench list [--db PATH] [--last N]\n";

int cmd_list(int argc, char **argv) {
    const char *db = tb_store_default_path();
    long long last = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((!strcmp(a, "--db") || !strcmp(a, "--last")) && !v) return cmd_arg_missing("list", a, list_usage);
        if (!strcmp(a, "--db")) db = argv[++i];
        else if (!strcmp(a, "--last")) {
            if (cmd_parse_ll(argv[++i], 1, INT64_MAX, &last)) {
                fprintf(stderr, "ternbench list: --last expects a count >= 1, got '%s'\n", argv[i]);
                return 2;
            }
        } else {
            return cmd_arg_reject("list", a, list_usage);
        }
    }
    tb_store_t *s = open_store("list", db);
    if (!s) return 1;
    sqlite3_stmt *st = prep(tb_store_db(s), "list",
        "SELECT * FROM (SELECT r.id, substr(r.uuid, 1, 8), r.started_utc, r.status, sc.name,"
        " COALESCE(m.name, m.arch, ''), COALESCE(m.main_type, ''), r.isa, r.threads,"
        " (SELECT count(*) FROM tests t WHERE t.run_id = r.id),"
        " COALESCE((SELECT group_concat(key || '=' || value, ',') FROM run_tags g WHERE g.run_id = r.id), '')"
        " FROM runs r JOIN scenarios sc ON sc.id = r.scenario_id LEFT JOIN models m ON m.id = r.model_id"
        " ORDER BY r.id DESC LIMIT ?) ORDER BY 1");
    if (!st) { tb_store_close(s); return 1; }
    sqlite3_bind_int64(st, 1, last > 0 ? last : -1);
    printf("%-5s %-8s %-20s %-11s %-28s %-24s %-6s %-7s %5s  %s\n", "id", "uuid", "started (UTC)",
           "status", "scenario", "model", "type", "isa", "tests", "tags");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        printf("%-5s %-8s %-20s %-11s %-28s %-24s %-6s %-7s %5s  %s\n", col(st, 0), col(st, 1),
               col(st, 2), col(st, 3), col(st, 4), col(st, 5), col(st, 6), col(st, 7), col(st, 9),
               col(st, 10));
    int ok = rc == SQLITE_DONE;
    if (!ok) fprintf(stderr, "ternbench list: %s\n", sqlite3_errmsg(tb_store_db(s)));
    sqlite3_finalize(st);
    tb_store_close(s);
    return ok ? 0 : 1;
}

/* ===================================================================== */
/* show                                                                   */
/* ===================================================================== */

static const char show_usage[] = "usage: ternbench show RUN [--db PATH]\n" RUN_RULE;

/* Print "name: value" for each column of the single row of sql(?1 = id). */
static int show_row(sqlite3 *db, const char *title, const char *sql, int64_t id) {
    sqlite3_stmt *st = prep(db, "show", sql);
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        printf("%s\n", title);
        for (int i = 0; i < sqlite3_column_count(st); i++)
            if (sqlite3_column_type(st, i) != SQLITE_NULL)
                printf("  %-22s %s\n", sqlite3_column_name(st, i), col(st, i));
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

int cmd_show(int argc, char **argv) {
    const char *db = tb_store_default_path(), *run = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--db") && i + 1 >= argc) return cmd_arg_missing("show", argv[i], show_usage);
        if (!strcmp(argv[i], "--db")) db = argv[++i];
        else if (argv[i][0] != '-' && !run) run = argv[i];
        else return cmd_arg_reject("show", argv[i], show_usage);
    }
    if (!run) { fprintf(stderr, "ternbench show: no RUN given\n%s", show_usage); return 2; }
    tb_store_t *s = open_store("show", db);
    if (!s) return 1;
    sqlite3 *d = tb_store_db(s);
    int64_t id = find_run(d, "show", run);
    if (id < 0) { tb_store_close(s); return 1; }
    int bad = 0;
    bad |= show_row(d, "run", "SELECT r.id, uuid, started_utc, ended_utc, status, pid, threads, isa, kv_type,"
                    " bandwidth_gbps_before, bandwidth_gbps_after, record_tokens, error,"
                    " (SELECT group_concat(key || '=' || value, ', ') FROM run_tags WHERE run_id = r.id) AS tags"
                    " FROM runs r WHERE r.id = ?1", id);
    bad |= show_row(d, "scenario", "SELECT s.name, s.source_path, s.hash FROM scenarios s JOIN runs r"
                    " ON r.scenario_id = s.id WHERE r.id = ?1", id);
    bad |= show_row(d, "model", "SELECT m.name, m.path, m.arch, m.main_type, m.weight_types, m.file_bytes,"
                    " m.n_params, m.n_params_active, m.bytes_per_token, m.synth_preset, m.synth_seed,"
                    " m.content_hash FROM models m JOIN runs r ON r.model_id = m.id WHERE r.id = ?1", id);
    bad |= show_row(d, "host", "SELECT h.hostname, h.cpu_vendor, h.cpu_brand, h.cpu_family, h.cpu_model,"
                    " h.cpu_stepping, h.cores, h.threads, h.l1d_kb, h.l2_kb, h.l3_kb, h.mem_bytes, h.os,"
                    " h.kernel FROM hosts h JOIN runs r ON r.host_id = h.id WHERE r.id = ?1", id);
    bad |= show_row(d, "build", "SELECT b.version, b.git_commit, b.git_dirty, b.compiler, b.cflags,"
                    " b.build_type, b.isa_best FROM builds b JOIN runs r ON r.build_id = b.id WHERE r.id = ?1", id);

    /* per test: every metric's median over repetitions ± stddev, derived
     * from the per-repetition rows (analysis.h) */
    sqlite3_stmt *st = prep(d, "show", "SELECT id, COALESCE(thermal_state, ''), COALESCE(error, '')"
                                       " FROM tests WHERE run_id = ?1 ORDER BY id");
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        printf("tests (median over repetitions ± stddev, n repetitions)\n");
        while (sqlite3_step(st) == SQLITE_ROW) {
            tb_an_test_t t;
            if (tb_an_test_load(d, sqlite3_column_int64(st, 0), &t) != TB_OK) {
                fprintf(stderr, "ternbench show: %s\n", tb_last_error());
                bad = 1;
                continue;
            }
            printf("  %s  [%s, thermal %s]%s%s\n", t.label, t.status, col(st, 1),
                   *col(st, 2) ? "  error: " : "", col(st, 2));
            for (int m = 0; m < TB_M_COUNT; m++) {
                double v[1024];
                size_t n = 0;
                const double *x = tb_an_series(&t, (tb_metric_id_t)m);
                for (int r = 0; r < t.n_rep && n < 1024; r++)
                    if (isfinite(x[r])) v[n++] = x[r];
                if (!n) continue;
                tb_stats_summary_t sm;
                tb_stats_summarize(v, n, &sm);
                printf("    %-26s %14.4f ± %-10.4f %-8s n=%zu\n", tb_metrics[m].name, sm.median, sm.stddev,
                       tb_metrics[m].unit, n);
            }
            tb_an_test_free(&t);
        }
        sqlite3_finalize(st);
    } else bad = 1;
    /* claim checks recorded with the run (docs/claims.md) */
    st = prep(d, "show", "SELECT section, device, ctx, head, printf('%.1f', roofline_tok_s), CASE WHEN"
                         " projected_lo_tok_s IS NULL THEN '-' ELSE printf('[%.1f, %.1f]', projected_lo_tok_s,"
                         " projected_hi_tok_s) END, CASE WHEN claimed_tok_s IS NULL THEN '-' ELSE"
                         " printf('%g', claimed_tok_s) END, coalesce(verdict, '-'), CASE WHEN measured_tok_s IS NULL"
                         " THEN '-' ELSE printf('%.1f', measured_tok_s) END FROM claims WHERE run_id = ?1"
                         " ORDER BY section, idx");
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        int first = 1;
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (first) printf("claims (section device ctx head: roofline, projected, claimed verdict, measured tok/s)\n");
            first = 0;
            printf("  %s %s %s %s: roofline %s, projected %s, claimed %s %s, measured %s\n", col(st, 0), col(st, 1),
                   col(st, 2), col(st, 3), col(st, 4), col(st, 5), col(st, 6), col(st, 7), col(st, 8));
        }
        sqlite3_finalize(st);
    } else bad = 1;
    st = prep(d, "show", "SELECT sensor, reason FROM sensor_absent WHERE run_id = ?1 ORDER BY sensor");
    if (st) {
        sqlite3_bind_int64(st, 1, id);
        int first = 1;
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (first) printf("sensors absent\n");
            first = 0;
            printf("  %-22s %s\n", col(st, 0), col(st, 1));
        }
        sqlite3_finalize(st);
    }
    tb_store_close(s);
    return bad ? 1 : 0;
}

/* ===================================================================== */
/* export                                                                 */
/* ===================================================================== */

static void csv_field(const char *s) {
    if (!strpbrk(s, ",\"\n\r")) { fputs(s, stdout); return; }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static const char export_usage[] =
    "usage: ternbench export [--db PATH] [--format csv|json|md|llama-bench-json|llama-bench-sql]\n"
    "                        [--run RUN]... [--all]\n" RUN_RULE;

void cmd_json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch == '\n') fputs("\\n", stdout);
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

int cmd_export(int argc, char **argv) {
    const char *db = tb_store_default_path(), *format = "csv";
    const char **runs = calloc((size_t)argc, sizeof *runs);
    int n_runs = 0, all = 0;
    if (!runs) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool valued = !strcmp(a, "--db") || !strcmp(a, "--format") || !strcmp(a, "--run");
        if (valued && i + 1 >= argc) { free(runs); return cmd_arg_missing("export", a, export_usage); }
        if (!strcmp(a, "--db")) db = argv[++i];
        else if (!strcmp(a, "--format")) format = argv[++i];
        else if (!strcmp(a, "--run")) runs[n_runs++] = argv[++i];
        else if (!strcmp(a, "--all")) all = 1;
        else { free(runs); return cmd_arg_reject("export", a, export_usage); }
    }
    int fmt = !strcmp(format, "csv") ? 0 : !strcmp(format, "json") ? 1 : !strcmp(format, "md") ? 2
            : !strcmp(format, "llama-bench-json") ? 3 : !strcmp(format, "llama-bench-sql") ? 4 : -1;
    if (fmt < 0) {
        fprintf(stderr, "ternbench export: --format %s: expected csv, json, md, llama-bench-json"
                        " or llama-bench-sql\n", format);
        free(runs);
        return 2;
    }
    tb_store_t *s = open_store("export", db);
    if (!s) { free(runs); return 1; }
    sqlite3 *d = tb_store_db(s);
    /* the selected run ids go into a temp table so one query serves all cases */
    int status = 0;
    if (sqlite3_exec(d, "CREATE TEMP TABLE sel (id INTEGER PRIMARY KEY)", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "ternbench export: %s\n", sqlite3_errmsg(d));
        status = 1;
        goto out;
    }
    for (int i = 0; i < n_runs; i++) {
        int64_t id = find_run(d, "export", runs[i]);
        if (id < 0) { status = 1; goto out; }
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO sel VALUES (%lld)", (long long)id);
        if (sqlite3_exec(d, sql, NULL, NULL, NULL) != SQLITE_OK) { status = 1; goto out; }
    }
    if (fmt >= 3) {   /* llama-bench's own schema (export_llamabench.c) */
        status = tb_export_llamabench(d, fmt == 4, n_runs == 0);
        goto out;
    }
    static const char *const cols[] = {"run_id", "run_uuid", "run_status", "scenario", "model",
                                       "model_type", "isa", "threads", "test_id", "section", "kind",
                                       "label", "thermal_state", "repetition", "metric", "value", "unit",
                                       "host", "commit", "engine", "format"};
    enum { NCOL = sizeof cols / sizeof cols[0] };
    sqlite3_stmt *st = prep(d, "export",
        "SELECT r.id, r.uuid, r.status, sc.name, COALESCE(md.name, ''), COALESCE(md.main_type, ''),"
        " r.isa, r.threads, t.id, t.section, t.kind, t.label, COALESCE(t.thermal_state, ''),"
        " m.repetition, m.metric, m.value, m.unit,"
        /* peers: the device, the build, the engine and where the run came from */
        " (SELECT CASE WHEN hostname <> '' THEN hostname ELSE cpu_brand END FROM hosts WHERE id = r.host_id),"
        " (SELECT git_commit FROM builds WHERE id = r.build_id), r.engine,"
        " COALESCE((SELECT format FROM imports WHERE id = r.import_id), 'ternbench')"
        " FROM measurements m JOIN tests t ON t.id = m.test_id JOIN runs r ON r.id = t.run_id"
        " JOIN scenarios sc ON sc.id = r.scenario_id LEFT JOIN models md ON md.id = r.model_id"
        " WHERE (?1 = 0 OR r.id IN (SELECT id FROM sel)) AND (?2 = 1 OR instr(m.metric, ':') = 0)"
        " ORDER BY r.id, t.id, m.repetition, m.metric");
    if (!st) { status = 1; goto out; }
    sqlite3_bind_int(st, 1, n_runs > 0);
    sqlite3_bind_int(st, 2, all);
    if (fmt == 0) {
        for (int i = 0; i < NCOL; i++) printf("%s%s", i ? "," : "", cols[i]);
        putchar('\n');
    } else if (fmt == 1) {
        printf("[");
    } else {
        printf("| run | label | thermal | rep | metric | value | unit |\n|---|---|---|---:|---|---:|---|\n");
    }
    int rc, n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (fmt == 0) {
            for (int i = 0; i < NCOL; i++) {
                if (i) putchar(',');
                if (i == 15) printf("%.17g", sqlite3_column_double(st, i));
                else csv_field(col(st, i));
            }
            putchar('\n');
        } else if (fmt == 1) {
            printf("%s\n  {", n ? "," : "");
            for (int i = 0; i < NCOL; i++) {
                printf("%s\"%s\": ", i ? ", " : "", cols[i]);
                int ty = sqlite3_column_type(st, i);
                if (i == 15) printf("%.17g", sqlite3_column_double(st, i));
                else if (ty == SQLITE_INTEGER) printf("%lld", (long long)sqlite3_column_int64(st, i));
                else cmd_json_str(col(st, i));
            }
            putchar('}');
        } else {
            printf("| %s | %s | %s | %s | %s | %.4f | %s |\n", col(st, 1), col(st, 11), col(st, 12),
                   col(st, 13), col(st, 14), sqlite3_column_double(st, 15), col(st, 16));
        }
        n++;
    }
    if (fmt == 1) printf("%s]\n", n ? "\n" : "");
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "ternbench export: %s\n", sqlite3_errmsg(d));
        status = 1;
    }
    sqlite3_finalize(st);
out:
    tb_store_close(s);
    free(runs);
    return status;
}
