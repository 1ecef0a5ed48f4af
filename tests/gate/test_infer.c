/*
 * test_infer.c — bench/harness/infer.c against hand-computed values.
 *
 * Expected figures come from Python's standard library (math, statistics)
 * evaluating the same definitions directly: all m·n log differences sorted
 * (or all Walsh averages), the exact U / signed-rank counts by their
 * recurrences, statistics.NormalDist().inv_cdf for z, and Student t values
 * from the standard tables. The comment above each test gives the numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "infer.h"
#include "ternbench.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

/* z(0.975) = NormalDist().inv_cdf(0.975) = 1.959963984540054;
 * t(0.975; 1) = 12.7062047, t(0.975; 2) = 4.30265273,
 * t(0.975; 10) = 2.22813885, t(0.975; 30) = 2.04227246 (t tables). */
static void test_quantiles(void **st) {
    (void)st;
    NEAR(tb_infer_norm_quantile(0.975), 1.959963984540054, 1e-12);
    NEAR(tb_infer_norm_quantile(0.01), -2.3263478740408408, 1e-12);
    NEAR(tb_infer_norm_quantile(0.5), 0.0, 1e-15);
    NEAR(tb_infer_t_quantile(0.975, 1), 12.7062047, 1e-6);
    NEAR(tb_infer_t_quantile(0.975, 2), 4.30265273, 1e-7);
    NEAR(tb_infer_t_quantile(0.975, 3), 3.18244631, 4e-3);
    NEAR(tb_infer_t_quantile(0.975, 10), 2.22813885, 1e-4);
    NEAR(tb_infer_t_quantile(0.975, 30), 2.04227246, 1e-5);
    NEAR(tb_infer_t_quantile(0.025, 30), -2.04227246, 1e-5);
}

/* Two-sided sign test: 0 of 6 -> 2/64; 1 of 8 -> 2 * 9/256; 4 of 8 -> 1. */
static void test_sign(void **st) {
    (void)st;
    NEAR(tb_infer_sign_test_p(0, 6), 0.03125, 1e-12);
    NEAR(tb_infer_sign_test_p(6, 6), 0.03125, 1e-12);
    NEAR(tb_infer_sign_test_p(1, 8), 0.0703125, 1e-12);
    NEAR(tb_infer_sign_test_p(4, 8), 1.0, 1e-12);
    NEAR(tb_infer_sign_test_p(0, 0), 1.0, 0);
}

/* base {100, 102, 99, 101, 103}, cand {90.5, 92, 91, 89.8, 93}: exact U
 * counts for 5 x 5 (total 252) give P(U <= 2) = 4/252 <= 0.025 <
 * P(U <= 3) = 7/252, so k = 3 and the interval is [d(3), d(23)] of the 25
 * sorted log differences, confidence 1 - 8/252 = 0.968254. Python:
 * estimate exp(median d) = 0.9029126, lo = 0.8803922 (89.8/102), hi =
 * 0.9292929 (92/99). */
static void test_hl_unpaired_exact(void **st) {
    (void)st;
    const double b[] = {100, 102, 99, 101, 103}, c[] = {90.5, 92, 91, 89.8, 93};
    tb_infer_ratio_t r;
    assert_int_equal(tb_infer_hl_unpaired(b, 5, c, 5, 0.95, &r), TB_OK);
    assert_int_equal(r.method, TB_INFER_EXACT);
    NEAR(r.estimate, 0.9029126213592236, 1e-12);
    NEAR(r.lo, 89.8 / 102, 1e-12);
    NEAR(r.hi, 92.0 / 99, 1e-12);
    NEAR(r.conf, 1 - 8.0 / 252, 1e-12);
    NEAR(r.median_base, 101, 0);
    NEAR(r.median_cand, 91, 0);
    NEAR(r.ratio_medians, 91.0 / 101, 1e-15);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_HIGHER_BETTER), TB_VERDICT_REGRESSED);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_LOWER_BETTER), TB_VERDICT_IMPROVED);
    /* 3 against 3: P(U = 0) = 1/20 > 0.025, no 95 % interval exists */
    assert_int_equal(tb_infer_hl_unpaired(b, 3, c, 3, 0.95, &r), TB_OK);
    assert_true(r.lo == 0 && isinf(r.hi));
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_HIGHER_BETTER), TB_VERDICT_INCONCLUSIVE);
}

/* Pairs b {100, 101, 99, 102, 98, 103, 100.5, 99.5}, c {96, 98.5, 97, 96.9,
 * 95, 99, 97.2, 96.1}: signed-rank counts for n = 8 (total 256) give
 * P(T <= 3) = 5/256 <= 0.025 < P(T <= 4) = 7/256, k = 4, the interval
 * [w(4), w(33)] of the 36 Walsh averages of log(c/b), confidence
 * 1 - 10/256. Python: estimate 0.9661627, lo 0.9578819, hi 0.9745790. */
static void test_hl_paired_exact(void **st) {
    (void)st;
    const double b[] = {100, 101, 99, 102, 98, 103, 100.5, 99.5};
    const double c[] = {96, 98.5, 97, 96.9, 95, 99, 97.2, 96.1};
    tb_infer_ratio_t r;
    assert_int_equal(tb_infer_hl_paired(b, c, 8, 0.95, &r), TB_OK);
    assert_int_equal(r.method, TB_INFER_EXACT);
    NEAR(r.estimate, 0.966162731208336, 1e-12);
    NEAR(r.lo, 0.9578818760380694, 1e-12);
    NEAR(r.hi, 0.974578967600819, 1e-12);
    NEAR(r.conf, 1 - 10.0 / 256, 1e-12);
    /* with a 3 % threshold the interval [0.958, 0.975] straddles 0.97 */
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.03, TB_INFER_HIGHER_BETTER), TB_VERDICT_INCONCLUSIVE);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.05, TB_INFER_HIGHER_BETTER), TB_VERDICT_UNCHANGED);
}

/* 60 against 60 (normal approximation), base_i = 100 + (37 i mod 61)/10,
 * cand_j = 95 + (41 j mod 61)/10: 11 values occur once on each side,
 * so the tie sum is 11 x (2^3 - 2) = 66 (Python, grouping the 120 logs), Var U = 3600/12 x (121 - 66/(120 x 119)) = 36298.6134,
 * k = floor(1800 - 1.959964 sqrt(Var) + 0.5) = 1427; estimate 0.9515270,
 * lo = d(1427) = 0.9451923, hi = d(2174) = 0.9579668. */
static void test_hl_unpaired_normal(void **st) {
    (void)st;
    double b[60], c[60];
    for (int i = 0; i < 60; i++) {
        b[i] = 100 + (double)(i * 37 % 61) / 10;
        c[i] = 95 + (double)(i * 41 % 61) / 10;
    }
    tb_infer_ratio_t r;
    assert_int_equal(tb_infer_hl_unpaired(b, 60, c, 60, 0.95, &r), TB_OK);
    assert_int_equal(r.method, TB_INFER_NORMAL);
    NEAR(r.estimate, 0.9515270240088358, 1e-12);
    NEAR(r.lo, 0.9451923076923076, 1e-12);
    NEAR(r.hi, 0.9579667644183775, 1e-12);
}

/* A/A: the same ten tok/s values on both sides (spread ±0.3 %) are
 * unchanged at a 1 % threshold by every method; scaled by 0.9 they are a
 * regression of tok/s (and an improvement of a latency). */
static void test_aa_and_shift(void **st) {
    (void)st;
    const double a[] = {100.1, 99.8, 100.3, 99.9, 100.0, 100.2, 99.7, 100.1, 99.9, 100.25};
    double s[10];
    for (int i = 0; i < 10; i++) s[i] = 0.9 * a[i];
    tb_infer_ratio_t r;
    assert_int_equal(tb_infer_hl_unpaired(a, 10, a, 10, 0.95, &r), TB_OK);
    NEAR(r.estimate, 1.0, 1e-12);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_HIGHER_BETTER), TB_VERDICT_UNCHANGED);
    assert_int_equal(tb_infer_hl_paired(a, a, 10, 0.95, &r), TB_OK);
    assert_true(r.lo == 1.0 && r.hi == 1.0);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_HIGHER_BETTER), TB_VERDICT_UNCHANGED);
    assert_int_equal(tb_infer_bootstrap(a, 10, a, 10, false, 0.95, 2000, 7, &r), TB_OK);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_HIGHER_BETTER), TB_VERDICT_UNCHANGED);

    assert_int_equal(tb_infer_hl_unpaired(a, 10, s, 10, 0.95, &r), TB_OK);
    NEAR(r.estimate, 0.9, 1e-12);
    assert_true(r.hi < 0.99);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_HIGHER_BETTER), TB_VERDICT_REGRESSED);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_LOWER_BETTER), TB_VERDICT_IMPROVED);
    assert_int_equal(tb_infer_hl_paired(a, s, 10, 0.95, &r), TB_OK);
    NEAR(r.lo, 0.9, 1e-12);
    NEAR(r.hi, 0.9, 1e-12);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_HIGHER_BETTER), TB_VERDICT_REGRESSED);
    assert_int_equal(tb_infer_bootstrap(a, 10, s, 10, false, 0.95, 2000, 7, &r), TB_OK);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.01, TB_INFER_HIGHER_BETTER), TB_VERDICT_REGRESSED);
}

/* The bootstrap: the same seed gives the same interval, the interval holds
 * the ratio of medians, and pairs resampled together of an exact 0.9
 * shift give exactly [0.9, 0.9]. */
static void test_bootstrap(void **st) {
    (void)st;
    const double b[] = {100, 102, 99, 101, 103, 98, 100.5};
    const double c[] = {90.5, 92, 91, 89.8, 93, 90.1, 91.7};
    tb_infer_ratio_t r1, r2, r3;
    assert_int_equal(tb_infer_bootstrap(b, 7, c, 7, false, 0.95, 1000, 42, &r1), TB_OK);
    assert_int_equal(tb_infer_bootstrap(b, 7, c, 7, false, 0.95, 1000, 42, &r2), TB_OK);
    assert_int_equal(r1.method, TB_INFER_BOOTSTRAP);
    assert_true(r1.lo == r2.lo && r1.hi == r2.hi);
    NEAR(r1.estimate, 91.0 / 100.5, 1e-12);
    assert_true(r1.lo <= r1.estimate && r1.estimate <= r1.hi);
    /* the extremes: no resampled ratio can leave [min c / max b, max c / min b] */
    assert_true(r1.lo >= 89.8 / 103 && r1.hi <= 93.0 / 98);
    double s[7];
    for (int i = 0; i < 7; i++) s[i] = b[i] * 0.9;
    assert_int_equal(tb_infer_bootstrap(b, 7, s, 7, true, 0.95, 500, 1, &r3), TB_OK);
    NEAR(r3.lo, 0.9, 1e-12);
    NEAR(r3.hi, 0.9, 1e-12);
    assert_int_equal(tb_infer_bootstrap(b, 7, s, 6, true, 0.95, 500, 1, &r3), TB_ERR_ARG);
    assert_int_equal(tb_infer_bootstrap(b, 7, s, 7, true, 0.95, 10, 1, &r3), TB_ERR_ARG);
}

/* ESS (Geyer, initial monotone sequence). Python, the same definition:
 * the drifting series below gives 2.976324; the alternating one has
 * g0 + g1 <= 0 and keeps its n = 10. */
static void test_ess(void **st) {
    (void)st;
    const double x[] = {1, 3, 2, 4, 6, 5, 7, 9, 8, 10, 9, 11, 13, 12, 11, 10};
    NEAR(tb_infer_ess(x, 16), 2.976324053491408, 1e-9);
    const double a[] = {5, 1, 6, 2, 5, 1, 7, 2, 6, 1};
    NEAR(tb_infer_ess(a, 10), 10, 0);
    const double k[] = {3, 3, 3, 3};
    NEAR(tb_infer_ess(k, 4), 4, 0);
}

/* Mean of {5, 1, 6, 2, 5, 1, 7, 2, 6, 1} (ESS 10): 3.6 ± t(0.975; 9) x
 * sd / sqrt(10) = 3.6 ± 2.262157 x 2.4129281 / 3.1622777 = 3.6 ± 1.726105.
 * On the drifting series the interval uses ESS 2.98, so it is wider than
 * the one that would treat its 16 values as independent. */
static void test_mean_ci(void **st) {
    (void)st;
    const double a[] = {5, 1, 6, 2, 5, 1, 7, 2, 6, 1};
    double m, lo, hi, e;
    assert_int_equal(tb_infer_mean_ci(a, 10, 0.95, &m, &lo, &hi, &e), TB_OK);
    NEAR(m, 3.6, 1e-12);
    NEAR(e, 10, 0);
    NEAR(hi - m, 1.726104686328303, 2e-4);
    NEAR(m - lo, 1.726104686328303, 2e-4);
    const double x[] = {1, 3, 2, 4, 6, 5, 7, 9, 8, 10, 9, 11, 13, 12, 11, 10};
    assert_int_equal(tb_infer_mean_ci(x, 16, 0.95, &m, &lo, &hi, &e), TB_OK);
    double sd = 0;
    for (int i = 0; i < 16; i++) sd += (x[i] - m) * (x[i] - m);
    sd = sqrt(sd / 15);
    double iid_half = 2.13144955 * sd / 4;   /* t(0.975; 15) */
    assert_true(hi - m > 1.5 * iid_half);
    assert_int_equal(tb_infer_mean_ci(a, 1, 0.95, &m, &lo, &hi, &e), TB_ERR_ARG);
}

/* Median of 20 latencies, median 10.35; the indicator series [x <= median]
 * has ESS 20, so the ranks are 10 ± 1.959964 x 20 / (2 sqrt 20): r = 5,
 * q = 16, the interval [x(5), x(16)] = [10.0, 10.8] (Python). */
static void test_median_ci(void **st) {
    (void)st;
    const double y[] = {10.2, 10.8, 9.9, 10.1, 11.5, 10.4, 9.7, 10.0, 10.6, 10.3,
                        12.9, 10.5, 9.8, 10.7, 10.1, 10.9, 11.1, 10.2, 9.6, 10.4};
    double m, lo, hi, e;
    assert_int_equal(tb_infer_median_ci(y, 20, 0.95, &m, &lo, &hi, &e), TB_OK);
    NEAR(m, 10.35, 1e-12);
    NEAR(e, 20, 0);
    NEAR(lo, 10.0, 0);
    NEAR(hi, 10.8, 0);
    /* a series that stays below its median for its first half: the
     * indicator is one long run, ESS small, the interval wider */
    double z[20];
    for (int i = 0; i < 20; i++) z[i] = i < 10 ? 10 + 0.01 * i : 11 + 0.01 * i;
    double lo2, hi2;
    assert_int_equal(tb_infer_median_ci(z, 20, 0.95, &m, &lo2, &hi2, &e), TB_OK);
    assert_true(e < 5);
    assert_true(isinf(lo2) || isinf(hi2));
    /* the ratio of two medians with ESS: identical series give 1 and an
     * interval around it; the same series x 1.2 gives 1.2 */
    tb_infer_ratio_t r;
    double y2[20];
    for (int i = 0; i < 20; i++) y2[i] = 1.2 * y[i];
    assert_int_equal(tb_infer_median_ratio_ess(y, 20, y2, 20, 0.95, &r), TB_OK);
    assert_int_equal(r.method, TB_INFER_ESS);
    NEAR(r.estimate, 1.2, 1e-12);
    assert_true(r.lo < 1.2 && r.hi > 1.2 && r.lo > 1.0);
    assert_int_equal(tb_infer_verdict(r.lo, r.hi, 0.05, TB_INFER_LOWER_BETTER), TB_VERDICT_REGRESSED);
}

/* The verdict rule at its edges. */
static void test_verdict(void **st) {
    (void)st;
    const tb_infer_better_t H = TB_INFER_HIGHER_BETTER, L = TB_INFER_LOWER_BETTER;
    assert_int_equal(tb_infer_verdict(0.995, 1.005, 0.01, H), TB_VERDICT_UNCHANGED);
    assert_int_equal(tb_infer_verdict(0.99, 1.01, 0.01, H), TB_VERDICT_UNCHANGED);
    assert_int_equal(tb_infer_verdict(0.97, 0.989, 0.01, H), TB_VERDICT_REGRESSED);
    assert_int_equal(tb_infer_verdict(0.97, 0.995, 0.01, H), TB_VERDICT_INCONCLUSIVE);
    assert_int_equal(tb_infer_verdict(1.02, 1.05, 0.01, H), TB_VERDICT_IMPROVED);
    assert_int_equal(tb_infer_verdict(1.02, 1.05, 0.01, L), TB_VERDICT_REGRESSED);
    assert_int_equal(tb_infer_verdict(0.97, 0.98, 0.01, L), TB_VERDICT_IMPROVED);
    assert_int_equal(tb_infer_verdict(0.9, 1.2, 0.01, L), TB_VERDICT_INCONCLUSIVE);
    assert_int_equal(tb_infer_verdict(1.011, 1.011, 0.01, L), TB_VERDICT_REGRESSED);   /* a count */
    assert_int_equal(tb_infer_verdict(1.009, 1.009, 0.01, L), TB_VERDICT_UNCHANGED);
    assert_int_equal(tb_infer_verdict(NAN, 1.0, 0.01, L), TB_VERDICT_INCONCLUSIVE);
    assert_int_equal(tb_infer_verdict(0, INFINITY, 0.01, H), TB_VERDICT_INCONCLUSIVE);
    assert_string_equal(tb_infer_verdict_name(TB_VERDICT_REGRESSED), "regressed");
    assert_string_equal(tb_infer_method_name(TB_INFER_EXACT), "exact");
}

static void test_bad_input(void **st) {
    (void)st;
    const double b[] = {1, 2, 3}, z[] = {1, 0, 3}, nn[] = {1, NAN, 3};
    tb_infer_ratio_t r;
    assert_int_equal(tb_infer_hl_unpaired(b, 3, z, 3, 0.95, &r), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "candidate value 1"));
    assert_int_equal(tb_infer_hl_paired(nn, b, 3, 0.95, &r), TB_ERR_ARG);
    assert_int_equal(tb_infer_hl_unpaired(b, 0, b, 3, 0.95, &r), TB_ERR_ARG);
    assert_int_equal(tb_infer_hl_unpaired(b, 3, b, 3, 1.0, &r), TB_ERR_ARG);
    double m, lo, hi;
    assert_int_equal(tb_infer_median_ci(nn, 3, 0.95, &m, &lo, &hi, NULL), TB_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_sign),
        cmocka_unit_test(test_hl_unpaired_exact),
        cmocka_unit_test(test_hl_paired_exact),
        cmocka_unit_test(test_hl_unpaired_normal),
        cmocka_unit_test(test_aa_and_shift),
        cmocka_unit_test(test_bootstrap),
        cmocka_unit_test(test_ess),
        cmocka_unit_test(test_mean_ci),
        cmocka_unit_test(test_median_ci),
        cmocka_unit_test(test_verdict),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
