/*
 * stats.c — median, percentiles, mean/stddev, stability (see stats.h).
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tb_stats_mean(const double *x, size_t n) {
    if (n == 0) return NAN;
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s / (double)n;
}

double tb_stats_stddev(const double *x, size_t n) {
    if (n == 0) return NAN;
    if (n < 2) return 0;
    double m = tb_stats_mean(x, n), ss = 0;
    for (size_t i = 0; i < n; i++) ss += (x[i] - m) * (x[i] - m);
    return sqrt(ss / (double)(n - 1));
}

/* Percentile of already sorted values. */
static double percentile_sorted(const double *v, size_t n, double p) {
    if (n == 0) return NAN;
    if (p <= 0) return v[0];
    if (p >= 100) return v[n - 1];
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)rank;
    double frac = rank - (double)lo;
    if (lo + 1 >= n) return v[n - 1];
    return v[lo] + frac * (v[lo + 1] - v[lo]);
}

/* Sorted copy of x (caller frees); NULL on n == 0 or allocation failure. */
static double *sorted_copy(const double *x, size_t n) {
    if (n == 0) return NULL;
    double *v = malloc(n * sizeof *v);
    if (!v) return NULL;
    memcpy(v, x, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_double);
    return v;
}

double tb_stats_percentile(const double *x, size_t n, double p) {
    double *v = sorted_copy(x, n);
    if (!v) return NAN;
    double r = percentile_sorted(v, n, p);
    free(v);
    return r;
}

double tb_stats_median(const double *x, size_t n) { return tb_stats_percentile(x, n, 50); }

void tb_stats_summarize(const double *x, size_t n, tb_stats_summary_t *out) {
    out->n = n;
    double *v = sorted_copy(x, n);
    if (!v) {
        out->min = out->max = out->mean = out->median = out->stddev = NAN;
        return;
    }
    out->min = v[0];
    out->max = v[n - 1];
    out->median = percentile_sorted(v, n, 50);
    out->mean = tb_stats_mean(v, n);
    out->stddev = tb_stats_stddev(v, n);
    free(v);
}

double tb_stats_stability_pct(const double *rates, size_t n) {
    if (n == 0) return NAN;
    double lo = rates[0], hi = rates[0];
    for (size_t i = 1; i < n; i++) {
        if (rates[i] < lo) lo = rates[i];
        if (rates[i] > hi) hi = rates[i];
    }
    if (hi <= 0) return NAN;
    return 100.0 * lo / hi;
}

typedef struct { double key, rate; } binned_t;

static int cmp_binned(const void *a, const void *b) {
    const binned_t *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

double tb_stats_stability_matched_pct(const double *rates, const double *depth, size_t n, double bin) {
    if (n == 0 || !(bin > 0)) return NAN;
    binned_t *v = malloc(n * sizeof *v);   /* (n) windows by bin */
    if (!v) return NAN;
    for (size_t i = 0; i < n; i++) v[i] = (binned_t){floor(depth[i] / bin), rates[i]};
    qsort(v, n, sizeof *v, cmp_binned);
    double worst = NAN;
    for (size_t i = 0, j; i < n; i = j) {
        double lo = v[i].rate, hi = v[i].rate;
        for (j = i + 1; j < n && v[j].key == v[i].key; j++) {
            lo = v[j].rate < lo ? v[j].rate : lo;
            hi = v[j].rate > hi ? v[j].rate : hi;
        }
        if (j - i >= 2 && hi > 0 && !(100.0 * lo / hi >= worst)) worst = 100.0 * lo / hi;
    }
    free(v);
    return worst;
}

double tb_stats_stall_pct(const double *lat, size_t n, double factor) {
    if (n == 0) return NAN;
    const double med = tb_stats_median(lat, n);
    double all = 0.0, over = 0.0;
    for (size_t i = 0; i < n; i++) {
        all += lat[i];
        if (lat[i] > factor * med) over += lat[i] - med;
    }
    return all > 0.0 ? 100.0 * over / all : 0.0;
}

double tb_stats_pick(const tb_stats_summary_t *s, const char *stat) {
    if (!strcmp(stat, "median")) return s->median;
    if (!strcmp(stat, "mean")) return s->mean;
    if (!strcmp(stat, "min")) return s->min;
    if (!strcmp(stat, "max")) return s->max;
    return NAN;
}
