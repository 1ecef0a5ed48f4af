/*
 * runner.h — run parsed scenario plans against the engine and record
 * everything into the results store.
 *
 * Order of a run: resolve the model (synthesizing into the cache if asked),
 * load it, record host/build/model/scenario facts and the bandwidth probed
 * at the start, start the sensor sampler, insert the run ('running'), then
 * for every test case: warm-ups, then measured repetitions, each bracketed
 * by bandwidth, clock and vector probes just before and just after it and
 * written in one transaction (measurements, token events, windows, sensor
 * samples); the thermal verdict; finally the bandwidth probed at the end
 * and the run's end status. Summaries over repetitions are not stored:
 * readers derive them (analysis.h).
 *
 * A group runs several plans with the same tests together, one run each,
 * their repetitions taking turns (rep by rep or token by token), so every
 * member sees the same machine states; its runs are tagged group=UUID,
 * group.index=K and interleave=rep|token.
 *
 * A member may be llama.cpp instead of ternbench's engine (opts->engines):
 * the same probes bracket each of its repetitions, each repetition is one
 * llama-bench run (peer_llamacpp.h), its run row says engine = llama.cpp
 * with llama-bench's version and backend, and what llama-bench does not
 * report (token events, inter-token latency, memory, energy) is recorded
 * as absent.
 *
 * A raised stop flag (SIGINT/SIGTERM) abandons the repetition in flight;
 * what was committed stays and the run is marked 'interrupted'.
 */
#ifndef TB_HARNESS_RUNNER_H
#define TB_HARNESS_RUNNER_H

#include "scenario.h"
#include "store.h"
#include "ternbench.h"

#include <signal.h>
#include <stdio.h>

#define TB_GROUP_MAX 8          /* plans in one group */
enum { TB_INTERLEAVE_REP = 0, TB_INTERLEAVE_TOKEN = 1 };

typedef struct tb_run_opts {
    int quiet;
    int n_tags;
    const char *const *tag_keys;
    const char *const *tag_values;
    volatile sig_atomic_t *stop;   /* required */
    FILE *summary;                 /* markdown summary at the end (NULL: none) */
    int variant;                   /* which [model] type entry (tb_plan_n_variants) */
    int interleave;                /* a group's decode: TB_INTERLEAVE_REP or _TOKEN */
    const int *engines;            /* a group's: member k's engine (TB_ENGINE_*), NULL: all
                                    * ternbench; a llama.cpp member runs its plan's [engine]
                                    * binary on the same file (peer_llamacpp.h) */
} tb_run_opts_t;

typedef struct tb_run_result {
    int64_t run_id;                /* -1 if the run never started */
    char uuid[37];
    int n_cases, n_failed;
    int interrupted;
    char status[16];               /* "complete", "failed", "interrupted" */
    tb_model_info_t info;          /* the model as loaded for the run */
} tb_run_result_t;

/* Resolve the plan's model file for its [model] type entry `variant`:
 * [model] path itself (type default) or quantized into the cache, or the
 * cached synthesized model (either created atomically on first use).
 * *path is allocated. */
int tb_runner_model_path(const tb_plan_t *plan, int variant, char **path, int quiet);
/* The same for weight type `type` ("default", "f32", ...) whatever the
 * plan's type list: a [quality] reference = TYPE. */
int tb_runner_synth_path(const tb_plan_t *plan, const char *type, char **path, int quiet);

/* Run the plan. Returns TB_OK when the run was recorded (see res->status
 * for failures of individual tests and interruption), or a negative status
 * when it could not start (model, ISA, database). */
int tb_runner_run(const tb_plan_t *plan, tb_store_t *store, const tb_run_opts_t *opts,
                  tb_run_result_t *res);
/* Run n plans (1..TB_GROUP_MAX, the same tests, one model each: plan k's
 * [model] type entry variants[k], or 0 when variants is NULL) as a group;
 * res has n entries. The first plan's [engine] and [protocol] govern;
 * opts->variant is not used. */
int tb_runner_run_group(const tb_plan_t *const *plans, const int *variants, int n, tb_store_t *store,
                        const tb_run_opts_t *opts, tb_run_result_t *res);

#endif
