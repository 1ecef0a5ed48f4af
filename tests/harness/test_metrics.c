/*
 * test_metrics.c — the metric registry and the analysis rules: every
 * metric named once with a unit, a direction and a description; the
 * manual's table (scenarios/README.md) generated from it; the settled,
 * sign-test and paired-ratio rules against values worked out by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "readme.h"
#include "infer.h"
#include "metrics.h"
#include "ternbench.h"

static void test_registry(void **state) {
    (void)state;
    for (int i = 0; i < TB_M_COUNT; i++) {
        const tb_metric_def_t *d = &tb_metrics[i];
        if (!d->name || !d->unit || !*d->unit || !d->help || !*d->help || !d->kinds)
            fail_msg("metric %d is incomplete", i);
        for (int j = 0; j < i; j++)
            if (!strcmp(tb_metrics[j].name, d->name)) fail_msg("metric %s declared twice", d->name);
        assert_ptr_equal(tb_metric_find(d->name), d);
        assert_null(strchr(d->name, ':'));   /* no pseudo-metrics: summaries are derived */
    }
    assert_null(tb_metric_find("decode_tok_per_s:stddev"));
    assert_null(tb_metric_find("cpu_ghz_min"));
    assert_int_equal(tb_metric_find("decode_tok_per_s")->better, TB_BETTER_HIGHER);
    assert_int_equal(tb_metric_find("itl_p99_ms")->better, TB_BETTER_LOWER);
    assert_string_equal(tb_metric_find("roofline_pct")->unit, "%");
}

/* scenarios/README.md carries the generated metric table verbatim. */
static void test_readme_matches_registry(void **state) {
    (void)state;
    const char *root = getenv("TB_SOURCE_ROOT");
    if (!root) fail_msg("TB_SOURCE_ROOT is not set");
    int has = readme_has_block(root, "metrics", tb_metrics_markdown);
    assert_true(has >= 0);
    if (!has)
        fail_msg("scenarios/README.md metric table is stale: regenerate it with `ternbench metrics` "
                 "between the metrics:begin/end markers");
}

static void test_rules(void **state) {
    (void)state;
    /* settled: within 15 % of the higher probe */
    assert_true(tb_an_settled(30.0, 34.0));    /* 4 <= 5.1 */
    assert_false(tb_an_settled(30.0, 36.0));   /* 6 > 5.4 */
    assert_false(tb_an_settled(NAN, 30.0));
    /* sign test: n 5, k 5 -> 2 / 32; n 6, k 3 -> 1; n 8, k 1 -> 2 * 9 / 256 */
    assert_float_equal(tb_infer_sign_test_p(5, 5), 0.0625, 1e-12);
    assert_float_equal(tb_infer_sign_test_p(3, 6), 1.0, 1e-12);
    assert_float_equal(tb_infer_sign_test_p(1, 8), 18.0 / 256.0, 1e-12);
    /* pairs b / a: 1.1, 0.9, 1.2, 1.0 (a NAN pair skipped) -> median 1.05, q25 0.975, q75 1.125 */
    const double a[] = {10, 10, 10, 10, NAN}, b[] = {11, 9, 12, 10, 5};
    tb_an_paired_t p;
    assert_int_equal(tb_an_paired(a, b, 5, &p), TB_OK);
    assert_int_equal(p.n, 4);
    assert_int_equal(p.faster, 2);
    assert_float_equal(p.median, 1.05, 1e-12);
    assert_float_equal(p.q25, 0.975, 1e-12);
    assert_float_equal(p.q75, 1.125, 1e-12);
    assert_float_equal(p.min, 0.9, 1e-12);
    assert_float_equal(p.max, 1.2, 1e-12);
    assert_float_equal(p.sign_p, 1.0, 1e-12);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_readme_matches_registry),
        cmocka_unit_test(test_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
