/*
 * runner.c — scenario plan → engine → results store (see runner.h).
 */
#include "runner.h"
#include "facts.h"
#include "internal.h"
#include "progress.h"
#include "sensors.h"
#include "stats.h"
#include "workload.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ===================================================================== */
/* Model cache                                                            */
/* ===================================================================== */

/* mkdir -p */
static int make_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return tb_err(TB_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return tb_err(TB_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
    return TB_OK;
}

static void cache_dir(const tb_plan_t *p, char *buf, size_t cap) {
    const char *cd = p->model.v[K_MODEL_CACHE_DIR].s, *env;
    if (*cd) {
        if (cd[0] == '/' || !p->dir[0]) snprintf(buf, cap, "%s", cd);
        else snprintf(buf, cap, "%s/%s", p->dir, cd);
    } else if ((env = getenv("TB_CACHE_DIR")) && *env) {
        snprintf(buf, cap, "%s", env);
    } else if ((env = getenv("XDG_CACHE_HOME")) && *env) {
        snprintf(buf, cap, "%s/ternbench", env);
    } else {
        snprintf(buf, cap, "%s%s.cache", p->dir, p->dir[0] ? "/" : "");
    }
}

/* Remove FINAL.PID.part and FINAL.PID.part.tmp left in dir by synthesizing
 * processes that died (SIGKILL, power loss): each can be as large as the
 * model. A live PID's files are another run's work in progress and stay. */
static void drop_stale_parts(const char *dir, const char *final) {
    const char *base = strrchr(final, '/');
    base = base ? base + 1 : final;
    size_t n = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, base, n) != 0 || e->d_name[n] != '.') continue;
        char *end;
        long pid = strtol(e->d_name + n + 1, &end, 10);
        if (end == e->d_name + n + 1 || pid <= 0 || strncmp(end, ".part", 5) != 0) continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char f[4096];
        if ((size_t)snprintf(f, sizeof f, "%s/%s", dir, e->d_name) < sizeof f) unlink(f);
    }
    closedir(d);
}

static void synth_progress(void *ud, uint64_t done, uint64_t total) {
    int *last = ud;
    int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\r\033[Ksynthesizing model: %d%%", pct);
    fflush(stderr);
}

int tb_runner_model_path(const tb_plan_t *plan, int variant, char **path, int quiet) {
    *path = NULL;
    if (plan->model_path) {
        *path = strdup(plan->model_path);
        return *path ? TB_OK : tb_err(TB_ERR_NOMEM, "out of memory");
    }
    const tb_section_t *m = &plan->model;
    const char *preset = m->v[K_MODEL_SYNTH].s;
    char type[32];
    tb_plan_variant_type(plan, variant, type, sizeof type);
    const char *vocab = m->v[K_MODEL_VOCAB_FROM].s;
    char dir[2048], vtag[32] = "", vpath[2048] = "";
    cache_dir(plan, dir, sizeof dir);
    if (*vocab) {
        if (vocab[0] == '/' || !plan->dir[0]) snprintf(vpath, sizeof vpath, "%s", vocab);
        else snprintf(vpath, sizeof vpath, "%s/%s", plan->dir, vocab);
        char h[65];
        tb_sha256_hex(vpath, strlen(vpath), h);
        snprintf(vtag, sizeof vtag, "-vocab%.12s", h);
    }
    char *final;
    if (asprintf(&final, "%s/%s-%s-seed%lld%s.gguf", dir, preset, type,
                 (long long)m->v[K_MODEL_SEED].i, vtag) < 0)
        return tb_err(TB_ERR_NOMEM, "out of memory");

    int rc = make_dirs(dir);
    if (rc) { free(final); return rc; }
    drop_stale_parts(dir, final);
    tb_synth_params_t sp = {.preset = preset, .type = -1, .seed = (uint64_t)m->v[K_MODEL_SEED].i,
                            .vocab_from = *vocab ? vpath : NULL};
    if (strcmp(type, "default") != 0) {
        tb_type_t t;
        if ((rc = tb_type_from_name(type, &t))) { free(final); return rc; }
        sp.type = (int)t;
    }
    if (access(final, R_OK) == 0) {   /* cached: used only once verified to be this model */
        if ((rc = tb_synth_verify(&sp, final))) { free(final); return rc; }
        *path = final;
        return TB_OK;
    }
    int last = -1;
    if (!quiet && isatty(STDERR_FILENO)) { sp.progress = synth_progress; sp.progress_ud = &last; }
    char *tmp;
    if (asprintf(&tmp, "%s.%d.part", final, (int)getpid()) < 0) { free(final); return tb_err(TB_ERR_NOMEM, "out of memory"); }
    /* synthesize under a private name, publish with an atomic rename: two
     * runs racing produce the same bytes and either rename wins */
    rc = tb_synth_model(&sp, tmp);
    if (sp.progress) fprintf(stderr, "\r\033[K");
    if (rc == TB_OK && rename(tmp, final) != 0)
        rc = tb_err(TB_ERR_IO, "%s: cannot publish synthesized model: %s", final, strerror(errno));
    if (rc) { unlink(tmp); free(tmp); free(final); return rc; }
    free(tmp);
    *path = final;
    return TB_OK;
}

/* ===================================================================== */
/* Per-run state                                                          */
/* ===================================================================== */

typedef struct summary_row {
    char section[64], label[192], metric[40], unit[16], thermal[16], status[16];
    double value, sd;
} summary_row_t;

typedef struct run_ctx {
    const tb_plan_t *plan;
    const tb_run_opts_t *opts;
    tb_store_t *store;
    tb_model_t *model;
    tb_model_info_t info;
    tb_sensors_t *sensors;
    tb_progress_t prog;
    int64_t run_id;
    uint64_t t0;            /* run start (sensor timestamps) */
    int threads;
    tb_type_t kv_type;
    double bw_before;
    summary_row_t *rows;
    int n_rows;
} run_ctx_t;

/* xorshift64* */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

/* The prompt tokens of one case: text from prompt_file (repeated or cut to
 * n; n == 0: all of it) or synthetic ids drawn from the seed. */
static int make_prompt(run_ctx_t *c, const tb_section_t *sec, int64_t n, uint64_t seed,
                       int32_t **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    if (sec->prompt_text) {
        const tb_tokenizer_t *tk = tb_model_tokenizer(c->model);
        int cap = (int)sec->prompt_len + 16;
        int32_t *ids = malloc((size_t)cap * sizeof *ids);   // (cap)
        if (!ids) return tb_err(TB_ERR_NOMEM, "out of memory");
        int k = tb_tokenize(tk, sec->prompt_text, sec->prompt_len, true, false, ids, cap);
        if (k > cap) {   /* more ids than bytes (specials): retry with the size asked for */
            int32_t *big = realloc(ids, (size_t)k * sizeof *big);
            if (!big) { free(ids); return tb_err(TB_ERR_NOMEM, "out of memory"); }
            ids = big;
            cap = k;
            k = tb_tokenize(tk, sec->prompt_text, sec->prompt_len, true, false, ids, cap);
        }
        if (k < 0) { free(ids); return tb_err_prefix(k, "%s", sec->prompt_path); }
        if (k == 0) { free(ids); return tb_err(TB_ERR_FORMAT, "%s: no tokens", sec->prompt_path); }
        if (k > cap) k = cap;
        int want = n > 0 ? (int)n : k;
        int32_t *p = malloc((size_t)want * sizeof *p);      // (want)
        if (!p) { free(ids); return tb_err(TB_ERR_NOMEM, "out of memory"); }
        for (int i = 0; i < want; i++) p[i] = ids[i % k];
        free(ids);
        *out = p;
        *n_out = want;
        return TB_OK;
    }
    int want = n > 0 ? (int)n : 1;
    int32_t *p = malloc((size_t)want * sizeof *p);          // (want)
    if (!p) return tb_err(TB_ERR_NOMEM, "out of memory");
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    int32_t nv = tb_model_n_vocab(c->model);
    for (int i = 0; i < want; i++) p[i] = (int32_t)(rng_next(&s) % (uint64_t)nv);
    *out = p;
    *n_out = want;
    return TB_OK;
}

/* Write sensor samples collected so far (inside the caller's transaction). */
static int flush_sensors(run_ctx_t *c, int64_t test_id) {
    if (!c->sensors) return TB_OK;
    tb_sensor_sample_t *s;
    size_t n = tb_sensors_drain(c->sensors, &s);
    int rc = TB_OK;
    for (size_t i = 0; i < n && rc == TB_OK; i++)
        rc = tb_store_add_sensor(c->store, c->run_id, test_id, s[i].t_ns,
                                 tb_sensors_name(c->sensors, s[i].sensor), s[i].value,
                                 tb_sensors_unit(c->sensors, s[i].sensor));
    free(s);
    return rc;
}

/* One repetition's rows, in one transaction. */
static int write_rep(run_ctx_t *c, int64_t test_id, int rep, const tb_rep_t *r, int record) {
    tb_store_t *st = c->store;
    int rc = tb_store_tx_begin(st);
    if (rc) return rc;
    for (int i = 0; i < r->n_m && rc == TB_OK; i++)
        rc = tb_store_add_measurement(st, test_id, rep, r->m[i].name, r->m[i].value, r->m[i].unit);
    for (size_t i = 0; record && i < r->n_ev && rc == TB_OK; i++) {
        const tb_tok_event_t *e = &r->ev[i];
        rc = tb_store_add_token(st, test_id, rep, (int)i, e->phase ? "decode" : "prefill", e->t_ns,
                                e->id, r->text + e->text_off, e->text_len);
    }
    for (int i = 0; i < r->n_win && rc == TB_OK; i++) {
        const tb_window_t *w = &r->win[i];
        rc = tb_store_add_window(st, test_id, rep, i, w->n_tokens, w->t0_ns, w->t1_ns,
                                 w->tok_per_s, w->ctx_pos);
    }
    if (rc == TB_OK) rc = flush_sensors(c, test_id);
    if (rc) { tb_store_tx_rollback(st); return rc; }
    return tb_store_tx_commit(st);
}

/* Sleep ms, waking early when the stop flag rises. */
static void nap(const volatile sig_atomic_t *stop, int64_t ms) {
    while (ms > 0 && !*stop) {
        int64_t k = ms < 50 ? ms : 50;
        struct timespec ts = {0, (long)k * 1000000L};
        nanosleep(&ts, NULL);
        ms -= k;
    }
}

/* Time the reference workload and record it as a sensor sample. */
static double ref_sample(run_ctx_t *c, int64_t test_id) {
    double ms = tb_refwork_ms(3);
    tb_store_add_sensor(c->store, c->run_id, test_id, (int64_t)(tb_now_ns() - c->t0),
                        "ref_workload", ms, "ms");   /* best effort: a sample, not a result */
    return ms;
}

/* Progress inside a repetition (workload tick). */
typedef struct tick_ctx { tb_progress_t *prog; const char *label; } tick_ctx_t;

static void on_tick(void *ud, double frac) {
    tick_ctx_t *t = ud;
    tb_progress_partial(t->prog, frac, t->label);
}

/* ===================================================================== */
/* One test case                                                          */
/* ===================================================================== */

/* Per-metric values across repetitions. */
typedef struct series {
    char name[40];
    const char *unit;
    double *v;      /* (n_reps) */
    int n;
} series_t;

static int add_series(series_t *s, int *n_s, int cap_reps, const tb_rep_t *r) {
    for (int i = 0; i < r->n_m; i++) {
        int j = 0;
        while (j < *n_s && strcmp(s[j].name, r->m[i].name) != 0) j++;
        if (j == *n_s) {
            if (*n_s == TB_REP_MAX_METRICS) continue;
            snprintf(s[j].name, sizeof s[j].name, "%s", r->m[i].name);
            s[j].unit = r->m[i].unit;
            s[j].n = 0;
            if (!(s[j].v = malloc((size_t)cap_reps * sizeof *s[j].v)))
                return tb_err(TB_ERR_NOMEM, "out of memory");
            (*n_s)++;
        }
        if (s[j].n < cap_reps) s[j].v[s[j].n++] = r->m[i].value;
    }
    return TB_OK;
}

/* Run one case of a test section: warm-ups, repetitions, summary, verdict.
 * Returns TB_OK (status says complete/failed/interrupted) or a store error. */
static int run_case(run_ctx_t *c, const tb_section_t *sec, int ci, char status[16]) {
    const tb_plan_t *p = c->plan;
    const tb_section_t *pr = &p->protocol;
    int warm = (int)pr->v[K_PROTO_WARMUP].i, reps = (int)pr->v[K_PROTO_REPETITIONS].i;
    int record = pr->v[K_PROTO_RECORD_TOKENS].i != 0;
    const char *headline = pr->v[K_PROTO_HEADLINE].s;
    double thr_pct = pr->v[K_PROTO_THROTTLE_PCT].f;
    int64_t param = tb_section_case_param(sec, ci);
    char label[96];
    tb_section_case_label(sec, ci, label, sizeof label);

    int32_t *prompt = NULL;
    int n_prompt = 0;
    int64_t plen = sec->kind == TB_SEC_DECODE ? param
                 : sec->kind == TB_SEC_SUSTAINED ? sec->v[K_SUS_PROMPT_TOKENS].i : param;
    uint64_t seed = (uint64_t)pr->v[K_PROTO_SEED].i;
    char err[1024] = "";
    snprintf(status, 16, "failed");
    int rc = make_prompt(c, sec, plen, seed, &prompt, &n_prompt);
    int32_t need = rc ? 0 : tb_work_ctx_needed(sec, param, n_prompt);
    int32_t n_ctx = p->engine.v[K_ENGINE_CTX].i > 0 ? (int32_t)p->engine.v[K_ENGINE_CTX].i : need;
    if (!rc && n_ctx < need)
        rc = tb_err(TB_ERR_RANGE, "[%s] %s needs %d context positions; [engine] ctx is %d",
                    sec->name, label, need, n_ctx);
    tb_session_t *sess = NULL;
    if (!rc) {
        tb_session_params_t sp = tb_session_default_params();
        sp.n_ctx = n_ctx;
        sp.n_threads = c->threads;
        sp.n_batch = (int32_t)p->engine.v[K_ENGINE_BATCH].i;
        sp.kv_type = c->kv_type;
        rc = tb_session_new(c->model, &sp, &sess);
    }
    if (rc) snprintf(err, sizeof err, "%s", tb_last_error());

    char params[1024];
    int pn = snprintf(params, sizeof params,
             "{\"kind\":\"%s\",\"param\":%lld,\"prompt_tokens\":%d,\"n_ctx\":%d,\"threads\":%d,"
             "\"n_batch\":%lld,\"kv_type\":\"%s\",\"warmup\":%d,\"repetitions\":%d,"
             "\"headline\":\"%s\",\"record_tokens\":%s,\"seed\":%llu",
             tb_sec_kind_name(sec->kind), (long long)param, n_prompt, n_ctx, c->threads,
             (long long)p->engine.v[K_ENGINE_BATCH].i, tb_type_name(c->kv_type), warm, reps,
             headline, record ? "true" : "false", (unsigned long long)seed);
    size_t po = (size_t)TB_MAX(0, TB_MIN(pn, (int)sizeof params - 1));
    if (sec->kind == TB_SEC_DECODE)
        po += (size_t)snprintf(params + po, sizeof params - po, ",\"depth\":%lld,\"tokens\":%lld",
                               (long long)param, (long long)sec->v[K_DECODE_TOKENS].i);
    else if (sec->kind == TB_SEC_GENERATE)
        po += (size_t)snprintf(params + po, sizeof params - po, ",\"tokens\":%lld,\"temp\":%g,"
                               "\"top_p\":%g,\"top_k\":%lld", (long long)sec->v[K_GEN_TOKENS].i,
                               sec->v[K_GEN_TEMP].f, sec->v[K_GEN_TOP_P].f,
                               (long long)sec->v[K_GEN_TOP_K].i);
    else if (sec->kind == TB_SEC_SUSTAINED)
        po += (size_t)snprintf(params + po, sizeof params - po, ",\"tokens\":%lld,\"duration_ms\":%lld,"
                               "\"window\":%lld,\"on_full\":\"%s\"", (long long)sec->v[K_SUS_TOKENS].i,
                               (long long)sec->v[K_SUS_DURATION].i, (long long)sec->v[K_SUS_WINDOW].i,
                               sec->v[K_SUS_ON_FULL].s);
    if (po + 2 <= sizeof params) snprintf(params + po, sizeof params - po, "}");
    int64_t test_id;
    int src = tb_store_test_begin(c->store, c->run_id, sec->name, tb_sec_kind_name(sec->kind),
                                  label, params, &test_id);
    if (src) { tb_session_free(sess); free(prompt); return src; }
    if (rc) {
        tb_progress_note(&c->prog, "%-24s FAILED: %s", label, err);
        tb_progress_step(&c->prog, warm + reps, label);
        free(prompt);
        return tb_store_test_end(c->store, test_id, "failed", "unknown", err);
    }

    tb_work_t w = {.model = c->model, .sess = sess, .sec = sec, .param = param, .prompt = prompt,
                   .n_prompt = n_prompt, .record = record,
                   .n_batch = (int)p->engine.v[K_ENGINE_BATCH].i, .kv_type = c->kv_type,
                   .bw_gbps = c->bw_before, .sensors = c->sensors, .cpu_probe_threads = c->threads,
                   .stop = c->opts->stop};
    tick_ctx_t tick = {&c->prog, label};
    w.tick = on_tick;
    w.tick_ud = &tick;
    tb_rep_t rep = {0};
    series_t ser[TB_REP_MAX_METRICS];
    int n_ser = 0;
    bool check = pr->v[K_PROTO_THROTTLE_CHECK].i != 0;
    double ref0 = check ? ref_sample(c, test_id) : -1, ref_worst = -1;
    double f0 = c->sensors ? tb_sensors_freq_mhz(c->sensors) : -1, f_min = f0;
    int done = 0, interrupted = 0;
    rc = TB_OK;
    for (int i = 0; i < warm + reps && rc == TB_OK; i++) {
        bool measured = i >= warm;
        int r = measured ? i - warm : -1;
        w.seed = seed + (uint64_t)(measured ? r : 1000 + i);
        int wr = tb_work_run(&w, &rep);
        if (wr == TB_INTERRUPTED) { interrupted = 1; break; }
        if (wr < 0) { snprintf(err, sizeof err, "%s", tb_last_error()); break; }
        if (measured) {
            if ((rc = write_rep(c, test_id, r, &rep, record))) break;
            if ((rc = add_series(ser, &n_ser, reps, &rep))) break;
            done++;
        }
        tb_progress_step(&c->prog, 1, label);
        if (check && i + 1 < warm + reps) ref_worst = TB_MAX(ref_worst, ref_sample(c, test_id));
        if (f0 > 0) { double f = tb_sensors_freq_mhz(c->sensors); if (f > 0 && f < f_min) f_min = f; }
        if (measured && i + 1 < warm + reps) nap(c->opts->stop, pr->v[K_PROTO_COOLDOWN].i);
        if (*c->opts->stop) { interrupted = 1; break; }
    }
    if (check && !interrupted) ref_worst = TB_MAX(ref_worst, ref_sample(c, test_id));
    tb_rep_free(&rep);
    tb_session_free(sess);
    free(prompt);
    if (rc) { for (int i = 0; i < n_ser; i++) free(ser[i].v); return rc; }

    /* thermal verdict: frequency where cpufreq exists, else the reference workload */
    const char *thermal = tb_thermal_verdict(f0, f_min, ref0, ref_worst, thr_pct);
    double slow = ref0 > 0 && ref_worst > 0 ? 100.0 * (ref_worst / ref0 - 1) : -1000;

    /* summary rows (repetition -1): headline statistic + spread */
    const char *hm = tb_work_headline_metric(sec->kind);
    summary_row_t row = {0};
    snprintf(row.section, sizeof row.section, "%s", sec->name);
    if (strchr(sec->name, '.')) snprintf(row.label, sizeof row.label, "%s %s", strchr(sec->name, '.') + 1, label);
    else snprintf(row.label, sizeof row.label, "%s", label);
    snprintf(row.metric, sizeof row.metric, "%s", hm);
    row.value = row.sd = NAN;
    rc = tb_store_tx_begin(c->store);
    for (int i = 0; i < n_ser && rc == TB_OK; i++) {
        tb_stats_summary_t sm;
        tb_stats_summarize(ser[i].v, (size_t)ser[i].n, &sm);
        char nm[64];
        rc = tb_store_add_measurement(c->store, test_id, -1, ser[i].name, tb_stats_pick(&sm, headline), ser[i].unit);
        snprintf(nm, sizeof nm, "%.40s:stddev", ser[i].name);
        if (!rc) rc = tb_store_add_measurement(c->store, test_id, -1, nm, sm.stddev, ser[i].unit);
        snprintf(nm, sizeof nm, "%.40s:min", ser[i].name);
        if (!rc) rc = tb_store_add_measurement(c->store, test_id, -1, nm, sm.min, ser[i].unit);
        snprintf(nm, sizeof nm, "%.40s:max", ser[i].name);
        if (!rc) rc = tb_store_add_measurement(c->store, test_id, -1, nm, sm.max, ser[i].unit);
        if (!strcmp(ser[i].name, hm)) {
            row.value = tb_stats_pick(&sm, headline);
            row.sd = sm.stddev;
            snprintf(row.unit, sizeof row.unit, "%s", ser[i].unit);
        }
    }
    if (!rc && slow > -100) rc = tb_store_add_measurement(c->store, test_id, -1, "ref_slowdown_pct", slow, "%");
    if (!rc && done > 0) rc = tb_store_add_measurement(c->store, test_id, -1, "repetitions", done, "count");
    if (!rc) rc = flush_sensors(c, test_id);
    if (!rc) rc = tb_store_tx_commit(c->store);
    else tb_store_tx_rollback(c->store);
    for (int i = 0; i < n_ser; i++) free(ser[i].v);
    if (rc) return rc;

    snprintf(status, 16, "%s", interrupted ? "interrupted" : err[0] ? "failed" : "complete");
    snprintf(row.thermal, sizeof row.thermal, "%s", thermal);
    snprintf(row.status, sizeof row.status, "%s", status);
    summary_row_t *nr = realloc(c->rows, (size_t)(c->n_rows + 1) * sizeof *nr);
    if (nr) { c->rows = nr; c->rows[c->n_rows++] = row; }
    if (err[0]) tb_progress_note(&c->prog, "%-24s FAILED: %s", label, err);
    else if (!interrupted)
        tb_progress_note(&c->prog, "%-24s %s = %.2f %s (%s, %s)", label, hm, row.value, row.unit,
                         headline, thermal);
    return tb_store_test_end(c->store, test_id, status, thermal, err[0] ? err : NULL);
}

/* ===================================================================== */
/* The run                                                                */
/* ===================================================================== */

static void print_summary(run_ctx_t *c, FILE *f, const tb_run_result_t *res) {
    char size[32];
    snprintf(size, sizeof size, "%.2f MiB", (double)c->info.file_bytes / 1048576.0);
    fprintf(f, "\n| model | size | params | isa | threads | test | metric | value | thermal |\n");
    fprintf(f, "| --- | ---: | ---: | --- | ---: | --- | --- | ---: | --- |\n");
    for (int i = 0; i < c->n_rows; i++) {
        const summary_row_t *r = &c->rows[i];
        char val[64];
        if (isnan(r->value)) snprintf(val, sizeof val, "%s", r->status);
        else snprintf(val, sizeof val, "%.2f ± %.2f %s", r->value, isnan(r->sd) ? 0.0 : r->sd, r->unit);
        fprintf(f, "| %s %s | %s | %.2f M | %s | %d | %s | %s | %s | %s |\n",
                c->info.arch, tb_type_name(c->info.main_type), size,
                (double)c->info.n_params / 1e6, tb_isa_name(tb_isa_active()), c->threads,
                r->label, r->metric, val, r->thermal);
    }
    fprintf(f, "\nrun %s (id %lld): %s\n", res->uuid, (long long)res->run_id, res->status);
}

int tb_runner_run(const tb_plan_t *plan, tb_store_t *store, const tb_run_opts_t *opts,
                  tb_run_result_t *res) {
    memset(res, 0, sizeof *res);
    res->run_id = -1;
    snprintf(res->status, sizeof res->status, "failed");
    run_ctx_t c = {.plan = plan, .opts = opts, .store = store, .run_id = -1};
    const tb_section_t *en = &plan->engine, *pr = &plan->protocol;
    char *mpath = NULL;
    int rc = tb_runner_model_path(plan, opts->variant, &mpath, opts->quiet);
    if (rc) return rc;

    /* engine configuration: ISA cap before any session exists */
    const char *isa = en->v[K_ENGINE_ISA].s;
    if (strcmp(isa, "auto") != 0) {
        tb_isa_t t;
        if ((rc = tb_isa_from_name(isa, &t)) || (rc = tb_isa_set(t))) {
            tb_err_prefix(rc, "%s: [engine] isa = %s", plan->path, isa);
            free(mpath);
            return rc;
        }
    }
    if (*opts->stop) {   /* interrupted while the model was being synthesized */
        res->interrupted = 1;
        snprintf(res->status, sizeof res->status, "interrupted");
        free(mpath);
        return TB_OK;
    }
    c.threads = (int)en->v[K_ENGINE_THREADS].i;
    if (c.threads <= 0) c.threads = (int)TB_MAX(1, sysconf(_SC_NPROCESSORS_ONLN));
    tb_model_params_t mp = {.weights = !strcmp(en->v[K_ENGINE_WEIGHTS].s, "mmap") ? TB_WEIGHTS_MMAP
                                                                                 : TB_WEIGHTS_COPY,
                            .n_threads = c.threads};
    if ((rc = tb_model_load_ex(mpath, &mp, &c.model))) { free(mpath); return rc; }
    if ((rc = tb_model_get_info(c.model, &c.info))) goto out;
    c.kv_type = !strcmp(en->v[K_ENGINE_KV_TYPE].s, "f32") ? TB_TYPE_F32 : TB_TYPE_F16;

    /* provenance */
    tb_host_facts_t host;
    tb_build_facts_t build;
    tb_model_facts_t mf;
    int64_t host_id, build_id, model_id, scen_id;
    tb_facts_host(&host);
    tb_facts_build(&build);
    char *abs = realpath(mpath, NULL);
    rc = tb_facts_model(c.model, abs ? abs : mpath, c.kv_type, &mf);
    free(abs);
    if (rc) goto out;
    if (!plan->model_path) {
        snprintf(mf.synth_preset, sizeof mf.synth_preset, "%s", plan->model.v[K_MODEL_SYNTH].s);
        mf.synth_seed = plan->model.v[K_MODEL_SEED].i;
    }
    if ((rc = tb_store_put_host(store, &host, &host_id))) goto out;
    if ((rc = tb_store_put_build(store, &build, &build_id))) goto out;
    if ((rc = tb_store_put_model(store, &mf, &model_id))) goto out;
    if ((rc = tb_store_put_scenario(store, plan->hash, plan->name, plan->path, plan->normalized,
                                    &scen_id))) goto out;

    /* roofline before */
    int64_t probe = pr->v[K_PROTO_BANDWIDTH_PROBE].i;
    c.bw_before = -1;
    if (probe > 0 && tb_bandwidth_probe(c.threads, (size_t)probe, 3, &c.bw_before) != TB_OK)
        c.bw_before = -1;

    c.t0 = tb_now_ns();
    if ((rc = tb_sensors_start((int)pr->v[K_PROTO_SENSOR_INTERVAL].i, c.t0, &c.sensors))) goto out;

    tb_run_facts_t rf = {.host_id = host_id, .build_id = build_id, .model_id = model_id,
                         .scenario_id = scen_id, .threads = c.threads,
                         .bandwidth_gbps_before = c.bw_before,
                         .record_tokens = pr->v[K_PROTO_RECORD_TOKENS].i != 0,
                         .n_tags = opts->n_tags, .tag_keys = opts->tag_keys,
                         .tag_values = opts->tag_values};
    tb_facts_uuid(rf.uuid);
    snprintf(rf.isa, sizeof rf.isa, "%s", tb_isa_name(tb_isa_active()));
    snprintf(rf.kv_type, sizeof rf.kv_type, "%s", tb_type_name(c.kv_type));
    if ((rc = tb_store_run_begin(store, &rf, &c.run_id))) goto out;
    res->run_id = c.run_id;
    memcpy(res->uuid, rf.uuid, sizeof res->uuid);
    for (int i = 0; i < tb_sensors_absent_count(c.sensors) && rc == TB_OK; i++) {
        const char *fam, *why;
        tb_sensors_absent(c.sensors, i, &fam, &why);
        rc = tb_store_add_absent(store, c.run_id, fam, why);
    }
    if (!rc && tb_sensors_energy_j(c.sensors) < 0)
        rc = tb_store_add_absent(store, c.run_id, "energy_j_per_tok", "no readable RAPL counter");
    if (rc) goto end;

    int64_t units = 0;
    for (int i = 0; i < plan->n_tests; i++)
        units += (int64_t)tb_section_n_cases(&plan->tests[i]) *
                 (pr->v[K_PROTO_WARMUP].i + pr->v[K_PROTO_REPETITIONS].i);
    tb_progress_init(&c.prog, units, opts->quiet);
    tb_progress_note(&c.prog, "run %s: %s on %s (%s, %d threads, isa %s)", rf.uuid, plan->name,
                     c.info.name[0] ? c.info.name : mpath, tb_type_name(c.info.main_type),
                     c.threads, rf.isa);
    for (int i = 0; i < plan->n_tests && !*opts->stop; i++) {
        const tb_section_t *sec = &plan->tests[i];
        for (int j = 0; j < tb_section_n_cases(sec) && !*opts->stop; j++) {
            char st[16];
            if ((rc = run_case(&c, sec, j, st))) goto end;
            res->n_cases++;
            if (!strcmp(st, "failed")) res->n_failed++;
            if (!strcmp(st, "interrupted")) res->interrupted = 1;
        }
    }
    tb_progress_done(&c.prog);
    if (*opts->stop) res->interrupted = 1;

end:;
    double bw_after = -1;
    if (rc == TB_OK && !res->interrupted && probe > 0 &&
        tb_bandwidth_probe(c.threads, (size_t)probe, 3, &bw_after) != TB_OK)
        bw_after = -1;
    const char *status = rc ? "failed" : res->interrupted ? "interrupted"
                       : res->n_failed ? "failed" : "complete";
    snprintf(res->status, sizeof res->status, "%s", status);
    if (c.run_id >= 0) {
        char msg[1024] = "";
        if (rc) snprintf(msg, sizeof msg, "%s", tb_last_error());
        else if (res->n_failed) snprintf(msg, sizeof msg, "%d of %d tests failed", res->n_failed, res->n_cases);
        if (flush_sensors(&c, -1) != TB_OK && !rc) rc = TB_ERR_IO;
        int erc = tb_store_run_end(store, c.run_id, status, msg[0] ? msg : NULL, bw_after);
        if (rc == TB_OK) rc = erc;
        else if (erc) tb_err(rc, "%s", msg);   /* keep the first error's message */
        if (erc) {   /* e.g. a full disk: say what state the run is left in */
            char first[1024];
            snprintf(first, sizeof first, "%s", tb_last_error());
            tb_err(rc, "%s (run %lld stays 'running' until the next ternbench run, list, show or "
                   "export on this database marks it interrupted)", first, (long long)c.run_id);
        }
    }
    if (opts->summary && c.n_rows > 0) print_summary(&c, opts->summary, res);
out:
    tb_sensors_stop(c.sensors);
    tb_model_free(c.model);
    free(c.rows);
    free(mpath);
    return rc;
}
