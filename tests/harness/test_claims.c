/*
 * test_claims.c — the scenario kind [claim] and the claims table: a
 * malformed [claim] section is refused naming FILE:LINE (unknown device,
 * preset or layout, bad head or claimed speed, measure without `this`),
 * its measured cases and labels; a schema-4 database with data migrates
 * to schema 5 keeping every row; claim rows are written all or none and
 * read back as written.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "claim.h"
#include "scenario.h"
#include "store.h"
#include "store_claims.h"
#include "ternbench.h"
#include "tmpdir.h"
#include "plan_expect.h"

static int setup(void **state) {
    (void)state;
    return tmpdir_make("claims");
}

static int parse(const char *text, tb_plan_t *p) { return plan_parse_in("c.ini", text, p); }

static void expect_error(const char *text, int line, const char *what) {
    plan_expect_error_in("c.ini", text, line, what);
}

#define M "[model]\nsynth = maple-tiny\n"   /* lines 1-2 */

static void test_claim_section_errors(void **state) {
    (void)state;
    expect_error(M "[claim]\npreset = maple-preview\n", 3, "device: needs at least one device id");
    expect_error(M "[claim]\ndevice = m4, pixel-99\n", 4, "unknown device \"pixel-99\"");
    expect_error(M "[claim]\ndevice = m4,\n", 4, "device: item 2: expected a device id");
    expect_error(M "[claim]\ndevice = m4\npreset = no-such-model\n", 5, "[claim] preset:");
    expect_error(M "[claim]\ndevice = m4\npreset = maple-preview\ntype = q9_9\n", 6, "[claim] type:");
    expect_error(M "[claim]\ndevice = m4\ntype = q4_0\n", 5, "type: applies only with preset");
    expect_error(M "[claim.x]\ndevice = m4\nhead = exact, approx:0\n", 5, "[claim.x] head: item 2");
    expect_error(M "[claim]\ndevice = m4\nclaimed = 120, fast\n", 5, "claimed: item 2: expected a positive speed");
    expect_error(M "[claim]\ndevice = m4\nclaimed = -3\n", 5, "claimed: item 1");
    expect_error(M "[claim]\ndevice = m4\nctx = 512, -1\n", 5, "[claim] ctx: item 2");
    expect_error(M "[claim]\ndevice = m4\nmeasure = true\n", 5, "measure: measures this machine");
    expect_error(M "[claim]\ndevice = this\npreset = maple-preview\nmeasure = yes\n", 6,
                 "measure: measures the scenario's model");
    expect_error(M "[claim]\ndevice = m4\nbackend = tpu\n", 5, "expected one of any|cpu|gpu|npu");
    expect_error(M "[claim]\ndevice = m4\ncalibration = missing.csv\n", 5, "calibration: cannot read");
    expect_error(M "[claim]\ndevice = m4\nrepetitions = 3\n", 5, "unknown key \"repetitions\" in [claim]");
}

/* Without measure a [claim] section runs nothing; with it, one decode case
 * per ctx, labelled as a decode depth. */
static void test_claim_cases(void **state) {
    (void)state;
    tb_plan_t p;
    int rc = parse(M "[claim.a]\ndevice = iphone-16-pro, m4\npreset = maple-preview\nclaimed = 120, 218\n"
                     "[claim.b]\ndevice = this\nmeasure = true\nctx = 16, 1k\ntokens = 8\n", &p);
    if (rc) fail_msg("%s", tb_last_error());
    assert_int_equal(p.n_tests, 2);
    assert_int_equal(tb_section_n_cases(&p.tests[0]), 0);
    assert_int_equal(tb_section_n_cases(&p.tests[1]), 2);
    char label[96];
    tb_section_case_label(&p.tests[1], 1, label, sizeof label);
    assert_string_equal(label, "tg8@d1024");
    assert_non_null(strstr(p.normalized, "[claim.a]\ndevice = iphone-16-pro, m4\npreset = maple-preview\n"));
    assert_non_null(strstr(p.normalized, "ctx = 512, 2048, 8192\nhead = exact, approx\n"));
    tb_plan_free(&p);
}

/* ===================================================================== */

static int64_t q_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -999;
    sqlite3_finalize(st);
    return v;
}

static double q_real(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    double v = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL
             ? sqlite3_column_double(st, 0) : NAN;
    sqlite3_finalize(st);
    return v;
}

/* A database at schema version 4 (steps 0..3 applied as shipped) holding
 * a run with a decode test and a measurement. */
static void make_v4(const char *path) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    for (int i = 0; i < 4; i++)
        if (sqlite3_exec(db, tb_store_steps[i], NULL, NULL, NULL) != SQLITE_OK) fail_msg("step %d: %s", i, sqlite3_errmsg(db));
    const char *data =
        "PRAGMA user_version = 4;"
        "INSERT INTO hosts VALUES (1,'fp','h','v','b',NULL,NULL,NULL,2,2,NULL,NULL,NULL,'','1','os','k','2026-01-01T00:00:00Z');"
        "INSERT INTO builds VALUES (1,'bf','0.1.0','abc123',0,'gcc','-O2','release','avx2','2026-01-01T00:00:00Z');"
        "INSERT INTO scenarios VALUES (1,'sh','quick','quick.ini','[model]');"
        "INSERT INTO runs (id, uuid, started_utc, status, pid, host_id, build_id, scenario_id, threads, isa, kv_type)"
        " VALUES (1,'u1','2026-01-01T00:00:00Z','complete',1,1,1,1,2,'avx2','f16');"
        "INSERT INTO tests (id, run_id, section, kind, label, params, status) VALUES (1,1,'decode','decode','tg8@d0','{}','complete');"
        "INSERT INTO measurements (test_id, repetition, metric, value, unit) VALUES (1,0,'decode_tok_per_s',42.5,'tok/s');";
    if (sqlite3_exec(db, data, NULL, NULL, NULL) != SQLITE_OK) fail_msg("%s", sqlite3_errmsg(db));
    assert_int_equal(q_int(db, "PRAGMA user_version"), 4);
    sqlite3_close(db);
}

static tb_claim_rec_t rec(int idx, const char *verdict, double measured, int64_t test_id) {
    return (tb_claim_rec_t){
        .section = "claim.m", .idx = idx, .model = "maple-preview", .model_source = "preset", .weights = "mlx-maple",
        .bits_per_weight = 2.02,
        .device = "m4", .device_name = "Mac mini (M4)", .device_class = "desktop", .backend = "gpu", .runtime = "mlx",
        .ctx = 512, .head = idx ? "approx:4748:256" : "exact", .head_approx = idx != 0, .kv_type = "f16",
        .claimed_tok_s = 218, .prompt_tokens = -1, .claimed_ttft_ms = NAN,
        .bytes_per_token = 440900000 - idx, .weight_bytes = 300000000, .head_bytes = 100000000, .kv_bytes = 40900000,
        .bandwidth_gbps = 120, .bandwidth_kind = "estimate", .bandwidth_source = "https://example.org/m4",
        .roofline_tok_s = 272.2, .projected_lo_tok_s = 162.3, .projected_hi_tok_s = 257.8, .basis_rows = 4,
        .basis = "4 rows", .basis_refs = "[\"published.csv:56\"]", .best_efficiency = 0.77,
        .verdict = verdict, .verdict_detail = "why", .implied_gbps = 96.1, .implied_pct_peak = 80.1,
        .ttft_min_ms = NAN, .measured_tok_s = measured, .measured_test_id = test_id,
        .calibration_path = "calibration/published.csv", .calibration_rows = 62,
        .calibration_hash = "52094ccbda1db362", .assumptions = "[\"head exact\"]",
    };
}

/* Schema 4 with data migrates to 5: every row kept, the claims table
 * there; claims under the old run are written and read back, and a check
 * whose second row is refused (a duplicate index) leaves none behind. */
static void test_migrate_v4_and_claims(void **state) {
    (void)state;
    char path[512];
    tpath(path, sizeof path, "v4.db");
    make_v4(path);
    tb_store_t *s;
    if (tb_store_open(path, &s, NULL)) fail_msg("%s", tb_last_error());
    sqlite3 *db = tb_store_db(s);
    assert_true(tb_store_version() >= 5);
    assert_int_equal(q_int(db, "PRAGMA user_version"), tb_store_version());
    assert_int_equal(q_int(db, "SELECT count(*) FROM runs WHERE uuid = 'u1' AND status = 'complete'"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM tests WHERE kind = 'decode'"), 1);
    assert_true(fabs(q_real(db, "SELECT value FROM measurements WHERE test_id = 1") - 42.5) < 1e-12);
    assert_int_equal(q_int(db, "SELECT count(*) FROM claims"), 0);

    tb_claim_rec_t r[2] = {rec(0, "beyond published efficiency", NAN, -1), rec(1, "plausible", 30.5, 1)};
    assert_int_equal(tb_store_add_claims(s, 1, r, 2), TB_OK);
    assert_int_equal(q_int(db, "SELECT count(*) FROM claims WHERE run_id = 1"), 2);
    assert_int_equal(q_int(db, "SELECT bytes_per_token FROM claims WHERE idx = 1"), 440899999);
    assert_int_equal(q_int(db, "SELECT head_approx FROM claims WHERE idx = 1"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM claims WHERE idx = 0 AND measured_tok_s IS NULL"
                               " AND measured_test_id IS NULL AND ttft_min_ms IS NULL AND prompt_tokens IS NULL"), 1);
    assert_true(fabs(q_real(db, "SELECT measured_tok_s FROM claims WHERE idx = 1") - 30.5) < 1e-12);
    assert_int_equal(q_int(db, "SELECT measured_test_id FROM claims WHERE idx = 1"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM claims WHERE verdict = 'beyond published efficiency'"
                               " AND calibration_hash = '52094ccbda1db362' AND bandwidth_kind = 'estimate'"), 1);
    /* provenance through the run: host and the build's commit */
    assert_int_equal(q_int(db, "SELECT count(*) FROM claims c JOIN runs r ON r.id = c.run_id JOIN builds b"
                               " ON b.id = r.build_id JOIN hosts h ON h.id = r.host_id WHERE b.git_commit = 'abc123'"
                               " AND h.hostname = 'h'"), 2);

    /* all or none: a new row, then one colliding with idx 0 */
    tb_claim_rec_t bad[2] = {rec(5, "plausible", NAN, -1), rec(0, "plausible", NAN, -1)};
    assert_int_not_equal(tb_store_add_claims(s, 1, bad, 2), TB_OK);
    assert_non_null(strstr(tb_last_error(), "insert claim"));
    assert_int_equal(q_int(db, "SELECT count(*) FROM claims"), 2);
    /* a verdict outside the three is refused by the schema */
    tb_claim_rec_t odd = rec(7, "likely", NAN, -1);
    assert_int_not_equal(tb_store_add_claims(s, 1, &odd, 1), TB_OK);
    assert_int_equal(q_int(db, "SELECT count(*) FROM claims"), 2);

    /* measured claims as calibration rows: the one measured row in, one above its roofline out */
    tb_claim_rec_t fast = rec(8, "plausible", 1000, -1);
    assert_int_equal(tb_store_add_claims(s, 1, &fast, 1), TB_OK);
    tb_store_close(s);
    cl_calib_t c = {0};
    int skipped = -1;
    assert_int_equal(cl_calib_read_db(path, &c, &skipped), 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(skipped, 1);
    assert_true(c.rows[0].resolved);
    assert_string_equal(c.rows[0].device, "m4");
    assert_string_equal(c.rows[0].head, "approx:4748:256");
    assert_int_equal(c.rows[0].line, 2);   /* the claim's id */
    assert_true(fabs(c.rows[0].eff - 30.5 * 440899999.0 / 120e9) < 1e-12);
    assert_true(fabs(c.rows[0].bpw - 2.02) < 1e-12);
    assert_non_null(strstr(c.rows[0].source, "ternbench run u1"));
    assert_int_equal(cl_calib_resolve(&c, cl_devices_dir(NULL)), 0);   /* resolved rows stay as read */
    assert_true(fabs(c.rows[0].bw_gbps - 120) < 1e-12);
    cl_calib_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_section_errors),
        cmocka_unit_test(test_claim_cases),
        cmocka_unit_test(test_migrate_v4_and_claims),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
