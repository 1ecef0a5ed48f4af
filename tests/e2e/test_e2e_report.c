/*
 * test_e2e_report.c — the report fed from real runner output, end to end:
 * a scenario with every test kind (a sustained test whose context fills)
 * run by the built binary into a database, then `report` over it. Every
 * chart renders, the tables' figures are the medians of the recorded
 * repetition rows, the sustained chart draws every recorded window and
 * marks the ones that held the harness's context re-fill, `bench`
 * recording into the same database appears beside the scenario's run, and
 * the runs of an interleaved group are one table with ratios to the first.
 * Speed beside quality: the speed-and-quality table and the decode tok/s
 * against mean KLD chart from interleaved runs with [quality] tests.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "e2e.h"

#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SCENARIO[] =
    "[model]\nsynth = llama-tiny\nseed = 3\n"
    "[engine]\nthreads = 2\n"
    "[protocol]\nwarmup = 0\nrepetitions = 3\nbandwidth_probe = 4m\nthrottle_check = false\n"
    "[prefill]\nprompt_tokens = 16, 32\n"
    "[decode]\ntokens = 8\ndepths = 0, 16\n"
    "[ttft]\nprompt_tokens = 8\n"
    "[generate]\nprompt_tokens = 8\ntokens = 12\n"
    "[sustained]\ntokens = 120\nwindow = 20\nctx = 48\nprompt_tokens = 4\non_full = slide\n";

/* Median and sample stddev of the repetition rows of (label, metric). */
static void db_stat(sqlite3 *d, const char *label, const char *metric, double *med, double *sd) {
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT m.value FROM measurements m JOIN tests t ON t.id = m.test_id"
             " WHERE t.label = '%s' AND m.metric = '%s' AND m.repetition >= 0 ORDER BY m.value", label, metric);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &st, NULL), SQLITE_OK);
    double v[16];
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 16) v[n++] = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    assert_int_equal(n, 3);
    double mean = (v[0] + v[1] + v[2]) / 3, ss = 0;
    for (int i = 0; i < 3; i++) ss += (v[i] - mean) * (v[i] - mean);
    *med = v[1];
    *sd = sqrt(ss / 2);
}

static void test_report_from_runner(void **state) {
    (void)state;
    e2e_write("all.ini", SCENARIO, (size_t)-1);
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "all.ini", "--db", "all.db", "-q");
    e2e_assert_clean(&r, "run all.ini");
    if (r.status != 0) fail_msg("run: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "all.db", "--last", "1", "--out", "rep");
    e2e_assert_clean(&r, "report");
    if (r.status != 0) fail_msg("report: exit %d: %s", r.status, r.err);
    /* every chart the data allows renders, none is skipped */
    if (!strstr(r.out, "(0 skipped") && !strstr(r.err, "(0 skipped"))
        fail_msg("report skipped a chart: %s %s", r.out, r.err);
    e2e_res_free(&r);

    char dbp[512];
    e2e_path(dbp, sizeof dbp, "all.db");
    sqlite3 *d;
    assert_int_equal(sqlite3_open_v2(dbp, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    char *md = e2e_slurp("rep/report.md", NULL);
    assert_non_null(md);
    /* the throughput table: each test's median ± stddev over the recorded repetitions */
    static const struct { const char *label, *metric; } rows[] = {
        {"pp16", "prefill_tok_per_s"}, {"pp32", "prefill_tok_per_s"},
        {"tg8@d0", "decode_tok_per_s"}, {"tg8@d16", "decode_tok_per_s"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double med, sd;
        db_stat(d, rows[i].label, rows[i].metric, &med, &sd);
        char want[128];
        snprintf(want, sizeof want, "| %s | %.2f ± %.2f |", rows[i].label, med, sd);
        if (!strstr(md, want)) fail_msg("report.md has no row '%s'", want);
    }
    /* the sustained chart: one data row per recorded window (the last partial one too),
     * the re-filled windows marked and drawn as their own series */
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(d, "SELECT t.run_id, t.id, count(*), sum(w.refills > 0) FROM windows w"
                                           " JOIN tests t ON t.id = w.test_id WHERE w.repetition = 0", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long run = sqlite3_column_int64(st, 0), tid = sqlite3_column_int64(st, 1);
    int n_win = sqlite3_column_int(st, 2), n_refill = sqlite3_column_int(st, 3);
    sqlite3_finalize(st);
    assert_int_equal(n_win, 6);          /* 120 tokens in windows of 20 */
    assert_true(n_refill >= 1);          /* ctx 48: the context filled */
    char name[128];
    snprintf(name, sizeof name, "rep/sustained_r%lld_t%lld.dat", run, tid);
    char *dat = e2e_slurp(name, NULL);
    assert_non_null(dat);
    int lines = 0, marked = 0;
    const char *p = strstr(dat, "context_refills\n");
    assert_non_null(p);
    for (p = strchr(p, '\n') + 1; *p && *p != '\n'; p = strchr(p, '\n') + 1) {
        double x, y, f;
        if (sscanf(p, "%lf %lf %lf", &x, &y, &f) != 3) fail_msg("window row: %.60s", p);
        lines++;
        marked += f > 0;
    }
    assert_int_equal(lines, n_win);
    assert_int_equal(marked, n_refill);
    free(dat);
    snprintf(name, sizeof name, "rep/sustained_r%lld_t%lld.gp", run, tid);
    char *gp = e2e_slurp(name, NULL);
    assert_non_null(gp);
    assert_non_null(strstr(gp, "context re-fill (not in stability)"));
    free(gp);
    free(md);
    sqlite3_close(d);

    /* a second run of the same host and build: its own chart still names them (a per-run
     * chart's subtitle is not de-duplicated against the other runs in the report) */
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "all.ini", "--db", "all.db", "-q");
    if (r.status != 0) fail_msg("second run: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "all.db", "--last", "2", "--out", "rep2");
    if (r.status != 0) fail_msg("report --last 2: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    assert_int_equal(sqlite3_open_v2(dbp, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(d, "SELECT run_id, id FROM tests WHERE kind = 'sustained'"
                                           " ORDER BY id DESC LIMIT 1", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long run2 = sqlite3_column_int64(st, 0), tid2 = sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    sqlite3_close(d);
    assert_true(run2 > run);
    snprintf(name, sizeof name, "rep2/sustained_r%lld_t%lld.gp", run2, tid2);
    gp = e2e_slurp(name, NULL);
    if (!gp) fail_msg("no chart %s", name);
    if (strstr(gp, "host:  (") || strstr(gp, "build: \"") || strstr(gp, "build: \n"))
        fail_msg("%s: subtitle without host or build", name);
    free(gp);

    /* --split: each test's repetitions by machine state; a split above any probe leaves every
     * repetition low or mixed, and the counts of a row add up to its repetitions */
    E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "all.db", "--last", "1", "--split", "100000", "--no-charts",
            "--out", "split");
    if (r.status != 0) fail_msg("report --split: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    md = e2e_slurp("split/report.md", NULL);
    assert_non_null(md);
    const char *sec = strstr(md, "## Repetitions by machine state");
    assert_non_null(sec);
    const char *row = strstr(sec, "| tg8@d0 | ");
    assert_non_null(row);
    int counts[6] = {0}, c = 0;
    for (const char *q = row + 10; *q && *q != '\n' && c < 6; q++) {
        if (*q == '|') { c++; continue; }
        if (*q == '(') counts[c] += atoi(q + 1);
    }
    if (counts[0] + counts[2] != 3 || counts[1] != 0) fail_msg("report --split: row %.160s", row);
    free(md);
    E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "all.db", "--split", "fast", "--out", "split2");
    assert_int_equal(r.status, 2);
    e2e_res_free(&r);

    /* bench into the same database: its run is a run like the others */
    E2E_RUN(&r, E2E_NO_LIMIT, "model", "synth", "--preset", "llama-tiny", "--out", "m.gguf", "--quiet");
    if (r.status != 0) fail_msg("model synth: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "m.gguf", "-p", "8", "-n", "4", "-r", "3", "--db", "all.db", "-q");
    if (r.status != 0) fail_msg("bench: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "all.db", "--last", "1", "--out", "rep2");
    if (r.status != 0) fail_msg("report of the bench run: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    md = e2e_slurp("rep2/report.md", NULL);
    assert_non_null(md);
    assert_int_equal(sqlite3_open_v2(dbp, &d, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    double med, sd;
    assert_int_equal(sqlite3_prepare_v2(d, "SELECT m.value FROM measurements m JOIN tests t ON t.id = m.test_id"
                                           " WHERE t.run_id = (SELECT max(id) FROM runs) AND t.label = 'tg4@d0'"
                                           " AND m.metric = 'decode_tok_per_s' ORDER BY m.value", -1, &st, NULL),
                     SQLITE_OK);
    double v[3];
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < 3) v[n++] = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    assert_int_equal(n, 3);
    med = v[1];
    double mean = (v[0] + v[1] + v[2]) / 3;
    sd = sqrt(((v[0] - mean) * (v[0] - mean) + (v[1] - mean) * (v[1] - mean) + (v[2] - mean) * (v[2] - mean)) / 2);
    char want[128];
    snprintf(want, sizeof want, "| tg4@d0 | %.2f ± %.2f |", med, sd);
    if (!strstr(md, want)) fail_msg("report of the bench run has no row '%s'", want);
    sqlite3_close(d);
    free(md);
}

/* [protocol] interleave = rep: the [model] types run as one group, one run each, taking turns
 * inside every repetition with the order reversed on odd ones — so the probe after A's
 * repetition 0 is the probe before B's, and after B's repetition 1 the one before A's. */
static void test_interleaved_types(void **state) {
    (void)state;
    e2e_write("il.ini", "[model]\nsynth = llama-tiny\ntype = q8_0, q4_0\nseed = 5\n"
                        "[engine]\nthreads = 2\ncpus = 0-1\n"
                        "[protocol]\nwarmup = 0\nrepetitions = 2\nbandwidth_probe = 1m\nthrottle_check = false\n"
                        "interleave = rep\n[decode]\ntokens = 4\n", (size_t)-1);
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "il.ini", "--db", "il.db", "-q");
    e2e_assert_clean(&r, "run il.ini");
    if (r.status != 0) fail_msg("run: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    char dbp[512];
    e2e_path(dbp, sizeof dbp, "il.db");
    char *q = e2e_db_query(dbp, "SELECT count(*), count(DISTINCT g.value), group_concat(i.value) FROM runs r"
                                " JOIN run_tags g ON g.run_id = r.id AND g.key = 'group'"
                                " JOIN run_tags i ON i.run_id = r.id AND i.key = 'group.index'"
                                " JOIN run_tags m ON m.run_id = r.id AND m.key = 'interleave' AND m.value = 'rep'"
                                " WHERE r.status = 'complete'");
    assert_string_equal(q, "2|1|0,1\n");
    free(q);
    /* [engine] cpus pinned the thread, and each run records the core it ran on */
    q = e2e_db_query(dbp, "SELECT group_concat(value) FROM run_tags WHERE key = 'cpus'");
    assert_string_equal(q, "0,1,0,1\n");
    free(q);
    /* (rep, side): A's after = B's before in rep 0; B's after = A's before in rep 1 */
    q = e2e_db_query(dbp, "WITH p AS (SELECT CAST(i.value AS INTEGER) AS k, m.repetition AS rep, m.metric, m.value"
                          " FROM measurements m JOIN tests t ON t.id = m.test_id JOIN run_tags i ON"
                          " i.run_id = t.run_id AND i.key = 'group.index')"
                          " SELECT (SELECT value FROM p WHERE k = 0 AND rep = 0 AND metric = 'bw_after_gbps') ="
                          " (SELECT value FROM p WHERE k = 1 AND rep = 0 AND metric = 'bw_before_gbps'),"
                          " (SELECT value FROM p WHERE k = 1 AND rep = 1 AND metric = 'bw_after_gbps') ="
                          " (SELECT value FROM p WHERE k = 0 AND rep = 1 AND metric = 'bw_before_gbps'),"
                          " (SELECT value FROM p WHERE k = 1 AND rep = 0 AND metric = 'bw_after_gbps') ="
                          " (SELECT value FROM p WHERE k = 1 AND rep = 1 AND metric = 'bw_before_gbps')");
    assert_string_equal(q, "1|1|1\n");
    free(q);
    /* the report shows the group as one table: each member's median and its ratio to the first's */
    E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "il.db", "--last", "2", "--out", "ilrep", "--no-charts");
    e2e_assert_clean(&r, "report il.db");
    if (r.status != 0) fail_msg("report: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    char *md = e2e_slurp("ilrep/report.md", NULL);
    assert_non_null(md);
    q = e2e_db_query(dbp, "SELECT t.label, group_concat(r.id || ':' || m.value, ' ') FROM (SELECT t.label, t.run_id,"
                          " m.value FROM measurements m JOIN tests t ON t.id = m.test_id WHERE m.metric ="
                          " 'decode_tok_per_s' AND m.repetition >= 0 ORDER BY t.run_id, m.repetition) m"
                          " JOIN tests t ON t.run_id = m.run_id AND t.label = m.label JOIN runs r ON r.id = t.run_id");
    char label[64];
    long r0, r1, r2, r3;
    double v0, v1, v2, v3;
    if (sscanf(q, "%63[^|]|%ld:%lf %ld:%lf %ld:%lf %ld:%lf", label, &r0, &v0, &r1, &v1, &r2, &v2, &r3, &v3) != 9)
        fail_msg("decode rows: %s", q);
    free(q);
    assert_true(r0 == r1 && r2 == r3 && r0 != r2);
    char row[128];
    snprintf(row, sizeof row, "| %s | decode_tok_per_s | ", label);
    const char *at = strstr(md, "## Run groups");
    if (!at || !(at = strstr(at, row))) fail_msg("report: no run group row '%s':\n%s", row, md);
    double a, b, ratio;
    if (sscanf(at + strlen(row), "%lf | %lf (×%lf) |", &a, &b, &ratio) != 3) fail_msg("group row: %.200s", at);
    /* medians of two repetitions; printed to 2 and 3 decimals (in double: cmocka's
     * assert_float_equal compares floats, too coarse for a half unit at 1e3 tok/s) */
    const double ma = (v0 + v1) / 2, mb = (v2 + v3) / 2;
    if (fabs(a - ma) > 0.0051 || fabs(b - mb) > 0.0051 || fabs(ratio - mb / ma) > 0.00051)
        fail_msg("group row %.3f, %.3f (x%.4f); the runs' medians %.4f, %.4f (x%.5f)", a, b, ratio, ma, mb, mb / ma);
    free(md);
}

/* [engine] head / bench --head: an approximate head is labelled in the run's tags and the test's
 * parameters, and its repetitions count only the head rows it read */
static void test_approximate_head(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "model", "synth", "--preset", "maple-tiny", "--out", "mt.gguf", "--quiet");
    if (r.status != 0) fail_msg("model synth: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "mt.gguf", "-p", "0", "-n", "8", "-r", "2", "--db", "head.db", "-q");
    if (r.status != 0) fail_msg("bench exact: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "mt.gguf", "-p", "0", "-n", "8", "-r", "2", "--db", "head.db", "-q",
            "--head", "approx:64:4", "--json");
    if (r.status != 0) fail_msg("bench approx: exit %d: %s", r.status, r.err);
    if (!strstr(r.out, "\"head\": \"approx:64:4\", \"head_approximate\": true"))
        fail_msg("bench --head: not labelled: %s", r.out);
    e2e_res_free(&r);
    char dbp[512];
    e2e_path(dbp, sizeof dbp, "head.db");
    char *q = e2e_db_query(dbp, "SELECT group_concat(value, ' ') FROM (SELECT value FROM run_tags WHERE key = 'head'"
                                " ORDER BY run_id)");
    assert_string_equal(q, "exact approx:64:4\n");
    free(q);
    q = e2e_db_query(dbp, "SELECT count(*) FROM test_params p JOIN tests t ON t.id = p.test_id WHERE t.run_id = 2"
                          " AND p.key = 'head' AND p.value = 'approx:64:4'");
    assert_string_equal(q, "1\n");
    free(q);
    q = e2e_db_query(dbp, "SELECT (SELECT max(m.value) FROM measurements m JOIN tests t ON t.id = m.test_id"
                          " WHERE t.run_id = 2 AND m.metric = 'bytes_per_token') < (SELECT min(m.value) FROM"
                          " measurements m JOIN tests t ON t.id = m.test_id WHERE t.run_id = 1 AND"
                          " m.metric = 'bytes_per_token')");
    assert_string_equal(q, "1\n");
    free(q);
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "mt.gguf", "-n", "2", "--head", "approx:zero");
    assert_int_equal(r.status, 2);
    e2e_res_free(&r);
    /* --head once per -m: the same file under both heads in one interleaved group */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "mt.gguf", "-m", "mt.gguf", "--head", "exact", "--head", "approx:64:4",
            "-p", "0", "-n", "4", "-r", "2", "--db", "head.db", "-q", "--json");
    if (r.status != 0) fail_msg("bench two heads: exit %d: %s", r.status, r.err);
    if (!strstr(r.out, "\"head\": \"exact\", \"head_approximate\": false") ||
        !strstr(r.out, "\"head\": \"approx:64:4\", \"head_approximate\": true"))
        fail_msg("bench two heads: each file's head not labelled: %s", r.out);
    e2e_res_free(&r);
    q = e2e_db_query(dbp, "SELECT group_concat(h.value, ' ') FROM (SELECT h.value FROM run_tags h JOIN run_tags g"
                          " ON g.run_id = h.run_id AND g.key = 'group.index' WHERE h.key = 'head'"
                          " ORDER BY g.value) h");
    assert_string_equal(q, "exact approx:64:4\n");
    free(q);
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "mt.gguf", "-m", "mt.gguf", "-m", "mt.gguf", "--head", "exact",
            "--head", "approx:64:4", "-n", "2");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "once per -m"));
    e2e_res_free(&r);
}

/* The value of metric m of the test labelled `label` in run `run`, as the report prints it. */
static double run_metric(const char *dbp, int run, const char *label, const char *m) {
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT m.value FROM measurements m JOIN tests t ON t.id = m.test_id WHERE"
             " t.run_id = %d AND t.label = '%s' AND m.metric = '%s' ORDER BY m.value", run, label, m);
    char *q = e2e_db_query(dbp, sql);
    assert_non_null(q);
    /* the median of the rows: the middle line (1 or 3 repetitions here) */
    int lines = 0;
    for (const char *p = q; *p; p++) lines += *p == '\n';
    const char *p = q;
    for (int i = 0; i < lines / 2; i++) p = strchr(p, '\n') + 1;
    double v = strtod(p, NULL);
    free(q);
    return v;
}

/* The speed-and-quality table and chart from real runs: two weight types interleaved, each
 * with a decode and a [quality] test against the F32 model, and the approximate head against
 * the exact one; every cell is the database's figure, and the approximate head is labelled. */
static void test_speed_quality(void **state) {
    (void)state;
    char text[8192];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i + 1 < sizeof text; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        text[i] = x % 5 == 0 ? ' ' : (char)('a' + x % 13);
    }
    text[sizeof text - 1] = '\0';
    e2e_write("text.txt", text, (size_t)-1);
    e2e_write("sq.ini", "[model]\nsynth = llama-tiny\ntype = q4_0, q8_0\nseed = 7\n"
                        "[engine]\nthreads = 2\n"
                        "[protocol]\nwarmup = 0\nrepetitions = 3\nbandwidth_probe = 1m\nthrottle_check = false\n"
                        "interleave = rep\n"
                        "[decode]\ntokens = 8\n"
                        "[quality]\nreference = f32\ntext = text.txt\nctx = 64\nchunks = 4\n", (size_t)-1);
    e2e_write("ah.ini", "[model]\nsynth = llama-tiny\ntype = q8_0\nseed = 7\n"
                        "[engine]\nthreads = 2\nhead = approx:16:2\n"
                        "[protocol]\nwarmup = 0\nrepetitions = 3\nbandwidth_probe = 1m\nthrottle_check = false\n"
                        "[decode]\ntokens = 8\n"
                        "[quality]\nreference = q8_0\ntext = text.txt\nctx = 64\nchunks = 4\n", (size_t)-1);
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "sq.ini", "--db", "sq.db", "-q");
    if (r.status != 0) fail_msg("run sq.ini: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "ah.ini", "--db", "sq.db", "-q");
    if (r.status != 0) fail_msg("run ah.ini: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "report", "--db", "sq.db", "--last", "3", "--out", "sqrep");
    e2e_assert_clean(&r, "report");
    if (r.status != 0) fail_msg("report: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    char dbp[512];
    e2e_path(dbp, sizeof dbp, "sq.db");
    char *md = e2e_slurp("sqrep/report.md", NULL);
    assert_non_null(md);
    const char *sec = strstr(md, "## Speed and quality");
    assert_non_null(sec);
    /* one row per run, its cells the recorded figures */
    for (int run = 1; run <= 3; run++) {
        char want[512], tps[32], kld[32];
        snprintf(tps, sizeof tps, "%.2f", run_metric(dbp, run, "tg8@d0", "decode_tok_per_s"));
        snprintf(kld, sizeof kld, "%.6f ± %.6f", run_metric(dbp, run, "quality64", "kld_mean"),
                 run_metric(dbp, run, "quality64", "kld_unc"));
        snprintf(want, sizeof want, "| %s | ", tps);
        const char *row = strstr(sec, want);
        if (!row) fail_msg("no speed-and-quality row with decode %s:\n%s", tps, sec);
        const char *bol = row;
        while (bol > sec && bol[-1] != '\n') bol--;
        const char *eol = strchr(row, '\n');
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(eol - bol), bol);
        snprintf(want, sizeof want, "| %.4f | %s | %.2f |", run_metric(dbp, run, "quality64", "ppl_ratio"), kld,
                 run_metric(dbp, run, "quality64", "same_top_pct"));
        if (!strstr(line, want)) fail_msg("row '%s' lacks '%s'", line, want);
        /* the approximate head's run, and only it, is labelled so */
        if ((strstr(line, "[APPROXIMATE head approx:16:2]") != NULL) != (run == 3))
            fail_msg("run %d: approximate label wrong: %s", run, line);
    }
    /* coarser weights drift further from the F32 reference */
    assert_true(run_metric(dbp, 1, "quality64", "kld_mean") > run_metric(dbp, 2, "quality64", "kld_mean"));
    free(md);
    /* the chart: one labelled point per format, the approximate one flagged */
    char *dat = e2e_slurp("sqrep/speed_quality.dat", NULL);
    assert_non_null(dat);
    int pts = 0, approx = 0;
    for (const char *p = dat; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (*p == '#' || *p == '\n') continue;
        int id, ap;
        double k, t;
        if (sscanf(p, "%d %lf %lf %d", &id, &k, &t, &ap) != 4) fail_msg("speed_quality.dat row: %.80s", p);
        pts++;
        if (ap) {
            approx++;
            assert_int_equal(id, 3);
            const char *eol = strchr(p, '\n');
            const char *lab = strstr(p, "APPROXIMATE");
            assert_true(lab && (!eol || lab < eol));
        }
    }
    assert_int_equal(pts, 3);
    assert_int_equal(approx, 1);
    free(dat);
    char *svg = e2e_slurp("sqrep/speed_quality.svg", NULL);
    if (svg) assert_non_null(strstr(svg, "APPROXIMATE"));   /* rendered where gnuplot is */
    free(svg);
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "report") != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_from_runner),
        cmocka_unit_test(test_interleaved_types),
        cmocka_unit_test(test_approximate_head),
        cmocka_unit_test(test_speed_quality),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    e2e_cleanup();
    return failed;
}
