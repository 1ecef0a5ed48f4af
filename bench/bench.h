/*
 * bench.h — what `ternbench bench` measures (cmd_bench.c) and prints
 * (bench_print.c): its options, a test's results, a file under test and
 * its paired comparisons. Private to those two files.
 */
#ifndef TB_BENCH_H
#define TB_BENCH_H

#include "analysis.h"
#include "commands.h"
#include "ternbench.h"
#include "ternbench_profile.h"

#include <stdbool.h>
#include <stddef.h>

#define BENCH_MAX_MODELS 4
#define PROBE_AGREE TB_AN_PROBE_AGREE
#define STEAL_NOTE 1.0      /* % of CPU time stolen in a rep that the text output names */
#define CPU_FULL TB_AN_CPU_FULL

typedef struct {
    const char *models[BENCH_MAX_MODELS];
    int n_models;
    int threads, ctx, n_prompt, n_gen, reps;
    bool json;
    bool mmap;          /* --mmap: TB_WEIGHTS_MMAP */
    bool profile;       /* --profile: per-phase split of one more decode run */
    bool tok_turns;     /* --interleave token: decode files take turns token by token */
    bool quiet;         /* -q: no progress display */
    const char *heads[BENCH_MAX_MODELS];   /* --head exact|approx:C[:T] (NULL: exact): once for  */
    int n_heads;                           /* every file, or once per -m, the i-th for the i-th */
    const char *db;     /* --db FILE (default tb_store_default_path()); NULL: --no-db */
    cmd_tags_t tags;    /* --tag KEY=VALUE, then the engine's provenance tags */
} bench_opts_t;

/* The approximate head file k runs ("approx:..."), NULL for the exact head. */
static inline const char *bench_head(const bench_opts_t *o, int k) {
    return o->n_heads == 1 ? o->heads[0] : k < o->n_heads ? o->heads[k] : NULL;
}

typedef struct {
    char test[48];
    double tps_median, tps_stddev;
    double bytes_per_token, gbps;
    double bw_median;                   /* median of the reps' rooflines (GB/s)   */
    double roofline_pct;                /* median over reps of achieved / roofline */
    double roofline_pct_min, roofline_pct_max;
    double *tps;                        /* (reps) tok/s of each rep, in rep order  */
    double *probe;                      /* (reps, 2) the probes before and after each rep (GB/s) */
    int settled;                        /* reps whose probes agree (PROBE_AGREE)   */
    double roofline_pct_settled;        /* median over those reps; NAN when none   */
    double *cpu;                        /* (reps, 2) the slowest thread's clock (GHz) in the CPU
                                           probes before and after each rep        */
    int cpu_full;                       /* reps at full speed (CPU_FULL)           */
    double roofline_pct_cpu_full;       /* median over those reps; NAN when none   */
    double cpu_min, cpu_max;            /* over every CPU probe of the test        */
    double *vec;                        /* (reps, 2) the slowest thread's vector ops per ns,
                                           same probes                             */
    double vec_min, vec_max;
    int vec_shared;                     /* reps with both vector probes under CPU_FULL
                                           of the best                             */
    double *steal;                      /* (reps) % of CPU time stolen during the
                                           rep's eval; NAN when unreadable          */
    /* decode only (tok_n > 0): the latency of every timed token of every rep */
    size_t tok_n;                       /* tokens timed: reps x N                  */
    double tok_ms_p50, tok_ms_p90, tok_ms_p99, tok_ms_max;
    double stall_pct;                   /* tb_stats_stall_pct of the latencies      */
    double p50_roofline_pct;            /* roofline % of a token at the median latency */
    double *tok_lat;                    /* (reps, N) every timed token's latency (ms) */
} bench_result_t;

/* One file under test and its results. */
typedef struct {
    const char *path;
    int64_t run_id;                     /* its run in the database */
    char uuid[37];
    tb_model_t *m;
    tb_session_t *s;
    tb_model_info_t info;
    tb_bytes_per_token_t bpt;
    bench_result_t res[2];              /* the tests in the order run (pp, tg) */
    tb_profile_t prof;
    tb_split_profile_t sprof;           /* --profile at 2 threads: the split passes */
    double sprof_ms;                    /* that run's ms per token                  */
} bench_var_t;

typedef tb_an_paired_t bench_paired_t;

/* Variant b against variant a: tok/s over the same reps, and, when the
 * decode files took turns token by token, speed over the same token pairs
 * (a's latency over b's). */
typedef struct {
    bench_paired_t rep, tok;
    double *tok_rep_median;             /* token pairs: (reps) each rep's median ratio, else NULL */
} bench_ratio_t;

/* One JSON object per line: each test of each file (its reps' samples
 * included), then each comparison of a file with the first; then the
 * --profile splits. bw_before / bw_after: the run's first and last
 * bandwidth probes. */
void bench_print_json(const bench_var_t *v, int nv, int n_res, const bench_ratio_t *cmp, const bench_opts_t *o,
                      double bw_before, double bw_after);

/* The llama-bench-style table with its notes (settled, full-speed,
 * vector-shared, stolen-time and latency lines), the comparisons, then
 * the --profile splits. */
void bench_print_table(const bench_var_t *v, int nv, int n_res, const bench_ratio_t *cmp, const bench_opts_t *o,
                       double bw_before, double bw_after);

#endif
