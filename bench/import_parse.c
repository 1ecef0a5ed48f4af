/*
 * import_parse.c — peers' benchmark output into rows (see peers.h).
 *
 * llama-bench: json (one array of objects), jsonl (one object a line), sql
 * (CREATE TABLE + one INSERT a line), csv (header + one record a row) and md
 * (its table, display names, "t/s" as "mean ± stddev", footer "build: C (N)").
 * mlx-lm: `mlx_lm.benchmark` ("Timing with prompt_tokens=P, generation_tokens=G,
 * batch_size=B." then "Trial i:  prompt_tps=X, generation_tps=Y, peak_memory=Z")
 * and `mlx_lm.generate --verbose` ("Prompt: P tokens, X tokens-per-sec",
 * "Generation: G tokens, Y tokens-per-sec", "Peak memory: Z GB").
 * JSON goes through jansson; the rest is parsed here. Every row is checked
 * (counts non-negative integers, rates positive) and a bad one is reported as
 * "LINE: reason".
 */
#include "peers.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fmt_names[TB_PEER_FMT_COUNT] = {
    "llama-bench-json", "llama-bench-jsonl", "llama-bench-sql",
    "llama-bench-csv", "llama-bench-md", "mlx-lm",
};

const char *tb_peer_fmt_name(tb_peer_fmt_t f) {
    return f >= 0 && f < TB_PEER_FMT_COUNT ? fmt_names[f] : "unknown";
}

tb_peer_fmt_t tb_peer_fmt_from_name(const char *name) {
    for (int i = 0; i < TB_PEER_FMT_COUNT; i++)
        if (!strcmp(fmt_names[i], name)) return (tb_peer_fmt_t)i;
    return TB_PEER_FMT_NONE;
}

const char *tb_peer_fmt_engine(tb_peer_fmt_t f) { return f == TB_PEER_FMT_MLX ? "mlx-lm" : "llama.cpp"; }

const char *const tb_llamabench_fields[] = {
    "build_commit", "build_number", "cpu_info", "gpu_info", "backends",
    "model_filename", "model_type", "model_size", "model_n_params", "n_batch",
    "n_ubatch", "n_threads", "cpu_mask", "cpu_strict", "poll",
    "type_k", "type_v", "n_gpu_layers", "n_cpu_moe", "split_mode",
    "main_gpu", "no_kv_offload", "flash_attn", "devices", "tensor_split",
    "tensor_buft_overrides", "load_mode", "embeddings",
    "no_op_offload", "no_host", "fit_target", "fit_min_ctx",
    "n_prompt", "n_gen", "n_depth",
    "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", NULL,
};

tb_lb_type_t tb_llamabench_field_type(const char *f) {
    static const char *const ints[] = {
        "build_number", "n_batch", "n_ubatch", "n_threads", "poll", "model_size",
        "model_n_params", "n_gpu_layers", "main_gpu", "n_prompt", "n_gen", "n_depth",
        "avg_ns", "stddev_ns", "no_op_offload", "n_cpu_moe", "fit_target", "fit_min_ctx",
        "flash_attn", NULL};
    static const char *const bools[] = {"no_kv_offload", "cpu_strict", "embeddings", "no_host", NULL};
    for (int i = 0; ints[i]; i++) if (!strcmp(f, ints[i])) return TB_LB_INT;
    for (int i = 0; bools[i]; i++) if (!strcmp(f, bools[i])) return TB_LB_BOOL;
    if (!strcmp(f, "avg_ts") || !strcmp(f, "stddev_ts")) return TB_LB_REAL;
    return TB_LB_STR;
}

/* ===================================================================== */
/* Rows                                                                   */
/* ===================================================================== */

const char *tb_peer_get(const tb_peer_row_t *r, const char *key) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->key[i], key)) return r->val[i];
    return NULL;
}

int tb_peer_set(tb_peer_row_t *r, const char *key, const char *val) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->key[i], key)) {
            char *v = strdup(val);
            if (!v) return -1;
            free(r->val[i]);
            r->val[i] = v;
            return 0;
        }
    if (r->n == TB_PEER_MAX_FIELDS) return -1;
    char *k = strdup(key), *v = strdup(val);
    if (!k || !v) { free(k); free(v); return -1; }
    r->key[r->n] = k;
    r->val[r->n++] = v;
    return 0;
}

static tb_peer_row_t *row_new(tb_peer_rows_t *rows, int line) {
    if (rows->n == rows->cap) {
        int cap = rows->cap ? 2 * rows->cap : 16;
        tb_peer_row_t *v = realloc(rows->v, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        rows->v = v;
        rows->cap = cap;
    }
    tb_peer_row_t *r = &rows->v[rows->n++];
    memset(r, 0, sizeof *r);
    r->line = line;
    r->n_ns = r->n_ts = -1;
    return r;
}

void tb_peer_rows_free(tb_peer_rows_t *rows) {
    for (int i = 0; i < rows->n; i++) {
        tb_peer_row_t *r = &rows->v[i];
        for (int k = 0; k < r->n; k++) { free(r->key[k]); free(r->val[k]); }
        free(r->samples_ns);
        free(r->samples_ts);
    }
    free(rows->v);
    memset(rows, 0, sizeof *rows);
}

static int fail(char *err, size_t cap, int line, const char *fmt, ...) {
    int n = snprintf(err, cap, "%d: ", line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < cap) vsnprintf(err + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

#define NOMEM(line) fail(err, cap, (line), "out of memory")

/* Integer field: absent is allowed (def), else a whole number in [lo, hi]. */
static int get_int(const tb_peer_row_t *r, const char *key, int64_t lo, int64_t hi, int64_t def,
                   int64_t *out, char *err, size_t cap) {
    const char *v = tb_peer_get(r, key);
    *out = def;
    if (!v) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        return fail(err, cap, r->line, "%s: '%s' is not an integer in %lld..%lld", key, v,
                    (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

static int get_real(const tb_peer_row_t *r, const char *key, double *out, int *have, char *err,
                    size_t cap) {
    const char *v = tb_peer_get(r, key);
    *have = 0;
    if (!v) return 0;
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x) || x < 0)
        return fail(err, cap, r->line, "%s: '%s' is not a non-negative number", key, v);
    *out = x;
    *have = 1;
    return 0;
}

/* What every row must satisfy before it can become a run. */
static int check_row(const tb_peer_row_t *r, char *err, size_t cap) {
    int64_t np, ng, nd, x;
    const int64_t BIG = (int64_t)1 << 40;
    if (get_int(r, "n_prompt", 0, BIG, -1, &np, err, cap) ||
        get_int(r, "n_gen", 0, BIG, -1, &ng, err, cap) ||
        get_int(r, "n_depth", 0, BIG, 0, &nd, err, cap) ||
        get_int(r, "n_threads", 0, 1 << 20, 0, &x, err, cap) ||
        get_int(r, "n_batch", 0, BIG, 0, &x, err, cap) ||
        get_int(r, "n_ubatch", 0, BIG, 0, &x, err, cap) ||
        get_int(r, "build_number", -1, BIG, 0, &x, err, cap) ||
        get_int(r, "model_size", 0, (int64_t)1 << 60, 0, &x, err, cap) ||
        get_int(r, "model_n_params", 0, (int64_t)1 << 60, 0, &x, err, cap) ||
        get_int(r, "avg_ns", 0, INT64_MAX, 0, &x, err, cap) ||
        get_int(r, "stddev_ns", 0, INT64_MAX, 0, &x, err, cap))
        return -1;
    if (np < 0 || ng < 0) return fail(err, cap, r->line, "the row lacks n_prompt or n_gen");
    if (np + ng == 0) return fail(err, cap, r->line, "n_prompt and n_gen are both 0");
    double d;
    int have_avg, have;
    if (get_real(r, "avg_ts", &d, &have_avg, err, cap) || get_real(r, "stddev_ts", &d, &have, err, cap))
        return -1;
    if (r->n_ns >= 0 && r->n_ts >= 0 && r->n_ns != r->n_ts)
        return fail(err, cap, r->line, "samples_ns has %d values, samples_ts %d", r->n_ns, r->n_ts);
    for (int i = 0; i < r->n_ns; i++)
        if (r->samples_ns[i] <= 0) return fail(err, cap, r->line, "samples_ns[%d] is not positive", i);
    for (int i = 0; i < r->n_ts; i++)
        if (!(r->samples_ts[i] > 0) || !isfinite(r->samples_ts[i]))
            return fail(err, cap, r->line, "samples_ts[%d] is not a positive number", i);
    if (!have_avg && r->n_ts <= 0 && r->n_ns <= 0)
        return fail(err, cap, r->line, "the row has no speed (avg_ts or samples)");
    return 0;
}

/* ===================================================================== */
/* JSON and JSONL (jansson)                                               */
/* ===================================================================== */

static int json_samples(json_t *a, tb_peer_row_t *r, int is_ns, char *err, size_t cap) {
    if (!json_is_array(a))
        return fail(err, cap, r->line, "%s is not an array", is_ns ? "samples_ns" : "samples_ts");
    size_t n = json_array_size(a);
    void *p = calloc(n ? n : 1, is_ns ? sizeof(int64_t) : sizeof(double));
    if (!p) return NOMEM(r->line);
    if (is_ns) { r->samples_ns = p; r->n_ns = (int)n; } else { r->samples_ts = p; r->n_ts = (int)n; }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(a, i);
        if (is_ns) {
            if (!json_is_integer(e)) return fail(err, cap, r->line, "samples_ns[%zu] is not an integer", i);
            r->samples_ns[i] = (int64_t)json_integer_value(e);
        } else {
            if (!json_is_number(e)) return fail(err, cap, r->line, "samples_ts[%zu] is not a number", i);
            r->samples_ts[i] = json_number_value(e);
        }
    }
    return 0;
}

static int json_row(json_t *o, tb_peer_rows_t *rows, int line, char *err, size_t cap) {
    if (!json_is_object(o)) return fail(err, cap, line, "expected an object (one llama-bench row)");
    tb_peer_row_t *r = row_new(rows, line);
    if (!r) return NOMEM(line);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        char buf[64];
        const char *text = buf;
        if (!strcmp(k, "samples_ns") || !strcmp(k, "samples_ts")) {
            if (json_samples(v, r, !strcmp(k, "samples_ns"), err, cap)) return -1;
            continue;
        }
        if (json_is_string(v)) text = json_string_value(v);
        else if (json_is_integer(v)) snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        else if (json_is_real(v)) snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        else if (json_is_boolean(v)) text = json_is_true(v) ? "1" : "0";
        else if (json_is_null(v)) continue;
        else return fail(err, cap, line, "field %s: unexpected array or object", k);
        if (tb_peer_set(r, k, text)) return fail(err, cap, line, "too many fields");
    }
    return check_row(r, err, cap);
}

/* Line of each top-level array element's first character, in order: (n,) */
static int element_lines(const char *t, size_t len, int *lines, int max) {
    int depth = 0, line = 1, n = 0, in_str = 0, expect = 0;
    for (size_t i = 0; i < len; i++) {
        const char c = t[i];
        if (c == '\n') line++;
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
            continue;
        }
        if (isspace((unsigned char)c)) continue;
        if (depth == 1 && expect && c != ']') {
            if (n < max) lines[n++] = line;
            expect = 0;
        }
        if (c == '"') in_str = 1;
        else if (c == '[' || c == '{') { depth++; if (depth == 1) expect = 1; }
        else if (c == ']' || c == '}') depth--;
        else if (c == ',' && depth == 1) expect = 1;
    }
    return n;
}

static int parse_json(const char *text, size_t len, tb_peer_rows_t *rows, char *err, size_t cap) {
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return fail(err, cap, je.line > 0 ? je.line : 1, "invalid JSON: %s", je.text);
    int rc = 0;
    if (!json_is_array(root)) {
        rc = fail(err, cap, 1, "expected a JSON array of llama-bench rows");
    } else {
        size_t n = json_array_size(root);
        int *lines = calloc(n ? n : 1, sizeof *lines);
        if (!lines) rc = NOMEM(1);
        else {
            int nl = element_lines(text, len, lines, (int)n);
            for (size_t i = 0; i < n && !rc; i++)
                rc = json_row(json_array_get(root, i), rows, (int)i < nl ? lines[i] : 1, err, cap);
            free(lines);
        }
    }
    json_decref(root);
    return rc;
}

static int parse_jsonl(const char *text, size_t len, tb_peer_rows_t *rows, char *err, size_t cap) {
    int line = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        line++;
        size_t a = i, b = j;
        while (a < b && isspace((unsigned char)text[a])) a++;
        if (a < b) {
            json_error_t je;
            json_t *o = json_loadb(text + a, b - a, JSON_REJECT_DUPLICATES, &je);
            if (!o) return fail(err, cap, line, "invalid JSON: %s", je.text);
            int rc = json_row(o, rows, line, err, cap);
            json_decref(o);
            if (rc) return rc;
        }
        i = j + 1;
    }
    return 0;
}

/* ===================================================================== */
/* CSV (RFC 4180 quoting, as llama-bench writes it)                       */
/* ===================================================================== */

/* One record from *p: fields into f (malloc'd, caller frees), count in *nf.
 * *line advances over the newlines consumed. 0, 1 at end of text, -1 on error. */
static int csv_record(const char **p, const char *end, char **f, int max, int *nf, int *line,
                      char *err, size_t cap) {
    const char *s = *p;
    *nf = 0;
    if (s >= end) return 1;
    int start_line = *line;
    for (;;) {
        size_t bcap = 64, bn = 0;
        char *b = malloc(bcap);
        if (!b) return NOMEM(start_line);
        int quoted = s < end && *s == '"';
        if (quoted) s++;
        for (;;) {
            if (s >= end) {
                if (quoted) { free(b); return fail(err, cap, start_line, "unterminated quoted field"); }
                break;
            }
            char c = *s;
            if (quoted && c == '"') {
                if (s + 1 < end && s[1] == '"') { s += 2; c = '"'; }
                else { s++; quoted = 0; if (s < end && *s != ',' && *s != '\n' && *s != '\r') {
                        free(b); return fail(err, cap, *line, "text after a closing quote"); }
                       continue; }
            } else if (!quoted && (c == ',' || c == '\n' || c == '\r')) {
                break;
            } else {
                if (c == '\n') (*line)++;
                s++;
            }
            if (bn + 2 > bcap) {
                char *nb = realloc(b, bcap *= 2);
                if (!nb) { free(b); return NOMEM(start_line); }
                b = nb;
            }
            b[bn++] = c;
        }
        b[bn] = '\0';
        if (*nf == max) { free(b); return fail(err, cap, start_line, "more than %d fields", max); }
        f[(*nf)++] = b;
        if (s < end && *s == ',') { s++; continue; }
        if (s < end && *s == '\r') s++;
        if (s < end && *s == '\n') { s++; (*line)++; }
        break;
    }
    *p = s;
    return 0;
}

static void free_fields(char **f, int n) { for (int i = 0; i < n; i++) free(f[i]); }

static int parse_csv(const char *text, size_t len, tb_peer_rows_t *rows, char *err, size_t cap) {
    const char *p = text, *end = text + len;
    char *head[TB_PEER_MAX_FIELDS], *f[TB_PEER_MAX_FIELDS];
    int nh, nf, line = 1, rc;
    if ((rc = csv_record(&p, end, head, TB_PEER_MAX_FIELDS, &nh, &line, err, cap)) != 0) {
        free_fields(head, nh);
        return rc > 0 ? fail(err, cap, 1, "empty file") : -1;
    }
    rc = 0;
    while (!rc) {
        int at = line;
        int r = csv_record(&p, end, f, TB_PEER_MAX_FIELDS, &nf, &line, err, cap);
        if (r == 1) break;
        if (r < 0) { free_fields(f, nf); rc = -1; break; }
        if (nf == 1 && !f[0][0]) { free_fields(f, nf); continue; }   /* blank line */
        if (nf != nh) {
            rc = fail(err, cap, at, "%d fields, the header has %d", nf, nh);
        } else {
            tb_peer_row_t *row = row_new(rows, at);
            if (!row) rc = NOMEM(at);
            for (int i = 0; i < nf && !rc; i++)
                if (tb_peer_set(row, head[i], f[i])) rc = NOMEM(at);
            if (!rc) rc = check_row(row, err, cap);
        }
        free_fields(f, nf);
    }
    free_fields(head, nh);
    return rc;
}

/* ===================================================================== */
/* SQL (llama-bench -o sql: CREATE TABLE, then one INSERT a line)         */
/* ===================================================================== */

static const char *skip_ws(const char *s, const char *e) {
    while (s < e && isspace((unsigned char)*s)) s++;
    return s;
}

static int sql_insert(const char *s, const char *e, int line, tb_peer_rows_t *rows, char *err,
                      size_t cap) {
    static const char pre[] = "INSERT INTO llama_bench (";
    if ((size_t)(e - s) < sizeof pre - 1 || strncmp(s, pre, sizeof pre - 1))
        return fail(err, cap, line, "expected INSERT INTO llama_bench (...) VALUES (...);");
    s += sizeof pre - 1;
    char *names[TB_PEER_MAX_FIELDS];
    int nn = 0, rc = 0;
    while (s < e && *s != ')') {
        s = skip_ws(s, e);
        const char *a = s;
        while (s < e && (isalnum((unsigned char)*s) || *s == '_')) s++;
        if (s == a || nn == TB_PEER_MAX_FIELDS) { rc = fail(err, cap, line, "bad column list"); goto out; }
        if (!(names[nn] = strndup(a, (size_t)(s - a)))) { rc = NOMEM(line); goto out; }
        nn++;
        s = skip_ws(s, e);
        if (s < e && *s == ',') s++;
    }
    s = skip_ws(s + 1, e);
    if ((size_t)(e - s) < 8 || strncmp(s, "VALUES (", 8)) { rc = fail(err, cap, line, "expected VALUES ("); goto out; }
    s += 8;
    tb_peer_row_t *r = row_new(rows, line);
    if (!r) { rc = NOMEM(line); goto out; }
    int nv = 0;
    for (;;) {
        s = skip_ws(s, e);
        if (s < e && *s == ')') break;
        if (nv == nn) { rc = fail(err, cap, line, "more values than columns (%d)", nn); goto out; }
        char buf[4096];
        size_t bn = 0;
        if (s < e && *s == '\'') {
            s++;
            for (;;) {
                if (s >= e) { rc = fail(err, cap, line, "unterminated string"); goto out; }
                if (*s == '\'') {
                    if (s + 1 < e && s[1] == '\'') s++;
                    else break;
                }
                if (bn + 1 < sizeof buf) buf[bn++] = *s;
                s++;
            }
            s++;
        } else {
            while (s < e && *s != ',' && *s != ')' && !isspace((unsigned char)*s))
                if (bn + 1 < sizeof buf) buf[bn++] = *s++; else s++;
            if (bn == 0) { rc = fail(err, cap, line, "empty value"); goto out; }
        }
        buf[bn] = '\0';
        if (!(bn == 4 && !strcmp(buf, "NULL") && s[-1] != '\'') && tb_peer_set(r, names[nv], buf)) {
            rc = NOMEM(line); goto out;
        }
        nv++;
        s = skip_ws(s, e);
        if (s < e && *s == ',') s++;
    }
    if (nv != nn) { rc = fail(err, cap, line, "%d values for %d columns", nv, nn); goto out; }
    s = skip_ws(s + 1, e);
    if (s >= e || *s != ';' || skip_ws(s + 1, e) != e) { rc = fail(err, cap, line, "expected ');' at the end"); goto out; }
    rc = check_row(r, err, cap);
out:
    for (int i = 0; i < nn; i++) free(names[i]);
    return rc;
}

static int parse_sql(const char *text, size_t len, tb_peer_rows_t *rows, char *err, size_t cap) {
    int line = 0, in_create = 0;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        line++;
        const char *s = skip_ws(text + i, text + j), *e = text + j;
        while (e > s && isspace((unsigned char)e[-1])) e--;
        if (s == e) { /* blank */ }
        else if (in_create) { if (*s == ')' ) in_create = 0; }
        else if (!strncmp(s, "CREATE TABLE IF NOT EXISTS llama_bench (", 40)) in_create = 1;
        else if (sql_insert(s, e, line, rows, err, cap)) return -1;
        i = j + 1;
    }
    if (in_create) return fail(err, cap, line, "unterminated CREATE TABLE");
    return 0;
}

/* ===================================================================== */
/* Markdown (llama-bench -o md)                                           */
/* ===================================================================== */

/* Display name -> field name (llama-bench's markdown printer's renames). */
static const char *md_field(const char *disp) {
    static const char *const map[][2] = {
        {"ngl", "n_gpu_layers"}, {"sm", "split_mode"}, {"threads", "n_threads"},
        {"nkvo", "no_kv_offload"}, {"fa", "flash_attn"}, {"lm", "load_mode"},
        {"embd", "embeddings"}, {"nopo", "no_op_offload"}, {"noh", "no_host"},
        {"dev", "devices"}, {"ts", "tensor_split"}, {"ot", "tensor_buft_overrides"},
        {"fitt", "fit_target"}, {"fitc", "fit_min_ctx"}, {"model", "model_type"},
        {"backend", "backends"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(disp, map[i][0])) return map[i][1];
    return disp;
}

/* Cells of a '|' line, trimmed, into f (malloc'd). */
static int md_cells(const char *s, const char *e, char **f, int max) {
    int n = 0;
    if (s < e && *s == '|') s++;
    while (s < e && n < max) {
        const char *a = s;
        while (s < e && *s != '|') s++;
        if (s >= e) break;   /* text after the last '|' is not a cell */
        const char *b = s;
        while (a < b && isspace((unsigned char)*a)) a++;
        while (b > a && isspace((unsigned char)b[-1])) b--;
        if (!(f[n] = strndup(a, (size_t)(b - a)))) break;
        n++;
        s++;
    }
    return n;
}

/* "pp512", "tg128", "pp512+tg128", each optionally " @ d4096". */
static int md_test(tb_peer_row_t *r, const char *v, char *err, size_t cap) {
    long pp = 0, tg = 0, d = 0;
    int k = 0;
    if (sscanf(v, "pp%ld+tg%ld%n", &pp, &tg, &k) == 2) {}
    else if ((k = 0), sscanf(v, "pp%ld%n", &pp, &k) == 1) {}
    else if ((k = 0), sscanf(v, "tg%ld%n", &tg, &k) == 1) {}
    else return fail(err, cap, r->line, "test '%s' is not ppN, tgN or ppN+tgN", v);
    const char *rest = v + k;
    int k2 = 0;
    if (*rest && (sscanf(rest, " @ d%ld%n", &d, &k2) != 1 || rest[k2]))
        return fail(err, cap, r->line, "test '%s': expected ' @ dN' after the size", v);
    char b[3][32];
    snprintf(b[0], sizeof b[0], "%ld", pp);
    snprintf(b[1], sizeof b[1], "%ld", tg);
    snprintf(b[2], sizeof b[2], "%ld", d);
    if (tb_peer_set(r, "n_prompt", b[0]) || tb_peer_set(r, "n_gen", b[1]) || tb_peer_set(r, "n_depth", b[2]))
        return NOMEM(r->line);
    return 0;
}

/* "12.34 ± 0.56" (llama-bench's t/s), or a plain number. */
static int md_ts(tb_peer_row_t *r, const char *v, char *err, size_t cap) {
    char a[64] = "", b[64] = "";
    const char *pm = strstr(v, "\xc2\xb1");
    if (pm) {
        snprintf(a, sizeof a, "%.*s", (int)(pm - v), v);
        snprintf(b, sizeof b, "%s", pm + 2);
    } else {
        snprintf(a, sizeof a, "%s", v);
    }
    char *ta = a, *tb = b;
    while (isspace((unsigned char)*ta)) ta++;
    while (isspace((unsigned char)*tb)) tb++;
    for (char *q = ta + strlen(ta); q > ta && isspace((unsigned char)q[-1]);) *--q = '\0';
    if (!*ta) return fail(err, cap, r->line, "t/s cell is empty");
    if (tb_peer_set(r, "avg_ts", ta) || (*tb && tb_peer_set(r, "stddev_ts", tb))) return NOMEM(r->line);
    return 0;
}

/* "1.23 MiB" / "1.23 GiB" -> bytes; "12.34 M" / "1.23 B" -> count (rounded). */
static int md_scaled(tb_peer_row_t *r, const char *key, const char *v, char *err, size_t cap) {
    double x;
    char unit[8] = "";
    if (sscanf(v, "%lf %7s", &x, unit) < 1 || x < 0)
        return fail(err, cap, r->line, "%s: '%s' is not a number with a unit", key, v);
    double m = !strcmp(unit, "MiB") ? 1048576.0 : !strcmp(unit, "GiB") ? 1073741824.0
             : !strcmp(unit, "KiB") ? 1024.0 : !strcmp(unit, "M") ? 1e6 : !strcmp(unit, "B") ? 1e9
             : !strcmp(unit, "K") ? 1e3 : !unit[0] ? 1.0 : -1.0;
    if (m < 0) return fail(err, cap, r->line, "%s: unknown unit '%s'", key, unit);
    char b[32];
    snprintf(b, sizeof b, "%.0f", x * m);
    return tb_peer_set(r, key, b) ? NOMEM(r->line) : 0;
}

static int parse_md(const char *text, size_t len, tb_peer_rows_t *rows, char *err, size_t cap) {
    char *head[TB_PEER_MAX_FIELDS] = {0}, *f[TB_PEER_MAX_FIELDS];
    int nh = 0, line = 0, state = 0, rc = 0, first_row = rows->n;   /* 0 header, 1 separator, 2 rows */
    char commit[128] = "", number[32] = "";
    for (size_t i = 0; i < len && !rc;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        line++;
        const char *s = skip_ws(text + i, text + j), *e = text + j;
        while (e > s && isspace((unsigned char)e[-1])) e--;
        i = j + 1;
        if (s == e) continue;
        if (*s != '|') {
            if (!strncmp(s, "build: ", 7)) {
                if (sscanf(s, "build: %127s (%31[0-9-])", commit, number) != 2)
                    rc = fail(err, cap, line, "expected 'build: COMMIT (NUMBER)'");
            }
            continue;   /* other text around the table (llama-bench's log lines) */
        }
        int n = md_cells(s, e, state == 0 ? head : f, TB_PEER_MAX_FIELDS);
        if (state == 0) {
            nh = n;
            state = 1;
            int has_test = 0, has_ts = 0;
            for (int k = 0; k < nh; k++) { has_test |= !strcmp(head[k], "test"); has_ts |= !strcmp(head[k], "t/s"); }
            if (!has_test || !has_ts) rc = fail(err, cap, line, "the table header lacks 'test' or 't/s'");
            continue;
        }
        if (state == 1) {
            for (int k = 0; k < n && !rc; k++)
                if (strspn(f[k], "-:") != strlen(f[k]) || !f[k][0])
                    rc = fail(err, cap, line, "expected the |---| separator line under the header");
            free_fields(f, n);
            state = 2;
            continue;
        }
        if (n != nh) {
            rc = fail(err, cap, line, "%d cells, the header has %d", n, nh);
        } else {
            tb_peer_row_t *r = row_new(rows, line);
            if (!r) rc = NOMEM(line);
            for (int k = 0; k < n && !rc; k++) {
                if (!strcmp(head[k], "test")) rc = md_test(r, f[k], err, cap);
                else if (!strcmp(head[k], "t/s")) rc = md_ts(r, f[k], err, cap);
                else if (!strcmp(head[k], "size")) rc = md_scaled(r, "model_size", f[k], err, cap);
                else if (!strcmp(head[k], "params")) rc = md_scaled(r, "model_n_params", f[k], err, cap);
                else if (tb_peer_set(r, md_field(head[k]), f[k])) rc = NOMEM(line);
            }
        }
        free_fields(f, n);
    }
    free_fields(head, nh);
    if (!rc && state < 2) rc = fail(err, cap, line ? line : 1, "no llama-bench table found");
    for (int k = first_row; k < rows->n && !rc; k++) {
        if (commit[0] && (tb_peer_set(&rows->v[k], "build_commit", commit) ||
                          tb_peer_set(&rows->v[k], "build_number", number)))
            rc = NOMEM(rows->v[k].line);
        if (!rc) rc = check_row(&rows->v[k], err, cap);
    }
    return rc;
}

/* ===================================================================== */
/* mlx-lm                                                                 */
/* ===================================================================== */

typedef struct { long p, g, batch; int line, n; double ts_p[256], ts_g[256], mem_max; } mlx_block_t;

static int mlx_emit(const mlx_block_t *b, tb_peer_rows_t *rows, char *err, size_t cap) {
    if (b->n == 0) return fail(err, cap, b->line, "no trial results after this line");
    for (int w = 0; w < 2; w++) {
        if ((w == 0 ? b->p : b->g) <= 0) continue;
        tb_peer_row_t *r = row_new(rows, b->line);
        if (!r) return NOMEM(b->line);
        char v[32];
        snprintf(v, sizeof v, "%ld", w == 0 ? b->p : 0L);
        if (tb_peer_set(r, "n_prompt", v)) return NOMEM(b->line);
        snprintf(v, sizeof v, "%ld", w == 1 ? b->g : 0L);
        if (tb_peer_set(r, "n_gen", v)) return NOMEM(b->line);
        if (b->batch > 0) {
            snprintf(v, sizeof v, "%ld", b->batch);
            if (tb_peer_set(r, "batch_size", v)) return NOMEM(b->line);
        }
        if (b->mem_max > 0) {
            snprintf(v, sizeof v, "%.3f", b->mem_max);
            if (tb_peer_set(r, "peak_memory_gb", v)) return NOMEM(b->line);
        }
        if (!(r->samples_ts = malloc((size_t)b->n * sizeof *r->samples_ts))) return NOMEM(b->line);
        memcpy(r->samples_ts, w == 0 ? b->ts_p : b->ts_g, (size_t)b->n * sizeof *r->samples_ts);
        r->n_ts = b->n;
        if (check_row(r, err, cap)) return -1;
    }
    return 0;
}

static int parse_mlx(const char *text, size_t len, tb_peer_rows_t *rows, char *err, size_t cap) {
    mlx_block_t *b = calloc(1, sizeof *b);
    if (!b) return NOMEM(1);
    int line = 0, open = 0, rc = 0, gen_step = 0;   /* gen_step: 1 after "Prompt:", 2 after "Generation:" */
    for (size_t i = 0; i < len && !rc;) {
        size_t j = i;
        while (j < len && text[j] != '\n') j++;
        line++;
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(j - i < 511 ? j - i : 511), text + i);
        i = j + 1;
        long p, g, bs;
        double x, y, z;
        int k = 0;
        if (sscanf(buf, "Timing with prompt_tokens=%ld, generation_tokens=%ld, batch_size=%ld%n",
                   &p, &g, &bs, &k) == 3) {
            if (open && (rc = mlx_emit(b, rows, err, cap))) break;
            memset(b, 0, sizeof *b);
            b->p = p; b->g = g; b->batch = bs; b->line = line;
            open = 1;
        } else if (!strncmp(buf, "Trial ", 6)) {
            if (!open) { rc = fail(err, cap, line, "a Trial line before 'Timing with ...'"); break; }
            const char *q = strchr(buf, ':');
            if (!q || sscanf(q + 1, " prompt_tps=%lf, generation_tps=%lf, peak_memory=%lf", &x, &y, &z) != 3)
                { rc = fail(err, cap, line, "expected 'Trial N:  prompt_tps=X, generation_tps=Y, peak_memory=Z'"); break; }
            if (b->n == 256) { rc = fail(err, cap, line, "more than 256 trials"); break; }
            b->ts_p[b->n] = x; b->ts_g[b->n] = y; b->n++;
            if (z > b->mem_max) b->mem_max = z;
        } else if (sscanf(buf, "Prompt: %ld tokens, %lf tokens-per-sec", &p, &x) == 2) {
            /* mlx_lm.generate --verbose: a block per distinct (prompt, generation) size */
            if (gen_step == 1) { rc = fail(err, cap, line, "'Prompt:' twice without 'Generation:'"); break; }
            if (open && b->p != p) { if ((rc = mlx_emit(b, rows, err, cap))) break; open = 0; }
            if (!open) { memset(b, 0, sizeof *b); b->p = p; b->line = line; b->g = -1; open = 1; }
            if (b->n == 256) { rc = fail(err, cap, line, "more than 256 generations"); break; }
            b->ts_p[b->n] = x;
            gen_step = 1;
        } else if (sscanf(buf, "Generation: %ld tokens, %lf tokens-per-sec", &g, &y) == 2) {
            if (gen_step != 1) { rc = fail(err, cap, line, "'Generation:' without a 'Prompt:' line before it"); break; }
            if (b->g >= 0 && b->g != g) {
                rc = fail(err, cap, line, "%ld generated tokens, earlier ones of this prompt size had %ld", g, b->g);
                break;
            }
            b->g = g;
            b->ts_g[b->n++] = y;
            gen_step = 2;
        } else if (sscanf(buf, "Peak memory: %lf GB", &z) == 1) {
            if (z > b->mem_max) b->mem_max = z;
        }
    }
    if (!rc && gen_step == 1) rc = fail(err, cap, line, "'Prompt:' without its 'Generation:' line");
    if (!rc && open) rc = mlx_emit(b, rows, err, cap);
    if (!rc && rows->n == 0) rc = fail(err, cap, 1, "no mlx-lm benchmark output found");
    free(b);
    return rc;
}

/* ===================================================================== */
/* Dispatch                                                               */
/* ===================================================================== */

tb_peer_fmt_t tb_peer_detect(const char *text, size_t len) {
    const char *s = skip_ws(text, text + len);
    if (s >= text + len) return TB_PEER_FMT_NONE;
    if (*s == '[') return TB_PEER_FMT_LB_JSON;
    if (*s == '{') return TB_PEER_FMT_LB_JSONL;
    if (!strncmp(s, "CREATE TABLE IF NOT EXISTS llama_bench", 38) || !strncmp(s, "INSERT INTO llama_bench", 23))
        return TB_PEER_FMT_LB_SQL;
    if (!strncmp(s, "build_commit,", 13) || !strncmp(s, "\"build_commit\",", 15)) return TB_PEER_FMT_LB_CSV;
    if (strstr(s, "Timing with prompt_tokens=") || strstr(s, "tokens-per-sec")) return TB_PEER_FMT_MLX;
    for (const char *l = s; l && l < text + len; l = strchr(l, '\n')) {
        l = skip_ws(l, text + len);
        if (*l == '|' && strstr(l, " t/s ")) return TB_PEER_FMT_LB_MD;
    }
    return TB_PEER_FMT_NONE;
}

int tb_peer_parse(tb_peer_fmt_t f, const char *text, size_t len, tb_peer_rows_t *rows, char *err,
                  size_t cap) {
    switch (f) {
    case TB_PEER_FMT_LB_JSON: return parse_json(text, len, rows, err, cap);
    case TB_PEER_FMT_LB_JSONL: return parse_jsonl(text, len, rows, err, cap);
    case TB_PEER_FMT_LB_SQL: return parse_sql(text, len, rows, err, cap);
    case TB_PEER_FMT_LB_CSV: return parse_csv(text, len, rows, err, cap);
    case TB_PEER_FMT_LB_MD: return parse_md(text, len, rows, err, cap);
    case TB_PEER_FMT_MLX: return parse_mlx(text, len, rows, err, cap);
    default: return fail(err, cap, 1, "unknown format");
    }
}
