/*
 * cmd_import.c — ternbench import FILE [--format F] [--db PATH] [--model NAME]
 *
 * Records each row of a peer's benchmark output (llama-bench json / jsonl /
 * sql / csv / md, mlx-lm) as a run of that engine, with what the file says of
 * its provenance. One transaction for the whole file: a bad row (reported as
 * FILE:LINE: reason, exit 2) imports nothing of it. Importing a file already
 * imported (same SHA-256) adds nothing; a row whose run (its uuid, derived
 * from the row's identity) is already in the database is skipped.
 *
 * How a row maps (docs/peers.md has the full table):
 *   runs: engine, engine_version "b<build_number> (<build_commit>)",
 *         threads = n_threads, isa = backends, kv_type = type_k,
 *         started_utc = ended_utc = test_time ("unknown" without one),
 *         status complete, pid 0,
 *         record_tokens 0, import_id -> imports
 *   hosts / builds / models / scenarios: rows whose fingerprint or hash
 *         starts with "peer:", from cpu_info+gpu_info, build_commit+number+
 *         backends, model_filename+type+size+params, the file's hash
 *   tests: one per row; kind prefill (pp), decode (tg) or generate (pp+tg);
 *         label "pp512", "tg128@d4096", "pp512+tg128"; params JSON holds the
 *         ternbench keys and every field of the row under "peer"
 *   measurements: per repetition (samples_ts / samples_ns) the tok/s and ms
 *         metric of the kind; summaries (repetition -1): median (headline),
 *         :mean, :stddev (n-1), :min, :max, repetitions — or, without
 *         samples, the file's mean (headline) and stddev.
 */
#include "commands.h"
#include "peers.h"
#include "scenario.h"
#include "store.h"
#include "ternbench.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    sqlite3 *db;
    tb_peer_fmt_t fmt;
    const char *path, *file_hash, *model_name;
    int64_t import_id, scenario_id;
    int n_added, n_present;
    char utc[32];
} import_ctx;

static const char *get_or(const tb_peer_row_t *r, const char *k, const char *def) {
    const char *v = tb_peer_get(r, k);
    return v && *v ? v : def;
}

static int64_t get_i64(const tb_peer_row_t *r, const char *k, int64_t def) {
    const char *v = tb_peer_get(r, k);
    return v && *v ? strtoll(v, NULL, 10) : def;
}

/* "peer:" + SHA-256 of the parts joined by newlines. */
static void peer_hash(char out[71], const char *const *parts, int n) {
    tb_sha256_t c;
    tb_sha256_init(&c);
    for (int i = 0; i < n; i++) {
        const char *p = parts[i] ? parts[i] : "";
        tb_sha256_update(&c, p, strlen(p));
        tb_sha256_update(&c, "\n", 1);
    }
    uint8_t d[32];
    tb_sha256_final(&c, d);
    memcpy(out, "peer:", 5);
    for (int i = 0; i < 32; i++) snprintf(out + 5 + 2 * i, 3, "%02x", d[i]);
}

/* A row's uuid: from its identity (the llama-bench fields but the float
 * rates, so json/jsonl/csv/sql output of one llama-bench run agree), or from
 * the file and row index where the format has no timestamp (md, mlx-lm). */
static void row_uuid(const import_ctx *c, const tb_peer_row_t *r, int idx, const char *engine,
                     char out[37]) {
    tb_sha256_t h;
    tb_sha256_init(&h);
    tb_sha256_update(&h, engine, strlen(engine) + 1);
    if (tb_peer_get(r, "test_time") && tb_peer_get(r, "avg_ns")) {
        for (int i = 0; tb_llamabench_fields[i]; i++) {
            const char *k = tb_llamabench_fields[i], *v = tb_peer_get(r, k);
            if (!v || tb_llamabench_field_type(k) == TB_LB_REAL) continue;
            tb_sha256_update(&h, k, strlen(k) + 1);
            tb_sha256_update(&h, v, strlen(v) + 1);
        }
    } else {
        char b[32];
        snprintf(b, sizeof b, "%d", idx);
        tb_sha256_update(&h, c->file_hash, strlen(c->file_hash) + 1);
        tb_sha256_update(&h, b, strlen(b) + 1);
    }
    uint8_t d[32];
    tb_sha256_final(&h, d);
    d[6] = (uint8_t)((d[6] & 0x0f) | 0x50);   /* name-based uuid (version 5 layout) */
    d[8] = (uint8_t)((d[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12],
             d[13], d[14], d[15]);
}

static int sql_fail(const import_ctx *c, const char *what) {
    fprintf(stderr, "ternbench import: %s: %s: %s\n", c->path, what, sqlite3_errmsg(c->db));
    return 1;
}

/* Insert-if-new dimension rows; their id in *id. */
static int put_host(import_ctx *c, const tb_peer_row_t *r, const char *engine, int64_t *id) {
    const char *cpu = get_or(r, "cpu_info", "unknown"), *gpu = get_or(r, "gpu_info", "");
    const char *parts[] = {engine, cpu, gpu};
    char fp[71];
    peer_hash(fp, parts, 3);
    if (tb_peer_sql(c->db, NULL, "INSERT OR IGNORE INTO hosts (fingerprint, hostname, cpu_vendor,"
                    " cpu_brand, isa_flags, os, kernel, first_seen_utc) VALUES (?,'','',?,'','','',?)",
                    "ttt", fp, cpu, c->utc) ||
        tb_peer_sql(c->db, id, "SELECT id FROM hosts WHERE fingerprint = ?", "t", fp))
        return sql_fail(c, "host");
    return 0;
}

static int put_build(import_ctx *c, const tb_peer_row_t *r, const char *engine, int64_t *id) {
    const char *commit = get_or(r, "build_commit", "unknown"), *num = get_or(r, "build_number", "unknown");
    const char *be = get_or(r, "backends", "");
    const char *parts[] = {engine, commit, num, be};
    char fp[71];
    peer_hash(fp, parts, 4);
    if (tb_peer_sql(c->db, NULL, "INSERT OR IGNORE INTO builds (fingerprint, version, git_commit,"
                    " git_dirty, compiler, cflags, build_type, isa_best, first_seen_utc)"
                    " VALUES (?,?,?,0,'','','',?,?)", "ttttt", fp, num, commit, be, c->utc) ||
        tb_peer_sql(c->db, id, "SELECT id FROM builds WHERE fingerprint = ?", "t", fp))
        return sql_fail(c, "build");
    return 0;
}

/* No model row (*id = -1) when the row names none and --model was not given. */
static int put_model(import_ctx *c, const tb_peer_row_t *r, int64_t *id) {
    const char *file = get_or(r, "model_filename", ""), *type = get_or(r, "model_type", "");
    *id = -1;
    if (!*file && !*type && !c->model_name) return 0;
    const char *size = get_or(r, "model_size", "0"), *np = get_or(r, "model_n_params", "0");
    const char *parts[] = {file, type, size, np, c->model_name};
    char h[71];
    peer_hash(h, parts, 5);
    const char *base = strrchr(file, '/');
    const char *name = c->model_name ? c->model_name : *file ? (base ? base + 1 : file) : type;
    /* model_type is "<arch> <size> <type>" ("llama 1B F16") */
    char arch[32] = "", main_type[32] = "";
    sscanf(type, "%31s", arch);
    const char *last = strrchr(type, ' ');
    snprintf(main_type, sizeof main_type, "%s", last ? last + 1 : "");
    const int64_t n_params = strtoll(np, NULL, 10);
    if (tb_peer_sql(c->db, NULL, "INSERT OR IGNORE INTO models (content_hash, path, name, arch,"
                    " main_type, weight_types, file_bytes, n_params, n_params_active, n_layer, n_embd,"
                    " n_vocab, n_expert, n_expert_used, first_seen_utc)"
                    " VALUES (?,?,?,?,?,'',?,?,?,0,0,0,0,0,?)", "tttttiiit", h, file, name, arch,
                    main_type, (int64_t)strtoll(size, NULL, 10), n_params, n_params, c->utc) ||
        tb_peer_sql(c->db, id, "SELECT id FROM models WHERE content_hash = ?", "t", h))
        return sql_fail(c, "model");
    return 0;
}

typedef struct { const char *kind, *ts, *ms; } kind_t;

static kind_t row_kind(int64_t np, int64_t ng) {
    if (ng == 0) return (kind_t){"prefill", "prefill_tok_per_s", "prefill_ms"};
    if (np == 0) return (kind_t){"decode", "decode_tok_per_s", "decode_ms"};
    return (kind_t){"generate", "e2e_tok_per_s", "e2e_ms"};
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int add_meas(import_ctx *c, int64_t test_id, int rep, const char *metric, double v,
                    const char *unit) {
    if (tb_peer_sql(c->db, NULL, "INSERT INTO measurements (test_id, repetition, metric, value, unit)"
                    " VALUES (?,?,?,?,?)", "iitdt", test_id, (int64_t)rep, metric, v, unit))
        return sql_fail(c, "measurement");
    return 0;
}

/* Median (headline), mean, stddev (n-1), min, max of x (n,), sorted in place. */
static int add_summary(import_ctx *c, int64_t test_id, const char *metric, double *x, int n,
                       const char *unit) {
    double sum = 0, ss = 0;
    for (int i = 0; i < n; i++) sum += x[i];
    const double mean = sum / n;
    for (int i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
    qsort(x, (size_t)n, sizeof *x, cmp_dbl);
    const double med = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    char m[96];
    int rc = add_meas(c, test_id, -1, metric, med, unit);
    snprintf(m, sizeof m, "%s:mean", metric);
    if (!rc) rc = add_meas(c, test_id, -1, m, mean, unit);
    snprintf(m, sizeof m, "%s:stddev", metric);
    if (!rc) rc = add_meas(c, test_id, -1, m, n > 1 ? sqrt(ss / (n - 1)) : 0.0, unit);
    snprintf(m, sizeof m, "%s:min", metric);
    if (!rc) rc = add_meas(c, test_id, -1, m, x[0], unit);
    snprintf(m, sizeof m, "%s:max", metric);
    if (!rc) rc = add_meas(c, test_id, -1, m, x[n - 1], unit);
    return rc;
}

static int add_measurements(import_ctx *c, const tb_peer_row_t *r, int64_t test_id, kind_t k,
                            int64_t n_tokens) {
    const int n = r->n_ts > 0 ? r->n_ts : r->n_ns > 0 ? r->n_ns : 0;
    int rc = 0;
    if (n > 0) {
        double *ts = malloc((size_t)n * sizeof *ts), *ms = malloc((size_t)n * sizeof *ms);
        if (!ts || !ms) { free(ts); free(ms); fprintf(stderr, "ternbench import: out of memory\n"); return 1; }
        for (int i = 0; i < n && !rc; i++) {
            /* llama-bench's own t/s is n_tokens / sample time; without samples_ts it is derived so */
            ts[i] = r->n_ts > 0 ? r->samples_ts[i] : 1e9 * (double)n_tokens / (double)r->samples_ns[i];
            rc = add_meas(c, test_id, i, k.ts, ts[i], "tok/s");
            if (!rc && r->n_ns > 0) {
                ms[i] = (double)r->samples_ns[i] / 1e6;
                rc = add_meas(c, test_id, i, k.ms, ms[i], "ms");
            }
        }
        if (!rc) rc = add_summary(c, test_id, k.ts, ts, n, "tok/s");
        if (!rc && r->n_ns > 0) rc = add_summary(c, test_id, k.ms, ms, n, "ms");
        if (!rc) rc = add_meas(c, test_id, -1, "repetitions", n, "count");
        free(ts);
        free(ms);
    } else {
        char m[96];
        rc = add_meas(c, test_id, -1, k.ts, strtod(get_or(r, "avg_ts", "0"), NULL), "tok/s");
        snprintf(m, sizeof m, "%s:mean", k.ts);
        if (!rc) rc = add_meas(c, test_id, -1, m, strtod(get_or(r, "avg_ts", "0"), NULL), "tok/s");
        snprintf(m, sizeof m, "%s:stddev", k.ts);
        if (!rc && tb_peer_get(r, "stddev_ts"))
            rc = add_meas(c, test_id, -1, m, strtod(tb_peer_get(r, "stddev_ts"), NULL), "tok/s");
        if (!rc && tb_peer_get(r, "avg_ns")) {
            rc = add_meas(c, test_id, -1, k.ms, (double)get_i64(r, "avg_ns", 0) / 1e6, "ms");
            snprintf(m, sizeof m, "%s:mean", k.ms);
            if (!rc) rc = add_meas(c, test_id, -1, m, (double)get_i64(r, "avg_ns", 0) / 1e6, "ms");
            snprintf(m, sizeof m, "%s:stddev", k.ms);
            if (!rc && tb_peer_get(r, "stddev_ns"))
                rc = add_meas(c, test_id, -1, m, (double)get_i64(r, "stddev_ns", 0) / 1e6, "ms");
        }
    }
    if (!rc && tb_peer_get(r, "peak_memory_gb"))
        rc = add_meas(c, test_id, -1, "peak_memory_gb", strtod(tb_peer_get(r, "peak_memory_gb"), NULL), "GB");
    return rc;
}

/* tests.params: ternbench's keys plus the row itself under "peer". */
static char *row_params(const tb_peer_row_t *r, const char *kind, const char *engine, int n_reps) {
    json_t *o = json_object(), *peer = json_object();
    if (!o || !peer) { json_decref(o); json_decref(peer); return NULL; }
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "engine", json_string(engine));
    json_object_set_new(o, "prompt_tokens", json_integer(get_i64(r, "n_prompt", 0)));
    json_object_set_new(o, "tokens", json_integer(get_i64(r, "n_gen", 0)));
    json_object_set_new(o, "depth", json_integer(get_i64(r, "n_depth", 0)));
    if (tb_peer_get(r, "n_threads")) json_object_set_new(o, "threads", json_integer(get_i64(r, "n_threads", 0)));
    if (tb_peer_get(r, "n_batch")) json_object_set_new(o, "n_batch", json_integer(get_i64(r, "n_batch", 0)));
    if (tb_peer_get(r, "n_ubatch")) json_object_set_new(o, "n_ubatch", json_integer(get_i64(r, "n_ubatch", 0)));
    if (tb_peer_get(r, "type_k")) json_object_set_new(o, "kv_type", json_string(tb_peer_get(r, "type_k")));
    json_object_set_new(o, "repetitions", json_integer(n_reps));
    json_object_set_new(o, "headline", json_string(n_reps > 0 ? "median" : "mean"));
    for (int i = 0; i < r->n; i++) json_object_set_new(peer, r->key[i], json_string(r->val[i]));
    json_object_set_new(o, "peer", peer);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

static int import_row(import_ctx *c, const tb_peer_row_t *r, int idx) {
    const char *engine = get_or(r, "engine", tb_peer_fmt_engine(c->fmt));
    char uuid[37];
    row_uuid(c, r, idx, engine, uuid);
    int64_t have;
    if (tb_peer_sql(c->db, &have, "SELECT id FROM runs WHERE uuid = ?", "t", uuid)) return sql_fail(c, "run");
    if (have >= 0) { c->n_present++; return 0; }
    int64_t host, build, model, run, test;
    if (put_host(c, r, engine, &host) || put_build(c, r, engine, &build) || put_model(c, r, &model))
        return 1;
    const int64_t np = get_i64(r, "n_prompt", 0), ng = get_i64(r, "n_gen", 0), nd = get_i64(r, "n_depth", 0);
    char ver[160] = "";
    if (tb_peer_get(r, "engine_version")) snprintf(ver, sizeof ver, "%s", tb_peer_get(r, "engine_version"));
    else if (tb_peer_get(r, "build_number") || tb_peer_get(r, "build_commit"))
        snprintf(ver, sizeof ver, "b%s (%s)", get_or(r, "build_number", "?"), get_or(r, "build_commit", "?"));
    /* md and mlx-lm rows carry no time: recorded as unknown, not as the import's */
    const char *when = get_or(r, "test_time", "unknown");
    char kv[32];
    snprintf(kv, sizeof kv, "%s", get_or(r, "type_k", ""));
    if (tb_peer_sql(c->db, NULL, "INSERT INTO runs (uuid, started_utc, ended_utc, status, pid, host_id,"
                    " build_id, model_id, scenario_id, threads, isa, kv_type, record_tokens, engine,"
                    " engine_version, import_id) VALUES (?,?,?,'complete',0,?,?,?,?,?,?,?,0,?,?,?)",
                    "tttiiIiitttti", uuid, when, when, host, build, model, c->scenario_id,
                    get_i64(r, "n_threads", 0), get_or(r, "backends", ""), kv, engine,
                    ver[0] ? ver : NULL, c->import_id) ||
        tb_peer_sql(c->db, &run, "SELECT id FROM runs WHERE uuid = ?", "t", uuid))
        return sql_fail(c, "run");
    /* the file's path is in imports; a tag would differ between two imports of one file */
    if (tb_peer_sql(c->db, NULL, "INSERT INTO run_tags (run_id, key, value) VALUES (?, 'import.format', ?)",
                    "it", run, tb_peer_fmt_name(c->fmt)))
        return sql_fail(c, "tags");
    const kind_t k = row_kind(np, ng);
    char label[96];
    if (!strcmp(k.kind, "prefill")) snprintf(label, sizeof label, "pp%lld", (long long)np);
    else if (!strcmp(k.kind, "decode")) snprintf(label, sizeof label, "tg%lld", (long long)ng);
    else snprintf(label, sizeof label, "pp%lld+tg%lld", (long long)np, (long long)ng);
    if (nd > 0) snprintf(label + strlen(label), sizeof label - strlen(label), "@d%lld", (long long)nd);
    const int n_reps = r->n_ts > 0 ? r->n_ts : r->n_ns > 0 ? r->n_ns : 0;
    char *params = row_params(r, k.kind, engine, n_reps);
    if (!params) { fprintf(stderr, "ternbench import: out of memory\n"); return 1; }
    int rc = tb_peer_sql(c->db, NULL, "INSERT INTO tests (run_id, section, kind, label, params, status,"
                         " thermal_state) VALUES (?, 'import', ?, ?, ?, 'complete', 'unknown')", "ittt",
                         run, k.kind, label, params);
    free(params);
    if (rc || tb_peer_sql(c->db, &test, "SELECT max(id) FROM tests WHERE run_id = ?", "i", run))
        return sql_fail(c, "test");
    if (add_measurements(c, r, test, k, np + ng)) return 1;
    c->n_added++;
    return 0;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (size_t k; b && (k = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) { free(b); b = NULL; }
            b = nb;
        }
    }
    if (ferror(f)) { free(b); b = NULL; }
    fclose(f);
    if (b) b[n] = '\0';
    *len = n;
    return b;
}

static int usage(void) {
    fprintf(stderr, "usage: ternbench import FILE [--format llama-bench-json|llama-bench-jsonl|"
                    "llama-bench-sql|llama-bench-csv|llama-bench-md|mlx-lm] [--db PATH] [--model NAME]\n");
    return 2;
}

int cmd_import(int argc, char **argv) {
    const char *path = NULL, *fmt_name = NULL, *db = tb_store_default_path(), *model = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc) fmt_name = argv[++i];
        else if (!strcmp(argv[i], "--db") && i + 1 < argc) db = argv[++i];
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else { fprintf(stderr, "ternbench import: unexpected argument '%s'\n", argv[i]); return usage(); }
    }
    if (!path) return usage();
    tb_peer_fmt_t fmt = TB_PEER_FMT_NONE;
    if (fmt_name && (fmt = tb_peer_fmt_from_name(fmt_name)) == TB_PEER_FMT_NONE) {
        fprintf(stderr, "ternbench import: --format %s: unknown format\n", fmt_name);
        return usage();
    }
    size_t len;
    char *text = read_file(path, &len);
    if (!text) { fprintf(stderr, "ternbench import: %s: %s\n", path, strerror(errno)); return 2; }
    if (memchr(text, '\0', len)) {
        fprintf(stderr, "ternbench import: %s: a NUL byte: not a text file\n", path);
        free(text);
        return 2;
    }
    if (fmt == TB_PEER_FMT_NONE && (fmt = tb_peer_detect(text, len)) == TB_PEER_FMT_NONE) {
        fprintf(stderr, "ternbench import: %s:1: cannot tell the format; give --format\n", path);
        free(text);
        return 2;
    }
    char err[512], hash[65];
    tb_sha256_hex(text, len, hash);
    tb_peer_rows_t rows = {0};
    if (tb_peer_parse(fmt, text, len, &rows, err, sizeof err)) {
        fprintf(stderr, "ternbench import: %s:%s (%s); nothing imported\n", path, err, tb_peer_fmt_name(fmt));
        tb_peer_rows_free(&rows);
        free(text);
        return 2;
    }
    free(text);
    tb_store_t *s;
    if (tb_store_open(db, &s, NULL) != TB_OK) {
        fprintf(stderr, "ternbench import: %s\n", tb_last_error());
        tb_peer_rows_free(&rows);
        return 1;
    }
    import_ctx c = {.db = tb_store_db(s), .fmt = fmt, .path = path, .file_hash = hash, .model_name = model};
    tb_peer_utc_now(c.utc);
    int status = 0;
    int64_t prev;
    if (tb_store_tx_begin(s) != TB_OK) {
        fprintf(stderr, "ternbench import: %s\n", tb_last_error());
        status = 1;
        goto out;
    }
    if (tb_peer_sql(c.db, &prev, "SELECT id FROM imports WHERE content_hash = ?", "t", hash)) {
        status = sql_fail(&c, "imports");
    } else if (prev >= 0) {
        printf("%s: already imported (import %lld): nothing added\n", path, (long long)prev);
    } else {
        char scen[80], norm[512];
        snprintf(scen, sizeof scen, "peer:import:%s", hash);
        snprintf(norm, sizeof norm, "import\nformat = %s\nsha256 = %s\nrows = %d\n", tb_peer_fmt_name(fmt),
                 hash, rows.n);
        char name[64];
        snprintf(name, sizeof name, "import:%s", tb_peer_fmt_name(fmt));
        if (tb_peer_sql(c.db, NULL, "INSERT INTO imports (content_hash, format, source_path, file_bytes,"
                        " n_rows, n_runs, imported_utc) VALUES (?,?,?,?,?,0,?)", "tttiit", hash,
                        tb_peer_fmt_name(fmt), path, (int64_t)len, (int64_t)rows.n, c.utc) ||
            tb_peer_sql(c.db, &c.import_id, "SELECT id FROM imports WHERE content_hash = ?", "t", hash) ||
            tb_peer_sql(c.db, NULL, "INSERT OR IGNORE INTO scenarios (hash, name, source_path, normalized)"
                        " VALUES (?,?,?,?)", "tttt", scen, name, path, norm) ||
            tb_peer_sql(c.db, &c.scenario_id, "SELECT id FROM scenarios WHERE hash = ?", "t", scen))
            status = sql_fail(&c, "imports");
        for (int i = 0; i < rows.n && !status; i++) status = import_row(&c, &rows.v[i], i);
        if (!status && tb_peer_sql(c.db, NULL, "UPDATE imports SET n_runs = ? WHERE id = ?", "ii",
                                   (int64_t)c.n_added, c.import_id))
            status = sql_fail(&c, "imports");
        if (!status)
            printf("%s: %d run%s of %s imported (%s), %d already present\n", path, c.n_added,
                   c.n_added == 1 ? "" : "s", tb_peer_fmt_engine(fmt), tb_peer_fmt_name(fmt), c.n_present);
    }
    if (status) tb_store_tx_rollback(s);
    else if (tb_store_tx_commit(s) != TB_OK) {
        fprintf(stderr, "ternbench import: %s\n", tb_last_error());
        status = 1;
    }
out:
    tb_store_close(s);
    tb_peer_rows_free(&rows);
    return status;
}
