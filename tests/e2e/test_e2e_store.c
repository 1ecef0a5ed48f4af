/*
 * test_e2e_store.c — how the commands open results databases, through the
 * real `ternbench` binary:
 *   - run ids and uuids are never confused: an all-digit RUN is an id, a
 *     uuid prefix needs 8 hex digits or the uuid: form;
 *   - another program's SQLite file (its own `runs` table, or unrelated
 *     tables) is refused before any write and left byte for byte as it was;
 *   - readers (list, show, export, report) work on a read-only file, in a
 *     read-only directory and on a full disk, and say that recovery of a
 *     dead run is pending; a read-only `run` says "read-only".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "e2e.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ===================================================================== */
/* Fixtures                                                               */
/* ===================================================================== */

static const char *GOOD_INI =
    "[model]\npath = m.gguf\n"
    "[engine]\nthreads = 1\n"
    "[protocol]\nwarmup = 0\nrepetitions = 1\nbandwidth_probe = 0\nthrottle_check = false\n"
    "[decode]\ntokens = 2\n";

static int group_setup(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "model", "synth", "--preset", "llama-tiny", "--out", "m.gguf", "--quiet");
    int ok = r.status == 0;
    if (!ok) fprintf(stderr, "model synth failed (%d): %s\n", r.status, r.err);
    e2e_res_free(&r);
    if (!ok) return -1;
    e2e_write("good.ini", GOOD_INI, (size_t)-1);
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "good.ini", "--db", "base.db", "-q");
    ok = r.status == 0;
    if (!ok) fprintf(stderr, "run good.ini failed (%d): %s\n", r.status, r.err);
    e2e_res_free(&r);
    return ok ? 0 : -1;
}

/* Copy TMP/from to TMP/to byte for byte. */
static void copy_file(const char *from, const char *to) {
    size_t n;
    char *b = e2e_slurp(from, &n);
    if (!b) fail_msg("cannot read %s", from);
    e2e_write(to, b, n);
    free(b);
}

/* True when TMP/a and TMP/b hold the same bytes. */
static int same_bytes(const char *a, const char *b) {
    size_t na, nb;
    char *x = e2e_slurp(a, &na), *y = e2e_slurp(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* Run sql on TMP/name with a plain read-write connection (the test's own
 * doing, not ternbench's). */
static void db_exec(const char *name, const char *sql) {
    char p[512];
    e2e_path(p, sizeof p, name);
    sqlite3 *db;
    char *msg = NULL;
    if (sqlite3_open(p, &db) != SQLITE_OK || sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s: %s", name, sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* ===================================================================== */
/* Run ids and uuids                                                      */
/* ===================================================================== */

/* Run 6 exists and run 1's uuid starts with "6" (and is all digits for its
 * first 8): "6" is run 6, "66666666" is no run, "uuid:6" is run 1. */
static void test_run_ids(void **state) {
    (void)state;
    copy_file("base.db", "ids.db");
    db_exec("ids.db",
            "CREATE TEMP TABLE r AS SELECT * FROM runs WHERE id = 1;"
            "UPDATE r SET id = 6, uuid = 'abcdef01-0000-4000-8000-000000000006';"
            "INSERT INTO runs SELECT * FROM r;"
            "CREATE TEMP TABLE t AS SELECT * FROM tests WHERE run_id = 1;"
            "UPDATE t SET id = id + 1000, run_id = 6, label = 'run6-' || label;"
            "INSERT INTO tests SELECT * FROM t;"
            "CREATE TEMP TABLE m AS SELECT * FROM measurements"
            " WHERE test_id IN (SELECT id FROM tests WHERE run_id = 1);"
            "UPDATE m SET id = id + 100000, test_id = test_id + 1000;"
            "INSERT INTO measurements SELECT * FROM m;"
            "UPDATE runs SET uuid = '66666666-1111-4111-8111-111111111111' WHERE id = 1;");
    static const struct {
        const char *args[8];
        int status;
        const char *want;      /* in stdout (status 0) or stderr */
        const char *not_want;  /* never in stdout */
    } cases[] = {
        {{"show", "6", NULL}, 0, "abcdef01-0000-4000-8000-000000000006", "66666666-1111"},
        {{"show", "id:6", NULL}, 0, "abcdef01-0000", "66666666-1111"},
        {{"show", "1", NULL}, 0, "66666666-1111", "abcdef01"},
        {{"show", "uuid:6", NULL}, 0, "66666666-1111", "abcdef01"},
        {{"show", "uuid:66666666", NULL}, 0, "66666666-1111", "abcdef01"},
        {{"show", "abcdef01", NULL}, 0, "abcdef01-0000", "66666666-1111"},
        {{"show", "ABCDEF01-0000", NULL}, 0, "abcdef01-0000", "66666666-1111"},
        {{"show", "66666666", NULL}, 1, "no run has the id", "66666666-1111"},
        {{"show", "abc", NULL}, 1, "at least 8 hex", "abcdef01"},
        {{"show", "abcdef0%", NULL}, 1, "not a run", "abcdef01"},
        {{"show", "uuid:", NULL}, 1, "not a run", "abcdef01"},
        {{"export", "--run", "6", NULL}, 0, "abcdef01-0000-4000-8000-000000000006", "66666666-1111"},
        {{"export", "--run", "6", "--format", "json", NULL}, 0, "\"run_id\": 6", "66666666-1111"},
        {{"export", "--run", "uuid:6", NULL}, 0, "66666666-1111", "abcdef01"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[12];
        int n = 0;
        for (; cases[i].args[n]; n++) args[n] = cases[i].args[n];
        args[n++] = "--db";
        args[n++] = "ids.db";
        args[n] = NULL;
        char what[128];
        snprintf(what, sizeof what, "%s %s %s", args[0], args[1], args[2]);
        e2e_res_t r;
        e2e_run(E2E_NO_LIMIT, args, &r);
        e2e_assert_clean(&r, what);
        if (r.status != cases[i].status)
            fail_msg("%s: exit %d, expected %d; stderr:\n%s", what, r.status, cases[i].status, r.err);
        const char *where = cases[i].status ? r.err : r.out;
        if (!strstr(where, cases[i].want)) fail_msg("%s: \"%s\" not in:\n%.3000s", what, cases[i].want, where);
        if (strstr(r.out, cases[i].not_want)) fail_msg("%s: the other run (\"%s\") is in:\n%.3000s", what,
                                                       cases[i].not_want, r.out);
        e2e_res_free(&r);
    }
    /* the rule is in the usage texts */
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "show", "--db", "ids.db");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "show without RUN", "uuid:PREFIX", "8 hex", NULL);
    e2e_res_free(&r);
}

/* ===================================================================== */
/* Other programs' databases                                              */
/* ===================================================================== */

/* A database with its own `runs` table, one with unrelated tables and one
 * with a schema version but none of ternbench's tables: every command
 * refuses them before writing anything (no WAL file appears, the journal
 * mode is unchanged) and each file stays byte for byte as it was. */
static void test_foreign_db(void **state) {
    (void)state;
    static const struct { const char *name, *sql; } dbs[] = {
        {"own-runs.db", "CREATE TABLE runs (id INTEGER PRIMARY KEY, who TEXT, started TEXT);"
                        "INSERT INTO runs VALUES (1, 'someone', 'yesterday');"},
        {"unrelated.db", "CREATE TABLE songs (title TEXT, secs INTEGER); CREATE INDEX songs_t ON songs(title);"
                         "CREATE VIEW long_songs AS SELECT * FROM songs WHERE secs > 300;"
                         "INSERT INTO songs VALUES ('a', 200), ('b', 400);"},
        {"versioned.db", "PRAGMA user_version = 1; CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');"},
    };
    for (size_t i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
        const char *f = dbs[i].name;
        db_exec(f, dbs[i].sql);
        char orig[64];
        snprintf(orig, sizeof orig, "%s.orig", f);
        copy_file(f, orig);
        const char *const cmds[][10] = {
            {"run", "good.ini", "--db", f, "-q", NULL},
            {"list", "--db", f, NULL},
            {"show", "1", "--db", f, NULL},
            {"export", "--db", f, NULL},
            {"export", "--run", "1", "--db", f, "--format", "json", NULL},
        };
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            char what[128];
            snprintf(what, sizeof what, "%s --db %s", cmds[c][0], f);
            e2e_res_t r;
            e2e_run(E2E_NO_LIMIT, cmds[c], &r);
            e2e_assert_clean(&r, what);
            if (r.status == 0) fail_msg("%s: exit 0; stdout:\n%.2000s", what, r.out);
            e2e_assert_err_has(&r, what, f, "not a ternbench results database", "not modified", NULL);
            e2e_res_free(&r);
            if (!same_bytes(f, orig)) fail_msg("%s: the database file was modified", what);
            char side[80];
            snprintf(side, sizeof side, "%s-wal", f);
            if (e2e_size(side) >= 0) fail_msg("%s: a write-ahead log appeared beside it", what);
        }
    }
    /* an empty file, or SQLite's empty database, becomes a results database */
    e2e_write("zero.db", "", 0);
    db_exec("blank.db", "PRAGMA page_size = 4096; VACUUM;");
    const char *blank[] = {"zero.db", "blank.db"};
    for (size_t i = 0; i < 2; i++) {
        e2e_res_t r;
        E2E_RUN(&r, E2E_NO_LIMIT, "run", "good.ini", "--db", blank[i], "-q");
        e2e_assert_clean(&r, blank[i]);
        if (r.status != 0) fail_msg("run --db %s: exit %d; stderr:\n%s", blank[i], r.status, r.err);
        e2e_res_free(&r);
    }
}

/* ===================================================================== */
/* Read-only and full disks                                               */
/* ===================================================================== */

/* TMP/dir/name made from base.db with run 1 left 'running' by a process
 * that no longer exists (pid beyond pid_max), its bytes also copied to
 * TMP/dir/name.orig. */
static void make_dead_run_db(const char *dir, const char *name) {
    char p[512], rel[256], orig[256];
    e2e_path(p, sizeof p, dir);
    mkdir(p, 0755);
    snprintf(rel, sizeof rel, "%s/%s", dir, name);
    snprintf(orig, sizeof orig, "%s/%s.orig", dir, name);
    copy_file("base.db", rel);
    db_exec(rel, "UPDATE runs SET status = 'running', ended_utc = NULL, pid = 2147483000 WHERE id = 1;"
                 "UPDATE tests SET status = 'running' WHERE run_id = 1;");
    copy_file(rel, orig);
}

/* The reading commands on `db` with options opt: exit 0, the run's rows
 * printed, recovery reported pending (need_pending), the file unchanged. */
static void readers_work(e2e_opt_t opt, const char *db, const char *orig, int need_pending, const char *label) {
    const char *const cmds[][10] = {
        {"list", "--db", db, NULL},
        {"show", "1", "--db", db, NULL},
        {"export", "--db", db, NULL},
        {"export", "--run", "1", "--db", db, "--format", "json", NULL},
    };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        char what[256];
        snprintf(what, sizeof what, "%s %s (%s)", cmds[c][0], db, label);
        e2e_res_t r;
        e2e_run(opt, cmds[c], &r);
        e2e_assert_clean(&r, what);
        if (r.status != 0) fail_msg("%s: exit %d; stderr:\n%s", what, r.status, r.err);
        if (!strstr(r.out, c == 0 ? "running" : "tg2")) fail_msg("%s: the run is not shown:\n%.2000s", what, r.out);
        if (need_pending) e2e_assert_err_has(&r, what, "recovery pending", NULL);
        e2e_res_free(&r);
        if (!same_bytes(db, orig)) fail_msg("%s: the database file was modified", what);
    }
}

static void test_readonly_readers(void **state) {
    (void)state;
    /* a read-only file in a writable directory */
    make_dead_run_db("rofile", "r.db");
    char p[512];
    e2e_path(p, sizeof p, "rofile/r.db");
    assert_int_equal(chmod(p, 0444), 0);
    readers_work(E2E_NO_DAC, "rofile/r.db", "rofile/r.db.orig", 1, "read-only file");
    /* a read-only directory: nothing can be created beside the file */
    make_dead_run_db("rodir", "r.db");
    e2e_path(p, sizeof p, "rodir/r.db");
    assert_int_equal(chmod(p, 0444), 0);
    e2e_path(p, sizeof p, "rodir");
    assert_int_equal(chmod(p, 0555), 0);
    readers_work(E2E_NO_DAC, "rodir/r.db", "rodir/r.db.orig", 1, "read-only directory");
    assert_int_equal(e2e_size("rodir/r.db-wal"), -1);
    assert_int_equal(e2e_size("rodir/r.db-shm"), -1);
    /* a read-only run says so, and records nothing */
    const char *const runs[][6] = {
        {"run", "good.ini", "--db", "rodir/r.db", "-q", NULL},
        {"run", "good.ini", "--db", "rofile/r.db", "-q", NULL},
        {"run", "good.ini", "--db", "rodir/new.db", "-q", NULL},
    };
    for (size_t i = 0; i < 3; i++) {
        e2e_res_t r;
        e2e_run(E2E_NO_DAC, runs[i], &r);
        e2e_assert_clean(&r, runs[i][3]);
        if (r.status == 0) fail_msg("run --db %s: exit 0 on a read-only database", runs[i][3]);
        e2e_assert_err_has(&r, runs[i][3], runs[i][3], "read-only", NULL);
        if (strstr(r.err, "unable to open")) fail_msg("run --db %s: says \"unable to open\":\n%s", runs[i][3], r.err);
        e2e_res_free(&r);
    }
    assert_true(same_bytes("rodir/r.db", "rodir/r.db.orig"));
    assert_int_equal(e2e_size("rodir/new.db"), -1);
    assert_int_equal(chmod(p, 0755), 0);
    /* a full disk: nothing can be written, the readers still read */
    make_dead_run_db("full", "r.db");
    readers_work(E2E_FSIZE(1024), "full/r.db", "full/r.db.orig", 1, "full disk");
    /* writable again: the next reader marks the dead run interrupted */
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "list", "--db", "full/r.db");
    assert_int_equal(r.status, 0);
    e2e_assert_err_has(&r, "list (writable)", "marked 1 run", NULL);
    if (!strstr(r.out, "interrupted")) fail_msg("list (writable): the run is not interrupted:\n%s", r.out);
    e2e_res_free(&r);
}

/* A database of an older schema version, read-only: readable through a
 * migrated copy in memory, said so, the file unchanged. */
static void test_readonly_old_schema(void **state) {
    (void)state;
    const char *root = getenv("TB_SOURCE_ROOT");
    if (!root) fail_msg("TB_SOURCE_ROOT is not set (meson sets it for every test)");
    char schema_path[1024];
    snprintf(schema_path, sizeof schema_path, "%s/results/schema.sql", root);
    FILE *f = fopen(schema_path, "r");
    if (!f) fail_msg("cannot read %s", schema_path);
    static char schema[1 << 16];
    size_t n = fread(schema, 1, sizeof schema - 1, f);
    fclose(f);
    schema[n] = '\0';
    char p[512];
    e2e_path(p, sizeof p, "old");
    mkdir(p, 0755);
    db_exec("old/v1.db", schema);
    db_exec("old/v1.db",
        "INSERT INTO hosts VALUES (1,'fp','h','v','b',1,2,3,4,8,32,512,8192,'avx2',1024,'os','k','2026-01-01T00:00:00Z');"
        "INSERT INTO builds VALUES (1,'bf','0.1.0','abc',0,'gcc','-O2','release','avx2','2026-01-01T00:00:00Z');"
        "INSERT INTO models VALUES (1,'mh','/m.gguf','oldmodel','maple','tq2_0','tq2_0:1',10,10,5,1,8,16,0,0,NULL,NULL,"
        "'2026-01-01T00:00:00Z');"
        "INSERT INTO scenarios VALUES (1,'sh','quick','quick.ini','[model]');"
        "INSERT INTO runs VALUES (1,'0ld00000-0000-4000-8000-000000000001','2026-01-01T00:00:00Z',"
        "'2026-01-01T00:01:00Z','complete',1,1,1,1,1,2,'avx2','f16',10.0,11.0,NULL);"
        "INSERT INTO tests VALUES (1,1,'decode','decode','tg8@d0','{}','complete','nominal',NULL);"
        "INSERT INTO measurements VALUES (1,1,-1,'decode_tok_per_s',42.0,'tok/s');");
    copy_file("old/v1.db", "old/v1.db.orig");
    e2e_path(p, sizeof p, "old/v1.db");
    assert_int_equal(chmod(p, 0444), 0);
    e2e_path(p, sizeof p, "old");
    assert_int_equal(chmod(p, 0555), 0);
    const char *const cmds[][8] = {
        {"list", "--db", "old/v1.db", NULL},
        {"show", "1", "--db", "old/v1.db", NULL},
        {"export", "--db", "old/v1.db", NULL},
    };
    for (size_t c = 0; c < 3; c++) {
        e2e_res_t r;
        e2e_run(E2E_NO_DAC, cmds[c], &r);
        e2e_assert_clean(&r, cmds[c][0]);
        if (r.status != 0) fail_msg("%s (old schema, read-only): exit %d; stderr:\n%s", cmds[c][0], r.status, r.err);
        if (!strstr(r.out, c == 0 ? "quick" : c == 1 ? "oldmodel" : "42")) fail_msg("%s: rows missing:\n%s", cmds[c][0], r.out);
        e2e_assert_err_has(&r, cmds[c][0], "schema version 1", "unchanged", NULL);
        e2e_res_free(&r);
    }
    assert_int_equal(chmod(p, 0755), 0);
    assert_true(same_bytes("old/v1.db", "old/v1.db.orig"));
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "store") != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_ids),
        cmocka_unit_test(test_foreign_db),
        cmocka_unit_test(test_readonly_readers),
        cmocka_unit_test(test_readonly_old_schema),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, NULL);
    e2e_cleanup();
    return failed;
}
