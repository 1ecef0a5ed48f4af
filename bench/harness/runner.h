/*
 * runner.h — run a parsed scenario plan against the engine and record
 * everything into the results store.
 *
 * Order of a run: resolve the model (synthesizing into the cache if asked),
 * load it, record host/build/model/scenario facts, probe the bandwidth
 * roofline, start the sensor sampler, insert the run ('running'), then for
 * every test case: warm-ups, measured repetitions (one transaction each:
 * measurements, token events, windows, sensor samples), summary rows
 * (repetition -1) and the thermal verdict; finally the second bandwidth
 * probe and the run's end status.
 *
 * A raised stop flag (SIGINT/SIGTERM) abandons the repetition in flight;
 * what was committed stays and the run is marked 'interrupted'.
 */
#ifndef TB_HARNESS_RUNNER_H
#define TB_HARNESS_RUNNER_H

#include "scenario.h"
#include "store.h"

#include <signal.h>
#include <stdio.h>

typedef struct tb_run_opts {
    int quiet;
    int n_tags;
    const char *const *tag_keys;
    const char *const *tag_values;
    volatile sig_atomic_t *stop;   /* required */
    FILE *summary;                 /* markdown summary at the end (NULL: none) */
    int variant;                   /* which [model] type entry (tb_plan_n_variants) */
} tb_run_opts_t;

typedef struct tb_run_result {
    int64_t run_id;                /* -1 if the run never started */
    char uuid[37];
    int n_cases, n_failed;
    int interrupted;
    char status[16];               /* "complete", "failed", "interrupted" */
} tb_run_result_t;

/* Resolve the plan's model file: [model] path, or the cached synthesized
 * model (created atomically on first use). *path is allocated. */
int tb_runner_model_path(const tb_plan_t *plan, int variant, char **path, int quiet);

/* Run the plan. Returns TB_OK when the run was recorded (see res->status
 * for failures of individual tests and interruption), or a negative status
 * when it could not start (model, ISA, database). */
int tb_runner_run(const tb_plan_t *plan, tb_store_t *store, const tb_run_opts_t *opts,
                  tb_run_result_t *res);

#endif
