/*
 * cmd_merge.c — ternbench merge A.db B.db ... --into ALL.db
 *
 * Copies every run of each source database into ALL.db (created and migrated
 * when needed) with everything that hangs off it: its host, build, model,
 * scenario and import rows (matched by their natural keys: fingerprint,
 * content hash, hash), tags, tests and their typed parameters, measurements, token events, windows,
 * sensor samples and absences, claims, every id remapped. Runs are keyed by uuid:
 *   - a uuid not in ALL.db is added;
 *   - a uuid already there with the same content (the run's columns, its
 *     dimension rows' keys, tags, tests and measurements, and the number of
 *     its per-token / window / sensor rows) is skipped, so merging again, or
 *     in another order, gives the same set of runs;
 *   - a uuid already there with other content is an error naming both files
 *     (exit 2): nothing is overwritten.
 * One transaction per source: a source that fails adds nothing; the ones
 * merged before it stay. A source is read (ATTACHed) and never written; one
 * of an older schema version is read through the columns it has.
 */
#include "commands.h"
#include "peers.h"
#include "scenario.h"
#include "store.h"
#include "ternbench.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Dimension tables and their natural key. */
static const char *const dims[][2] = {
    {"hosts", "fingerprint"}, {"builds", "fingerprint"}, {"models", "content_hash"},
    {"scenarios", "hash"}, {"imports", "content_hash"},
};

typedef struct {
    sqlite3 *db;
    const char *into, *src;
    char sql[16384];
} merge_ctx;

static int fail_sql(const merge_ctx *m, const char *what) {
    fprintf(stderr, "ternbench merge: %s into %s: %s: %s\n", m->src, m->into, what, sqlite3_errmsg(m->db));
    return 1;
}

static int exec(merge_ctx *m, const char *sql, const char *what) {
    return sqlite3_exec(m->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : fail_sql(m, what);
}

/* Does schema.table exist? */
static int has_table(sqlite3 *db, const char *schema, const char *table) {
    char q[256];
    snprintf(q, sizeof q, "SELECT 1 FROM %s.sqlite_master WHERE type = 'table' AND name = ?", schema);
    int64_t one;
    return tb_peer_sql(db, &one, q, "t", table) == SQLITE_OK && one == 1;
}

/* Comma-separated columns of main.table that src.table also has, minus the
 * `skip` ones (a NULL-terminated list); prefix each with `pre` ("" or "s."). */
static int common_cols(sqlite3 *db, const char *table, const char *const *skip, const char *pre,
                       char *out, size_t cap) {
    char q[256];
    snprintf(q, sizeof q, "SELECT m.name FROM pragma_table_info(?1, 'main') m"
                          " JOIN pragma_table_info(?1, 'src') s ON s.name = m.name ORDER BY m.cid");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    size_t n = 0;
    out[0] = '\0';
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 0);
        int skipped = 0;
        for (int i = 0; skip && skip[i]; i++) skipped |= !strcmp(skip[i], c);
        if (skipped) continue;
        int k = snprintf(out + n, cap - n, "%s%s%s", n ? ", " : "", pre, c);
        if (k < 0 || (size_t)k >= cap - n) { sqlite3_finalize(st); return -1; }
        n += (size_t)k;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Digest of a run in schema sch ("main" or "src") over the columns both
 * databases have: what must be equal for two runs of one uuid to be the same. */
static int run_digest(merge_ctx *m, const char *sch, int64_t run_id, char out[65]) {
    static const char *const skip_run[] = {"id", "host_id", "build_id", "model_id", "scenario_id", "import_id", NULL};
    static const char *const skip_test[] = {"id", "run_id", NULL};
    char rc_cols[2048], tc_cols[1024];
    if (common_cols(m->db, "runs", skip_run, "r.", rc_cols, sizeof rc_cols) ||
        common_cols(m->db, "tests", skip_test, "t.", tc_cols, sizeof tc_cols))
        return -1;
    const int imp = has_table(m->db, "src", "imports");
    char q[3][4096];
    snprintf(q[0], sizeof q[0],
             "SELECT %s, (SELECT fingerprint FROM %s.hosts WHERE id = r.host_id),"
             " (SELECT fingerprint FROM %s.builds WHERE id = r.build_id),"
             " (SELECT content_hash FROM %s.models WHERE id = r.model_id),"
             " (SELECT hash FROM %s.scenarios WHERE id = r.scenario_id)%s%s%s"
             " FROM %s.runs r WHERE r.id = ?1", rc_cols, sch, sch, sch, sch,
             imp ? ", (SELECT content_hash FROM " : "", imp ? sch : "",
             imp ? ".imports WHERE id = r.import_id)" : "", sch);
    snprintf(q[1], sizeof q[1], "SELECT key, value FROM %s.run_tags WHERE run_id = ?1 ORDER BY key", sch);
    snprintf(q[2], sizeof q[2],
             "SELECT %s, (SELECT group_concat(repetition || '|' || metric || '|' || printf('%%.17g', value)"
             " || '|' || unit, ';') FROM (SELECT * FROM %s.measurements WHERE test_id = t.id"
             " ORDER BY repetition, metric)),"
             " (SELECT count(*) FROM %s.token_events WHERE test_id = t.id)"
             " FROM %s.tests t WHERE t.run_id = ?1 ORDER BY t.id", tc_cols, sch, sch, sch);
    tb_sha256_t h;
    tb_sha256_init(&h);
    for (int k = 0; k < 3; k++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(m->db, q[k], -1, &st, NULL) != SQLITE_OK) return -1;
        sqlite3_bind_int64(st, 1, run_id);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            for (int i = 0; i < sqlite3_column_count(st); i++) {
                const unsigned char *v = sqlite3_column_text(st, i);
                const char *s = v ? (const char *)v : "\x01NULL";
                tb_sha256_update(&h, s, strlen(s) + 1);
            }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) return -1;
        tb_sha256_update(&h, "\x02", 1);
    }
    uint8_t d[32];
    tb_sha256_final(&h, d);
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
    return 0;
}

/* Runs whose uuid is already in ALL.db: the same content, or a conflict. */
static int check_existing(merge_ctx *m, int *n_same) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db, "SELECT s.id, s.uuid, d.id FROM src.runs s JOIN main.runs d"
                           " ON d.uuid = s.uuid ORDER BY s.id", -1, &st, NULL) != SQLITE_OK)
        return fail_sql(m, "runs");
    int rc, status = 0;
    *n_same = 0;
    while (!status && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        char a[65], b[65];
        if (run_digest(m, "src", sqlite3_column_int64(st, 0), a) ||
            run_digest(m, "main", sqlite3_column_int64(st, 2), b)) {
            status = fail_sql(m, "run digest");
        } else if (strcmp(a, b)) {
            fprintf(stderr, "ternbench merge: run %s differs between %s and %s (same uuid, other "
                            "content): nothing of %s merged\n",
                    (const char *)sqlite3_column_text(st, 1), m->src, m->into, m->src);
            status = 2;
        } else {
            (*n_same)++;
        }
    }
    sqlite3_finalize(st);
    return status;
}

/* Dimension rows: insert the missing ones, then temp.map_<table> (old, new). */
static int merge_dim(merge_ctx *m, const char *table, const char *key) {
    if (!has_table(m->db, "src", table)) {
        snprintf(m->sql, sizeof m->sql, "CREATE TEMP TABLE map_%s (old INTEGER PRIMARY KEY, new INTEGER)", table);
        return exec(m, m->sql, table);
    }
    static const char *const skip[] = {"id", NULL};
    char cols[2048];
    if (common_cols(m->db, table, skip, "", cols, sizeof cols)) return fail_sql(m, table);
    snprintf(m->sql, sizeof m->sql,
             "INSERT OR IGNORE INTO main.%s (%s) SELECT %s FROM src.%s ORDER BY id;"
             "CREATE TEMP TABLE map_%s AS SELECT s.id AS old, d.id AS new FROM src.%s s"
             " JOIN main.%s d ON d.%s = s.%s;", table, cols, cols, table, table, table, table, key, key);
    return exec(m, m->sql, table);
}

/* Copy src.table rows whose `fk` maps through temp.map_<via> (and, for
 * `fk2`, through map_<via2>, NULL kept); other columns as they are. */
static int copy_child(merge_ctx *m, const char *table, const char *fk, const char *via,
                      const char *fk2, const char *via2) {
    if (!has_table(m->db, "src", table)) return 0;
    const char *const skip[] = {"id", fk, fk2, NULL};
    char cols[2048], scols[2048];
    if (common_cols(m->db, table, skip, "", cols, sizeof cols) ||
        common_cols(m->db, table, skip, "s.", scols, sizeof scols))
        return fail_sql(m, table);
    if (fk2)
        snprintf(m->sql, sizeof m->sql,
                 "INSERT INTO main.%s (%s, %s, %s) SELECT a.new, b.new, %s FROM src.%s s"
                 " JOIN temp.map_%s a ON a.old = s.%s LEFT JOIN temp.map_%s b ON b.old = s.%s",
                 table, fk, fk2, cols, scols, table, via, fk, via2, fk2);
    else
        snprintf(m->sql, sizeof m->sql,
                 "INSERT INTO main.%s (%s, %s) SELECT a.new, %s FROM src.%s s"
                 " JOIN temp.map_%s a ON a.old = s.%s", table, fk, cols, scols, table, via, fk);
    return exec(m, m->sql, table);
}

static int merge_runs(merge_ctx *m, int *n_added) {
    static const char *const skip[] = {"id", "host_id", "build_id", "model_id", "scenario_id", "import_id", NULL};
    char cols[2048], scols[2048];
    if (common_cols(m->db, "runs", skip, "", cols, sizeof cols) ||
        common_cols(m->db, "runs", skip, "s.", scols, sizeof scols))
        return fail_sql(m, "runs");
    const int imp = has_table(m->db, "src", "imports");
    /* new ids: after the largest in ALL.db, in the source's order */
    snprintf(m->sql, sizeof m->sql,
             "CREATE TEMP TABLE map_runs AS SELECT s.id AS old, (SELECT COALESCE(max(id), 0) FROM main.runs)"
             " + row_number() OVER (ORDER BY s.id) AS new FROM src.runs s"
             " WHERE s.uuid NOT IN (SELECT uuid FROM main.runs);"
             "INSERT INTO main.runs (id, host_id, build_id, model_id, scenario_id%s, %s)"
             " SELECT r.new, h.new, b.new, md.new, sc.new%s, %s FROM src.runs s"
             " JOIN temp.map_runs r ON r.old = s.id JOIN temp.map_hosts h ON h.old = s.host_id"
             " JOIN temp.map_builds b ON b.old = s.build_id LEFT JOIN temp.map_models md ON md.old = s.model_id"
             " JOIN temp.map_scenarios sc ON sc.old = s.scenario_id%s ORDER BY s.id;"
             "CREATE TEMP TABLE map_tests AS SELECT t.id AS old, (SELECT COALESCE(max(id), 0) FROM main.tests)"
             " + row_number() OVER (ORDER BY t.id) AS new FROM src.tests t"
             " WHERE t.run_id IN (SELECT old FROM temp.map_runs);",
             imp ? ", import_id" : "", cols, imp ? ", im.new" : "", scols,
             imp ? " LEFT JOIN temp.map_imports im ON im.old = s.import_id" : "");
    if (exec(m, m->sql, "runs")) return 1;
    static const char *const tskip[] = {"id", "run_id", NULL};
    char tcols[1024], tscols[1024];
    if (common_cols(m->db, "tests", tskip, "", tcols, sizeof tcols) ||
        common_cols(m->db, "tests", tskip, "s.", tscols, sizeof tscols))
        return fail_sql(m, "tests");
    snprintf(m->sql, sizeof m->sql,
             "INSERT INTO main.tests (id, run_id, %s) SELECT t.new, r.new, %s FROM src.tests s"
             " JOIN temp.map_tests t ON t.old = s.id JOIN temp.map_runs r ON r.old = s.run_id ORDER BY s.id",
             tcols, tscols);
    if (exec(m, m->sql, "tests")) return 1;
    if (copy_child(m, "run_tags", "run_id", "runs", NULL, NULL) ||
        copy_child(m, "test_params", "test_id", "tests", NULL, NULL) ||
        copy_child(m, "measurements", "test_id", "tests", NULL, NULL) ||
        copy_child(m, "token_events", "test_id", "tests", NULL, NULL) ||
        copy_child(m, "windows", "test_id", "tests", NULL, NULL) ||
        copy_child(m, "sensor_samples", "run_id", "runs", "test_id", "tests") ||
        copy_child(m, "sensor_absent", "run_id", "runs", NULL, NULL) ||
        copy_child(m, "claims", "run_id", "runs", "measured_test_id", "tests"))
        return 1;
    int64_t n;
    if (tb_peer_sql(m->db, &n, "SELECT count(*) FROM temp.map_runs", "")) return fail_sql(m, "runs");
    *n_added = (int)n;
    return 0;
}

static void drop_maps(merge_ctx *m) {
    const char *const t[] = {"hosts", "builds", "models", "scenarios", "imports", "runs", "tests"};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        char q[96];
        snprintf(q, sizeof q, "DROP TABLE IF EXISTS temp.map_%s", t[i]);
        sqlite3_exec(m->db, q, NULL, NULL, NULL);
    }
}

/* One source, in one transaction: 0, 1 (failure) or 2 (bad input). */
static int merge_one(tb_store_t *s, merge_ctx *m) {
    if (access(m->src, R_OK) != 0) {
        fprintf(stderr, "ternbench merge: %s: %s\n", m->src, strerror(errno));
        return 2;
    }
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(m->src, a) && realpath(m->into, b) && !strcmp(a, b)) {
        fprintf(stderr, "ternbench merge: %s is the destination itself\n", m->src);
        return 2;
    }
    if (tb_peer_sql(m->db, NULL, "ATTACH DATABASE ? AS src", "t", m->src)) return fail_sql(m, "attach");
    int status = 0;
    int64_t ver = -1;
    if (tb_peer_sql(m->db, &ver, "PRAGMA src.user_version", "") || !has_table(m->db, "src", "runs")) {
        fprintf(stderr, "ternbench merge: %s: not a ternbench results database\n", m->src);
        status = 2;
    } else if (ver > tb_store_version()) {
        fprintf(stderr, "ternbench merge: %s: schema version %lld is newer than this build's (%d)\n",
                m->src, (long long)ver, tb_store_version());
        status = 2;
    }
    int n_same = 0, n_added = 0;
    if (!status && tb_store_tx_begin(s) != TB_OK) {
        fprintf(stderr, "ternbench merge: %s\n", tb_last_error());
        status = 1;
    }
    if (!status) {
        status = check_existing(m, &n_same);
        for (size_t i = 0; !status && i < sizeof dims / sizeof dims[0]; i++)
            status = merge_dim(m, dims[i][0], dims[i][1]);
        if (!status) status = merge_runs(m, &n_added);
        char now[32];
        tb_peer_utc_now(now);
        if (!status && tb_peer_sql(m->db, NULL, "INSERT INTO main.merge_sources (source_path, n_runs,"
                                   " n_same, merged_utc) VALUES (?,?,?,?)", "tiit", m->src,
                                   (int64_t)n_added, (int64_t)n_same, now))
            status = fail_sql(m, "merge_sources");
        drop_maps(m);
        if (status) tb_store_tx_rollback(s);
        else if (tb_store_tx_commit(s) != TB_OK) {
            fprintf(stderr, "ternbench merge: %s\n", tb_last_error());
            status = 1;
        }
    }
    sqlite3_exec(m->db, "DETACH DATABASE src", NULL, NULL, NULL);
    if (!status) printf("%s: %d run%s added, %d already present\n", m->src, n_added, n_added == 1 ? "" : "s", n_same);
    return status;
}

int cmd_merge(int argc, char **argv) {
    const char *into = NULL;
    int n_src = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--into") && i + 1 < argc) into = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "ternbench merge: unexpected argument '%s'\n", argv[i]);
            into = NULL;
            n_src = 0;
            break;
        } else n_src++;
    }
    if (!into || n_src == 0) {
        fprintf(stderr, "usage: ternbench merge A.db [B.db ...] --into ALL.db\n");
        return 2;
    }
    tb_store_t *s;
    if (tb_store_open(into, &s, NULL) != TB_OK) {
        fprintf(stderr, "ternbench merge: %s\n", tb_last_error());
        return 1;
    }
    merge_ctx m = {.db = tb_store_db(s), .into = into};
    int status = 0;
    for (int i = 1; i < argc && !status; i++) {
        if (!strcmp(argv[i], "--into")) { i++; continue; }
        m.src = argv[i];
        status = merge_one(s, &m);
    }
    tb_store_close(s);
    return status;
}
