/*
 * test_ab.c — `ternbench ab` (argv[1]) against a stand-in bench (argv[2],
 * ab_standin.c, run under names that set its speed): the turns go A B B A
 * A B ..., each recorded with its side, pair and session tags; identical
 * sides are unchanged (exit 0), a 10 % slower candidate regressed (exit 1),
 * a failing side stops the session (exit 1), bad arguments exit 2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../e2e/e2e.h"

static char standin[1024], db[512], logf_[512];
static char bin_a[512], bin_b[512], bin_slow[512], bin_fail[512];

static int setup(void **st) {
    (void)st;
    e2e_path(db, sizeof db, "ab.db");
    e2e_path(logf_, sizeof logf_, "turns.log");
    e2e_path(bin_a, sizeof bin_a, "standin-a");
    e2e_path(bin_b, sizeof bin_b, "standin-b");
    e2e_path(bin_slow, sizeof bin_slow, "standin-slow");
    e2e_path(bin_fail, sizeof bin_fail, "standin-fail");
    const char *bins[] = {bin_a, bin_b, bin_slow, bin_fail};
    for (int i = 0; i < 4; i++)
        if (symlink(standin, bins[i])) return -1;
    return setenv("AB_LOG", logf_, 1);
}

static void test_aa_and_order(void **st) {
    (void)st;
    unlink(logf_);
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "ab", "--base", bin_a, "--cand", bin_b, "-r", "6", "--db", db, "--", "-t", "1");
    e2e_assert_clean(&r, "a/a");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "unchanged"));
    /* the turns are matched by ab.pair: the paired interval */
    assert_non_null(strstr(r.out, "1.000-1.000 paired"));
    size_t n;
    char *log = e2e_slurp("turns.log", &n);
    assert_non_null(log);
    assert_true(n >= 84);
    assert_int_equal(strncmp(log, "base 0\ncand 0\ncand 1\nbase 1\nbase 2\ncand 2\ncand 3\nbase 3\n"
                                  "base 4\ncand 4\ncand 5\nbase 5\n", 84), 0);
    free(log);
    char *rows = e2e_db_query(db, "SELECT count(DISTINCT value) FROM run_tags WHERE key = 'ab.session'");
    assert_string_equal(rows, "1\n");
    free(rows);
    e2e_res_free(&r);
}

static void test_slow_regressed(void **st) {
    (void)st;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "ab", "--base", bin_a, "--cand", bin_slow, "-r", "6", "--db", db, "--md");
    e2e_assert_clean(&r, "slow");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.out, "| tg8 | decode_tok_per_s (tok/s) | 6 | 6 |"));
    assert_non_null(strstr(r.out, "| 0.900 | 0.900-0.900 paired | **regressed** |"));
    /* the earlier session's runs are not in this comparison */
    char *rows = e2e_db_query(db, "SELECT count(DISTINCT value) FROM run_tags WHERE key = 'ab.session'");
    assert_string_equal(rows, "2\n");
    free(rows);
    e2e_res_free(&r);
}

static void test_failures(void **st) {
    (void)st;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "ab", "--base", bin_a, "--cand", bin_fail, "-r", "2", "--db", db);
    assert_int_equal(r.status, 1);
    e2e_assert_err_has(&r, "fail", "exited with status 1", NULL);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "ab", "--base", bin_a, "--cand", bin_b, "--db", db, "--", "-r", "3");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "-r", "leave -r out", NULL);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "ab", "--base", "/nonexistent/ternbench", "--cand", bin_b);
    assert_int_equal(r.status, 2);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "ab", "--base", bin_a);
    assert_int_equal(r.status, 2);
    e2e_res_free(&r);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: test_gate_ab TERNBENCH STANDIN\n"); return 1; }
    if (!realpath(argv[2], standin)) { perror(argv[2]); return 1; }
    if (e2e_init(argc, argv, "gate_ab")) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aa_and_order),
        cmocka_unit_test(test_slow_regressed),
        cmocka_unit_test(test_failures),
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    e2e_cleanup();
    return rc;
}
