/*
 * analysis.h — the analysis rules, written once: what `bench`, `show`,
 * the report and `compare` derive from the per-repetition rows of the
 * results store. Nothing derived here is stored.
 *
 * Rules:
 *   - a repetition's roofline is the higher of its two bandwidth probes
 *     (the runner stores it as roofline_gbps and roofline_pct);
 *   - settled: its two bandwidth probes differ by at most TB_AN_PROBE_AGREE
 *     of the higher (the machine did not change state during it);
 *   - full speed: both its clock probes reach TB_AN_CPU_FULL of the test's
 *     best clock probe (no core was slowed by the host or the thermals);
 *   - vector-shared: both its vector probes fall under TB_AN_CPU_FULL of
 *     the test's best (a diagnostic only: it takes no repetition out);
 *   - figures are medians over repetitions, printed with their range;
 *   - two models interleaved in one group are compared repetition by
 *     repetition (paired ratios, their median and quartiles, how many
 *     pairs the second was faster in, and the two-sided sign test of
 *     infer.h), and, when they took turns token by token, token by token;
 *   - intervals and verdicts between two sets of runs are infer.h's.
 */
#ifndef TB_HARNESS_ANALYSIS_H
#define TB_HARNESS_ANALYSIS_H

#include "metrics.h"
#include "stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sqlite3 sqlite3;

#define TB_AN_PROBE_AGREE 0.15
#define TB_AN_CPU_FULL 0.85

bool tb_an_settled(double bw_before, double bw_after);

/* Full speed: both clock probes of a repetition at least TB_AN_CPU_FULL
 * of the best probe (NAN probes are not full speed). */
bool tb_an_full_speed(double ghz_before, double ghz_after, double best);

/* Vector-shared repetitions: both vector probes under TB_AN_CPU_FULL of
 * the best; *lo (may be NULL) the higher probe of the lowest such one.
 * before/after (n) per repetition; NAN entries are not counted. */
size_t tb_an_vec_shared(const double *before, const double *after, size_t n, double best, double *lo);


/* Pairs b[i] / a[i] of two series over the same repetitions or tokens. */
typedef struct tb_an_paired {
    size_t n;                           /* pairs; 0: none */
    double median, q25, q75, min, max;  /* of b[i] / a[i] */
    size_t faster;                      /* pairs with b[i] > a[i] */
    double sign_p;
} tb_an_paired_t;

/* Pairs with a NAN on either side are skipped. TB_OK or TB_ERR_NOMEM. */
int tb_an_paired(const double *a, const double *b, size_t n, tb_an_paired_t *out);

/* One test's per-repetition values, as stored. */
typedef struct tb_an_test {
    int64_t test_id;
    char label[96];
    char kind[16];
    char status[16];
    int n_rep;                          /* repetitions (max index + 1)             */
    double *v;                          /* (TB_M_COUNT, n_rep) NAN where absent     */
    int64_t *tok_ns;                    /* (n_rep, n_tok) decode tokens' own steps, -1 absent */
    int n_tok;                          /* decode tokens per repetition (max)      */
} tb_an_test_t;

/* Load test test_id from db. Free with tb_an_test_free. */
int tb_an_test_load(sqlite3 *db, int64_t test_id, tb_an_test_t *t);
void tb_an_test_free(tb_an_test_t *t);
static inline double *tb_an_series(const tb_an_test_t *t, tb_metric_id_t m) { return t->v + (size_t)m * (size_t)t->n_rep; }

/* The repetition rules over a loaded test. */
typedef struct tb_an_reps {
    size_t n;                           /* repetitions with the headline metric */
    tb_stats_summary_t head;            /* the headline metric over them        */
    tb_stats_summary_t pct;             /* roofline_pct                         */
    double roof_median;                 /* median roofline_gbps                 */
    size_t settled;                     /* settled repetitions                  */
    double pct_settled;                 /* their median roofline_pct, NAN none  */
    size_t full;                        /* full-speed repetitions               */
    double pct_full;                    /* their median roofline_pct, NAN none  */
    double cpu_min, cpu_max, vec_min, vec_max;   /* over every probe            */
    size_t vec_shared;
    size_t steal_over;                  /* repetitions with steal_pct >= 1 %    */
    double steal_max;
    /* decode: every timed token's own latency */
    size_t tok_n;
    double tok_p50, tok_p90, tok_p99, tok_max, stall_pct, p50_roofline_pct;
} tb_an_reps_t;

int tb_an_reps(const tb_an_test_t *t, tb_metric_id_t headline, tb_an_reps_t *out);

/* Every decode token's latency in ms, (n_rep, n_tok) in order, into *lat
 * (allocated); *n the count. Tokens without a step time are skipped. */
int tb_an_token_ms(const tb_an_test_t *t, double **lat, size_t *n);

#endif
