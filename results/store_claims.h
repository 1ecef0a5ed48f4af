/*
 * store_claims.h — claim checks in the results database (schema version 5,
 * results/migrations/005_claims.sql): one row per evaluated condition,
 * its inputs and everything computed, under the run it belongs to.
 */
#ifndef TB_STORE_CLAIMS_H
#define TB_STORE_CLAIMS_H

#include "store.h"

/* One condition of a claim check. Strings may be NULL where the column is
 * nullable (model_path, backend, runtime, verdict, verdict_detail,
 * ttft_verdict); a REAL input or output that is absent is NAN, an absent
 * INTEGER < 0 (stored as NULL). */
typedef struct tb_claim_rec {
    const char *section;            /* "claim.maple"; "claim" for the command */
    int idx;                        /* condition index within the section     */
    /* inputs */
    const char *model, *model_source, *model_path, *weights;
    double bits_per_weight;
    const char *device, *device_name, *device_class;
    const char *backend, *runtime;
    int ctx;
    const char *head;               /* "exact", "approx:C:P"                  */
    int head_approx;
    const char *kv_type;
    double claimed_tok_s;
    int prompt_tokens;
    double claimed_ttft_ms;
    /* outputs */
    int64_t bytes_per_token, weight_bytes, head_bytes, kv_bytes;
    double bandwidth_gbps;
    const char *bandwidth_kind;     /* "nominal", "estimate", "measured"      */
    const char *bandwidth_source;
    double roofline_tok_s, projected_lo_tok_s, projected_hi_tok_s;
    int basis_rows;
    const char *basis, *basis_refs; /* basis_refs: JSON list of "FILE:LINE"   */
    double best_efficiency;
    const char *verdict, *verdict_detail;
    double implied_gbps, implied_pct_peak;
    double ttft_min_ms;
    const char *ttft_verdict;
    double measured_tok_s;
    int64_t measured_test_id;
    const char *calibration_path;
    int calibration_rows;
    const char *calibration_hash;
    const char *assumptions;        /* JSON list of strings                   */
} tb_claim_rec_t;

/* Insert the n conditions of one claim check under run_id, in one
 * transaction of their own (all or none). TB_OK or TB_ERR_IO naming the
 * database and SQLite's reason. */
int tb_store_add_claims(tb_store_t *s, int64_t run_id, const tb_claim_rec_t *recs, int n);

#endif
