/*
 * cmd_bench.c — `ternbench bench`: the quick llama-bench-style prefill and
 * decode benchmark of one model file, or an interleaved comparison of
 * several.
 *
 * A test (ppP: one prefill of P tokens; tgN: N tokens decoded one at a
 * time after the cache was filled to --ctx) is a warm-up eval, then R timed
 * evals, each followed by a read-bandwidth probe. Rep i is charged against
 * the higher of the probes on either side of it, so when this VM's
 * bandwidth moves between its states (~33 and ~60 GB/s) each rep is
 * compared with what memory delivered around it. A rep whose two probes
 * differ by more than PROBE_AGREE ran while the state changed: its real
 * roofline lies somewhere between them, and the higher one can charge it
 * for a state it spent only part of its time in. Such reps stay in every
 * figure above; the "settled" figure is the median over the others alone,
 * and the JSON lists every rep's tok/s and probes. Beside each bandwidth
 * probe a CPU probe reads the slowest thread's core clock (tb_cpu_probe):
 * a rep whose two are not both within CPU_FULL of the test's best ran with
 * a core slowed (by the host or the thermals), and the "full-speed" figure
 * is the median over the others. A vector probe (tb_cpu_probe_vec) reads
 * the slowest thread's vector throughput beside it, which also falls when
 * a host's SMT sibling shares a core's vector units; a rep whose two both
 * fall under CPU_FULL of the test's best is counted as "vector-shared"
 * (one low probe alone is common and brief). That count is a diagnostic:
 * it does not take reps out of any figure, since the reps it flagged on
 * this project's Zen 4 VM were not measurably slower (docs/engine-notes.md,
 * session 24). The share of the machine's CPU time a hypervisor stole
 * during each timed eval (/proc/stat) is recorded beside them, also as a
 * diagnostic.
 *
 * With several -m files the files take turns inside every rep (A B, then
 * B A, ...), so they see the same machine states, and each file after the
 * first is compared with the first rep by rep: the median over reps of the
 * ratio of its tok/s to the first file's in the same rep (a paired
 * measurement: two runs seconds apart, instead of two runs minutes apart
 * in different states), how many reps it was faster in, and the two-sided
 * sign-test p-value of that count. With --interleave token the files take
 * turns token by token inside every decode rep instead (each file's rep
 * time is the sum of its own tokens'), and each token of a file after the
 * first is also paired with the first file's token next to it: their
 * ratios' median and quartiles over every pair, and the sign test over
 * pairs. This VM's bandwidth changes state within a second, inside a rep
 * of a large file; two tokens milliseconds apart nearly always share one.
 */
#include "commands.h"
#include "sensors.h"
#include "stats.h"
#include "ternbench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"


/* ---------------------------------------------------------------------- */
/* Timing                                                                   */
/* ---------------------------------------------------------------------- */

/* What a timed eval profiles: nothing, its phases, or its split passes. */
enum { PROF_NONE, PROF_PHASES, PROF_SPLIT };

/* An emptied cache of s filled to `depth` tokens (untimed), and the token
 * ids every eval feeds (the same for every rep; max(n, depth) of them,
 * freed by the caller). NULL when out of memory (*rc TB_ERR_NOMEM); *rc
 * is the prefill's status otherwise. */
static int32_t *bench_start(tb_session_t *s, int32_t n_vocab, int depth, int n, int *rc) {
    const int count = n > depth ? n : depth;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)count + sizeof(int32_t));
    *rc = ids ? TB_OK : TB_ERR_NOMEM;
    for (int i = 0; ids && i < count; i++) ids[i] = (int32_t)((i * 7919 + 13) % n_vocab);
    tb_session_reset(s);
    if (ids && depth) *rc = tb_session_eval(s, ids, depth, false);
    return ids;
}

/* One timed eval of n tokens (prefill if batch, else one token at a time)
 * after the cache was filled to `depth` tokens (untimed, unprofiled); with
 * `profile` the session's per-phase (or split-pass) profile covers exactly
 * the timed eval. Decoding, lat_ms (when not NULL) gets each token's
 * latency (n). */
static int time_eval(tb_session_t *s, int32_t n_vocab, int depth, int n, bool batch, int profile,
                     double *tps, double *lat_ms) {
    int rc;
    int32_t *ids = bench_start(s, n_vocab, depth, n, &rc);
    if (!ids) return rc;
    if (profile == PROF_PHASES) tb_session_set_profile(s, true);
    if (profile == PROF_SPLIT) tb_session_set_split_profile(s, true);
    uint64_t t0 = tb_now_ns();
    if (!rc && batch) rc = tb_session_eval(s, ids, n, false);
    uint64_t prev = t0;
    for (int i = 0; !rc && !batch && i < n; i++) {
        rc = tb_session_eval(s, &ids[i], 1, false);
        if (lat_ms) {
            const uint64_t tn = tb_now_ns();
            lat_ms[i] = (double)(tn - prev) / 1e6;
            prev = tn;
        }
    }
    uint64_t dt = tb_now_ns() - t0;
    free(ids);
    *tps = (double)n * 1e9 / (double)(dt ? dt : 1);
    return rc;
}

/* Rep i of decode test ti with the files taking turns token by token
 * (--interleave token): every cache filled to `depth` (untimed), then n
 * rounds of one token per file, the files in order when rep + round is
 * even and in reverse when odd, so neither file always follows the other. Each
 * token's latency goes to v[k].res[ti].tok_lat (rep i), each file's
 * rep tok/s is n over the sum of its own tokens' time. On failure *bad
 * is the file whose eval failed. */
static int turns_rep(bench_var_t *v, int nv, int depth, int n, int i, int ti, int *bad) {
    int32_t *ids[BENCH_MAX_MODELS] = {NULL};
    int rc = TB_OK;
    for (int k = 0; k < nv && !rc; k++) {
        ids[k] = bench_start(v[k].s, v[k].info.n_vocab, depth, n, &rc);
        if (rc && rc != TB_ERR_NOMEM) *bad = k;
    }
    for (int t = 0; !rc && t < n; t++)
        for (int step = 0; !rc && step < nv; step++) {
            const int k = (i + t) % 2 ? nv - 1 - step : step;
            const uint64_t t0 = tb_now_ns();
            if ((rc = tb_session_eval(v[k].s, &ids[k][t], 1, false))) *bad = k;
            v[k].res[ti].tok_lat[(size_t)i * (size_t)n + (size_t)t] = (double)(tb_now_ns() - t0) / 1e6;
        }
    for (int k = 0; k < nv && !rc; k++) {
        double ms = 0;
        for (int t = 0; t < n; t++) ms += v[k].res[ti].tok_lat[(size_t)i * (size_t)n + (size_t)t];
        v[k].res[ti].tps[i] = (double)n * 1e3 / (ms > 0 ? ms : 1e-9);
    }
    for (int k = 0; k < nv; k++) free(ids[k]);
    if (rc == TB_ERR_NOMEM && *bad < 0) fprintf(stderr, "ternbench bench: out of memory for the token ids\n");
    return rc;
}

/* The engine's last error for file `path`, naming the file once. */
static void say_err(const char *path) {
    const char *e = tb_last_error();
    if (strstr(e, path)) fprintf(stderr, "ternbench bench: %s\n", e);
    else fprintf(stderr, "ternbench bench: %s: %s\n", path, e);
}

static double test_bytes(const bench_var_t *v, bool batch, int n) {
    /* prefill reads every weight once per batch: bytes/token = weights / P */
    return batch ? (double)v->info.weight_bytes / n : (double)v->bpt.total;
}

/* Per-token latency figures of a decode test over its m timed tokens:
 * percentiles and the stall share (tb_stats_stall_pct). Time the OS or
 * hypervisor took a core away from a pass (both threads wait for the pass
 * to finish) shows up in the stall share rather than in the median, so
 * the median and p50_roofline_pct tell the kernels' speed and stall_pct
 * the machine's interruptions. */
static void tok_stats(const double *lat, size_t m, bench_result_t *r) {
    r->tok_n = m;
    r->tok_ms_p50 = tb_stats_percentile(lat, m, 50.0);
    r->tok_ms_p90 = tb_stats_percentile(lat, m, 90.0);
    r->tok_ms_p99 = tb_stats_percentile(lat, m, 99.0);
    r->tok_ms_max = tb_stats_percentile(lat, m, 100.0);
    r->stall_pct = tb_stats_stall_pct(lat, m, TB_STALL_FACTOR);
}

/* r->settled and r->roofline_pct_settled from the reps' bandwidth probes
 * and their roofline percentages pct (R); r->cpu_full, its median and the
 * clock probes' range, r->vec_shared and the vector probes' range from
 * the CPU probes. */
static int settled_pct(bench_result_t *r, const double *pct, int R) {
    double *ok = malloc(sizeof(double) * (size_t)(R > 0 ? R : 1));
    if (!ok) {
        fprintf(stderr, "ternbench bench: out of memory for %d reps\n", R);
        return TB_ERR_NOMEM;
    }
    int m = 0;
    for (int i = 0; i < R; i++) {
        const double a = r->probe[2 * i], b = r->probe[2 * i + 1], hi = a > b ? a : b;
        if (fabs(a - b) <= PROBE_AGREE * hi) ok[m++] = pct[i];
    }
    r->settled = m;
    r->roofline_pct_settled = m ? tb_stats_median(ok, (size_t)m) : NAN;
    r->cpu_min = r->cpu_max = r->cpu[0];
    r->vec_min = r->vec_max = r->vec[0];
    for (int i = 1; i < 2 * R; i++) {
        r->cpu_min = fmin(r->cpu_min, r->cpu[i]);
        r->cpu_max = fmax(r->cpu_max, r->cpu[i]);
        r->vec_min = fmin(r->vec_min, r->vec[i]);
        r->vec_max = fmax(r->vec_max, r->vec[i]);
    }
    m = 0;
    for (int i = 0; i < R; i++)
        if (fmin(r->cpu[2 * i], r->cpu[2 * i + 1]) >= CPU_FULL * r->cpu_max) ok[m++] = pct[i];
    r->vec_shared = 0;
    for (int i = 0; i < R; i++) r->vec_shared += fmax(r->vec[2 * i], r->vec[2 * i + 1]) < CPU_FULL * r->vec_max;
    r->cpu_full = m;
    r->roofline_pct_cpu_full = m ? tb_stats_median(ok, (size_t)m) : NAN;
    free(ok);
    return TB_OK;
}

/* Test `ti` (prefill if batch, else decode; n tokens) of every variant:
 * warm-ups, then R reps, the variants in turn inside each rep (forward on
 * even reps, backward on odd ones), a probe after every eval (*bw holds
 * the last probe on entry and on return); with o->tok_turns a decode rep
 * is one turns_rep of all variants and one probe after it, which then
 * brackets every variant's rep. Fills v[k].res[ti]. Every failure is
 * reported here (naming the file); returns non-zero then. */
static int bench_test(bench_var_t *v, int nv, const bench_opts_t *o, bool batch, int n, double *bw,
                      int ti) {
    const int R = o->reps;
    double *buf = calloc((size_t)R * 2 * (size_t)nv, sizeof(double));
    double *roof = buf, *pct = buf + (size_t)R * (size_t)nv;      /* (nv, R) each */
    bool nomem = !buf;
    for (int k = 0; k < nv; k++) {
        bench_result_t *r = &v[k].res[ti];
        memset(r, 0, sizeof *r);
        r->tps = calloc((size_t)R, sizeof(double));
        r->probe = calloc((size_t)R * 2, sizeof(double));
        r->cpu = calloc((size_t)R * 2, sizeof(double));
        r->vec = calloc((size_t)R * 2, sizeof(double));
        r->steal = calloc((size_t)R, sizeof(double));
        r->tok_lat = batch ? NULL : calloc((size_t)R * (size_t)n, sizeof(double));   /* (R, n) */
        nomem |= !r->tps || !r->probe || !r->cpu || !r->vec || !r->steal || (!batch && !r->tok_lat);
    }
    if (nomem) {
        free(buf);
        fprintf(stderr, "ternbench bench: out of memory for %d reps\n", R);
        return TB_ERR_NOMEM;
    }
    const bool turns = !batch && o->tok_turns;
    int rc = TB_OK, bad = -1;   /* bad: the variant whose eval failed */
    double warm;
    for (int k = 0; k < nv && !rc; k++)
        if ((rc = time_eval(v[k].s, v[k].info.n_vocab, batch ? 0 : o->ctx, n, batch, PROF_NONE, &warm, NULL)))
            bad = k;
    double cpu = 0, vec = 0;
    if (!rc) rc = cmd_probe(o->threads, bw);
    if (!rc) rc = cmd_cpu_probe(o->threads, &cpu, &vec);
    for (int i = 0; !rc && i < R; i++)
        for (int step = 0; !rc && step < (turns ? 1 : nv); step++) {
            const double before = *bw, cpu_before = cpu, vec_before = vec;
            const int k0 = turns ? 0 : i % 2 ? nv - 1 - step : step, k1 = turns ? nv : k0 + 1;
            uint64_t st0 = 0, tot0 = 0, st1 = 0, tot1 = 0;
            const int st_ok = tb_sensors_steal_read("", &st0, &tot0) == 0;
            if (turns) rc = turns_rep(v, nv, o->ctx, n, i, ti, &bad);
            else {
                double *lat = batch ? NULL : v[k0].res[ti].tok_lat + (size_t)i * (size_t)n;
                rc = time_eval(v[k0].s, v[k0].info.n_vocab, batch ? 0 : o->ctx, n, batch, PROF_NONE,
                               &v[k0].res[ti].tps[i], lat);
                if (rc) bad = k0;
            }
            const double steal = st_ok && tb_sensors_steal_read("", &st1, &tot1) == 0
                                     ? tb_sensors_steal_pct(st0, tot0, st1, tot1) : NAN;
            if (!rc) rc = cmd_probe(o->threads, bw);
            if (!rc) rc = cmd_cpu_probe(o->threads, &cpu, &vec);
            for (int k = k0; k < k1; k++) {   /* the variants this probe pair bracketed */
                const size_t at = (size_t)k * (size_t)R + (size_t)i;
                roof[at] = before > *bw ? before : *bw;
                pct[at] = 100.0 * v[k].res[ti].tps[i] * test_bytes(&v[k], batch, n) / 1e9 / roof[at];
                v[k].res[ti].probe[2 * i] = before;
                v[k].res[ti].probe[2 * i + 1] = *bw;
                v[k].res[ti].cpu[2 * i] = cpu_before;
                v[k].res[ti].cpu[2 * i + 1] = cpu;
                v[k].res[ti].vec[2 * i] = vec_before;
                v[k].res[ti].vec[2 * i + 1] = vec;
                v[k].res[ti].steal[i] = steal;
            }
        }
    if (bad >= 0) say_err(v[bad].path);
    for (int k = 0; k < nv && !rc; k++) {
        bench_result_t *r = &v[k].res[ti];
        tb_stats_summary_t sum;
        tb_stats_summarize(r->tps, (size_t)R, &sum);
        snprintf(r->test, sizeof r->test, "%s%d", batch ? "pp" : "tg", n);
        r->tps_median = sum.median;
        r->tps_stddev = sum.stddev;
        r->bytes_per_token = test_bytes(&v[k], batch, n);
        r->gbps = sum.median * r->bytes_per_token / 1e9;
        r->bw_median = tb_stats_median(roof + (size_t)k * (size_t)R, (size_t)R);
        tb_stats_summarize(pct + (size_t)k * (size_t)R, (size_t)R, &sum);
        r->roofline_pct = sum.median;
        r->roofline_pct_min = sum.min;
        r->roofline_pct_max = sum.max;
        if ((rc = settled_pct(r, pct + (size_t)k * (size_t)R, R))) break;
        if (r->tok_lat) {
            tok_stats(r->tok_lat, (size_t)R * (size_t)n, r);
            r->p50_roofline_pct = 100.0 * (1e3 / r->tok_ms_p50) * r->bytes_per_token / 1e9 / r->bw_median;
        }
    }
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Comparison                                                               */
/* ---------------------------------------------------------------------- */

/* Two-sided sign test: the probability under "no difference" (each rep
 * faster with probability 1/2) of a count at least as far from n/2 as k. */
static double sign_test_p(int k, int n) {
    const int m = k < n - k ? k : n - k;
    double tail = 0.0;
    for (int i = 0; i <= m; i++)
        tail += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0));
    return 2.0 * tail > 1.0 ? 1.0 : 2.0 * tail;
}

/* b against a pair by pair over n pairs (out->n = n). */
static int paired_of(const double *a, const double *b, size_t n, bench_paired_t *out) {
    double *r = malloc(sizeof(double) * (n ? n : 1));
    if (!r) {
        fprintf(stderr, "ternbench bench: out of memory for %zu pairs\n", n);
        return TB_ERR_NOMEM;
    }
    out->n = n;
    out->faster = 0;
    for (size_t i = 0; i < n; i++) {
        r[i] = b[i] / a[i];
        out->faster += b[i] > a[i];
    }
    tb_stats_summary_t sum;
    tb_stats_summarize(r, n, &sum);
    out->median = sum.median;
    out->min = sum.min;
    out->max = sum.max;
    out->q25 = tb_stats_percentile(r, n, 25.0);
    out->q75 = tb_stats_percentile(r, n, 75.0);
    out->sign_p = sign_test_p((int)out->faster, (int)n);
    free(r);
    return TB_OK;
}

/* b against a token by token (--interleave token; a's and b's latencies,
 * (R, n) each, the tokens of a pair taken next to each other): every pair
 * (b's speed over a's: a's latency over b's), and each rep's median, which
 * a script can split by the rep's probes. */
static int token_pairs_of(const double *lat_a, const double *lat_b, int R, int n, bench_ratio_t *out) {
    int rc = paired_of(lat_b, lat_a, (size_t)R * (size_t)n, &out->tok);
    double *r = rc ? NULL : malloc(sizeof(double) * (size_t)n);
    if (!rc && !(out->tok_rep_median = malloc(sizeof(double) * (size_t)R))) rc = TB_ERR_NOMEM;
    if (!rc && !r) rc = TB_ERR_NOMEM;
    for (int i = 0; !rc && i < R; i++) {
        for (int j = 0; j < n; j++) r[j] = lat_a[(size_t)i * (size_t)n + (size_t)j] / lat_b[(size_t)i * (size_t)n + (size_t)j];
        out->tok_rep_median[i] = tb_stats_median(r, (size_t)n);
    }
    if (rc == TB_ERR_NOMEM) fprintf(stderr, "ternbench bench: out of memory for %d reps of token pairs\n", R);
    free(r);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Command                                                                  */
/* ---------------------------------------------------------------------- */

static int bench_usage(void) {
    fprintf(stderr, "usage: ternbench bench -m F.gguf [-m G.gguf ...] [-t N] [--ctx C] [-p P] [-n N] [-r R]\n"
                    "                       [--mmap] [--profile] [--interleave rep|token] [--json]\n"
                    "  -m F     model file; up to %d, interleaved rep by rep and compared with the first\n"
                    "  -t N     threads (default 2)\n"
                    "  --ctx C  decode depth: the KV cache holds C tokens before tg is timed (default 0)\n"
                    "  -p P     prompt tokens for the prefill test ppP (default 512; 0 skips it)\n"
                    "  -n N     decoded tokens for the decode test tgN (default 128; 0 skips it)\n"
                    "  -r R     timed repetitions after one warm-up (default 5)\n"
                    "  --mmap   read weights from the file mapping instead of huge-page copies\n"
                    "  --profile  after the tests, one more decode run split by phase (ms/token, GB/s)\n"
                    "  --interleave rep|token  with several files, whether decode takes turns rep by rep\n"
                    "           (default) or token by token, every token then also paired with the first\n"
                    "           file's next to it\n",
            BENCH_MAX_MODELS);
    return 2;
}

static int parse_args(int argc, char **argv, bench_opts_t *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--json")) { o->json = true; continue; }
        if (!strcmp(a, "--mmap")) { o->mmap = true; continue; }
        if (!strcmp(a, "--profile")) { o->profile = true; continue; }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!v) return bench_usage();
            if (o->n_models == BENCH_MAX_MODELS) {
                fprintf(stderr, "ternbench bench: at most %d -m files, got more at '%s'\n", BENCH_MAX_MODELS, v);
                return 2;
            }
            o->models[o->n_models++] = v;
        }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) rc = cmd_arg_int(argv[0], a, v, 1, 64, &o->threads);
        else if (!strcmp(a, "--ctx")) rc = cmd_arg_int(argv[0], a, v, 0, 1 << 20, &o->ctx);
        else if (!strcmp(a, "-p")) rc = cmd_arg_int(argv[0], a, v, 0, 1 << 16, &o->n_prompt);
        else if (!strcmp(a, "-n")) rc = cmd_arg_int(argv[0], a, v, 0, 1 << 16, &o->n_gen);
        else if (!strcmp(a, "-r")) rc = cmd_arg_int(argv[0], a, v, 1, 1000, &o->reps);
        else if (!strcmp(a, "--interleave")) {
            if (!v || (strcmp(v, "rep") && strcmp(v, "token"))) {
                fprintf(stderr, "ternbench bench: --interleave takes rep or token, not '%s'\n", v ? v : "");
                return 2;
            }
            o->tok_turns = !strcmp(v, "token");
        }
        else return bench_usage();
        if (rc) return rc;
        i++;
    }
    if (o->tok_turns && o->n_models < 2) {
        fprintf(stderr, "ternbench bench: --interleave token takes turns between files: give two or more -m\n");
        return 2;
    }
    return o->n_models ? 0 : bench_usage();
}

/* Load v->path and open its session (sp); on failure the message names the
 * file. */
static int var_open(bench_var_t *v, const bench_opts_t *o, const tb_session_params_t *sp) {
    tb_model_params_t mp = {.weights = o->mmap ? TB_WEIGHTS_MMAP : TB_WEIGHTS_COPY, .n_threads = o->threads};
    int rc = tb_model_load_ex(v->path, &mp, &v->m);
    if (!rc) rc = tb_model_get_info(v->m, &v->info);
    if (!rc) rc = tb_model_bytes_per_token(v->m, o->ctx + o->n_gen / 2, sp->kv_type, &v->bpt);
    if (!rc) rc = tb_session_new(v->m, sp, &v->s);
    if (rc) say_err(v->path);
    return rc;
}

static void var_close(bench_var_t *v) {
    tb_session_free(v->s);
    tb_model_free(v->m);
    for (int t = 0; t < 2; t++) {
        free(v->res[t].tps);
        free(v->res[t].probe);
        free(v->res[t].cpu);
        free(v->res[t].vec);
        free(v->res[t].steal);
        free(v->res[t].tok_lat);
    }
}

int cmd_bench(int argc, char **argv) {
    bench_opts_t o = {.threads = 2, .ctx = 0, .n_prompt = 512, .n_gen = 128, .reps = 5};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    tb_session_params_t sp = tb_session_default_params();
    sp.n_threads = o.threads;
    sp.n_ctx = o.ctx + (o.n_prompt > o.n_gen ? o.n_prompt : o.n_gen) + 1;
    if (sp.n_batch < o.n_prompt) sp.n_batch = o.n_prompt;

    bench_var_t v[BENCH_MAX_MODELS] = {{0}};
    const int nv = o.n_models;
    /* one pool for every file's session: files that take turns token by
     * token would otherwise each have one, the idle one's workers spinning
     * beside the running one's */
    tb_pool_t *pool = NULL;
    if ((rc = tb_pool_new(o.threads, &pool))) {
        fprintf(stderr, "ternbench bench: %s\n", tb_last_error());
        return 1;
    }
    sp.pool = pool;
    /* every file loaded first: a bad one fails before a second of probing */
    for (int k = 0; k < nv && !rc; k++) {
        v[k].path = o.models[k];
        rc = var_open(&v[k], &o, &sp);
    }
    double bw_before = 0, bw_after = 0;
    if (!rc) rc = cmd_probe(o.threads, &bw_before);
    bw_after = bw_before;
    int n_res = 0;
    if (!rc && o.n_prompt > 0) rc = bench_test(v, nv, &o, true, o.n_prompt, &bw_after, n_res++);
    if (!rc && o.n_gen > 0) rc = bench_test(v, nv, &o, false, o.n_gen, &bw_after, n_res++);
    for (int k = 0; k < nv && !rc && o.profile && o.n_gen > 0; k++) {
        double tps;   /* untimed by the tests above: its own decode run */
        rc = time_eval(v[k].s, v[k].info.n_vocab, o.ctx, o.n_gen, false, PROF_PHASES, &tps, NULL);
        if (rc) say_err(v[k].path);
        tb_session_get_profile(v[k].s, &v[k].prof);
        tb_session_set_profile(v[k].s, false);
        if (rc || o.threads != 2 || v[k].info.split_layers == 0) continue;
        rc = time_eval(v[k].s, v[k].info.n_vocab, o.ctx, o.n_gen, false, PROF_SPLIT, &tps, NULL);
        if (rc) say_err(v[k].path);
        tb_session_get_split_profile(v[k].s, &v[k].sprof);
        tb_session_set_split_profile(v[k].s, false);
        v[k].sprof_ms = 1e3 / tps;
    }
    bench_ratio_t cmp[2 * BENCH_MAX_MODELS];   /* (test, variant); every failure above was reported */
    memset(cmp, 0, sizeof cmp);   /* tok.n = 0: no token pairs */
    for (int t = 0; t < n_res && !rc; t++)
        for (int k = 1; k < nv && !rc; k++) {
            rc = paired_of(v[0].res[t].tps, v[k].res[t].tps, (size_t)o.reps, &cmp[t * nv + k].rep);
            if (!rc && o.tok_turns && v[0].res[t].tok_lat)   /* speed = 1 / latency: a's over b's */
                rc = token_pairs_of(v[0].res[t].tok_lat, v[k].res[t].tok_lat, o.reps, o.n_gen, &cmp[t * nv + k]);
        }
    if (!rc) {
        if (o.json) bench_print_json(v, nv, n_res, cmp, &o, bw_before, bw_after);
        else bench_print_table(v, nv, n_res, cmp, &o, bw_before, bw_after);
    }
    for (int i = 0; i < 2 * BENCH_MAX_MODELS; i++) free(cmp[i].tok_rep_median);
    for (int k = 0; k < nv; k++) var_close(&v[k]);
    tb_pool_free(pool);
    return rc ? 1 : 0;
}
