/*
 * store.c — open, migrate and write the results database (see store.h).
 */
#include "store.h"
#include "tbutil.h"
#include "ternbench.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ===================================================================== */
/* Prepared statements                                                    */
/* ===================================================================== */

enum {
    ST_BEGIN, ST_COMMIT, ST_ROLLBACK,
    ST_HOST_INS, ST_HOST_SEL, ST_BUILD_INS, ST_BUILD_SEL,
    ST_MODEL_INS, ST_MODEL_UPD, ST_MODEL_SEL, ST_SCEN_INS, ST_SCEN_SEL,
    ST_RUN_INS, ST_TAG_INS, ST_RUN_END, ST_RUN_ENGINE,
    ST_TEST_INS, ST_TEST_END, ST_PARAM_INS, ST_PARAM_JSON,
    ST_MEAS, ST_TOKEN, ST_SENSOR, ST_ABSENT, ST_WINDOW,
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN]     = "BEGIN IMMEDIATE",
    [ST_COMMIT]    = "COMMIT",
    [ST_ROLLBACK]  = "ROLLBACK",
    [ST_HOST_INS]  = "INSERT OR IGNORE INTO hosts (fingerprint, hostname, cpu_vendor, cpu_brand,"
                     " cpu_family, cpu_model, cpu_stepping, cores, threads, l1d_kb, l2_kb, l3_kb,"
                     " isa_flags, mem_bytes, os, kernel, first_seen_utc)"
                     " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_HOST_SEL]  = "SELECT id FROM hosts WHERE fingerprint = ?",
    [ST_BUILD_INS] = "INSERT OR IGNORE INTO builds (fingerprint, version, git_commit, git_dirty,"
                     " compiler, cflags, build_type, isa_best, first_seen_utc)"
                     " VALUES (?,?,?,?,?,?,?,?,?)",
    [ST_BUILD_SEL] = "SELECT id FROM builds WHERE fingerprint = ?",
    [ST_MODEL_INS] = "INSERT OR IGNORE INTO models (content_hash, path, name, arch, main_type,"
                     " weight_types, file_bytes, n_params, n_params_active, n_layer, n_embd,"
                     " n_vocab, n_expert, n_expert_used, synth_preset, synth_seed,"
                     " first_seen_utc, bytes_per_token)"
                     " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_MODEL_UPD] = "UPDATE models SET path = ?2 WHERE content_hash = ?1 AND path <> ?2",
    [ST_MODEL_SEL] = "SELECT id FROM models WHERE content_hash = ?",
    [ST_SCEN_INS]  = "INSERT OR IGNORE INTO scenarios (hash, name, source_path, normalized)"
                     " VALUES (?,?,?,?)",
    [ST_SCEN_SEL]  = "SELECT id FROM scenarios WHERE hash = ?",
    [ST_RUN_INS]   = "INSERT INTO runs (uuid, started_utc, status, pid, host_id, build_id,"
                     " model_id, scenario_id, threads, isa, kv_type, bandwidth_gbps_before,"
                     " record_tokens) VALUES (?,?,'running',?,?,?,?,?,?,?,?,?,?)",
    [ST_TAG_INS]   = "INSERT OR REPLACE INTO run_tags (run_id, key, value) VALUES (?,?,?)",
    [ST_RUN_END]   = "UPDATE runs SET status = ?2, ended_utc = ?3, error = ?4,"
                     " bandwidth_gbps_after = ?5 WHERE id = ?1",
    [ST_RUN_ENGINE] = "UPDATE runs SET engine = ?2, engine_version = coalesce(?3, engine_version),"
                     " isa = coalesce(?4, isa) WHERE id = ?1",
    [ST_TEST_INS]  = "INSERT INTO tests (run_id, section, kind, label, params, status)"
                     " VALUES (?,?,?,?,?,'running')",
    [ST_TEST_END]  = "UPDATE tests SET status = ?2, thermal_state = ?3, error = ?4,"
                     " ref_slowdown_pct = ?5 WHERE id = ?1",
    [ST_PARAM_INS] = "INSERT OR REPLACE INTO test_params (test_id, key, value) VALUES (?,?,?)",
    [ST_PARAM_JSON] = "UPDATE tests SET params = (SELECT json_group_object(key, value) FROM"
                     " test_params WHERE test_id = ?1)"
                     " WHERE id = ?1",
    [ST_MEAS]      = "INSERT OR REPLACE INTO measurements (test_id, repetition, metric, value, unit)"
                     " VALUES (?,?,?,?,?)",
    [ST_TOKEN]     = "INSERT OR REPLACE INTO token_events (test_id, repetition, idx, phase, t_ns,"
                     " token_id, text, dur_ns) VALUES (?,?,?,?,?,?,?,?)",
    [ST_SENSOR]    = "INSERT INTO sensor_samples (run_id, test_id, t_ns, sensor, value, unit)"
                     " VALUES (?,?,?,?,?,?)",
    [ST_ABSENT]    = "INSERT OR REPLACE INTO sensor_absent (run_id, sensor, reason) VALUES (?,?,?)",
    [ST_WINDOW]    = "INSERT OR REPLACE INTO windows (test_id, repetition, idx, n_tokens, t0_ns,"
                     " t1_ns, tok_per_s, ctx_pos, refill_ns, refills) VALUES (?,?,?,?,?,?,?,?,?,?)",
};

struct tb_store {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *st[ST_COUNT];   /* NULL in a reader (tb_store_open_read) */
};

int tb_store_version(void) { return tb_store_n_steps; }
sqlite3 *tb_store_db(tb_store_t *s) { return s->db; }
const char *tb_store_path(const tb_store_t *s) { return s->path; }

const char *tb_store_default_path(void) {
    const char *e = getenv("TB_DB");
    return e && *e ? e : TB_STORE_DEFAULT_PATH;
}

/* Set the sticky message from SQLite's state and return TB_ERR_IO. */
static int sql_err(tb_store_t *s, int rc, const char *what) {
    return tb_err(TB_ERR_IO, "%s: %s: %s (sqlite %d)", s->path, what,
                  s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc), rc);
}

/* Current UTC time as ISO-8601 ("2026-01-31T12:34:56Z") into buf[32]. */
static void utc_now(char buf[32]) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Reset statement i, bind nothing yet; returns it. */
static sqlite3_stmt *stmt(tb_store_t *s, int i) {
    sqlite3_stmt *st = s->st[i];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

/* Step a statement expecting SQLITE_DONE. */
static int step_done(tb_store_t *s, sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) return sql_err(s, rc, what);
    return TB_OK;
}

/* Bind helpers: every bind's return code is checked through `rc |=`-free
 * accumulation (first failure wins). */
typedef struct { tb_store_t *s; sqlite3_stmt *st; int rc; } binder_t;

static void b_text(binder_t *b, int i, const char *v) {
    if (b->rc != SQLITE_OK) return;
    b->rc = v ? sqlite3_bind_text(b->st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(b->st, i);
}
static void b_int(binder_t *b, int i, int64_t v) {
    if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_int64(b->st, i, v);
}
static void b_int_or_null(binder_t *b, int i, int64_t v) {
    if (b->rc != SQLITE_OK) return;
    b->rc = v < 0 ? sqlite3_bind_null(b->st, i) : sqlite3_bind_int64(b->st, i, v);
}
static void b_real(binder_t *b, int i, double v) {
    if (b->rc == SQLITE_OK) b->rc = sqlite3_bind_double(b->st, i, v);
}
static void b_real_or_null(binder_t *b, int i, double v) {
    if (b->rc != SQLITE_OK) return;
    b->rc = v < 0 ? sqlite3_bind_null(b->st, i) : sqlite3_bind_double(b->st, i, v);
}
static void b_real_or_nan(binder_t *b, int i, double v) {   /* NAN: NULL */
    if (b->rc != SQLITE_OK) return;
    b->rc = isnan(v) ? sqlite3_bind_null(b->st, i) : sqlite3_bind_double(b->st, i, v);
}
static void b_blob(binder_t *b, int i, const void *p, size_t n) {
    if (b->rc != SQLITE_OK) return;
    b->rc = p ? sqlite3_bind_blob64(b->st, i, p, n, SQLITE_TRANSIENT) : sqlite3_bind_null(b->st, i);
}
static int b_finish(binder_t *b, const char *what) {
    if (b->rc != SQLITE_OK) { sqlite3_reset(b->st); return sql_err(b->s, b->rc, what); }
    return step_done(b->s, b->st, what);
}

/* ===================================================================== */
/* Open, pragmas, migrations                                              */
/* ===================================================================== */

/* Run a multi-statement SQL text. */
static int exec(tb_store_t *s, const char *sql, const char *what) {
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        tb_err(TB_ERR_IO, "%s: %s: %s (sqlite %d)", s->path, what, msg ? msg : sqlite3_errstr(rc), rc);
        sqlite3_free(msg);
        return TB_ERR_IO;
    }
    return TB_OK;
}

/* Read one integer pragma / scalar query. */
static int query_int(tb_store_t *s, const char *sql, int64_t *out) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return sql_err(s, rc, sql);
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        return sql_err(s, rc, sql);
    }
    *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return TB_OK;
}

/* Bring user_version to tb_store_n_steps, one exclusive transaction per
 * step; the version is re-read inside the lock so concurrent openers apply
 * each step exactly once. A database newer than this build is refused.
 * Foreign keys are off while steps run (SQLite's procedure for rebuilding
 * a table others refer to: dropping it would otherwise cascade), each step
 * must leave no dangling reference, and they are on again afterwards. */
static int migrate_steps(tb_store_t *s);

static int migrate(tb_store_t *s) {
    int rc = exec(s, "PRAGMA foreign_keys = OFF", "migration");
    if (rc == TB_OK) rc = migrate_steps(s);
    int erc = exec(s, "PRAGMA foreign_keys = ON", "migration");
    return rc ? rc : erc;
}

static int migrate_steps(tb_store_t *s) {
    for (;;) {
        int64_t v;
        int rc = query_int(s, "PRAGMA user_version", &v);
        if (rc) return rc;
        if (v > tb_store_n_steps)
            return tb_err(TB_ERR_UNSUPPORTED, "%s: schema version %lld is newer than this "
                          "ternbench knows (%d); use a newer build", s->path, (long long)v,
                          tb_store_n_steps);
        if (v == tb_store_n_steps) return TB_OK;
        if ((rc = exec(s, "BEGIN EXCLUSIVE", "migration lock"))) return rc;
        if ((rc = query_int(s, "PRAGMA user_version", &v))) goto fail;
        if (v >= tb_store_n_steps) { exec(s, "COMMIT", "commit"); continue; }
        if (v < 0) { rc = tb_err(TB_ERR_FORMAT, "%s: negative user_version", s->path); goto fail; }
        char what[64], set[64];
        snprintf(what, sizeof what, "migration to schema version %lld", (long long)v + 1);
        if ((rc = exec(s, tb_store_steps[v], what))) goto fail;
        int64_t dangling;
        if ((rc = query_int(s, "SELECT count(*) FROM pragma_foreign_key_check", &dangling))) goto fail;
        if (dangling) {
            rc = tb_err(TB_ERR_FORMAT, "%s: %s would leave %lld rows referring to nothing; nothing was "
                        "changed", s->path, what, (long long)dangling);
            goto fail;
        }
        snprintf(set, sizeof set, "PRAGMA user_version = %lld", (long long)v + 1);
        if ((rc = exec(s, set, what))) goto fail;
        if ((rc = exec(s, "COMMIT", what))) goto fail;
        continue;
    fail:
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
}

/* ===================================================================== */
/* Looking at an existing file before anything is written                 */
/* ===================================================================== */

/* The tables every ternbench database has had since schema version 1. */
#define OUR_TABLES "'hosts','builds','models','scenarios','runs','tests','measurements'"
#define N_OUR_TABLES 7

/* What a read-only look at a file found. */
typedef struct file_probe {
    int64_t version;     /* PRAGMA user_version */
    int64_t n_objects;   /* rows of sqlite_master */
    int64_t n_ours;      /* of OUR_TABLES present */
} file_probe_t;

/* "file:PATH?PARAMS" with the characters URIs reserve percent-encoded. */
static char *file_uri(const char *path, const char *params) {
    size_t n = strlen(path);
    char *u = malloc(3 * n + strlen(params) + 8);
    if (!u) return NULL;
    char *o = u + sprintf(u, path[0] == '/' ? "file://" : "file:");   /* "file:///abs": no authority */
    for (const char *c = path; *c; c++) {
        if (*c == '?' || *c == '#' || *c == '%') o += sprintf(o, "%%%02X", (unsigned char)*c);
        else *o++ = *c;
    }
    sprintf(o, "?%s", params);
    return u;
}

/* A read-only connection to the existing file path, for looking only:
 * immutable (no locks, no -shm) when asked. */
static int open_ro(tb_store_t *s, bool immutable) {
    char *uri = file_uri(s->path, immutable ? "mode=ro&immutable=1" : "mode=ro");
    if (!uri) return tb_err(TB_ERR_NOMEM, "%s: out of memory", s->path);
    int rc = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
    free(uri);
    if (rc != SQLITE_OK) return sql_err(s, rc, "open read-only");
    sqlite3_extended_result_codes(s->db, 1);
    if ((rc = sqlite3_busy_timeout(s->db, 30000)) != SQLITE_OK) return sql_err(s, rc, "busy_timeout");
    return TB_OK;
}

/* Read the facts of the file through s->db; the first read of the file, so
 * a file that is not SQLite fails here. */
static int probe(tb_store_t *s, file_probe_t *p) {
    int rc = query_int(s, "PRAGMA user_version", &p->version);
    if (!rc) rc = query_int(s, "SELECT count(*) FROM sqlite_master", &p->n_objects);
    if (!rc) rc = query_int(s, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (" OUR_TABLES ")",
                            &p->n_ours);
    if (rc) {
        int e = sqlite3_errcode(s->db) & 0xff;
        if (e == SQLITE_NOTADB || e == SQLITE_CORRUPT)
            return tb_err(TB_ERR_FORMAT, "%s: not a ternbench results database (%s); the file was not modified",
                          s->path, sqlite3_errmsg(s->db));
    }
    return rc;
}

/* Refuse another program's database and one newer than this build, from
 * what probe found. */
static int check_probe(const tb_store_t *s, const file_probe_t *p) {
    if (p->version > tb_store_n_steps)
        return tb_err(TB_ERR_UNSUPPORTED, "%s: schema version %lld is newer than this ternbench knows (%d); "
                      "use a newer build", s->path, (long long)p->version, tb_store_n_steps);
    if (p->version == 0 && p->n_objects > 0)
        return tb_err(TB_ERR_FORMAT, "%s: not a ternbench results database (user_version 0 and a schema of "
                      "%lld object(s) of its own); not modified", s->path, (long long)p->n_objects);
    if (p->version > 0 && p->n_ours < N_OUR_TABLES)
        return tb_err(TB_ERR_FORMAT, "%s: not a ternbench results database (schema version %lld without "
                      "ternbench's tables); not modified", s->path, (long long)p->version);
    return TB_OK;
}

/* Size of path + suffix, -1 if absent. */
static int64_t side_size(const char *path, const char *suffix) {
    char p[4200];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    struct stat st;
    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* Connect s read-only to its existing file and probe it. Where SQLite
 * cannot set up its shared-memory index (a read-only directory, a full
 * disk) and no write-ahead log holds data, read the file as immutable. */
static int connect_ro(tb_store_t *s, file_probe_t *p, bool *immutable) {
    *immutable = false;
    int rc = open_ro(s, false);
    if (!rc) rc = probe(s, p);
    if (rc != TB_OK && rc != TB_ERR_FORMAT && s->db && side_size(s->path, "-wal") <= 0) {
        int e = sqlite3_errcode(s->db) & 0xff;
        if (e == SQLITE_READONLY || e == SQLITE_CANTOPEN || e == SQLITE_IOERR || e == SQLITE_FULL) {
            sqlite3_close(s->db);
            s->db = NULL;
            *immutable = true;
            rc = open_ro(s, true);
            if (!rc) rc = probe(s, p);
        }
    }
    return rc;
}

/* Whether this process may write path (if it exists) and create files
 * beside it (-wal, -shm, or the database itself); errno says why not. */
static bool writable(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    if (access(path, F_OK) == 0 && access(path, W_OK) != 0) return false;
    return access(dir, W_OK) == 0;
}

/* Create the parent directory of path (one level) if it is missing. */
static void make_parent_dir(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return;
    *slash = '\0';
    mkdir(dir, 0777);   /* EEXIST or a real error: sqlite3_open reports the latter */
}

int tb_store_open(const char *path, tb_store_t **out, int *n_recovered) {
    *out = NULL;
    if (n_recovered) *n_recovered = 0;
    if (!path || !*path) return tb_err(TB_ERR_ARG, "results database path is empty");
    tb_store_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return tb_err(TB_ERR_NOMEM, "%s: out of memory", path);
    }
    int rc;
    struct stat fst;
    if (stat(path, &fst) == 0 && !S_ISREG(fst.st_mode)) {
        rc = tb_err(TB_ERR_FORMAT, "%s: not a ternbench results database (not a regular file); not modified", path);
        goto fail;
    }
    if (stat(path, &fst) == 0 && fst.st_size > 0) {
        /* look before writing anything (the journal mode included): another
         * program's database is refused untouched */
        file_probe_t pr;
        bool immutable;
        rc = connect_ro(s, &pr, &immutable);
        if (!rc) rc = check_probe(s, &pr);
        sqlite3_close(s->db);
        s->db = NULL;
        if (rc) goto fail;
        if (!writable(path)) {
            rc = tb_err(TB_ERR_IO, "%s: the results database is read-only (%s); nothing can be recorded there",
                        path, strerror(errno));
            goto fail;
        }
    } else {
        make_parent_dir(path);
    }
    rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        if (access(path, F_OK) != 0 && !writable(path))
            rc = tb_err(TB_ERR_IO, "%s: cannot create the results database: its directory is read-only (%s)",
                        path, strerror(errno));
        else rc = sql_err(s, rc, "open");
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    if ((rc = sqlite3_busy_timeout(s->db, 30000)) != SQLITE_OK) { rc = sql_err(s, rc, "busy_timeout"); goto fail; }
    /* journal_mode needs the write lock once (the first time); the busy
     * handler is not consulted for it, so retry briefly by hand. */
    for (int tries = 0;; tries++) {
        rc = exec(s, "PRAGMA journal_mode = WAL", "journal_mode");
        if (rc == TB_OK) break;
        int e = sqlite3_errcode(s->db);
        if ((e & 0xff) == SQLITE_NOTADB || (e & 0xff) == SQLITE_CORRUPT) {   /* the first read of the file */
            rc = tb_err(TB_ERR_FORMAT, "%s: not a ternbench results database (%s); the file was not modified",
                        path, sqlite3_errmsg(s->db));
            goto fail;
        }
        if ((e & 0xff) == SQLITE_READONLY) {
            rc = tb_err(TB_ERR_IO, "%s: the results database is read-only (%s); nothing can be recorded there",
                        path, sqlite3_errmsg(s->db));
            goto fail;
        }
        if ((e & 0xff) != SQLITE_BUSY || tries > 300) goto fail;
        usleep(10000);
    }
    if ((rc = exec(s, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;", "pragmas"))) goto fail;
    if ((rc = migrate(s))) goto fail;
    for (int i = 0; i < ST_COUNT; i++) {
        int r = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL);
        if (r != SQLITE_OK) { rc = sql_err(s, r, stmt_sql[i]); goto fail; }
    }
    if ((rc = tb_store_recover(s, n_recovered))) goto fail;
    *out = s;
    return TB_OK;
fail:
    tb_store_close(s);
    return rc;
}

static int find_dead(tb_store_t *s, int64_t *dead, int cap, int *n);

/* A copy of s's database in memory, migrated to this build's schema: how
 * an older database that cannot be migrated in place is read. */
static int migrate_in_memory(tb_store_t *s) {
    sqlite3 *mem;
    int rc = sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) { sqlite3_close(mem); return sql_err(s, rc, "in-memory copy"); }
    sqlite3_backup *b = sqlite3_backup_init(mem, "main", s->db, "main");
    rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(mem);
    if (b) sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        int r = sql_err(s, rc, "in-memory copy");
        sqlite3_close(mem);
        return r;
    }
    sqlite3_close(s->db);
    s->db = mem;
    return migrate(s);
}

int tb_store_open_read(const char *path, tb_store_t **out, tb_store_read_info_t *info) {
    *out = NULL;
    memset(info, 0, sizeof *info);
    if (!path || !*path) return tb_err(TB_ERR_ARG, "results database path is empty");
    struct stat fst;
    if (stat(path, &fst) != 0)
        return tb_err(TB_ERR_IO, "%s: no results database there (%s)", path, strerror(errno));
    if (!S_ISREG(fst.st_mode))
        return tb_err(TB_ERR_FORMAT, "%s: not a ternbench results database (not a regular file); not modified", path);
    tb_store_t *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return tb_err(TB_ERR_NOMEM, "%s: out of memory", path);
    }
    file_probe_t pr = {0};
    int rc = fst.st_size > 0 ? connect_ro(s, &pr, &info->immutable) : open_ro(s, true);
    if (!rc) rc = check_probe(s, &pr);
    int64_t dead[256];
    int n_dead = 0;
    if (!rc && pr.version == tb_store_n_steps) rc = find_dead(s, dead, (int)TB_ARRAY_LEN(dead), &n_dead);
    if (rc) goto fail;
    const bool can_write = writable(path);
    if ((pr.version < tb_store_n_steps || n_dead > 0) && can_write) {
        /* writing is allowed: migrate and recover as every writer does */
        tb_store_t *w;
        if (tb_store_open(path, &w, &info->n_recovered) == TB_OK) {
            tb_store_close(s);
            *out = w;
            return TB_OK;
        }
        /* a full disk, say: read as it is, say what is pending */
        snprintf(info->write_error, sizeof info->write_error, "%s", tb_last_error());
    }
    info->n_pending = n_dead;
    if (pr.version < tb_store_n_steps) {
        info->old_version = (int)pr.version;
        if ((rc = migrate_in_memory(s))) goto fail;
        if ((rc = find_dead(s, dead, (int)TB_ARRAY_LEN(dead), &n_dead))) goto fail;
        info->n_pending = n_dead;
    }
    if ((rc = exec(s, "PRAGMA temp_store = MEMORY", "temp_store"))) goto fail;
    *out = s;
    return TB_OK;
fail:
    tb_store_close(s);
    return rc;
}

void tb_store_close(tb_store_t *s) {
    if (!s) return;
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(s->st[i]);
    sqlite3_close(s->db);   /* all statements finalized: cannot be BUSY */
    free(s->path);
    free(s);
}

/* ===================================================================== */
/* Recovery of runs left 'running' by dead processes                      */
/* ===================================================================== */

/* Ids of runs left 'running' by a process of this host that no longer
 * exists (at most cap) into dead[], their number into *n. */
static int find_dead(tb_store_t *s, int64_t *dead, int cap, int *n) {
    *n = 0;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(s->db, "SELECT r.id, r.pid, h.hostname FROM runs r"
                                " JOIN hosts h ON h.id = r.host_id WHERE r.status = 'running'",
                                -1, &q, NULL);
    if (rc != SQLITE_OK) return sql_err(s, rc, "select running runs");
    while ((rc = sqlite3_step(q)) == SQLITE_ROW && *n < cap) {
        int64_t pid = sqlite3_column_int64(q, 1);
        const char *h = (const char *)sqlite3_column_text(q, 2);
        if (!h || strcmp(h, host) != 0) continue;          /* another machine's run */
        if (pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
            dead[(*n)++] = sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return sql_err(s, rc, "select running runs");
    return TB_OK;
}

int tb_store_recover(tb_store_t *s, int *n_marked) {
    if (n_marked) *n_marked = 0;
    int64_t dead[256];
    int n_dead = 0;
    int rc = find_dead(s, dead, (int)TB_ARRAY_LEN(dead), &n_dead);
    if (rc || n_dead == 0) return rc;

    char now[32];
    utc_now(now);
    if ((rc = tb_store_tx_begin(s))) return rc;
    for (int i = 0; i < n_dead; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "UPDATE runs SET status = 'interrupted', ended_utc = COALESCE(ended_utc, '%s'),"
                 " error = COALESCE(error, 'process died') WHERE id = %lld AND status = 'running';"
                 "UPDATE tests SET status = 'interrupted' WHERE run_id = %lld AND status = 'running';",
                 now, (long long)dead[i], (long long)dead[i]);
        if ((rc = exec(s, sql, "mark interrupted"))) { tb_store_tx_rollback(s); return rc; }
    }
    if ((rc = tb_store_tx_commit(s))) return rc;
    if (n_marked) *n_marked = n_dead;
    return TB_OK;
}

/* ===================================================================== */
/* Transactions                                                           */
/* ===================================================================== */

int tb_store_tx_begin(tb_store_t *s) { return step_done(s, stmt(s, ST_BEGIN), "begin"); }
int tb_store_tx_commit(tb_store_t *s) {
    int rc = step_done(s, stmt(s, ST_COMMIT), "commit");
    if (rc) tb_store_tx_rollback(s);
    return rc;
}
void tb_store_tx_rollback(tb_store_t *s) {
    if (sqlite3_get_autocommit(s->db)) return;   /* no transaction open */
    sqlite3_stmt *st = stmt(s, ST_ROLLBACK);
    (void)sqlite3_step(st);
    sqlite3_reset(st);
}

/* ===================================================================== */
/* Dimension rows                                                         */
/* ===================================================================== */

/* Run the prepared INSERT OR IGNORE in b, then SELECT id by key. */
static int upsert_id(tb_store_t *s, binder_t *b, int sel, const char *key, int64_t *id,
                     const char *what) {
    int rc = tb_store_tx_begin(s);
    if (rc) { sqlite3_reset(b->st); return rc; }
    if ((rc = b_finish(b, what))) goto fail;
    sqlite3_stmt *q = stmt(s, sel);
    int r = sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    if (r != SQLITE_OK) { rc = sql_err(s, r, what); goto fail; }
    r = sqlite3_step(q);
    if (r != SQLITE_ROW) { sqlite3_reset(q); rc = sql_err(s, r, what); goto fail; }
    *id = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    return tb_store_tx_commit(s);
fail:
    tb_store_tx_rollback(s);
    return rc;
}

int tb_store_put_host(tb_store_t *s, const tb_host_facts_t *h, int64_t *id) {
    char now[32];
    utc_now(now);
    binder_t b = {s, stmt(s, ST_HOST_INS), SQLITE_OK};
    b_text(&b, 1, h->fingerprint); b_text(&b, 2, h->hostname);
    b_text(&b, 3, h->cpu_vendor); b_text(&b, 4, h->cpu_brand);
    b_int_or_null(&b, 5, h->cpu_family); b_int_or_null(&b, 6, h->cpu_model);
    b_int_or_null(&b, 7, h->cpu_stepping); b_int_or_null(&b, 8, h->cores);
    b_int_or_null(&b, 9, h->threads); b_int_or_null(&b, 10, h->l1d_kb);
    b_int_or_null(&b, 11, h->l2_kb); b_int_or_null(&b, 12, h->l3_kb);
    b_text(&b, 13, h->isa_flags); b_int_or_null(&b, 14, h->mem_bytes);
    b_text(&b, 15, h->os); b_text(&b, 16, h->kernel); b_text(&b, 17, now);
    return upsert_id(s, &b, ST_HOST_SEL, h->fingerprint, id, "insert host");
}

int tb_store_put_build(tb_store_t *s, const tb_build_facts_t *bf, int64_t *id) {
    char now[32];
    utc_now(now);
    binder_t b = {s, stmt(s, ST_BUILD_INS), SQLITE_OK};
    b_text(&b, 1, bf->fingerprint); b_text(&b, 2, bf->version);
    b_text(&b, 3, bf->git_commit); b_int(&b, 4, bf->git_dirty ? 1 : 0);
    b_text(&b, 5, bf->compiler); b_text(&b, 6, bf->cflags);
    b_text(&b, 7, bf->build_type); b_text(&b, 8, bf->isa_best); b_text(&b, 9, now);
    return upsert_id(s, &b, ST_BUILD_SEL, bf->fingerprint, id, "insert build");
}

int tb_store_put_model(tb_store_t *s, const tb_model_facts_t *m, int64_t *id) {
    char now[32];
    utc_now(now);
    binder_t b = {s, stmt(s, ST_MODEL_INS), SQLITE_OK};
    b_text(&b, 1, m->content_hash); b_text(&b, 2, m->path); b_text(&b, 3, m->name);
    b_text(&b, 4, m->arch); b_text(&b, 5, m->main_type); b_text(&b, 6, m->weight_types);
    b_int(&b, 7, m->file_bytes); b_int(&b, 8, m->n_params); b_int(&b, 9, m->n_params_active);
    b_int(&b, 10, m->n_layer); b_int(&b, 11, m->n_embd); b_int(&b, 12, m->n_vocab);
    b_int(&b, 13, m->n_expert); b_int(&b, 14, m->n_expert_used);
    b_text(&b, 15, m->synth_preset[0] ? m->synth_preset : NULL);
    if (m->synth_preset[0]) b_int(&b, 16, m->synth_seed);
    b_text(&b, 17, now);
    b_int_or_null(&b, 18, m->bytes_per_token);
    int rc = upsert_id(s, &b, ST_MODEL_SEL, m->content_hash, id, "insert model");
    if (rc) return rc;
    /* Same content seen at a new path: remember where it was last seen. */
    binder_t u = {s, stmt(s, ST_MODEL_UPD), SQLITE_OK};
    b_text(&u, 1, m->content_hash); b_text(&u, 2, m->path);
    return b_finish(&u, "update model path");
}

int tb_store_put_scenario(tb_store_t *s, const char *hash, const char *name,
                          const char *source_path, const char *normalized, int64_t *id) {
    binder_t b = {s, stmt(s, ST_SCEN_INS), SQLITE_OK};
    b_text(&b, 1, hash); b_text(&b, 2, name); b_text(&b, 3, source_path);
    b_text(&b, 4, normalized);
    return upsert_id(s, &b, ST_SCEN_SEL, hash, id, "insert scenario");
}

/* ===================================================================== */
/* Runs and tests                                                         */
/* ===================================================================== */

int tb_store_run_begin(tb_store_t *s, const tb_run_facts_t *r, int64_t *run_id) {
    char now[32];
    utc_now(now);
    int rc = tb_store_tx_begin(s);
    if (rc) return rc;
    binder_t b = {s, stmt(s, ST_RUN_INS), SQLITE_OK};
    b_text(&b, 1, r->uuid); b_text(&b, 2, now); b_int(&b, 3, (int64_t)getpid());
    b_int(&b, 4, r->host_id); b_int(&b, 5, r->build_id); b_int_or_null(&b, 6, r->model_id);
    b_int(&b, 7, r->scenario_id); b_int(&b, 8, r->threads); b_text(&b, 9, r->isa);
    b_text(&b, 10, r->kv_type); b_real_or_null(&b, 11, r->bandwidth_gbps_before);
    b_int(&b, 12, r->record_tokens ? 1 : 0);
    if ((rc = b_finish(&b, "insert run"))) goto fail;
    *run_id = sqlite3_last_insert_rowid(s->db);
    for (int i = 0; i < r->n_tags; i++) {
        binder_t t = {s, stmt(s, ST_TAG_INS), SQLITE_OK};
        b_int(&t, 1, *run_id); b_text(&t, 2, r->tag_keys[i]); b_text(&t, 3, r->tag_values[i]);
        if ((rc = b_finish(&t, "insert run tag"))) goto fail;
    }
    return tb_store_tx_commit(s);
fail:
    tb_store_tx_rollback(s);
    return rc;
}

int tb_store_run_engine(tb_store_t *s, int64_t run_id, const char *engine, const char *version,
                        const char *isa) {
    binder_t b = {s, stmt(s, ST_RUN_ENGINE), SQLITE_OK};
    b_int(&b, 1, run_id); b_text(&b, 2, engine); b_text(&b, 3, version); b_text(&b, 4, isa);
    return b_finish(&b, "set run engine");
}

int tb_store_run_end(tb_store_t *s, int64_t run_id, const char *status, const char *error,
                     double bandwidth_gbps_after) {
    char now[32];
    utc_now(now);
    binder_t b = {s, stmt(s, ST_RUN_END), SQLITE_OK};
    b_int(&b, 1, run_id); b_text(&b, 2, status); b_text(&b, 3, now);
    b_text(&b, 4, error); b_real_or_null(&b, 5, bandwidth_gbps_after);
    int rc = b_finish(&b, "end run");
    /* Tests still 'running' in a run that ended are interrupted. */
    if (rc == TB_OK && strcmp(status, "complete") != 0) {
        char sql[160];
        snprintf(sql, sizeof sql, "UPDATE tests SET status = 'interrupted' WHERE run_id = %lld"
                 " AND status = 'running'", (long long)run_id);
        rc = exec(s, sql, "end run tests");
    }
    return rc;
}

int tb_store_test_begin(tb_store_t *s, int64_t run_id, const char *section, const char *kind,
                        const char *label, const tb_param_t *params, int n_params,
                        int64_t *test_id) {
    int rc = tb_store_tx_begin(s);
    if (rc) return rc;
    binder_t b = {s, stmt(s, ST_TEST_INS), SQLITE_OK};
    b_int(&b, 1, run_id); b_text(&b, 2, section); b_text(&b, 3, kind);
    b_text(&b, 4, label); b_text(&b, 5, "{}");
    if ((rc = b_finish(&b, "insert test"))) { tb_store_tx_rollback(s); return rc; }
    *test_id = sqlite3_last_insert_rowid(s->db);
    for (int i = 0; i < n_params && rc == TB_OK; i++) {
        const tb_param_t *p = &params[i];
        binder_t q = {s, stmt(s, ST_PARAM_INS), SQLITE_OK};
        b_int(&q, 1, *test_id); b_text(&q, 2, p->key);
        if (p->type == TB_PARAM_INT) b_int(&q, 3, p->i);
        else if (p->type == TB_PARAM_REAL) b_real(&q, 3, p->f);
        else b_text(&q, 3, p->s ? p->s : "");
        rc = b_finish(&q, "insert test parameter");
    }
    if (rc == TB_OK) {
        binder_t j = {s, stmt(s, ST_PARAM_JSON), SQLITE_OK};
        b_int(&j, 1, *test_id);
        rc = b_finish(&j, "test parameters");
    }
    if (rc) { tb_store_tx_rollback(s); return rc; }
    return tb_store_tx_commit(s);
}

int tb_store_test_end(tb_store_t *s, int64_t test_id, const char *status,
                      const char *thermal_state, const char *error, double ref_slowdown_pct) {
    binder_t b = {s, stmt(s, ST_TEST_END), SQLITE_OK};
    b_int(&b, 1, test_id); b_text(&b, 2, status); b_text(&b, 3, thermal_state);
    b_text(&b, 4, error); b_real_or_nan(&b, 5, ref_slowdown_pct);
    return b_finish(&b, "end test");
}

/* ===================================================================== */
/* Per-repetition rows                                                    */
/* ===================================================================== */

int tb_store_add_measurement(tb_store_t *s, int64_t test_id, int repetition,
                             const char *metric, double value, const char *unit) {
    binder_t b = {s, stmt(s, ST_MEAS), SQLITE_OK};
    b_int(&b, 1, test_id); b_int(&b, 2, repetition); b_text(&b, 3, metric);
    b_real(&b, 4, value); b_text(&b, 5, unit);
    return b_finish(&b, "insert measurement");
}

int tb_store_add_token(tb_store_t *s, int64_t test_id, int repetition, int idx,
                       const char *phase, int64_t t_ns, int64_t dur_ns, int32_t token_id,
                       const void *text, size_t text_len) {
    binder_t b = {s, stmt(s, ST_TOKEN), SQLITE_OK};
    b_int(&b, 1, test_id); b_int(&b, 2, repetition); b_int(&b, 3, idx);
    b_text(&b, 4, phase); b_int(&b, 5, t_ns); b_int(&b, 6, token_id);
    b_blob(&b, 7, text ? text : "", text_len); b_int_or_null(&b, 8, dur_ns);
    return b_finish(&b, "insert token event");
}

int tb_store_add_sensor(tb_store_t *s, int64_t run_id, int64_t test_id, int64_t t_ns,
                        const char *sensor, double value, const char *unit) {
    binder_t b = {s, stmt(s, ST_SENSOR), SQLITE_OK};
    b_int(&b, 1, run_id); b_int_or_null(&b, 2, test_id); b_int(&b, 3, t_ns);
    b_text(&b, 4, sensor); b_real(&b, 5, value); b_text(&b, 6, unit);
    return b_finish(&b, "insert sensor sample");
}

int tb_store_add_absent(tb_store_t *s, int64_t run_id, const char *sensor, const char *reason) {
    binder_t b = {s, stmt(s, ST_ABSENT), SQLITE_OK};
    b_int(&b, 1, run_id); b_text(&b, 2, sensor); b_text(&b, 3, reason);
    return b_finish(&b, "insert absent sensor");
}

int tb_store_add_window(tb_store_t *s, int64_t test_id, int repetition, int idx,
                        int n_tokens, int64_t t0_ns, int64_t t1_ns, double tok_per_s,
                        int ctx_pos, int64_t refill_ns, int refills) {
    binder_t b = {s, stmt(s, ST_WINDOW), SQLITE_OK};
    b_int(&b, 1, test_id); b_int(&b, 2, repetition); b_int(&b, 3, idx);
    b_int(&b, 4, n_tokens); b_int(&b, 5, t0_ns); b_int(&b, 6, t1_ns);
    b_real(&b, 7, tok_per_s); b_int(&b, 8, ctx_pos); b_int(&b, 9, refill_ns);
    b_int(&b, 10, refills);
    return b_finish(&b, "insert window");
}
