/*
 * test_quality_scenario.c — the [quality] test kind on real weights,
 * through the built binary (argv[1]):
 *   - the shipped scenarios that measure quality parse
 *     (scenarios/quality-stories260K.ini, scenarios/quant-compare.ini);
 *   - a scenario quantizing stories260K into the cache ([model] path with
 *     a type list) and scoring each type against the F32 file: the file
 *     against itself gives KLD 0 and same top-1 100 %, Q4_0 drifts further
 *     than Q8_0, each run's figures equal `ternbench quality` on the same
 *     files, and the quantized files are made once (a second run reuses
 *     them).
 * Skipped (exit 77) where ../shared is absent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "shared.h"

#include "../e2e/e2e.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char stories[512], text[600], root[512];

static void test_shipped_parse(void **state) {
    (void)state;
    static const char *const files[] = {"scenarios/quality-stories260K.ini", "scenarios/quant-compare.ini"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", root, files[i]);
        e2e_res_t r;
        E2E_RUN(&r, E2E_NO_LIMIT, "scenario", "explain", p);
        e2e_assert_clean(&r, files[i]);
        if (r.status != 0) fail_msg("%s: exit %d: %s", files[i], r.status, r.err);
        assert_non_null(strstr(r.out, "[quality"));
        e2e_res_free(&r);
    }
}

static double num(const char *dbp, const char *fmt, const char *a, const char *b) {
    char sql[1024];
    snprintf(sql, sizeof sql, fmt, a, b);
    char *q = e2e_db_query(dbp, sql);
    assert_non_null(q);
    if (!*q) fail_msg("no row: %s", sql);
    double v = strtod(q, NULL);
    free(q);
    return v;
}

#define METRIC "SELECT m.value FROM measurements m JOIN tests t ON t.id = m.test_id JOIN runs r ON r.id = t.run_id" \
               " JOIN models o ON o.id = r.model_id WHERE t.kind = 'quality' AND o.path LIKE '%%%s%%'" \
               " AND m.metric = '%s'"

static double json_num(const char *out, const char *key) {
    char k[96];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(out, k);
    assert_non_null(p);
    return strtod(p + strlen(k), NULL);
}

static void test_quantized_in_cache(void **state) {
    (void)state;
    char ini[2048];
    snprintf(ini, sizeof ini, "[model]\npath = %s\ntype = default, q8_0, q4_0\ncache_dir = cache\n"
             "[engine]\nthreads = 2\n"
             "[protocol]\nwarmup = 0\nrepetitions = 1\nbandwidth_probe = 0\nthrottle_check = false\n"
             "interleave = rep\n"
             "[decode]\ntokens = 8\n"
             "[quality]\nreference = default\ntext = %s\nctx = 128\nchunks = 4\n", stories, text);
    e2e_write("s.ini", ini, (size_t)-1);
    char sp[600], dbp[600];
    e2e_path(sp, sizeof sp, "s.ini");
    e2e_path(dbp, sizeof dbp, "s.db");
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "run", sp, "--db", dbp, "-q");
    e2e_assert_clean(&r, "run");
    if (r.status != 0) fail_msg("run: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    /* the file itself, and two quantizations made into the cache */
    assert_true(num(dbp, METRIC, "stories260K.gguf", "kld_mean") == 0);
    assert_true(num(dbp, METRIC, "stories260K.gguf", "same_top_pct") == 100);
    double k8 = num(dbp, METRIC, "-q8_0-src", "kld_mean"), k4 = num(dbp, METRIC, "-q4_0-src", "kld_mean");
    assert_true(k8 > 0);
    assert_true(k4 > 2 * k8);
    char q8[1024];
    char *path = e2e_db_query(dbp, "SELECT path FROM models WHERE path LIKE '%-q8_0-src%'");
    assert_non_null(path);
    snprintf(q8, sizeof q8, "%.*s", (int)strcspn(path, "\n"), path);
    free(path);
    struct stat st0;
    assert_int_equal(stat(q8, &st0), 0);
    /* the command on the same files gives the same figures */
    E2E_RUN(&r, E2E_NO_LIMIT, "quality", "-m", q8, "--ref", stories, "--text", text, "--ctx", "128",
            "--chunks", "4", "-t", "1", "--json");
    e2e_assert_clean(&r, "quality");
    assert_int_equal(r.status, 0);
    /* (the JSON prints 9 significant digits) */
    assert_true(fabs(json_num(r.out, "kld_mean") / k8 - 1) < 1e-8);
    double ppl = num(dbp, METRIC, "-q8_0-src", "ppl");
    assert_true(fabs(json_num(r.out, "ppl") / ppl - 1) < 1e-8);
    assert_true(fabs(100 * json_num(r.out, "same_top") - num(dbp, METRIC, "-q8_0-src", "same_top_pct")) < 1e-6);
    e2e_res_free(&r);
    /* a second run reuses the cached quantization */
    E2E_RUN(&r, E2E_NO_LIMIT, "run", sp, "--db", dbp, "-q");
    assert_int_equal(r.status, 0);
    e2e_res_free(&r);
    struct stat st1;
    assert_int_equal(stat(q8, &st1), 0);
    assert_true(st0.st_mtime == st1.st_mtime && st0.st_ino == st1.st_ino);
    char *n = e2e_db_query(dbp, "SELECT count(DISTINCT m.value) FROM measurements m JOIN tests t ON t.id = m.test_id"
                                " JOIN runs r ON r.id = t.run_id JOIN models o ON o.id = r.model_id"
                                " WHERE o.path LIKE '%-q4_0-src%' AND m.metric = 'kld_mean'");
    assert_string_equal(n, "1\n");   /* deterministic: both runs' figures are equal */
    free(n);
}

int main(int argc, char **argv) {
    quality_need_shared();
    const char *sh = getenv("TB_SHARED_DIR"), *src = getenv("TB_SOURCE_ROOT");
    if (!sh || !src || e2e_init(argc, argv, "quality_scenario")) return 1;
    snprintf(root, sizeof root, "%s", src);
    snprintf(stories, sizeof stories, "%s/models/stories260K.gguf", sh);
    char p[512];
    snprintf(p, sizeof p, "%s/text/tinystories-valid-head.txt", sh);
    FILE *f = fopen(p, "rb");
    if (!f) return 1;
    static char buf[24 << 10];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    e2e_write("text.txt", buf, n);
    e2e_path(text, sizeof text, "text.txt");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_parse),
        cmocka_unit_test(test_quantized_in_cache),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    e2e_cleanup();
    return rc;
}
