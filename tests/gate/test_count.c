/*
 * test_count.c — `ternbench count` end to end (argv[1] is the binary): two
 * runs of the gate's set give identical counts; --db records one test per
 * entry; --update-baseline writes a file that the next run matches; an
 * entry whose baseline is 5 % lower is reported regressed with exit 1; a
 * malformed baseline is refused (exit 2, file and line) before counting.
 * Built with -Dslow_kernel=true (TB_SLOW_KERNEL_BUILD), it checks instead
 * that the slowed TQ2_0 matvec regresses against the committed baseline.
 * In sanitizer builds (valgrind cannot run ASan binaries) only the checks
 * that stop before valgrind runs are registered: argv[2] == "--no-valgrind".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../e2e/e2e.h"

static int setup(void **st) { (void)st; return 0; }

#ifndef TB_SLOW_KERNEL_BUILD
static void test_deterministic_and_baseline(void **st) {
    (void)st;
    char db[512], b1[512], b2[512];
    e2e_path(db, sizeof db, "count.db");
    e2e_path(b1, sizeof b1, "base.txt");
    e2e_path(b2, sizeof b2, "base-lower.txt");
    e2e_res_t r1, r2, r3;
    E2E_RUN(&r1, E2E_NO_LIMIT, "count", "--json", "--db", db, "--update-baseline", b1);
    e2e_assert_clean(&r1, "count 1");
    assert_int_equal(r1.status, 0);
    assert_non_null(strstr(r1.out, "\"isa\":\"avx2\""));
    assert_non_null(strstr(r1.out, "\"name\":\"kernel/matvec/tq2_0/2048x2048\""));
    assert_non_null(strstr(r1.out, "\"name\":\"model/moe-tiny-q4_0/decode8\""));
    E2E_RUN(&r2, E2E_NO_LIMIT, "count", "--json", "--baseline", b1);
    e2e_assert_clean(&r2, "count 2");
    assert_int_equal(r2.status, 0);
    /* the counts of the second run equal the first's, entry by entry */
    char *cut = strstr(r2.out, "{\"baseline\":");
    assert_non_null(cut);
    *cut = 0;
    assert_string_equal(r1.out, r2.out);
    assert_non_null(strstr(cut + 1, "\"regressed\":0,\"improved\":0,\"absent\":0"));

    char *rows = e2e_db_query(db, "SELECT count(*), count(DISTINCT t.label), min(m.value) > 0 FROM measurements m"
                                  " JOIN tests t ON t.id = m.test_id WHERE m.metric = 'instructions' AND m.repetition = 0");
    assert_string_equal(rows, "20|20|1\n");
    free(rows);

    /* the baseline with the TQ2_0 matvec's count 5 % lower: a regression */
    size_t n;
    char *raw = e2e_slurp("base.txt", &n);
    assert_non_null(raw);
    char *text = malloc(n + 1);   /* NUL-terminated copy for strtok */
    assert_non_null(text);
    memcpy(text, raw, n);
    text[n] = 0;
    free(raw);
    FILE *f = fopen(b2, "w");
    assert_non_null(f);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char name[200];
        unsigned long long ir;
        if (sscanf(line, "entry %199s %llu", name, &ir) == 2 && !strcmp(name, "kernel/matvec/tq2_0/2048x2048"))
            fprintf(f, "entry %s %llu 1 instr/call 1\n", name, ir * 95 / 100);
        else
            fprintf(f, "%s\n", line);
    }
    fclose(f);
    free(text);
    E2E_RUN(&r3, E2E_NO_LIMIT, "count", "--kernels", "--baseline", b2);
    e2e_assert_clean(&r3, "count 3");
    if (r3.status != 1) fprintf(stderr, "count 3: %s\n", r3.err);
    assert_int_equal(r3.status, 1);
    const char *row = strstr(r3.out, "| kernel/matvec/tq2_0/2048x2048");
    assert_non_null(row);
    assert_non_null(strstr(row, "+5."));
    assert_true(strstr(row, "**regressed**") < strchr(row, '\n'));
    assert_non_null(strstr(r3.out, "1 regressed, 0 improved, 4 absent from this run"));
    e2e_res_free(&r1);
    e2e_res_free(&r2);
    e2e_res_free(&r3);
}

static void test_bad_baseline(void **st) {
    (void)st;
    e2e_write("bad.txt", "isa avx2\nentry kernel/x 12 1 instr/call 1\nentry broken\n", (size_t)-1);
    char bad[512];
    e2e_path(bad, sizeof bad, "bad.txt");
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "count", "--kernels", "--baseline", bad);
    e2e_assert_clean(&r, "bad baseline");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "bad baseline", "bad.txt:3:", "expected 'entry NAME", NULL);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "count", "--kernels", "-m", "x.gguf");
    assert_int_equal(r.status, 2);
    e2e_res_free(&r);
    /* no valgrind: a failure (1) that names the program */
    setenv("TB_VALGRIND", "/nonexistent/valgrind", 1);
    E2E_RUN(&r, E2E_NO_LIMIT, "count", "--kernels");
    unsetenv("TB_VALGRIND");
    assert_int_equal(r.status, 1);
    e2e_assert_err_has(&r, "no valgrind", "cannot run /nonexistent/valgrind", NULL);
    e2e_res_free(&r);
}
#else
static void test_slow_kernel_caught(void **st) {
    (void)st;
    char base[1024];
    snprintf(base, sizeof base, "%s/tests/gate/count-baseline.txt", getenv("TB_SOURCE_ROOT"));
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "count", "--kernels", "--baseline", base);
    e2e_assert_clean(&r, "slow kernel");
    assert_int_equal(r.status, 1);
    const char *row = strstr(r.out, "| kernel/matvec/tq2_0/2048x2048");
    assert_non_null(row);
    assert_true(strstr(row, "**regressed**") < strchr(row, '\n'));
    e2e_res_free(&r);
    /* the TQ2_0 model's decode shows it too; its prefill (gemm) does not */
    E2E_RUN(&r, E2E_NO_LIMIT, "count", "--baseline", base);
    assert_int_equal(r.status, 1);
    row = strstr(r.out, "| model/llama-tiny-tq2_0/decode8");
    assert_non_null(row);
    assert_true(strstr(row, "**regressed**") < strchr(row, '\n'));
    row = strstr(r.out, "| model/llama-tiny-tq2_0/prefill16");
    assert_non_null(row);
    assert_true(strstr(row, "unchanged") < strchr(row, '\n'));
    e2e_res_free(&r);
}
#endif

int main(int argc, char **argv) {
    int no_valgrind = argc > 2 && !strcmp(argv[2], "--no-valgrind");
    (void)no_valgrind;   /* the slow_kernel build has no such part */
    if (e2e_init(argc, argv, "gate_count")) return 1;
#ifndef TB_SLOW_KERNEL_BUILD
    if (no_valgrind) {
        const struct CMUnitTest before[] = {cmocka_unit_test(test_bad_baseline)};
        int rc = cmocka_run_group_tests(before, setup, NULL);
        e2e_cleanup();
        return rc;
    }
#endif
    const struct CMUnitTest tests[] = {
#ifndef TB_SLOW_KERNEL_BUILD
        cmocka_unit_test(test_deterministic_and_baseline),
        cmocka_unit_test(test_bad_baseline),
#else
        cmocka_unit_test(test_slow_kernel_caught),
#endif
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    e2e_cleanup();
    return rc;
}
