/*
 * workload_claim.h — the scenario kind [claim]: a claim check (claim.h)
 * for every condition a section lists — device x head x ctx x claimed
 * speed — recorded into the claims table under the run, with, for `this`
 * and measure = true, the decode speed the section measured at each ctx
 * (one decode test per ctx, run by the runner like a [decode] depth).
 */
#ifndef TB_HARNESS_WORKLOAD_CLAIM_H
#define TB_HARNESS_WORKLOAD_CLAIM_H

#include "scenario.h"
#include "store.h"
#include "ternbench.h"

#define TB_CLAIM_MAX_CTX 16       /* ctx values of one section              */
#define TB_CLAIM_MAX_DEVICES 32
#define TB_CLAIM_MAX_HEADS 4
#define TB_CLAIM_MAX_CLAIMED 8

/* Parse-time check of a [claim] section of plan p: device ids known (the
 * profiles folder of `ternbench devices`), preset and layout known, heads
 * and claimed speeds well formed, measure only with device = this and no
 * preset, a calibration file readable. TB_OK, or TB_ERR_FORMAT with
 * "FILE:LINE: [claim...] key: what" in tb_last_error(). */
int tb_claim_section_check(const tb_plan_t *p, const tb_section_t *s);

/* What the run measured for a section: per ctx index, the headline decode
 * speed (NAN: not measured or failed) and its test row (< 0: none). */
typedef struct tb_claim_run {
    const tb_model_t *model;      /* the run's model (geometry without preset) */
    const char *model_path;
    tb_type_t kv_type;
    const char *head;             /* the run's [engine] head: what was measured */
    const char *plan_dir;         /* relative calibration paths               */
    const double *tok_s;          /* (n_measured)                             */
    const int64_t *test_id;       /* (n_measured)                             */
    int n_measured;
} tb_claim_run_t;

/* Evaluate every condition of section s and insert them under run_id (one
 * transaction). note gets a one-line summary for the progress display.
 * TB_OK, or a negative status with the reason in tb_last_error(). */
int tb_claim_record(tb_store_t *st, int64_t run_id, const tb_section_t *s, const tb_claim_run_t *r,
                    char *note, size_t cap);

#endif
