/*
 * test_peer_run.c — `[engine] kind = ternbench, llama.cpp` through the built
 * binary, with a stand-in for llama-bench (fake_llama_bench.c, its path is
 * argv[2]): both engines in one group on the same synthesized file, the
 * rows each leaves in SQLite, the report's engines section from that
 * database, and the errors (scenario keys, a missing binary, a failing or
 * unparsable llama-bench) naming the binary and the scenario line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <limits.h>

#include "e2e.h"

static const char *fake;

static void run_expect(int want, const char *what, const char *const *args, e2e_res_t *r) {
    e2e_run(E2E_NO_LIMIT, args, r);
    e2e_assert_clean(r, what);
    if (r->status != want)
        fail_msg("%s: exit %d, expected %d\nstdout: %s\nstderr: %s", what, r->status, want, r->out, r->err);
}

/* TMP/name as a NUL-terminated string (e2e_slurp's buffer is not). */
static char *slurp_text(const char *name) {
    size_t n;
    char *raw = e2e_slurp(name, &n);
    if (!raw) return NULL;
    char *s = malloc(n + 1);
    if (s) { memcpy(s, raw, n); s[n] = '\0'; }
    free(raw);
    return s;
}

static int64_t q_int(const char *db, const char *sql) {
    char *s = e2e_db_query(db, sql);
    assert_non_null(s);
    int64_t v = strtoll(s, NULL, 10);
    free(s);
    return v;
}

static void q_eq(const char *db, const char *sql, const char *want) {
    char *s = e2e_db_query(db, sql);
    assert_non_null(s);
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '\n') s[--n] = '\0';
    if (strcmp(s, want)) fail_msg("%s\n  got:  [%s]\n  want: [%s]", sql, s, want);
    free(s);
}

/* A scenario of both engines on llama-tiny; binary_line (may be "") goes
 * into [engine] as line 6. */
static void write_ini(const char *name, const char *binary_line, const char *tests) {
    char text[2048];
    snprintf(text, sizeof text,
             "[model]\nsynth = llama-tiny\nseed = 1\n"
             "[engine]\nkind = ternbench, llama.cpp\n%s\nthreads = 1\n"
             "[protocol]\nwarmup = 1\nrepetitions = 3\nbandwidth_probe = 1m\nthrottle_check = false\n%s",
             binary_line, tests);
    e2e_write(name, text, (size_t)-1);
}

static const char two_tests[] = "[prefill]\nprompt_tokens = 16\n[decode]\ntokens = 8\ndepths = 0, 16\n";

/* Both engines, one group: rows, provenance, what is absent, the
 * invocations, and the report section built from the database. */
static void test_both_engines(void **state) {
    (void)state;
    char line[1200], ini[512], db[512], log[512], out[512];
    snprintf(line, sizeof line, "binary = %s", fake);
    write_ini("both.ini", line, two_tests);
    e2e_path(ini, sizeof ini, "both.ini");
    e2e_path(db, sizeof db, "both.db");
    e2e_path(log, sizeof log, "calls.log");
    e2e_path(out, sizeof out, "report");
    setenv("FAKE_LB_LOG", log, 1);
    unsetenv("FAKE_LB_MODE");
    e2e_res_t r;
    run_expect(0, "run both", (const char *const[]){"run", ini, "--db", db, "-q", NULL}, &r);
    e2e_res_free(&r);
    unsetenv("FAKE_LB_LOG");

    q_eq(db, "SELECT engine, coalesce(engine_version, '-'), status FROM runs ORDER BY id",
         "ternbench|-|complete\nllama.cpp|b10346 (c2e63492b)|complete");
    q_eq(db, "SELECT isa FROM runs WHERE engine = 'llama.cpp'", "CPU");
    /* one group, members 0 and 1, interleaved rep by rep */
    assert_int_equal(q_int(db, "SELECT count(DISTINCT value) FROM run_tags WHERE key = 'group'"), 1);
    q_eq(db, "SELECT group_concat(value) FROM (SELECT value FROM run_tags WHERE key = 'group.index' ORDER BY run_id)",
         "0,1");
    q_eq(db, "SELECT value FROM run_tags t JOIN runs r ON r.id = t.run_id WHERE r.engine = 'llama.cpp'"
             " AND key = 'interleave'", "rep");
    /* the same tests on both sides */
    q_eq(db, "SELECT group_concat(label) FROM (SELECT label FROM tests t JOIN runs r ON r.id = t.run_id"
             " WHERE r.engine = 'llama.cpp' ORDER BY t.id)", "pp16,tg8@d0,tg8@d16");
    q_eq(db, "SELECT group_concat(label) FROM (SELECT label FROM tests t JOIN runs r ON r.id = t.run_id"
             " WHERE r.engine = 'ternbench' ORDER BY t.id)", "pp16,tg8@d0,tg8@d16");
    /* three repetitions of the stand-in's 500 tok/s, each bracketed by the probes */
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements m JOIN tests t ON t.id = m.test_id"
                               " JOIN runs r ON r.id = t.run_id WHERE r.engine = 'llama.cpp'"
                               " AND m.metric IN ('prefill_tok_per_s', 'decode_tok_per_s')"
                               " AND m.repetition >= 0 AND abs(m.value - 500) < 1e-9"), 9);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements m JOIN tests t ON t.id = m.test_id"
                               " JOIN runs r ON r.id = t.run_id WHERE r.engine = 'llama.cpp'"
                               " AND m.metric = 'bw_before_gbps' AND m.value > 0"), 9);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements m JOIN tests t ON t.id = m.test_id"
                               " JOIN runs r ON r.id = t.run_id WHERE r.engine = 'llama.cpp'"
                               " AND m.metric = 'roofline_pct' AND m.value > 0"), 9);
    /* per-token data is absent, never invented */
    assert_int_equal(q_int(db, "SELECT count(*) FROM token_events e JOIN tests t ON t.id = e.test_id"
                               " JOIN runs r ON r.id = t.run_id WHERE r.engine = 'llama.cpp'"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements m JOIN tests t ON t.id = m.test_id"
                               " JOIN runs r ON r.id = t.run_id WHERE r.engine = 'llama.cpp'"
                               " AND m.metric LIKE 'itl_%'"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM sensor_absent s JOIN runs r ON r.id = s.run_id"
                               " WHERE r.engine = 'llama.cpp' AND s.sensor = 'token_events'"), 1);
    assert_true(q_int(db, "SELECT count(*) FROM token_events") > 0);   /* ternbench's own are kept */
    q_eq(db, "SELECT json_extract(params, '$.engine') FROM tests t JOIN runs r ON r.id = t.run_id"
             " WHERE r.engine = 'llama.cpp' AND label = 'pp16'", "llama.cpp");

    /* the invocations: warm-up + 3 repetitions per case, the same threads and case */
    char *calls = slurp_text("calls.log");
    assert_non_null(calls);
    int lines = 0;
    for (char *c = calls; *c; c++) lines += *c == '\n';
    assert_int_equal(lines, 12);
    assert_non_null(strstr(calls, "-t 1 -p 16 -n 0 -d 0 -r 1 -b 512 -ub 512 -ctk f16 -ctv f16 -o jsonl"));
    assert_non_null(strstr(calls, "-t 1 -p 0 -n 8 -d 16 -r 1"));
    free(calls);

    /* the report pairs the two engines test by test */
    run_expect(0, "report", (const char *const[]){"report", "--db", db, "--last", "2", "--out", out,
                                                  "--no-charts", NULL}, &r);
    e2e_res_free(&r);
    char *md = slurp_text("report/report.md");
    assert_non_null(md);
    char *sec = strstr(md, "## Engines");
    if (!sec) fail_msg("no engines section in\n%s", md);
    assert_non_null(strstr(sec, "llama.cpp b10346 (c2e63492b)"));
    assert_non_null(strstr(sec, "| tg8@d16 |"));
    assert_non_null(strstr(sec, "500.00"));
    assert_non_null(strstr(sec, "3 pairs"));
    free(md);
}

/* A missing binary is an error naming it and the scenario line; nothing is recorded. */
static void test_missing_binary(void **state) {
    (void)state;
    char ini[512], db[512];
    write_ini("missing.ini", "binary = no-such-llama-bench", two_tests);
    e2e_path(ini, sizeof ini, "missing.ini");
    e2e_path(db, sizeof db, "missing.db");
    e2e_res_t r;
    run_expect(1, "missing binary", (const char *const[]){"run", ini, "--db", db, "-q", NULL}, &r);
    e2e_assert_err_has(&r, "missing binary", "missing.ini:6:", "no-such-llama-bench", NULL);
    e2e_res_free(&r);
    assert_int_equal(q_int(db, "SELECT count(*) FROM runs"), 0);
    /* neither key, nor $TB_LLAMA_BENCH, nor PATH */
    write_ini("nokey.ini", "", two_tests);
    e2e_path(ini, sizeof ini, "nokey.ini");
    setenv("TB_LLAMA_BENCH", "/nonexistent/llama-bench", 1);
    run_expect(1, "env binary", (const char *const[]){"run", ini, "--db", db, "-q", NULL}, &r);
    e2e_assert_err_has(&r, "env binary", "nokey.ini:5:", "/nonexistent/llama-bench", "$TB_LLAMA_BENCH", NULL);
    e2e_res_free(&r);
    unsetenv("TB_LLAMA_BENCH");
}

/* A llama-bench that fails or prints something else fails its tests (the
 * message names the binary and the line); ternbench's run stays complete. */
static void test_bad_output(void **state) {
    (void)state;
    static const struct { const char *mode, *says; } cases[] = {
        {"exit", "exit status 1: main: error: failed to load model"},
        {"garbage", "output line 1"},
        {"mismatch", "n_prompt=17"},
        {"two", "2 output rows"},
    };
    char line[1200], ini[512], db[512];
    snprintf(line, sizeof line, "binary = %s", fake);
    write_ini("bad.ini", line, "[prefill]\nprompt_tokens = 16\n");
    e2e_path(ini, sizeof ini, "bad.ini");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "bad-%s.db", cases[i].mode);
        e2e_path(db, sizeof db, name);
        setenv("FAKE_LB_MODE", cases[i].mode, 1);
        e2e_res_t r;
        run_expect(1, cases[i].mode, (const char *const[]){"run", ini, "--db", db, "-q", NULL}, &r);
        e2e_assert_err_has(&r, cases[i].mode, "bad.ini:6:", fake, cases[i].says, NULL);
        e2e_res_free(&r);
        q_eq(db, "SELECT engine || ':' || status FROM runs ORDER BY id", "ternbench:complete\nllama.cpp:failed");
        char *err = e2e_db_query(db, "SELECT t.error FROM tests t JOIN runs r ON r.id = t.run_id WHERE r.engine = 'llama.cpp'");
        assert_non_null(err);
        if (!strstr(err, fake) || !strstr(err, cases[i].says)) fail_msg("test error: %s", err);
        free(err);
        assert_int_equal(q_int(db, "SELECT count(*) FROM measurements m JOIN tests t ON t.id = m.test_id"
                                   " JOIN runs r ON r.id = t.run_id WHERE r.engine = 'llama.cpp'"
                                   " AND m.metric = 'prefill_tok_per_s'"), 0);
    }
    unsetenv("FAKE_LB_MODE");
}

/* Scenario keys: unknown engine, tests llama-bench cannot run, token turns,
 * binary without llama.cpp. */
static void test_scenario_errors(void **state) {
    (void)state;
    static const struct { const char *text, *says; } cases[] = {
        {"[model]\nsynth = llama-tiny\n[engine]\nkind = ternbench, vllm\n[decode]\n", "e.ini:4: [engine] kind: unknown engine \"vllm\""},
        {"[model]\nsynth = llama-tiny\n[engine]\nkind = llama.cpp, llama.cpp\n[decode]\n", "e.ini:4: [engine] kind: llama.cpp is listed twice"},
        {"[model]\nsynth = llama-tiny\n[engine]\nkind = ternbench, llama.cpp\n[ttft]\n", "e.ini:5: [ttft]: llama.cpp (kind, line 4) runs prefill and decode"},
        {"[model]\nsynth = llama-tiny\ntype = q8_0, f16\n[engine]\nkind = ternbench, llama.cpp\n[protocol]\ninterleave = token\n[decode]\n",
         "e.ini:7: [protocol] interleave = token: llama.cpp"},
        {"[model]\nsynth = llama-tiny\n[engine]\nbinary = x\n[decode]\n", "e.ini:4: [engine] binary only applies with kind = llama.cpp"},
    };
    char ini[512];
    e2e_path(ini, sizeof ini, "e.ini");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        e2e_write("e.ini", cases[i].text, (size_t)-1);
        e2e_res_t r;
        run_expect(2, cases[i].says, (const char *const[]){"scenario", "check", ini, NULL}, &r);
        e2e_assert_err_has(&r, cases[i].says, cases[i].says, NULL);
        e2e_res_free(&r);
    }
    /* the list is canonical in the normalized text */
    e2e_write("e.ini", "[model]\nsynth = llama-tiny\n[engine]\nkind =  llama.cpp ,ternbench\n[decode]\n", (size_t)-1);
    e2e_res_t r;
    run_expect(0, "normalize", (const char *const[]){"scenario", "normalize", ini, NULL}, &r);
    if (!strstr(r.out, "kind = llama.cpp, ternbench")) fail_msg("normalized: %s", r.out);
    e2e_res_free(&r);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: test_peer_run TERNBENCH FAKE_LLAMA_BENCH\n"); return 1; }
    fake = realpath(argv[2], NULL);   /* the scenarios live in another directory */
    if (!fake) { perror(argv[2]); return 1; }
    if (e2e_init(argc, argv, "peerrun")) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_engines),
        cmocka_unit_test(test_missing_binary),
        cmocka_unit_test(test_bad_output),
        cmocka_unit_test(test_scenario_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    e2e_cleanup();
    free((char *)fake);
    return rc;
}
