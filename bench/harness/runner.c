/*
 * runner.c — scenario plans → engine → results store (see runner.h).
 *
 * A group is one or more plans with the same tests (one model each) run
 * together: every plan is its own run in the store, and their repetitions
 * take turns (rep by rep, the order reversed on odd repetitions, or token
 * by token inside a decode repetition), so that every member sees the same
 * machine states. `ternbench run` runs a group of one; `ternbench bench`
 * builds one plan per -m file.
 *
 * Every measured repetition is bracketed by probes — read bandwidth, the
 * slowest thread's core clock and vector throughput — taken just before
 * and just after it (the probe after one repetition is the probe before
 * the next), and its roofline is the higher of its two bandwidth probes:
 * on machines whose bandwidth moves between states within seconds, a probe
 * per run would charge repetitions against a moment they did not run in.
 */
#include "runner.h"
#include "facts.h"
#include "peer_llamacpp.h"
#include "tbutil.h"
#include "ternbench.h"
#include "progress.h"
#include "sensors.h"
#include "stats.h"
#include "workload.h"
#include "workload_claim.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROBE_PASSES 5      /* best of 5 passes per bandwidth probe */
#define CPU_PASSES 3        /* best of 3 per clock and vector probe */

/* ===================================================================== */
/* State                                                                  */
/* ===================================================================== */

typedef struct summary_row {
    char section[64], label[192], metric[40], unit[16], thermal[16], status[16];
    double value, sd;
} summary_row_t;

/* The probes around a repetition. NAN where not taken. */
typedef struct probe { double bw, ghz, vec; } probe_t;

/* One plan of the group: its model, its run, and the case in flight. */
typedef struct member {
    const tb_plan_t *plan;
    tb_run_result_t *res;
    char *mpath;
    tb_model_t *model;
    tb_model_info_t info;
    tb_type_t kv_type;
    tb_head_t *head;        /* [engine] head = approx:...: the clustered head, else NULL */
    tb_peer_lc_t *peer;     /* llama.cpp member: its llama-bench; NULL: ternbench's engine */
    tb_peer_lc_case_t pc;   /* llama.cpp member: the case in flight */
    int versioned;          /* llama.cpp member: its version is in the run row */
    int64_t run_id;
    summary_row_t *rows;
    int n_rows;
    /* the case in flight */
    tb_session_t *sess;
    int32_t *prompt;
    int n_prompt;
    tb_work_quality_t q;    /* a [quality] case's files and hashes */
    int64_t test_id;
    int ok;                 /* still running this case */
    int done;               /* measured repetitions written */
    int64_t last_test_id;   /* the case closed last: its test row and headline, */
    double last_value;      /* NAN unless it completed (a [claim] measurement)   */
    char err[1024];
    tb_work_t w;
    tb_rep_t rep;
    tb_decode_t dec;
    double **ser;           /* (n_metrics, reps) values of each metric for the summary line */
    double claim_tok_s[TB_CLAIM_MAX_CTX];      /* a [claim] section's measurements, per ctx */
    int64_t claim_test_id[TB_CLAIM_MAX_CTX];
    int *n_ser;
} member_t;

typedef struct group {
    member_t *m;
    int n;
    const tb_run_opts_t *opts;
    tb_store_t *store;
    tb_sensors_t *sensors;
    tb_pool_t *pool;
    tb_progress_t prog;
    uint64_t t0;            /* run start (sensor timestamps) */
    int threads;
    int64_t probe_bytes;
    probe_t last;           /* the latest probe: the next repetition's "before" */
} group_t;

/* xorshift64* */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

/* The prompt tokens of one case: text from prompt_file (repeated or cut to
 * n; n == 0: all of it) or synthetic ids drawn from the seed. */
static int make_prompt(const tb_model_t *model, const tb_section_t *sec, int64_t n, uint64_t seed,
                       int32_t **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    if (sec->prompt_text) {
        const tb_tokenizer_t *tk = tb_model_tokenizer(model);
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
    int32_t nv = tb_model_n_vocab(model);
    for (int i = 0; i < want; i++) p[i] = (int32_t)(rng_next(&s) % (uint64_t)nv);
    *out = p;
    *n_out = want;
    return TB_OK;
}

/* ===================================================================== */
/* Probes                                                                 */
/* ===================================================================== */

/* The slowest of the group's threads in a clock or vector probe. */
static double cpu_min(int (*probe)(int, int, double *), int nt) {
    double v[64];
    if (nt < 1 || nt > 64 || probe(nt, CPU_PASSES, v) != TB_OK) return NAN;
    double lo = v[0];
    for (int i = 1; i < nt; i++) lo = TB_MIN(lo, v[i]);
    return lo;
}

static probe_t take_probe(const group_t *g) {
    probe_t p = {NAN, NAN, NAN};
    double bw;
    if (g->probe_bytes > 0 && tb_bandwidth_probe(g->threads, (size_t)g->probe_bytes, PROBE_PASSES, &bw) == TB_OK)
        p.bw = bw;
    p.ghz = cpu_min(tb_cpu_probe, g->threads);
    p.vec = cpu_min(tb_cpu_probe_vec, g->threads);
    return p;
}

/* The repetition's bracketing metrics: both probes, its roofline (the
 * higher bandwidth probe), the roofline share, and the stolen time. */
static void bracket(tb_rep_t *r, const probe_t *before, const probe_t *after, double steal) {
    tb_rep_metric(r, TB_M_BW_BEFORE_GBPS, before->bw);
    tb_rep_metric(r, TB_M_BW_AFTER_GBPS, after->bw);
    double roof = fmax(before->bw, after->bw);   /* fmax ignores one NAN */
    double ach = tb_rep_value(r, TB_M_ACHIEVED_GBPS);
    if (roof > 0 && !isnan(ach)) {
        tb_rep_metric(r, TB_M_ROOFLINE_GBPS, roof);
        tb_rep_metric(r, TB_M_ROOFLINE_PCT, 100.0 * ach / roof);
    }
    tb_rep_metric(r, TB_M_CPU_GHZ_BEFORE, before->ghz);
    tb_rep_metric(r, TB_M_CPU_GHZ_AFTER, after->ghz);
    tb_rep_metric(r, TB_M_VEC_GOPS_BEFORE, before->vec);
    tb_rep_metric(r, TB_M_VEC_GOPS_AFTER, after->vec);
    tb_rep_metric(r, TB_M_STEAL_PCT, steal);
}

/* Stolen share of the CPU time between two /proc/stat readings. */
typedef struct steal { uint64_t st, tot; int ok; } steal_t;

static steal_t steal_now(void) {
    steal_t s = {0};
    s.ok = tb_sensors_steal_read("", &s.st, &s.tot) == 0;
    return s;
}

static double steal_since(steal_t a) {
    steal_t b = steal_now();
    return a.ok && b.ok ? tb_sensors_steal_pct(a.st, a.tot, b.st, b.tot) : NAN;
}

/* ===================================================================== */
/* Store                                                                  */
/* ===================================================================== */

/* Write sensor samples collected so far to member m (inside the caller's
 * transaction). */
static int flush_sensors(group_t *g, member_t *m, int64_t test_id) {
    if (!g->sensors) return TB_OK;
    tb_sensor_sample_t *s;
    size_t n = tb_sensors_drain(g->sensors, &s);
    int rc = TB_OK;
    for (size_t i = 0; i < n && rc == TB_OK; i++)
        rc = tb_store_add_sensor(g->store, m->run_id, test_id, s[i].t_ns,
                                 tb_sensors_name(g->sensors, s[i].sensor), s[i].value,
                                 tb_sensors_unit(g->sensors, s[i].sensor));
    free(s);
    return rc;
}

/* One repetition's rows, in one transaction. */
static int write_rep(group_t *g, member_t *m, int rep) {
    tb_store_t *st = g->store;
    const tb_rep_t *r = &m->rep;
    int rc = tb_store_tx_begin(st);
    if (rc) return rc;
    for (int i = 0; i < r->n_m && rc == TB_OK; i++) {
        const tb_metric_def_t *d = &tb_metrics[r->m[i].id];
        rc = tb_store_add_measurement(st, m->test_id, rep, d->name, r->m[i].value, d->unit);
    }
    for (size_t i = 0; m->w.record && i < r->n_ev && rc == TB_OK; i++) {
        const tb_tok_event_t *e = &r->ev[i];
        rc = tb_store_add_token(st, m->test_id, rep, (int)i, e->phase ? "decode" : "prefill", e->t_ns,
                                e->dur_ns, e->id, r->text + e->text_off, e->text_len);
    }
    for (int i = 0; i < r->n_win && rc == TB_OK; i++) {
        const tb_window_t *w = &r->win[i];
        rc = tb_store_add_window(st, m->test_id, rep, i, w->n_tokens, w->t0_ns, w->t1_ns,
                                 w->tok_per_s, w->ctx_pos, w->refill_ns, w->refills);
    }
    if (rc == TB_OK) rc = flush_sensors(g, m, m->test_id);
    if (rc) { tb_store_tx_rollback(st); return rc; }
    if ((rc = tb_store_tx_commit(st))) return rc;
    for (int i = 0; i < r->n_m; i++) {   /* the summary line's series */
        int id = r->m[i].id;
        m->ser[id][m->n_ser[id]++] = r->m[i].value;
    }
    m->done++;
    return TB_OK;
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

/* Time the reference workload and record it as a sample of every member's
 * test in flight (best effort: a sample, not a result). */
static double ref_sample(group_t *g) {
    double ms = tb_refwork_ms(3);
    int64_t t = (int64_t)(tb_now_ns() - g->t0);
    for (int k = 0; k < g->n; k++)
        if (g->m[k].test_id >= 0)
            tb_store_add_sensor(g->store, g->m[k].run_id, g->m[k].test_id, t, "ref_workload", ms, "ms");
    return ms;
}

typedef struct tick_ctx { tb_progress_t *prog; const char *label; } tick_ctx_t;

static void on_tick(void *ud, double frac) {
    tick_ctx_t *t = ud;
    tb_progress_partial(t->prog, frac, t->label);
}

/* ===================================================================== */
/* One test case                                                          */
/* ===================================================================== */

/* The kind a case is recorded as: its section's, but a [claim] section's
 * measurement is a decode test (the claims themselves go to the claims
 * table). */
static const char *test_kind(const tb_section_t *sec) {
    return sec->kind == TB_SEC_CLAIM ? "decode" : tb_sec_kind_name(sec->kind);
}

/* Warm-ups and measured repetitions of a case: [protocol]'s, except a
 * [quality] case, deterministic, which runs once without warm-up. */
static void case_reps(const tb_section_t *sec, const tb_section_t *pr, int *warm, int *reps) {
    const bool once = sec->kind == TB_SEC_QUALITY;
    *warm = once ? 0 : (int)pr->v[K_PROTO_WARMUP].i;
    *reps = once ? 1 : (int)pr->v[K_PROTO_REPETITIONS].i;
}

/* The typed parameters of a case (test_params). */
static int case_params(const member_t *m, const group_t *g, const tb_section_t *sec, int64_t param,
                       int32_t n_ctx, tb_param_t *p) {
    const tb_plan_t *pl = m->plan;
    const tb_section_t *pr = &pl->protocol;
    int n = 0;
#define PI(k, v) (p[n++] = (tb_param_t){.key = (k), .type = TB_PARAM_INT, .i = (int64_t)(v)})
#define PF(k, v) (p[n++] = (tb_param_t){.key = (k), .type = TB_PARAM_REAL, .f = (v)})
#define PS(k, v) (p[n++] = (tb_param_t){.key = (k), .type = TB_PARAM_TEXT, .s = (v)})
    PS("kind", test_kind(sec));
    PI("param", param);
    PI("prompt_tokens", m->n_prompt);
    PI("n_ctx", n_ctx);
    PI("threads", g->threads);
    PI("n_batch", pl->engine.v[K_ENGINE_BATCH].i);
    PS("kv_type", tb_type_name(m->kv_type));
    int warm, reps;
    case_reps(sec, pr, &warm, &reps);
    PI("warmup", warm);
    PI("repetitions", reps);
    PS("headline", pr->v[K_PROTO_HEADLINE].s);
    PI("record_tokens", pr->v[K_PROTO_RECORD_TOKENS].i != 0);
    PI("seed", pr->v[K_PROTO_SEED].i);
    PS("head", sec->kind == TB_SEC_QUALITY && m->q.head[0] ? m->q.head
               : *pl->engine.v[K_ENGINE_HEAD].s ? pl->engine.v[K_ENGINE_HEAD].s : "exact");
    PS("interleave", g->n < 2 ? "none" : g->opts->interleave == TB_INTERLEAVE_TOKEN ? "token" : "rep");
    if (m->peer) PS("engine", "llama.cpp");
    switch (sec->kind) {
    case TB_SEC_DECODE:
    case TB_SEC_CLAIM:
        PI("depth", param);
        PI("tokens", tb_work_decode_tokens(sec));
        break;
    case TB_SEC_GENERATE:
        PI("tokens", sec->v[K_GEN_TOKENS].i);
        PF("temp", sec->v[K_GEN_TEMP].f);
        PF("top_p", sec->v[K_GEN_TOP_P].f);
        PI("top_k", sec->v[K_GEN_TOP_K].i);
        break;
    case TB_SEC_SUSTAINED:
        PI("tokens", sec->v[K_SUS_TOKENS].i);
        PI("duration_ms", sec->v[K_SUS_DURATION].i);
        PI("window", sec->v[K_SUS_WINDOW].i);
        PS("on_full", sec->v[K_SUS_ON_FULL].s);
        break;
    case TB_SEC_QUALITY:   /* what was compared, by content */
        PI("ctx", sec->v[K_QUAL_CTX].i);
        PI("chunks", sec->v[K_QUAL_CHUNKS].i);
        PI("approximate", m->q.approx);
        PS("reference_kind", m->q.ref_kind ? m->q.ref_kind : "");
        PS("reference", m->q.ref_type && *m->q.ref_type ? m->q.ref_type : sec->v[K_QUAL_REFERENCE_FILE].s);
        PS("reference_sha256", m->q.ref_sha256);
        PS("model_sha256", m->q.model_sha256);
        PS("text", sec->v[K_QUAL_TEXT].s);
        PS("text_sha256", sec->text_sha256);
        break;
    default: break;
    }
#undef PI
#undef PF
#undef PS
    return n;
}

/* A llama.cpp member's case: no prompt or session of ours (llama-bench
 * makes its own), the same test row. */
static int peer_case_begin(group_t *g, member_t *m, const tb_section_t *sec, int ci, const char *label,
                           int64_t plen) {
    const tb_plan_t *p = m->plan;
    int64_t param = tb_section_case_param(sec, ci);
    m->n_prompt = sec->kind == TB_SEC_PREFILL ? (int)plen : 0;
    int32_t need = tb_work_ctx_needed(sec, param, m->n_prompt);
    int32_t n_ctx = p->engine.v[K_ENGINE_CTX].i > 0 ? (int32_t)p->engine.v[K_ENGINE_CTX].i : need;
    m->pc = (tb_peer_lc_case_t){.model = m->mpath, .tb = m->model, .threads = g->threads,
                                .n_batch = (int)p->engine.v[K_ENGINE_BATCH].i, .kv_type = m->kv_type};
    tb_peer_lc_case_of(sec, ci, &m->pc);
    tb_param_t params[32];
    int np = case_params(m, g, sec, param, n_ctx, params);
    int rc = tb_store_test_begin(g->store, m->run_id, sec->name, tb_sec_kind_name(sec->kind), label,
                                 params, np, &m->test_id);
    m->ok = rc == TB_OK;
    m->w = (tb_work_t){.sec = sec, .param = param, .stop = g->opts->stop};
    return rc;
}

/* One repetition (or warm-up) of member m: ternbench's engine, or one
 * llama-bench run whose first success puts llama.cpp's version in the run. */
static int member_work(group_t *g, member_t *m) {
    if (!m->peer) return tb_work_run(&m->w, &m->rep);
    int rc = tb_peer_lc_run(m->peer, &m->pc, &m->rep, g->opts->stop);
    if (rc == TB_OK && !m->versioned) {
        int src = tb_store_run_engine(g->store, m->run_id, "llama.cpp", m->peer->version,
                                      m->peer->backend[0] ? m->peer->backend : NULL);
        if (src) return src;
        m->versioned = 1;
    }
    return rc;
}

/* Open member m's case: prompt, session, test row. A failure of the case
 * itself is recorded (the test row says failed); only a store error is
 * returned. */
static int case_begin(group_t *g, member_t *m, const tb_section_t *sec, int ci, const char *label) {
    const tb_plan_t *p = m->plan;
    const tb_section_t *pr = &p->protocol;
    int64_t param = tb_section_case_param(sec, ci);
    int64_t plen = sec->kind == TB_SEC_SUSTAINED ? sec->v[K_SUS_PROMPT_TOKENS].i : param;
    uint64_t seed = (uint64_t)pr->v[K_PROTO_SEED].i;
    m->sess = NULL;
    m->prompt = NULL;
    m->n_prompt = 0;
    m->test_id = -1;
    m->ok = 0;
    m->done = 0;
    m->err[0] = '\0';
    for (int i = 0; i < TB_M_COUNT; i++) m->n_ser[i] = 0;
    if (m->peer) return peer_case_begin(g, m, sec, ci, label, plen);
    /* a quality case opens its own sessions of its own ctx on both models */
    const bool qual = sec->kind == TB_SEC_QUALITY;
    int rc = qual ? tb_work_quality_prepare(p, sec, m->mpath, p->engine.v[K_ENGINE_HEAD].s, g->opts->quiet, &m->q)
                  : make_prompt(m->model, sec, plen, seed, &m->prompt, &m->n_prompt);
    int32_t need = rc ? 0 : tb_work_ctx_needed(sec, param, m->n_prompt);
    int32_t n_ctx = p->engine.v[K_ENGINE_CTX].i > 0 && !qual ? (int32_t)p->engine.v[K_ENGINE_CTX].i : need;
    if (!rc && n_ctx < need)
        rc = tb_err(TB_ERR_RANGE, "[%s] %s needs %d context positions; [engine] ctx is %d",
                    sec->name, label, need, n_ctx);
    if (!rc && !qual) {
        tb_session_params_t sp = tb_session_default_params();
        sp.n_ctx = n_ctx;
        sp.n_threads = g->threads;
        sp.n_batch = (int32_t)p->engine.v[K_ENGINE_BATCH].i;
        sp.kv_type = m->kv_type;
        sp.pool = g->pool;
        sp.head = m->head;
        rc = tb_session_new(m->model, &sp, &m->sess);
    }
    if (rc) snprintf(m->err, sizeof m->err, "%s", tb_last_error());
    tb_param_t params[32];
    int np = case_params(m, g, sec, param, n_ctx, params);
    int src = tb_store_test_begin(g->store, m->run_id, sec->name, test_kind(sec), label,
                                  params, np, &m->test_id);
    if (src) return src;
    m->ok = rc == TB_OK;
    m->w = (tb_work_t){.model = m->model, .sess = m->sess, .sec = sec, .param = param,
                       .prompt = m->prompt, .n_prompt = m->n_prompt,
                       .record = pr->v[K_PROTO_RECORD_TOKENS].i != 0,
                       .n_batch = (int)p->engine.v[K_ENGINE_BATCH].i, .kv_type = m->kv_type,
                       .sensors = g->n == 1 ? g->sensors : NULL, .head = m->head,
                       .quality = qual ? &m->q : NULL, .threads = g->threads, .stop = g->opts->stop};
    return TB_OK;
}

/* A member's case failed mid-way: keep the first message. */
static void case_fail(member_t *m) {
    m->ok = 0;
    if (!m->err[0]) snprintf(m->err, sizeof m->err, "%s", tb_last_error());
}

/* Close member m's case: status, verdict, the summary line. */
static int case_end(group_t *g, member_t *m, const tb_section_t *sec, const char *label,
                    int interrupted, const char *thermal, double slow) {
    const char *headline = m->plan->protocol.v[K_PROTO_HEADLINE].s;
    tb_session_free(m->sess);
    m->sess = NULL;
    free(m->prompt);
    m->prompt = NULL;
    tb_work_quality_free(&m->q);
    tb_rep_free(&m->rep);
    char status[16];
    snprintf(status, sizeof status, "%s", interrupted ? "interrupted" : m->err[0] ? "failed" : "complete");
    tb_metric_id_t hm = tb_work_headline_metric(sec->kind);
    summary_row_t row = {.value = NAN, .sd = NAN};
    snprintf(row.section, sizeof row.section, "%s", sec->name);
    if (strchr(sec->name, '.')) snprintf(row.label, sizeof row.label, "%s %s", strchr(sec->name, '.') + 1, label);
    else snprintf(row.label, sizeof row.label, "%s", label);
    snprintf(row.metric, sizeof row.metric, "%s", tb_metrics[hm].name);
    snprintf(row.unit, sizeof row.unit, "%s", tb_metrics[hm].unit);
    if (m->n_ser[hm] > 0) {
        tb_stats_summary_t sm;
        tb_stats_summarize(m->ser[hm], (size_t)m->n_ser[hm], &sm);
        row.value = tb_stats_pick(&sm, headline);
        row.sd = sm.stddev;
    }
    snprintf(row.thermal, sizeof row.thermal, "%s", thermal);
    snprintf(row.status, sizeof row.status, "%s", status);
    summary_row_t *nr = realloc(m->rows, (size_t)(m->n_rows + 1) * sizeof *nr);
    if (nr) { m->rows = nr; m->rows[m->n_rows++] = row; }
    char who_s[160];
    snprintf(who_s, sizeof who_s, "%s%s", m->peer ? "llama.cpp " : "", g->n > 1 ? m->info.name : "");
    const char *who = who_s;
    if (m->err[0]) {
        /* a failure reaches stderr even when the progress display is quiet */
        if (g->opts->quiet)
            fprintf(stderr, "ternbench run: %s: %s%s%s FAILED: %s\n", m->plan->path, who, *who ? " " : "", label, m->err);
        else tb_progress_note(&g->prog, "%s%s%-24s FAILED: %s", who, *who ? " " : "", label, m->err);
    } else if (!interrupted)
        tb_progress_note(&g->prog, "%s%s%-24s %s = %.2f %s (%s, %s)", who, *who ? " " : "", label,
                         row.metric, row.value, row.unit, headline, thermal);
    int rc = tb_store_tx_begin(g->store);
    if (!rc) rc = flush_sensors(g, m, m->test_id);
    if (!rc) rc = tb_store_tx_commit(g->store);
    else tb_store_tx_rollback(g->store);
    int erc = tb_store_test_end(g->store, m->test_id, status, m->err[0] ? "unknown" : thermal,
                                m->err[0] ? m->err : NULL, slow);
    m->last_test_id = m->test_id;
    m->last_value = !strcmp(status, "complete") ? row.value : NAN;
    m->test_id = -1;
    return rc ? rc : erc;
}

/* Repetition r of every live member, one after another (the order reversed
 * on odd repetitions), each bracketed by the probe before it and the one
 * after it. */
static int reps_in_turn(group_t *g, int r) {
    for (int s = 0; s < g->n; s++) {
        member_t *m = &g->m[r % 2 ? g->n - 1 - s : s];
        if (!m->ok) continue;
        m->w.seed = (uint64_t)m->plan->protocol.v[K_PROTO_SEED].i + (uint64_t)r;
        steal_t st = steal_now();
        int wr = member_work(g, m);
        double steal = steal_since(st);
        if (wr == TB_INTERRUPTED) return TB_INTERRUPTED;
        probe_t before = g->last;
        g->last = take_probe(g);
        if (wr < 0) { case_fail(m); continue; }
        if (m->w.sec->kind != TB_SEC_QUALITY) bracket(&m->rep, &before, &g->last, steal);
        int rc = write_rep(g, m, r);
        if (rc) return rc;
    }
    return TB_OK;
}

/* Decode repetition r of every live member with the members taking turns
 * token by token (the order alternating from token to token and from
 * repetition to repetition); one probe pair brackets them all. */
static int reps_by_token(group_t *g, int r) {
    steal_t st = steal_now();
    for (int k = 0; k < g->n; k++) {
        member_t *m = &g->m[k];
        if (m->ok && tb_work_decode_begin(&m->w, &m->rep, &m->dec) != TB_OK) {
            case_fail(m);
            tb_work_decode_end(&m->w, &m->rep, &m->dec, TB_ERR_INTERNAL);
        }
    }
    int64_t n = g->m[0].w.sec->v[K_DECODE_TOKENS].i;
    int stop = 0;
    for (int64_t t = 0; t < n && !stop; t++)
        for (int s = 0; s < g->n; s++) {
            member_t *m = &g->m[(r + t) % 2 ? g->n - 1 - s : s];
            if (!m->ok) continue;
            int rc = tb_work_decode_step(&m->w, &m->rep, &m->dec);
            if (rc == TB_INTERRUPTED) { stop = 1; break; }
            if (rc) { case_fail(m); tb_work_decode_end(&m->w, &m->rep, &m->dec, rc); }
        }
    for (int k = 0; k < g->n; k++)
        if (g->m[k].ok) tb_work_decode_end(&g->m[k].w, &g->m[k].rep, &g->m[k].dec, stop ? TB_INTERRUPTED : TB_OK);
    if (stop) return TB_INTERRUPTED;
    double steal = steal_since(st);
    probe_t before = g->last;
    g->last = take_probe(g);
    for (int k = 0; k < g->n; k++) {
        member_t *m = &g->m[k];
        if (!m->ok) continue;
        bracket(&m->rep, &before, &g->last, steal);
        int rc = write_rep(g, m, r);
        if (rc) return rc;
    }
    return TB_OK;
}

/* Run case ci of section sec for every member: warm-ups, repetitions,
 * verdict. *interrupted is raised by the stop flag. Returns TB_OK or a
 * store error. */
static int run_case(group_t *g, const tb_section_t *sec, int ci, int *interrupted) {
    const tb_section_t *pr = &g->m[0].plan->protocol;
    int warm, reps;
    case_reps(sec, pr, &warm, &reps);
    char label[96];
    tb_section_case_label(sec, ci, label, sizeof label);
    int rc = TB_OK;
    for (int k = 0; k < g->n && !rc; k++) rc = case_begin(g, &g->m[k], sec, ci, label);
    if (rc) return rc;
    tick_ctx_t tick = {&g->prog, label};
    for (int k = 0; k < g->n; k++) {
        g->m[k].w.tick = g->n == 1 ? on_tick : NULL;
        g->m[k].w.tick_ud = &tick;
    }
    bool check = pr->v[K_PROTO_THROTTLE_CHECK].i != 0;
    double ref0 = check ? ref_sample(g) : -1, ref_worst = -1;
    double f0 = g->sensors ? tb_sensors_freq_mhz(g->sensors) : -1, f_min = f0;
    bool turns = g->n > 1 && g->opts->interleave == TB_INTERLEAVE_TOKEN && sec->kind == TB_SEC_DECODE;
    for (int i = 0; i < warm && !*interrupted; i++) {
        for (int k = 0; k < g->n; k++) {
            member_t *m = &g->m[k];
            if (!m->ok) continue;
            m->w.seed = (uint64_t)pr->v[K_PROTO_SEED].i + 1000u + (uint64_t)i;
            int wr = member_work(g, m);
            if (wr == TB_INTERRUPTED) { *interrupted = 1; break; }
            if (wr < 0) case_fail(m);
        }
        tb_progress_step(&g->prog, g->n, label);
    }
    if (!*interrupted) g->last = take_probe(g);
    for (int r = 0; r < reps && !*interrupted && !rc; r++) {
        int wr = turns ? reps_by_token(g, r) : reps_in_turn(g, r);
        if (wr == TB_INTERRUPTED) { *interrupted = 1; break; }
        if (wr) { rc = wr; break; }
        tb_progress_step(&g->prog, g->n, label);
        if (check && r + 1 < reps) ref_worst = TB_MAX(ref_worst, ref_sample(g));
        if (f0 > 0) { double f = tb_sensors_freq_mhz(g->sensors); if (f > 0 && f < f_min) f_min = f; }
        if (r + 1 < reps) nap(g->opts->stop, pr->v[K_PROTO_COOLDOWN].i);
        if (*g->opts->stop) *interrupted = 1;
    }
    if (*g->opts->stop) *interrupted = 1;
    if (check && !*interrupted) ref_worst = TB_MAX(ref_worst, ref_sample(g));
    /* thermal verdict: frequency where cpufreq exists, else the reference workload */
    const char *thermal = tb_thermal_verdict(f0, f_min, ref0, ref_worst, pr->v[K_PROTO_THROTTLE_PCT].f);
    double slow = ref0 > 0 && ref_worst > 0 ? 100.0 * (ref_worst / ref0 - 1) : NAN;
    for (int k = 0; k < g->n; k++) {
        member_t *m = &g->m[k];
        if (m->test_id < 0) continue;
        int erc = case_end(g, m, sec, label, *interrupted, thermal, slow);
        if (!rc) rc = erc;
        m->res->n_cases++;
        if (m->err[0]) m->res->n_failed++;
    }
    return rc;
}

/* ===================================================================== */
/* The group                                                              */
/* ===================================================================== */

static void print_summary(const member_t *m, int threads, FILE *f) {
    char size[32];
    snprintf(size, sizeof size, "%.2f MiB", (double)m->info.file_bytes / 1048576.0);
    fprintf(f, "\n| model | size | params | isa | threads | test | metric | value | thermal |\n");
    fprintf(f, "| --- | ---: | ---: | --- | ---: | --- | --- | ---: | --- |\n");
    for (int i = 0; i < m->n_rows; i++) {
        const summary_row_t *r = &m->rows[i];
        char val[64];
        if (isnan(r->value)) snprintf(val, sizeof val, "%s", r->status);
        else snprintf(val, sizeof val, "%.2f ± %.2f %s", r->value, isnan(r->sd) ? 0.0 : r->sd, r->unit);
        fprintf(f, "| %s %s | %s | %.2f M | %s | %d | %s | %s | %s | %s |\n",
                m->info.arch, tb_type_name(m->info.main_type), size,
                (double)m->info.n_params / 1e6, tb_isa_name(tb_isa_active()), threads,
                r->label, r->metric, val, r->thermal);
    }
    fprintf(f, "\nrun %s (id %lld%s): %s\n", m->res->uuid, (long long)m->res->run_id,
            m->peer ? ", llama.cpp" : "", m->res->status);
}

static void pool_noop(void *arg, int ith, int nth) { (void)arg; (void)ith; (void)nth; }

/* The CPUs the group's threads are pinned to ("0,1"; "unpinned" where
 * none is): what a run records as its tag cpus. */
static void cpus_used(group_t *g, char *buf, size_t cap) {
    int32_t c[64];
    tb_pool_run(g->pool, pool_noop, NULL);   /* every worker has started and pinned itself */
    int n = tb_pool_cpus(g->pool, c, 64), pinned = 0;
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at + 16 < cap; i++) {
        pinned |= c[i] >= 0;
        at += (size_t)snprintf(buf + at, cap - at, "%s%d", i ? "," : "", (int)c[i]);
    }
    if (!pinned) snprintf(buf, cap, "unpinned");
}

/* Load member m's model and record its provenance and run row. */
static int member_start(group_t *g, member_t *m, int k, const char *group_uuid) {
    const tb_plan_t *plan = m->plan;
    const tb_section_t *en = &plan->engine, *pr = &plan->protocol;
    /* a llama.cpp member reads the file only for its facts and bytes per token */
    tb_model_params_t mp = {.weights = m->peer || !strcmp(en->v[K_ENGINE_WEIGHTS].s, "mmap") ? TB_WEIGHTS_MMAP
                                                                                          : TB_WEIGHTS_COPY,
                            .n_threads = g->threads};
    int rc = tb_model_load_ex(m->mpath, &mp, &m->model);
    if (!rc) rc = tb_model_get_info(m->model, &m->info);
    if (rc) return rc;
    m->res->info = m->info;
    m->kv_type = !strcmp(en->v[K_ENGINE_KV_TYPE].s, "f32") ? TB_TYPE_F32 : TB_TYPE_F16;
    /* an approximate output head: clustered once per model, labelled in the run's tags */
    const char *head = en->v[K_ENGINE_HEAD].s;
    bool approx = false;
    tb_head_params_t hp;
    if ((rc = tb_head_parse(head && *head ? head : "exact", &approx, &hp)))
        return tb_err_prefix(rc, "%s: [engine] head = %s", plan->path, head);
    if (approx && !m->peer && (rc = tb_head_new(m->model, &hp, g->threads, &m->head))) return rc;
    tb_host_facts_t host;
    tb_build_facts_t build;
    tb_model_facts_t mf;
    int64_t host_id, build_id, model_id, scen_id;
    tb_facts_host(&host);
    tb_facts_build(&build);
    char *abs = realpath(m->mpath, NULL);
    rc = tb_facts_model(m->model, abs ? abs : m->mpath, m->kv_type, &mf);
    free(abs);
    if (rc) return rc;
    if (!plan->model_path) {
        snprintf(mf.synth_preset, sizeof mf.synth_preset, "%s", plan->model.v[K_MODEL_SYNTH].s);
        mf.synth_seed = plan->model.v[K_MODEL_SEED].i;
    }
    if ((rc = tb_store_put_host(g->store, &host, &host_id))) return rc;
    if ((rc = tb_store_put_build(g->store, &build, &build_id))) return rc;
    if ((rc = tb_store_put_model(g->store, &mf, &model_id))) return rc;
    if ((rc = tb_store_put_scenario(g->store, plan->hash, plan->name, plan->path, plan->normalized,
                                    &scen_id))) return rc;
    double bw = -1;
    if (g->probe_bytes > 0 && tb_bandwidth_probe(g->threads, (size_t)g->probe_bytes, PROBE_PASSES, &bw) != TB_OK)
        bw = -1;
    /* the caller's tags, then the group's, then the cores the threads run on */
    const tb_run_opts_t *o = g->opts;
    int nt = o->n_tags;
    const char *keys[72], *vals[72];
    char idx[16], cpu_s[512];
    if (nt > 64) nt = 64;
    for (int i = 0; i < nt; i++) { keys[i] = o->tag_keys[i]; vals[i] = o->tag_values[i]; }
    cpus_used(g, cpu_s, sizeof cpu_s);
    keys[nt] = "cpus"; vals[nt++] = cpu_s;
    keys[nt] = "head"; vals[nt++] = head && *head && !m->peer ? head : "exact";
    if (m->peer) { keys[nt] = "peer.binary"; vals[nt++] = m->peer->binary; }
    /* the i8mm tier's per-core choice of gemm per format (dispatch.c) */
    if (!m->peer && tb_isa_active() == TB_ISA_I8MM) { keys[nt] = "isa.features"; vals[nt++] = tb_isa_features(); }
    if (g->n > 1) {
        snprintf(idx, sizeof idx, "%d", k);
        keys[nt] = "group"; vals[nt++] = group_uuid;
        keys[nt] = "group.index"; vals[nt++] = idx;
        keys[nt] = "interleave"; vals[nt++] = o->interleave == TB_INTERLEAVE_TOKEN ? "token" : "rep";
    }
    tb_run_facts_t rf = {.host_id = host_id, .build_id = build_id, .model_id = model_id,
                         .scenario_id = scen_id, .threads = g->threads, .bandwidth_gbps_before = bw,
                         .record_tokens = !m->peer && pr->v[K_PROTO_RECORD_TOKENS].i != 0,
                         .n_tags = nt, .tag_keys = keys, .tag_values = vals};
    tb_facts_uuid(rf.uuid);
    snprintf(rf.isa, sizeof rf.isa, "%s", tb_isa_name(tb_isa_active()));
    snprintf(rf.kv_type, sizeof rf.kv_type, "%s", tb_type_name(m->kv_type));
    if ((rc = tb_store_run_begin(g->store, &rf, &m->run_id))) return rc;
    m->res->run_id = m->run_id;
    memcpy(m->res->uuid, rf.uuid, sizeof m->res->uuid);
    if (m->peer) {   /* what llama-bench measures and what it does not report */
        static const char *const none[][2] = {
            {"token_events", "llama-bench reports no per-token timestamps"},
            {"itl", "llama-bench reports no per-token step times (no inter-token latency)"},
            {"peak_rss_bytes", "llama-bench reports no memory use"},
        };
        rc = tb_store_run_engine(g->store, m->run_id, "llama.cpp", NULL, NULL);
        for (size_t i = 0; i < sizeof none / sizeof none[0] && rc == TB_OK; i++)
            rc = tb_store_add_absent(g->store, m->run_id, none[i][0], none[i][1]);
        if (rc) return rc;
    }
    for (int i = 0; i < tb_sensors_absent_count(g->sensors) && rc == TB_OK; i++) {
        const char *fam, *why;
        tb_sensors_absent(g->sensors, i, &fam, &why);
        rc = tb_store_add_absent(g->store, m->run_id, fam, why);
    }
    if (!rc && tb_sensors_energy_j(g->sensors) < 0)
        rc = tb_store_add_absent(g->store, m->run_id, "energy_j_per_tok", "no readable RAPL counter");
    return rc;
}

/* End member m's run; rc is the group's status so far. */
static int member_end(group_t *g, member_t *m, int rc, double bw_after) {
    tb_run_result_t *res = m->res;
    const char *status = rc ? "failed" : res->interrupted ? "interrupted"
                       : res->n_failed ? "failed" : "complete";
    snprintf(res->status, sizeof res->status, "%s", status);
    if (m->run_id < 0) return rc;
    char msg[1024] = "";
    if (rc) snprintf(msg, sizeof msg, "%s", tb_last_error());
    else if (res->n_failed) snprintf(msg, sizeof msg, "%d of %d tests failed", res->n_failed, res->n_cases);
    if (flush_sensors(g, m, -1) != TB_OK && !rc) rc = TB_ERR_IO;
    int erc = tb_store_run_end(g->store, m->run_id, status, msg[0] ? msg : NULL, bw_after);
    if (rc == TB_OK) rc = erc;
    else if (erc) tb_err(rc, "%s", msg);   /* keep the first error's message */
    if (erc) {   /* e.g. a full disk: say what state the run is left in */
        char first[1024];
        snprintf(first, sizeof first, "%s", tb_last_error());
        tb_err(rc, "%s (run %lld stays 'running' until the next ternbench run, list, show or "
               "export on this database marks it interrupted)", first, (long long)m->run_id);
    }
    return rc;
}

int tb_runner_run_group(const tb_plan_t *const *plans, const int *variants, int n, tb_store_t *store,
                        const tb_run_opts_t *opts, tb_run_result_t *res) {
    if (n < 1 || n > TB_GROUP_MAX) return tb_err(TB_ERR_ARG, "a group has 1 to %d plans, not %d", TB_GROUP_MAX, n);
    group_t g = {.n = n, .opts = opts, .store = store};
    member_t m[TB_GROUP_MAX];
    memset(m, 0, sizeof m);
    g.m = m;
    int rc = TB_OK;
    for (int k = 0; k < n; k++) {
        memset(&res[k], 0, sizeof res[k]);
        res[k].run_id = -1;
        snprintf(res[k].status, sizeof res[k].status, "failed");
        m[k].plan = plans[k];
        m[k].res = &res[k];
        m[k].run_id = -1;
        m[k].test_id = -1;
    }
    for (int k = 0; k < n && !rc; k++)   /* a missing llama-bench fails before anything is recorded */
        if (opts->engines && opts->engines[k] == TB_ENGINE_LLAMACPP) {
            if (!(m[k].peer = malloc(sizeof *m[k].peer))) rc = tb_err(TB_ERR_NOMEM, "out of memory");
            else rc = tb_peer_lc_resolve(plans[k], m[k].peer);
        }
    if (!rc && opts->interleave == TB_INTERLEAVE_TOKEN)
        for (int k = 0; k < n && !rc; k++)
            if (m[k].peer) rc = tb_err(TB_ERR_ARG, "%s: llama.cpp cannot take turns token by token", m[k].peer->where);
    const tb_plan_t *p0 = plans[0];
    const tb_section_t *en = &p0->engine, *pr = &p0->protocol;
    for (int k = 0; k < n && !rc; k++) {
        rc = tb_runner_model_path(plans[k], variants ? variants[k] : 0, &m[k].mpath, opts->quiet);
        if (!rc && (plans[k]->n_tests != p0->n_tests))
            rc = tb_err(TB_ERR_ARG, "%s: a group's plans must have the same tests", plans[k]->path);
    }
    /* engine configuration: ISA cap before any session exists */
    const char *isa = en->v[K_ENGINE_ISA].s;
    if (!rc && strcmp(isa, "auto") != 0) {
        tb_isa_t t;
        if ((rc = tb_isa_from_name(isa, &t)) || (rc = tb_isa_set(t)))
            tb_err_prefix(rc, "%s: [engine] isa = %s", p0->path, isa);
    }
    const char *cpus = en->v[K_ENGINE_CPUS].s;
    if (!rc && cpus && *cpus && (rc = tb_cpus_set_str(cpus)))
        tb_err_prefix(rc, "%s: [engine] cpus = %s", p0->path, cpus);
    if (!rc && *opts->stop) {   /* interrupted while a model was being synthesized */
        for (int k = 0; k < n; k++) {
            res[k].interrupted = 1;
            snprintf(res[k].status, sizeof res[k].status, "interrupted");
        }
        goto out;
    }
    if (rc) goto out;
    g.threads = (int)en->v[K_ENGINE_THREADS].i;
    if (g.threads <= 0) g.threads = (int)TB_MAX(1, sysconf(_SC_NPROCESSORS_ONLN));
    g.probe_bytes = pr->v[K_PROTO_BANDWIDTH_PROBE].i;
    int reps = (int)pr->v[K_PROTO_REPETITIONS].i;
    for (int k = 0; k < n && !rc; k++) {   /* the summary line's series */
        m[k].ser = calloc(TB_M_COUNT, sizeof *m[k].ser);
        m[k].n_ser = calloc(TB_M_COUNT, sizeof *m[k].n_ser);
        if (!m[k].ser || !m[k].n_ser) rc = tb_err(TB_ERR_NOMEM, "out of memory");
        for (int i = 0; !rc && i < TB_M_COUNT; i++)
            if (!(m[k].ser[i] = malloc((size_t)TB_MAX(reps, 1) * sizeof **m[k].ser)))   // (reps)
                rc = tb_err(TB_ERR_NOMEM, "out of memory");
    }
    if (!rc) rc = tb_pool_new(g.threads, &g.pool);
    g.t0 = tb_now_ns();
    if (!rc) rc = tb_sensors_start((int)pr->v[K_PROTO_SENSOR_INTERVAL].i, g.t0, &g.sensors);
    char group_uuid[37] = "";
    if (n > 1) tb_facts_uuid(group_uuid);
    for (int k = 0; k < n && !rc; k++) rc = member_start(&g, &m[k], k, group_uuid);
    if (rc) goto end;

    int64_t units = 0;
    for (int i = 0; i < p0->n_tests; i++) {
        int warm, nrep;
        case_reps(&p0->tests[i], pr, &warm, &nrep);
        units += (int64_t)tb_section_n_cases(&p0->tests[i]) * n * (warm + nrep);
    }
    tb_progress_init(&g.prog, units, opts->quiet);
    for (int k = 0; k < n; k++)
        tb_progress_note(&g.prog, "run %s: %s%s on %s (%s, %d threads, isa %s)", res[k].uuid,
                         m[k].peer ? "llama.cpp " : "", plans[k]->name,
                         m[k].info.name[0] ? m[k].info.name : m[k].mpath, tb_type_name(m[k].info.main_type),
                         g.threads, tb_isa_name(tb_isa_active()));
    int interrupted = 0;
    for (int i = 0; i < p0->n_tests && !interrupted && !rc; i++) {
        const tb_section_t *sec = &p0->tests[i];
        int nc = tb_section_n_cases(sec);
        for (int j = 0; j < nc && !interrupted && !rc; j++) {
            /* each member runs its own plan's section (same tests, own prompt files) */
            rc = run_case(&g, sec, j, &interrupted);
            for (int k = 0; k < n && j < TB_CLAIM_MAX_CTX; k++) {
                m[k].claim_tok_s[j] = m[k].last_value;
                m[k].claim_test_id[j] = m[k].last_test_id;
            }
        }
        /* a [claim] section's conditions, beside what it measured */
        for (int k = 0; k < n && sec->kind == TB_SEC_CLAIM && !interrupted && !rc; k++) {
            tb_claim_run_t cr = {.model = m[k].model, .model_path = m[k].mpath, .kv_type = m[k].kv_type,
                                 .head = m[k].plan->engine.v[K_ENGINE_HEAD].s, .plan_dir = m[k].plan->dir, .tok_s = m[k].claim_tok_s,
                                 .test_id = m[k].claim_test_id, .n_measured = nc < TB_CLAIM_MAX_CTX ? nc : TB_CLAIM_MAX_CTX};
            char note[256];
            rc = tb_claim_record(g.store, m[k].run_id, &m[k].plan->tests[i], &cr, note, sizeof note);
            if (!rc) tb_progress_note(&g.prog, "%s", note);
        }
    }
    tb_progress_done(&g.prog);
    if (interrupted || *opts->stop)
        for (int k = 0; k < n; k++) res[k].interrupted = 1;

end:;
    double bw_after = -1;
    if (rc == TB_OK && !res[0].interrupted && g.probe_bytes > 0 &&
        tb_bandwidth_probe(g.threads, (size_t)g.probe_bytes, PROBE_PASSES, &bw_after) != TB_OK)
        bw_after = -1;
    for (int k = 0; k < n; k++) rc = member_end(&g, &m[k], rc, bw_after);
    if (opts->summary)
        for (int k = 0; k < n; k++)
            if (m[k].n_rows > 0) print_summary(&m[k], g.threads, opts->summary);
out:
    tb_sensors_stop(g.sensors);
    for (int k = 0; k < n; k++) {
        tb_session_free(m[k].sess);
        tb_rep_free(&m[k].rep);
        free(m[k].prompt);
        tb_work_quality_free(&m[k].q);
        tb_head_free(m[k].head);   /* after its sessions, before its model */
        tb_model_free(m[k].model);
        free(m[k].rows);
        free(m[k].mpath);
        free(m[k].peer);
        for (int i = 0; m[k].ser && i < TB_M_COUNT; i++) free(m[k].ser[i]);
        free(m[k].ser);
        free(m[k].n_ser);
    }
    tb_pool_free(g.pool);
    return rc;
}

int tb_runner_run(const tb_plan_t *plan, tb_store_t *store, const tb_run_opts_t *opts,
                  tb_run_result_t *res) {
    const tb_plan_t *p[1] = {plan};
    return tb_runner_run_group(p, &opts->variant, 1, store, opts, res);
}
