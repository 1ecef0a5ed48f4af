/*
 * test_quality_cli.c — `ternbench quality` through the built binary (argv[1]):
 * --save-ref then --ref-logits gives the same figures as --ref; --json
 * output carries the labels (post hoc, approximate head); usage errors
 * and bad inputs exit 2 with a message naming the file; `model quantize
 * --ternarize` labels its output.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "shared.h"

#include "../e2e/e2e.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char stories[512], text[600];

static double json_num(const char *out, const char *key) {
    char k[96];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(out, k);
    assert_non_null(p);
    return strtod(p + strlen(k), NULL);
}

static void test_ref_file_matches_model(void **state) {
    (void)state;
    char ref[600];
    e2e_path(ref, sizeof ref, "s.ref");
    e2e_res_t a, b, c;
    E2E_RUN(&a, E2E_NO_LIMIT, "quality", "--ref", stories, "--text", text, "--ctx", "64", "--chunks", "3",
            "-t", "1", "--save-ref", ref);
    e2e_assert_clean(&a, "save-ref");
    assert_int_equal(a.status, 0);
    assert_non_null(strstr(a.err, "reference saved"));
    char q8[600];
    e2e_path(q8, sizeof q8, "q8.gguf");
    E2E_RUN(&b, E2E_NO_LIMIT, "model", "quantize", stories, q8, "--type", "q8_0");
    assert_int_equal(b.status, 0);
    e2e_res_free(&b);
    E2E_RUN(&b, E2E_NO_LIMIT, "quality", "-m", q8, "--ref", stories, "--text", text, "--ctx", "64", "--chunks",
            "3", "-t", "1", "--json");
    E2E_RUN(&c, E2E_NO_LIMIT, "quality", "-m", q8, "--ref-logits", ref, "--text", text, "-t", "2", "--json");
    e2e_assert_clean(&b, "ref model");
    e2e_assert_clean(&c, "ref file");
    assert_int_equal(b.status, 0);
    assert_int_equal(c.status, 0);
    const char *keys[] = {"ppl", "ppl_base", "kld_mean", "kld_p99", "same_top", "dp_rms", "ppl_ratio"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_true(json_num(b.out, keys[i]) == json_num(c.out, keys[i]));
    assert_true(json_num(c.out, "scored_tokens") == 3 * (64 - 1 - 32));
    assert_non_null(strstr(c.out, "\"reference_kind\": \"file\""));
    assert_non_null(strstr(c.out, "\"approximate\": false"));
    assert_non_null(strstr(c.out, "\"kld_full_mean\": null"));   /* no full reference from a file */
    e2e_res_free(&a);
    e2e_res_free(&b);
    e2e_res_free(&c);
}

static void test_labels(void **state) {
    (void)state;
    char tern[600];
    e2e_path(tern, sizeof tern, "tern.gguf");
    e2e_res_t a, b;
    E2E_RUN(&a, E2E_NO_LIMIT, "model", "quantize", stories, tern, "--type", "tq2_0", "--ternarize", "absmean");
    assert_int_equal(a.status, 0);
    assert_non_null(strstr(a.out, "ternarized post hoc"));
    e2e_res_free(&a);
    E2E_RUN(&a, E2E_NO_LIMIT, "model", "info", tern);
    assert_non_null(strstr(a.out, "post hoc"));
    e2e_res_free(&a);
    E2E_RUN(&a, E2E_NO_LIMIT, "quality", "-m", tern, "--ref", stories, "--text", text, "--ctx", "64", "--chunks",
            "2", "-t", "1");
    assert_int_equal(a.status, 0);
    assert_non_null(strstr(a.out, "post-hoc"));
    E2E_RUN(&b, E2E_NO_LIMIT, "quality", "-m", stories, "--ref", stories, "--text", text, "--ctx", "64",
            "--chunks", "2", "-t", "1", "--head", "approx:16:4", "--json");
    assert_int_equal(b.status, 0);
    assert_non_null(strstr(b.out, "\"approximate\": true"));
    assert_non_null(strstr(b.out, "\"head_centroids\": 16"));
    e2e_res_free(&a);
    e2e_res_free(&b);
    E2E_RUN(&a, E2E_NO_LIMIT, "quality", "-m", stories, "--ref", stories, "--text", text, "--ctx", "64",
            "--chunks", "2", "-t", "1", "--head", "approx:16:4");
    assert_non_null(strstr(a.out, "APPROXIMATE"));
    e2e_res_free(&a);
}

static void test_errors(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "quality", "-m", stories, "--text", text);
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "no reference", "--ref", NULL);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "quality", "-m", stories, "--ref", stories, "--text", text, "--head", "approx:0");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "bad head", "--head", NULL);
    e2e_res_free(&r);
    e2e_write("short.txt", "Once upon a time.", (size_t)-1);
    char shortp[600];
    e2e_path(shortp, sizeof shortp, "short.txt");
    E2E_RUN(&r, E2E_NO_LIMIT, "quality", "-m", stories, "--ref", stories, "--text", shortp);
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "short text", shortp, "shorter than two chunks", NULL);
    e2e_res_free(&r);
    e2e_write("junk.ref", "not a reference file at all", (size_t)-1);
    char junk[600];
    e2e_path(junk, sizeof junk, "junk.ref");
    E2E_RUN(&r, E2E_NO_LIMIT, "quality", "-m", stories, "--ref-logits", junk, "--text", text);
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "junk ref", junk, NULL);
    e2e_res_free(&r);
}

int main(int argc, char **argv) {
    quality_need_shared();
    const char *sh = getenv("TB_SHARED_DIR");
    if (!sh || e2e_init(argc, argv, "quality_cli")) return 1;
    snprintf(stories, sizeof stories, "%s/models/stories260K.gguf", sh);
    /* the first 24 KiB of the text */
    char src[512];
    snprintf(src, sizeof src, "%s/text/tinystories-valid-head.txt", sh);
    FILE *f = fopen(src, "rb");
    if (!f) return 1;
    static char buf[24 << 10];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    e2e_write("text.txt", buf, n);
    e2e_path(text, sizeof text, "text.txt");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_file_matches_model),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    e2e_cleanup();
    return rc;
}
