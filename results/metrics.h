/*
 * metrics.h — the results contract: every metric a repetition records,
 * declared once (name, unit, better direction, which test kinds record it,
 * description), like the scenario keys.
 *
 * The workload and the runner record metrics only by their id, so a name
 * or unit cannot drift between writer and readers; the report, `bench`,
 * `compare` and the exports look names up here for units and for which
 * direction is better. `ternbench metrics` prints the table (the manual's
 * metric reference in scenarios/README.md is generated from it, and a test
 * checks that it matches).
 *
 * Summaries over repetitions (median, spread, paired ratios) are never
 * stored: they are derived when read (analysis.h), from the per-repetition
 * rows (measurements.repetition >= 0).
 */
#ifndef TB_HARNESS_METRICS_H
#define TB_HARNESS_METRICS_H

#include <stdio.h>

typedef enum tb_metric_id {
    /* throughput and time */
    TB_M_PREFILL_TOK_PER_S, TB_M_PREFILL_MS,
    TB_M_DECODE_TOK_PER_S, TB_M_DECODE_MS,
    TB_M_TTFT_MS, TB_M_TTFT_PREFILL_MS, TB_M_TTFT_FIRST_DECODE_MS, TB_M_E2E_MS,
    TB_M_GENERATED_TOKENS,
    /* per-token latency */
    TB_M_ITL_P50_MS, TB_M_ITL_P90_MS, TB_M_ITL_P99_MS, TB_M_ITL_MAX_MS, TB_M_STALL_PCT,
    /* text */
    TB_M_CHARS_PER_TOKEN, TB_M_CHARS_PER_S,
    /* sustained */
    TB_M_WINDOW_TOK_PER_S, TB_M_FIRST_WINDOW_TOK_PER_S, TB_M_LAST_WINDOW_TOK_PER_S,
    TB_M_STEADY_WINDOW_TOK_PER_S, TB_M_STABILITY_PCT, TB_M_CONTEXT_FULL_EVENTS,
    TB_M_REFILL_MS,
    /* the roofline, bracketed per repetition */
    TB_M_BYTES_PER_TOKEN, TB_M_ACHIEVED_GBPS,
    TB_M_BW_BEFORE_GBPS, TB_M_BW_AFTER_GBPS, TB_M_ROOFLINE_GBPS, TB_M_ROOFLINE_PCT,
    TB_M_CPU_GHZ_BEFORE, TB_M_CPU_GHZ_AFTER, TB_M_VEC_GOPS_BEFORE, TB_M_VEC_GOPS_AFTER,
    TB_M_STEAL_PCT,
    /* footprint and energy */
    TB_M_PEAK_RSS_BYTES, TB_M_SESSION_BYTES, TB_M_ENERGY_J_PER_TOK,
    /* quality against a reference ([quality], bench/quality/quality.h) */
    TB_M_PPL, TB_M_PPL_UNC, TB_M_PPL_BASE, TB_M_PPL_RATIO, TB_M_KLD_MEAN, TB_M_KLD_UNC,
    TB_M_KLD_MEDIAN, TB_M_KLD_P99, TB_M_KLD_MAX, TB_M_SAME_TOP_PCT, TB_M_DP_RMS,
    TB_M_HEAD_ROWS_PER_TOKEN, TB_M_SCORED_TOKENS,
    TB_M_COUNT
} tb_metric_id_t;

/* Which direction is better, for comparisons and verdicts. */
typedef enum tb_better { TB_BETTER_NONE = 0, TB_BETTER_HIGHER = 1, TB_BETTER_LOWER = -1 } tb_better_t;

/* Test kinds a metric is recorded for (bit per tb_sec_kind_t test kind). */
#define TB_MK_PREFILL   (1u << 0)
#define TB_MK_DECODE    (1u << 1)
#define TB_MK_TTFT      (1u << 2)
#define TB_MK_GENERATE  (1u << 3)
#define TB_MK_SUSTAINED (1u << 4)
#define TB_MK_QUALITY   (1u << 5)
#define TB_MK_ALL       0x1fu   /* every speed kind (quality records only its own metrics) */

typedef struct tb_metric_def {
    const char *name;       /* as stored in measurements.metric */
    const char *unit;       /* as stored in measurements.unit   */
    tb_better_t better;
    unsigned kinds;         /* TB_MK_* */
    const char *help;       /* one line for the manual           */
} tb_metric_def_t;

extern const tb_metric_def_t tb_metrics[TB_M_COUNT];

/* The definition of a stored name, or NULL when the name is not a metric
 * of this build (an older or foreign database may hold such rows). */
const tb_metric_def_t *tb_metric_find(const char *name);

/* The manual's table: one row per metric (name, unit, better, kinds,
 * description), in Markdown. */
void tb_metrics_markdown(FILE *out);

#endif
