/*
 * test_store.c — the results store: schema creation, migration from schema
 * version 1 (the lead's schema.sql as shipped), refusal of newer databases,
 * recovery of runs left 'running' by dead processes, deduplication, and two
 * concurrent writer processes losing nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store.h"
#include "ternbench.h"
#include "tmpdir.h"

static int setup(void **state) {
    (void)state;
    return tmpdir_make("store");
}

/* One integer from a query on a raw connection. */
static int64_t q_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void q_text(sqlite3 *db, const char *sql, char *out, size_t cap) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    out[0] = '\0';
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

static void fake_facts(tb_host_facts_t *h, tb_build_facts_t *b, tb_model_facts_t *m) {
    memset(h, 0, sizeof *h);
    snprintf(h->fingerprint, sizeof h->fingerprint, "host-fp");
    gethostname(h->hostname, sizeof h->hostname - 1);
    snprintf(h->cpu_vendor, sizeof h->cpu_vendor, "TestVendor");
    snprintf(h->cpu_brand, sizeof h->cpu_brand, "Test CPU");
    h->cpu_family = 6; h->cpu_model = -1; h->cpu_stepping = 1;
    h->cores = 2; h->threads = 4; h->l1d_kb = 32; h->l2_kb = -1; h->l3_kb = -1;
    snprintf(h->isa_flags, sizeof h->isa_flags, "sse2 avx2");
    h->mem_bytes = 1 << 30;
    snprintf(h->os, sizeof h->os, "TestOS");
    snprintf(h->kernel, sizeof h->kernel, "Linux 6 x86_64");
    memset(b, 0, sizeof *b);
    snprintf(b->fingerprint, sizeof b->fingerprint, "build-fp");
    snprintf(b->version, sizeof b->version, "0.1.0");
    snprintf(b->git_commit, sizeof b->git_commit, "unknown");
    snprintf(b->compiler, sizeof b->compiler, "gcc");
    snprintf(b->cflags, sizeof b->cflags, "-O2");
    snprintf(b->build_type, sizeof b->build_type, "release");
    snprintf(b->isa_best, sizeof b->isa_best, "generic");
    memset(m, 0, sizeof *m);
    snprintf(m->content_hash, sizeof m->content_hash, "model-hash");
    snprintf(m->path, sizeof m->path, "/x/m.gguf");
    snprintf(m->name, sizeof m->name, "m");
    snprintf(m->arch, sizeof m->arch, "maple");
    snprintf(m->main_type, sizeof m->main_type, "tq2_0");
    snprintf(m->weight_types, sizeof m->weight_types, "tq2_0:10,f32:5");
    m->file_bytes = 1000; m->n_params = 100; m->n_params_active = 50;
    m->n_layer = 2; m->n_embd = 64; m->n_vocab = 256; m->n_expert = 0; m->n_expert_used = 0;
    m->bytes_per_token = 500;
}

/* Insert dimension rows and a run; returns the run id. */
static int64_t start_run_bw(tb_store_t *s, double bw_before) {
    tb_host_facts_t h;
    tb_build_facts_t b;
    tb_model_facts_t m;
    fake_facts(&h, &b, &m);
    int64_t hid, bid, mid, sid, rid;
    assert_int_equal(tb_store_put_host(s, &h, &hid), TB_OK);
    assert_int_equal(tb_store_put_build(s, &b, &bid), TB_OK);
    assert_int_equal(tb_store_put_model(s, &m, &mid), TB_OK);
    assert_int_equal(tb_store_put_scenario(s, "scen-hash", "t", "t.ini", "[model]\n", &sid), TB_OK);
    const char *keys[] = {"who"}, *vals[] = {"test"};
    tb_run_facts_t r = {.host_id = hid, .build_id = bid, .model_id = mid, .scenario_id = sid,
                        .threads = 2, .isa = "generic", .kv_type = "f16",
                        .bandwidth_gbps_before = bw_before, .record_tokens = 1,
                        .n_tags = 1, .tag_keys = keys, .tag_values = vals};
    snprintf(r.uuid, sizeof r.uuid, "uuid-%d-%lld", (int)getpid(), (long long)tb_now_ns());
    assert_int_equal(tb_store_run_begin(s, &r, &rid), TB_OK);
    return rid;
}
static int64_t start_run(tb_store_t *s) { return start_run_bw(s, -1); }

/* ===================================================================== */

/* Test parameters are typed rows (test_params) and tests.params is their
 * JSON object, built by SQLite (quotes and backslashes escaped); a
 * repetition's roofline_pct, bracketed by its own probes, is final: the
 * run's end probe rescales nothing. */
static void test_params_typed(void **state) {
    (void)state;
    char path[512];
    tpath(path, sizeof path, "params.db");
    tb_store_t *s;
    if (tb_store_open(path, &s, NULL)) fail_msg("%s", tb_last_error());
    sqlite3 *db = tb_store_db(s);
    int64_t rid = start_run_bw(s, 20.0), tid;
    const tb_param_t p[] = {
        {.key = "depth", .type = TB_PARAM_INT, .i = 4096},
        {.key = "temp", .type = TB_PARAM_REAL, .f = 0.75},
        {.key = "on_full", .type = TB_PARAM_TEXT, .s = "sl\"ide\\"},
    };
    assert_int_equal(tb_store_test_begin(s, rid, "decode", "decode", "tg8@d4096", p, 3, &tid), TB_OK);
    assert_int_equal(tb_store_add_measurement(s, tid, 0, "roofline_pct", 80.0, "%"), TB_OK);
    assert_int_equal(tb_store_test_end(s, tid, "complete", "nominal", NULL, 2.5), TB_OK);
    assert_int_equal(tb_store_run_end(s, rid, "complete", NULL, 25.0), TB_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM test_params WHERE test_id = %lld AND ("
             "(key = 'depth' AND typeof(value) = 'integer' AND value = 4096) OR"
             "(key = 'temp' AND typeof(value) = 'real' AND value = 0.75) OR"
             "(key = 'on_full' AND typeof(value) = 'text' AND value = 'sl\"ide\\'))", (long long)tid);
    assert_int_equal(q_int(db, sql), 3);
    snprintf(sql, sizeof sql, "SELECT json_valid(params) AND json_extract(params, '$.depth') = 4096 AND"
             " json_extract(params, '$.on_full') = 'sl\"ide\\' FROM tests WHERE id = %lld", (long long)tid);
    assert_int_equal(q_int(db, sql), 1);
    snprintf(sql, sizeof sql, "SELECT value = 80.0 FROM measurements WHERE test_id = %lld"
             " AND metric = 'roofline_pct'", (long long)tid);
    assert_int_equal(q_int(db, sql), 1);
    snprintf(sql, sizeof sql, "SELECT ref_slowdown_pct = 2.5 FROM tests WHERE id = %lld", (long long)tid);
    assert_int_equal(q_int(db, sql), 1);
    tb_store_close(s);
}

static void test_create(void **state) {
    (void)state;
    char path[512];
    tpath(path, sizeof path, "sub/new.db");   /* parent directory created too */
    tb_store_t *s;
    int rc = tb_store_open(path, &s, NULL);
    if (rc) fail_msg("%s", tb_last_error());
    sqlite3 *db = tb_store_db(s);
    assert_int_equal(q_int(db, "PRAGMA user_version"), tb_store_version());
    assert_true(tb_store_version() >= 2);
    char mode[32];
    q_text(db, "PRAGMA journal_mode", mode, sizeof mode);
    assert_string_equal(mode, "wal");
    /* every table of the contract exists and is STRICT */
    const char *tables[] = {"hosts", "builds", "models", "scenarios", "runs", "run_tags", "tests",
                            "measurements", "token_events", "sensor_samples", "sensor_absent", "windows"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char sql[256], ddl[4096];
        snprintf(sql, sizeof sql, "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = '%s'", tables[i]);
        q_text(db, sql, ddl, sizeof ddl);
        if (!strstr(ddl, "STRICT")) fail_msg("table %s missing or not STRICT: %s", tables[i], ddl);
    }

    /* a run, a test, one repetition in a transaction, a rolled-back one */
    int64_t rid = start_run(s), tid;
    assert_int_equal(tb_store_test_begin(s, rid, "decode", "decode", "tg8@d0", NULL, 0, &tid), TB_OK);
    assert_int_equal(tb_store_tx_begin(s), TB_OK);
    assert_int_equal(tb_store_add_measurement(s, tid, 0, "decode_tok_per_s", 12.5, "tok/s"), TB_OK);
    assert_int_equal(tb_store_add_token(s, tid, 0, 0, "decode", 1000, 900, 7, "hi", 2), TB_OK);
    assert_int_equal(tb_store_add_window(s, tid, 0, 0, 8, 0, 1000, 8e6, 8, 0, 0), TB_OK);
    assert_int_equal(tb_store_add_sensor(s, rid, tid, 5, "ref_workload", 1.5, "ms"), TB_OK);
    assert_int_equal(tb_store_tx_commit(s), TB_OK);
    assert_int_equal(tb_store_tx_begin(s), TB_OK);
    assert_int_equal(tb_store_add_measurement(s, tid, 1, "decode_tok_per_s", 13.5, "tok/s"), TB_OK);
    tb_store_tx_rollback(s);
    assert_int_equal(tb_store_add_absent(s, rid, "rapl", "no rapl"), TB_OK);
    assert_int_equal(tb_store_test_end(s, tid, "complete", "nominal", NULL, NAN), TB_OK);
    assert_int_equal(tb_store_run_end(s, rid, "complete", NULL, 12.0), TB_OK);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM token_events WHERE text = CAST('hi' AS BLOB)"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM runs WHERE status = 'complete' AND ended_utc IS NOT NULL"
                               " AND bandwidth_gbps_after = 12.0 AND bandwidth_gbps_before IS NULL"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM run_tags WHERE key = 'who' AND value = 'test'"), 1);
    assert_int_equal(q_int(db, "SELECT cpu_model IS NULL AND l2_kb IS NULL AND cpu_family = 6 FROM hosts"), 1);
    /* CHECK constraints hold: a bad status is refused */
    assert_int_not_equal(tb_store_run_end(s, rid, "bogus", NULL, -1), TB_OK);
    assert_non_null(strstr(tb_last_error(), path));

    /* dimension rows are deduplicated */
    int64_t rid2 = start_run(s);
    assert_true(rid2 != rid);
    assert_int_equal(q_int(db, "SELECT count(*) FROM hosts"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM models"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM scenarios"), 1);
    tb_store_close(s);

    /* reopening is a no-op migration; our own live run stays 'running' */
    int n_rec = -1;
    assert_int_equal(tb_store_open(path, &s, &n_rec), TB_OK);
    assert_int_equal(n_rec, 0);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT status = 'running' FROM runs WHERE id = %lld", (long long)rid2);
    assert_int_equal(q_int(tb_store_db(s), sql), 1);
    tb_store_close(s);
}

/* A database at schema version 1 (schema.sql exactly as the lead shipped it),
 * with data, migrates to the current version keeping every row. */
static void test_migrate_from_v1(void **state) {
    (void)state;
    char path[512];
    tpath(path, sizeof path, "v1.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(db, tb_store_steps[0], NULL, NULL, &err) != SQLITE_OK) fail_msg("%s", err);
    assert_int_equal(q_int(db, "PRAGMA user_version"), 1);
    const char *rows =
        "INSERT INTO hosts VALUES (1,'fp','h','v','b',1,2,3,4,8,32,512,8192,'avx2',1024,'os','k','2026-01-01T00:00:00Z');"
        "INSERT INTO builds VALUES (1,'bf','0.1.0','abc',0,'gcc','-O2','release','avx2','2026-01-01T00:00:00Z');"
        "INSERT INTO models VALUES (1,'mh','/m.gguf','m','maple','tq2_0','tq2_0:1',10,10,5,1,8,16,0,0,NULL,NULL,'2026-01-01T00:00:00Z');"
        "INSERT INTO scenarios VALUES (1,'sh','quick','quick.ini','[model]');"
        "INSERT INTO runs VALUES (1,'u1','2026-01-01T00:00:00Z','2026-01-01T00:01:00Z','complete',1,1,1,1,1,2,'avx2','f16',10.0,11.0,NULL);"
        "INSERT INTO tests VALUES (1,1,'decode','decode','tg8@d0','{\"depth\":0,\"temp\":0.5,\"kv_type\":\"f16\","
        "\"record_tokens\":true}','complete','nominal',NULL);"
        "INSERT INTO measurements VALUES (1,1,0,'decode_tok_per_s',42.0,'tok/s');"
        "INSERT INTO measurements VALUES (2,1,1,'decode_tok_per_s',44.0,'tok/s');"
        "INSERT INTO measurements VALUES (3,1,0,'cpu_ghz_min',2.5,'GHz');"
        "INSERT INTO measurements VALUES (4,1,-1,'decode_tok_per_s',43.0,'tok/s');"
        "INSERT INTO measurements VALUES (5,1,-1,'decode_tok_per_s:stddev',1.4,'tok/s');"
        "INSERT INTO measurements VALUES (6,1,-1,'repetitions',2,'count');"
        "INSERT INTO measurements VALUES (7,1,-1,'ref_slowdown_pct',-3.5,'%');"
        "INSERT INTO measurements VALUES (8,1,-1,'vendor_metric',7.0,'x');"
        "INSERT INTO token_events VALUES (1,0,0,'decode',5,3,X'6869');";
    if (sqlite3_exec(db, rows, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s", err);
    sqlite3_close(db);

    tb_store_t *s;
    int rc = tb_store_open(path, &s, NULL);
    if (rc) fail_msg("%s", tb_last_error());
    db = tb_store_db(s);
    assert_int_equal(q_int(db, "PRAGMA user_version"), tb_store_version());
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE value = 42.0"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM token_events"), 1);
    /* version 2 additions: columns with their defaults, the windows table */
    assert_int_equal(q_int(db, "SELECT record_tokens FROM runs WHERE id = 1"), 1);
    assert_int_equal(q_int(db, "SELECT bytes_per_token IS NULL FROM models WHERE id = 1"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM windows"), 0);
    /* version 3: typed parameters from the JSON; derivable summaries gone, the slowdown a
     * column of its test, the after-repetition clock renamed; a summary with nothing to
     * derive it from kept */
    assert_int_equal(q_int(db, "SELECT count(*) FROM test_params WHERE test_id = 1"), 4);
    assert_int_equal(q_int(db, "SELECT typeof(value) = 'integer' AND value = 0 FROM test_params WHERE key = 'depth'"), 1);
    assert_int_equal(q_int(db, "SELECT typeof(value) = 'real' AND value = 0.5 FROM test_params WHERE key = 'temp'"), 1);
    assert_int_equal(q_int(db, "SELECT typeof(value) = 'text' AND value = 'f16' FROM test_params WHERE key = 'kv_type'"), 1);
    assert_int_equal(q_int(db, "SELECT value FROM test_params WHERE key = 'record_tokens'"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE repetition < 0"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE repetition < 0 AND metric = 'vendor_metric'"), 1);
    assert_int_equal(q_int(db, "SELECT ref_slowdown_pct = -3.5 FROM tests WHERE id = 1"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE metric = 'cpu_ghz_after' AND value = 2.5"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE metric = 'cpu_ghz_min'"), 0);
    assert_int_equal(q_int(db, "SELECT dur_ns IS NULL FROM token_events"), 1);
    /* version 4 additions (peers): the run is ternbench's own, not imported;
     * imports and merge_sources exist and take rows */
    assert_int_equal(q_int(db, "SELECT count(*) FROM runs WHERE id = 1 AND engine = 'ternbench'"
                               " AND engine_version IS NULL AND import_id IS NULL"), 1);
    if (sqlite3_exec(db, "INSERT INTO imports (content_hash, format, source_path, file_bytes, n_rows,"
                         " n_runs, imported_utc) VALUES ('h', 'llama-bench-json', 'x.json', 1, 1, 1, 't');"
                         "INSERT INTO merge_sources (source_path, n_runs, n_same, merged_utc)"
                         " VALUES ('a.db', 1, 0, 't');", NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s", err);
    assert_int_equal(q_int(db, "SELECT count(*) FROM imports"), 1);
    /* version 6 (tests rebuilt for kind 'quality'): the test, its measurements, parameters
     * and token events kept under the same id; the new kind accepted, others still refused;
     * the children still cascade from the rebuilt table */
    assert_int_equal(q_int(db, "SELECT count(*) FROM tests WHERE id = 1 AND kind = 'decode' AND label = 'tg8@d0'"
                               " AND ref_slowdown_pct = -3.5"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE test_id = 1"), 4);
    assert_int_equal(q_int(db, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'tests_run'"), 1);
    assert_int_equal(q_int(db, "PRAGMA foreign_keys"), 1);
    if (sqlite3_exec(db, "INSERT INTO tests (id, run_id, section, kind, label, params, status)"
                         " VALUES (2, 1, 'quality', 'quality', 'quality512', '{}', 'complete');"
                         "INSERT INTO measurements (test_id, repetition, metric, value, unit)"
                         " VALUES (2, 0, 'kld_mean', 0.01, 'nats');", NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s", err);
    assert_int_not_equal(sqlite3_exec(db, "INSERT INTO tests (run_id, section, kind, label, params, status)"
                                          " VALUES (1, 'x', 'no-such-kind', 'x', '{}', 'complete')", NULL, NULL, NULL),
                         SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "DELETE FROM tests WHERE id = 2", NULL, NULL, &err), SQLITE_OK);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements WHERE test_id = 2"), 0);
    char ok[16];
    q_text(db, "PRAGMA integrity_check", ok, sizeof ok);
    assert_string_equal(ok, "ok");
    /* the store writes into the migrated database */
    int64_t rid = start_run(s);
    assert_true(rid > 1);
    tb_store_close(s);
}

static void test_refuse_newer(void **state) {
    (void)state;
    char path[512];
    tpath(path, sizeof path, "future.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    tb_store_t *s;
    assert_int_equal(tb_store_open(path, &s, NULL), TB_ERR_UNSUPPORTED);
    assert_null(s);
    assert_non_null(strstr(tb_last_error(), "schema version 99 is newer"));
}

/* A run whose process died is marked interrupted on the next open. */
static void test_recover_dead_run(void **state) {
    (void)state;
    char path[512];
    tpath(path, sizeof path, "dead.db");
    tb_store_t *s;
    assert_int_equal(tb_store_open(path, &s, NULL), TB_OK);
    int64_t live = start_run(s);
    int64_t dead = start_run(s), other = start_run(s), tid;
    assert_int_equal(tb_store_test_begin(s, dead, "decode", "decode", "tg8@d0", NULL, 0, &tid), TB_OK);
    pid_t child = fork();
    if (child == 0) _exit(0);
    assert_true(child > 0);
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);     /* reaped: the pid no longer exists */
    char sql[1024];
    snprintf(sql, sizeof sql, "UPDATE runs SET pid = %d WHERE id = %lld;"
             "INSERT INTO hosts (fingerprint, hostname, cpu_vendor, cpu_brand, isa_flags, os, kernel, first_seen_utc)"
             " VALUES ('elsewhere', 'another-machine', '', '', '', '', '', '');"
             "UPDATE runs SET pid = %d, host_id = (SELECT id FROM hosts WHERE fingerprint = 'elsewhere') WHERE id = %lld;",
             (int)child, (long long)dead, (int)child, (long long)other);
    assert_int_equal(sqlite3_exec(tb_store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
    tb_store_close(s);

    int n_rec = -1;
    assert_int_equal(tb_store_open(path, &s, &n_rec), TB_OK);
    assert_int_equal(n_rec, 1);
    sqlite3 *db = tb_store_db(s);
    snprintf(sql, sizeof sql, "SELECT status || ',' || COALESCE(error, '') FROM runs WHERE id = %lld", (long long)dead);
    char txt[128];
    q_text(db, sql, txt, sizeof txt);
    assert_string_equal(txt, "interrupted,process died");
    snprintf(sql, sizeof sql, "SELECT status FROM tests WHERE id = %lld", (long long)tid);
    q_text(db, sql, txt, sizeof txt);
    assert_string_equal(txt, "interrupted");
    snprintf(sql, sizeof sql, "SELECT status FROM runs WHERE id = %lld", (long long)live);
    q_text(db, sql, txt, sizeof txt);
    assert_string_equal(txt, "running");                     /* this process is alive */
    snprintf(sql, sizeof sql, "SELECT status FROM runs WHERE id = %lld", (long long)other);
    q_text(db, sql, txt, sizeof txt);
    assert_string_equal(txt, "running");                     /* another host: cannot judge */
    tb_store_close(s);
}

/* Two processes write the same database at once: every row lands. */
enum { WRITERS = 2, REPS = 40, METRICS = 10, TOKENS = 20 };

static int writer(const char *path) {
    tb_store_t *s;
    if (tb_store_open(path, &s, NULL) != TB_OK) { fprintf(stderr, "open: %s\n", tb_last_error()); return 1; }
    tb_host_facts_t h;
    tb_build_facts_t b;
    tb_model_facts_t m;
    fake_facts(&h, &b, &m);
    int64_t hid, bid, mid, sid, rid, tid;
    if (tb_store_put_host(s, &h, &hid) || tb_store_put_build(s, &b, &bid) ||
        tb_store_put_model(s, &m, &mid) || tb_store_put_scenario(s, "scen", "t", "t.ini", "x", &sid)) {
        fprintf(stderr, "facts: %s\n", tb_last_error());
        return 1;
    }
    tb_run_facts_t r = {.host_id = hid, .build_id = bid, .model_id = mid, .scenario_id = sid,
                        .threads = 1, .isa = "ref", .kv_type = "f16", .bandwidth_gbps_before = -1,
                        .record_tokens = 1};
    snprintf(r.uuid, sizeof r.uuid, "writer-%d", (int)getpid());
    if (tb_store_run_begin(s, &r, &rid) || tb_store_test_begin(s, rid, "d", "decode", "tg", NULL, 0, &tid)) {
        fprintf(stderr, "run: %s\n", tb_last_error());
        return 1;
    }
    for (int rep = 0; rep < REPS; rep++) {
        int rc = tb_store_tx_begin(s);
        for (int k = 0; k < METRICS && !rc; k++) {
            char name[32];
            snprintf(name, sizeof name, "metric_%d", k);
            rc = tb_store_add_measurement(s, tid, rep, name, rep * 100 + k, "x");
        }
        for (int t = 0; t < TOKENS && !rc; t++)
            rc = tb_store_add_token(s, tid, rep, t, "decode", t, -1, t, "a", 1);
        if (!rc) rc = tb_store_tx_commit(s);
        if (rc) { fprintf(stderr, "rep %d: %s\n", rep, tb_last_error()); return 1; }
    }
    if (tb_store_test_end(s, tid, "complete", "nominal", NULL, NAN) ||
        tb_store_run_end(s, rid, "complete", NULL, -1)) {
        fprintf(stderr, "end: %s\n", tb_last_error());
        return 1;
    }
    tb_store_close(s);
    return 0;
}

static void test_concurrent_writers(void **state) {
    (void)state;
    char path[512];
    tpath(path, sizeof path, "concurrent.db");   /* created by the racing writers themselves */
    pid_t kids[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        kids[i] = fork();
        if (kids[i] == 0) _exit(writer(path));
        assert_true(kids[i] > 0);
    }
    for (int i = 0; i < WRITERS; i++) {
        int st;
        assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    tb_store_t *s;
    assert_int_equal(tb_store_open(path, &s, NULL), TB_OK);
    sqlite3 *db = tb_store_db(s);
    assert_int_equal(q_int(db, "SELECT count(*) FROM runs WHERE status = 'complete'"), WRITERS);
    assert_int_equal(q_int(db, "SELECT count(*) FROM measurements"), WRITERS * REPS * METRICS);
    assert_int_equal(q_int(db, "SELECT count(*) FROM token_events"), WRITERS * REPS * TOKENS);
    assert_int_equal(q_int(db, "SELECT count(DISTINCT test_id || '/' || repetition) FROM measurements"), WRITERS * REPS);
    assert_int_equal(q_int(db, "SELECT count(*) FROM hosts"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM scenarios"), 1);
    tb_store_close(s);
}

/* Another program's SQLite file is refused by the writer and the reader
 * before anything is written; a v1 database opened by the reader (the file
 * writable) is migrated in place, as a writer would. */
static void test_foreign_and_reader(void **state) {
    (void)state;
    char path[512];
    tpath(path, sizeof path, "foreign.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE runs (id INTEGER PRIMARY KEY, x TEXT);"
                                      "INSERT INTO runs VALUES (1, 'theirs');", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    tb_store_t *s = NULL;
    assert_int_equal(tb_store_open(path, &s, NULL), TB_ERR_FORMAT);
    assert_null(s);
    assert_non_null(strstr(tb_last_error(), "not a ternbench results database"));
    tb_store_read_info_t info;
    assert_int_equal(tb_store_open_read(path, &s, &info), TB_ERR_FORMAT);
    assert_null(s);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_master"), 1);
    char mode[16];
    q_text(db, "PRAGMA journal_mode", mode, sizeof mode);
    assert_string_equal(mode, "delete");   /* never switched to WAL */
    sqlite3_close(db);

    tpath(path, sizeof path, "absent.db");
    assert_int_equal(tb_store_open_read(path, &s, &info), TB_ERR_IO);
    assert_int_equal(access(path, F_OK), -1);   /* a reader never creates one */

    tpath(path, sizeof path, "v1-read.db");
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, tb_store_steps[0], NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    if (tb_store_open_read(path, &s, &info) != TB_OK) fail_msg("%s", tb_last_error());
    assert_int_equal(info.old_version, 0);   /* writable: migrated in place */
    assert_int_equal(q_int(tb_store_db(s), "PRAGMA user_version"), tb_store_version());
    tb_store_close(s);
}

/* The commands' default database: $TB_DB unless unset or empty. */
static void test_default_path(void **state) {
    (void)state;
    const char *saved = getenv("TB_DB");
    char keep[1024] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    setenv("TB_DB", "/somewhere/else.db", 1);
    assert_string_equal(tb_store_default_path(), "/somewhere/else.db");
    setenv("TB_DB", "", 1);
    assert_string_equal(tb_store_default_path(), "results/ternbench.db");
    unsetenv("TB_DB");
    assert_string_equal(tb_store_default_path(), "results/ternbench.db");
    if (saved) setenv("TB_DB", keep, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create),
        cmocka_unit_test(test_params_typed),
        cmocka_unit_test(test_migrate_from_v1),
        cmocka_unit_test(test_refuse_newer),
        cmocka_unit_test(test_recover_dead_run),
        cmocka_unit_test(test_concurrent_writers),
        cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_foreign_and_reader),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
