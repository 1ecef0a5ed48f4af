/*
 * profile.c — per-phase wall time and weight bytes of a session's forward
 * passes (tb_session_set_profile). The forward code brackets each phase
 * with tb_prof_start / tb_prof_end; when profiling is off that is one
 * branch per phase per layer and no clock read.
 */
#include "model/session.h"

#include <string.h>

static const char *const names[TB_PHASE_COUNT] = {
    [TB_PHASE_EMBED] = "embed",       [TB_PHASE_QKV] = "qkv",           [TB_PHASE_ATTENTION] = "attention",
    [TB_PHASE_ATTN_OUT] = "attn_out", [TB_PHASE_ROUTER] = "router",     [TB_PHASE_FFN_UP] = "ffn_up",
    [TB_PHASE_FFN_DOWN] = "ffn_down", [TB_PHASE_OUTPUT] = "output",
};

const char *tb_phase_name(tb_phase_t p) {
    return (unsigned)p < TB_PHASE_COUNT ? names[p] : "?";
}

static const char *const split_names[TB_SPLIT_PASS_COUNT] = {
    [TB_SPLIT_ATTN] = "attention", [TB_SPLIT_FFN] = "ffn", [TB_SPLIT_ROUTER] = "router",
    [TB_SPLIT_EXPERTS] = "experts",
};

const char *tb_split_pass_name(tb_split_pass_t p) {
    return (unsigned)p < TB_SPLIT_PASS_COUNT ? split_names[p] : "?";
}

void tb_session_set_split_profile(tb_session_t *s, bool on) {
    if (!s) return;
    memset(&s->split_prof, 0, sizeof s->split_prof);
    s->split_prof_on = on;
}

void tb_session_get_split_profile(const tb_session_t *s, tb_split_profile_t *out) {
    if (!out) return;
    if (!s) { memset(out, 0, sizeof *out); return; }
    *out = s->split_prof;
}

/* Zero the pass clock's sums. */
static void clock_clear(tb_pass_clock_t *c) { c->passes = c->wake_ns = c->prologue_ns = c->tail_ns = 0; }

void tb_session_set_profile(tb_session_t *s, bool on) {
    if (!s) return;
    memset(&s->prof, 0, sizeof s->prof);
    clock_clear(&s->clk);
    s->prof_on = on;
}

void tb_session_get_profile(const tb_session_t *s, tb_profile_t *out) {
    if (!out) return;
    if (!s) { memset(out, 0, sizeof *out); return; }
    *out = s->prof;
}

void tb_prof_end(tb_session_t *s, tb_phase_t ph, uint64_t t0, uint64_t bytes) {
    if (!s->prof_on) return;
    assert((unsigned)ph < TB_PHASE_COUNT);
    tb_phase_stats_t *p = &s->prof.phase[ph];
    tb_pass_clock_t *c = &s->clk;
    p->ns += tb_now_ns() - t0;
    p->bytes += bytes;
    p->calls++;
    p->passes += c->passes;
    p->wake_ns += c->wake_ns;
    p->prologue_ns += c->prologue_ns;
    p->tail_ns += c->tail_ns;
    clock_clear(c);
}

/* ===================================================================== */
/* Pass clock                                                             */
/* ===================================================================== */

static void clock_begin(tb_pass_clock_t *c) {
    if (!c) return;
    memset(c->t, 0, (size_t)c->nth * TB_CLK_STRIDE * sizeof *c->t);
    c->t_start = tb_now_ns();
}

static void clock_end(tb_pass_clock_t *c) {
    if (!c) return;
    const uint64_t end = tb_now_ns();
    uint64_t last_in = c->t_start, first_done = end, pro = 0;
    int n = 0;
    for (int i = 0; i < c->nth; i++) {
        const uint64_t *t = c->t + (size_t)i * TB_CLK_STRIDE;
        if (!t[TB_CLK_ENTRY]) continue;            /* closed out of the pass */
        assert(t[TB_CLK_ROWS] >= t[TB_CLK_ENTRY] && t[TB_CLK_DONE] >= t[TB_CLK_ROWS]);
        last_in = TB_MAX(last_in, t[TB_CLK_ENTRY]);
        first_done = TB_MIN(first_done, t[TB_CLK_DONE]);
        pro += t[TB_CLK_ROWS] - t[TB_CLK_ENTRY];
        n++;
    }
    c->passes++;
    c->wake_ns += last_in - c->t_start;
    c->prologue_ns += n ? pro / (uint64_t)n : 0;
    c->tail_ns += end - first_done;
}

void tb_pass_clock_run(tb_pass_clock_t *c, tb_pool_t *pool, void (*fn)(void *, int, int), void *arg,
                       bool shared) {
    clock_begin(c);
    if (shared) tb_pool_run_shared(pool, fn, arg);
    else tb_pool_run(pool, fn, arg);
    clock_end(c);
}

void tb_prof_end_jobs(tb_session_t *s, tb_phase_t ph, uint64_t t0, const tb_lin_job_t *jobs, int n_jobs) {
    if (!s->prof_on) return;
    uint64_t b = 0;
    for (int j = 0; j < n_jobs; j++) b += tb_weight_bytes(jobs[j].w);
    tb_prof_end(s, ph, t0, b);
}
