/*
 * workload.c — the speed test kinds, one repetition each (see workload.h);
 * a [claim] section measures by decoding (its claims: workload_claim.c);
 * [quality] is workload_quality.c.
 *
 * Timing: tb_now_ns() (monotonic) around engine calls only; sampling and
 * detokenization are inside the per-token interval because a user waits for
 * them too. Events are appended to preallocated arrays, so recording costs a
 * store to memory per token (the database is written between repetitions).
 */
#include "workload.h"
#include "facts.h"
#include "tbutil.h"
#include "ternbench.h"
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

void tb_rep_metric(tb_rep_t *r, tb_metric_id_t id, double v) {
    if (r->n_m >= TB_REP_MAX_METRICS || !isfinite(v)) return;
    r->m[r->n_m++] = (tb_metric_t){id, v};
}

double tb_rep_value(const tb_rep_t *r, tb_metric_id_t id) {
    for (int i = 0; i < r->n_m; i++)
        if (r->m[i].id == id) return r->m[i].value;
    return NAN;
}

#define metric tb_rep_metric

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
static void event(tb_rep_t *r, int phase, int64_t t_ns, int64_t dur_ns, int32_t id,
                  const char *text, int len) {
    tb_tok_event_t *e = &r->ev[r->n_ev++];
    e->phase = phase;
    e->t_ns = t_ns;
    e->dur_ns = dur_ns;
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

tb_metric_id_t tb_work_headline_metric(tb_sec_kind_t kind) {
    switch (kind) {
    case TB_SEC_PREFILL: return TB_M_PREFILL_TOK_PER_S;
    case TB_SEC_TTFT: return TB_M_TTFT_MS;
    case TB_SEC_QUALITY: return TB_M_SAME_TOP_PCT;
    default: return TB_M_DECODE_TOK_PER_S;
    }
}

int32_t tb_work_ctx_needed(const tb_section_t *sec, int64_t param, int n_prompt) {
    switch (sec->kind) {
    case TB_SEC_PREFILL: return (int32_t)param;
    case TB_SEC_DECODE: case TB_SEC_CLAIM: return (int32_t)(param + tb_work_decode_tokens(sec) + 1);
    case TB_SEC_TTFT: return n_prompt + 2;
    case TB_SEC_GENERATE: return (int32_t)(n_prompt + sec->v[K_GEN_TOKENS].i + 1);
    case TB_SEC_SUSTAINED: return (int32_t)sec->v[K_SUS_CTX].i;
    case TB_SEC_QUALITY: return (int32_t)sec->v[K_QUAL_CTX].i;
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
            for (int i = 0; i < k; i++) event(r, 0, t, -1, toks[off + i], NULL, 0);
    }
    return TB_OK;
}

/* Bytes per token at the middle of [depth, depth + n) and the achieved
 * bandwidth; the runner charges it against the repetition's probes. With
 * an approximate head the head's share is what it read since h0 (its
 * selected rows and its centroids), not the whole head. */
static void roofline(const tb_work_t *w, tb_rep_t *r, double tok_per_s, int64_t depth, int64_t n,
                     const tb_head_stats_t *h0) {
    tb_bytes_per_token_t b;
    if (tb_model_bytes_per_token(w->model, (int32_t)(depth + n / 2), w->kv_type, &b) != TB_OK) return;
    double total = (double)b.total;
    tb_head_info_t hi;
    if (w->head && h0 && tb_head_get_info(w->head, &hi) == TB_OK) {
        tb_head_stats_t h1;
        tb_session_get_head_stats(w->sess, &h1);
        uint64_t pos = h1.positions - h0->positions;
        if (pos > 0)
            total += ((double)(h1.rows - h0->rows) * (double)hi.row_bytes +
                      (double)(h1.centroid_rows - h0->centroid_rows) * (double)hi.centroid_row_bytes) /
                     (double)pos - (double)b.output;
    }
    metric(r, TB_M_BYTES_PER_TOKEN, total);
    metric(r, TB_M_ACHIEVED_GBPS, tok_per_s * total / 1e9);
}

/* Inter-token latency percentiles from n decode step durations (ns). */
static void itl(tb_rep_t *r, const double *step_ms, size_t n) {
    if (n == 0) return;
    metric(r, TB_M_ITL_P50_MS, tb_stats_percentile(step_ms, n, 50));
    metric(r, TB_M_ITL_P90_MS, tb_stats_percentile(step_ms, n, 90));
    metric(r, TB_M_ITL_P99_MS, tb_stats_percentile(step_ms, n, 99));
    double mx = 0;
    for (size_t i = 0; i < n; i++) mx = TB_MAX(mx, step_ms[i]);
    metric(r, TB_M_ITL_MAX_MS, mx);
    metric(r, TB_M_STALL_PCT, tb_stats_stall_pct(step_ms, n, TB_STALL_FACTOR));
}

/* Memory and energy, common to every kind (the clock and vector probes
 * bracket the repetition in the runner). */
static void footprint(const tb_work_t *w, tb_rep_t *r, double e0, double tokens) {
    int64_t rss = tb_facts_peak_rss();
    if (rss >= 0) metric(r, TB_M_PEAK_RSS_BYTES, (double)rss);
    metric(r, TB_M_SESSION_BYTES, (double)tb_session_memory_bytes(w->sess));
    if (e0 >= 0 && w->sensors && tokens > 0) {
        double e1 = tb_sensors_energy_j(w->sensors);
        if (e1 >= e0) metric(r, TB_M_ENERGY_J_PER_TOK, (e1 - e0) / tokens);
    }
}

/* ===================================================================== */
/* The kinds                                                              */
/* ===================================================================== */

static int run_prefill(const tb_work_t *w, tb_rep_t *r, double e0) {
    uint64_t t0 = tb_now_ns();
    int rc = prefill(w, r, w->prompt, w->n_prompt, t0, w->record);
    if (rc) return rc;
    double s = (double)(tb_now_ns() - t0) / 1e9, tps = w->n_prompt / s;
    metric(r, TB_M_PREFILL_TOK_PER_S, tps);
    metric(r, TB_M_PREFILL_MS, s * 1e3);
    /* a batched prefill reads every weight once per batch: bytes/token = weights / P */
    tb_model_info_t mi;
    if (w->n_prompt > 0 && tb_model_get_info(w->model, &mi) == TB_OK) {
        int nb = w->n_batch > 0 ? w->n_batch : w->n_prompt;
        double per_tok = (double)mi.weight_bytes / (double)TB_MIN(nb, w->n_prompt);
        metric(r, TB_M_BYTES_PER_TOKEN, per_tok);
        metric(r, TB_M_ACHIEVED_GBPS, tps * per_tok / 1e9);
    }
    footprint(w, r, e0, w->n_prompt);
    return TB_OK;
}

int tb_work_decode_begin(const tb_work_t *w, tb_rep_t *rep, tb_decode_t *d) {
    tb_rep_reset(rep);
    tb_session_reset(w->sess);
    *d = (tb_decode_t){.depth = w->param, .n = tb_work_decode_tokens(w->sec), .e0 = -1};
    d->t0 = tb_now_ns();
    int rc;
    if (d->depth > 0 && (rc = prefill(w, rep, w->prompt, (int)d->depth, d->t0, false))) return rc;
    if (!(d->step = malloc((size_t)TB_MAX(d->n, 1) * sizeof *d->step)))   // (n)
        return tb_err(TB_ERR_NOMEM, "out of memory");
    if (w->record && (rc = reserve(rep, (size_t)d->n, 0))) return rc;
    d->tok = d->depth > 0 ? w->prompt[d->depth - 1] : w->n_prompt > 0 ? w->prompt[0] : 0;
    d->e0 = w->sensors ? tb_sensors_energy_j(w->sensors) : -1;
    tb_session_get_head_stats(w->sess, &d->h0);
    return TB_OK;
}

/* One greedy token: eval, argmax; its own time is the step. */
int tb_work_decode_step(const tb_work_t *w, tb_rep_t *rep, tb_decode_t *d) {
    if (*w->stop) return TB_INTERRUPTED;
    uint64_t t = tb_now_ns();
    int rc = tb_session_eval(w->sess, &d->tok, 1, false);
    if (rc) return tb_err_prefix(rc, "decode at position %d", tb_session_pos(w->sess));
    const float *lg = tb_session_logits(w->sess, -1);   // (n_vocab)
    int32_t n_vocab = tb_model_n_vocab(w->model), best = 0;
    for (int32_t j = 1; j < n_vocab; j++) if (lg[j] > lg[best]) best = j;
    d->tok = best;
    uint64_t now = tb_now_ns();
    d->step[d->i] = (double)(now - t) / 1e6;
    if (w->record) event(rep, 1, (int64_t)(now - d->t0), (int64_t)(now - t), best, NULL, 0);
    d->i++;
    if (w->tick && (d->i & 63) == 0) w->tick(w->tick_ud, (double)d->i / (double)d->n);
    return TB_OK;
}

int tb_work_decode_end(const tb_work_t *w, tb_rep_t *rep, tb_decode_t *d, int rc) {
    if (rc == TB_OK && d->i == d->n && d->n > 0) {
        double ms = 0;
        for (int64_t i = 0; i < d->n; i++) ms += d->step[i];
        double tps = (double)d->n * 1e3 / (ms > 0 ? ms : 1e-9);
        metric(rep, TB_M_DECODE_TOK_PER_S, tps);
        metric(rep, TB_M_DECODE_MS, ms);
        itl(rep, d->step, (size_t)d->n);
        roofline(w, rep, tps, d->depth, d->n, &d->h0);
        footprint(w, rep, d->e0, (double)d->n);
    }
    free(d->step);
    d->step = NULL;
    return rc;
}

/* Greedy decode of `n` tokens after an untimed prefill to `depth`. */
static int run_decode(const tb_work_t *w, tb_rep_t *r) {
    tb_decode_t d;
    int rc = tb_work_decode_begin(w, r, &d);
    while (rc == TB_OK && d.i < d.n) rc = tb_work_decode_step(w, r, &d);
    return tb_work_decode_end(w, r, &d, rc);
}

/* A token's text, however long: push, then drain until nothing complete
 * is left (flush instead: everything pending), into *buf (grown as
 * needed, *cap its size). Returns the bytes or a negative status. */
static int token_text(tb_detok_t *dt, int32_t tok, bool flush, char **buf, size_t *cap) {
    size_t n = 0;
    for (int first = 1;; first = 0) {
        if (*cap - n < 512) {
            size_t nc = *cap ? 2 * *cap : 1024;
            char *p = realloc(*buf, nc);
            if (!p) return tb_err(TB_ERR_NOMEM, "out of memory for token text");
            *buf = p;
            *cap = nc;
        }
        int k = flush ? tb_detok_flush(dt, *buf + n, *cap - n)
              : first ? tb_detok_push(dt, tok, *buf + n, *cap - n) : tb_detok_drain(dt, *buf + n, *cap - n);
        if (k < 0) return k;
        if (k == 0) break;   /* with >= 4 bytes of room, 0: nothing complete is left */
        n += (size_t)k;
    }
    return (int)n;
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
    char *piece = NULL;   /* (piece_cap) the current token's text */
    size_t piece_cap = 0;
    double *step = malloc((size_t)n_gen * sizeof *step);   // (n_gen) ms between tokens
    int rc = step ? TB_OK : tb_err(TB_ERR_NOMEM, "out of memory");
    if (!rc) rc = tb_sampler_new(&sp, &smp);
    if (!rc) rc = tb_detok_new(tk, &dt);
    if (rc) goto done;

    int32_t n_vocab = tb_model_n_vocab(w->model);
    size_t chars = 0;
    int64_t n_out = 0, n_steps = 0;
    uint64_t t0 = tb_now_ns();
    if ((rc = prefill(w, r, w->prompt, w->n_prompt, t0, w->record))) goto done;
    uint64_t t_prefill = tb_now_ns();
    tb_head_stats_t h0;   /* the head's reads from here on are the decode's */
    tb_session_get_head_stats(w->sess, &h0);
    /* room for every decode event after the prompt's (more is reserved for a long piece) */
    if (w->record && (rc = reserve(r, (size_t)n_gen + 1, (size_t)(n_gen + 2) * 256))) goto done;
    int32_t tok = tb_sampler_sample(smp, tb_session_logits(w->sess, -1), n_vocab);
    int k = token_text(dt, tok, false, &piece, &piece_cap);
    if (k < 0) { rc = k; goto done; }
    uint64_t t_first = tb_now_ns(), prev = t_first;
    chars += tb_utf8_chars(piece, (size_t)k);
    if (w->record && (rc = reserve(r, 1, (size_t)k))) goto done;
    if (w->record) event(r, 1, (int64_t)(t_first - t0), (int64_t)(t_first - t_prefill), tok, piece, k);
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
        k = token_text(dt, tok, false, &piece, &piece_cap);
        if (k < 0) { rc = k; goto done; }
        uint64_t now = tb_now_ns(), prev_ev = prev;
        if (!t_second) t_second = now;
        step[n_steps++] = (double)(now - prev) / 1e6;
        prev = now;
        chars += tb_utf8_chars(piece, (size_t)k);
        if (w->record && (rc = reserve(r, 1, (size_t)k))) goto done;
        if (w->record) event(r, 1, (int64_t)(now - t0), (int64_t)(now - prev_ev), tok, piece, k);
        n_out++;
        if (w->tick && (n_out & 63) == 0) w->tick(w->tick_ud, (double)n_out / (double)n_gen);
    }
    k = token_text(dt, 0, true, &piece, &piece_cap);
    if (k < 0) { rc = k; goto done; }
    if (k > 0) {
        chars += tb_utf8_chars(piece, (size_t)k);
        if (w->record && (rc = reserve(r, 0, (size_t)k))) goto done;
        if (w->record && r->n_ev > 0) {   /* pending bytes belong to the last token */
            memcpy(r->text + r->n_text, piece, (size_t)k);
            r->n_text += (size_t)k;
            r->ev[r->n_ev - 1].text_len += (uint32_t)k;
        }
    }

    double prefill_s = (double)(t_prefill - t0) / 1e9;
    metric(r, TB_M_TTFT_MS, (double)(t_first - t0) / 1e6);
    metric(r, TB_M_TTFT_PREFILL_MS, prefill_s * 1e3);
    if (w->n_prompt > 0) metric(r, TB_M_PREFILL_TOK_PER_S, w->n_prompt / prefill_s);
    if (is_ttft) {
        if (t_second) metric(r, TB_M_TTFT_FIRST_DECODE_MS, (double)(t_second - t_first) / 1e6);
    } else {
        double dec_s = (double)(prev - t_first) / 1e9;
        double tps = n_steps > 0 ? (double)n_steps / dec_s : NAN;
        metric(r, TB_M_E2E_MS, (double)(prev - t0) / 1e6);
        metric(r, TB_M_DECODE_TOK_PER_S, tps);
        metric(r, TB_M_GENERATED_TOKENS, (double)n_out);
        itl(r, step, (size_t)n_steps);
        double cpt = (double)chars / (double)n_out;
        metric(r, TB_M_CHARS_PER_TOKEN, cpt);
        metric(r, TB_M_CHARS_PER_S, cpt * tps);
        roofline(w, r, tps, w->n_prompt, n_out, &h0);
        footprint(w, r, e0, (double)n_out);
    }
    if (is_ttft) footprint(w, r, -1, 0);
done:
    free(step);
    free(piece);
    tb_detok_free(dt);
    tb_sampler_free(smp);
    return rc;
}

/* Close the window [w_start, now] of `n_tok` tokens into r->win. */
static int add_window(tb_rep_t *r, int n_tok, uint64_t t0, uint64_t w_start, uint64_t now,
                      int64_t refill_ns, int refills, int ctx_pos) {
    if (r->n_win == r->cap_win) {
        int nc = r->cap_win ? r->cap_win * 2 : 64;
        tb_window_t *p = realloc(r->win, (size_t)nc * sizeof *p);
        if (!p) return tb_err(TB_ERR_NOMEM, "out of memory");
        r->win = p;
        r->cap_win = nc;
    }
    double s = (double)((int64_t)(now - w_start) - refill_ns) / 1e9;
    r->win[r->n_win++] = (tb_window_t){.n_tokens = n_tok, .t0_ns = (int64_t)(w_start - t0),
                                       .t1_ns = (int64_t)(now - t0), .refill_ns = refill_ns,
                                       .refills = refills, .tok_per_s = n_tok / (s > 0 ? s : 1e-9),
                                       .ctx_pos = ctx_pos};
    return TB_OK;
}

/* (*d)[i] = depth, *d grown as needed (*cap entries). */
static int add_depth(double **d, int *cap, int i, double depth) {
    if (i >= *cap) {
        int nc = *cap ? *cap * 2 : 64;
        double *p = realloc(*d, (size_t)nc * sizeof *p);
        if (!p) return tb_err(TB_ERR_NOMEM, "out of memory");
        *d = p;
        *cap = nc;
    }
    (*d)[i] = depth;
    return TB_OK;
}

/* Continuous generation in windows, shifting, sliding or resetting at the
 * context limit. shift: the engine drops the older half of the KV cache
 * (tb_session_kv_shift) and generation goes on; that is the engine's work,
 * part of what a long generation costs, so it is timed inside the window
 * and inside the next token's step. The harness's own work (a reset, and
 * for slide the re-prefill of the kept half) is timed apart: it is taken
 * out of the window's rate and the window is marked (refills > 0), and
 * marked or partial windows stay out of the stability figures, so that a
 * sustained test measures the device and never presents the harness's
 * work as throttling. A token's cost grows with the depth of the cache it
 * attends over, so once the context has filled (and depths recur) the
 * stability compares windows of matched mean depth only
 * (tb_stats_stability_matched_pct, bins of ctx / 8). Every window is
 * recorded, the last partial one included. */
static int run_sustained(const tb_work_t *w, tb_rep_t *r, double e0) {
    const tb_section_t *sec = w->sec;
    int64_t n_max = sec->v[K_SUS_TOKENS].i, dur_ms = sec->v[K_SUS_DURATION].i;
    int win = (int)sec->v[K_SUS_WINDOW].i, ctx = (int)sec->v[K_SUS_CTX].i;
    bool slide = !strcmp(sec->v[K_SUS_ON_FULL].s, "slide"), shift = !strcmp(sec->v[K_SUS_ON_FULL].s, "shift");
    tb_sampler_params_t sp = {.temp = (float)sec->v[K_SUS_TEMP].f, .top_p = (float)sec->v[K_SUS_TOP_P].f,
                              .top_k = 0, .min_p = 0, .seed = w->seed};
    tb_sampler_t *smp = NULL;
    int32_t *hist = malloc((size_t)ctx * sizeof *hist);     // (ctx) tokens in the KV cache, in order
    double *rates = NULL, *wdepth = NULL;   // (n_win) clean rates; (cap_depth) each window's mean depth
    int cap_depth = 0;
    int rc = hist ? tb_sampler_new(&sp, &smp) : tb_err(TB_ERR_NOMEM, "out of memory");
    if (rc) goto done;
    int32_t n_vocab = tb_model_n_vocab(w->model);
    int n_hist = TB_MIN(w->n_prompt, ctx - 1);
    memcpy(hist, w->prompt, (size_t)n_hist * sizeof *hist);
    uint64_t t0 = tb_now_ns();
    if ((rc = prefill(w, r, hist, n_hist, t0, false))) goto done;
    int32_t tok = tb_sampler_sample(smp, tb_session_logits(w->sess, -1), n_vocab);
    tb_head_stats_t h0;
    tb_session_get_head_stats(w->sess, &h0);
    uint64_t start = tb_now_ns(), w_start = start, prev = start;
    int64_t n = 0, refill_ns = 0, refill_total = 0;
    double pos_sum = 0, win_pos_sum = 0;   /* for the mean KV depth (bytes per token, windows) */
    int in_win = 0, n_full = 0, refills = 0;
    for (;;) {
        if (*w->stop) { rc = TB_INTERRUPTED; goto done; }
        if (n_max > 0 && n >= n_max) break;
        if (dur_ms > 0 && (double)(tb_now_ns() - start) / 1e6 >= (double)dur_ms) break;
        uint64_t ts = tb_now_ns();
        if (n_hist >= ctx && shift) {   /* context full: the engine's work, in the window */
            int keep = ctx / 2;
            if ((rc = tb_session_kv_shift(w->sess, n_hist - keep))) goto done;
            memmove(hist, hist + n_hist - keep, (size_t)keep * sizeof *hist);
            n_hist = keep;
            n_full++;
        }
        if (n_hist >= ctx) {   /* context full: the harness's work, timed apart */
            uint64_t f0 = tb_now_ns();
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
            int64_t f = (int64_t)(tb_now_ns() - f0);
            refill_ns += f;
            refill_total += f;
            refills++;
            ts = tb_now_ns();
        }
        if ((rc = tb_session_eval(w->sess, &tok, 1, false))) {
            rc = tb_err_prefix(rc, "sustained decode at position %d", tb_session_pos(w->sess));
            goto done;
        }
        pos_sum += n_hist;
        win_pos_sum += n_hist;
        hist[n_hist++] = tok;
        tok = tb_sampler_sample(smp, tb_session_logits(w->sess, -1), n_vocab);
        uint64_t now = tb_now_ns();
        prev = now;
        n++;
        if (w->record) {
            if ((rc = reserve(r, 1, 0))) goto done;
            event(r, 1, (int64_t)(now - t0), (int64_t)(now - ts), tok, NULL, 0);
        }
        if (++in_win == win) {
            if ((rc = add_window(r, win, t0, w_start, now, refill_ns, refills, n_hist))) goto done;
            if ((rc = add_depth(&wdepth, &cap_depth, r->n_win - 1, win_pos_sum / win))) goto done;
            win_pos_sum = 0;
            in_win = refills = 0;
            refill_ns = 0;
            w_start = now;
            if (w->tick) {
                double f = n_max > 0 ? (double)n / (double)n_max : 0;
                if (dur_ms > 0) f = TB_MAX(f, (double)(now - start) / 1e6 / (double)dur_ms);
                w->tick(w->tick_ud, f);
            }
        }
    }
    if (in_win > 0 && (rc = add_window(r, in_win, t0, w_start, prev, refill_ns, refills, n_hist))) goto done;
    if (in_win > 0 && (rc = add_depth(&wdepth, &cap_depth, r->n_win - 1, win_pos_sum / in_win))) goto done;
    double s = (double)((int64_t)(prev - start) - refill_total) / 1e9;
    double tps = (double)n / (s > 0 ? s : 1e-9);
    metric(r, TB_M_DECODE_TOK_PER_S, tps);
    metric(r, TB_M_GENERATED_TOKENS, (double)n);
    metric(r, TB_M_CONTEXT_FULL_EVENTS, n_full);
    metric(r, TB_M_REFILL_MS, (double)refill_total / 1e6);
    /* the clean windows: full, and without the harness's context work */
    rates = malloc((size_t)TB_MAX(r->n_win, 1) * sizeof *rates);   // (n_win)
    if (!rates) { rc = tb_err(TB_ERR_NOMEM, "out of memory"); goto done; }
    int m = 0;
    for (int i = 0; i < r->n_win; i++)
        if (r->win[i].n_tokens == win && r->win[i].refills == 0) {
            wdepth[m] = wdepth[i];   /* m <= i: compacted in place, in step with rates */
            rates[m++] = r->win[i].tok_per_s;
        }
    if (m > 0) {
        metric(r, TB_M_WINDOW_TOK_PER_S, tb_stats_median(rates, (size_t)m));
        metric(r, TB_M_FIRST_WINDOW_TOK_PER_S, rates[0]);
        metric(r, TB_M_LAST_WINDOW_TOK_PER_S, rates[m - 1]);
        if (m > 2) metric(r, TB_M_STEADY_WINDOW_TOK_PER_S, tb_stats_median(rates + 1, (size_t)m - 2));
        /* a context that filled came back to the same depths: compare windows at matched
         * depth (bins of ctx / 8), so that the depth's own cost is not read as instability;
         * else (or with no two windows in one bin) every clean window */
        double st = n_full > 0 ? tb_stats_stability_matched_pct(rates, wdepth, (size_t)m, ctx / 8.0) : NAN;
        metric(r, TB_M_STABILITY_PCT, isnan(st) ? tb_stats_stability_pct(rates, (size_t)m) : st);
    }
    roofline(w, r, tps, n > 0 ? (int64_t)(pos_sum / (double)n) : 0, 0, &h0);
    footprint(w, r, e0, (double)n);
done:
    free(rates);
    free(wdepth);
    free(hist);
    tb_sampler_free(smp);
    return rc;
}

int64_t tb_work_decode_tokens(const tb_section_t *sec) {
    return sec->kind == TB_SEC_CLAIM ? sec->v[K_CLAIM_TOKENS].i : sec->v[K_DECODE_TOKENS].i;
}

int tb_work_run(const tb_work_t *w, tb_rep_t *rep) {
    /* a [claim] section's measurement is a decode at each ctx (workload_claim.c records the claims) */
    if (w->sec->kind == TB_SEC_DECODE || w->sec->kind == TB_SEC_CLAIM) return run_decode(w, rep);
    if (w->sec->kind == TB_SEC_QUALITY) return tb_work_quality_run(w, rep);
    tb_rep_reset(rep);
    tb_session_reset(w->sess);
    double e0 = w->sensors ? tb_sensors_energy_j(w->sensors) : -1;
    switch (w->sec->kind) {
    case TB_SEC_PREFILL: return run_prefill(w, rep, e0);
    case TB_SEC_TTFT: return run_generate(w, rep, e0, 2, true);
    case TB_SEC_GENERATE: return run_generate(w, rep, e0, w->sec->v[K_GEN_TOKENS].i, false);
    case TB_SEC_SUSTAINED: return run_sustained(w, rep, e0);
    default: return tb_err(TB_ERR_INTERNAL, "not a test section: [%s]", w->sec->name);
    }
}
