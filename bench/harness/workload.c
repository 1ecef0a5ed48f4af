/*
 * workload.c — the five test kinds, one repetition each (see workload.h).
 *
 * Timing: tb_now_ns() (monotonic) around engine calls only; sampling and
 * detokenization are inside the per-token interval because a user waits for
 * them too. Events are appended to preallocated arrays, so recording costs a
 * store to memory per token (the database is written between repetitions).
 */
#include "workload.h"
#include "facts.h"
#include "internal.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Repetition buffers                                                     */
/* ===================================================================== */

void tb_rep_reset(tb_rep_t *r) {
    r->n_m = 0;
    r->n_ev = 0;
    r->n_text = 0;
    r->n_win = 0;
}

void tb_rep_free(tb_rep_t *r) {
    free(r->ev);
    free(r->text);
    free(r->win);
    memset(r, 0, sizeof *r);
}

static void metric(tb_rep_t *r, const char *name, double v, const char *unit) {
    if (r->n_m >= TB_REP_MAX_METRICS || !isfinite(v)) return;
    tb_metric_t *m = &r->m[r->n_m++];
    snprintf(m->name, sizeof m->name, "%s", name);
    m->unit = unit;
    m->value = v;
}

/* Make room for n more events and `bytes` more text. */
static int reserve(tb_rep_t *r, size_t n, size_t bytes) {
    if (r->n_ev + n > r->cap_ev) {
        size_t nc = TB_MAX(r->cap_ev * 2, r->n_ev + n + 256);
        tb_tok_event_t *p = realloc(r->ev, nc * sizeof *p);
        if (!p) return tb_err(TB_ERR_NOMEM, "out of memory recording token events");
        r->ev = p;
        r->cap_ev = nc;
    }
    if (r->n_text + bytes > r->cap_text) {
        size_t nc = TB_MAX(r->cap_text * 2, r->n_text + bytes + 4096);
        char *p = realloc(r->text, nc);
        if (!p) return tb_err(TB_ERR_NOMEM, "out of memory recording token text");
        r->text = p;
        r->cap_text = nc;
    }
    return TB_OK;
}

/* Append one event (room must have been reserved). */
static void event(tb_rep_t *r, int phase, int64_t t_ns, int32_t id, const char *text, int len) {
    tb_tok_event_t *e = &r->ev[r->n_ev++];
    e->phase = phase;
    e->t_ns = t_ns;
    e->id = id;
    e->text_off = (uint32_t)r->n_text;
    e->text_len = (uint32_t)(len > 0 ? len : 0);
    if (len > 0) {
        memcpy(r->text + r->n_text, text, (size_t)len);
        r->n_text += (size_t)len;
    }
}

size_t tb_utf8_chars(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

const char *tb_work_headline_metric(tb_sec_kind_t kind) {
    switch (kind) {
    case TB_SEC_PREFILL: return "prefill_tok_per_s";
    case TB_SEC_TTFT: return "ttft_ms";
    default: return "decode_tok_per_s";
    }
}

int32_t tb_work_ctx_needed(const tb_section_t *sec, int64_t param, int n_prompt) {
    switch (sec->kind) {
    case TB_SEC_PREFILL: return (int32_t)param;
    case TB_SEC_DECODE: return (int32_t)(param + sec->v[K_DECODE_TOKENS].i + 1);
    case TB_SEC_TTFT: return n_prompt + 2;
    case TB_SEC_GENERATE: return (int32_t)(n_prompt + sec->v[K_GEN_TOKENS].i + 1);
    case TB_SEC_SUSTAINED: return (int32_t)sec->v[K_SUS_CTX].i;
    default: return 0;
    }
}

/* ===================================================================== */
/* Shared steps                                                           */
/* ===================================================================== */

/* Evaluate n tokens in n_batch chunks; with events, each token is stamped
 * with its chunk's completion time. */
static int prefill(const tb_work_t *w, tb_rep_t *r, const int32_t *toks, int n, uint64_t t0,
                   bool events) {
    if (events) {
        int rc = reserve(r, (size_t)n, 0);
        if (rc) return rc;
    }
    for (int off = 0; off < n; off += w->n_batch) {
        if (*w->stop) return TB_INTERRUPTED;
        int k = TB_MIN(w->n_batch, n - off);
        int rc = tb_session_eval(w->sess, toks + off, k, false);
        if (rc) return tb_err_prefix(rc, "prefill at position %d", tb_session_pos(w->sess));
        int64_t t = (int64_t)(tb_now_ns() - t0);
        if (events)
            for (int i = 0; i < k; i++) event(r, 0, t, toks[off + i], NULL, 0);
    }
    return TB_OK;
}

/* Bytes per token at the middle of [depth, depth + n) and the roofline metrics. */
static void roofline(const tb_work_t *w, tb_rep_t *r, double tok_per_s, int64_t depth, int64_t n) {
    tb_bytes_per_token_t b;
    if (tb_model_bytes_per_token(w->model, (int32_t)(depth + n / 2), w->kv_type, &b) != TB_OK) return;
    double gbps = tok_per_s * (double)b.total / 1e9;
    metric(r, "bytes_per_token", (double)b.total, "B");
    metric(r, "achieved_gbps", gbps, "GB/s");
    if (w->bw_gbps > 0) metric(r, "roofline_pct", 100.0 * gbps / w->bw_gbps, "%");
}

/* Inter-token latency percentiles from n decode step durations (ns). */
static void itl(tb_rep_t *r, const double *step_ms, size_t n) {
    if (n == 0) return;
    metric(r, "itl_p50_ms", tb_stats_percentile(step_ms, n, 50), "ms");
    metric(r, "itl_p90_ms", tb_stats_percentile(step_ms, n, 90), "ms");
    metric(r, "itl_p99_ms", tb_stats_percentile(step_ms, n, 99), "ms");
    double mx = 0;
    for (size_t i = 0; i < n; i++) mx = TB_MAX(mx, step_ms[i]);
    metric(r, "itl_max_ms", mx, "ms");
    metric(r, "stall_pct", tb_stats_stall_pct(step_ms, n, TB_STALL_FACTOR), "%");
}

/* Memory, energy and the cores' clock and vector throughput right after
 * the repetition (the slowest thread's: cpu_ghz_min, below the clock when
 * the host or the thermals slowed a core; vec_gops_min, vector ops per ns,
 * which also falls when an SMT sibling shares a core's vector units),
 * common to every kind. */
static void footprint(const tb_work_t *w, tb_rep_t *r, double e0, double tokens) {
    static const struct {
        int (*probe)(int n_threads, int reps, double *out);
        const char *name, *unit;
    } cpu[] = {{tb_cpu_probe, "cpu_ghz_min", "GHz"}, {tb_cpu_probe_vec, "vec_gops_min", "op/ns"}};
    double v[64];
    const int nt = w->cpu_probe_threads;
    for (size_t p = 0; p < sizeof cpu / sizeof cpu[0]; p++) {
        if (nt < 1 || nt > 64 || cpu[p].probe(nt, 3, v) != TB_OK) continue;
        double lo = v[0];
        for (int i = 1; i < nt; i++) lo = TB_MIN(lo, v[i]);
        metric(r, cpu[p].name, lo, cpu[p].unit);
    }
    int64_t rss = tb_facts_peak_rss();
    if (rss >= 0) metric(r, "peak_rss_bytes", (double)rss, "B");
    metric(r, "session_bytes", (double)tb_session_memory_bytes(w->sess), "B");
    if (e0 >= 0 && w->sensors && tokens > 0) {
        double e1 = tb_sensors_energy_j(w->sensors);
        if (e1 >= e0) metric(r, "energy_j_per_tok", (e1 - e0) / tokens, "J/tok");
    }
}

/* A synthetic token for decode steps that have no logits yet. */
static int32_t first_token(const tb_work_t *w) {
    return w->n_prompt > 0 ? w->prompt[0] : 0;
}

/* ===================================================================== */
/* The kinds                                                              */
/* ===================================================================== */

static int run_prefill(const tb_work_t *w, tb_rep_t *r, double e0) {
    uint64_t t0 = tb_now_ns();
    int rc = prefill(w, r, w->prompt, w->n_prompt, t0, w->record);
    if (rc) return rc;
    double s = (double)(tb_now_ns() - t0) / 1e9;
    metric(r, "prefill_tok_per_s", w->n_prompt / s, "tok/s");
    metric(r, "prefill_ms", s * 1e3, "ms");
    footprint(w, r, e0, w->n_prompt);
    return TB_OK;
}

/* Greedy decode of `n` tokens after an untimed prefill to `depth`. */
static int run_decode(const tb_work_t *w, tb_rep_t *r, double e0) {
    int64_t depth = w->param, n = w->sec->v[K_DECODE_TOKENS].i;
    int rc;
    uint64_t t0 = tb_now_ns();
    if (depth > 0 && (rc = prefill(w, r, w->prompt, (int)depth, t0, false))) return rc;
    double *step = malloc((size_t)n * sizeof *step);     // (n) ms per decode step
    if (!step) return tb_err(TB_ERR_NOMEM, "out of memory");
    if (w->record && (rc = reserve(r, (size_t)n, 0))) { free(step); return rc; }
    int32_t tok = depth > 0 ? w->prompt[depth - 1] : first_token(w);
    int32_t n_vocab = tb_model_n_vocab(w->model);
    uint64_t start = tb_now_ns(), prev = start;
    t0 = start;
    for (int64_t i = 0; i < n; i++) {
        if (*w->stop) { free(step); return TB_INTERRUPTED; }
        if ((rc = tb_session_eval(w->sess, &tok, 1, false))) {
            free(step);
            return tb_err_prefix(rc, "decode at position %d", tb_session_pos(w->sess));
        }
        const float *lg = tb_session_logits(w->sess, -1);   // (n_vocab)
        int32_t best = 0;
        for (int32_t j = 1; j < n_vocab; j++) if (lg[j] > lg[best]) best = j;
        tok = best;
        uint64_t now = tb_now_ns();
        step[i] = (double)(now - prev) / 1e6;
        prev = now;
        if (w->record) event(r, 1, (int64_t)(now - t0), tok, NULL, 0);
        if (w->tick && (i & 63) == 63) w->tick(w->tick_ud, (double)i / (double)n);
    }
    double s = (double)(prev - start) / 1e9;
    double tps = (double)n / s;
    metric(r, "decode_tok_per_s", tps, "tok/s");
    metric(r, "decode_ms", s * 1e3, "ms");
    itl(r, step, (size_t)n);
    free(step);
    roofline(w, r, tps, depth, n);
    footprint(w, r, e0, (double)n);
    return TB_OK;
}

/* Sampling generation shared by ttft (n_gen = 2) and generate. */
static int run_generate(const tb_work_t *w, tb_rep_t *r, double e0, int64_t n_gen,
                        bool is_ttft) {
    const tb_section_t *sec = w->sec;
    tb_sampler_params_t sp = {.temp = 0, .top_k = 0, .top_p = 1, .min_p = 0, .seed = w->seed};
    bool stop_eos = false;
    if (!is_ttft) {
        sp.temp = (float)sec->v[K_GEN_TEMP].f;
        sp.top_p = (float)sec->v[K_GEN_TOP_P].f;
        sp.top_k = (int32_t)sec->v[K_GEN_TOP_K].i;
        sp.min_p = (float)sec->v[K_GEN_MIN_P].f;
        stop_eos = sec->v[K_GEN_STOP_AT_EOS].i != 0;
    }
    const tb_tokenizer_t *tk = tb_model_tokenizer(w->model);
    tb_sampler_t *smp = NULL;
    tb_detok_t *dt = NULL;
    double *step = malloc((size_t)n_gen * sizeof *step);   // (n_gen) ms between tokens
    int rc = step ? TB_OK : tb_err(TB_ERR_NOMEM, "out of memory");
    if (!rc) rc = tb_sampler_new(&sp, &smp);
    if (!rc) rc = tb_detok_new(tk, &dt);
    if (rc) goto done;

    int32_t n_vocab = tb_model_n_vocab(w->model);
    char piece[512];
    size_t chars = 0;
    int64_t n_out = 0, n_steps = 0;
    uint64_t t0 = tb_now_ns();
    if ((rc = prefill(w, r, w->prompt, w->n_prompt, t0, w->record))) goto done;
    uint64_t t_prefill = tb_now_ns();
    /* room for every decode event after the prompt's (a piece is <= 256 bytes) */
    if (w->record && (rc = reserve(r, (size_t)n_gen + 1, (size_t)(n_gen + 2) * 256))) goto done;
    int32_t tok = tb_sampler_sample(smp, tb_session_logits(w->sess, -1), n_vocab);
    int k = tb_detok_push(dt, tok, piece, sizeof piece);
    if (k < 0) { rc = k; goto done; }
    uint64_t t_first = tb_now_ns(), prev = t_first;
    chars += tb_utf8_chars(piece, (size_t)k);
    if (w->record) event(r, 1, (int64_t)(t_first - t0), tok, piece, k);
    n_out = 1;
    uint64_t t_second = 0;
    while (n_out < n_gen) {
        if (*w->stop) { rc = TB_INTERRUPTED; goto done; }
        if (stop_eos && tb_tokenizer_is_eog(tk, tok)) break;
        if ((rc = tb_session_eval(w->sess, &tok, 1, false))) {
            rc = tb_err_prefix(rc, "decode at position %d", tb_session_pos(w->sess));
            goto done;
        }
        tok = tb_sampler_sample(smp, tb_session_logits(w->sess, -1), n_vocab);
        k = tb_detok_push(dt, tok, piece, sizeof piece);
        if (k < 0) { rc = k; goto done; }
        uint64_t now = tb_now_ns();
        if (!t_second) t_second = now;
        step[n_steps++] = (double)(now - prev) / 1e6;
        prev = now;
        chars += tb_utf8_chars(piece, (size_t)k);
        if (w->record) event(r, 1, (int64_t)(now - t0), tok, piece, k);
        n_out++;
        if (w->tick && (n_out & 63) == 0) w->tick(w->tick_ud, (double)n_out / (double)n_gen);
    }
    k = tb_detok_flush(dt, piece, sizeof piece);
    if (k > 0) {
        chars += tb_utf8_chars(piece, (size_t)k);
        if (w->record && r->n_ev > 0) {   /* pending bytes belong to the last token */
            memcpy(r->text + r->n_text, piece, (size_t)k);
            r->n_text += (size_t)k;
            r->ev[r->n_ev - 1].text_len += (uint32_t)k;
        }
    }

    double prefill_s = (double)(t_prefill - t0) / 1e9;
    metric(r, "ttft_ms", (double)(t_first - t0) / 1e6, "ms");
    metric(r, "ttft_prefill_ms", prefill_s * 1e3, "ms");
    if (w->n_prompt > 0) metric(r, "prefill_tok_per_s", w->n_prompt / prefill_s, "tok/s");
    if (is_ttft) {
        if (t_second) metric(r, "ttft_first_decode_ms", (double)(t_second - t_first) / 1e6, "ms");
    } else {
        double dec_s = (double)(prev - t_first) / 1e9;
        double tps = n_steps > 0 ? (double)n_steps / dec_s : NAN;
        metric(r, "e2e_ms", (double)(prev - t0) / 1e6, "ms");
        metric(r, "decode_tok_per_s", tps, "tok/s");
        metric(r, "generated_tokens", (double)n_out, "tok");
        itl(r, step, (size_t)n_steps);
        double cpt = (double)chars / (double)n_out;
        metric(r, "chars_per_token", cpt, "chars/tok");
        metric(r, "chars_per_s", cpt * tps, "chars/s");
        roofline(w, r, tps, w->n_prompt, n_out);
        footprint(w, r, e0, (double)n_out);
    }
    if (is_ttft) footprint(w, r, -1, 0);
done:
    free(step);
    tb_detok_free(dt);
    tb_sampler_free(smp);
    return rc;
}

/* Continuous generation in windows, sliding or resetting at the context limit. */
static int run_sustained(const tb_work_t *w, tb_rep_t *r, double e0) {
    const tb_section_t *sec = w->sec;
    int64_t n_max = sec->v[K_SUS_TOKENS].i, dur_ms = sec->v[K_SUS_DURATION].i;
    int win = (int)sec->v[K_SUS_WINDOW].i, ctx = (int)sec->v[K_SUS_CTX].i;
    bool slide = !strcmp(sec->v[K_SUS_ON_FULL].s, "slide");
    tb_sampler_params_t sp = {.temp = (float)sec->v[K_SUS_TEMP].f, .top_p = (float)sec->v[K_SUS_TOP_P].f,
                              .top_k = 0, .min_p = 0, .seed = w->seed};
    tb_sampler_t *smp = NULL;
    int32_t *hist = malloc((size_t)ctx * sizeof *hist);     // (ctx) tokens in the KV cache, in order
    double *rates = NULL;
    int rc = hist ? tb_sampler_new(&sp, &smp) : tb_err(TB_ERR_NOMEM, "out of memory");
    if (rc) goto done;
    int32_t n_vocab = tb_model_n_vocab(w->model);
    int n_hist = TB_MIN(w->n_prompt, ctx - 1);
    memcpy(hist, w->prompt, (size_t)n_hist * sizeof *hist);
    uint64_t t0 = tb_now_ns();
    if ((rc = prefill(w, r, hist, n_hist, t0, false))) goto done;
    int32_t tok = tb_sampler_sample(smp, tb_session_logits(w->sess, -1), n_vocab);
    uint64_t start = tb_now_ns(), w_start = start;
    int64_t n = 0;
    double pos_sum = 0;   /* for the mean KV depth (bytes per token) */
    int in_win = 0, n_full = 0;
    for (;;) {
        if (*w->stop) { rc = TB_INTERRUPTED; goto done; }
        if (n_max > 0 && n >= n_max) break;
        if (dur_ms > 0 && (double)(tb_now_ns() - start) / 1e6 >= (double)dur_ms) break;
        if (n_hist >= ctx) {   /* context full */
            tb_session_reset(w->sess);
            n_full++;
            if (slide) {
                int keep = ctx / 2;
                memmove(hist, hist + n_hist - keep, (size_t)keep * sizeof *hist);
                n_hist = keep;
                if ((rc = prefill(w, r, hist, n_hist, t0, false))) goto done;
            } else {
                n_hist = 0;
            }
        }
        if ((rc = tb_session_eval(w->sess, &tok, 1, false))) {
            rc = tb_err_prefix(rc, "sustained decode at position %d", tb_session_pos(w->sess));
            goto done;
        }
        pos_sum += n_hist;
        hist[n_hist++] = tok;
        tok = tb_sampler_sample(smp, tb_session_logits(w->sess, -1), n_vocab);
        uint64_t now = tb_now_ns();
        n++;
        if (w->record) {
            if ((rc = reserve(r, 1, 0))) goto done;
            event(r, 1, (int64_t)(now - t0), tok, NULL, 0);
        }
        if (++in_win == win) {
            if (r->n_win == r->cap_win) {
                int nc = r->cap_win ? r->cap_win * 2 : 64;
                tb_window_t *p = realloc(r->win, (size_t)nc * sizeof *p);
                if (!p) { rc = tb_err(TB_ERR_NOMEM, "out of memory"); goto done; }
                r->win = p;
                r->cap_win = nc;
            }
            r->win[r->n_win++] = (tb_window_t){win, (int64_t)(w_start - t0), (int64_t)(now - t0),
                                               win / ((double)(now - w_start) / 1e9), n_hist};
            in_win = 0;
            w_start = now;
            if (w->tick) {
                double f = n_max > 0 ? (double)n / (double)n_max : 0;
                if (dur_ms > 0) f = TB_MAX(f, (double)(now - start) / 1e6 / (double)dur_ms);
                w->tick(w->tick_ud, f);
            }
        }
    }
    double s = (double)(tb_now_ns() - start) / 1e9;
    double tps = (double)n / s;
    metric(r, "decode_tok_per_s", tps, "tok/s");
    metric(r, "generated_tokens", (double)n, "tok");
    metric(r, "context_full_events", n_full, "count");
    if (r->n_win > 0) {
        rates = malloc((size_t)r->n_win * sizeof *rates);   // (n_win)
        if (!rates) { rc = tb_err(TB_ERR_NOMEM, "out of memory"); goto done; }
        for (int i = 0; i < r->n_win; i++) rates[i] = r->win[i].tok_per_s;
        metric(r, "window_tok_per_s", tb_stats_median(rates, (size_t)r->n_win), "tok/s");
        metric(r, "first_window_tok_per_s", rates[0], "tok/s");
        metric(r, "last_window_tok_per_s", rates[r->n_win - 1], "tok/s");
        if (r->n_win > 2)
            metric(r, "steady_window_tok_per_s", tb_stats_median(rates + 1, (size_t)r->n_win - 2), "tok/s");
        metric(r, "stability_pct", tb_stats_stability_pct(rates, (size_t)r->n_win), "%");
    }
    roofline(w, r, tps, n > 0 ? (int64_t)(pos_sum / (double)n) : 0, 0);
    footprint(w, r, e0, (double)n);
done:
    free(rates);
    free(hist);
    tb_sampler_free(smp);
    return rc;
}

/* One repetition; its metrics then end with steal_pct: the share of the
 * machine's CPU time a hypervisor stole during it (/proc/stat; absent
 * where that cannot be read). */
int tb_work_run(const tb_work_t *w, tb_rep_t *rep) {
    tb_rep_reset(rep);
    tb_session_reset(w->sess);
    double e0 = w->sensors ? tb_sensors_energy_j(w->sensors) : -1;
    uint64_t st0, tot0, st1, tot1;
    const int st_ok = tb_sensors_steal_read("", &st0, &tot0) == 0;
    int rc;
    switch (w->sec->kind) {
    case TB_SEC_PREFILL: rc = run_prefill(w, rep, e0); break;
    case TB_SEC_DECODE: rc = run_decode(w, rep, e0); break;
    case TB_SEC_TTFT: rc = run_generate(w, rep, e0, 2, true); break;
    case TB_SEC_GENERATE: rc = run_generate(w, rep, e0, w->sec->v[K_GEN_TOKENS].i, false); break;
    case TB_SEC_SUSTAINED: rc = run_sustained(w, rep, e0); break;
    default: return tb_err(TB_ERR_INTERNAL, "not a test section: [%s]", w->sec->name);
    }
    if (!rc && st_ok && tb_sensors_steal_read("", &st1, &tot1) == 0)
        metric(rep, "steal_pct", tb_sensors_steal_pct(st0, tot0, st1, tot1), "%");
    return rc;
}
