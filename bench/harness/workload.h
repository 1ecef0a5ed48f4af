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

#include "scenario.h"
#include "sensors.h"
#include "ternbench.h"

#include <signal.h>

#define TB_INTERRUPTED 1        /* positive: the stop flag was raised mid-repetition */
#define TB_REP_MAX_METRICS 48

typedef struct tb_tok_event {
    int phase;                  /* 0 prefill, 1 decode */
    int64_t t_ns;               /* since the repetition started */
    int32_t id;
    uint32_t text_off, text_len;  /* into tb_rep_t.text */
} tb_tok_event_t;

typedef struct tb_window {
    int n_tokens;
    int64_t t0_ns, t1_ns;
    double tok_per_s;
    int ctx_pos;
} tb_window_t;

typedef struct tb_metric {
    char name[40];
    const char *unit;           /* static string */
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
    double bw_gbps;             /* roofline (probe before the run), <= 0 unknown */
    tb_sensors_t *sensors;      /* for energy; may be NULL                   */
    int cpu_probe_threads;      /* > 0: after the repetition, the slowest of as
                                   many threads' core clocks (tb_cpu_probe)  */
    volatile sig_atomic_t *stop;
    /* optional: called during long repetitions with the fraction done */
    void (*tick)(void *ud, double frac);
    void *tick_ud;
} tb_work_t;

void tb_rep_reset(tb_rep_t *r);
void tb_rep_free(tb_rep_t *r);
/* Context positions the case needs (session n_ctx). */
int32_t tb_work_ctx_needed(const tb_section_t *sec, int64_t param, int n_prompt);
/* Run one repetition into *rep (reset first). TB_OK, TB_INTERRUPTED, or < 0. */
int tb_work_run(const tb_work_t *w, tb_rep_t *rep);
/* The headline metric of a kind ("decode_tok_per_s", ...). */
const char *tb_work_headline_metric(tb_sec_kind_t kind);
/* UTF-8 characters in s[0..n) (continuation bytes not counted). */
size_t tb_utf8_chars(const char *s, size_t n);

#endif
