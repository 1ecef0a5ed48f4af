/*
 * cmd_perf.c — the measurement commands: bandwidth (the roofline), kernels
 * (per-format, per-tier matvec GB/s and gemm GOP/s) and bench (the quick
 * llama-bench-style prefill/decode benchmark of a model file).
 *
 * The machine's read bandwidth is not one number (it moves with where the
 * host places the cores), so every figure stated as "% of roofline" is
 * against a probe taken in the same run, and variants being compared are
 * interleaved repetition by repetition.
 */
#include "commands.h"
#include "stats.h"
#include "ternbench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_BYTES ((size_t)256 << 20)   /* >> any LLC this runs on */
#define PROBE_REPS 5

/* ---------------------------------------------------------------------- */
/* Argument helpers                                                         */
/* ---------------------------------------------------------------------- */

/* Parse a positive int option value; prints the usage error itself. */
static int arg_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out) {
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || x < lo || x > hi) {
        fprintf(stderr, "ternbench %s: %s expects an integer in %d..%d, got '%s'\n", cmd, opt, lo, hi,
                v ? v : "");
        return 2;
    }
    *out = (int)x;
    return 0;
}

static int probe(int threads, double *gbps) {
    int rc = tb_bandwidth_probe(threads, PROBE_BYTES, PROBE_REPS, gbps);
    if (rc) fprintf(stderr, "ternbench: bandwidth probe failed: %s\n", tb_last_error());
    return rc;
}

/* ---------------------------------------------------------------------- */
/* bandwidth                                                                */
/* ---------------------------------------------------------------------- */

int cmd_bandwidth(int argc, char **argv) {
    int threads = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") || !strcmp(argv[i], "--threads")) {
            if (arg_int(argv[0], argv[i], i + 1 < argc ? argv[i + 1] : NULL, 1, 64, &threads)) return 2;
            i++;
        } else {
            fprintf(stderr, "usage: ternbench bandwidth [-t N]\n");
            return 2;
        }
    }
    printf("# read bandwidth, %zu MiB buffer, best of %d passes\n", PROBE_BYTES >> 20, PROBE_REPS);
    printf("%-8s %10s\n", "threads", "GB/s");
    for (int t = 1; t <= threads; t++) {
        double g;
        if (probe(t, &g)) return 1;
        printf("%-8d %10.2f\n", t, g);
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* kernels                                                                  */
/* ---------------------------------------------------------------------- */

static const struct { int64_t rows, cols; } shapes[] = {
    {2048, 2048}, {512, 2048}, {2048, 512}, {2048, 5632}, {151936, 2048},
};
#define GEMM_ROWS 2048
#define GEMM_COLS 2048
#define GEMM_TOK 64
#define MIN_COPY_BYTES ((size_t)256 << 20)   /* cycle weight copies beyond the LLC */
#define TIME_BUDGET_NS 250000000ull          /* per (format, shape), all tiers     */

/* Fill `bytes` of a weight buffer with rows quantized from random data:
 * 64 distinct rows, repeated (quantizing 300M elements would take long). */
static int fill_weights(tb_type_t t, int64_t cols, uint8_t *dst, size_t bytes) {
    size_t rb = tb_type_row_bytes(t, cols);
    float *row = malloc(sizeof(float) * (size_t)cols);   // (cols)
    uint8_t *pat = malloc(rb * 64);                      // (64, row bytes)
    if (!row || !pat) { free(row); free(pat); return TB_ERR_NOMEM; }
    uint64_t s = 88172645463325252ull;
    for (int r = 0; r < 64; r++) {
        for (int64_t j = 0; j < cols; j++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            row[j] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        }
        if (tb_quantize_row(t, row, pat + rb * (size_t)r, cols)) { free(row); free(pat); return TB_ERR_ARG; }
    }
    for (size_t off = 0; off < bytes; off += rb * 64)
        memcpy(dst + off, pat, rb * 64 < bytes - off ? rb * 64 : bytes - off);
    free(row);
    free(pat);
    return TB_OK;
}

static int run_kernels_format(tb_type_t t, const tb_isa_t *tiers, int n_tiers, tb_pool_t *pool,
                              double bw) {
    const int64_t blk = tb_type_block_elems(t);
    /* decode-shaped matvecs: bytes streamed per second */
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t rows = shapes[s].rows, cols = shapes[s].cols;
        if (cols % blk) continue;
        size_t wbytes = tb_type_row_bytes(t, cols) * (size_t)rows;
        int copies = (int)((MIN_COPY_BYTES + wbytes - 1) / wbytes);
        uint8_t *W = malloc(wbytes * (size_t)copies);              // (copies, rows, cols)
        float *x = malloc(sizeof(float) * (size_t)cols), *y = malloc(sizeof(float) * (size_t)rows);
        tb_weights_t *pw[8] = {NULL};   /* per tier: prepared as the model's (huge pages, repacked) */
        int bad = !W || !x || !y || fill_weights(t, cols, W, wbytes * (size_t)copies);
        for (int k = 0; k < n_tiers && !bad; k++) {
            tb_isa_set(tiers[k]);
            bad = tb_weights_new(t, W, rows, cols, copies, &pw[k]) != TB_OK;
        }
        free(W);
        if (bad) {
            fprintf(stderr, "ternbench kernels: cannot set up %s %lldx%lld: %s\n", tb_type_name(t),
                    (long long)rows, (long long)cols, tb_last_error());
            for (int k = 0; k < n_tiers; k++) tb_weights_free(pw[k]);
            free(x); free(y);
            return 1;
        }
        for (int64_t j = 0; j < cols; j++) x[j] = (float)((j * 7919) % 2001 - 1000) / 1000.0f;
        uint64_t best[8];
        for (int k = 0; k < n_tiers; k++) best[k] = UINT64_MAX;
        uint64_t t_end = tb_now_ns() + TIME_BUDGET_NS;
        int c = 0;
        for (int rep = 0; rep < 3 || (tb_now_ns() < t_end && rep < 1000); rep++) {
            for (int k = 0; k < n_tiers; k++) {   /* interleaved tiers */
                tb_isa_set(tiers[k]);
                uint64_t t0 = tb_now_ns();
                tb_weights_matvec(pool, pw[k], c, x, y);
                uint64_t dt = tb_now_ns() - t0;
                if (rep > 0 && dt < best[k]) best[k] = dt;   /* rep 0: warm-up */
                c = (c + 1) % copies;
            }
        }
        for (int k = 0; k < n_tiers; k++) {
            double gbs = (double)wbytes / (double)best[k];
            printf("%-6s %-8s matvec %6lldx%-5lld %9.1f us %8.2f GB/s %6.1f %%\n", tb_type_name(t),
                   tb_isa_name(tiers[k]), (long long)rows, (long long)cols, best[k] / 1e3, gbs,
                   100.0 * gbs / bw);
        }
        for (int k = 0; k < n_tiers; k++) tb_weights_free(pw[k]);
        free(x); free(y);
    }
    /* prefill-shaped gemm: operations per second (2 per multiply-add) */
    if (GEMM_COLS % blk == 0) {
        size_t wbytes = tb_type_row_bytes(t, GEMM_COLS) * GEMM_ROWS;
        uint8_t *W = malloc(wbytes);                                          // (rows, cols)
        float *X = malloc(sizeof(float) * GEMM_TOK * GEMM_COLS);              // (tok, cols)
        float *Y = malloc(sizeof(float) * GEMM_TOK * GEMM_ROWS);              // (tok, rows)
        tb_weights_t *pw[8] = {NULL};
        int bad = !W || !X || !Y || fill_weights(t, GEMM_COLS, W, wbytes);
        for (int k = 0; k < n_tiers && !bad; k++) {
            tb_isa_set(tiers[k]);
            bad = tb_weights_new(t, W, GEMM_ROWS, GEMM_COLS, 1, &pw[k]) != TB_OK;
        }
        free(W);
        if (bad) {
            for (int k = 0; k < n_tiers; k++) tb_weights_free(pw[k]);
            free(X); free(Y);
            return 1;
        }
        for (int64_t j = 0; j < GEMM_TOK * GEMM_COLS; j++) X[j] = (float)((j * 7919) % 2001 - 1000) / 1000.0f;
        uint64_t best[8];
        for (int k = 0; k < n_tiers; k++) best[k] = UINT64_MAX;
        uint64_t t_end = tb_now_ns() + TIME_BUDGET_NS;
        for (int rep = 0; rep < 2 || (tb_now_ns() < t_end && rep < 200); rep++)
            for (int k = 0; k < n_tiers; k++) {
                tb_isa_set(tiers[k]);
                uint64_t t0 = tb_now_ns();
                tb_weights_matmul(pool, pw[k], 0, X, GEMM_TOK, Y);
                uint64_t dt = tb_now_ns() - t0;
                if (rep > 0 && dt < best[k]) best[k] = dt;
            }
        for (int k = 0; k < n_tiers; k++)
            printf("%-6s %-8s gemm   %6dx%-5d x %d tok %9.1f us %8.1f GOP/s\n", tb_type_name(t),
                   tb_isa_name(tiers[k]), GEMM_ROWS, GEMM_COLS, GEMM_TOK, best[k] / 1e3,
                   2.0 * GEMM_ROWS * GEMM_COLS * GEMM_TOK / (double)best[k]);
        for (int k = 0; k < n_tiers; k++) tb_weights_free(pw[k]);
        free(X); free(Y);
    }
    return 0;
}

int cmd_kernels(int argc, char **argv) {
    static const tb_type_t all[] = {TB_TYPE_TQ2_0, TB_TYPE_TQ1_0, TB_TYPE_Q4_0, TB_TYPE_Q8_0,
                                    TB_TYPE_Q4_K, TB_TYPE_Q6_K, TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_F32};
    int threads = 2;
    const char *fmt = NULL, *isa = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-t") || !strcmp(argv[i], "--threads")) {
            if (arg_int(argv[0], argv[i], v, 1, 64, &threads)) return 2;
        } else if (!strcmp(argv[i], "--format") && v) {
            fmt = v;
        } else if (!strcmp(argv[i], "--isa") && v) {
            isa = v;
        } else {
            fprintf(stderr, "usage: ternbench kernels [--format F] [--isa I] [-t N]\n");
            return 2;
        }
        i++;
    }
    tb_type_t types[16];
    int n_types = 0;
    if (fmt) {
        if (tb_type_from_name(fmt, &types[0]) != TB_OK) {
            fprintf(stderr, "ternbench kernels: %s\n", tb_last_error());
            return 2;
        }
        if (!tb_type_supported(types[0]) || types[0] == TB_TYPE_Q8_K) {   /* no message was set */
            fprintf(stderr, "ternbench kernels: --format %s: not a weight format (expected f32, f16, "
                            "bf16, q8_0, q4_0, q4_k, q6_k, tq1_0 or tq2_0)\n", fmt);
            return 2;
        }
        n_types = 1;
    } else {
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) types[n_types++] = all[i];
    }
    tb_isa_t tiers[8];
    int n_tiers = 0;
    tb_isa_t start = tb_isa_active();
    if (isa) {
        tb_isa_t one;
        if (tb_isa_from_name(isa, &one) != TB_OK || tb_isa_set(one) != TB_OK) {
            fprintf(stderr, "ternbench kernels: %s\n", tb_last_error());
            return 2;
        }
        tiers[n_tiers++] = one;
    } else {
        /* every available tier up to the active one, ref excluded (too slow) */
        for (int k = TB_ISA_GENERIC; k <= TB_ISA_NEON; k++)
            if (tb_isa_set((tb_isa_t)k) == TB_OK && k <= (int)start) tiers[n_tiers++] = (tb_isa_t)k;
        if (!n_tiers) tiers[n_tiers++] = start;
    }
    double bw;
    if (probe(threads, &bw)) return 1;
    tb_pool_t *pool;
    if (tb_pool_new(threads, &pool) != TB_OK) {
        fprintf(stderr, "ternbench kernels: %s\n", tb_last_error());
        return 1;
    }
    printf("# %d thread(s), read bandwidth %.2f GB/s (probe), best tier %s [%s]\n", threads, bw,
           tb_isa_name(tb_isa_best()), (tb_isa_set(tb_isa_best()), tb_isa_features()));
    int rc = 0;
    for (int i = 0; i < n_types && !rc; i++) rc = run_kernels_format(types[i], tiers, n_tiers, pool, bw);
    tb_pool_free(pool);
    tb_isa_set(start);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* bench                                                                    */
/* ---------------------------------------------------------------------- */

typedef struct {
    const char *model;
    int threads, ctx, n_prompt, n_gen, reps;
    bool json;
    bool mmap;          /* --mmap: TB_WEIGHTS_MMAP */
    bool profile;       /* --profile: per-phase split of one more decode run */
} bench_opts_t;

typedef struct {
    char test[32];
    double tps_median, tps_stddev;
    double bytes_per_token, gbps;
    double bw_median;                   /* median of the reps' rooflines (GB/s)   */
    double roofline_pct;                /* median over reps of achieved / roofline */
    double roofline_pct_min, roofline_pct_max;
} bench_result_t;

/* One timed eval of n tokens (prefill if batch, else one token at a time)
 * after the cache was filled to `depth` tokens (untimed, unprofiled); with
 * `profile` the session's per-phase profile covers exactly the timed eval. */
static int time_eval(tb_session_t *s, int32_t n_vocab, int depth, int n, bool batch, bool profile,
                     double *tps) {
    tb_session_reset(s);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n > depth ? n : depth) + sizeof(int32_t));
    if (!ids) return TB_ERR_NOMEM;
    for (int i = 0; i < (n > depth ? n : depth); i++) ids[i] = (int32_t)((i * 7919 + 13) % n_vocab);
    int rc = depth ? tb_session_eval(s, ids, depth, false) : TB_OK;
    if (profile) tb_session_set_profile(s, true);
    uint64_t t0 = tb_now_ns();
    if (!rc && batch) rc = tb_session_eval(s, ids, n, false);
    for (int i = 0; !rc && !batch && i < n; i++) rc = tb_session_eval(s, &ids[i], 1, false);
    uint64_t dt = tb_now_ns() - t0;
    free(ids);
    *tps = (double)n * 1e9 / (double)(dt ? dt : 1);
    return rc;
}


static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One test: a warm-up eval, then R timed evals, each bracketed by bandwidth
 * probes (*bw holds the probe taken just before; it returns the last one).
 * Rep i is charged against the higher of the two probes on either side of
 * it, so when the machine's read bandwidth moves during a run (this VM's
 * moves between ~33 and ~60 GB/s as the host places its vCPUs) each rep is
 * compared with what memory delivered around it, never with a moment far
 * away; roofline_pct is the median over reps, with min and max. */
static int bench_test(tb_session_t *s, int32_t n_vocab, const bench_opts_t *o, bool batch, int n,
                      double bytes_per_token, double *bw, bench_result_t *r) {
    double *tps = calloc((size_t)o->reps * 3, sizeof(double));
    if (!tps) return TB_ERR_NOMEM;
    double *roof = tps + o->reps, *pct = roof + o->reps, warm;
    int rc = time_eval(s, n_vocab, batch ? 0 : o->ctx, n, batch, false, &warm);   /* warm-up */
    if (!rc) rc = probe(o->threads, bw) ? TB_ERR_IO : TB_OK;
    for (int i = 0; !rc && i < o->reps; i++) {
        const double before = *bw;
        rc = time_eval(s, n_vocab, batch ? 0 : o->ctx, n, batch, false, &tps[i]);
        if (!rc) rc = probe(o->threads, bw) ? TB_ERR_IO : TB_OK;
        roof[i] = before > *bw ? before : *bw;
        pct[i] = 100.0 * tps[i] * bytes_per_token / 1e9 / roof[i];
    }
    if (!rc) {
        tb_stats_summary_t sum;
        tb_stats_summarize(tps, (size_t)o->reps, &sum);
        snprintf(r->test, sizeof r->test, "%s%d", batch ? "pp" : "tg", n);
        r->tps_median = sum.median;
        r->tps_stddev = sum.stddev;
        r->bytes_per_token = bytes_per_token;
        r->gbps = sum.median * bytes_per_token / 1e9;
        qsort(roof, (size_t)o->reps, sizeof *roof, cmp_double);
        qsort(pct, (size_t)o->reps, sizeof *pct, cmp_double);
        const int h = o->reps / 2;
        r->bw_median = o->reps % 2 ? roof[h] : (roof[h - 1] + roof[h]) / 2;
        r->roofline_pct = o->reps % 2 ? pct[h] : (pct[h - 1] + pct[h]) / 2;
        r->roofline_pct_min = pct[0];
        r->roofline_pct_max = pct[o->reps - 1];
    }
    free(tps);
    return rc;
}

/* The per-phase split of a profiled decode run: ms per token, share of the
 * run's wall time, weight GB/s of the phase and its % of the roofline bw
 * (the tg test's median probe). Attention's GB/s counts the KV bytes
 * tb_model_bytes_per_token gives for the run's mid depth. */
static void print_profile(const tb_profile_t *p, const tb_bytes_per_token_t *bpt, double bw, bool json) {
    const double tok = (double)p->tokens;
    uint64_t rest = p->total_ns;
    if (json) printf("{\"profile\": \"tg%.0f\", \"total_ms_per_token\": %.4f, \"phases\": [", tok,
                     p->total_ns / 1e6 / tok);
    else printf("# profile of one more decode run (%.0f tokens, %.3f ms/token):\n%-10s %10s %7s %9s %9s\n", tok,
                p->total_ns / 1e6 / tok, "phase", "ms/token", "share", "GB/s", "roofline");
    for (int i = 0; i < TB_PHASE_COUNT; i++) {
        const tb_phase_stats_t *ph = &p->phase[i];
        rest = rest > ph->ns ? rest - ph->ns : 0;
        const double bytes = i == TB_PHASE_ATTENTION ? (double)bpt->kv * tok : (double)ph->bytes;
        const double gbps = ph->ns ? bytes / (double)ph->ns : 0;
        if (json)
            printf("%s{\"phase\": \"%s\", \"ms_per_token\": %.4f, \"share_pct\": %.2f, \"gbps\": %.3f, "
                   "\"roofline_pct\": %.2f}", i ? ", " : "", tb_phase_name((tb_phase_t)i), ph->ns / 1e6 / tok,
                   100.0 * (double)ph->ns / (double)p->total_ns, gbps, 100.0 * gbps / bw);
        else if (ph->calls)
            printf("%-10s %10.3f %6.1f%% %9.2f %8.1f%%\n", tb_phase_name((tb_phase_t)i), ph->ns / 1e6 / tok,
                   100.0 * (double)ph->ns / (double)p->total_ns, gbps, 100.0 * gbps / bw);
    }
    if (json) printf("], \"other_ms_per_token\": %.4f}\n", rest / 1e6 / tok);
    else printf("%-10s %10.3f %6.1f%%\n", "other", rest / 1e6 / tok, 100.0 * (double)rest / (double)p->total_ns);
}

static int bench_usage(void) {
    fprintf(stderr, "usage: ternbench bench -m F.gguf [-t N] [--ctx C] [-p P] [-n N] [-r R] [--mmap] [--json]\n"
                    "  -t N     threads (default 2)\n"
                    "  --ctx C  decode depth: the KV cache holds C tokens before tg is timed (default 0)\n"
                    "  -p P     prompt tokens for the prefill test ppP (default 512; 0 skips it)\n"
                    "  -n N     decoded tokens for the decode test tgN (default 128; 0 skips it)\n"
                    "  -r R     timed repetitions after one warm-up (default 5)\n"
                    "  --mmap   read weights from the file mapping instead of huge-page copies\n"
                    "  --profile  after the tests, one more decode run split by phase (ms/token, GB/s)\n");
    return 2;
}

int cmd_bench(int argc, char **argv) {
    bench_opts_t o = {.threads = 2, .ctx = 0, .n_prompt = 512, .n_gen = 128, .reps = 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--json")) { o.json = true; continue; }
        if (!strcmp(a, "--mmap")) { o.mmap = true; continue; }
        if (!strcmp(a, "--profile")) { o.profile = true; continue; }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) { if (!v) return bench_usage(); o.model = v; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) rc = arg_int(argv[0], a, v, 1, 64, &o.threads);
        else if (!strcmp(a, "--ctx")) rc = arg_int(argv[0], a, v, 0, 1 << 20, &o.ctx);
        else if (!strcmp(a, "-p")) rc = arg_int(argv[0], a, v, 0, 1 << 16, &o.n_prompt);
        else if (!strcmp(a, "-n")) rc = arg_int(argv[0], a, v, 0, 1 << 16, &o.n_gen);
        else if (!strcmp(a, "-r")) rc = arg_int(argv[0], a, v, 1, 1000, &o.reps);
        else return bench_usage();
        if (rc) return rc;
        i++;
    }
    if (!o.model) return bench_usage();

    double bw_before, bw_after;
    tb_model_t *m;   /* loaded first: a bad model fails before a second of probing */
    tb_model_params_t mp = {.weights = o.mmap ? TB_WEIGHTS_MMAP : TB_WEIGHTS_COPY,
                            .n_threads = o.threads};
    if (tb_model_load_ex(o.model, &mp, &m) != TB_OK) {
        fprintf(stderr, "ternbench bench: %s\n", tb_last_error());
        return 1;
    }
    if (probe(o.threads, &bw_before)) { tb_model_free(m); return 1; }
    bw_after = bw_before;
    tb_model_info_t info;
    tb_session_params_t sp = tb_session_default_params();
    sp.n_threads = o.threads;
    sp.n_ctx = o.ctx + (o.n_prompt > o.n_gen ? o.n_prompt : o.n_gen) + 1;
    if (sp.n_batch < o.n_prompt) sp.n_batch = o.n_prompt;
    tb_session_t *s = NULL;
    tb_bytes_per_token_t bpt;
    int rc = tb_model_get_info(m, &info);
    if (!rc) rc = tb_model_bytes_per_token(m, o.ctx + o.n_gen / 2, sp.kv_type, &bpt);
    if (!rc) rc = tb_session_new(m, &sp, &s);
    if (rc) {
        fprintf(stderr, "ternbench bench: %s\n", tb_last_error());
        tb_model_free(m);
        return 1;
    }
    bench_result_t res[2];
    int n_res = 0;
    /* prefill reads every weight once per batch: bytes/token = weights / P */
    if (!rc && o.n_prompt > 0)
        rc = bench_test(s, info.n_vocab, &o, true, o.n_prompt, (double)info.weight_bytes / o.n_prompt,
                        &bw_after, &res[n_res++]);
    if (!rc && o.n_gen > 0)
        rc = bench_test(s, info.n_vocab, &o, false, o.n_gen, (double)bpt.total, &bw_after, &res[n_res++]);
    tb_profile_t prof = {0};
    if (!rc && o.profile && o.n_gen > 0) {   /* untimed by the tests above: its own decode run */
        double tps;
        rc = time_eval(s, info.n_vocab, o.ctx, o.n_gen, false, true, &tps);
        tb_session_get_profile(s, &prof);
        tb_session_set_profile(s, false);
    }
    tb_session_free(s);
    tb_model_free(m);
    if (rc) {
        fprintf(stderr, "ternbench bench: %s\n", tb_last_error());
        return 1;
    }
    const char *isa = tb_isa_name(tb_isa_active());
    if (o.json) {
        for (int i = 0; i < n_res; i++)
            printf("{\"test\": \"%s\", \"tokens_per_s\": %.3f, \"stddev\": %.3f, \"bytes_per_token\": %.0f, "
                   "\"achieved_gbps\": %.3f, \"roofline_pct\": %.2f, \"roofline_pct_min\": %.2f, "
                   "\"roofline_pct_max\": %.2f, \"bandwidth_gbps\": %.3f, "
                   "\"bandwidth_before_gbps\": %.3f, \"bandwidth_after_gbps\": %.3f, \"isa\": \"%s\", "
                   "\"features\": \"%s\", \"threads\": %d, \"ctx\": %d, \"reps\": %d, \"type\": \"%s\", "
                   "\"weights\": \"%s\", \"resident_bytes\": %llu, \"load_s\": %.3f}\n",
                   res[i].test, res[i].tps_median, res[i].tps_stddev, res[i].bytes_per_token, res[i].gbps,
                   res[i].roofline_pct, res[i].roofline_pct_min, res[i].roofline_pct_max, res[i].bw_median,
                   bw_before, bw_after, isa, tb_isa_features(), o.threads, o.ctx,
                   o.reps, tb_type_name(info.main_type), o.mmap ? "mmap" : "copy",
                   (unsigned long long)info.resident_bytes, info.load_ns / 1e9);
        if (prof.tokens) print_profile(&prof, &bpt, res[n_res - 1].bw_median, true);
        return 0;
    }
    printf("# %s: %s %s, %.2f GB weights; isa %s [%s]; %d thread(s)\n", o.model, info.arch,
           tb_type_name(info.main_type), info.weight_bytes / 1e9, isa, tb_isa_features(), o.threads);
    printf("# weights %s: %.2f GB resident in huge-page copies (%.2f GB repacked), loaded in %.2f s\n",
           o.mmap ? "mmap" : "copy", info.resident_bytes / 1e9, info.repack_bytes / 1e9, info.load_ns / 1e9);
    printf("# read bandwidth %.2f GB/s first, %.2f GB/s last; each rep is charged against the higher\n"
           "# of the probes taken just before and just after it (median roofline per test below)\n",
           bw_before, bw_after);
    printf("%-8s %12s %9s %14s %10s %9s %9s %15s\n", "test", "tok/s", "stddev", "bytes/token", "GB/s",
           "roof GB/s", "roofline", "range");
    for (int i = 0; i < n_res; i++)
        printf("%-8s %12.2f %9.2f %14.0f %10.2f %9.2f %8.1f%% %6.1f-%5.1f%%\n", res[i].test, res[i].tps_median,
               res[i].tps_stddev, res[i].bytes_per_token, res[i].gbps, res[i].bw_median, res[i].roofline_pct,
               res[i].roofline_pct_min, res[i].roofline_pct_max);
    if (prof.tokens) print_profile(&prof, &bpt, res[n_res - 1].bw_median, false);
    return 0;
}
