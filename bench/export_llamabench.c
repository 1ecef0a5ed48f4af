/*
 * export_llamabench.c — ternbench export --format llama-bench-json|llama-bench-sql
 *
 * Every prefill, decode and generate test of the selected runs becomes one
 * row of llama-bench's schema (its field names, order and units: times in ns,
 * rates in tokens/s, avg/stddev over the repetitions as llama-bench computes
 * them), so tools made for llama-bench output (compare-llama-bench.py,
 * spreadsheets) read ternbench's runs:
 *   prefill  -> n_prompt = prompt_tokens, n_gen = 0     (prefill_ms, prefill_tok_per_s)
 *   decode   -> n_gen = tokens, n_depth = depth          (decode_ms, decode_tok_per_s)
 *   generate -> n_prompt + n_gen ("pp+tg")               (e2e_ms; t/s = (P+G) / e2e time)
 * A run imported from llama-bench gives back its own fields (kept in the
 * test's params under "peer"). One field is added after llama-bench's:
 * "engine" (ternbench, llama.cpp, mlx-lm); JSON also keeps "samples_ns" and
 * "samples_ts" like llama-bench -o json. SQL is llama-bench -o sql's layout
 * (CREATE TABLE llama_bench, one INSERT a row, values quoted, ' doubled).
 */
#include "peers.h"

#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tb_peer_row_t row;            /* fields by llama-bench name */
    int64_t ns[1024];             /* (n,) */
    double ts[1024];              /* (n,) */
    int n;
} lb_row_t;

static const char *col(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

static int set_i(tb_peer_row_t *r, const char *k, int64_t v) {
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    return tb_peer_set(r, k, b);
}

static int set_d(tb_peer_row_t *r, const char *k, double v) {
    char b[64];
    snprintf(b, sizeof b, "%.6f", v);
    return tb_peer_set(r, k, b);
}

static int64_t jint(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* The test's repetitions: ms metric -> samples_ns, tok/s metric -> samples_ts
 * (derived from the time when the tok/s metric is absent, and the other way). */
static int load_samples(sqlite3 *db, int64_t test_id, const char *ms, const char *ts,
                        int64_t n_tokens, lb_row_t *o) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT repetition, metric, value FROM measurements WHERE test_id = ?"
                           " AND repetition >= 0 AND metric IN (?, ?) ORDER BY repetition", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, test_id);
    sqlite3_bind_text(st, 2, ms, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, ts, -1, SQLITE_STATIC);
    int have_ns[1024] = {0}, have_ts[1024] = {0}, rc;
    o->n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int rep = sqlite3_column_int(st, 0);
        if (rep < 0 || rep >= 1024) continue;
        double v = sqlite3_column_double(st, 2);
        if (!strcmp(col(st, 1), ms)) { o->ns[rep] = llround(v * 1e6); have_ns[rep] = 1; }
        else { o->ts[rep] = v; have_ts[rep] = 1; }
        if (rep + 1 > o->n) o->n = rep + 1;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return -1;
    int k = 0;   /* keep the repetitions that have a value, in order */
    for (int i = 0; i < o->n; i++) {
        if (!have_ns[i] && !have_ts[i]) continue;
        if (!have_ns[i]) o->ns[i] = o->ts[i] > 0 ? llround(1e9 * (double)n_tokens / o->ts[i]) : 0;
        if (!have_ts[i]) o->ts[i] = o->ns[i] > 0 ? 1e9 * (double)n_tokens / (double)o->ns[i] : 0;
        o->ns[k] = o->ns[i];
        o->ts[k++] = o->ts[i];
    }
    o->n = k;
    return 0;
}

/* avg / stddev of the samples as llama-bench computes them (integer ns). */
static int fill_stats(lb_row_t *o) {
    tb_peer_row_t *r = &o->row;
    if (o->n == 0) return 0;
    double s = 0, ss = 0, st = 0, sst = 0;
    for (int i = 0; i < o->n; i++) { s += (double)o->ns[i]; st += o->ts[i]; }
    const double m = s / o->n, mt = st / o->n;
    for (int i = 0; i < o->n; i++) {
        ss += ((double)o->ns[i] - m) * ((double)o->ns[i] - m);
        sst += (o->ts[i] - mt) * (o->ts[i] - mt);
    }
    const double sd = o->n > 1 ? sqrt(ss / (o->n - 1)) : 0, sdt = o->n > 1 ? sqrt(sst / (o->n - 1)) : 0;
    int rc = 0;
    if (!tb_peer_get(r, "avg_ns")) rc |= set_i(r, "avg_ns", (int64_t)m);
    if (!tb_peer_get(r, "stddev_ns")) rc |= set_i(r, "stddev_ns", (int64_t)sd);
    if (!tb_peer_get(r, "avg_ts")) rc |= set_d(r, "avg_ts", mt);
    if (!tb_peer_get(r, "stddev_ts")) rc |= set_d(r, "stddev_ts", sdt);
    return rc;
}

/* A summary (repetition -1) value, for rows without repetitions. */
static int summary(sqlite3 *db, int64_t test_id, const char *metric, double *v) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT value FROM measurements WHERE test_id = ? AND repetition = -1"
                           " AND metric = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, test_id);
    sqlite3_bind_text(st, 2, metric, -1, SQLITE_STATIC);
    int ok = sqlite3_step(st) == SQLITE_ROW;
    if (ok) *v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return ok;
}

static void print_json_row(const lb_row_t *o, int first) {
    const tb_peer_row_t *r = &o->row;
    json_t *j = json_object();
    for (int i = 0; tb_llamabench_fields[i]; i++) {
        const char *k = tb_llamabench_fields[i], *v = tb_peer_get(r, k);
        if (!v) continue;
        switch (tb_llamabench_field_type(k)) {
        case TB_LB_INT: json_object_set_new(j, k, json_integer(strtoll(v, NULL, 10))); break;
        case TB_LB_BOOL: json_object_set_new(j, k, json_boolean(strcmp(v, "0") && strcmp(v, "false"))); break;
        case TB_LB_REAL: json_object_set_new(j, k, json_real(strtod(v, NULL))); break;
        default: json_object_set_new(j, k, json_string(v)); break;
        }
    }
    for (int i = 0; i < r->n; i++)   /* fields llama-bench does not have (engine, mlx-lm's) */
        if (!json_object_get(j, r->key[i])) json_object_set_new(j, r->key[i], json_string(r->val[i]));
    json_t *ns = json_array(), *ts = json_array();
    for (int i = 0; i < o->n; i++) {
        json_array_append_new(ns, json_integer(o->ns[i]));
        json_array_append_new(ts, json_real(o->ts[i]));
    }
    json_object_set_new(j, "samples_ns", ns);
    json_object_set_new(j, "samples_ts", ts);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(j);
    if (!s) return;
    /* indent the object by two spaces inside the array, as llama-bench does */
    printf("%s  ", first ? "" : ",\n");
    for (const char *p = s; *p; p++) {
        putchar(*p);
        if (*p == '\n') fputs("  ", stdout);
    }
    free(s);
}

static void sql_quote(const char *v) {
    putchar('\'');
    for (; *v; v++) {
        if (*v == '\'') putchar('\'');
        putchar(*v);
    }
    putchar('\'');
}

static void print_sql_header(void) {
    printf("CREATE TABLE IF NOT EXISTS llama_bench (\n");
    for (int i = 0; tb_llamabench_fields[i]; i++) {
        tb_lb_type_t t = tb_llamabench_field_type(tb_llamabench_fields[i]);
        printf("  %s %s,\n", tb_llamabench_fields[i], t == TB_LB_STR ? "TEXT" : t == TB_LB_REAL ? "REAL" : "INTEGER");
    }
    printf("  engine TEXT\n);\n\n");
}

static void print_sql_row(const tb_peer_row_t *r) {
    printf("INSERT INTO llama_bench (");
    int n = 0;
    for (int i = 0; tb_llamabench_fields[i]; i++)
        if (tb_peer_get(r, tb_llamabench_fields[i])) printf("%s%s", n++ ? ", " : "", tb_llamabench_fields[i]);
    printf("%sengine) VALUES (", n ? ", " : "");
    for (int i = 0; tb_llamabench_fields[i]; i++) {
        const char *v = tb_peer_get(r, tb_llamabench_fields[i]);
        if (!v) continue;
        sql_quote(v);
        fputs(", ", stdout);
    }
    sql_quote(tb_peer_get(r, "engine"));
    printf(");\n");
}

static void row_clear(tb_peer_row_t *r) {
    for (int k = 0; k < r->n; k++) { free(r->key[k]); free(r->val[k]); }
    memset(r, 0, sizeof *r);
}

/* Fields of a ternbench-measured run (what llama-bench would call them). */
static int native_fields(tb_peer_row_t *r, sqlite3_stmt *st, json_t *params) {
    char type[96];
    snprintf(type, sizeof type, "%s %s", col(st, 13), col(st, 14));
    int rc = tb_peer_set(r, "build_commit", col(st, 8)) | tb_peer_set(r, "build_number", "0") |
             tb_peer_set(r, "cpu_info", col(st, 10)) | tb_peer_set(r, "gpu_info", "") |
             tb_peer_set(r, "backends", "CPU") | tb_peer_set(r, "model_filename", col(st, 11)) |
             tb_peer_set(r, "model_type", type) | tb_peer_set(r, "model_size", col(st, 15)) |
             tb_peer_set(r, "model_n_params", col(st, 16)) |
             set_i(r, "n_batch", jint(params, "n_batch")) | set_i(r, "n_ubatch", jint(params, "n_batch")) |
             tb_peer_set(r, "n_threads", col(st, 4)) | tb_peer_set(r, "type_k", col(st, 6)) |
             tb_peer_set(r, "type_v", col(st, 6)) | tb_peer_set(r, "n_gpu_layers", "0") |
             tb_peer_set(r, "test_time", col(st, 7));
    const char *kind = col(st, 18);
    int64_t np = 0, ng = 0, nd = 0;
    if (!strcmp(kind, "prefill")) np = jint(params, "prompt_tokens");
    else if (!strcmp(kind, "decode")) { ng = jint(params, "tokens"); nd = jint(params, "depth"); }
    else { np = jint(params, "prompt_tokens"); ng = jint(params, "tokens"); }
    return rc | set_i(r, "n_prompt", np) | set_i(r, "n_gen", ng) | set_i(r, "n_depth", nd);
}

int tb_export_llamabench(sqlite3 *db, int sql, int all_runs) {
    sqlite3_stmt *st;
    const char *q =
        "SELECT r.id, r.uuid, r.engine, COALESCE(r.engine_version, ''), r.threads, r.isa, r.kv_type,"
        " r.started_utc, b.git_commit, b.version, h.cpu_brand, COALESCE(md.path, ''),"
        " COALESCE(md.name, ''), COALESCE(md.arch, ''), COALESCE(md.main_type, ''),"
        " COALESCE(md.file_bytes, 0), COALESCE(md.n_params, 0), t.id, t.kind, t.params"
        " FROM tests t JOIN runs r ON r.id = t.run_id JOIN builds b ON b.id = r.build_id"
        " JOIN hosts h ON h.id = r.host_id LEFT JOIN models md ON md.id = r.model_id"
        " WHERE t.kind IN ('prefill', 'decode', 'generate')"
        " AND (?1 = 1 OR r.id IN (SELECT id FROM temp.sel)) ORDER BY r.id, t.id";
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "ternbench export: %s\n", sqlite3_errmsg(db));
        return 1;
    }
    sqlite3_bind_int(st, 1, all_runs);
    lb_row_t *o = calloc(1, sizeof *o);
    if (!o) { sqlite3_finalize(st); fprintf(stderr, "ternbench export: out of memory\n"); return 1; }
    if (sql) print_sql_header();
    else printf("[\n");
    int rc, n = 0, status = 0;
    while (!status && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_error_t je;
        json_t *params = json_loads(col(st, 19), 0, &je);
        json_t *peer = json_object_get(params, "peer");
        const char *kind = col(st, 18);
        row_clear(&o->row);
        int bad = 0;
        if (json_is_object(peer)) {
            const char *k;
            json_t *v;
            json_object_foreach(peer, k, v)
                if (json_is_string(v)) bad |= tb_peer_set(&o->row, k, json_string_value(v));
        } else {
            bad |= native_fields(&o->row, st, params);
        }
        bad |= tb_peer_set(&o->row, "engine", col(st, 2));
        const int64_t ntok = strtoll(tb_peer_get(&o->row, "n_prompt") ? tb_peer_get(&o->row, "n_prompt") : "0", NULL, 10) +
                             strtoll(tb_peer_get(&o->row, "n_gen") ? tb_peer_get(&o->row, "n_gen") : "0", NULL, 10);
        const char *ms = !strcmp(kind, "prefill") ? "prefill_ms" : !strcmp(kind, "decode") ? "decode_ms" : "e2e_ms";
        const char *ts = !strcmp(kind, "prefill") ? "prefill_tok_per_s" : !strcmp(kind, "decode")
                       ? "decode_tok_per_s" : "e2e_tok_per_s";
        if (load_samples(db, sqlite3_column_int64(st, 17), ms, ts, ntok, o)) bad = 1;
        if (!bad && o->n == 0) {   /* only summaries (an import without samples) */
            char m[64];
            double v;
            snprintf(m, sizeof m, "%s:mean", ts);
            if (!tb_peer_get(&o->row, "avg_ts") && (summary(db, sqlite3_column_int64(st, 17), m, &v) ||
                                                     summary(db, sqlite3_column_int64(st, 17), ts, &v)))
                bad |= set_d(&o->row, "avg_ts", v);
        }
        if (!bad) bad = fill_stats(o);
        json_decref(params);
        if (bad) {
            fprintf(stderr, "ternbench export: run %lld: cannot build its llama-bench row\n",
                    (long long)sqlite3_column_int64(st, 0));
            status = 1;
            break;
        }
        if (sql) print_sql_row(&o->row);
        else print_json_row(o, n == 0);
        n++;
    }
    if (!status && rc != SQLITE_DONE) {
        fprintf(stderr, "ternbench export: %s\n", sqlite3_errmsg(db));
        status = 1;
    }
    if (!sql) printf("%s]\n", n ? "\n" : "");
    row_clear(&o->row);
    free(o);
    sqlite3_finalize(st);
    return status;
}
