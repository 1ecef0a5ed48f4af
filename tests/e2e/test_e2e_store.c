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

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "store") != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_ids),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, NULL);
    e2e_cleanup();
    return failed;
}
