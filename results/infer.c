/*
 * infer.c — two-sample comparisons, effective sample size and verdicts for
 * the regression gate (see infer.h for the contract of each function).
 *
 * Rank intervals (Hodges–Lehmann): with the m·n pairwise differences (or
 * the n(n+1)/2 Walsh averages) sorted as d_(1) <= ... <= d_(M), the
 * interval [d_(k), d_(M+1-k)] covers the true shift with probability
 * 1 - 2 P(S <= k - 1), S the Mann–Whitney U (Wilcoxon signed-rank T+)
 * statistic under no shift; k is the largest with P(S <= k - 1) <= α/2.
 */
#include "infer.h"
#include "tbutil.h"
#include "ternbench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of a sorted array (n >= 1). */
static double sorted_median(const double *v, size_t n) {
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double median_of(const double *x, size_t n, double *scratch) {
    memcpy(scratch, x, n * sizeof *x);
    qsort(scratch, n, sizeof *scratch, cmp_dbl);
    return sorted_median(scratch, n);
}

static int check_pos(const double *x, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || x[i] <= 0)
            return tb_err(TB_ERR_ARG, "infer: %s value %zu is %g (ratios need finite values > 0)", what, i, x[i]);
    return TB_OK;
}

static int check_conf(double conf) {
    if (!(conf > 0 && conf < 1)) return tb_err(TB_ERR_ARG, "infer: confidence %g is not in (0, 1)", conf);
    return TB_OK;
}

/* ===================================================================== */
/* Distributions                                                          */
/* ===================================================================== */

double tb_infer_norm_quantile(double p) {
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01, -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    if (!(p > 0 && p < 1)) return p == 0 ? -INFINITY : p == 1 ? INFINITY : NAN;
    const double plow = 0.02425;
    double x;
    if (p < plow) {
        double q = sqrt(-2 * log(p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    } else if (p <= 1 - plow) {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    } else {
        double q = sqrt(-2 * log(1 - p));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
             ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    /* one Halley step against the exact CDF */
    double e = 0.5 * erfc(-x / sqrt(2.0)) - p;
    double u = e * sqrt(2 * M_PI) * exp(x * x / 2);
    return x - u / (1 + x * u / 2);
}

double tb_infer_t_quantile(double p, double nu) {
    if (!(p > 0 && p < 1)) return p == 0 ? -INFINITY : p == 1 ? INFINITY : NAN;
    if (!(nu >= 2)) return tan(M_PI * (p - 0.5));                  /* nu = 1 (Cauchy) */
    if (nu < 3) return (2 * p - 1) / sqrt(2 * p * (1 - p));        /* nu = 2 */
    double z = tb_infer_norm_quantile(p), z2 = z * z;
    double z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
    double g1 = (z3 + z) / 4;
    double g2 = (5 * z5 + 16 * z3 + 3 * z) / 96;
    double g3 = (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384;
    double g4 = (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / 92160;
    return z + g1 / nu + g2 / (nu * nu) + g3 / (nu * nu * nu) + g4 / (nu * nu * nu * nu);
}

double tb_infer_sign_test_p(int k, int n) {
    if (n <= 0) return 1.0;
    const int m = k < n - k ? k : n - k;
    double tail = 0.0;
    for (int i = 0; i <= m; i++)
        tail += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0));
    return 2.0 * tail > 1.0 ? 1.0 : 2.0 * tail;
}

/* Counts of the Mann–Whitney U statistic for sizes m, n: cnt[u], u in
 * 0..m·n, by f(i, j)(u) = f(i-1, j)(u - j) + f(i, j-1)(u), one row of j at a
 * time (only additions of positive counts, so no cancellation). */
static int mw_counts(size_t m, size_t n, double *cnt) {
    size_t L = m * n + 1;
    double *row = calloc((n + 1) * L, sizeof *row);   /* (n + 1, L): f(i, j) for j = 0..n */
    if (!row) return tb_err(TB_ERR_NOMEM, "infer: out of memory for the U distribution (%zu x %zu)", m, n);
    for (size_t j = 0; j <= n; j++) row[j * L] = 1;   /* f(0, j) = [u == 0] */
    for (size_t i = 1; i <= m; i++) {
        /* f(i, 0) = [u == 0] stays; f(i, j) = f(i-1, j) << j + f(i, j-1) */
        for (size_t j = 1; j <= n; j++) {
            double *cur = row + j * L, *left = row + (j - 1) * L;
            for (size_t u = L; u-- > 0;) {
                double v = u >= j ? cur[u - j] : 0;   /* f(i-1, j)(u - j): cur still holds row i-1 */
                cur[u] = v + left[u];
            }
        }
    }
    memcpy(cnt, row + n * L, L * sizeof *cnt);
    free(row);
    return TB_OK;
}

/* Counts of the signed-rank statistic T+ for n: coefficients of Π (1 + q^i). */
static void sr_counts(size_t n, double *cnt) {
    size_t L = n * (n + 1) / 2 + 1;
    memset(cnt, 0, L * sizeof *cnt);
    cnt[0] = 1;
    size_t top = 0;
    for (size_t i = 1; i <= n; i++) {
        for (size_t u = top + i; u >= i; u--) cnt[u] += cnt[u - i];
        top += i;
    }
}

/* The largest k (0 when none) with P(S <= k - 1) <= alpha/2 from counts
 * cnt[0..L) of total `total`; *tail gets P(S <= k - 1). */
static size_t exact_k(const double *cnt, size_t L, double alpha, double *tail) {
    double total = 0, cum = 0;
    for (size_t u = 0; u < L; u++) total += cnt[u];
    size_t k = 0;
    *tail = 0;
    for (size_t u = 0; u < L; u++) {
        cum += cnt[u];
        if (cum / total > alpha / 2) break;
        k = u + 1;
        *tail = cum / total;
    }
    return k;
}

/* k of the normal approximation: S has mean mu and sd sd; continuity-
 * corrected P(S <= k - 1) = Φ((k - 0.5 - mu) / sd) <= alpha/2. */
static size_t normal_k(double mu, double sd, double alpha) {
    double z = tb_infer_norm_quantile(1 - alpha / 2);
    double k = floor(mu - z * sd + 0.5);
    return k < 1 ? 0 : (size_t)k;
}

/* Σ (t³ - t) over the tie groups of a sorted array. */
static double tie_sum(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && v[j] == v[i]) j++;
        double t = (double)(j - i);
        s += t * t * t - t;
        i = j;
    }
    return s;
}

/* Fill out's interval from the sorted differences d (M of them) and k. */
static void rank_interval(const double *d, size_t M, size_t k, tb_infer_ratio_t *out) {
    out->estimate = exp(sorted_median(d, M));
    if (k > (M + 1) / 2) k = (M + 1) / 2;
    if (k == 0) { out->lo = 0; out->hi = INFINITY; return; }
    out->lo = exp(d[k - 1]);
    out->hi = exp(d[M - k]);
}

static int medians_of(const double *base, size_t nb, const double *cand, size_t nc, tb_infer_ratio_t *out) {
    double *s = malloc((nb > nc ? nb : nc) * sizeof *s);
    if (!s) return tb_err(TB_ERR_NOMEM, "infer: out of memory");
    out->n_base = nb;
    out->n_cand = nc;
    out->median_base = median_of(base, nb, s);
    out->median_cand = median_of(cand, nc, s);
    out->ratio_medians = out->median_cand / out->median_base;
    free(s);
    return TB_OK;
}

/* ===================================================================== */
/* Hodges–Lehmann                                                          */
/* ===================================================================== */

int tb_infer_hl_unpaired(const double *base, size_t nb, const double *cand, size_t nc,
                         double conf, tb_infer_ratio_t *out) {
    int rc;
    if (nb == 0 || nc == 0) return tb_err(TB_ERR_ARG, "infer: empty sample (%zu base, %zu candidate values)", nb, nc);
    if ((rc = check_conf(conf)) || (rc = check_pos(base, nb, "base")) || (rc = check_pos(cand, nc, "candidate")))
        return rc;
    if ((double)nb * (double)nc > TB_INFER_MAX_PAIRS)
        return tb_err(TB_ERR_RANGE, "infer: %zu x %zu values exceed %d pairwise differences", nb, nc, TB_INFER_MAX_PAIRS);
    memset(out, 0, sizeof *out);
    if ((rc = medians_of(base, nb, cand, nc, out))) return rc;
    size_t M = nb * nc, N = nb + nc;
    double *d = malloc(M * sizeof *d), *all = malloc(N * sizeof *all);
    double *cnt = NULL;
    if (!d || !all) { rc = tb_err(TB_ERR_NOMEM, "infer: out of memory for %zu differences", M); goto done; }
    for (size_t i = 0; i < nb; i++) {
        double lb = log(base[i]);
        for (size_t j = 0; j < nc; j++) d[i * nc + j] = log(cand[j]) - lb;
    }
    qsort(d, M, sizeof *d, cmp_dbl);
    for (size_t i = 0; i < nb; i++) all[i] = log(base[i]);
    for (size_t j = 0; j < nc; j++) all[nb + j] = log(cand[j]);
    qsort(all, N, sizeof *all, cmp_dbl);
    double ties = tie_sum(all, N), alpha = 1 - conf;
    size_t k;
    if (ties == 0 && nb <= TB_INFER_EXACT_MAX && nc <= TB_INFER_EXACT_MAX) {
        if (!(cnt = malloc((M + 1) * sizeof *cnt))) { rc = tb_err(TB_ERR_NOMEM, "infer: out of memory"); goto done; }
        if ((rc = mw_counts(nb, nc, cnt))) goto done;
        double tail;
        k = exact_k(cnt, M + 1, alpha, &tail);
        out->method = TB_INFER_EXACT;
        out->conf = k ? 1 - 2 * tail : 1;
    } else {
        double var = (double)nb * (double)nc / 12.0 * ((double)N + 1 - ties / ((double)N * ((double)N - 1)));
        k = normal_k((double)M / 2, sqrt(var > 0 ? var : 0), alpha);
        out->method = TB_INFER_NORMAL;
        out->conf = conf;
    }
    rank_interval(d, M, k, out);
    if (!k) out->conf = 0;
done:
    free(d);
    free(all);
    free(cnt);
    return rc;
}

int tb_infer_hl_paired(const double *base, const double *cand, size_t n, double conf,
                       tb_infer_ratio_t *out) {
    int rc;
    if (n == 0) return tb_err(TB_ERR_ARG, "infer: no pairs");
    if ((rc = check_conf(conf)) || (rc = check_pos(base, n, "base")) || (rc = check_pos(cand, n, "candidate")))
        return rc;
    if ((double)n * ((double)n + 1) / 2 > TB_INFER_MAX_PAIRS)
        return tb_err(TB_ERR_RANGE, "infer: %zu pairs exceed %d Walsh averages", n, TB_INFER_MAX_PAIRS);
    memset(out, 0, sizeof *out);
    if ((rc = medians_of(base, n, cand, n, out))) return rc;
    size_t M = n * (n + 1) / 2;
    double *x = malloc(n * sizeof *x), *ax = malloc(n * sizeof *ax), *w = malloc(M * sizeof *w);
    double *cnt = NULL;
    if (!x || !ax || !w) { rc = tb_err(TB_ERR_NOMEM, "infer: out of memory for %zu Walsh averages", M); goto done; }
    int zero = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = log(cand[i]) - log(base[i]);
        ax[i] = fabs(x[i]);
        zero |= x[i] == 0;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++) w[m++] = 0.5 * (x[i] + x[j]);
    qsort(w, M, sizeof *w, cmp_dbl);
    qsort(ax, n, sizeof *ax, cmp_dbl);
    double ties = tie_sum(ax, n), alpha = 1 - conf;
    size_t k;
    if (!zero && ties == 0 && n <= TB_INFER_EXACT_MAX) {
        if (!(cnt = malloc((M + 1) * sizeof *cnt))) { rc = tb_err(TB_ERR_NOMEM, "infer: out of memory"); goto done; }
        sr_counts(n, cnt);
        double tail;
        k = exact_k(cnt, M + 1, alpha, &tail);
        out->method = TB_INFER_EXACT;
        out->conf = k ? 1 - 2 * tail : 1;
    } else {
        double dn = (double)n;
        double var = dn * (dn + 1) * (2 * dn + 1) / 24.0 - ties / 48.0;
        k = normal_k((double)M / 2, sqrt(var > 0 ? var : 0), alpha);
        out->method = TB_INFER_NORMAL;
        out->conf = conf;
    }
    rank_interval(w, M, k, out);
    if (!k) out->conf = 0;
done:
    free(x);
    free(ax);
    free(w);
    free(cnt);
    return rc;
}

/* ===================================================================== */
/* Bootstrap                                                               */
/* ===================================================================== */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform index in [0, n) (n < 2^32). */
static size_t draw(uint64_t *s, size_t n) {
    return (size_t)(((splitmix64(s) >> 32) * (uint64_t)n) >> 32);
}

/* Linear-interpolation percentile of a sorted array (numpy's default). */
static double sorted_pct(const double *v, size_t n, double q) {
    double r = q * (double)(n - 1);
    size_t i = (size_t)floor(r);
    if (i + 1 >= n) return v[n - 1];
    return v[i] + (r - (double)i) * (v[i + 1] - v[i]);
}

int tb_infer_bootstrap(const double *base, size_t nb, const double *cand, size_t nc,
                       bool paired, double conf, int n_boot, uint64_t seed,
                       tb_infer_ratio_t *out) {
    int rc;
    if (nb == 0 || nc == 0) return tb_err(TB_ERR_ARG, "infer: empty sample (%zu base, %zu candidate values)", nb, nc);
    if (paired && nb != nc) return tb_err(TB_ERR_ARG, "infer: paired bootstrap of %zu and %zu values", nb, nc);
    if (n_boot < 100) return tb_err(TB_ERR_ARG, "infer: %d bootstrap resamples (at least 100)", n_boot);
    if (nb >= UINT32_MAX || nc >= UINT32_MAX) return tb_err(TB_ERR_RANGE, "infer: sample too large to resample");
    if ((rc = check_conf(conf)) || (rc = check_pos(base, nb, "base")) || (rc = check_pos(cand, nc, "candidate")))
        return rc;
    memset(out, 0, sizeof *out);
    if ((rc = medians_of(base, nb, cand, nc, out))) return rc;
    size_t nmax = nb > nc ? nb : nc;
    double *stat = malloc((size_t)n_boot * sizeof *stat);
    double *s1 = malloc(nmax * sizeof *s1), *s2 = malloc(nmax * sizeof *s2);
    if (!stat || !s1 || !s2) { rc = tb_err(TB_ERR_NOMEM, "infer: out of memory for %d resamples", n_boot); goto done; }
    uint64_t st = seed;
    if (paired) {
        for (size_t i = 0; i < nb; i++) s2[i] = cand[i] / base[i];
        out->estimate = median_of(s2, nb, s1);
        for (int b = 0; b < n_boot; b++) {
            for (size_t i = 0; i < nb; i++) s1[i] = s2[draw(&st, nb)];
            qsort(s1, nb, sizeof *s1, cmp_dbl);
            stat[b] = sorted_median(s1, nb);
        }
    } else {
        out->estimate = out->ratio_medians;
        for (int b = 0; b < n_boot; b++) {
            for (size_t i = 0; i < nb; i++) s1[i] = base[draw(&st, nb)];
            for (size_t j = 0; j < nc; j++) s2[j] = cand[draw(&st, nc)];
            qsort(s1, nb, sizeof *s1, cmp_dbl);
            qsort(s2, nc, sizeof *s2, cmp_dbl);
            stat[b] = sorted_median(s2, nc) / sorted_median(s1, nb);
        }
    }
    qsort(stat, (size_t)n_boot, sizeof *stat, cmp_dbl);
    double alpha = 1 - conf;
    out->lo = sorted_pct(stat, (size_t)n_boot, alpha / 2);
    out->hi = sorted_pct(stat, (size_t)n_boot, 1 - alpha / 2);
    out->conf = conf;
    out->method = TB_INFER_BOOTSTRAP;
done:
    free(stat);
    free(s1);
    free(s2);
    return rc;
}

/* ===================================================================== */
/* Autocorrelated series                                                   */
/* ===================================================================== */

/* Autocovariance at lag k, divided by n. */
static double autocov(const double *x, size_t n, double mean, size_t k) {
    double s = 0;
    for (size_t t = 0; t + k < n; t++) s += (x[t] - mean) * (x[t + k] - mean);
    return s / (double)n;
}

double tb_infer_ess(const double *x, size_t n) {
    if (n < 3) return (double)n;
    double mean = 0;
    for (size_t t = 0; t < n; t++) mean += x[t];
    mean /= (double)n;
    double g0 = autocov(x, n, mean, 0);
    if (!(g0 > 0)) return (double)n;
    double sum = 0, prev = INFINITY;
    /* pairs (2m, 2m+1) up to lag n/2: estimates beyond it rest on too few products */
    for (size_t m = 0; 2 * m + 1 <= n / 2; m++) {
        double G = (m == 0 ? g0 : autocov(x, n, mean, 2 * m)) + autocov(x, n, mean, 2 * m + 1);
        if (!(G > 0)) break;
        if (G > prev) G = prev;
        sum += G;
        prev = G;
    }
    double tau = (-g0 + 2 * sum) / g0;
    if (!(tau > 0)) return (double)n;
    double ess = (double)n / tau;
    return ess < 1 ? 1 : ess > (double)n ? (double)n : ess;
}

int tb_infer_mean_ci(const double *x, size_t n, double conf,
                     double *mean, double *lo, double *hi, double *ess) {
    int rc;
    if (n < 2) return tb_err(TB_ERR_ARG, "infer: a mean's interval needs 2 values, got %zu", n);
    if ((rc = check_conf(conf))) return rc;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return tb_err(TB_ERR_ARG, "infer: value %zu is not finite", i);
    double m = 0, ss = 0;
    for (size_t i = 0; i < n; i++) m += x[i];
    m /= (double)n;
    for (size_t i = 0; i < n; i++) ss += (x[i] - m) * (x[i] - m);
    double sd = sqrt(ss / (double)(n - 1)), e = tb_infer_ess(x, n);
    *mean = m;
    if (ess) *ess = e;
    if (e < 2) { *lo = -INFINITY; *hi = INFINITY; return TB_OK; }
    double half = tb_infer_t_quantile(1 - (1 - conf) / 2, e - 1) * sd / sqrt(e);
    *lo = m - half;
    *hi = m + half;
    return TB_OK;
}

int tb_infer_median_ci(const double *x, size_t n, double conf,
                       double *median, double *lo, double *hi, double *ess) {
    int rc;
    if (n < 2) return tb_err(TB_ERR_ARG, "infer: a median's interval needs 2 values, got %zu", n);
    if ((rc = check_conf(conf))) return rc;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return tb_err(TB_ERR_ARG, "infer: value %zu is not finite", i);
    double *s = malloc(n * sizeof *s), *ind = malloc(n * sizeof *ind);
    if (!s || !ind) { free(s); free(ind); return tb_err(TB_ERR_NOMEM, "infer: out of memory for %zu values", n); }
    double med = median_of(x, n, s);
    for (size_t i = 0; i < n; i++) ind[i] = x[i] <= med;
    double e = tb_infer_ess(ind, n);
    double z = tb_infer_norm_quantile(1 - (1 - conf) / 2);
    double half = z * (double)n / (2 * sqrt(e));
    double r = floor((double)n / 2 - half), q = ceil((double)n / 2 + half) + 1;   /* 1-based ranks */
    *median = med;
    *lo = r >= 1 ? s[(size_t)r - 1] : -INFINITY;
    *hi = q <= (double)n ? s[(size_t)q - 1] : INFINITY;
    if (ess) *ess = e;
    free(s);
    free(ind);
    return TB_OK;
}

int tb_infer_median_ratio_ess(const double *base, size_t nb, const double *cand, size_t nc,
                              double conf, tb_infer_ratio_t *out) {
    int rc;
    if ((rc = check_pos(base, nb, "base")) || (rc = check_pos(cand, nc, "candidate"))) return rc;
    double mb, lb, hb, eb, mc, lc, hc, ec;
    if ((rc = tb_infer_median_ci(base, nb, conf, &mb, &lb, &hb, &eb)) ||
        (rc = tb_infer_median_ci(cand, nc, conf, &mc, &lc, &hc, &ec)))
        return rc;
    memset(out, 0, sizeof *out);
    out->n_base = (size_t)eb;
    out->n_cand = (size_t)ec;
    out->median_base = mb;
    out->median_cand = mc;
    out->ratio_medians = out->estimate = mc / mb;
    out->method = TB_INFER_ESS;
    out->conf = conf;
    if (!(lb > 0) || !(lc > 0) || !isfinite(hb) || !isfinite(hc)) {
        out->lo = 0;
        out->hi = INFINITY;
        out->conf = 0;
        return TB_OK;
    }
    double z = tb_infer_norm_quantile(1 - (1 - conf) / 2);
    double sb = (log(hb) - log(lb)) / (2 * z), sc = (log(hc) - log(lc)) / (2 * z);
    double se = sqrt(sb * sb + sc * sc);
    out->lo = out->estimate * exp(-z * se);
    out->hi = out->estimate * exp(z * se);
    return TB_OK;
}

/* ===================================================================== */
/* Verdicts                                                                */
/* ===================================================================== */

tb_infer_verdict_t tb_infer_verdict(double lo, double hi, double t, tb_infer_better_t better) {
    if (isnan(lo) || isnan(hi) || isnan(t) || lo > hi) return TB_VERDICT_INCONCLUSIVE;
    if (t < 0) t = 0;
    double down = 1 - t, up = 1 + t;
    if (hi < down) return better == TB_INFER_HIGHER_BETTER ? TB_VERDICT_REGRESSED : TB_VERDICT_IMPROVED;
    if (lo > up) return better == TB_INFER_HIGHER_BETTER ? TB_VERDICT_IMPROVED : TB_VERDICT_REGRESSED;
    if (lo >= down && hi <= up) return TB_VERDICT_UNCHANGED;
    return TB_VERDICT_INCONCLUSIVE;
}

const char *tb_infer_verdict_name(tb_infer_verdict_t v) {
    switch (v) {
    case TB_VERDICT_UNCHANGED:    return "unchanged";
    case TB_VERDICT_IMPROVED:     return "improved";
    case TB_VERDICT_REGRESSED:    return "regressed";
    case TB_VERDICT_INCONCLUSIVE: return "inconclusive";
    }
    return "?";
}

const char *tb_infer_method_name(tb_infer_method_t m) {
    switch (m) {
    case TB_INFER_EXACT:     return "exact";
    case TB_INFER_NORMAL:    return "normal";
    case TB_INFER_BOOTSTRAP: return "bootstrap";
    case TB_INFER_ESS:       return "ess";
    case TB_INFER_POINT:     return "point";
    }
    return "?";
}
