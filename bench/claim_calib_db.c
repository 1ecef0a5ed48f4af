/*
 * claim_calib_db.c — calibration rows from the results database: the
 * claims ternbench measured itself (`claim --measure`, a [claim] section
 * with measure = true), already resolved with the bytes per token and the
 * bandwidth recorded beside them (see cl_calib_read_db in claim.h).
 */
#include "claim.h"
#include "store.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CP(dst, src) snprintf(dst, sizeof dst, "%s", (src) ? (const char *)(src) : "")

int cl_calib_read_db(const char *path, cl_calib_t *c, int *n_skipped) {
    *n_skipped = 0;
    tb_store_t *s;
    tb_store_read_info_t info;
    if (tb_store_open_read(path, &s, &info) != TB_OK) {
        fprintf(stderr, "ternbench: calibration %s: %s\n", path, tb_last_error());
        return 2;
    }
    sqlite3 *db = tb_store_db(s);
    static const char sql[] =
        "SELECT c.id, c.device, c.device_class, coalesce(c.backend, ''), coalesce(c.runtime, ''), c.model,"
        " c.weights, c.ctx, c.head, c.measured_tok_s, c.bandwidth_gbps, c.bytes_per_token, c.bits_per_weight,"
        " r.uuid, substr(r.started_utc, 1, 10) FROM claims c JOIN runs r ON r.id = c.run_id"
        " WHERE c.measured_tok_s IS NOT NULL AND c.bandwidth_gbps > 0 ORDER BY c.id";
    sqlite3_stmt *st = NULL;
    int rc = 0, r;
    if ((r = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK) {
        fprintf(stderr, "ternbench: calibration %s: %s\n", path, sqlite3_errmsg(db));
        rc = 2;
    }
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
        double tok = sqlite3_column_double(st, 9), bw = sqlite3_column_double(st, 10);
        double bpt = sqlite3_column_double(st, 11), eff = tok * bpt / (bw * 1e9);
        if (!(eff > 0) || eff > 1) { (*n_skipped)++; continue; }
        if (c->n == c->cap) {
            int cap = c->cap ? 2 * c->cap : 64;
            cl_row_t *p = realloc(c->rows, (size_t)cap * sizeof *p);
            if (!p) { rc = 1; break; }
            c->rows = p;
            c->cap = cap;
        }
        cl_row_t *x = &c->rows[c->n++];
        memset(x, 0, sizeof *x);
        CP(x->device, sqlite3_column_text(st, 1));
        CP(x->cls, sqlite3_column_text(st, 2));
        CP(x->backend, sqlite3_column_text(st, 3));
        CP(x->runtime, sqlite3_column_text(st, 4));
        CP(x->model, sqlite3_column_text(st, 5));
        CP(x->type, sqlite3_column_text(st, 6));
        x->ctx = sqlite3_column_int(st, 7);
        CP(x->head, sqlite3_column_text(st, 8));
        snprintf(x->source, sizeof x->source, "ternbench run %s (%s)", (const char *)sqlite3_column_text(st, 13), path);
        CP(x->read, sqlite3_column_text(st, 14));
        snprintf(x->note, sizeof x->note, "measured by ternbench: claims row %lld", (long long)sqlite3_column_int64(st, 0));
        CP(x->file, path);
        x->line = (int)sqlite3_column_int64(st, 0);
        x->tok_s = tok;
        x->bw_gbps = bw;
        x->bytes_per_token = bpt;
        x->bpw = sqlite3_column_double(st, 12);
        x->eff = eff;
        x->resolved = true;
    }
    if (!rc && r != SQLITE_DONE) {
        fprintf(stderr, "ternbench: calibration %s: %s\n", path, sqlite3_errmsg(db));
        rc = 2;
    }
    sqlite3_finalize(st);
    tb_store_close(s);
    return rc;
}
