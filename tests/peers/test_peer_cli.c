/*
 * test_peer_cli.c — import / export / merge through the built binary.
 *
 * Inputs: the llama-bench output captured from a real llama.cpp build
 * (tests/peers/fixtures, see its README), mlx-lm output written here in the
 * layout mlx_lm.benchmark and mlx_lm.generate print, hand-broken files, and a
 * tiny native `ternbench run`. Checks what lands in the database: runs of
 * the right engine with their repetitions, nothing twice, nothing from a bad
 * file, the same runs after import -> export -> import, and merges that are
 * idempotent, order-independent and refuse a conflicting uuid.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "e2e.h"

static char fixtures[1024];

static void fixture(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", fixtures, name);
}

/* Run ternbench with args; fail unless it exits with `want`. */
static void run_expect(int want, const char *what, const char *const *args, e2e_res_t *r) {
    e2e_run(E2E_NO_LIMIT, args, r);
    e2e_assert_clean(r, what);
    if (r->status != want)
        fail_msg("%s: exit %d, expected %d\nstdout: %s\nstderr: %s", what, r->status, want, r->out, r->err);
}

static void import_ok(const char *file, const char *db, const char *format) {
    e2e_res_t r;
    if (format) run_expect(0, file, (const char *const[]){"import", file, "--db", db, "--format", format, NULL}, &r);
    else run_expect(0, file, (const char *const[]){"import", file, "--db", db, NULL}, &r);
    e2e_res_free(&r);
}

static int64_t q_int(const char *db, const char *sql) {
    char *s = e2e_db_query(db, sql);
    assert_non_null(s);
    int64_t v = strtoll(s, NULL, 10);
    free(s);
    return v;
}

/* Every fixture imports (format detected), as runs of llama.cpp with its build. */
static void test_fixtures_import(void **state) {
    (void)state;
    static const struct { const char *file; int samples; } fx[] = {
        {"llama-bench.json", 1}, {"llama-bench.jsonl", 1}, {"llama-bench.csv", 0},
        {"llama-bench.sql", 0}, {"llama-bench.md", 0},
    };
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        char f[1200], db[512], name[64];
        fixture(f, sizeof f, fx[i].file);
        snprintf(name, sizeof name, "fx%zu.db", i);
        e2e_path(db, sizeof db, name);
        import_ok(f, db, NULL);
        /* two tests per fixture (pp and tg), both from llama.cpp b<N> (<commit>) */
        assert_int_equal(q_int(db, "SELECT count(*) FROM runs WHERE engine = 'llama.cpp'"), 2);
        assert_int_equal(q_int(db, "SELECT count(*) FROM runs WHERE engine_version LIKE 'b%(%)'"), 2);
        assert_int_equal(q_int(db, "SELECT count(*) FROM tests WHERE label LIKE 'pp%' AND kind = 'prefill'"), 1);
        assert_int_equal(q_int(db, "SELECT count(*) FROM tests WHERE label LIKE 'tg%' AND kind = 'decode'"), 1);
        assert_int_equal(q_int(db, "SELECT count(*) FROM imports"), 1);
        assert_true(q_int(db, "SELECT count(*) FROM runs WHERE threads > 0") == 2);
        /* JSON has the three repetitions; the others only the mean and stddev */
        const int64_t reps = q_int(db, "SELECT count(*) FROM measurements WHERE repetition >= 0"
                                       " AND metric LIKE '%tok_per_s'");
        assert_int_equal(reps, fx[i].samples ? 6 : 0);
        assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE repetition = -1"
                                   " AND metric IN ('prefill_tok_per_s', 'decode_tok_per_s') AND value > 0"), 2);
        if (fx[i].samples)   /* headline = median of the three repetitions */
            assert_int_equal(q_int(db, "SELECT count(*) FROM measurements h WHERE h.repetition = -1"
                                       " AND h.metric = 'decode_tok_per_s' AND h.value = (SELECT value FROM"
                                       " measurements m WHERE m.test_id = h.test_id AND m.metric = h.metric"
                                       " AND m.repetition >= 0 ORDER BY value LIMIT 1 OFFSET 1)"), 1);
    }
    /* one llama-bench run printed as JSON (stdout) and CSV (stderr): the same runs */
    char f1[1200], f2[1200], db[512];
    fixture(f1, sizeof f1, "llama-bench.json");
    fixture(f2, sizeof f2, "llama-bench.csv");
    e2e_path(db, sizeof db, "both.db");
    import_ok(f1, db, NULL);
    e2e_res_t r;
    run_expect(0, "csv after json", (const char *const[]){"import", f2, "--db", db, NULL}, &r);
    assert_non_null(strstr(r.out, "2 already present"));
    e2e_res_free(&r);
    assert_int_equal(q_int(db, "SELECT count(*) FROM runs"), 2);
    assert_int_equal(q_int(db, "SELECT count(*) FROM imports"), 2);
}

static void test_import_idempotent(void **state) {
    (void)state;
    char f[1200], db[512];
    fixture(f, sizeof f, "llama-bench.jsonl");
    e2e_path(db, sizeof db, "idem.db");
    import_ok(f, db, "llama-bench-jsonl");
    char *before = e2e_db_counts(db);
    e2e_res_t r;
    run_expect(0, "again", (const char *const[]){"import", f, "--db", db, NULL}, &r);
    assert_non_null(strstr(r.out, "already imported"));
    e2e_res_free(&r);
    char *after = e2e_db_counts(db);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* Runs as (uuid, label, repetition, metric, value) lines, ordered. */
static char *content(const char *db) {
    return e2e_db_query(db, "SELECT r.uuid, r.engine, t.label, m.repetition, m.metric,"
                            " printf('%.9g', m.value), m.unit FROM runs r JOIN tests t ON t.run_id = r.id"
                            " JOIN measurements m ON m.test_id = t.id ORDER BY 1, 3, 4, 5");
}

static void test_round_trip(void **state) {
    (void)state;
    char f[1200], a[512], b[512], c[512];
    fixture(f, sizeof f, "llama-bench.json");
    e2e_path(a, sizeof a, "rt-a.db");
    e2e_path(b, sizeof b, "rt-b.db");
    e2e_path(c, sizeof c, "rt-c.db");
    import_ok(f, a, NULL);
    e2e_res_t r;
    run_expect(0, "export json", (const char *const[]){"export", "--db", a, "--format", "llama-bench-json", NULL}, &r);
    e2e_write("rt.json", r.out, (size_t)-1);
    e2e_res_free(&r);
    char p[512];
    e2e_path(p, sizeof p, "rt.json");
    import_ok(p, b, NULL);
    char *ca = content(a), *cb = content(b);
    assert_string_equal(ca, cb);
    /* importing the export back into the first database adds nothing */
    run_expect(0, "back", (const char *const[]){"import", p, "--db", a, NULL}, &r);
    assert_non_null(strstr(r.out, "0 runs"));
    e2e_res_free(&r);
    /* SQL carries llama-bench's means only: the same runs (uuids), same means */
    run_expect(0, "export sql", (const char *const[]){"export", "--db", a, "--format", "llama-bench-sql", NULL}, &r);
    assert_non_null(strstr(r.out, "CREATE TABLE IF NOT EXISTS llama_bench"));
    e2e_write("rt.sql", r.out, (size_t)-1);
    e2e_res_free(&r);
    e2e_path(p, sizeof p, "rt.sql");
    import_ok(p, c, NULL);
    char *ua = e2e_db_query(a, "SELECT uuid FROM runs ORDER BY uuid"), *uc = e2e_db_query(c, "SELECT uuid FROM runs ORDER BY uuid");
    assert_string_equal(ua, uc);
    assert_int_equal(q_int(c, "SELECT count(*) FROM measurements WHERE metric = 'decode_tok_per_s:mean'"), 1);
    free(ca); free(cb); free(ua); free(uc);
}

/* A bad file: exit 2, FILE:LINE: in the message, nothing recorded. */
static void expect_bad(const char *name, const char *text, const char *format, int line, const char *needle) {
    e2e_write(name, text, (size_t)-1);
    char p[512], db[512], want[600];
    e2e_path(p, sizeof p, name);
    e2e_path(db, sizeof db, "bad.db");
    char *before = e2e_db_counts(db);
    e2e_res_t r;
    if (format) run_expect(2, name, (const char *const[]){"import", p, "--db", db, "--format", format, NULL}, &r);
    else run_expect(2, name, (const char *const[]){"import", p, "--db", db, NULL}, &r);
    snprintf(want, sizeof want, "%s:%d:", p, line);
    if (!strstr(r.err, want)) fail_msg("%s: expected '%s' in: %s", name, want, r.err);
    if (needle && !strstr(r.err, needle)) fail_msg("%s: expected '%s' in: %s", name, needle, r.err);
    e2e_res_free(&r);
    char *after = e2e_db_counts(db);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void test_malformed(void **state) {
    (void)state;
    /* a good import first: a bad file must not disturb it */
    char f[1200], db[512];
    fixture(f, sizeof f, "llama-bench.csv");
    e2e_path(db, sizeof db, "bad.db");
    import_ok(f, db, NULL);
    expect_bad("syntax.json", "[\n  {\"n_prompt\": 8,\n   \"n_gen\" 0}\n]\n", NULL, 3, "invalid JSON");
    expect_bad("row2.json", "[\n  {\"n_prompt\": 8, \"n_gen\": 0, \"avg_ts\": 5},\n  {\"n_prompt\": \"x\",\n"
               "   \"n_gen\": 0, \"avg_ts\": 5}\n]\n", NULL, 3, "n_prompt");
    expect_bad("neg.jsonl", "{\"n_prompt\": 8, \"n_gen\": 0, \"avg_ts\": 5}\n\n{\"n_prompt\": 8, \"n_gen\": -4,"
               " \"avg_ts\": 5}\n", NULL, 3, "n_gen");
    expect_bad("samples.jsonl", "{\"n_prompt\": 8, \"n_gen\": 0, \"samples_ns\": [1, 2], \"samples_ts\": [3]}\n",
               NULL, 1, "samples_ns has 2 values");
    expect_bad("nospeed.jsonl", "{\"n_prompt\": 8, \"n_gen\": 0}\n", NULL, 1, "no speed");
    expect_bad("fields.csv", "build_commit,n_prompt,n_gen,avg_ts\n\"a\",\"8\",\"0\",\"5\"\n\"a\",\"8\",\"0\"\n",
               NULL, 3, "3 fields, the header has 4");
    expect_bad("quote.csv", "build_commit,n_prompt,n_gen,avg_ts\n\"a,\"8\",\"0\",\"5\"\n", NULL, 2, NULL);
    expect_bad("after.csv", "build_commit,n_prompt,n_gen,avg_ts\n\"a\",\"8\"x,\"0\",\"5\"\n", NULL, 2,
               "after a closing quote");
    expect_bad("zero.csv", "build_commit,n_prompt,n_gen,avg_ts\n\"a\",\"0\",\"0\",\"5\"\n", NULL, 2, "both 0");
    expect_bad("line.sql", "CREATE TABLE IF NOT EXISTS llama_bench (\n  n_prompt INTEGER\n);\n\n"
               "INSERT INTO llama_bench (n_prompt, n_gen, avg_ts) VALUES ('8', '0', '5');\nDROP TABLE x;\n",
               NULL, 6, "INSERT INTO llama_bench");
    expect_bad("count.sql", "INSERT INTO llama_bench (n_prompt, n_gen, avg_ts) VALUES ('8', '0');\n", NULL, 1,
               "2 values for 3 columns");
    expect_bad("test.md", "| model | backend | threads | test | t/s |\n| --- | --- | ---: | ---: | ---: |\n"
               "| llama | CPU | 2 | pp16 | 10.0 ± 1.0 |\n| llama | CPU | 2 | xx16 | 10.0 ± 1.0 |\n", NULL, 4,
               "test 'xx16'");
    expect_bad("trial.txt", "Trial 1:  prompt_tps=1.0, generation_tps=2.0, peak_memory=0.5\n", "mlx-lm", 1, "Trial");
    expect_bad("what.txt", "hello\n", NULL, 1, "cannot tell the format");
}

static void test_mlx(void **state) {
    (void)state;
    e2e_write("mlx-bench.txt",
              "Running warmup..\n"
              "Timing with prompt_tokens=512, generation_tokens=128, batch_size=1.\n"
              "Trial 1:  prompt_tps=1500.250, generation_tps=80.500, peak_memory=2.100\n"
              "Trial 2:  prompt_tps=1490.000, generation_tps=81.000, peak_memory=2.150\n"
              "Trial 3:  prompt_tps=1510.500, generation_tps=79.000, peak_memory=2.120\n"
              "Averages: prompt_tps=1500.250, generation_tps=80.167, peak_memory=2.123\n", (size_t)-1);
    e2e_write("mlx-gen.txt",
              "==========\nsome text\n==========\n"
              "Prompt: 7 tokens, 16.200 tokens-per-sec\n"
              "Generation: 20 tokens, 98.705 tokens-per-sec\n"
              "Peak memory: 1.065 GB\n", (size_t)-1);
    char p[512], db[512];
    e2e_path(db, sizeof db, "mlx.db");
    e2e_path(p, sizeof p, "mlx-bench.txt");
    e2e_res_t r;
    run_expect(0, "mlx bench", (const char *const[]){"import", p, "--db", db, "--model", "Llama-3.2-1B-4bit", NULL}, &r);
    e2e_res_free(&r);
    e2e_path(p, sizeof p, "mlx-gen.txt");
    import_ok(p, db, NULL);
    assert_int_equal(q_int(db, "SELECT count(*) FROM runs WHERE engine = 'mlx-lm'"), 4);
    assert_int_equal(q_int(db, "SELECT count(*) FROM tests WHERE label IN ('pp512', 'tg128', 'pp7', 'tg20')"), 4);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements m JOIN tests t ON t.id = m.test_id"
                               " WHERE t.label = 'pp512' AND m.repetition >= 0"), 3);
    char *med = e2e_db_query(db, "SELECT printf('%.3f', value) FROM measurements m JOIN tests t ON t.id = m.test_id"
                                 " WHERE t.label = 'tg128' AND m.repetition = -1 AND metric = 'decode_tok_per_s'");
    assert_string_equal(med, "80.500\n");
    free(med);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE metric = 'peak_memory_gb'"
                               " AND abs(value - 2.15) < 1e-9"), 2);
    assert_int_equal(q_int(db, "SELECT count(*) FROM models WHERE name = 'Llama-3.2-1B-4bit'"), 1);
}

static void native_run(const char *db) {
    e2e_write("tiny.ini", "[model]\nsynth = llama-tiny\nseed = 1\n[engine]\nthreads = 1\n"
                          "[protocol]\nwarmup = 0\nrepetitions = 2\nbandwidth_probe = 0\n"
                          "[prefill]\nprompt_tokens = 16\n[decode]\ntokens = 8\n", (size_t)-1);
    char ini[512];
    e2e_path(ini, sizeof ini, "tiny.ini");
    e2e_res_t r;
    run_expect(0, "run", (const char *const[]){"run", ini, "--db", db, NULL}, &r);
    e2e_res_free(&r);
}

/* Everything a run carries, keyed by uuid (ids differ between databases). */
static char *full_content(const char *db) {
    char *a = content(db);
    char *b = e2e_db_query(db, "SELECT r.uuid, h.fingerprint, b.fingerprint, COALESCE(md.content_hash, ''),"
                               " (SELECT count(*) FROM token_events e JOIN tests t ON t.id = e.test_id WHERE t.run_id = r.id),"
                               " (SELECT count(*) FROM sensor_samples s WHERE s.run_id = r.id),"
                               " (SELECT count(*) FROM sensor_absent s WHERE s.run_id = r.id),"
                               " (SELECT group_concat(key || '=' || value) FROM run_tags g WHERE g.run_id = r.id)"
                               " FROM runs r JOIN hosts h ON h.id = r.host_id JOIN builds b ON b.id = r.build_id"
                               " LEFT JOIN models md ON md.id = r.model_id ORDER BY r.uuid");
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s\n%s", a, b);
    free(a);
    free(b);
    return s;
}

static void test_merge(void **state) {
    (void)state;
    char a[512], b[512], x[512], y[512], f[1200];
    e2e_path(a, sizeof a, "dev-a.db");
    e2e_path(b, sizeof b, "dev-b.db");
    e2e_path(x, sizeof x, "all-ab.db");
    e2e_path(y, sizeof y, "all-ba.db");
    native_run(a);
    fixture(f, sizeof f, "llama-bench.json");
    import_ok(f, a, NULL);
    fixture(f, sizeof f, "llama-bench.md");
    import_ok(f, b, NULL);
    native_run(b);
    e2e_res_t r;
    run_expect(0, "merge ab", (const char *const[]){"merge", a, b, "--into", x, NULL}, &r);
    e2e_res_free(&r);
    run_expect(0, "merge ba", (const char *const[]){"merge", b, a, "--into", y, NULL}, &r);
    e2e_res_free(&r);
    assert_int_equal(q_int(x, "SELECT count(*) FROM runs"), 6);
    assert_true(q_int(x, "SELECT count(*) FROM token_events") > 0);
    assert_int_equal(q_int(x, "SELECT count(*) FROM token_events"),
                     q_int(a, "SELECT count(*) FROM token_events") + q_int(b, "SELECT count(*) FROM token_events"));
    assert_int_equal(q_int(x, "SELECT count(*) FROM sensor_samples"),
                     q_int(a, "SELECT count(*) FROM sensor_samples") + q_int(b, "SELECT count(*) FROM sensor_samples"));
    /* the typed test parameters come along */
    assert_true(q_int(a, "SELECT count(*) FROM test_params") > 0);
    assert_int_equal(q_int(x, "SELECT count(*) FROM test_params"),
                     q_int(a, "SELECT count(*) FROM test_params") + q_int(b, "SELECT count(*) FROM test_params"));
    char *cx = full_content(x), *cy = full_content(y), *ca = full_content(a);
    assert_string_equal(cx, cy);
    /* idempotent: again adds nothing */
    char *before = e2e_db_counts(x);
    run_expect(0, "merge again", (const char *const[]){"merge", a, b, "--into", x, NULL}, &r);
    assert_non_null(strstr(r.out, "0 runs added"));
    e2e_res_free(&r);
    char *after = e2e_db_counts(x);
    /* only merge_sources grows */
    assert_int_equal(q_int(x, "SELECT count(*) FROM runs"), 6);
    char *c2 = full_content(x);
    assert_string_equal(cx, c2);
    /* a source merged into an empty file keeps every run as it was */
    char z[512];
    e2e_path(z, sizeof z, "only-a.db");
    run_expect(0, "merge a", (const char *const[]){"merge", a, "--into", z, NULL}, &r);
    e2e_res_free(&r);
    char *cz = full_content(z);
    assert_string_equal(ca, cz);
    free(cx); free(cy); free(ca); free(c2); free(cz); free(before); free(after);
    /* bad sources */
    run_expect(2, "missing", (const char *const[]){"merge", "nope.db", "--into", x, NULL}, &r);
    e2e_res_free(&r);
    run_expect(2, "self", (const char *const[]){"merge", x, "--into", x, NULL}, &r);
    e2e_res_free(&r);
    run_expect(2, "no --into", (const char *const[]){"merge", a, NULL}, &r);
    e2e_res_free(&r);
}

/* One file imported on two devices (from different paths) is the same runs there. */
static void test_merge_same_import(void **state) {
    (void)state;
    char f[1200], cp[512], a[512], b[512], x[512];
    fixture(f, sizeof f, "llama-bench.md");
    size_t n;
    FILE *in = fopen(f, "rb");
    assert_non_null(in);
    char buf[8192];
    n = fread(buf, 1, sizeof buf - 1, in);
    fclose(in);
    buf[n] = '\0';
    e2e_write("copy-of.md", buf, n);
    e2e_path(cp, sizeof cp, "copy-of.md");
    e2e_path(a, sizeof a, "s-a.db");
    e2e_path(b, sizeof b, "s-b.db");
    e2e_path(x, sizeof x, "s-all.db");
    import_ok(f, a, NULL);
    import_ok(cp, b, "llama-bench-md");
    e2e_res_t r;
    run_expect(0, "merge same", (const char *const[]){"merge", a, b, "--into", x, NULL}, &r);
    assert_non_null(strstr(r.out, "0 runs added, 2 already present"));
    e2e_res_free(&r);
    assert_int_equal(q_int(x, "SELECT count(*) FROM runs"), 2);
    /* md rows carry no time: recorded as unknown */
    assert_int_equal(q_int(x, "SELECT count(*) FROM runs WHERE started_utc = 'unknown'"), 2);
}

static void test_merge_conflict(void **state) {
    (void)state;
    char a[512], a2[512], x[512], f[1200];
    e2e_path(a, sizeof a, "c-a.db");
    e2e_path(a2, sizeof a2, "c-a2.db");
    e2e_path(x, sizeof x, "c-all.db");
    fixture(f, sizeof f, "llama-bench.jsonl");
    import_ok(f, a, NULL);
    import_ok(f, a2, NULL);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(a2, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "UPDATE measurements SET value = value * 2 WHERE id ="
                                      " (SELECT min(id) FROM measurements)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    e2e_res_t r;
    run_expect(0, "merge a", (const char *const[]){"merge", a, "--into", x, NULL}, &r);
    e2e_res_free(&r);
    char *before = content(x);
    run_expect(2, "conflict", (const char *const[]){"merge", a2, "--into", x, NULL}, &r);
    if (!strstr(r.err, a2) || !strstr(r.err, x) || !strstr(r.err, "differs"))
        fail_msg("conflict message must name both files: %s", r.err);
    e2e_res_free(&r);
    char *after = content(x);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "peers")) return 1;
    const char *root = getenv("TB_SOURCE_ROOT");
    snprintf(fixtures, sizeof fixtures, "%s/tests/peers/fixtures", root ? root : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_import),
        cmocka_unit_test(test_import_idempotent),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_mlx),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_merge_same_import),
        cmocka_unit_test(test_merge_conflict),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    e2e_cleanup();
    return rc;
}
