/*
 * report_load.c — the report's queries: resolve selectors to run ids and
 * load each run (host, build, model, scenario, tags, tests, measurement
 * statistics) into memory. The database is opened read-only; nothing here
 * writes to it.
 */
#include "report_int.h"
#include "store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ===================================================================== */
/* String arena: every string of the set, freed at once                   */
/* ===================================================================== */

typedef struct chunk { struct chunk *next; size_t used, cap; char data[]; } chunk_t;

/* Copy s (NULL → "") into the arena; NULL only when out of memory. */
static char *arena_dup(void **arena, const char *s) {
    if (!s) s = "";
    size_t n = strlen(s) + 1;
    chunk_t *c = *arena;
    if (!c || c->used + n > c->cap) {
        size_t cap = n > 16384 ? n : 16384;
        chunk_t *nc = malloc(sizeof *nc + cap);
        if (!nc) return NULL;
        nc->next = c;
        nc->used = 0;
        nc->cap = cap;
        *arena = c = nc;
    }
    char *p = c->data + c->used;
    memcpy(p, s, n);
    c->used += n;
    return p;
}

static void arena_free(void **arena) {
    for (chunk_t *c = *arena, *next; c; c = next) { next = c->next; free(c); }
    *arena = NULL;
}

/* ===================================================================== */
/* Small sqlite helpers                                                    */
/* ===================================================================== */

typedef struct loader {
    rp_set_t *set;
    int oom;
} loader_t;

static char *col_str(loader_t *L, sqlite3_stmt *st, int i) {
    char *p = arena_dup(&L->set->arena, (const char *)sqlite3_column_text(st, i));
    if (!p) { L->oom = 1; return ""; }
    return p;
}

static int64_t col_i64(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static double col_real(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st) {
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
        return tb_err(TB_ERR_FORMAT, "results database: %s (in query: %.60s...)", sqlite3_errmsg(db), sql);
    return TB_OK;
}

/* ===================================================================== */
/* Selection                                                               */
/* ===================================================================== */

typedef struct idlist { int n, cap; int64_t *v; } idlist_t;

static int ids_add(idlist_t *l, int64_t id) {
    for (int i = 0; i < l->n; i++) if (l->v[i] == id) return TB_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        int64_t *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return tb_err(TB_ERR_NOMEM, "report: out of memory selecting runs");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return TB_OK;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static const char *sel_text(const tb_report_sel_t *s, char *buf, size_t n) {
    switch (s->kind) {
    case TB_REPORT_SEL_LAST:   snprintf(buf, n, "--last %d", s->n); break;
    case TB_REPORT_SEL_RUNS:   snprintf(buf, n, "--run %lld%s", (long long)(s->n ? s->ids[0] : 0), s->n > 1 ? " ..." : ""); break;
    case TB_REPORT_SEL_TAG:    snprintf(buf, n, "tag %s=%s", s->key, s->value); break;
    case TB_REPORT_SEL_COMMIT: snprintf(buf, n, "commit:%s", s->value); break;
    case TB_REPORT_SEL_FORMAT: snprintf(buf, n, "format:%s", s->value); break;
    case TB_REPORT_SEL_MODEL:  snprintf(buf, n, "model:%s", s->value); break;
    }
    return buf;
}

int tb_report_sel_ids(sqlite3 *db, const tb_report_sel_t *s, bool strict, int64_t **ids, int *n_ids) {
    static const char *const sql[] = {
        [TB_REPORT_SEL_LAST]   = "SELECT id FROM runs ORDER BY id DESC LIMIT ?1",
        [TB_REPORT_SEL_RUNS]   = "SELECT id FROM runs WHERE id = ?1",
        [TB_REPORT_SEL_TAG]    = "SELECT run_id FROM run_tags WHERE key = ?2 AND value = ?3 ORDER BY run_id",
        [TB_REPORT_SEL_COMMIT] = "SELECT r.id FROM runs r JOIN builds b ON b.id = r.build_id"
                                 " WHERE substr(b.git_commit, 1, length(?3)) = ?3 ORDER BY r.id",
        [TB_REPORT_SEL_FORMAT] = "SELECT r.id FROM runs r JOIN models m ON m.id = r.model_id"
                                 " WHERE lower(m.main_type) = lower(?3) ORDER BY r.id",
        [TB_REPORT_SEL_MODEL]  = "SELECT r.id FROM runs r JOIN models m ON m.id = r.model_id"
                                 " WHERE m.name = ?3 ORDER BY r.id",
    };
    *ids = NULL;
    *n_ids = 0;
    idlist_t l = {0};
    sqlite3_stmt *st;
    int rc = prep(db, sql[s->kind], &st);
    if (rc) return rc;
    int n_iter = s->kind == TB_REPORT_SEL_RUNS ? s->n : 1;
    for (int k = 0; k < n_iter && rc == TB_OK; k++) {
        sqlite3_reset(st);
        if (s->kind == TB_REPORT_SEL_RUNS) sqlite3_bind_int64(st, 1, s->ids[k]);
        if (s->kind == TB_REPORT_SEL_LAST) sqlite3_bind_int(st, 1, s->n > 0 ? s->n : 1);
        if (s->kind == TB_REPORT_SEL_TAG) sqlite3_bind_text(st, 2, s->key, -1, SQLITE_STATIC);
        if (s->kind >= TB_REPORT_SEL_TAG) sqlite3_bind_text(st, 3, s->value, -1, SQLITE_STATIC);
        int found = 0, step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW && rc == TB_OK) {
            rc = ids_add(&l, sqlite3_column_int64(st, 0));
            found = 1;
        }
        if (rc == TB_OK && step != SQLITE_DONE)
            rc = tb_err(TB_ERR_IO, "results database: %s", sqlite3_errmsg(db));
        if (rc == TB_OK && !found && strict && s->kind == TB_REPORT_SEL_RUNS)
            rc = tb_err(TB_ERR_NOT_FOUND, "report: run %lld is not in the database", (long long)s->ids[k]);
    }
    sqlite3_finalize(st);
    if (rc) { free(l.v); return rc; }
    *ids = l.v;
    *n_ids = l.n;
    return TB_OK;
}

/* Append the ids a selector picks to l (may add none). */
static int sel_resolve(sqlite3 *db, const tb_report_sel_t *s, idlist_t *l) {
    int64_t *ids;
    int n, rc = tb_report_sel_ids(db, s, true, &ids, &n);
    for (int i = 0; rc == TB_OK && i < n; i++) rc = ids_add(l, ids[i]);
    free(ids);
    return rc;
}

/* ===================================================================== */
/* Loading one run                                                         */
/* ===================================================================== */

static const char RUN_SQL[] =
    "SELECT r.uuid, r.started_utc, r.ended_utc, r.status, r.error, r.threads, r.isa, r.kv_type,"
    " r.bandwidth_gbps_before, r.bandwidth_gbps_after,"                                  /* 0-9   */
    " h.hostname, h.cpu_vendor, h.cpu_brand, h.isa_flags, h.os, h.kernel,"
    " h.cores, h.threads, h.l1d_kb, h.l2_kb, h.l3_kb, h.mem_bytes,"                      /* 10-21 */
    " b.version, b.git_commit, b.git_dirty, b.compiler, b.cflags, b.build_type, b.isa_best," /* 22-28 */
    " m.id, m.name, m.path, m.arch, m.main_type, m.weight_types, m.content_hash,"
    " m.file_bytes, m.n_params, m.n_params_active, m.n_layer, m.n_embd, m.n_expert, m.n_expert_used," /* 29-42 */
    " s.name, s.hash, s.source_path"                                                      /* 43-45 */
    " FROM runs r JOIN hosts h ON h.id = r.host_id JOIN builds b ON b.id = r.build_id"
    " LEFT JOIN models m ON m.id = r.model_id JOIN scenarios s ON s.id = r.scenario_id"
    " WHERE r.id = ?1";

static int load_run_row(loader_t *L, rp_run_t *r) {
    sqlite3 *db = L->set->db;
    sqlite3_stmt *st;
    int rc = prep(db, RUN_SQL, &st);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, r->id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return tb_err(TB_ERR_FORMAT, "results database: run %lld lacks its host, build or scenario row",
                      (long long)r->id);
    }
    r->uuid = col_str(L, st, 0);      r->started = col_str(L, st, 1);   r->ended = col_str(L, st, 2);
    r->status = col_str(L, st, 3);    r->error = col_str(L, st, 4);
    r->threads = (int)col_i64(st, 5);
    r->isa = col_str(L, st, 6);       r->kv_type = col_str(L, st, 7);
    r->bw_before = col_real(st, 8);   r->bw_after = col_real(st, 9);
    r->hostname = col_str(L, st, 10); r->cpu_vendor = col_str(L, st, 11); r->cpu_brand = col_str(L, st, 12);
    r->isa_flags = col_str(L, st, 13); r->os = col_str(L, st, 14);     r->kernel = col_str(L, st, 15);
    r->cores = col_i64(st, 16);       r->hw_threads = col_i64(st, 17);
    r->l1d_kb = col_i64(st, 18);      r->l2_kb = col_i64(st, 19);       r->l3_kb = col_i64(st, 20);
    r->mem_bytes = col_i64(st, 21);
    r->version = col_str(L, st, 22);  r->commit = col_str(L, st, 23);   r->dirty = (int)col_i64(st, 24);
    r->compiler = col_str(L, st, 25); r->cflags = col_str(L, st, 26);   r->build_type = col_str(L, st, 27);
    r->isa_best = col_str(L, st, 28);
    r->has_model = sqlite3_column_type(st, 29) != SQLITE_NULL;
    r->model_name = col_str(L, st, 30); r->model_path = col_str(L, st, 31); r->arch = col_str(L, st, 32);
    r->main_type = col_str(L, st, 33); r->weight_types = col_str(L, st, 34); r->model_hash = col_str(L, st, 35);
    r->file_bytes = col_i64(st, 36);  r->n_params = col_i64(st, 37);    r->n_params_active = col_i64(st, 38);
    r->n_layer = col_i64(st, 39);     r->n_embd = col_i64(st, 40);      r->n_expert = col_i64(st, 41);
    r->n_expert_used = col_i64(st, 42);
    r->scen_name = col_str(L, st, 43); r->scen_hash = col_str(L, st, 44); r->scen_path = col_str(L, st, 45);
    sqlite3_finalize(st);

    /* tags, sorted by key */
    rc = prep(db, "SELECT key, value FROM run_tags WHERE run_id = ?1 ORDER BY key", &st);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, r->id);
    rp_buf_t tags = {0};
    while (sqlite3_step(st) == SQLITE_ROW)
        rp_buf_printf(&tags, "%s%s=%s", tags.len ? ", " : "",
                      (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    r->tags = arena_dup(&L->set->arena, tags.p ? tags.p : "");
    if (!r->tags || tags.oom) L->oom = 1;
    rp_buf_free(&tags);
    return TB_OK;
}

/* ----------------------------------------------------------------------- */
/* Measurements → per-metric statistics                                     */
/* ----------------------------------------------------------------------- */

/* Find or append the metric named base in t (linear: a test has tens). */
static rp_metric_t *metric_slot(rp_test_t *t, const char *base, int *cap) {
    for (int i = 0; i < t->n_metrics; i++)
        if (!strcmp(t->metrics[i].name, base)) return &t->metrics[i];
    if (t->n_metrics == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        rp_metric_t *m = realloc(t->metrics, (size_t)nc * sizeof *m);
        if (!m) return NULL;
        t->metrics = m;
        *cap = nc;
    }
    rp_metric_t *m = &t->metrics[t->n_metrics++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", base);
    m->median = m->sd = NAN;
    return m;
}

static int cmp_metric(const void *a, const void *b) {
    return strcmp(((const rp_metric_t *)a)->name, ((const rp_metric_t *)b)->name);
}

/* Load the test's measurements. Per base metric: statistics over rows with
 * repetition >= 0; when there are none, the stored summary (the plain
 * metric at repetition -1 or METRIC_median / METRIC:median, and
 * METRIC_stddev / METRIC:stddev). Other METRIC:x summaries are ignored. */
static int load_metrics(loader_t *L, rp_test_t *t) {
    sqlite3_stmt *st;
    int rc = prep(L->set->db, "SELECT repetition, metric, value, unit FROM measurements"
                              " WHERE test_id = ?1 ORDER BY metric, repetition", &st);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, t->id);
    int cap = 0;
    /* summaries seen, parallel to t->metrics by index (grown on demand) */
    double *sum_med = NULL, *sum_sd = NULL;
    int sum_cap = 0;
    while (rc == TB_OK && sqlite3_step(st) == SQLITE_ROW) {
        int rep = sqlite3_column_int(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        double v = sqlite3_column_double(st, 2);
        const char *unit = (const char *)sqlite3_column_text(st, 3);
        char base[64];
        snprintf(base, sizeof base, "%s", name ? name : "");
        size_t bl = strlen(base);
        int kind = 0;   /* 0 plain, 1 median, 2 stddev */
        char *colon = strchr(base, ':');   /* "metric:stddev", "metric:min", ... */
        if (colon) {
            *colon = 0;
            if (!strcmp(colon + 1, "median")) kind = 1;
            else if (!strcmp(colon + 1, "stddev") || !strcmp(colon + 1, "sd")) kind = 2;
            else continue;   /* :min, :max, :mean — recomputed, not needed */
        } else if (bl > 7 && !strcmp(base + bl - 7, "_median")) { base[bl - 7] = 0; kind = 1; }
        else if (bl > 7 && !strcmp(base + bl - 7, "_stddev")) { base[bl - 7] = 0; kind = 2; }
        rp_metric_t *m = metric_slot(t, base, &cap);
        if (!m) { rc = tb_err(TB_ERR_NOMEM, "report: out of memory loading test %lld", (long long)t->id); break; }
        int mi = (int)(m - t->metrics);
        if (mi >= sum_cap) {
            int nc = cap;
            double *a = realloc(sum_med, (size_t)nc * sizeof *a), *b2;
            if (!a) { rc = tb_err(TB_ERR_NOMEM, "report: out of memory"); break; }
            sum_med = a;
            b2 = realloc(sum_sd, (size_t)nc * sizeof *b2);
            if (!b2) { rc = tb_err(TB_ERR_NOMEM, "report: out of memory"); break; }
            sum_sd = b2;
            for (int i = sum_cap; i < nc; i++) sum_med[i] = sum_sd[i] = NAN;
            sum_cap = nc;
        }
        if (kind != 2 && (!m->unit[0] || kind == 0)) snprintf(m->unit, sizeof m->unit, "%s", unit ? unit : "");
        if (kind == 0 && rep >= 0) {
            int *reps = realloc(m->reps, (size_t)(m->n + 1) * sizeof *reps);
            if (reps) m->reps = reps;
            double *vals = reps ? realloc(m->vals, (size_t)(m->n + 1) * sizeof *vals) : NULL;
            if (!vals) { rc = tb_err(TB_ERR_NOMEM, "report: out of memory"); break; }
            m->vals = vals;
            m->reps[m->n] = rep;
            m->vals[m->n++] = v;
        } else if (kind == 2) {
            sum_sd[mi] = v;
        } else if (kind == 1 || rep < 0) {
            sum_med[mi] = v;
        }
    }
    sqlite3_finalize(st);
    for (int i = 0; rc == TB_OK && i < t->n_metrics; i++) {
        rp_metric_t *m = &t->metrics[i];
        if (m->n > 0) {
            m->median = rp_median(m->vals, m->n);
            m->sd = rp_stddev(m->vals, m->n);
        } else if (i < sum_cap) {
            m->median = sum_med[i];
            m->sd = sum_sd[i];
        }
    }
    free(sum_med);
    free(sum_sd);
    if (rc == TB_OK && t->n_metrics > 1)
        qsort(t->metrics, (size_t)t->n_metrics, sizeof *t->metrics, cmp_metric);
    return rc;
}

/* Number after `prefix` at the start of (or after '@' in) a llama-bench label. */
static double label_number(const char *label, const char *prefix) {
    size_t pl = strlen(prefix);
    for (const char *p = label; p && *p; p = strchr(p, '@') ? strchr(p, '@') + 1 : NULL) {
        if (!strncmp(p, prefix, pl) && p[pl] >= '0' && p[pl] <= '9') return strtod(p + pl, NULL);
        if (!strchr(p, '@')) break;
    }
    return NAN;
}

static int load_tests(loader_t *L, rp_run_t *r) {
    sqlite3_stmt *st;
    int rc = prep(L->set->db, "SELECT id, section, kind, label, params, status, thermal_state"
                              " FROM tests WHERE run_id = ?1 ORDER BY id", &st);
    if (rc) return rc;
    sqlite3_bind_int64(st, 1, r->id);
    int cap = 0;
    while (rc == TB_OK && sqlite3_step(st) == SQLITE_ROW) {
        if (r->n_tests == cap) {
            int nc = cap ? cap * 2 : 16;
            rp_test_t *v = realloc(r->tests, (size_t)nc * sizeof *v);
            if (!v) { rc = tb_err(TB_ERR_NOMEM, "report: out of memory"); break; }
            r->tests = v;
            cap = nc;
        }
        rp_test_t *t = &r->tests[r->n_tests++];
        memset(t, 0, sizeof *t);
        t->id = sqlite3_column_int64(st, 0);
        t->run = r;
        t->section = col_str(L, st, 1); t->kind = col_str(L, st, 2); t->label = col_str(L, st, 3);
        t->params = col_str(L, st, 4);  t->status = col_str(L, st, 5); t->thermal = col_str(L, st, 6);
        double v;
        t->depth = rp_json_number(t->params, "depth", &v) == TB_OK ? v : label_number(t->label, "d");
        if (!isfinite(t->depth)) t->depth = 0;
        t->prompt_tokens = rp_json_number(t->params, "prompt_tokens", &v) == TB_OK ? v : label_number(t->label, "pp");
        /* the runner's parameter is "tokens" (decode, generate, sustained) */
        t->gen_tokens = rp_json_number(t->params, "tokens", &v) == TB_OK ? v : label_number(t->label, "tg");
    }
    sqlite3_finalize(st);
    tb_clear_error();   /* absent params members are not errors */
    for (int i = 0; rc == TB_OK && i < r->n_tests; i++) rc = load_metrics(L, &r->tests[i]);
    return rc;
}

/* Legend label of run r at disambiguation level 0..2. */
static void series_label(const rp_run_t *r, int level, char *b, size_t n) {
    if (!r->has_model) snprintf(b, n, "run %lld", (long long)r->id);
    else if (level == 0) snprintf(b, n, "%s %s", r->model_name, r->main_type);
    else if (level == 1) snprintf(b, n, "%s %s @%.7s", r->model_name, r->main_type, r->commit);
    else snprintf(b, n, "%s %s #%lld", r->model_name, r->main_type, (long long)r->id);
}

/* Give every run a legend label unique within the set: "name type", where
 * that collides "name type @commit", where that collides "... #id". */
static int name_series(loader_t *L) {
    rp_set_t *s = L->set;
    int *level = calloc((size_t)s->n_runs + 1, sizeof *level);
    if (!level) return tb_err(TB_ERR_NOMEM, "report: out of memory");
    char a[256], b[256];
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < s->n_runs; i++)
            for (int j = i + 1; j < s->n_runs; j++) {
                series_label(&s->runs[i], level[i], a, sizeof a);
                series_label(&s->runs[j], level[j], b, sizeof b);
                if (strcmp(a, b)) continue;
                if (level[i] < 2) { level[i]++; changed = 1; }
                if (level[j] < 2) { level[j]++; changed = 1; }
            }
    }
    for (int i = 0; i < s->n_runs; i++) {
        series_label(&s->runs[i], level[i], a, sizeof a);
        s->runs[i].series = arena_dup(&s->arena, a);
        if (!s->runs[i].series) L->oom = 1;
    }
    free(level);
    return TB_OK;
}

/* ===================================================================== */
/* The set                                                                 */
/* ===================================================================== */

int rp_set_load(rp_set_t *set, const tb_report_opts_t *opts,
                unsigned char **in_base, unsigned char **in_cmp) {
    memset(set, 0, sizeof *set);
    if (in_base) *in_base = NULL;
    if (in_cmp) *in_cmp = NULL;
    if (!opts->db_path) return tb_err(TB_ERR_ARG, "report: no database path");
    struct stat st;   /* a FIFO or directory would block or mislead SQLite's read-only open */
    if (stat(opts->db_path, &st) == 0 && !S_ISREG(st.st_mode))
        return tb_err(TB_ERR_IO, "report: database %s is not a regular file", opts->db_path);
    /* as list, show and export open it: read-only unless a migration or a
     * recovery is due and the file is writable; a read-only directory or a
     * full disk still reads */
    tb_store_read_info_t info;
    if (tb_store_open_read(opts->db_path, &set->store, &info) != TB_OK)
        return tb_err_prefix(TB_ERR_IO, "report");
    set->db = tb_store_db(set->store);
    sqlite3_busy_timeout(set->db, 5000);
    sqlite3_stmt *probe;
    if (sqlite3_prepare_v2(set->db, "SELECT id FROM runs LIMIT 1", -1, &probe, NULL) != SQLITE_OK) {
        /* only these say the bytes are wrong; I/O errors (full disk) are not the file's fault */
        int ec = sqlite3_errcode(set->db);
        if (ec != SQLITE_NOTADB && ec != SQLITE_CORRUPT && ec != SQLITE_ERROR)
            return tb_err(TB_ERR_IO, "report: cannot read database %s: %s", opts->db_path,
                          sqlite3_errmsg(set->db));
        return tb_err(TB_ERR_FORMAT, "report: %s is not a ternbench results database (%s)",
                      opts->db_path, sqlite3_errmsg(set->db));
    }
    sqlite3_finalize(probe);

    idlist_t all = {0}, base = {0}, cmp = {0};
    int rc;
    char sb[256];
    if (opts->compare) {
        rc = sel_resolve(set->db, &opts->baseline, &base);
        if (!rc && base.n == 0)
            rc = tb_err(TB_ERR_NOT_FOUND, "report: baseline selection (%s) matches no run",
                        sel_text(&opts->baseline, sb, sizeof sb));
        if (!rc) rc = sel_resolve(set->db, &opts->target, &cmp);
        if (!rc && cmp.n == 0)
            rc = tb_err(TB_ERR_NOT_FOUND, "report: compare selection (%s) matches no run",
                        sel_text(&opts->target, sb, sizeof sb));
        /* a run on both sides would be compared with itself */
        for (int i = 0; !rc && i < base.n; i++)
            for (int k = 0; !rc && k < cmp.n; k++)
                if (base.v[i] == cmp.v[k])
                    rc = tb_err(TB_ERR_ARG, "report: run %lld is selected by both --baseline (%s) and --compare;"
                                " the sides must not overlap", (long long)base.v[i],
                                sel_text(&opts->baseline, sb, sizeof sb));
        for (int i = 0; !rc && i < base.n; i++) rc = ids_add(&all, base.v[i]);
        for (int i = 0; !rc && i < cmp.n; i++) rc = ids_add(&all, cmp.v[i]);
    } else {
        rc = sel_resolve(set->db, &opts->sel, &all);
        if (!rc && all.n == 0)
            rc = tb_err(TB_ERR_NOT_FOUND, "report: selection (%s) matches no run in %s",
                        sel_text(&opts->sel, sb, sizeof sb), opts->db_path);
    }
    if (!rc && all.n > TB_REPORT_MAX_RUNS)
        rc = tb_err(TB_ERR_RANGE, "report: %d runs selected, at most %d fit one report", all.n, TB_REPORT_MAX_RUNS);
    if (!rc) {
        qsort(all.v, (size_t)all.n, sizeof *all.v, cmp_i64);
        set->runs = calloc((size_t)all.n, sizeof *set->runs);
        if (!set->runs) rc = tb_err(TB_ERR_NOMEM, "report: out of memory");
    }
    loader_t L = {set, 0};
    for (int i = 0; !rc && i < all.n; i++) {
        set->runs[i].id = all.v[i];
        set->n_runs = i + 1;
        rc = load_run_row(&L, &set->runs[i]);
        if (!rc) rc = load_tests(&L, &set->runs[i]);
    }
    if (!rc) rc = name_series(&L);
    if (!rc && L.oom) rc = tb_err(TB_ERR_NOMEM, "report: out of memory loading runs");
    if (!rc && opts->compare && in_base && in_cmp) {
        *in_base = calloc((size_t)set->n_runs, 1);
        *in_cmp = calloc((size_t)set->n_runs, 1);
        if (!*in_base || !*in_cmp) rc = tb_err(TB_ERR_NOMEM, "report: out of memory");
        for (int i = 0; !rc && i < set->n_runs; i++) {
            for (int k = 0; k < base.n; k++) if (base.v[k] == set->runs[i].id) (*in_base)[i] = 1;
            for (int k = 0; k < cmp.n; k++) if (cmp.v[k] == set->runs[i].id) (*in_cmp)[i] = 1;
        }
        /* one median per side: a side whose runs hold several weight formats would merge them */
        for (int side = 0; !rc && side < 2; side++) {
            const char *first = NULL;
            const unsigned char *in = side ? *in_cmp : *in_base;
            for (int i = 0; !rc && i < set->n_runs; i++) {
                const char *ty = set->runs[i].main_type ? set->runs[i].main_type : "";
                if (!in[i]) continue;
                if (!first) first = ty;
                else if (strcmp(first, ty))
                    rc = tb_err(TB_ERR_ARG, "report: the %s runs hold several weight formats (%s, %s): select one"
                                " format per side (e.g. format:%s)", side ? "--compare" : "--baseline", first,
                                ty, first);
            }
        }
    }
    free(all.v);
    free(base.v);
    free(cmp.v);
    return rc;
}

void rp_set_free(rp_set_t *set) {
    for (int i = 0; i < set->n_runs; i++) {
        rp_run_t *r = &set->runs[i];
        for (int j = 0; j < r->n_tests; j++) {
            rp_test_t *t = &r->tests[j];
            for (int k = 0; k < t->n_metrics; k++) { free(t->metrics[k].reps); free(t->metrics[k].vals); }
            free(t->metrics);
        }
        free(r->tests);
    }
    free(set->runs);
    arena_free(&set->arena);
    tb_store_close(set->store);
    memset(set, 0, sizeof *set);
}

const rp_metric_t *rp_metric(const rp_test_t *t, const char *name) {
    for (int i = 0; i < t->n_metrics; i++)
        if (!strcmp(t->metrics[i].name, name)) return isfinite(t->metrics[i].median) ? &t->metrics[i] : NULL;
    return NULL;
}

double rp_value(const rp_test_t *t, const char *name) {
    const rp_metric_t *m = rp_metric(t, name);
    return m ? m->median : NAN;
}
