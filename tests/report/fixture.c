/*
 * fixture.c — build the report tests' results database (see fixture.h).
 */
#include "fixture.h"

#include <dirent.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ===================================================================== */
/* Formulas                                                                */
/* ===================================================================== */

double fx_factor(int run) {
    static const double f[] = {0, 1.5, 1.0, 0.4, 1.8};
    return run >= 1 && run <= 4 ? f[run] : 0;
}

double fx_prefill(int run, int n, int rep) {
    return fx_factor(run) * (400.0 + n / 2.0) * (1.0 + 0.01 * (rep - 1));
}

double fx_decode(int run, int depth, int rep) {
    return fx_factor(run) * 40.0 / (1.0 + depth / 2048.0) * (1.0 + 0.02 * (rep - 1));
}

/* ===================================================================== */
/* SQL helpers                                                             */
/* ===================================================================== */

static int exec(sqlite3 *db, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *sql = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) fprintf(stderr, "fixture: %s\n  in: %.300s\n", err ? err : "?", sql);
    sqlite3_free(err);
    sqlite3_free(sql);
    return rc == SQLITE_OK ? 0 : -1;
}

static int64_t last_test;

static int test_row(sqlite3 *db, int run, const char *section, const char *kind, const char *label,
                    const char *params, const char *thermal) {
    if (exec(db, "INSERT INTO tests(run_id, section, kind, label, params, status, thermal_state)"
                 " VALUES(%d, %Q, %Q, %Q, %Q, 'complete', %Q)", run, section, kind, label, params, thermal))
        return -1;
    last_test = sqlite3_last_insert_rowid(db);
    return 0;
}

static int meas(sqlite3 *db, int rep, const char *metric, double v, const char *unit) {
    return exec(db, "INSERT INTO measurements(test_id, repetition, metric, value, unit)"
                    " VALUES(%lld, %d, %Q, %.17g, %Q)", (long long)last_test, rep, metric, v, unit);
}

/* ===================================================================== */
/* Per-run content                                                         */
/* ===================================================================== */

static const int PROMPTS[] = {64, 128, 256};
static const int DEPTHS[] = {0, 256, 1024};

static int prefill_decode(sqlite3 *db, int run, int summaries_only) {
    char label[64], params[128];
    for (int i = 0; i < 3; i++) {
        int n = PROMPTS[i];
        snprintf(label, sizeof label, "pp%d", n);
        snprintf(params, sizeof params, "{\"prompt_tokens\": %d, \"depth\": 0, \"tag\": \"a,b}\"}", n);
        if (test_row(db, run, "prefill", "prefill", label, params, NULL)) return -1;
        double v[3];
        for (int r = 0; r < 3; r++) v[r] = fx_prefill(run, n, r);
        if (summaries_only) {
            if (meas(db, -1, "prefill_tok_per_s_median", v[1], "tok/s")) return -1;
            if (meas(db, -1, "prefill_tok_per_s_stddev", v[1] * 0.01, "tok/s")) return -1;
        } else {
            for (int r = 0; r < 3; r++) if (meas(db, r, "prefill_tok_per_s", v[r], "tok/s")) return -1;
            /* a stale summary that must not win over the repetitions */
            if (meas(db, -1, "prefill_tok_per_s", 1.0, "tok/s")) return -1;
        }
    }
    for (int i = 0; i < 3; i++) {
        int d = DEPTHS[i];
        snprintf(label, sizeof label, d ? "tg32@d%d" : "tg32", d);
        snprintf(params, sizeof params, "{\"gen_tokens\":32,\"depth\":%d}", d);
        if (test_row(db, run, "decode.depths", "decode", label, params, NULL)) return -1;
        double bpt = (run == 3 ? 500.0 : run == 2 ? 150.0 : 100.0) * 1048576 + d * 4096.0;
        for (int r = 0; r < 3 && !summaries_only; r++) {
            double tps = fx_decode(run, d, r);
            if (meas(db, r, "decode_tok_per_s", tps, "tok/s")) return -1;
            if (meas(db, r, "bytes_per_token", bpt, "B")) return -1;
            if (run != 3 && meas(db, r, "achieved_gbps", bpt * tps / 1e9, "GB/s")) return -1;
            if (run == 1 && meas(db, r, "roofline_pct", 100 * bpt * tps / 1e9 / 20.0, "%")) return -1;
            /* run 2's tg32: the clock steady, the vector throughput 9.00, 5.60, 5.40 ops/ns
             * (two consecutive probes under 85 %, the higher 62 %: vector units shared);
             * run 1's: 9.00, 5.00, 8.90 (one low probe alone: no verdict of its own) */
            if (run <= 2 && !d && (meas(db, r, "cpu_ghz_after", 2.5, "GHz") ||
                                   meas(db, r, "vec_gops_after", run == 2 ? (r ? 5.8 - 0.2 * r : 9.0)
                                                                         : (r == 1 ? 5.0 : 9.0 - 0.05 * r), "op/ns")))
                return -1;
        }
        if (summaries_only) {
            /* the harness's spelling: plain metric at -1 is the median, METRIC:x the rest */
            if (meas(db, -1, "decode_tok_per_s", fx_decode(run, d, 1), "tok/s")) return -1;
            if (meas(db, -1, "decode_tok_per_s:stddev", fx_decode(run, d, 1) * 0.02, "tok/s")) return -1;
            if (meas(db, -1, "decode_tok_per_s:max", 999.0, "tok/s")) return -1;
            if (meas(db, -1, "bytes_per_token", bpt, "B")) return -1;
        }
    }
    return 0;
}

/* A generate test with token events: 1 prefill event, 64 decode events
 * with gaps of base ms plus a deterministic jitter, in 3 repetitions. */
static int generate(sqlite3 *db, int run, double base_ms) {
    if (test_row(db, run, "generate", "generate", "pp16+tg64", "{\"prompt_tokens\":16,\"tokens\":64}", NULL))
        return -1;
    for (int r = 0; r < 3; r++) {
        int64_t t = 5000000;   /* prefill done at 5 ms */
        if (exec(db, "INSERT INTO token_events(test_id, repetition, idx, phase, t_ns, token_id, text) VALUES(%lld, %d, 0, 'prefill', %lld, 1, X'61')",
                 (long long)last_test, r, (long long)t))
            return -1;
        for (int k = 1; k <= 64; k++) {
            double gap = base_ms * (1.0 + 0.05 * ((k * 7 + r * 3) % 11) / 10.0) + (k % 29 == 0 ? 3 * base_ms : 0);
            t += (int64_t)(gap * 1e6);
            if (exec(db, "INSERT INTO token_events(test_id, repetition, idx, phase, t_ns, token_id, text) VALUES(%lld, %d, %d, 'decode', %lld, %d, X'78')",
                     (long long)last_test, r, k, (long long)t, 100 + k))
                return -1;
        }
        if (meas(db, r, "ttft_ms", 5.0 + base_ms + r * 0.1, "ms")) return -1;
        if (meas(db, r, "ttft_prefill_ms", 5.0 + r * 0.1, "ms")) return -1;
        if (meas(db, r, "ttft_first_decode_ms", base_ms, "ms")) return -1;
        if (meas(db, r, "itl_p50_ms", base_ms * 1.02, "ms")) return -1;
        if (meas(db, r, "itl_p90_ms", base_ms * 1.05, "ms")) return -1;
        if (meas(db, r, "itl_p99_ms", base_ms * 3.5, "ms")) return -1;
        if (meas(db, r, "itl_max_ms", base_ms * 4.0, "ms")) return -1;
        if (meas(db, r, "stall_pct", 4.0 + r, "%")) return -1;
        if (meas(db, r, "e2e_ms", 5.0 + 64 * base_ms * 1.1, "ms")) return -1;
        if (meas(db, r, "chars_per_s", 3000.0 / base_ms + r, "chars/s")) return -1;
        if (meas(db, r, "chars_per_token", 3.0, "chars/tok")) return -1;
        if (meas(db, r, "peak_rss_bytes", 200.0 * 1048576, "B")) return -1;
        if (meas(db, r, "session_bytes", 8.0 * 1048576, "B")) return -1;
        if (run == 1 && meas(db, r, "energy_j_per_tok", 0.25 + 0.01 * r, "J/tok")) return -1;
        /* the slowest core's clock after each repetition: steady in run 1 (2.50, 2.45, 2.40),
         * in run 2 the last one slowed to 1.60 of 2.50 GHz (64 %, under 85 %) */
        if (meas(db, r, "cpu_ghz_after", run == 1 ? 2.5 - 0.05 * r : r < 2 ? 2.5 - 0.1 * r : 1.6, "GHz")) return -1;
        /* and its vector throughput, steady in both (9.00, 8.95, 8.90 ops/ns) */
        if (meas(db, r, "vec_gops_after", 9.0 - 0.05 * r, "op/ns")) return -1;
    }
    return 0;
}

/* Run 1's sustained test, as the runner records it: 12 windows of 250
 * tokens and 5 s each in the windows table, windows 6..8 slowed, window 3
 * holding a context re-fill; sensors every second with the CPU clock
 * dipping to 2200 MHz from 30 s to 45 s. */
static int sustained_sensors(sqlite3 *db) {
    if (test_row(db, 1, "sustained", "sustained", "sustained3000",
                 "{\"kind\":\"sustained\",\"tokens\":3000,\"window\":250,\"on_full\":\"slide\"}", "throttled"))
        return -1;
    for (int w = 0; w < 12; w++)
        if (exec(db, "INSERT INTO windows(test_id, repetition, idx, n_tokens, t0_ns, t1_ns, tok_per_s, ctx_pos,"
                     " refill_ns, refills) VALUES(%lld, 0, %d, 250, %lld, %lld, %g, %d, %lld, %d)",
                 (long long)last_test, w, (long long)w * 5000000000LL, (long long)(w + 1) * 5000000000LL,
                 w >= 6 && w <= 8 ? 42.0 : 60.0 - 0.1 * w, 250 * (w + 1), w == 3 ? 800000000LL : 0LL, w == 3))
            return -1;
    /* its repetition's metrics, as the runner derives them from the windows */
    if (meas(db, 0, "decode_tok_per_s", 3000.0 / 59.2, "tok/s")) return -1;
    if (meas(db, 0, "window_tok_per_s", 59.45, "tok/s")) return -1;
    if (meas(db, 0, "stability_pct", 70.0, "%")) return -1;
    if (meas(db, 0, "context_full_events", 1, "count")) return -1;
    if (meas(db, 0, "refill_ms", 800.0, "ms")) return -1;
    int64_t start = 900000000000LL;   /* the run had been going for 900 s */
    for (int s = 0; s <= 60; s++) {
        int64_t t = start + (int64_t)s * 1000000000;
        double temp = 45.0 + 0.5 * s, freq = s >= 30 && s < 45 ? 2200 : 3000;
        if (exec(db, "INSERT INTO sensor_samples(run_id, test_id, t_ns, sensor, value, unit) VALUES(1, %lld, %lld, 'thermal_zone0', %g, 'C'),"
                     "(1, %lld, %lld, 'thermal_zone1', %g, 'C'),(1, %lld, %lld, 'cpu0_freq', %g, 'MHz'),"
                     "(1, %lld, %lld, 'cpu1_freq', %g, 'MHz')",
                 (long long)last_test, (long long)t, temp, (long long)last_test, (long long)t, temp - 3,
                 (long long)last_test, (long long)t, freq, (long long)last_test, (long long)t, freq + 100))
            return -1;
    }
    return 0;
}

/* Run 2's sustained test: token events only (400 tokens at 25 ms). */
static int sustained_events(sqlite3 *db) {
    if (test_row(db, 2, "sustained", "sustained", "sustained400", "{\"tokens\":400,\"window\":40}", "nominal"))
        return -1;
    for (int k = 0; k < 400; k++)
        if (exec(db, "INSERT INTO token_events(test_id, repetition, idx, phase, t_ns, token_id, text) VALUES(%lld, 0, %d, 'decode', %lld, 7, NULL)",
                 (long long)last_test, k, (long long)(k * 25000000LL + (k > 200 ? (k - 200) * 5000000LL : 0))))
            return -1;
    if (meas(db, 0, "decode_tok_per_s", 400 / 15.0, "tok/s")) return -1;
    return meas(db, 0, "stability_pct", 95.5, "%");
}

/* ===================================================================== */
/* The database                                                            */
/* ===================================================================== */

static int build(sqlite3 *db, const char *schema) {
    if (exec(db, "%s", schema)) return -1;
    if (exec(db, "BEGIN")) return -1;
    if (exec(db, "INSERT INTO hosts(id, fingerprint, hostname, cpu_vendor, cpu_brand, cpu_family, cpu_model,"
                 " cpu_stepping, cores, threads, l1d_kb, l2_kb, l3_kb, isa_flags, mem_bytes, os, kernel, first_seen_utc)"
                 " VALUES(1, 'hostfp', 'bench-host', 'GenuineIntel', 'Fixture CPU @ 3.00GHz',"
                 " 6, 85, 7, 4, 8, 48, 1280, 12288, 'sse4_2 avx avx2 fma f16c avx512f', 17179869184,"
                 " 'Debian GNU/Linux 12 (bookworm)', 'Linux 6.1.0-18-amd64 x86_64', '2026-01-01T00:00:00Z')"))
        return -1;
    if (exec(db, "INSERT INTO builds(id, fingerprint, version, git_commit, git_dirty, compiler, cflags, build_type,"
                 " isa_best, first_seen_utc) VALUES(1, 'bfpA', '0.1.0', 'aaaaaaa1111111111111111111111111111111aa', 0,"
                 " 'gcc 12.2.0', '-O3 -march=native', 'release', 'avx512', '2026-01-01T00:00:00Z'),"
                 "(2, 'bfpB', '0.1.0', 'bbbbbbb2222222222222222222222222222222bb', 1,"
                 " 'gcc 12.2.0', '-O3 -march=native', 'release', 'avx512', '2026-01-02T00:00:00Z')"))
        return -1;
    static const char *const types[] = {"tq2_0", "q4_0", "f16"};
    static const double mib[] = {100, 150, 500};
    for (int m = 0; m < 3; m++)
        if (exec(db, "INSERT INTO models(id, content_hash, path, name, arch, main_type, weight_types, file_bytes,"
                     " n_params, n_params_active, n_layer, n_embd, n_vocab, n_expert, n_expert_used, synth_preset,"
                     " synth_seed, first_seen_utc) VALUES(%d, 'hash%d', '/models/tiny-%s.gguf', 'tiny', 'llama', %Q,"
                     " '%s:154,f32:49', %lld, 260000000, 260000000, 22, 2048, 32000, 0, 0, 'llama-tiny', 42,"
                     " '2026-01-01T00:00:00Z')", m + 1, m + 1, types[m], types[m], types[m],
                 (long long)(mib[m] * 1048576)))
            return -1;
    if (exec(db, "INSERT INTO scenarios(id, hash, name, source_path, normalized) VALUES(1, 'cafef00d0123456789abcdef', 'quick', 'scenarios/quick.ini',"
                 " '[run]\nthreads = 4\n')"))
        return -1;
    static const int model_of[] = {0, 1, 2, 3, 1};
    static const int build_of[] = {0, 1, 1, 1, 2};
    static const char *const bw[] = {"", "20.0, 19.0", "20.5, 20.0", "NULL, NULL", "20.0, NULL"};
    for (int r = 1; r <= 4; r++)
        if (exec(db, "INSERT INTO runs(id, uuid, started_utc, ended_utc, status, pid, host_id, build_id, model_id, scenario_id, threads, isa,"
                     " kv_type, bandwidth_gbps_before, bandwidth_gbps_after, error)"
                     " VALUES(%d, 'uuid-%d', '2026-01-0%dT10:00:00Z', '2026-01-0%dT10:05:00Z',"
                     " 'complete', 100, 1, %d, %d, 1, 4, 'avx512', 'f16', %s, NULL)",
                 r, r, r, r, build_of[r], model_of[r], bw[r]))
            return -1;
    if (exec(db, "INSERT INTO runs(id, uuid, started_utc, ended_utc, status, pid, host_id, build_id, model_id, scenario_id, threads, isa,"
                     " kv_type, bandwidth_gbps_before, bandwidth_gbps_after, error)"
                 " VALUES(5, 'uuid-5', '2026-01-09T10:00:00Z', NULL, 'failed', 100, 1, 1, NULL, 1,"
                 " 4, 'avx512', 'f16', NULL, NULL, 'model file missing')"))
        return -1;
    if (exec(db, "INSERT INTO run_tags(run_id, key, value) VALUES(1, 'format', 'tq2_0'), (1, 'suite', 'fixture'), (2, 'format', 'q4_0'),"
                 " (3, 'format', 'f16'), (4, 'format', 'tq2_0'), (4, 'commit', 'B')"))
        return -1;
    if (exec(db, "INSERT INTO sensor_absent(run_id, sensor, reason) VALUES(2, 'rapl', 'no readable RAPL counter'),"
                 " (2, 'cpufreq', 'no scaling_cur_freq')"))
        return -1;
    for (int r = 1; r <= 4; r++)
        if (prefill_decode(db, r, r == 3)) return -1;
    if (generate(db, 1, 10.0) || generate(db, 2, 14.0)) return -1;
    if (sustained_sensors(db) || sustained_events(db)) return -1;
    return exec(db, "COMMIT");
}

int fx_build(const char *path) {
    const char *root = getenv("TB_SOURCE_ROOT");
    char sp[4096];
    snprintf(sp, sizeof sp, "%s/results/schema.sql", root ? root : ".");
    char *schema = fx_slurp(sp, NULL);
    if (!schema) { fprintf(stderr, "fixture: cannot read %s\n", sp); return -1; }
    /* the current schema: version 1, then every migration in order */
    for (int v = 2;; v++) {
        char pat[64];
        snprintf(pat, sizeof pat, "%03d_", v);
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/results/migrations", root ? root : ".");
        DIR *d = opendir(dir);
        char *step = NULL;
        for (struct dirent *e; d && (e = readdir(d));)
            if (!strncmp(e->d_name, pat, 4)) {
                char mp[8192];
                snprintf(mp, sizeof mp, "%s/%s", dir, e->d_name);
                step = fx_slurp(mp, NULL);
            }
        if (d) closedir(d);
        if (!step) break;
        size_t a = strlen(schema), b = strlen(step);
        char *both = realloc(schema, a + b + 2);
        if (!both) { free(step); free(schema); return -1; }
        schema = both;
        schema[a] = '\n';
        memcpy(schema + a + 1, step, b + 1);
        free(step);
        char ver[48];   /* the store sets the version after each step: so does the fixture */
        int nv = snprintf(ver, sizeof ver, "\nPRAGMA user_version = %d;\n", v);
        char *with = realloc(schema, strlen(schema) + (size_t)nv + 1);
        if (!with) { free(schema); return -1; }
        schema = with;
        strcat(schema, ver);
    }
    sqlite3 *db;
    int rc = -1;
    if (sqlite3_open(path, &db) == SQLITE_OK) rc = build(db, schema);
    else fprintf(stderr, "fixture: cannot create %s\n", path);
    sqlite3_close(db);
    free(schema);
    return rc;
}

/* ===================================================================== */
/* Files                                                                   */
/* ===================================================================== */

int fx_tempdir(char *buf, size_t n) {
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, n, "%s/tb-report-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(buf) ? 0 : -1;
}

void fx_rmtree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) fx_rmtree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

char *fx_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 65536, n = 0;
    char *p = malloc(cap + 1);
    size_t k;
    while (p && (k = fread(p + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            char *q = realloc(p, 2 * cap + 1);
            if (!q) { free(p); p = NULL; break; }
            p = q;
            cap *= 2;
        }
    }
    fclose(f);
    if (p) p[n] = 0;
    if (len) *len = n;
    return p;
}
