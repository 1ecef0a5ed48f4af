/*
 * test_stats.c — statistics helpers against values computed by hand, and
 * SHA-256 against the FIPS 180-4 example vectors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "scenario.h"
#include "stats.h"

static void test_median(void **state) {
    (void)state;
    const double odd[] = {5, 1, 3};                 /* sorted 1 3 5 -> 3 */
    const double even[] = {4, 1, 3, 2};             /* sorted 1 2 3 4 -> (2+3)/2 */
    const double one[] = {7};
    assert_float_equal(tb_stats_median(odd, 3), 3.0, 1e-12);
    assert_float_equal(tb_stats_median(even, 4), 2.5, 1e-12);
    assert_float_equal(tb_stats_median(one, 1), 7.0, 1e-12);
    assert_true(isnan(tb_stats_median(NULL, 0)));
    /* the input is not reordered */
    assert_float_equal(odd[0], 5.0, 0);
}

static void test_percentile(void **state) {
    (void)state;
    /* 10 20 30 40 50: rank = p/100 * 4 */
    const double x[] = {50, 10, 40, 20, 30};
    assert_float_equal(tb_stats_percentile(x, 5, 0), 10.0, 1e-12);
    assert_float_equal(tb_stats_percentile(x, 5, 100), 50.0, 1e-12);
    assert_float_equal(tb_stats_percentile(x, 5, 50), 30.0, 1e-12);
    assert_float_equal(tb_stats_percentile(x, 5, 90), 46.0, 1e-12);   /* rank 3.6: 40 + 0.6*10 */
    assert_float_equal(tb_stats_percentile(x, 5, 99), 49.6, 1e-12);   /* rank 3.96 */
    assert_float_equal(tb_stats_percentile(x, 5, 25), 20.0, 1e-12);   /* rank 1 */
    assert_float_equal(tb_stats_percentile(x, 5, 10), 14.0, 1e-12);   /* rank 0.4 */
    /* 1..100: p99 at rank 98.01 -> 99.01 */
    double h[100];
    for (int i = 0; i < 100; i++) h[i] = 100 - i;
    assert_float_equal(tb_stats_percentile(h, 100, 99), 99.01, 1e-9);
    assert_float_equal(tb_stats_percentile(h, 100, 50), 50.5, 1e-9);
}

static void test_mean_stddev(void **state) {
    (void)state;
    /* 2 4 4 4 5 5 7 9: mean 5, sum of squares 32, sample variance 32/7 */
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    assert_float_equal(tb_stats_mean(x, 8), 5.0, 1e-12);
    assert_float_equal(tb_stats_stddev(x, 8), sqrt(32.0 / 7.0), 1e-12);
    assert_float_equal(tb_stats_stddev(x, 1), 0.0, 0);
    tb_stats_summary_t s;
    tb_stats_summarize(x, 8, &s);
    assert_int_equal(s.n, 8);
    assert_float_equal(s.min, 2, 0);
    assert_float_equal(s.max, 9, 0);
    assert_float_equal(s.median, 4.5, 1e-12);
    assert_float_equal(tb_stats_pick(&s, "median"), 4.5, 1e-12);
    assert_float_equal(tb_stats_pick(&s, "mean"), 5.0, 1e-12);
    assert_float_equal(tb_stats_pick(&s, "min"), 2.0, 0);
    assert_float_equal(tb_stats_pick(&s, "max"), 9.0, 0);
    assert_true(isnan(tb_stats_pick(&s, "mode")));
}

/* Stall share: excess over the median of the values above factor x it. */
static void test_stall(void **state) {
    (void)state;
    const double flat[] = {10, 10, 10, 10, 10};
    const double one[] = {10, 10, 40, 10, 10};       /* 30 over the median, of 80 */
    const double mild[] = {10, 14, 10, 10, 10};      /* 1.4 x: not a stall at 1.5 */
    assert_float_equal(tb_stats_stall_pct(flat, 5, 1.5), 0.0, 1e-12);
    assert_float_equal(tb_stats_stall_pct(one, 5, 1.5), 100.0 * 30 / 80, 1e-12);
    assert_float_equal(tb_stats_stall_pct(mild, 5, 1.5), 0.0, 1e-12);
    assert_float_equal(tb_stats_stall_pct(mild, 5, 1.2), 100.0 * 4 / 54, 1e-12);
    assert_true(isnan(tb_stats_stall_pct(flat, 0, 1.5)));
}

static void test_stability(void **state) {
    (void)state;
    const double flat[] = {100, 100, 100};
    const double drop[] = {120, 100, 90, 60};       /* 60 / 120 */
    assert_float_equal(tb_stats_stability_pct(flat, 3), 100.0, 1e-12);
    assert_float_equal(tb_stats_stability_pct(drop, 4), 50.0, 1e-12);
    assert_true(isnan(tb_stats_stability_pct(drop, 0)));
    /* matched depth: bins of 100 -> {120, 100} at 0..99 (83.3 %), {90} alone, {60, 66} at 300..399
     * (90.9 %); the window alone in its bin is compared with none */
    const double rate[] = {120, 90, 60, 100, 66}, depth[] = {10, 150, 390, 95, 300};
    assert_float_equal(tb_stats_stability_matched_pct(rate, depth, 5, 100), 100.0 * 100 / 120, 1e-12);
    assert_float_equal(tb_stats_stability_matched_pct(rate, depth, 5, 1000), 50.0, 1e-12);
    assert_true(isnan(tb_stats_stability_matched_pct(rate, depth, 2, 100)));   /* 120 and 90: no pair */
    assert_true(isnan(tb_stats_stability_matched_pct(rate, depth, 0, 100)));
}

static void test_sha256(void **state) {
    (void)state;
    char h[65];
    tb_sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    tb_sha256_hex("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";   /* 2 blocks */
    tb_sha256_hex(two, strlen(two), h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* incremental == one shot */
    tb_sha256_t c;
    uint8_t d[32];
    tb_sha256_init(&c);
    for (size_t i = 0; i < strlen(two); i++) tb_sha256_update(&c, two + i, 1);
    tb_sha256_final(&c, d);
    assert_int_equal(d[0], 0x24);
    assert_int_equal(d[31], 0xc1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_percentile),
        cmocka_unit_test(test_mean_stddev),
        cmocka_unit_test(test_stability),
        cmocka_unit_test(test_stall),
        cmocka_unit_test(test_sha256),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
