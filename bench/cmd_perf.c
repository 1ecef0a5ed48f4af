/*
 * cmd_perf.c — the measurement commands bandwidth (the roofline) and kernels
 * (per-format, per-tier matvec GB/s and gemm GOP/s); bench is cmd_bench.c.
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_BYTES ((size_t)256 << 20)   /* >> any LLC this runs on */
#define PROBE_REPS 5

/* ---------------------------------------------------------------------- */
/* Probes shared with bench                                                 */
/* ---------------------------------------------------------------------- */

int cmd_probe(int threads, double *gbps) {
    int rc = tb_bandwidth_probe(threads, PROBE_BYTES, PROBE_REPS, gbps);
    if (rc) fprintf(stderr, "ternbench: bandwidth probe failed: %s\n", tb_last_error());
    return rc;
}

int cmd_cpu_probe(int threads, double *ghz_min, double *vec_min) {
    double g[64], v[64];
    int rc = tb_cpu_probe(threads, 3, g);
    if (!rc) rc = tb_cpu_probe_vec(threads, 3, v);
    if (rc) {
        fprintf(stderr, "ternbench: CPU probe failed: %s\n", tb_last_error());
        return rc;
    }
    *ghz_min = g[0];
    *vec_min = v[0];
    for (int i = 1; i < threads; i++) {
        if (g[i] < *ghz_min) *ghz_min = g[i];
        if (v[i] < *vec_min) *vec_min = v[i];
    }
    return TB_OK;
}

/* ---------------------------------------------------------------------- */
/* bandwidth                                                                */
/* ---------------------------------------------------------------------- */

/* bandwidth [-t N] [-r R] [--json]: for 1..N threads, R probes (each the
 * best of PROBE_REPS passes), taken round-robin over the thread counts so
 * that each count sees the same moments of a machine whose bandwidth
 * moves; the roofline is the best probe, printed with the spread. */
static const char bandwidth_usage[] =
    "usage: ternbench bandwidth [-t N] [-r R] [--json]\n"
    "  -t N  1..N threads (default 2)\n"
    "  -r R  probes per thread count, round-robin (default 1); prints min/median/max\n";

int cmd_bandwidth(int argc, char **argv) {
    int threads = 2, samples = 1;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--json")) { json = true; continue; }
        if (!strcmp(argv[i], "-t") || !strcmp(argv[i], "--threads")) {
            if (cmd_arg_int(argv[0], argv[i], v, 1, 64, &threads)) return 2;
        } else if (!strcmp(argv[i], "-r")) {
            if (cmd_arg_int(argv[0], argv[i], v, 1, 1000, &samples)) return 2;
        } else {
            return cmd_arg_reject(argv[0], argv[i], bandwidth_usage);
        }
        i++;
    }
    double *g = malloc(sizeof(double) * (size_t)threads * (size_t)samples);   /* (threads, samples) */
    if (!g) { fprintf(stderr, "ternbench bandwidth: out of memory\n"); return 1; }
    for (int r = 0; r < samples; r++)
        for (int t = 1; t <= threads; t++)
            if (cmd_probe(t, &g[(size_t)(t - 1) * (size_t)samples + (size_t)r])) { free(g); return 1; }
    if (!json) {
        printf("# read bandwidth, %zu MiB buffer, best of %d passes per probe, %d probe(s) per thread count\n",
               PROBE_BYTES >> 20, PROBE_REPS, samples);
        printf("%-8s %10s", "threads", "GB/s");
        if (samples > 1) printf(" %10s %10s %10s", "min", "median", "max");
        printf("\n");
    }
    for (int t = 1; t <= threads; t++) {
        tb_stats_summary_t x;
        tb_stats_summarize(g + (size_t)(t - 1) * (size_t)samples, (size_t)samples, &x);
        if (json)
            printf("{\"threads\": %d, \"gbps\": %.3f, \"samples\": %d, \"min_gbps\": %.3f, \"median_gbps\": %.3f, "
                   "\"max_gbps\": %.3f, \"buffer_bytes\": %zu, \"passes\": %d}\n", t, x.max, samples, x.min, x.median,
                   x.max, PROBE_BYTES, PROBE_REPS);
        else if (samples > 1)
            printf("%-8d %10.2f %10.2f %10.2f %10.2f\n", t, x.max, x.min, x.median, x.max);
        else
            printf("%-8d %10.2f\n", t, x.max);
    }
    free(g);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* kernels                                                                  */
/* ---------------------------------------------------------------------- */

static const struct { int64_t rows, cols; } shapes[] = {
    {2048, 2048}, {512, 2048}, {2048, 512}, {2048, 5632}, {151936, 2048},
};
/* --hot without --shape: these row lengths, rows up to HOT_BYTES of weights
 * (a quarter of a 1 MiB L2, so the copy stays there between calls). */
static const int64_t hot_cols[] = {2048, 512, 5632};
#define HOT_BYTES ((size_t)256 << 10)
#define GEMM_ROWS 2048
#define GEMM_COLS 2048
#define GEMM_TOK 64
#define MIN_COPY_BYTES ((size_t)256 << 20)   /* cycle weight copies beyond the LLC */
#define TIME_BUDGET_NS 250000000ull          /* per (format, shape), all tiers     */
#define MAX_SAMPLES 1000

typedef struct {
    int threads;
    int64_t rows, cols;      /* --shape: one shape (matvec and gemm), else 0 */
    bool json;
    bool hot;                /* --hot: one copy of the weights, read again and again */
    bool ceiling;            /* --ceiling: every thread its own hot copy, at once */
    int reps;                /* --ceiling: windows per (tier, thread count) */
    int window_ms;           /* --ceiling: length of a window */
    double bw;               /* the probe: GB/s */
} kernels_opts_t;

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

/* One line (or JSON object) for a tier's samples ns[0..n) of one shape:
 * the best and the median time of the weight pass; `work` is bytes
 * (matvec: GB/s, % of the probe) or operations (gemm: GOP/s). act_ns: the
 * median time the tier took to quantize the activations, which the
 * timed passes do not include (JSON only). */
static void kernels_report(const kernels_opts_t *o, tb_type_t t, tb_isa_t tier, bool gemm, int64_t rows,
                           int64_t cols, const double *ns, int n, double work, double act_ns) {
    tb_stats_summary_t sum;
    tb_stats_summarize(ns, (size_t)n, &sum);
    const double best = sum.min, med = sum.median;
    if (o->json) {
        printf("{\"format\": \"%s\", \"isa\": \"%s\", \"kind\": \"%s\", \"rows\": %lld, \"cols\": %lld, "
               "\"tokens\": %d, \"threads\": %d, \"prefetch_bytes\": %zu, \"prefetch_l2\": %s, \"hot\": %s, \"reps\": %d, "
               "\"best_us\": %.3f, \"median_us\": %.3f, \"act_us\": %.3f, ",
               tb_type_name(t), tb_isa_name(tier), gemm ? "gemm" : "matvec", (long long)rows, (long long)cols,
               gemm ? GEMM_TOK : 1, o->threads, tb_prefetch_bytes(), tb_prefetch_l2() ? "true" : "false",
               o->hot ? "true" : "false", n, best / 1e3, med / 1e3, act_ns / 1e3);
        if (gemm) printf("\"gops\": %.3f, \"median_gops\": %.3f}\n", work / best, work / med);
        else if (o->hot) printf("\"gbps\": %.3f, \"median_gbps\": %.3f, \"bandwidth_gbps\": %.3f}\n", work / best,
                                work / med, o->bw);   /* from cache: no roofline */
        else printf("\"gbps\": %.3f, \"median_gbps\": %.3f, \"roofline_pct\": %.2f, \"bandwidth_gbps\": %.3f}\n",
                    work / best, work / med, 100.0 * work / best / o->bw, o->bw);
    } else if (gemm) {
        printf("%-6s %-8s gemm   %6lldx%-5lld x %d tok %9.1f us %8.1f GOP/s (median %.1f)\n", tb_type_name(t),
               tb_isa_name(tier), (long long)rows, (long long)cols, GEMM_TOK, best / 1e3, work / best, work / med);
    } else if (o->hot) {   /* no roofline: the bytes may come from cache */
        printf("%-6s %-8s matvec %6lldx%-5lld %9.1f us %8.2f GB/s   hot  (median %.2f GB/s)\n", tb_type_name(t),
               tb_isa_name(tier), (long long)rows, (long long)cols, best / 1e3, work / best, work / med);
    } else {
        printf("%-6s %-8s matvec %6lldx%-5lld %9.1f us %8.2f GB/s %6.1f %% (median %.2f GB/s)\n", tb_type_name(t),
               tb_isa_name(tier), (long long)rows, (long long)cols, best / 1e3, work / best,
               100.0 * work / best / o->bw, work / med);
    }
}

/* Weights of type t (rows x cols, `copies` matrices cycled so that reads
 * come from memory) prepared for every tier, as the model's are. */
static int kernels_setup(tb_type_t t, int64_t rows, int64_t cols, int copies, const tb_isa_t *tiers,
                         int n_tiers, tb_weights_t **pw) {
    const size_t wbytes = tb_type_row_bytes(t, cols) * (size_t)rows;
    uint8_t *W = malloc(wbytes * (size_t)copies);              // (copies, rows, cols)
    if (!W) {
        fprintf(stderr, "ternbench kernels: %s %lldx%lld: out of memory for %zu bytes of weights\n", tb_type_name(t),
                (long long)rows, (long long)cols, wbytes * (size_t)copies);
        return 1;
    }
    int bad = fill_weights(t, cols, W, wbytes * (size_t)copies);
    for (int k = 0; k < n_tiers && !bad; k++) {
        tb_isa_set(tiers[k]);
        bad = tb_weights_new(t, W, rows, cols, copies, &pw[k]) != TB_OK;
    }
    free(W);
    if (!bad) return 0;
    fprintf(stderr, "ternbench kernels: cannot set up %s %lldx%lld: %s\n", tb_type_name(t), (long long)rows,
            (long long)cols, tb_last_error());
    for (int k = 0; k < n_tiers; k++) { tb_weights_free(pw[k]); pw[k] = NULL; }
    return 1;
}

/* Activations (n, cols) for weight type t, one per tier (each tier
 * quantizes its own before the timed passes). */
static int kernels_acts(tb_type_t t, int64_t cols, int64_t n, int n_tiers, tb_act_t **act) {
    for (int k = 0; k < n_tiers; k++)
        if (tb_act_new(t, cols, n, &act[k]) != TB_OK) {
            fprintf(stderr, "ternbench kernels: activations for %s x %lld: %s\n", tb_type_name(t), (long long)cols,
                    tb_last_error());
            return 1;
        }
    return 0;
}

static void kernels_free(tb_weights_t **pw, tb_act_t **act, int n_tiers) {
    for (int k = 0; k < n_tiers; k++) {
        tb_weights_free(pw[k]);
        tb_act_free(act[k]);
        pw[k] = NULL;
        act[k] = NULL;
    }
}

/* One timed repetition: quantize X into a (its time into *qns), then the
 * weight pass of matrix mat alone, matvec or gemm (its time into *ns). */
static void time_rep(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, tb_act_t *a, const float *X, float *Y,
                     bool gemm, double *ns, double *qns) {
    const uint64_t tq = tb_now_ns();
    tb_act_set(a, X);
    const uint64_t t0 = tb_now_ns();
    if (gemm) tb_weights_matmul_act(pool, w, mat, a, Y);
    else tb_weights_matvec_act(pool, w, mat, a, Y);
    const uint64_t t1 = tb_now_ns();
    *ns = (double)(t1 - t0);
    *qns = (double)(t0 - tq);
}

/* The median of v[0..n) (n >= 1). */
static double median_of(const double *v, int n) {
    tb_stats_summary_t sum;
    tb_stats_summarize(v, (size_t)n, &sum);
    return sum.median;
}

/* Decode-shaped matvecs (bytes streamed per second) and a prefill-shaped
 * gemm (operations per second, 2 per multiply-add) of format t, the tiers
 * interleaved rep by rep (rep 0 is a warm-up), within TIME_BUDGET_NS. */
static int run_kernels_format(const kernels_opts_t *o, tb_type_t t, const tb_isa_t *tiers, int n_tiers,
                              tb_pool_t *pool) {
    const int64_t blk = tb_type_block_elems(t);
    double *ns = malloc(sizeof(double) * 8 * MAX_SAMPLES);    /* (tier, sample): ns per weight pass */
    double *qns = malloc(sizeof(double) * 8 * MAX_SAMPLES);   /* (tier, sample): ns quantizing x     */
    if (!ns || !qns) { free(ns); free(qns); fprintf(stderr, "ternbench kernels: out of memory\n"); return 1; }
    const bool hot_set = !o->rows && o->hot;   /* the decode set's row lengths, as many rows as fit HOT_BYTES */
    const size_t n_shapes = o->rows ? 1 : hot_set ? sizeof hot_cols / sizeof hot_cols[0] : sizeof shapes / sizeof shapes[0];
    for (size_t s = 0; s < n_shapes; s++) {
        int64_t rows = o->rows ? o->rows : shapes[s].rows, cols = o->rows ? o->cols : shapes[s].cols;
        if (hot_set) cols = hot_cols[s];
        if (cols % blk) continue;
        if (hot_set) {
            rows = (int64_t)(HOT_BYTES / tb_type_row_bytes(t, cols)) / 16 * 16;
            if (rows < 16) rows = 16;
        }
        const size_t wbytes = tb_type_row_bytes(t, cols) * (size_t)rows;
        const int copies = o->hot ? 1 : (int)((MIN_COPY_BYTES + wbytes - 1) / wbytes);
        tb_weights_t *pw[8] = {NULL};   /* per tier: prepared as the model's (huge pages, repacked) */
        tb_act_t *act[8] = {NULL};      /* per tier: x quantized by it, outside the timed pass   */
        float *x = malloc(sizeof(float) * (size_t)cols), *y = malloc(sizeof(float) * (size_t)rows);
        if (!x || !y || kernels_setup(t, rows, cols, copies, tiers, n_tiers, pw) ||
            kernels_acts(t, cols, 1, n_tiers, act)) {
            kernels_free(pw, act, n_tiers);
            free(x); free(y); free(ns); free(qns);
            return 1;
        }
        for (int64_t j = 0; j < cols; j++) x[j] = (float)((j * 7919) % 2001 - 1000) / 1000.0f;
        const uint64_t t_end = tb_now_ns() + TIME_BUDGET_NS;
        int n = 0, c = 0;
        for (int rep = 0; rep < 4 || (tb_now_ns() < t_end && rep <= MAX_SAMPLES); rep++, n += rep > 1)
            for (int k = 0; k < n_tiers; k++) {   /* interleaved tiers */
                tb_isa_set(tiers[k]);
                double dt, dq;
                time_rep(pool, pw[k], c, act[k], x, y, false, &dt, &dq);
                if (rep > 0) { ns[k * MAX_SAMPLES + rep - 1] = dt; qns[k * MAX_SAMPLES + rep - 1] = dq; }
                c = (c + 1) % copies;
            }
        for (int k = 0; k < n_tiers; k++)
            kernels_report(o, t, tiers[k], false, rows, cols, ns + k * MAX_SAMPLES, n, (double)wbytes,
                           median_of(qns + k * MAX_SAMPLES, n));
        kernels_free(pw, act, n_tiers);
        free(x); free(y);
    }
    const int64_t grows = o->rows ? o->rows : GEMM_ROWS, gcols = o->rows ? o->cols : GEMM_COLS;
    if (gcols % blk == 0) {
        float *X = malloc(sizeof(float) * GEMM_TOK * (size_t)gcols);   // (tok, cols)
        float *Y = malloc(sizeof(float) * GEMM_TOK * (size_t)grows);   // (tok, rows)
        tb_weights_t *pw[8] = {NULL};
        tb_act_t *act[8] = {NULL};
        if (!X || !Y || kernels_setup(t, grows, gcols, 1, tiers, n_tiers, pw) ||
            kernels_acts(t, gcols, GEMM_TOK, n_tiers, act)) {
            kernels_free(pw, act, n_tiers);
            free(X); free(Y); free(ns); free(qns);
            return 1;
        }
        for (int64_t j = 0; j < GEMM_TOK * gcols; j++) X[j] = (float)((j * 7919) % 2001 - 1000) / 1000.0f;
        const uint64_t t_end = tb_now_ns() + TIME_BUDGET_NS;
        int n = 0;
        for (int rep = 0; rep < 3 || (tb_now_ns() < t_end && rep <= 200); rep++, n += rep > 1)
            for (int k = 0; k < n_tiers; k++) {
                tb_isa_set(tiers[k]);
                double dt, dq;
                time_rep(pool, pw[k], 0, act[k], X, Y, true, &dt, &dq);
                if (rep > 0) { ns[k * MAX_SAMPLES + rep - 1] = dt; qns[k * MAX_SAMPLES + rep - 1] = dq; }
            }
        for (int k = 0; k < n_tiers; k++)
            kernels_report(o, t, tiers[k], true, grows, gcols, ns + k * MAX_SAMPLES, n,
                           2.0 * (double)grows * (double)gcols * GEMM_TOK, median_of(qns + k * MAX_SAMPLES, n));
        kernels_free(pw, act, n_tiers);
        free(X); free(Y);
    }
    free(ns);
    free(qns);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* kernels --ceiling                                                        */
/* ---------------------------------------------------------------------- */

/* The arithmetic ceiling of a tier's matvec with n threads busy at once:
 * each thread reads its own copy of a cache-resident matrix (HOT_BYTES of
 * 2048-column rows) back to back for a window, and the figure is the
 * weight bytes all of them went through per second. A lone thread's
 * ceiling is what --hot measures; with every core busy the clock may
 * drop and whatever the cores share is shared, which is what a 2-thread
 * decode of a compute-heavy format meets. Against the probe at n threads it says
 * whether that format can be memory-bound here: a ceiling under the probe
 * means no threading makes its decode reach the roofline. */
#define CEIL_COLS 2048

typedef struct {
    tb_weights_t *w;      /* this thread's copy (rows, CEIL_COLS) */
    tb_act_t *a;          /* this thread's activations              */
    float *y;             /* (rows)                                 */
    uint64_t ns, calls;   /* out: the thread's time and matvecs     */
} ceil_seat_t;

typedef struct {
    ceil_seat_t *seat;    /* (n) */
    uint64_t window_ns;
    atomic_int arrived;   /* threads at the start line */
} ceil_run_t;

/* Thread ith: once all nth are at the start line (a late wake must not
 * shorten its window), matvecs back to back for the window, at least one. */
static void ceil_thread(void *arg, int ith, int nth) {
    ceil_run_t *run = arg;
    ceil_seat_t *s = &run->seat[ith];
    atomic_fetch_add(&run->arrived, 1);
    while (atomic_load(&run->arrived) < nth) {}
    const uint64_t t0 = tb_now_ns();
    uint64_t t, calls = 0;
    do {
        (void)tb_weights_matvec_act(NULL, s->w, 0, s->a, s->y);   /* checked in ceil_setup */
        calls++;
        t = tb_now_ns();
    } while (t - t0 < run->window_ns);
    s->ns = t - t0;
    s->calls = calls;
}

static void ceil_free(ceil_seat_t *seat, int n) {
    for (int i = 0; i < n; i++) {
        tb_weights_free(seat[i].w);
        tb_act_free(seat[i].a);
        free(seat[i].y);
    }
}

/* nth seats of type t (rows x CEIL_COLS) for tier `tier`, prepared as
 * kernels' own matrices are (kernels_setup, kernels_acts), each run once
 * (its result code checked, its copy brought into cache). */
static int ceil_setup(tb_type_t t, tb_isa_t tier, int64_t rows, int nth, const float *x, ceil_seat_t *seat) {
    for (int i = 0; i < nth; i++) {
        ceil_seat_t *st = &seat[i];
        if (kernels_setup(t, rows, CEIL_COLS, 1, &tier, 1, &st->w) || kernels_acts(t, CEIL_COLS, 1, 1, &st->a)) {
            ceil_free(seat, nth);
            return 1;
        }
        int rc = tb_act_set(st->a, x);
        if (rc == TB_OK && !(st->y = malloc(sizeof(float) * (size_t)rows))) rc = TB_ERR_NOMEM;
        if (rc == TB_OK) rc = tb_weights_matvec_act(NULL, st->w, 0, st->a, st->y);
        if (rc != TB_OK) {
            fprintf(stderr, "ternbench kernels --ceiling: %s %lldx%d: %s\n", tb_type_name(t), (long long)rows,
                    CEIL_COLS, rc == TB_ERR_NOMEM ? "out of memory" : tb_last_error());
            ceil_free(seat, nth);
            return 1;
        }
    }
    return 0;
}

/* Format t: for each window round, each thread count n = 1..N (a probe
 * at n threads, then one window per tier, tiers interleaved). Reports per
 * (tier, n) the best and median window and the best probe at n. */
static int run_ceiling_format(const kernels_opts_t *o, tb_type_t t, const tb_isa_t *tiers, int n_tiers,
                              tb_pool_t *const *pools) {
    if (CEIL_COLS % tb_type_block_elems(t)) return 0;
    const int N = o->threads;
    int64_t rows = (int64_t)(HOT_BYTES / tb_type_row_bytes(t, CEIL_COLS)) / 16 * 16;
    if (rows < 16) rows = 16;
    const double wbytes = (double)tb_type_row_bytes(t, CEIL_COLS) * (double)rows;
    float x[CEIL_COLS];
    for (int j = 0; j < CEIL_COLS; j++) x[j] = (float)((j * 7919) % 2001 - 1000) / 1000.0f;
    ceil_seat_t *seat = calloc((size_t)n_tiers * (size_t)N, sizeof *seat);          /* (tier, thread) */
    double *g = malloc(sizeof(double) * (size_t)n_tiers * (size_t)N * (size_t)o->reps);   /* (tier, n, rep) GB/s */
    double *bw = calloc((size_t)N, sizeof *bw);                                     /* (n) best probe */
    uint64_t *least = calloc((size_t)n_tiers * (size_t)N, sizeof *least);            /* (tier, n) fewest calls */
    int rc = !seat || !g || !bw || !least;
    if (rc) fprintf(stderr, "ternbench kernels --ceiling: out of memory\n");
    int ready = 0;
    for (; ready < n_tiers && !rc; ready++)
        if (ceil_setup(t, tiers[ready], rows, N, x, seat + (size_t)ready * (size_t)N)) { rc = 1; break; }
    for (int r = 0; r < o->reps && !rc; r++)
        for (int n = 1; n <= N && !rc; n++) {
            double p;
            if ((rc = cmd_probe(n, &p))) break;
            if (p > bw[n - 1]) bw[n - 1] = p;
            for (int k = 0; k < n_tiers; k++) {
                ceil_seat_t *s = seat + (size_t)k * (size_t)N;   /* (n) of this tier's seats */
                tb_isa_set(tiers[k]);
                ceil_run_t run = {.seat = s, .window_ns = (uint64_t)o->window_ms * 1000000ull};
                atomic_init(&run.arrived, 0);
                tb_pool_run(pools[n - 1], ceil_thread, &run);
                double sum = 0.0;   /* GB/s: bytes per ns, summed over the threads */
                uint64_t *lc = &least[(size_t)k * (size_t)N + (size_t)(n - 1)];
                for (int i = 0; i < n; i++) {
                    sum += (double)s[i].calls * wbytes / (double)(s[i].ns ? s[i].ns : 1);
                    if (r == 0 && i == 0) *lc = s[i].calls;
                    if (s[i].calls < *lc) *lc = s[i].calls;
                }
                g[((size_t)k * (size_t)N + (size_t)(n - 1)) * (size_t)o->reps + (size_t)r] = sum;
            }
        }
    for (int k = 0; k < n_tiers && !rc; k++)
        for (int n = 1; n <= N; n++) {
            tb_stats_summary_t sm;
            tb_stats_summarize(g + ((size_t)k * (size_t)N + (size_t)(n - 1)) * (size_t)o->reps, (size_t)o->reps, &sm);
            const double pct = 100.0 * sm.max / bw[n - 1];
            if (o->json)
                printf("{\"format\": \"%s\", \"isa\": \"%s\", \"kind\": \"ceiling\", \"rows\": %lld, \"cols\": %d, "
                       "\"threads\": %d, \"reps\": %d, \"window_ms\": %d, \"gbps\": %.3f, \"median_gbps\": %.3f, "
                       "\"per_thread_gbps\": %.3f, \"min_calls\": %llu, \"bandwidth_gbps\": %.3f, \"ceiling_pct\": %.2f}\n",
                       tb_type_name(t), tb_isa_name(tiers[k]), (long long)rows, CEIL_COLS, n, o->reps, o->window_ms,
                       sm.max, sm.median, sm.max / n, (unsigned long long)least[(size_t)k * (size_t)N + (size_t)(n - 1)],
                       bw[n - 1], pct);
            else
                printf("%-6s %-8s ceiling %d thr %6lldx%-5d %8.2f GB/s (median %.2f) %7.2f per thread   probe %6.2f GB/s "
                       "%6.1f %%\n", tb_type_name(t), tb_isa_name(tiers[k]), n, (long long)rows, CEIL_COLS, sm.max,
                       sm.median, sm.max / n, bw[n - 1], pct);
        }
    for (int k = 0; k < ready; k++) ceil_free(seat + (size_t)k * (size_t)N, N);
    free(seat);
    free(g);
    free(bw);
    free(least);
    return rc;
}

/* kernels --ceiling: a pool per thread count, then format by format. */
static int run_ceiling(const kernels_opts_t *o, const tb_type_t *types, int n_types, const tb_isa_t *tiers,
                       int n_tiers, tb_isa_t start) {
    tb_pool_t *pools[64] = {NULL};   /* (n): a pool of n threads */
    int rc = 0;
    for (int n = 1; n <= o->threads && !rc; n++)
        if (tb_pool_new(n, &pools[n - 1]) != TB_OK) {
            fprintf(stderr, "ternbench kernels: %s\n", tb_last_error());
            rc = 1;
        }
    if (!rc && !o->json)
        printf("# arithmetic ceiling: 1..%d thread(s) at once, each its own copy (256 KiB of %d-column rows, read "
               "from cache) back to back; %d round(s) of a %d ms window per tier, tiers interleaved, best (median); "
               "probe: the best read bandwidth at as many threads, taken before each round's windows; %% = ceiling / "
               "probe\n", o->threads, CEIL_COLS, o->reps, o->window_ms);
    for (int i = 0; i < n_types && !rc; i++) rc = run_ceiling_format(o, types[i], tiers, n_tiers, pools);
    for (int n = 0; n < o->threads; n++) tb_pool_free(pools[n]);
    tb_isa_set(start);
    return rc;
}

static const char kernels_usage[] =
    "usage: ternbench kernels [--format F] [--isa I] [-t N] [--shape RxC] [--hot] [--json]\n"
    "       ternbench kernels --ceiling [--format F] [--isa I] [-t N] [-r R] [--window MS] [--json]\n"
    "  --shape RxC  one matvec shape (and the gemm on it) instead of the decode set\n"
    "  --hot        one copy of each matrix, so a shape that fits the caches is read\n"
    "               from them: the kernel's arithmetic ceiling, not its roofline;\n"
    "               without --shape, rows of 2048, 512 and 5632 columns, 256 KiB each\n"
    "  --ceiling    that ceiling with 1..N threads busy at once, each on its own 256 KiB\n"
    "               copy of 2048-column rows, against the probe at as many threads:\n"
    "               R rounds (default 3) of a MS-long window (default 100) per tier\n"
    "  --json       one object per (format, tier, kind, shape), best and median;\n"
    "               act_us: quantizing the activations, which the timed pass excludes\n";

int cmd_kernels(int argc, char **argv) {
    static const tb_type_t all[] = {TB_TYPE_TQ2_0, TB_TYPE_TQ1_0, TB_TYPE_Q4_0, TB_TYPE_Q8_0,
                                    TB_TYPE_Q4_K, TB_TYPE_Q6_K, TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_F32};
    kernels_opts_t o = {.threads = 2, .reps = 3, .window_ms = 100};
    const char *fmt = NULL, *isa = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--json")) { o.json = true; continue; }
        if (!strcmp(argv[i], "--hot")) { o.hot = true; continue; }
        if (!strcmp(argv[i], "--ceiling")) { o.ceiling = true; continue; }
        if (!strcmp(argv[i], "-t") || !strcmp(argv[i], "--threads")) {
            if (cmd_arg_int(argv[0], argv[i], v, 1, 64, &o.threads)) return 2;
        } else if (!strcmp(argv[i], "-r")) {
            if (cmd_arg_int(argv[0], argv[i], v, 1, 1000, &o.reps)) return 2;
        } else if (!strcmp(argv[i], "--window")) {
            if (cmd_arg_int(argv[0], argv[i], v, 1, 60000, &o.window_ms)) return 2;
        } else if (!strcmp(argv[i], "--format") && v) {
            fmt = v;
        } else if (!strcmp(argv[i], "--isa") && v) {
            isa = v;
        } else if (!strcmp(argv[i], "--shape") && v) {
            long long r, c;
            char tail;
            if (sscanf(v, "%lldx%lld%c", &r, &c, &tail) != 2 || r < 1 || c < 1 || r > (1 << 20) || c > (1 << 20)) {
                fprintf(stderr, "ternbench kernels: --shape expects ROWSxCOLS (each 1..1048576), got '%s'\n", v);
                return 2;
            }
            o.rows = r;
            o.cols = c;
        } else if (!v && (!strcmp(argv[i], "--format") || !strcmp(argv[i], "--isa") || !strcmp(argv[i], "--shape"))) {
            return cmd_arg_missing(argv[0], argv[i], kernels_usage);
        } else {
            return cmd_arg_reject(argv[0], argv[i], kernels_usage);
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
    if (o.rows && !fmt) {
        fprintf(stderr, "ternbench kernels: --shape needs --format\n");
        return 2;
    }
    if (o.rows && o.cols % tb_type_block_elems(types[0])) {
        fprintf(stderr, "ternbench kernels: --shape %lldx%lld: %s rows need a multiple of %lld columns\n",
                (long long)o.rows, (long long)o.cols, tb_type_name(types[0]), (long long)tb_type_block_elems(types[0]));
        return 2;
    }
    if (o.ceiling && (o.rows || o.hot)) {
        fprintf(stderr, "ternbench kernels: --ceiling takes neither --shape nor --hot (its matrices are hot, 2048 columns)\n");
        return 2;
    }
    if (o.ceiling) return run_ceiling(&o, types, n_types, tiers, n_tiers, start);
    if (cmd_probe(o.threads, &o.bw)) return 1;
    tb_pool_t *pool;
    if (tb_pool_new(o.threads, &pool) != TB_OK) {
        fprintf(stderr, "ternbench kernels: %s\n", tb_last_error());
        return 1;
    }
    if (!o.json)
        printf("# %d thread(s), read bandwidth %.2f GB/s (probe), best tier %s [%s], prefetch %zu B%s; tiers interleaved, "
               "best of the reps (median in brackets), the weight pass alone (activations quantized before it)%s\n",
               o.threads, o.bw, tb_isa_name(tb_isa_best()),
               (tb_isa_set(tb_isa_best()), tb_isa_features()), tb_prefetch_bytes(), tb_prefetch_l2() ? " + L2 stage" : "",
               o.hot ? "; --hot: weights read from cache where they fit" : "");
    int rc = 0;
    for (int i = 0; i < n_types && !rc; i++) rc = run_kernels_format(&o, types[i], tiers, n_tiers, pool);
    tb_pool_free(pool);
    tb_isa_set(start);
    return rc;
}
