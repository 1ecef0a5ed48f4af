/*
 * store.h — the ternbench results database (SQLite).
 *
 * The schema is results/schema.sql (version 1) followed by the migrations in
 * results/migrations/NNN_*.sql, all compiled into the binary. Opening a
 * database:
 *   - sets WAL mode, a busy timeout and foreign keys;
 *   - brings PRAGMA user_version up to tb_store_version() one step per
 *     exclusive transaction (a newer database than this build is refused);
 *   - marks runs left 'running' by a dead process on this host 'interrupted'.
 *
 * Writers use BEGIN IMMEDIATE transactions, so two processes writing the same
 * database serialize on the busy timeout rather than fail. The harness writes
 * one transaction per repetition (tb_store_tx_begin / tb_store_tx_commit):
 * a process killed at any point leaves every committed repetition intact.
 *
 * Every function returns TB_OK or a negative tb_status_t and sets the sticky
 * message (tb_last_error()) naming the database path and SQLite's reason.
 * One tb_store_t must be used by one thread at a time.
 */
#ifndef TB_STORE_H
#define TB_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sqlite3 sqlite3;
typedef struct tb_store tb_store_t;

/* Generated from schema.sql + migrations/ (see embed_sql.py): step i brings
 * user_version i to i + 1. */
extern const int tb_store_n_steps;
extern const char *const tb_store_steps[];

/* ---- facts: plain records the harness fills, the store deduplicates ---- */

/* Integers < 0 mean unknown and are stored as NULL. */
typedef struct tb_host_facts {
    char fingerprint[65];
    char hostname[256];
    char cpu_vendor[64];
    char cpu_brand[128];
    int  cpu_family, cpu_model, cpu_stepping;
    int  cores, threads;
    int  l1d_kb, l2_kb, l3_kb;
    char isa_flags[4096];     /* space-separated */
    int64_t mem_bytes;
    char os[256];
    char kernel[256];
} tb_host_facts_t;

typedef struct tb_build_facts {
    char fingerprint[65];
    char version[32];
    char git_commit[64];      /* "unknown" outside a checkout */
    int  git_dirty;
    char compiler[128];
    char cflags[512];
    char build_type[32];
    char isa_best[16];
} tb_build_facts_t;

typedef struct tb_model_facts {
    char content_hash[65];
    char path[1024];
    char name[128];
    char arch[32];
    char main_type[16];
    char weight_types[512];   /* "tq2_0:168,f32:97" */
    int64_t file_bytes, n_params, n_params_active;
    int64_t n_layer, n_embd, n_vocab, n_expert, n_expert_used;
    char synth_preset[64];    /* "" when not synthesized */
    int64_t synth_seed;
    int64_t bytes_per_token;  /* at depth 0; < 0 unknown */
} tb_model_facts_t;

typedef struct tb_run_facts {
    char uuid[37];
    int64_t host_id, build_id, model_id, scenario_id;   /* model_id < 0: NULL */
    int threads;
    char isa[16];
    char kv_type[16];
    double bandwidth_gbps_before;                       /* < 0: NULL */
    int record_tokens;
    int n_tags;
    const char *const *tag_keys;
    const char *const *tag_values;
} tb_run_facts_t;

/* ---- lifecycle ---- */

/* Latest schema version this build knows. */
int  tb_store_version(void);
/* The database the commands use without --db: $TB_DB when set and not
 * empty, else TB_STORE_DEFAULT_PATH (relative to the working directory). */
#define TB_STORE_DEFAULT_PATH "results/ternbench.db"
const char *tb_store_default_path(void);
/* Open (creating the file, and its parent directory, if absent), migrate,
 * recover dead runs. *n_recovered (may be NULL) gets how many runs were
 * marked interrupted. */
int  tb_store_open(const char *path, tb_store_t **out, int *n_recovered);
/* What tb_store_open_read did and left undone. */
typedef struct tb_store_read_info {
    int n_recovered;       /* runs it marked interrupted (the file was writable) */
    int n_pending;         /* runs of dead processes still 'running': recovery
                            * pending until a writable open */
    int old_version;       /* > 0: the file has this older schema version and
                            * could not be migrated in place; it is read
                            * through a migrated copy in memory */
    bool immutable;        /* read without locks: no shared-memory index could
                            * be set up (read-only directory, full disk) */
    char write_error[512]; /* why migrating or recovering in place failed, "" */
} tb_store_read_info_t;

/* Open an existing database for reading (list, show, export, report).
 * Nothing is written unless something is due and the file and its
 * directory are writable: then it migrates and recovers as tb_store_open
 * does (a failure there, e.g. a full disk, falls back to reading). Else it
 * is read through a read-only connection (SQLITE_OPEN_READONLY; immutable
 * when SQLite cannot make its -shm index and no write-ahead log holds
 * data), an older schema through a migrated in-memory copy, and
 * info->n_pending says how many dead runs wait for recovery. A missing
 * file, another program's database and a newer schema are errors. The
 * store takes no writes. */
int  tb_store_open_read(const char *path, tb_store_t **out, tb_store_read_info_t *info);
void tb_store_close(tb_store_t *s);
/* The connection, for read-only queries (list/show/export). Borrowed. */
sqlite3 *tb_store_db(tb_store_t *s);
const char *tb_store_path(const tb_store_t *s);
/* Mark runs left 'running' by a process of this host that no longer exists
 * as 'interrupted' (their 'running' tests too). */
int  tb_store_recover(tb_store_t *s, int *n_marked);

/* ---- transactions (BEGIN IMMEDIATE) ---- */
int tb_store_tx_begin(tb_store_t *s);
int tb_store_tx_commit(tb_store_t *s);
void tb_store_tx_rollback(tb_store_t *s);   /* best effort, never fails */

/* ---- dimension rows: insert if new, return the id either way ---- */
int tb_store_put_host(tb_store_t *s, const tb_host_facts_t *h, int64_t *id);
int tb_store_put_build(tb_store_t *s, const tb_build_facts_t *b, int64_t *id);
int tb_store_put_model(tb_store_t *s, const tb_model_facts_t *m, int64_t *id);
int tb_store_put_scenario(tb_store_t *s, const char *hash, const char *name,
                          const char *source_path, const char *normalized, int64_t *id);

/* ---- runs and tests (each call is its own transaction) ---- */
int tb_store_run_begin(tb_store_t *s, const tb_run_facts_t *r, int64_t *run_id);
/* The engine that measured run_id ("llama.cpp"; a new run says "ternbench"),
 * its version text and backend (NULL: left as they are). */
int tb_store_run_engine(tb_store_t *s, int64_t run_id, const char *engine, const char *version,
                        const char *isa);
/* status: "complete", "failed", "interrupted". error and bw_after (< 0) optional. */
int tb_store_run_end(tb_store_t *s, int64_t run_id, const char *status,
                     const char *error, double bandwidth_gbps_after);
/* A test parameter, typed (test_params; tests.params is its JSON object,
 * built by SQLite from these rows). */
typedef enum { TB_PARAM_INT, TB_PARAM_REAL, TB_PARAM_TEXT } tb_param_type_t;
typedef struct tb_param {
    const char *key;
    tb_param_type_t type;
    int64_t i;
    double f;
    const char *s;
} tb_param_t;
int tb_store_test_begin(tb_store_t *s, int64_t run_id, const char *section,
                        const char *kind, const char *label, const tb_param_t *params,
                        int n_params, int64_t *test_id);
/* ref_slowdown_pct: the reference workload's worst slowdown, NAN unknown. */
int tb_store_test_end(tb_store_t *s, int64_t test_id, const char *status,
                      const char *thermal_state, const char *error, double ref_slowdown_pct);

/* ---- rows written inside a repetition's transaction ---- */
int tb_store_add_measurement(tb_store_t *s, int64_t test_id, int repetition,
                             const char *metric, double value, const char *unit);
/* dur_ns: a decode token's own step time, < 0 unknown (NULL). */
int tb_store_add_token(tb_store_t *s, int64_t test_id, int repetition, int idx,
                       const char *phase, int64_t t_ns, int64_t dur_ns, int32_t token_id,
                       const void *text, size_t text_len);
/* test_id < 0: sample not tied to a test. */
int tb_store_add_sensor(tb_store_t *s, int64_t run_id, int64_t test_id, int64_t t_ns,
                        const char *sensor, double value, const char *unit);
int tb_store_add_absent(tb_store_t *s, int64_t run_id, const char *sensor,
                        const char *reason);
int tb_store_add_window(tb_store_t *s, int64_t test_id, int repetition, int idx,
                        int n_tokens, int64_t t0_ns, int64_t t1_ns, double tok_per_s,
                        int ctx_pos, int64_t refill_ns, int refills);

#endif
