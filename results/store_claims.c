/*
 * store_claims.c — write claim checks (see store_claims.h).
 */
#include "store_claims.h"
#include "ternbench.h"

#include <math.h>
#include <sqlite3.h>

static const char *const ins_sql =
    "INSERT INTO claims (run_id, section, idx, model, model_source, model_path, weights, device,"
    " device_name, device_class, backend, runtime, ctx, head, head_approx, kv_type, claimed_tok_s,"
    " prompt_tokens, claimed_ttft_ms, bytes_per_token, weight_bytes, head_bytes, kv_bytes,"
    " bandwidth_gbps, bandwidth_kind, bandwidth_source, roofline_tok_s, projected_lo_tok_s,"
    " projected_hi_tok_s, basis_rows, basis, basis_refs, best_efficiency, verdict, verdict_detail,"
    " implied_gbps, implied_pct_peak, ttft_min_ms, ttft_verdict, measured_tok_s, measured_test_id,"
    " calibration_path, calibration_rows, calibration_hash, assumptions, bits_per_weight)"
    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,"
    "?24,?25,?26,?27,?28,?29,?30,?31,?32,?33,?34,?35,?36,?37,?38,?39,?40,?41,?42,?43,?44,?45,?46)";

static int err(tb_store_t *s, int rc, const char *what) {
    sqlite3 *db = tb_store_db(s);
    return tb_err(TB_ERR_IO, "%s: %s: %s (sqlite %d)", tb_store_path(s), what,
                  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), rc);
}

/* Bind helpers; the first failure is kept in *rc. */
static void bt(sqlite3_stmt *st, int i, const char *v, int *rc) {
    if (*rc == SQLITE_OK) *rc = v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}
static void bi(sqlite3_stmt *st, int i, int64_t v, int *rc) {   /* < 0: NULL */
    if (*rc == SQLITE_OK) *rc = v < 0 ? sqlite3_bind_null(st, i) : sqlite3_bind_int64(st, i, v);
}
static void br(sqlite3_stmt *st, int i, double v, int *rc) {    /* NAN: NULL */
    if (*rc == SQLITE_OK) *rc = isnan(v) ? sqlite3_bind_null(st, i) : sqlite3_bind_double(st, i, v);
}

static int bind_rec(sqlite3_stmt *st, int64_t run_id, const tb_claim_rec_t *r) {
    int rc = SQLITE_OK;
    bi(st, 1, run_id, &rc); bt(st, 2, r->section, &rc); bi(st, 3, r->idx, &rc);
    bt(st, 4, r->model, &rc); bt(st, 5, r->model_source, &rc); bt(st, 6, r->model_path, &rc);
    bt(st, 7, r->weights, &rc); bt(st, 8, r->device, &rc); bt(st, 9, r->device_name, &rc);
    bt(st, 10, r->device_class, &rc); bt(st, 11, r->backend, &rc); bt(st, 12, r->runtime, &rc);
    bi(st, 13, r->ctx, &rc); bt(st, 14, r->head, &rc); bi(st, 15, r->head_approx ? 1 : 0, &rc);
    bt(st, 16, r->kv_type, &rc); br(st, 17, r->claimed_tok_s, &rc);
    bi(st, 18, r->prompt_tokens > 0 ? r->prompt_tokens : -1, &rc); br(st, 19, r->claimed_ttft_ms, &rc);
    bi(st, 20, r->bytes_per_token, &rc); bi(st, 21, r->weight_bytes, &rc);
    bi(st, 22, r->head_bytes, &rc); bi(st, 23, r->kv_bytes, &rc);
    br(st, 24, r->bandwidth_gbps, &rc); bt(st, 25, r->bandwidth_kind, &rc);
    bt(st, 26, r->bandwidth_source, &rc); br(st, 27, r->roofline_tok_s, &rc);
    br(st, 28, r->projected_lo_tok_s, &rc); br(st, 29, r->projected_hi_tok_s, &rc);
    bi(st, 30, r->basis_rows, &rc); bt(st, 31, r->basis, &rc); bt(st, 32, r->basis_refs, &rc);
    br(st, 33, r->best_efficiency, &rc); bt(st, 34, r->verdict, &rc); bt(st, 35, r->verdict_detail, &rc);
    br(st, 36, r->implied_gbps, &rc); br(st, 37, r->implied_pct_peak, &rc);
    br(st, 38, r->ttft_min_ms, &rc); bt(st, 39, r->ttft_verdict, &rc);
    br(st, 40, r->measured_tok_s, &rc); bi(st, 41, r->measured_test_id, &rc);
    bt(st, 42, r->calibration_path, &rc); bi(st, 43, r->calibration_rows, &rc);
    bt(st, 44, r->calibration_hash, &rc); bt(st, 45, r->assumptions, &rc);
    br(st, 46, r->bits_per_weight, &rc);
    return rc;
}

int tb_store_add_claims(tb_store_t *s, int64_t run_id, const tb_claim_rec_t *recs, int n) {
    sqlite3 *db = tb_store_db(s);
    sqlite3_stmt *st = NULL;
    int rc = tb_store_tx_begin(s);
    if (rc) return rc;
    int r = sqlite3_prepare_v2(db, ins_sql, -1, &st, NULL);
    if (r != SQLITE_OK) { rc = err(s, r, "prepare claim insert"); goto fail; }
    for (int i = 0; i < n; i++) {
        if ((r = bind_rec(st, run_id, &recs[i])) != SQLITE_OK) { rc = err(s, r, "bind claim"); goto fail; }
        if ((r = sqlite3_step(st)) != SQLITE_DONE) { rc = err(s, r, "insert claim"); goto fail; }
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    sqlite3_finalize(st);
    return tb_store_tx_commit(s);
fail:
    sqlite3_finalize(st);
    tb_store_tx_rollback(s);
    return rc;
}
