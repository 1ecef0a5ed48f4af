/*
 * test_claim_record.c — claims recorded in SQLite, end to end through the
 * binary: `claim --db` writes every condition under a run of its own and
 * they read back as the command printed them; --measure records by
 * default; a scenario's [claim] sections record their conditions beside
 * the decode tests that measured `this`; bad input records nothing and
 * names the file and line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../e2e/e2e.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char devdir[300], calib[300];

static e2e_res_t run(const char *const *args) {
    e2e_res_t r;
    e2e_run(E2E_NO_LIMIT, args, &r);
    e2e_assert_clean(&r, args[0]);
    return r;
}

#define HDR "device,backend,runtime,model,type,ctx,head,decode_tok_s,source,read,note\n"
#define ROW(t) "fx,gpu,llama.cpp,llama-2-7b,f16,512,exact," t ",https://example.org/t,2026-12-03,fixture\n"

static void fixtures(void) {
    char p[400];
    e2e_path(devdir, sizeof devdir, "dev");
    snprintf(p, sizeof p, "mkdir -p %s", devdir);
    assert_int_equal(system(p), 0);
    e2e_write("dev/fx.ini", "[device]\nid = fx\nname = Fixture\nclass = laptop\n[bandwidth]\npeak_gbps = 100\n"
                            "source = https://example.org/fx\nread = 2026-12-03\nestimate = no\n", (size_t)-1);
    e2e_write("calib.csv", HDR ROW("3.0") ROW("3.2") ROW("3.4") ROW("3.6"), (size_t)-1);
    e2e_path(calib, sizeof calib, "calib.csv");
}

/* The one value of a single-row query (heap). */
static char *one(const char *db, const char *sql) {
    char *v = e2e_db_query(db, sql);
    assert_non_null(v);
    size_t n = strlen(v);
    while (n && v[n - 1] == '\n') v[--n] = '\0';
    return v;
}

/* TMP/name as a NUL-terminated heap string. */
static char *text_of(const char *name) {
    size_t n;
    char *raw = e2e_slurp(name, &n);
    assert_non_null(raw);
    char *t = strndup(raw, n);
    free(raw);
    assert_non_null(t);
    return t;
}

static void expect_one(const char *db, const char *sql, const char *want) {
    char *v = one(db, sql);
    if (strcmp(v, want)) fail_msg("%s: got '%s', want '%s'", sql, v, want);
    free(v);
}

/* `claim --db`: six conditions (3 contexts x 2 heads) under one run tagged
 * command=claim; the recorded figures are the ones printed. */
static void test_claim_db(void **st) {
    (void)st;
    fixtures();
    char db[300];
    e2e_path(db, sizeof db, "c.db");
    const char *a[] = {"claim", "--model", "llama-2-7b", "--type", "f16", "--device", "fx", "--claimed", "6",
                       "--calibration", calib, "--devices", devdir, "--json", "--db", db, NULL};
    e2e_res_t r = run(a);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.err, "recorded 6 conditions as run 1"));
    expect_one(db, "SELECT count(*) FROM claims WHERE run_id = 1 AND section = 'claim'", "6");
    expect_one(db, "SELECT count(*) FROM claims WHERE head_approx = 1 AND head = 'approx:8016:256'", "3");
    expect_one(db, "SELECT r.status || ' ' || t.value || ' ' || r.kv_type FROM runs r JOIN run_tags t"
                   " ON t.run_id = r.id AND t.key = 'command'", "complete claim f16");
    expect_one(db, "SELECT count(*) FROM claims c JOIN runs r ON r.id = c.run_id JOIN hosts h ON h.id = r.host_id"
                   " JOIN builds b ON b.id = r.build_id WHERE length(b.git_commit) > 0", "6");
    /* the first condition (ctx 512, exact) is the JSON's top level */
    char *v = one(db, "SELECT verdict || '|' || basis_rows || '|' || printf('%.3f', roofline_tok_s) || '|' ||"
                      " bytes_per_token || '|' || claimed_tok_s FROM claims WHERE idx = 0");
    char want[256], *bpt = strstr(r.out, "\"bytes_per_token\": "), *roof = strstr(r.out, "\"roofline_tok_s\": ");
    assert_non_null(bpt);
    assert_non_null(roof);
    snprintf(want, sizeof want, "beyond published efficiency|4|%.*s|%lld|6.0", (int)strcspn(roof + 18, ","), roof + 18,
             strtoll(bpt + 19, NULL, 10));
    if (strcmp(v, want)) fail_msg("recorded '%s', printed '%s'", v, want);
    free(v);
    /* the calibration hash printed in the assumptions is the one recorded */
    char *h = strstr(r.out, "hash ");
    assert_non_null(h);
    char q[256];
    snprintf(q, sizeof q, "SELECT count(DISTINCT calibration_hash) || ' ' || calibration_hash FROM claims");
    snprintf(want, sizeof want, "1 %.16s", h + 5);
    expect_one(db, q, want);
    expect_one(db, "SELECT json_array_length(assumptions) || ' ' || json_array_length(basis_refs) FROM claims"
                   " WHERE idx = 0", "6 4");
    e2e_res_free(&r);
    const char *sh[] = {"show", "1", "--db", db, NULL};
    r = run(sh);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "claim fx 512 exact: roofline "));
    assert_non_null(strstr(r.out, "claimed 6 beyond published efficiency, measured -"));
    e2e_res_free(&r);
}

/* Bad input records nothing. */
static void test_claim_db_errors(void **st) {
    (void)st;
    fixtures();
    char db[300];
    e2e_path(db, sizeof db, "bad.db");
    const char *a[] = {"claim", "--model", "llama-2-7b", "--device", "nope", "--devices", devdir, "--calibration",
                       calib, "--db", db, NULL};
    e2e_res_t r = run(a);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "unknown device 'nope'"));
    assert_true(e2e_size("bad.db") < 0);
    e2e_res_free(&r);
    const char *b[] = {"claim", "--model", "llama-2-7b", "--device", "fx", "--record", "--no-db", NULL};
    r = run(b);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--no-db goes with neither"));
    e2e_res_free(&r);
}

/* --measure records into the default database ($TB_DB) unless --no-db. */
static void test_measure_records(void **st) {
    (void)st;
    fixtures();
    char model[300];
    e2e_path(model, sizeof model, "tiny.gguf");
    const char *s[] = {"model", "synth", "--preset", "llama-tiny", "--out", model, NULL};
    e2e_res_t r = run(s);
    assert_int_equal(r.status, 0);
    e2e_res_free(&r);
    setenv("TB_THIS_GBPS", "10", 1);
    const char *a[] = {"claim", "--model", model, "--device", "this", "--measure", "--measure-tokens", "4",
                       "--ctx", "8", "--head", "exact", "--calibration", calib, "--devices", devdir, NULL};
    r = run(a);
    assert_int_equal(r.status, 0);
    e2e_res_free(&r);
    const char *db = getenv("TB_DB");
    assert_non_null(db);
    expect_one(db, "SELECT count(*) || ' ' || sum(measured_tok_s > 0) || ' ' || min(bandwidth_kind) || ' ' ||"
                   " min(model_source) || ' ' || min(runtime) FROM claims", "1 1 measured gguf ternbench");
    /* ... and the database's measured claims can join the calibration */
    const char *c[] = {"claim", "calibrate", "--loo", "--calibration", calib, "--devices", devdir, "--add-db", db, NULL};
    r = run(c);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "(measured claims)"));
    assert_non_null(strstr(r.err, "measured claim rows added"));
    e2e_res_free(&r);
    unsetenv("TB_THIS_GBPS");
}

static const char scen[] =
    "[model]\nsynth = maple-tiny\n"
    "[engine]\nthreads = 1\n"
    "[protocol]\nwarmup = 0\nrepetitions = 2\nbandwidth_probe = 0\nthrottle_check = false\n"
    "[claim.fx]\ndevice = fx\npreset = llama-2-7b\ntype = f16\nctx = 512\nhead = exact\nclaimed = 3, 10\n"
    "calibration = calib.csv\n"
    "[claim.this]\ndevice = this\nmeasure = true\nctx = 16, 32\nhead = exact, approx:16\ntokens = 4\n"
    "calibration = calib.csv\n";

/* A scenario's [claim] sections: profile conditions judged, `this`
 * conditions carrying the decode tests that measured them (the figure is
 * the median of the test's repetitions), approximate ones not measured. */
static void test_scenario_claims(void **st) {
    (void)st;
    fixtures();
    e2e_write("claims.ini", scen, (size_t)-1);
    char ini[300], db[300];
    e2e_path(ini, sizeof ini, "claims.ini");
    e2e_path(db, sizeof db, "s.db");
    setenv("TB_THIS_GBPS", "10", 1);
    setenv("TB_DEVICES_DIR", devdir, 1);
    const char *a[] = {"run", ini, "--db", db, "-q", NULL};
    e2e_res_t r = run(a);
    if (r.status) fail_msg("run: %s", r.err);
    e2e_res_free(&r);
    expect_one(db, "SELECT group_concat(verdict, ',') FROM (SELECT verdict FROM claims WHERE section = 'claim.fx'"
                   " ORDER BY idx)", "plausible,impossible");
    expect_one(db, "SELECT count(*) FROM claims WHERE section = 'claim.this'", "4");
    expect_one(db, "SELECT count(*) FROM claims WHERE section = 'claim.this' AND head_approx = 1"
                   " AND measured_tok_s IS NULL AND measured_test_id IS NULL", "2");
    expect_one(db, "SELECT group_concat(t.label || ':' || t.kind, ',') FROM claims c JOIN tests t"
                   " ON t.id = c.measured_test_id WHERE c.section = 'claim.this'", "tg4@d16:decode,tg4@d32:decode");
    /* the recorded figure is the median (two repetitions: their mean) of the measuring test */
    expect_one(db, "SELECT count(*) FROM claims c WHERE c.measured_test_id IS NOT NULL AND abs(c.measured_tok_s -"
                   " (SELECT avg(value) FROM measurements m WHERE m.test_id = c.measured_test_id AND"
                   " m.metric = 'decode_tok_per_s' AND m.repetition >= 0)) < 1e-9 * c.measured_tok_s", "2");
    expect_one(db, "SELECT count(DISTINCT run_id) || ' ' || min(bandwidth_gbps) FROM claims WHERE device = 'this'",
               "1 10.0");
    unsetenv("TB_THIS_GBPS");
    unsetenv("TB_DEVICES_DIR");

    /* the report of that run: the claims table row by row, and the chart's data */
    char out[300];
    e2e_path(out, sizeof out, "rep");
    const char *rp[] = {"report", "--db", db, "--last", "1", "--out", out, NULL};
    r = run(rp);
    if (r.status) fail_msg("report: %s", r.err);
    e2e_res_free(&r);
    char *md = text_of("rep/report.md");
    assert_non_null(strstr(md, "## Claims"));
    char *rows = one(db, "SELECT group_concat(x, char(10)) FROM (SELECT '| 1 | ' || section || ' | ' || device || ' | '"
                         " || ctx || ' | ' || head || CASE head_approx WHEN 1 THEN ' (approximate)' ELSE '' END || ' | '"
                         " || printf('%.1f', bytes_per_token / 1e6) || ' | ' || printf('%.1f', roofline_tok_s) AS x"
                         " FROM claims ORDER BY section, idx)");
    int n_rows = 0;
    for (char *line = strtok(rows, "\n"); line; line = strtok(NULL, "\n"), n_rows++)
        if (!strstr(md, line)) fail_msg("report.md lacks the row '%s'", line);
    assert_int_equal(n_rows, 6);
    free(rows);
    assert_non_null(strstr(md, "| 3.0 |"));
    assert_non_null(strstr(md, "| impossible |"));
    free(md);
    char *dat = text_of("rep/claims.dat");
    char *dat_copy = strdup(dat);
    /* one line per condition (fx 512 exact; this at 16 and 32, exact and approximate), two claimed speeds */
    int conds = 0, measured = 0, claims = 0, block = 0;
    for (char *line = strtok(dat, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') { block += strstr(line, "claimed speeds") != NULL; continue; }
        if (block) { claims++; continue; }
        conds++;
        size_t len = strlen(line);
        measured += len > 2 && strcmp(line + len - 2, " ?") != 0;
    }
    if (conds != 5 || measured != 2 || claims != 2)
        fail_msg("claims.dat: %d conditions, %d measured, %d claimed:\n%s", conds, measured, claims, dat_copy);
    free(dat_copy);
    free(dat);
    assert_true(e2e_size("rep/claims.gp") > 0);

    /* merged into another database, the claims follow their run and their measuring tests */
    char all[300];
    e2e_path(all, sizeof all, "all.db");
    const char *mg[] = {"merge", db, "--into", all, NULL};
    r = run(mg);
    if (r.status) fail_msg("merge: %s", r.err);
    e2e_res_free(&r);
    expect_one(all, "SELECT count(*) || ' ' || count(c.measured_test_id) FROM claims c", "6 2");
    expect_one(all, "SELECT group_concat(t.label, ',') FROM claims c JOIN tests t ON t.id = c.measured_test_id"
                    " AND t.run_id = c.run_id", "tg4@d16,tg4@d32");
}

/* A malformed [claim] section: exit 2, FILE:LINE, nothing recorded. */
static void test_scenario_bad(void **st) {
    (void)st;
    fixtures();
    e2e_write("bad.ini", "[model]\nsynth = maple-tiny\n[claim]\ndevice = fx, pixel-99\n", (size_t)-1);
    char ini[300], db[300], want[400];
    e2e_path(ini, sizeof ini, "bad.ini");
    e2e_path(db, sizeof db, "bad-s.db");
    setenv("TB_DEVICES_DIR", devdir, 1);
    const char *a[] = {"run", ini, "--db", db, NULL};
    e2e_res_t r = run(a);
    assert_int_equal(r.status, 2);
    snprintf(want, sizeof want, "%s:4: [claim] device: unknown device \"pixel-99\"", ini);
    if (!strstr(r.err, want)) fail_msg("want '%s' in: %s", want, r.err);
    assert_true(e2e_size("bad-s.db") < 0);
    e2e_res_free(&r);
    unsetenv("TB_DEVICES_DIR");
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "claimrec")) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_db),        cmocka_unit_test(test_claim_db_errors),
        cmocka_unit_test(test_measure_records), cmocka_unit_test(test_scenario_claims),
        cmocka_unit_test(test_scenario_bad),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    e2e_cleanup();
    return rc;
}
