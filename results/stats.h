/*
 * stats.h — statistics helpers for the harness (pure functions, no state).
 *
 * Conventions: inputs are never modified (functions that sort copy first);
 * n == 0 yields NAN. Percentiles use linear interpolation between closest
 * ranks: rank = p/100 * (n - 1) over the sorted values (numpy's default).
 */
#ifndef TB_HARNESS_STATS_H
#define TB_HARNESS_STATS_H

#include <stddef.h>

typedef struct tb_stats_summary {
    size_t n;
    double min, max, mean, median, stddev;   /* stddev: sample (n - 1), 0 if n < 2 */
} tb_stats_summary_t;

double tb_stats_mean(const double *x, size_t n);
double tb_stats_stddev(const double *x, size_t n);
double tb_stats_percentile(const double *x, size_t n, double p);   /* p in [0, 100] */
double tb_stats_median(const double *x, size_t n);
void   tb_stats_summarize(const double *x, size_t n, tb_stats_summary_t *out);
/* Stability of a series of rates: 100 * worst / best (100 = perfectly flat). */
double tb_stats_stability_pct(const double *rates, size_t n);
/* Stability at matched depth: the windows are grouped by floor(depth[i] /
 * bin) (bin > 0); in each group of two or more, 100 * worst / best; the
 * lowest of these. NAN when no group holds two windows. */
double tb_stats_stability_matched_pct(const double *rates, const double *depth, size_t n, double bin);
/* Stall share of a series of latencies: 100 x the sum, over values above
 * factor x the median, of their excess over the median, divided by the sum
 * of all values (0 for a flat series). NAN if n == 0. */
double tb_stats_stall_pct(const double *lat, size_t n, double factor);
#define TB_STALL_FACTOR 1.5   /* a token slower than 1.5 x the median is a stall (bench, harness) */
/* Pick a summary statistic by name: "median", "mean", "min", "max". NAN if unknown. */
double tb_stats_pick(const tb_stats_summary_t *s, const char *stat);

#endif
