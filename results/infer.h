/*
 * infer.h — comparisons of two samples for the regression gate (pure
 * functions, no state; inputs are never modified).
 *
 * Every comparison is of a candidate against a base and is reported as the
 * ratio cand / base with a confidence interval (default 95 %):
 *
 *   tb_infer_hl_unpaired  Hodges–Lehmann estimate of the ratio: the median of
 *                         log(c_j) - log(b_i) over all m·n pairs, exp'd; its
 *                         interval from the Mann–Whitney U distribution
 *                         (exact when both sides have <= TB_INFER_EXACT_MAX
 *                         values and no value ties, else the normal
 *                         approximation with the tie-corrected variance).
 *   tb_infer_hl_paired    the same for pairs (b_i, c_i): the median of the
 *                         Walsh averages of d_i = log(c_i / b_i), interval
 *                         from the Wilcoxon signed-rank distribution.
 *   tb_infer_bootstrap    ratio of medians, seeded percentile bootstrap
 *                         (pairs resampled together when paired).
 *   tb_infer_sign_test_p  two-sided sign test.
 *   tb_infer_ess          effective sample size of an autocorrelated series
 *                         (Geyer's initial positive sequence estimator).
 *   tb_infer_mean_ci / tb_infer_median_ci   intervals that use it.
 *   tb_infer_verdict      regressed / improved / unchanged / inconclusive.
 *
 * Conventions: values compared as ratios must be finite and > 0 (rates,
 * latencies, counts; ratios are taken on logs), TB_ERR_ARG otherwise;
 * tb_infer_ess and tb_infer_mean_ci take any finite values. An interval that
 * the sample cannot give (too few values for the confidence asked, e.g. 3
 * against 3 at 95 %) is reported as lo = 0, hi = +inf: its verdict is
 * inconclusive, never unchanged.
 */
#ifndef TB_HARNESS_INFER_H
#define TB_HARNESS_INFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sides with at most this many values (and no ties) use the exact U and
 * signed-rank distributions; larger ones the normal approximation. */
#define TB_INFER_EXACT_MAX 50
/* At most this many pairwise differences (Walsh averages) are sorted. */
#define TB_INFER_MAX_PAIRS 4000000

typedef enum tb_infer_method {
    TB_INFER_EXACT = 0,       /* exact rank distribution                  */
    TB_INFER_NORMAL,          /* normal approximation, tie-corrected       */
    TB_INFER_BOOTSTRAP,       /* percentile bootstrap                      */
    TB_INFER_ESS,             /* normal / t with the effective sample size */
    TB_INFER_POINT,           /* no interval: deterministic values         */
} tb_infer_method_t;

typedef struct tb_infer_ratio {
    size_t n_base, n_cand;
    double median_base, median_cand;
    double ratio_medians;     /* median_cand / median_base                  */
    double estimate;          /* the method's point estimate of cand / base */
    double lo, hi;            /* confidence interval of the ratio           */
    double conf;              /* confidence actually achieved (exact: the
                                 discrete level at or above the one asked)  */
    tb_infer_method_t method;
} tb_infer_ratio_t;

/* Hodges–Lehmann ratio of two independent samples (base nb values, cand nc
 * values, nb, nc >= 1, nb · nc <= TB_INFER_MAX_PAIRS: TB_ERR_RANGE above)
 * with its interval at confidence conf (0 < conf < 1). */
int tb_infer_hl_unpaired(const double *base, size_t nb, const double *cand, size_t nc,
                         double conf, tb_infer_ratio_t *out);

/* Hodges–Lehmann ratio of n pairs (base[i], cand[i]), n >= 1, with
 * n (n + 1) / 2 <= TB_INFER_MAX_PAIRS Walsh averages. */
int tb_infer_hl_paired(const double *base, const double *cand, size_t n, double conf,
                       tb_infer_ratio_t *out);

/* Percentile bootstrap of the ratio of medians with n_boot resamples
 * (>= 100) drawn from a generator seeded with seed: the same inputs and
 * seed give the same interval. paired: nb == nc and pair i is resampled as
 * one (the statistic is then the median of the per-pair ratios). */
int tb_infer_bootstrap(const double *base, size_t nb, const double *cand, size_t nc,
                       bool paired, double conf, int n_boot, uint64_t seed,
                       tb_infer_ratio_t *out);

/* Two-sided sign test: the probability of a split at least as uneven as k
 * of n under p = 1/2 (1 when n == 0). */
double tb_infer_sign_test_p(int k, int n);

/* Effective sample size of the series x (n values, in time order), by
 * Geyer's (1992) initial positive sequence: with the autocovariances g_k
 * (divided by n), sum the pair sums G_m = g_2m + g_2m+1 while they stay
 * positive, kept non-increasing (the initial monotone sequence); the
 * integrated autocorrelation time is tau = (-g_0 + 2 Σ G_m) / g_0 and
 * ESS = n / tau, clamped to [1, n]. A constant series gives n. */
double tb_infer_ess(const double *x, size_t n);

/* Mean of x with its interval: mean ± t(ess - 1) · sd / sqrt(ess), sd the
 * sample standard deviation and ess = tb_infer_ess(x). *ess may be NULL.
 * n >= 2. */
int tb_infer_mean_ci(const double *x, size_t n, double conf,
                     double *mean, double *lo, double *hi, double *ess);

/* Median of x with a distribution-free interval between order statistics
 * whose ranks are n/2 ± z · n / (2 sqrt(ess)), ess the effective sample
 * size of the indicator series [x_t <= median] (its autocorrelation is what
 * widens a median's interval). *ess may be NULL. n >= 2. */
int tb_infer_median_ci(const double *x, size_t n, double conf,
                       double *median, double *lo, double *hi, double *ess);

/* Ratio cand / base of two independent series' medians, each with
 * tb_infer_median_ci: the interval combines the two on a log scale (each
 * side's half-width taken as its z · standard error). method TB_INFER_ESS;
 * n_base / n_cand hold the effective sizes rounded down. */
int tb_infer_median_ratio_ess(const double *base, size_t nb, const double *cand, size_t nc,
                              double conf, tb_infer_ratio_t *out);

/* ---- verdicts ---- */

typedef enum tb_infer_better {
    TB_INFER_HIGHER_BETTER = 1,   /* tok/s, GB/s, % of roofline          */
    TB_INFER_LOWER_BETTER = -1,   /* latency, instructions, bytes         */
} tb_infer_better_t;

typedef enum tb_infer_verdict {
    TB_VERDICT_UNCHANGED = 0,     /* interval inside [1 - t, 1 + t]      */
    TB_VERDICT_IMPROVED,          /* interval wholly beyond t, better way */
    TB_VERDICT_REGRESSED,         /* interval wholly beyond t, worse way  */
    TB_VERDICT_INCONCLUSIVE,      /* interval straddles a bound of ±t     */
} tb_infer_verdict_t;

/* The verdict on a ratio interval [lo, hi] (cand / base) for a metric whose
 * better direction is `better`, against threshold t (a fraction, 0.01 for
 * 1 %; t >= 0): regressed only when the whole interval lies beyond 1 - t
 * (higher-better: hi < 1 - t) or 1 + t (lower-better: lo > 1 + t);
 * improved likewise the other way; unchanged when 1 - t <= lo and
 * hi <= 1 + t; else inconclusive. A point (lo == hi) is judged the same way.
 * NAN bounds give inconclusive. */
tb_infer_verdict_t tb_infer_verdict(double lo, double hi, double t, tb_infer_better_t better);
/* "unchanged", "improved", "regressed", "inconclusive". */
const char *tb_infer_verdict_name(tb_infer_verdict_t v);
/* "exact", "normal", "bootstrap", "ess", "point". */
const char *tb_infer_method_name(tb_infer_method_t m);

/* ---- distributions used above (exposed for the tests) ---- */

/* Standard normal quantile (Acklam's rational approximation, refined by one
 * Halley step: |error| < 1e-12); p in (0, 1). */
double tb_infer_norm_quantile(double p);
/* Student t quantile with nu degrees of freedom: exact for nu 1 and 2,
 * a Cornish–Fisher expansion in 1/nu from nu = 3 (|error| < 4e-3 at
 * nu = 3, < 1e-4 from nu = 10); a fractional nu below 3 is rounded down
 * (a wider interval), below 1 taken as 1; p in (0, 1). */
double tb_infer_t_quantile(double p, double nu);

#endif
