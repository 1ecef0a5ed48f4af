/*
 * peers_sql.c — one-statement SQLite helper shared by import, export and
 * merge (see peers.h).
 */
#include "peers.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <time.h>

int tb_peer_sql(sqlite3 *db, int64_t *out, const char *sql, const char *types, ...) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return rc;
    va_list ap;
    va_start(ap, types);
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        if (types[i] == 't') {
            const char *v = va_arg(ap, const char *);
            rc = v ? sqlite3_bind_text(st, i + 1, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i + 1);
        } else if (types[i] == 'i' || types[i] == 'I') {
            int64_t v = va_arg(ap, int64_t);
            rc = types[i] == 'I' && v < 0 ? sqlite3_bind_null(st, i + 1) : sqlite3_bind_int64(st, i + 1, v);
        } else {
            rc = sqlite3_bind_double(st, i + 1, va_arg(ap, double));
        }
    }
    va_end(ap);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (out) *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
        rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    int rc2 = sqlite3_finalize(st);
    return rc != SQLITE_OK ? rc : rc2;
}

void tb_peer_utc_now(char buf[32]) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
