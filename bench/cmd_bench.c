/*
 * cmd_bench.c — `ternbench bench`: the quick llama-bench-style prefill and
 * decode benchmark of one model file, or an interleaved comparison of
 * several, as a front end to the scenario runner.
 *
 * bench writes an ad-hoc plan per file (a prefill test ppP, a decode test
 * tgN at depth --ctx; one warm-up, R repetitions), runs the plans as one
 * group through the runner into the results database (default
 * results/ternbench.db, --db FILE, or --no-db for an in-memory scratch
 * database), then reads its figures back from the rows it recorded
 * through the same analysis rules as `show`, the report and `compare`
 * (harness/analysis.h). So `bench`, `run`, the report and the exports
 * give the same figure for the same repetition: each repetition
 * bracketed by bandwidth, clock and vector probes just before and after
 * it, its roofline the higher bandwidth probe.
 *
 * With several -m files the files take turns inside every repetition (A
 * B, then B A, ...), so they see the same machine states, and each file
 * after the first is compared with the first repetition by repetition: the
 * median of the paired tok/s ratios, how many it was faster in, and the
 * two-sided sign test. With --interleave token the files take turns token
 * by token inside every decode repetition instead, and each token of a
 * file after the first is also paired with the first file's token next to
 * it.
 *
 * --profile is outside the database: after the recorded tests, one more
 * decode run of each file split by phase (and at 2 threads by split pass).
 */
#include "bench.h"
#include "commands.h"
#include "runner.h"
#include "scenario.h"
#include "stats.h"
#include "store.h"
#include "ternbench.h"

#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig) {
    if (stop_flag) signal(sig, SIG_DFL);
    stop_flag = 1;
}

/* ---------------------------------------------------------------------- */
/* Arguments                                                                */
/* ---------------------------------------------------------------------- */

static int bench_usage(void) {
    fprintf(stderr, "usage: ternbench bench -m F.gguf [-m G.gguf ...] [-t N] [--ctx C] [-p P] [-n N] [-r R]\n"
                    "                       [--mmap] [--profile] [--interleave rep|token] [--json]\n"
                    "                       [--head exact|approx:C[:T]] [--db FILE | --no-db] [--tag KEY=VALUE]... [-q]\n"
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
                    "           file's next to it\n"
                    "  --head H the output head: exact (default), or approx:CENTROIDS[:TOPC], the clustered\n"
                    "           FlashHead approximation (approximate logits; labelled in every output); once\n"
                    "           for every file, or once per -m: the same file twice with --head exact\n"
                    "           --head approx:... measures the head against the exact one\n"
                    "  --db F   record into F (default $TB_DB or %s); --no-db: a scratch database\n"
                    "  --tag K=V  a run tag (repeatable)\n"
                    "  -q       no progress display\n",
            BENCH_MAX_MODELS, TB_STORE_DEFAULT_PATH);
    return 2;
}

static int parse_args(int argc, char **argv, bench_opts_t *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--json")) { o->json = true; continue; }
        if (!strcmp(a, "--mmap")) { o->mmap = true; continue; }
        if (!strcmp(a, "--profile")) { o->profile = true; continue; }
        if (!strcmp(a, "--no-db")) { o->db = NULL; continue; }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) { o->quiet = true; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { bench_usage(); return -1; }
        if (a[0] != '-') {
            cmd_arg_reject(argv[0], a, NULL);
            return bench_usage();
        }
        static const char *const with_value[] = {"-m", "--model", "-t", "--threads", "--ctx", "-p", "-n",
                                                 "-r", "--interleave", "--db", "--tag", "--head", NULL};
        int known = 0;
        for (int k = 0; with_value[k]; k++) known |= !strcmp(a, with_value[k]);
        if (!known) {
            cmd_arg_reject(argv[0], a, NULL);
            return bench_usage();
        }
        if (!v) {
            cmd_arg_missing(argv[0], a, NULL);
            return bench_usage();
        }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!*v) { fprintf(stderr, "ternbench bench: %s: empty file name\n", a); return 2; }
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
        else if (!strcmp(a, "--db")) {
            if (!*v) { fprintf(stderr, "ternbench bench: --db: empty path\n"); return 2; }
            o->db = v;
        }
        else if (!strcmp(a, "--tag")) rc = cmd_tag_add(&o->tags, "bench", v);
        else if (!strcmp(a, "--head")) {
            bool approx;
            tb_head_params_t hp;
            if (tb_head_parse(v, &approx, &hp) != TB_OK) {
                fprintf(stderr, "ternbench bench: --head %s: %s\n", v, tb_last_error());
                return 2;
            }
            if (o->n_heads == BENCH_MAX_MODELS) {
                fprintf(stderr, "ternbench bench: at most %d --head, got more at '%s'\n", BENCH_MAX_MODELS, v);
                return 2;
            }
            o->heads[o->n_heads++] = approx ? v : NULL;
        }
        else {   /* --interleave */
            if (strcmp(v, "rep") && strcmp(v, "token")) {
                fprintf(stderr, "ternbench bench: --interleave takes rep or token, not '%s'\n", v);
                return 2;
            }
            o->tok_turns = !strcmp(v, "token");
        }
        if (rc) return rc;
        i++;
    }
    if (o->tok_turns && o->n_models < 2) {
        fprintf(stderr, "ternbench bench: --interleave token takes turns between files: give two or more -m\n");
        return 2;
    }
    if (o->n_heads > 1 && o->n_heads != o->n_models) {
        fprintf(stderr, "ternbench bench: give --head once (every file) or once per -m (%d files, %d --head)\n",
                o->n_models, o->n_heads);
        return 2;
    }
    if (o->n_prompt == 0 && o->n_gen == 0) {
        fprintf(stderr, "ternbench bench: -p 0 and -n 0 leave no test to run\n");
        return 2;
    }
    return o->n_models ? 0 : bench_usage();
}

/* ---------------------------------------------------------------------- */
/* The plan                                                                 */
/* ---------------------------------------------------------------------- */

/* The scenario text bench runs for one file: what `ternbench run` would
 * run from the same file (stored with the run, normalized and hashed). */
static char *plan_text(const bench_opts_t *o, const char *model, int k) {
    char *t = NULL;
    int n_ctx = o->ctx + (o->n_prompt > o->n_gen ? o->n_prompt : o->n_gen) + 1;
    char pre[64] = "", dec[128] = "";
    if (o->n_prompt > 0) snprintf(pre, sizeof pre, "[prefill]\nprompt_tokens = %d\n", o->n_prompt);
    if (o->n_gen > 0) snprintf(dec, sizeof dec, "[decode]\ntokens = %d\ndepths = %d\n", o->n_gen, o->ctx);
    if (asprintf(&t, "[model]\npath = %s\n"
                     "[engine]\nthreads = %d\nctx = %d\nbatch = %d\nweights = %s\nhead = %s\n"
                     "[protocol]\nwarmup = 1\nrepetitions = %d\nbandwidth_probe = 256m\n"
                     "throttle_check = false\nrecord_tokens = true\n%s%s",
                 model, o->threads, n_ctx, o->n_prompt > 512 ? o->n_prompt : 512,
                 o->mmap ? "mmap" : "copy", bench_head(o, k) ? bench_head(o, k) : "exact", o->reps, pre, dec) < 0)
        return NULL;
    return t;
}

/* ---------------------------------------------------------------------- */
/* Results, read back                                                       */
/* ---------------------------------------------------------------------- */

static int alloc_result(bench_result_t *r, int R, int n_tok) {
    r->tps = calloc((size_t)R, sizeof(double));
    r->probe = calloc((size_t)R * 2, sizeof(double));
    r->cpu = calloc((size_t)R * 2, sizeof(double));
    r->vec = calloc((size_t)R * 2, sizeof(double));
    r->steal = calloc((size_t)R, sizeof(double));
    r->tok_lat = n_tok > 0 ? calloc((size_t)R * (size_t)n_tok, sizeof(double)) : NULL;
    return r->tps && r->probe && r->cpu && r->vec && r->steal && (n_tok <= 0 || r->tok_lat) ? TB_OK : TB_ERR_NOMEM;
}

/* Test `label` of run run_id into r, through the analysis rules. */
static int read_test(sqlite3 *db, int64_t run_id, const char *label, bool batch, const bench_opts_t *o,
                     bench_result_t *r) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT id FROM tests WHERE run_id = ?1 AND label = ?2", -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "ternbench bench: %s\n", sqlite3_errmsg(db));
        return TB_ERR_IO;
    }
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, label, -1, SQLITE_TRANSIENT);
    int64_t tid = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    if (tid < 0) {
        fprintf(stderr, "ternbench bench: run %lld recorded no test %s\n", (long long)run_id, label);
        return TB_ERR_NOT_FOUND;
    }
    tb_an_test_t t;
    tb_an_reps_t a;
    int rc = tb_an_test_load(db, tid, &t);
    tb_metric_id_t hm = batch ? TB_M_PREFILL_TOK_PER_S : TB_M_DECODE_TOK_PER_S;
    if (!rc) rc = tb_an_reps(&t, hm, &a);
    if (!rc && (int)a.n != o->reps) {
        fprintf(stderr, "ternbench bench: %s: %zu of %d repetitions recorded (%s)\n", label, a.n, o->reps, t.status);
        rc = TB_ERR_INTERNAL;
    }
    int n_tok = batch ? 0 : o->n_gen;
    if (!rc && alloc_result(r, o->reps, n_tok)) {
        fprintf(stderr, "ternbench bench: out of memory for %d reps\n", o->reps);
        rc = TB_ERR_NOMEM;
    }
    if (rc) {
        if (rc != TB_ERR_NOMEM && rc != TB_ERR_INTERNAL && rc != TB_ERR_NOT_FOUND)
            fprintf(stderr, "ternbench bench: %s\n", tb_last_error());
        tb_an_test_free(&t);
        return rc;
    }
    snprintf(r->test, sizeof r->test, "%.47s", label);
    const double *bpt = tb_an_series(&t, TB_M_BYTES_PER_TOKEN);
    for (int i = 0; i < o->reps; i++) {
        r->tps[i] = tb_an_series(&t, hm)[i];
        r->probe[2 * i] = tb_an_series(&t, TB_M_BW_BEFORE_GBPS)[i];
        r->probe[2 * i + 1] = tb_an_series(&t, TB_M_BW_AFTER_GBPS)[i];
        r->cpu[2 * i] = tb_an_series(&t, TB_M_CPU_GHZ_BEFORE)[i];
        r->cpu[2 * i + 1] = tb_an_series(&t, TB_M_CPU_GHZ_AFTER)[i];
        r->vec[2 * i] = tb_an_series(&t, TB_M_VEC_GOPS_BEFORE)[i];
        r->vec[2 * i + 1] = tb_an_series(&t, TB_M_VEC_GOPS_AFTER)[i];
        r->steal[i] = tb_an_series(&t, TB_M_STEAL_PCT)[i];
        if (isfinite(bpt[i])) r->bytes_per_token = bpt[i];
    }
    r->tps_median = a.head.median;
    r->tps_stddev = a.head.stddev;
    r->gbps = a.head.median * r->bytes_per_token / 1e9;
    r->bw_median = a.roof_median;
    r->roofline_pct = a.pct.median;
    r->roofline_pct_min = a.pct.min;
    r->roofline_pct_max = a.pct.max;
    r->settled = (int)a.settled;
    r->roofline_pct_settled = a.pct_settled;
    r->cpu_full = (int)a.full;
    r->roofline_pct_cpu_full = a.pct_full;
    r->cpu_min = a.cpu_min;
    r->cpu_max = a.cpu_max;
    r->vec_min = a.vec_min;
    r->vec_max = a.vec_max;
    r->vec_shared = (int)a.vec_shared;
    if (n_tok > 0) {
        r->tok_n = a.tok_n;
        r->tok_ms_p50 = a.tok_p50;
        r->tok_ms_p90 = a.tok_p90;
        r->tok_ms_p99 = a.tok_p99;
        r->tok_ms_max = a.tok_max;
        r->stall_pct = a.stall_pct;
        r->p50_roofline_pct = a.p50_roofline_pct;
        for (int i = 0; i < o->reps; i++)
            for (int j = 0; j < n_tok && j < t.n_tok; j++) {
                int64_t ns = t.tok_ns[(size_t)i * (size_t)t.n_tok + (size_t)j];
                r->tok_lat[(size_t)i * (size_t)n_tok + (size_t)j] = ns >= 0 ? (double)ns / 1e6 : NAN;
            }
    }
    tb_an_test_free(&t);
    return TB_OK;
}

/* b against a token by token (--interleave token; a's and b's latencies,
 * (R, n) each, the tokens of a pair taken next to each other): every pair
 * (b's speed over a's: a's latency over b's), and each rep's median. */
static int token_pairs_of(const double *lat_a, const double *lat_b, int R, int n, bench_ratio_t *out) {
    int rc = tb_an_paired(lat_b, lat_a, (size_t)R * (size_t)n, &out->tok);
    double *r = rc ? NULL : malloc(sizeof(double) * (size_t)n);   // (n)
    if (!rc && !(out->tok_rep_median = malloc(sizeof(double) * (size_t)R))) rc = TB_ERR_NOMEM;
    if (!rc && !r) rc = TB_ERR_NOMEM;
    for (int i = 0; !rc && i < R; i++) {
        for (int j = 0; j < n; j++)
            r[j] = lat_a[(size_t)i * (size_t)n + (size_t)j] / lat_b[(size_t)i * (size_t)n + (size_t)j];
        out->tok_rep_median[i] = tb_stats_median(r, (size_t)n);
    }
    if (rc == TB_ERR_NOMEM) fprintf(stderr, "ternbench bench: out of memory for %d reps of token pairs\n", R);
    free(r);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* --profile                                                                */
/* ---------------------------------------------------------------------- */

/* One decode run of n tokens after the cache was filled to `depth`
 * (untimed, unprofiled), profiled by phase or by split pass. */
static int profile_run(tb_session_t *s, int32_t n_vocab, int depth, int n, bool split, double *tps) {
    const int count = n > depth ? n : depth;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)count + sizeof(int32_t));   // (count)
    if (!ids) return TB_ERR_NOMEM;
    for (int i = 0; i < count; i++) ids[i] = (int32_t)((i * 7919 + 13) % n_vocab);
    tb_session_reset(s);
    int rc = depth ? tb_session_eval(s, ids, depth, false) : TB_OK;
    if (split) tb_session_set_split_profile(s, true);
    else tb_session_set_profile(s, true);
    uint64_t t0 = tb_now_ns();
    for (int i = 0; !rc && i < n; i++) rc = tb_session_eval(s, &ids[i], 1, false);
    uint64_t dt = tb_now_ns() - t0;
    free(ids);
    *tps = (double)n * 1e9 / (double)(dt ? dt : 1);
    return rc;
}

static int profile_file(bench_var_t *v, const bench_opts_t *o) {
    tb_model_params_t mp = {.weights = o->mmap ? TB_WEIGHTS_MMAP : TB_WEIGHTS_COPY, .n_threads = o->threads};
    tb_session_params_t sp = tb_session_default_params();
    sp.n_threads = o->threads;
    sp.n_ctx = o->ctx + o->n_gen + 1;
    double tps;
    int rc = tb_model_load_ex(v->path, &mp, &v->m);
    if (!rc) rc = tb_model_bytes_per_token(v->m, o->ctx + o->n_gen / 2, sp.kv_type, &v->bpt);
    if (!rc) rc = tb_session_new(v->m, &sp, &v->s);
    if (!rc) rc = profile_run(v->s, v->info.n_vocab, o->ctx, o->n_gen, false, &tps);
    if (!rc) {
        tb_session_get_profile(v->s, &v->prof);
        tb_session_set_profile(v->s, false);
    }
    if (!rc && o->threads == 2 && v->info.split_layers > 0) {
        rc = profile_run(v->s, v->info.n_vocab, o->ctx, o->n_gen, true, &tps);
        tb_session_get_split_profile(v->s, &v->sprof);
        tb_session_set_split_profile(v->s, false);
        v->sprof_ms = 1e3 / tps;
    }
    if (rc) fprintf(stderr, "ternbench bench: %s: %s\n", v->path, tb_last_error());
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Command                                                                  */
/* ---------------------------------------------------------------------- */

static void var_free(bench_var_t *v) {
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
    bench_opts_t o = {.threads = 2, .ctx = 0, .n_prompt = 512, .n_gen = 128, .reps = 5,
                      .db = tb_store_default_path()};
    int rc = parse_args(argc, argv, &o);
    if (rc) { cmd_tags_free(&o.tags); return rc < 0 ? 0 : rc; }
    cmd_tags_add_engine(&o.tags);
    const int nv = o.n_models;
    bench_var_t v[BENCH_MAX_MODELS] = {{0}};
    tb_plan_t plans[BENCH_MAX_MODELS] = {{0}};
    const tb_plan_t *pp[BENCH_MAX_MODELS];
    tb_run_result_t res[BENCH_MAX_MODELS];
    tb_store_t *store = NULL;
    int status = 0;
    /* every plan parsed first: a missing file fails before any probing */
    for (int k = 0; k < nv; k++) {
        v[k].path = o.models[k];
        char *abs = realpath(o.models[k], NULL);
        char *text = plan_text(&o, abs ? abs : o.models[k], k);
        free(abs);
        rc = text ? tb_plan_parse("bench", text, strlen(text), &plans[k]) : TB_ERR_NOMEM;
        free(text);
        pp[k] = &plans[k];
        if (rc) {
            fprintf(stderr, "ternbench bench: %s: %s\n", o.models[k], tb_last_error());
            status = 2;
            goto out;
        }
    }
    if (tb_store_open(o.db ? o.db : ":memory:", &store, NULL) != TB_OK) {
        fprintf(stderr, "ternbench bench: %s\n", tb_last_error());
        status = 1;
        goto out;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    tb_run_opts_t ro = {.quiet = o.quiet || o.json, .n_tags = o.tags.n, .tag_keys = o.tags.keys,
                        .tag_values = o.tags.vals, .stop = &stop_flag,
                        .interleave = o.tok_turns ? TB_INTERLEAVE_TOKEN : TB_INTERLEAVE_REP};
    rc = tb_runner_run_group(pp, NULL, nv, store, &ro, res);
    if (rc) {
        const char *e = tb_last_error();
        fprintf(stderr, "ternbench bench: %s\n", e);
        status = 1;
        goto out;
    }
    for (int k = 0; k < nv; k++) {
        v[k].run_id = res[k].run_id;
        memcpy(v[k].uuid, res[k].uuid, sizeof v[k].uuid);
        v[k].info = res[k].info;
        if (strcmp(res[k].status, "complete") != 0) status = 1;
    }
    if (status) {
        fprintf(stderr, "ternbench bench: run %s: %s\n", res[0].uuid, res[0].status);
        goto out;
    }
    sqlite3 *db = tb_store_db(store);
    double bw_before = 0, bw_after = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT COALESCE(bandwidth_gbps_before, 0), COALESCE(bandwidth_gbps_after, 0)"
                               " FROM runs WHERE id = ?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, v[0].run_id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            bw_before = sqlite3_column_double(st, 0);
            bw_after = sqlite3_column_double(st, 1);
        }
        sqlite3_finalize(st);
    }
    int n_res = 0;
    char label[2][32];
    snprintf(label[0], sizeof label[0], "pp%d", o.n_prompt);
    snprintf(label[1], sizeof label[1], "tg%d@d%d", o.n_gen, o.ctx);
    for (int t = 0; t < 2 && !rc; t++) {
        if ((t == 0 ? o.n_prompt : o.n_gen) == 0) continue;
        for (int k = 0; k < nv && !rc; k++) rc = read_test(db, v[k].run_id, label[t], t == 0, &o, &v[k].res[n_res]);
        n_res++;
    }
    for (int k = 0; k < nv && !rc && o.profile && o.n_gen > 0; k++) rc = profile_file(&v[k], &o);
    bench_ratio_t cmp[2 * BENCH_MAX_MODELS];   /* (test, variant) */
    memset(cmp, 0, sizeof cmp);
    for (int t = 0; t < n_res && !rc; t++)
        for (int k = 1; k < nv && !rc; k++) {
            rc = tb_an_paired(v[0].res[t].tps, v[k].res[t].tps, (size_t)o.reps, &cmp[t * nv + k].rep);
            if (!rc && o.tok_turns && v[0].res[t].tok_lat)   /* speed = 1 / latency: a's over b's */
                rc = token_pairs_of(v[0].res[t].tok_lat, v[k].res[t].tok_lat, o.reps, o.n_gen, &cmp[t * nv + k]);
        }
    if (!rc) {
        if (o.json) bench_print_json(v, nv, n_res, cmp, &o, bw_before, bw_after);
        else bench_print_table(v, nv, n_res, cmp, &o, bw_before, bw_after);
    }
    for (int i = 0; i < 2 * BENCH_MAX_MODELS; i++) free(cmp[i].tok_rep_median);
    if (rc) status = 1;
out:
    tb_store_close(store);
    for (int k = 0; k < nv; k++) {
        tb_plan_free(&plans[k]);
        var_free(&v[k]);
    }
    cmd_tags_free(&o.tags);
    return status;
}
