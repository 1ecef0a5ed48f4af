/*
 * test_run.c — `ternbench run` end to end on the synthesized maple-tiny
 * (the built binary is exec'd; meson passes its path as argv[1]):
 *   - every test kind writes the expected rows for every metric, and the
 *     recorded token text agrees with chars_per_token;
 *   - a bad scenario exits 2 and records nothing;
 *   - [protocol] record_tokens = false records no token events;
 *   - SIGKILL mid-run: integrity ok, completed repetitions intact, the run
 *     marked interrupted on the next open; SIGINT: clean stop, exit 130.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include "store.h"
#include "ternbench.h"
#include "tmpdir.h"

static const char *bin;

static int setup(void **state) {
    (void)state;
    if (!bin) return -1;
    return tmpdir_make("run");
}

static void write_file(const char *name, const char *text) {
    char p[512];
    tpath(p, sizeof p, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Start `ternbench ARGS...` with stdout/stderr into TMPDIR/out.txt, err.txt. */
static pid_t spawn(const char *const *args) {
    pid_t pid = fork();
    if (pid == 0) {
        char o[512], e[512];
        tpath(o, sizeof o, "out.txt");
        tpath(e, sizeof e, "err.txt");
        int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0) _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        char *argv[32];
        int n = 0;
        argv[n++] = (char *)bin;
        for (; args[n - 1] && n < 31; n++) argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    return pid;
}

static int wait_status(pid_t pid) {
    int st;
    if (waitpid(pid, &st, 0) != pid) return -1;
    if (WIFSIGNALED(st)) return 1000 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

static void slurp(const char *name, char *buf, size_t cap) {
    char p[512];
    tpath(p, sizeof p, name);
    buf[0] = '\0';
    FILE *f = fopen(p, "r");
    if (!f) return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static int run_cmd(const char *const *args) {
    int st = wait_status(spawn(args));
    if (st != 0) {
        char err[4096];
        slurp("err.txt", err, sizeof err);
        print_message("ternbench exit %d: %s\n", st, err);
    }
    return st;
}

static double q_num(sqlite3 *db, const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    double v = -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

static const char *MODEL_SECTION = "[model]\nsynth = maple-tiny\ncache_dir = cache\n";

/* ===================================================================== */

static void test_full_run(void **state) {
    (void)state;
    char text[2048];
    snprintf(text, sizeof text, "%s"
             "[engine]\nthreads = 2\n"
             "[protocol]\nwarmup = 0\nrepetitions = 2\nbandwidth_probe = 4m\nsensor_interval = 20ms\n"
             "[prefill]\nprompt_tokens = 16\n"
             "[decode]\ntokens = 8\ndepths = 0, 16\n"
             "[ttft]\nprompt_tokens = 12\n"
             "[generate]\nprompt_tokens = 8\ntokens = 12\ntemp = 1.0\ntop_p = 0.9\n"
             "[sustained]\ntokens = 60\nwindow = 20\nctx = 32\nprompt_tokens = 4\non_full = slide\n", MODEL_SECTION);
    write_file("full.ini", text);
    char ini[512], db[512];
    tpath(ini, sizeof ini, "full.ini");
    tpath(db, sizeof db, "full.db");
    const char *args[] = {"run", ini, "--db", db, "--tag", "suite=harness", "-q", NULL};
    assert_int_equal(run_cmd(args), 0);
    char out[16384];
    slurp("out.txt", out, sizeof out);
    assert_non_null(strstr(out, "| pp16 | prefill_tok_per_s |"));
    assert_non_null(strstr(out, "| tg8@d16 | decode_tok_per_s |"));

    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(q_num(d, "SELECT count(*) FROM runs WHERE status = 'complete' AND ended_utc IS NOT NULL"
                              " AND bandwidth_gbps_before > 0 AND bandwidth_gbps_after > 0 AND record_tokens = 1"), 1);
    assert_int_equal(q_num(d, "SELECT count(*) FROM run_tags WHERE key = 'suite' AND value = 'harness'"), 1);
    /* the cores the threads ran on: a CPU per thread, or unpinned */
    assert_int_equal(q_num(d, "SELECT count(*) FROM run_tags WHERE key = 'cpus' AND (value = 'unpinned'"
                              " OR value GLOB '[0-9-]*,[0-9-]*')"), 1);
    /* the engine's prefetch distance, recorded with the run as it ran */
    char pf_sql[128];
    snprintf(pf_sql, sizeof pf_sql, "SELECT count(*) FROM run_tags WHERE key = 'prefetch_bytes' AND value = '%zu'",
             tb_prefetch_bytes());
    assert_int_equal(q_num(d, pf_sql), 1);
    snprintf(pf_sql, sizeof pf_sql, "SELECT count(*) FROM run_tags WHERE key = 'prefetch_l2' AND value = '%d'",
             (int)tb_prefetch_l2());
    assert_int_equal(q_num(d, pf_sql), 1);
    assert_int_equal(q_num(d, "SELECT count(*) FROM tests WHERE status = 'complete' AND thermal_state IN ('nominal', 'throttled')"), 6);
    assert_true(q_num(d, "SELECT bytes_per_token FROM models") > 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM models WHERE synth_preset = 'maple-tiny' AND synth_seed = 1"), 1);

    /* every metric of every kind, for each repetition; the bracketing probes of every
     * repetition; no stored summaries (derived when read) */
#define BRACKET " bw_before_gbps bw_after_gbps cpu_ghz_before cpu_ghz_after vec_gops_before vec_gops_after"
#define ROOF " bytes_per_token achieved_gbps roofline_gbps roofline_pct"
    static const struct { const char *label; const char *metrics; } expect[] = {
        {"pp16", "prefill_tok_per_s prefill_ms peak_rss_bytes session_bytes" ROOF BRACKET},
        {"tg8@d0", "decode_tok_per_s decode_ms itl_p50_ms itl_p90_ms itl_p99_ms itl_max_ms stall_pct peak_rss_bytes session_bytes" ROOF BRACKET},
        {"tg8@d16", "decode_tok_per_s itl_p99_ms" ROOF BRACKET},
        {"ttft12", "ttft_ms ttft_prefill_ms ttft_first_decode_ms prefill_tok_per_s session_bytes" BRACKET},
        {"pp8+tg12", "ttft_ms ttft_prefill_ms prefill_tok_per_s decode_tok_per_s itl_p50_ms itl_p90_ms itl_p99_ms itl_max_ms stall_pct e2e_ms chars_per_s chars_per_token generated_tokens peak_rss_bytes session_bytes" ROOF BRACKET},
        {"sustained60", "decode_tok_per_s generated_tokens context_full_events refill_ms" ROOF BRACKET},
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        char list[1024];
        snprintf(list, sizeof list, "%s", expect[i].metrics);
        for (char *m = strtok(list, " "); m; m = strtok(NULL, " ")) {
            for (int rep = 0; rep < 2; rep++) {
                double n = q_num(d, "SELECT count(*) FROM measurements x JOIN tests t ON t.id = x.test_id"
                                    " WHERE t.label = '%s' AND x.repetition = %d AND x.metric = '%s'"
                                    " AND x.value >= 0 AND x.unit <> ''", expect[i].label, rep, m);
                if (n != 1) fail_msg("%s: metric %s repetition %d missing", expect[i].label, m, rep);
            }
        }
    }
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE repetition < 0"), 0);
    /* every stored name and unit is the registry's */
    {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(d, "SELECT DISTINCT metric, unit FROM measurements", -1, &st, NULL), SQLITE_OK);
        int n = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(st, 0), *unit = (const char *)sqlite3_column_text(st, 1);
            const tb_metric_def_t *md = tb_metric_find(name);
            if (!md || strcmp(md->unit, unit)) fail_msg("metric %s (%s) is not in the registry", name, unit);
            n++;
        }
        sqlite3_finalize(st);
        assert_true(n > 20);
    }
    /* the roofline of each repetition is the higher of its own probes; the probe after one
     * repetition is the probe before the next (in the order they ran) */
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements r JOIN measurements b ON b.test_id = r.test_id"
                              " AND b.repetition = r.repetition AND b.metric = 'bw_before_gbps'"
                              " JOIN measurements a ON a.test_id = r.test_id AND a.repetition = r.repetition"
                              " AND a.metric = 'bw_after_gbps' WHERE r.metric = 'roofline_gbps'"
                              " AND r.value <> max(a.value, b.value)"), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements p JOIN measurements g ON g.test_id = p.test_id"
                              " AND g.repetition = p.repetition AND g.metric = 'achieved_gbps'"
                              " JOIN measurements r ON r.test_id = p.test_id AND r.repetition = p.repetition"
                              " AND r.metric = 'roofline_gbps' WHERE p.metric = 'roofline_pct'"
                              " AND abs(p.value - 100.0 * g.value / r.value) > 1e-9 * p.value"), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements a JOIN measurements b ON b.test_id = a.test_id"
                              " AND b.repetition = a.repetition + 1 AND b.metric = 'bw_before_gbps'"
                              " WHERE a.metric = 'bw_after_gbps' AND a.value <> b.value"), 0);
    /* typed parameters */
    assert_int_equal(q_num(d, "SELECT count(*) FROM test_params p JOIN tests t ON t.id = p.test_id"
                              " WHERE t.label = 'tg8@d16' AND p.key = 'depth' AND typeof(p.value) = 'integer'"
                              " AND p.value = 16"), 1);
    /* units are part of the record */
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'decode_tok_per_s' AND unit <> 'tok/s'"), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric LIKE 'itl_%%' AND unit <> 'ms'"), 0);
    /* every repetition's core clock before and after it: a plausible GHz, one per repetition of every test */
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric IN ('cpu_ghz_before', 'cpu_ghz_after')"
                              " AND (unit <> 'GHz' OR NOT (value > 0.01 AND value < 20))"), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'cpu_ghz_after' AND repetition >= 0"),
                     q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'session_bytes' AND repetition >= 0"));
    /* and its vector throughput: a positive figure in op/ns, one per repetition of every test */
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric IN ('vec_gops_before', 'vec_gops_after')"
                              " AND (unit <> 'op/ns' OR NOT (value > 0.01 AND value < 1000))"), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'vec_gops_after' AND repetition >= 0"),
                     q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'session_bytes' AND repetition >= 0"));
    /* the steal of each repetition where a tick passed: a share of CPU time, in % */
    assert_true(q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'steal_pct' AND repetition >= 0") >= 1);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'steal_pct'"
                              " AND (unit <> '%%' OR NOT (value >= 0 AND value <= 100))"), 0);
    /* a decode token's own step time is recorded, and the repetition's tok/s is n over their sum */
    assert_int_equal(q_num(d, "SELECT count(*) FROM token_events WHERE phase = 'decode' AND NOT dur_ns > 0"), 0);
    assert_float_equal(q_num(d, "SELECT x.value FROM measurements x JOIN tests t ON t.id = x.test_id WHERE t.label = 'tg8@d0'"
                                " AND x.repetition = 0 AND x.metric = 'decode_tok_per_s'"),
                       q_num(d, "SELECT 8e9 / sum(e.dur_ns) FROM token_events e JOIN tests t ON t.id = e.test_id"
                                " WHERE t.label = 'tg8@d0' AND e.repetition = 0"), 1e-6 * 1e3);

    /* token events: generate = 8 prompt + 12 generated per repetition, monotonic */
    assert_int_equal(q_num(d, "SELECT count(*) FROM token_events e JOIN tests t ON t.id = e.test_id WHERE t.label = 'pp8+tg12'"
                              " AND e.repetition = 0 AND e.phase = 'prefill'"), 8);
    assert_int_equal(q_num(d, "SELECT count(*) FROM token_events e JOIN tests t ON t.id = e.test_id WHERE t.label = 'pp8+tg12'"
                              " AND e.repetition = 1 AND e.phase = 'decode'"), 12);
    assert_int_equal(q_num(d, "SELECT count(*) FROM token_events a JOIN token_events b ON a.test_id = b.test_id AND"
                              " a.repetition = b.repetition AND b.idx = a.idx + 1 WHERE b.t_ns < a.t_ns"), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM token_events e JOIN tests t ON t.id = e.test_id WHERE t.label = 'tg8@d16'"
                              " AND e.repetition = 0"), 8);   /* depth prefill is untimed and unrecorded */
    /* chars_per_token agrees with the recorded text: count UTF-8 characters here */
    for (int rep = 0; rep < 2; rep++) {
        sqlite3_stmt *st;
        char sql[512];
        snprintf(sql, sizeof sql, "SELECT e.text FROM token_events e JOIN tests t ON t.id = e.test_id"
                 " WHERE t.label = 'pp8+tg12' AND e.repetition = %d AND e.phase = 'decode'", rep);
        assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &st, NULL), SQLITE_OK);
        long chars = 0, toks = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char *b = sqlite3_column_blob(st, 0);
            int n = sqlite3_column_bytes(st, 0);
            for (int i = 0; i < n; i++) chars += (b[i] & 0xc0) != 0x80;
            toks++;
        }
        sqlite3_finalize(st);
        assert_int_equal(toks, 12);
        double cpt = q_num(d, "SELECT x.value FROM measurements x JOIN tests t ON t.id = x.test_id WHERE t.label = 'pp8+tg12'"
                              " AND x.repetition = %d AND x.metric = 'chars_per_token'", rep);
        assert_float_equal(cpt, (double)chars / 12.0, 1e-9);
        double cps = q_num(d, "SELECT x.value FROM measurements x JOIN tests t ON t.id = x.test_id WHERE t.label = 'pp8+tg12'"
                              " AND x.repetition = %d AND x.metric = 'chars_per_s'", rep);
        double tps = q_num(d, "SELECT x.value FROM measurements x JOIN tests t ON t.id = x.test_id WHERE t.label = 'pp8+tg12'"
                              " AND x.repetition = %d AND x.metric = 'decode_tok_per_s'", rep);
        assert_float_equal(cps, cpt * tps, 1e-6 * cps + 1e-9);
    }
    /* sustained: 60 tokens in windows of 20, ctx 32 -> the context filled; the windows that
     * held the harness's re-fill are marked with its time, which their rate leaves out, and
     * stability is over the clean windows alone */
    assert_int_equal(q_num(d, "SELECT count(*) FROM windows w JOIN tests t ON t.id = w.test_id WHERE t.label = 'sustained60'"
                              " AND w.repetition = 0 AND w.n_tokens = 20 AND w.tok_per_s > 0 AND w.t1_ns > w.t0_ns"), 3);
    assert_true(q_num(d, "SELECT x.value FROM measurements x JOIN tests t ON t.id = x.test_id WHERE t.label = 'sustained60'"
                         " AND x.repetition = 0 AND x.metric = 'context_full_events'") >= 1);
    assert_int_equal(q_num(d, "SELECT sum(w.refills) FROM windows w JOIN tests t ON t.id = w.test_id"
                              " WHERE t.label = 'sustained60' AND w.repetition = 0"),
                     q_num(d, "SELECT x.value FROM measurements x JOIN tests t ON t.id = x.test_id WHERE t.label = 'sustained60'"
                              " AND x.repetition = 0 AND x.metric = 'context_full_events'"));
    assert_int_equal(q_num(d, "SELECT count(*) FROM windows WHERE (refills > 0) <> (refill_ns > 0)"), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM windows WHERE abs(tok_per_s - n_tokens * 1e9 / (t1_ns - t0_ns - refill_ns))"
                              " > 1e-6 * tok_per_s"), 0);
    double clean = q_num(d, "SELECT count(*) FROM windows w JOIN tests t ON t.id = w.test_id WHERE t.label = 'sustained60'"
                            " AND w.repetition = 0 AND w.refills = 0 AND w.n_tokens = 20");
    double stab = q_num(d, "SELECT x.value FROM measurements x JOIN tests t ON t.id = x.test_id WHERE t.label = 'sustained60'"
                           " AND x.repetition = 0 AND x.metric = 'stability_pct'");
    if (clean > 0) {
        double lo = q_num(d, "SELECT min(tok_per_s) / max(tok_per_s) * 100 FROM windows w JOIN tests t ON t.id = w.test_id"
                             " WHERE t.label = 'sustained60' AND w.repetition = 0 AND w.refills = 0 AND w.n_tokens = 20");
        assert_float_equal(stab, lo, 1e-9);
    } else {
        assert_true(isnan(stab));   /* no clean window: no stability figure */
    }
    /* sensors: the reference workload always; others sampled or declared absent, never zero-filled */
    assert_true(q_num(d, "SELECT count(*) FROM sensor_samples WHERE sensor = 'ref_workload' AND unit = 'ms' AND value > 0") >= 6);
    assert_true(q_num(d, "SELECT count(*) FROM sensor_absent") + q_num(d, "SELECT count(DISTINCT sensor) FROM sensor_samples") >= 5);
    assert_int_equal(q_num(d, "SELECT count(*) FROM sensor_samples s JOIN sensor_absent a ON a.run_id = s.run_id AND s.sensor LIKE a.sensor || '%%'"), 0);
    sqlite3_close(d);

    /* reading back */
    const char *list[] = {"list", "--db", db, NULL};
    assert_int_equal(run_cmd(list), 0);
    slurp("out.txt", out, sizeof out);
    assert_non_null(strstr(out, "complete"));
    assert_non_null(strstr(out, "suite=harness"));
    const char *show[] = {"show", "1", "--db", db, NULL};
    assert_int_equal(run_cmd(show), 0);
    slurp("out.txt", out, sizeof out);
    assert_non_null(strstr(out, "sustained60"));
    assert_non_null(strstr(out, "stability_pct"));
    const char *exp[] = {"export", "--db", db, "--format", "csv", NULL};
    assert_int_equal(run_cmd(exp), 0);
    static char csv[1 << 20];
    slurp("out.txt", csv, sizeof csv);
    int lines = 0;
    for (char *p = csv; *p; p++) lines += *p == '\n';
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(lines - 1, (int)q_num(d, "SELECT count(*) FROM measurements WHERE instr(metric, ':') = 0"));
    sqlite3_close(d);
    const char *json[] = {"export", "--db", db, "--format", "json", "--run", "1", "--all", NULL};
    assert_int_equal(run_cmd(json), 0);
    slurp("out.txt", csv, sizeof csv);
    int objs = 0;
    for (char *p = csv; (p = strstr(p, "{\"run_id\": 1,")); p++) objs++;
    assert_int_equal(csv[0], '[');
    assert_non_null(strstr(csv, "}\n]\n"));
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(objs, (int)q_num(d, "SELECT count(*) FROM measurements"));
    sqlite3_close(d);
    const char *bad[] = {"export", "--db", db, "--format", "xml", NULL};
    assert_int_equal(wait_status(spawn(bad)), 2);
}

/* on_full = shift (the default): the engine drops the older half of the cache, the harness
 * re-fills nothing. 4 prompt tokens, ctx 32: the 29th and the 45th tokens find the context
 * full and go on at depth 16, so the windows end at depths 24, 28 and 32, none is marked and
 * a stability is recorded. */
static void test_sustained_shift(void **state) {
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "%s[engine]\nthreads = 1\n[protocol]\nwarmup = 0\nrepetitions = 1\n"
             "bandwidth_probe = 4m\n[sustained]\ntokens = 60\nwindow = 20\nctx = 32\nprompt_tokens = 4\n",
             MODEL_SECTION);
    write_file("shift.ini", text);
    char ini[512], db[512];
    tpath(ini, sizeof ini, "shift.ini");
    tpath(db, sizeof db, "shift.db");
    const char *args[] = {"run", ini, "--db", db, "-q", NULL};
    assert_int_equal(run_cmd(args), 0);
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(q_num(d, "SELECT x.value FROM measurements x WHERE x.metric = 'context_full_events'"), 2);
    assert_int_equal(q_num(d, "SELECT x.value FROM measurements x WHERE x.metric = 'refill_ms'"), 0);
    assert_int_equal(q_num(d, "SELECT x.value FROM measurements x WHERE x.metric = 'generated_tokens'"), 60);
    assert_int_equal(q_num(d, "SELECT count(*) FROM windows WHERE refills = 0 AND refill_ns = 0 AND n_tokens = 20"), 3);
    assert_int_equal(q_num(d, "SELECT group_concat(ctx_pos) = '24,28,32' FROM (SELECT ctx_pos FROM windows ORDER BY idx)"), 1);
    double stab = q_num(d, "SELECT x.value FROM measurements x WHERE x.metric = 'stability_pct'");
    assert_true(stab > 0 && stab <= 100);
    sqlite3_close(d);
}

static void test_bad_scenario_records_nothing(void **state) {
    (void)state;
    char text[512];
    snprintf(text, sizeof text, "%s[decode]\ntokens = 8\ndepth = 0\n", MODEL_SECTION);
    write_file("bad.ini", text);
    char ini[512], db[512], err[4096];
    tpath(ini, sizeof ini, "bad.ini");
    tpath(db, sizeof db, "bad.db");
    const char *args[] = {"run", ini, "--db", db, NULL};
    assert_int_equal(wait_status(spawn(args)), 2);
    slurp("err.txt", err, sizeof err);
    char want[600];
    snprintf(want, sizeof want, "%s:6: unknown key \"depth\" in [decode]", ini);
    if (!strstr(err, want)) fail_msg("stderr \"%s\" lacks \"%s\"", err, want);
    assert_int_equal(access(db, F_OK), -1);            /* no database was even created */
    const char *explain[] = {"scenario", "explain", ini, NULL};
    assert_int_equal(wait_status(spawn(explain)), 2);
}

static void test_record_tokens_off(void **state) {
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "%s[protocol]\nwarmup = 0\nrepetitions = 1\nrecord_tokens = false\n"
             "bandwidth_probe = 0\nthrottle_check = false\n[generate]\nprompt_tokens = 4\ntokens = 6\n", MODEL_SECTION);
    write_file("off.ini", text);
    char ini[512], db[512];
    tpath(ini, sizeof ini, "off.ini");
    tpath(db, sizeof db, "off.db");
    const char *args[] = {"run", ini, "--db", db, "-q", NULL};
    assert_int_equal(run_cmd(args), 0);
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(q_num(d, "SELECT count(*) FROM token_events"), 0);
    assert_int_equal(q_num(d, "SELECT record_tokens FROM runs"), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'decode_tok_per_s' AND repetition = 0"), 1);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'chars_per_token' AND repetition = 0"), 1);
    assert_true(q_num(d, "SELECT bandwidth_gbps_before IS NULL FROM runs") == 1);
    assert_int_equal(q_num(d, "SELECT count(*) FROM tests WHERE thermal_state = 'unknown'"), 1);
    sqlite3_close(d);
}

/* Start a long run, wait until `reps` repetitions are committed, signal it. */
static void interrupt_run(const char *name, int sig, int *exit_status, int *reps_seen) {
    char text[1024];
    snprintf(text, sizeof text, "%s[protocol]\nwarmup = 0\nrepetitions = 1000\nbandwidth_probe = 0\n"
             "throttle_check = false\n[decode]\ntokens = 8\ndepths = 0\n", MODEL_SECTION);
    char fname[64], ini[512], db[512];
    snprintf(fname, sizeof fname, "%s.ini", name);
    write_file(fname, text);
    tpath(ini, sizeof ini, fname);
    snprintf(fname, sizeof fname, "%s.db", name);
    tpath(db, sizeof db, fname);
    const char *args[] = {"run", ini, "--db", db, "-q", NULL};
    pid_t pid = spawn(args);
    assert_true(pid > 0);
    int seen = 0;
    for (int i = 0; i < 2400 && seen < 3; i++) {   /* up to 120 s (synthesis + sanitizers) */
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        sqlite3 *d;
        if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) { sqlite3_close(d); continue; }
        sqlite3_busy_timeout(d, 1000);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(d, "SELECT count(DISTINCT repetition) FROM measurements", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) seen = sqlite3_column_int(st, 0);
            sqlite3_finalize(st);
        }
        sqlite3_close(d);
        int wst;
        if (waitpid(pid, &wst, WNOHANG) == pid) fail_msg("ternbench exited early (status %d)", wst);
    }
    assert_true(seen >= 3);
    assert_int_equal(kill(pid, sig), 0);
    *exit_status = wait_status(pid);
    *reps_seen = seen;
}

static void check_interrupted_db(const char *name, int reps_seen) {
    char fname[64], db[512];
    snprintf(fname, sizeof fname, "%s.db", name);
    tpath(db, sizeof db, fname);
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(d, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    /* every committed repetition is whole: same metric count (steal_pct is absent where no
     * tick passed), 8 token events */
    double reps = q_num(d, "SELECT count(DISTINCT repetition) FROM measurements WHERE repetition >= 0");
    assert_true(reps >= reps_seen);
    double per_rep = q_num(d, "SELECT count(*) FROM measurements WHERE repetition = 0 AND metric <> 'steal_pct'");
    assert_true(per_rep >= 5);
    assert_int_equal(q_num(d, "SELECT count(*) FROM (SELECT repetition, count(*) c FROM measurements"
                              " WHERE repetition >= 0 AND metric <> 'steal_pct' GROUP BY repetition"
                              " HAVING c <> %g)", per_rep), 0);
    assert_int_equal(q_num(d, "SELECT count(*) FROM token_events"), reps * 8);
    sqlite3_close(d);
}

static void test_sigkill(void **state) {
    (void)state;
    int st, seen;
    interrupt_run("killed", SIGKILL, &st, &seen);
    assert_int_equal(st, 1000 + SIGKILL);
    check_interrupted_db("killed", seen);
    char db[512];
    tpath(db, sizeof db, "killed.db");
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(q_num(d, "SELECT count(*) FROM runs WHERE status = 'running'"), 1);   /* as the kill left it */
    sqlite3_close(d);
    tb_store_t *s;
    int n_rec = 0;
    assert_int_equal(tb_store_open(db, &s, &n_rec), TB_OK);   /* the next open recovers it */
    assert_int_equal(n_rec, 1);
    assert_int_equal(q_num(tb_store_db(s), "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
    assert_int_equal(q_num(tb_store_db(s), "SELECT count(*) FROM tests WHERE status = 'interrupted'"), 1);
    tb_store_close(s);
}

static void test_sigint(void **state) {
    (void)state;
    int st, seen;
    interrupt_run("stopped", SIGINT, &st, &seen);
    assert_int_equal(st, 130);
    check_interrupted_db("stopped", seen);
    char db[512];
    tpath(db, sizeof db, "stopped.db");
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(q_num(d, "SELECT count(*) FROM runs WHERE status = 'interrupted' AND ended_utc IS NOT NULL"), 1);
    assert_int_equal(q_num(d, "SELECT count(*) FROM tests WHERE status = 'interrupted'"), 1);
    sqlite3_close(d);
}

/* A test that cannot run (context too small) is recorded as failed with the
 * reason; the others still run; exit status 1. */
static void test_failed_test(void **state) {
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "%s[engine]\nctx = 24\n[protocol]\nwarmup = 0\nrepetitions = 1\n"
             "bandwidth_probe = 0\n[decode]\ntokens = 4\ndepths = 0, 32\n", MODEL_SECTION);
    write_file("fail.ini", text);
    char ini[512], db[512];
    tpath(ini, sizeof ini, "fail.ini");
    tpath(db, sizeof db, "fail.db");
    const char *args[] = {"run", ini, "--db", db, "-q", NULL};
    assert_int_equal(wait_status(spawn(args)), 1);
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(q_num(d, "SELECT count(*) FROM tests WHERE label = 'tg4@d0' AND status = 'complete'"), 1);
    assert_int_equal(q_num(d, "SELECT count(*) FROM tests WHERE label = 'tg4@d32' AND status = 'failed'"
                              " AND error LIKE '%%needs 37 context positions%%'"), 1);
    assert_int_equal(q_num(d, "SELECT count(*) FROM runs WHERE status = 'failed' AND error = '1 of 2 tests failed'"), 1);
    sqlite3_close(d);
}

/* Two `ternbench run` processes on one database (and one model cache, empty
 * at first, so both may synthesize): both complete, every row present. */
static void test_concurrent_runs(void **state) {
    (void)state;
    char text[1024];
    snprintf(text, sizeof text, "[model]\nsynth = maple-tiny\nseed = 7\ncache_dir = cache2\n"
             "[protocol]\nwarmup = 0\nrepetitions = 3\nbandwidth_probe = 0\nthrottle_check = false\n"
             "[decode]\ntokens = 6\ndepths = 0, 4\n");
    write_file("conc.ini", text);
    char ini[512], db[512];
    tpath(ini, sizeof ini, "conc.ini");
    tpath(db, sizeof db, "conc.db");
    const char *args[] = {"run", ini, "--db", db, "-q", NULL};
    pid_t a = spawn(args), b = spawn(args);
    assert_int_equal(wait_status(a), 0);
    assert_int_equal(wait_status(b), 0);
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal(q_num(d, "SELECT count(*) FROM runs WHERE status = 'complete'"), 2);
    assert_int_equal(q_num(d, "SELECT count(*) FROM tests WHERE status = 'complete'"), 4);
    assert_int_equal(q_num(d, "SELECT count(*) FROM measurements WHERE metric = 'decode_tok_per_s' AND repetition >= 0"), 12);
    assert_int_equal(q_num(d, "SELECT count(*) FROM token_events"), 2 * 2 * 3 * 6);
    assert_int_equal(q_num(d, "SELECT count(*) FROM models"), 1);       /* same synthesized bytes */
    assert_int_equal(q_num(d, "SELECT count(*) FROM scenarios"), 1);
    sqlite3_close(d);
}

int main(int argc, char **argv) {
    bin = argc > 1 ? argv[1] : getenv("TB_TERNBENCH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_run),
        cmocka_unit_test(test_sustained_shift),
        cmocka_unit_test(test_bad_scenario_records_nothing),
        cmocka_unit_test(test_record_tokens_off),
        cmocka_unit_test(test_sigkill),
        cmocka_unit_test(test_sigint),
        cmocka_unit_test(test_concurrent_runs),
        cmocka_unit_test(test_failed_test),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
