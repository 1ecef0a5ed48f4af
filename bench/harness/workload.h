/*
 * workload.h — one repetition of one test case, measured in memory.
 *
 * The runner prepares a tb_work_t (session, prompt, parameters) and calls
 * tb_work_run once per warm-up and per repetition; the result (metrics,
 * token events, sustained windows) stays in a tb_rep_t until the runner
 * writes it to the store in one transaction. Nothing here touches SQLite.
 */
#ifndef TB_HARNESS_WORKLOAD_H
#define TB_HARNESS_WORKLOAD_H

#include "metrics.h"
#include "scenario.h"
#include "sensors.h"
#include "ternbench.h"

#include <signal.h>

#define TB_INTERRUPTED 1        /* positive: the stop flag was raised mid-repetition */
#define TB_REP_MAX_METRICS 48

typedef struct tb_tok_event {
    int phase;                  /* 0 prefill, 1 decode */
    int64_t t_ns;               /* since the repetition started */
    int64_t dur_ns;             /* decode: this token's own step; prefill: -1 */
    int32_t id;
    uint32_t text_off, text_len;  /* into tb_rep_t.text */
} tb_tok_event_t;

typedef struct tb_window {
    int n_tokens;
    int64_t t0_ns, t1_ns;
    int64_t refill_ns;          /* harness time re-filling the context inside [t0, t1] */
    int refills;                /* context-full events inside it (0: a clean window) */
    double tok_per_s;           /* n_tokens / (t1 - t0 - refill) */
    int ctx_pos;
} tb_window_t;

typedef struct tb_metric {
    tb_metric_id_t id;          /* name and unit: tb_metrics[id] */
    double value;
} tb_metric_t;

typedef struct tb_rep {
    tb_metric_t m[TB_REP_MAX_METRICS];
    int n_m;
    tb_tok_event_t *ev;         /* (n_ev) */
    size_t n_ev, cap_ev;
    char *text;                 /* (n_text) detokenized bytes of all events */
    size_t n_text, cap_text;
    tb_window_t *win;           /* (n_win) */
    int n_win, cap_win;
} tb_rep_t;

/* [quality]: the files one quality case compares and their fingerprints,
 * resolved before the case starts (workload_quality.c). */
typedef struct tb_work_quality {
    char *model_path;           /* the test model (the run's model)                   */
    char *ref_path;             /* reference: GGUF model or saved reference file      */
    const char *text_path;      /* the section's                                      */
    const char *ref_kind;       /* "type" (reference = TYPE), "model" or "file"       */
    const char *ref_type;       /* reference = TYPE, else ""                          */
    char model_sha256[65], ref_sha256[65], text_sha256[65];
    char head[64];              /* the test model's head: "exact" or "approx:..."     */
    bool approx;
    tb_head_params_t hp;
} tb_work_quality_t;

typedef struct tb_work {
    const tb_model_t *model;
    tb_session_t *sess;
    const tb_section_t *sec;    /* the test section                          */
    int64_t param;              /* the case: prompt length or depth          */
    const int32_t *prompt;      /* (n_prompt) prompt tokens for this case    */
    int n_prompt;
    uint64_t seed;              /* sampling seed of this repetition          */
    int record;                 /* record per-token events                   */
    int n_batch;
    tb_type_t kv_type;
    tb_sensors_t *sensors;      /* for energy; may be NULL                   */
    const tb_head_t *head;      /* the session's approximate head, NULL exact */
    const tb_work_quality_t *quality;   /* [quality] cases; sess is NULL there  */
    int threads;                /* [quality]: threads of its own sessions    */
    volatile sig_atomic_t *stop;
    /* optional: called during long repetitions with the fraction done */
    void (*tick)(void *ud, double frac);
    void *tick_ud;
} tb_work_t;

/* A decode repetition taken one token at a time, so that several models'
 * repetitions can take turns token by token (tb_work_decode_*). */
typedef struct tb_decode {
    int64_t depth, n, i;        /* untimed prefill depth, tokens, tokens done */
    double *step;               /* (n) ms of each token's own step            */
    int32_t tok;
    uint64_t t0;                /* repetition start                           */
    double e0;                  /* energy at the start, < 0 none              */
    tb_head_stats_t h0;         /* head reads at the start of the timed steps */
} tb_decode_t;

void tb_rep_reset(tb_rep_t *r);
void tb_rep_free(tb_rep_t *r);
/* Context positions the case needs (session n_ctx). */
int32_t tb_work_ctx_needed(const tb_section_t *sec, int64_t param, int n_prompt);
/* Tokens a decode repetition of sec generates ([decode] tokens, or a
 * measuring [claim] section's tokens). */
int64_t tb_work_decode_tokens(const tb_section_t *sec);
/* Run one repetition into *rep (reset first). TB_OK, TB_INTERRUPTED, or < 0.
 * The bracketing probes (bandwidth, clock, vector, steal) and the roofline
 * percentage are the runner's: it takes them around this call. */
int tb_work_run(const tb_work_t *w, tb_rep_t *rep);
/* The same for a decode section, in steps: begin (reset, untimed prefill to
 * the depth), one step per token, end (metrics; frees d's buffers, also
 * after a failed step). A decode repetition's tok/s is n over the sum of
 * its own steps, so a repetition whose steps took turns with another
 * model's measures only its own work. */
int tb_work_decode_begin(const tb_work_t *w, tb_rep_t *rep, tb_decode_t *d);
int tb_work_decode_step(const tb_work_t *w, tb_rep_t *rep, tb_decode_t *d);
int tb_work_decode_end(const tb_work_t *w, tb_rep_t *rep, tb_decode_t *d, int rc);
/* Resolve a [quality] case of `plan` run on the model file model_path
 * (engine_head: [engine] head): the reference (synthesizing reference =
 * TYPE into the cache when absent), its kind, the head, and the SHA-256 of
 * both models (tb_quality_file_hash, the store's model hash; a reference
 * file's own model hash) and of the text. q is owned: tb_work_quality_free. */
int  tb_work_quality_prepare(const tb_plan_t *plan, const tb_section_t *sec, const char *model_path,
                             const char *engine_head, int quiet, tb_work_quality_t *q);
void tb_work_quality_free(tb_work_quality_t *q);
/* One [quality] repetition: tb_quality_run on w->quality's files, its
 * figures as metrics. Deterministic: the runner runs it once. */
int  tb_work_quality_run(const tb_work_t *w, tb_rep_t *rep);

/* Append a metric (a non-finite value is dropped). */
void tb_rep_metric(tb_rep_t *r, tb_metric_id_t id, double v);
/* A metric's value in *rep, NAN when absent. */
double tb_rep_value(const tb_rep_t *r, tb_metric_id_t id);
/* The headline metric of a kind ("decode_tok_per_s", ...). */
tb_metric_id_t tb_work_headline_metric(tb_sec_kind_t kind);
/* UTF-8 characters in s[0..n) (continuation bytes not counted). */
size_t tb_utf8_chars(const char *s, size_t n);

#endif
