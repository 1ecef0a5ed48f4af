/*
 * test_e2e_bench.c — the output contract of `ternbench bench`, the quick
 * llama-bench equivalent that scripts and CI read: one JSON object per test
 * with the fields the issue names, and numbers that agree with each other
 * (achieved GB/s = tok/s x bytes/token; the roofline median lies within its
 * per-rep range; every rep was bracketed by probes, so the bandwidth behind
 * the median is positive). Also `bench -m A -m B` (interleaved files and
 * their paired comparison), `bandwidth -r R --json` (best probe and its
 * spread), `kernels --shape --json` and `kernels --ceiling --json`. Values are not timed against anything: only their consistency
 * is checked.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "e2e.h"

#include <math.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The number after "key": in the JSON object starting at obj (one line);
 * fails the test when absent. */
static double num(const char *obj, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *eol = strchr(obj, '\n'), *p = strstr(obj, pat);
    if (!p || (eol && p > eol)) fail_msg("bench --json: no \"%s\" in %.200s", key, obj);
    char *end;
    double v = strtod(p + strlen(pat), &end);
    if (end == p + strlen(pat)) fail_msg("bench --json: \"%s\" is not a number in %.200s", key, obj);
    return v;
}

/* Whether the JSON object at obj (one line) contains needle. */
static int in_line(const char *obj, const char *needle) {
    const char *eol = strchr(obj, '\n'), *p = strstr(obj, needle);
    return p && (!eol || p < eol);
}

/* The string after "key": in the JSON object at obj (one line), unescaped
 * for plain paths; fails the test when absent. */
static void str(const char *obj, const char *key, char *out, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *eol = strchr(obj, '\n'), *p = strstr(obj, pat), *e;
    if (!p || (eol && p > eol)) fail_msg("bench --json: no \"%s\" string in %.200s", key, obj);
    p += strlen(pat);
    if (!(e = strchr(p, '"')) || (size_t)(e - p) >= cap) fail_msg("bench --json: bad \"%s\" in %.200s", key, obj);
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
}

static void check_cpu(const char *obj, int reps, const double *pct_of);

/* obj's `key` is the median of v (n values, sorted here), or null when n
 * is 0. */
static void check_median(const char *obj, const char *key, double *v, int n) {
    char null_field[64];
    snprintf(null_field, sizeof null_field, "\"%s\": null", key);
    if (!n) {
        if (!strstr(obj, null_field)) fail_msg("bench --json: %s is not null over no reps", key);
        return;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    const double want = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    assert_true(fabs(num(obj, key) - want) <= 0.01 + 1e-3 * want);
}

/* The per-rep samples: `reps` tok/s and probe pairs; each rep's roofline %
 * (tok/s x bytes against the higher probe) must give the test's median,
 * and the settled reps (probes within 15 %) their own median. */
static void check_reps(const char *obj, int reps, double bpt) {
    const char *eol = strchr(obj, '\n'), *t = strstr(obj, "\"rep_tokens_per_s\": ["),
               *b = strstr(obj, "\"rep_probe_gbps\": [");
    if (!t || !b || (eol && (t > eol || b > eol))) fail_msg("bench --json: no per-rep samples in %.300s", obj);
    t = strchr(t, '[') + 1;
    b = strchr(b, '[') + 1;
    double all[16], ok[16];
    int m = 0;
    assert_true(reps <= 16);
    for (int i = 0; i < reps; i++) {
        char *end;
        const double tps = strtod(t, &end);
        assert_true(end > t && tps > 0);
        t = end + (*end == ',' ? 1 : 0);
        double p[2];
        if (sscanf(b, " [%lf, %lf]", &p[0], &p[1]) != 2) fail_msg("bench --json: bad probe pair %d at %.60s", i, b);
        assert_true(p[0] > 0 && p[1] > 0);
        b = strchr(b, ']') + 1;
        if (*b == ',') b++;
        const double hi = p[0] > p[1] ? p[0] : p[1];
        all[i] = 100.0 * tps * bpt / 1e9 / hi;
        if (fabs(p[0] - p[1]) <= 0.15 * hi) ok[m++] = all[i];
    }
    assert_true(*t == ']' && *b == ']');    /* exactly `reps` of each */
    check_cpu(obj, reps, all);
    check_median(obj, "roofline_pct", all, reps);
    assert_int_equal((int)num(obj, "settled_reps"), m);
    check_median(obj, "roofline_pct_settled", ok, m);
}

/* The `reps` pairs of one per-rep CPU probe `key` of a test (the slowest
 * thread's figure before and after each rep, each in (vmin, vmax)): x[i]
 * the higher of rep i's pair when `higher`, else the lower; returns the
 * test's best probe. */
static double probe_pairs(const char *obj, const char *key, int reps, double vmin, double vmax, bool higher,
                          double *x) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *eol = strchr(obj, '\n'), *c = strstr(obj, pat);
    if (!c || (eol && c > eol)) fail_msg("bench --json: no per-rep %s in %.300s", key, obj);
    c = strchr(c, '[') + 1;
    double best = 0;
    assert_true(reps <= 16);
    for (int i = 0; i < reps; i++) {
        double g[2];
        if (sscanf(c, " [%lf, %lf]", &g[0], &g[1]) != 2) fail_msg("bench --json: bad %s pair %d at %.60s", key, i, c);
        for (int k = 0; k < 2; k++) {
            if (!(g[k] > vmin && g[k] < vmax)) fail_msg("bench --json: %s probe %g", key, g[k]);
            best = fmax(best, g[k]);
        }
        x[i] = higher ? fmax(g[0], g[1]) : fmin(g[0], g[1]);
        c = strchr(c, ']') + 1;
        if (*c == ',') c++;
    }
    assert_true(*c == ']');                 /* exactly `reps` pairs */
    return best;
}

/* The per-rep CPU probes: `reps` pairs of the slowest thread's clock (a
 * plausible GHz) and of its vector throughput (ops per ns); the full-speed
 * reps are those whose both clock probes reach 85 % of the test's best,
 * the vector-shared ones those whose both vector probes fall under 85 % of
 * theirs (reps within the printed rounding of a line may count either
 * way), and when no clock is that close the full-speed reps' roofline
 * percentages (pct_of: each rep's, in rep order) give their own median. */
static void check_cpu(const char *obj, int reps, const double *pct_of) {
    double clo[16], vhi[16];
    const double cbest = probe_pairs(obj, "rep_cpu_ghz", reps, 0.01, 20.0, false, clo);
    const double vbest = probe_pairs(obj, "rep_vec_gops", reps, 0.001, 1000.0, true, vhi);
    double ok[16];
    int in = 0, near = 0, sh = 0, shnear = 0;
    for (int i = 0; i < reps; i++) {
        const double dc = clo[i] - 0.85 * cbest, dv = vhi[i] - 0.85 * vbest;
        if (fabs(dc) <= 0.002) near++;
        else if (dc > 0) ok[in++] = pct_of[i];
        if (fabs(dv) <= 0.002) shnear++;
        else if (dv < 0) sh++;
    }
    const int got = (int)num(obj, "cpu_full_reps");
    if (got < in || got > in + near) fail_msg("bench --json: %d full-speed reps, want %d (+%d near)", got, in, near);
    if (!near) check_median(obj, "roofline_pct_cpu_full", ok, in);
    /* the steal of each rep: a share of CPU time, or null where /proc/stat could not be read */
    const char *eol = strchr(obj, '\n'), *s = strstr(obj, "\"rep_steal_pct\": [");
    if (!s || (eol && s > eol)) fail_msg("bench --json: no rep_steal_pct in %.300s", obj);
    s = strchr(s, '[') + 1;
    for (int i = 0; i < reps; i++) {
        double x;
        while (*s == ' ') s++;
        if (!strncmp(s, "null", 4)) s += 4;
        else if (sscanf(s, "%lf", &x) == 1 && x >= 0 && x <= 100) s += strspn(s, "0123456789.");
        else fail_msg("bench --json: bad steal %d at %.40s", i, s);
        if (*s == ',') s++;
    }
    assert_true(*s == ']');                 /* exactly `reps` */
    const int vs = (int)num(obj, "vec_shared_reps");
    if (vs < sh || vs > sh + shnear) fail_msg("bench --json: %d vector-shared reps, want %d (+%d near)", vs, sh, shnear);
}

static void check_test(const char *obj, const char *name, int reps) {
    char want[48];
    snprintf(want, sizeof want, "{\"test\": \"%s\",", name);
    if (strncmp(obj, want, strlen(want))) fail_msg("bench --json: expected %s, got %.80s", want, obj);
    const double tps = num(obj, "tokens_per_s"), bpt = num(obj, "bytes_per_token");
    const double gbps = num(obj, "achieved_gbps"), pct = num(obj, "roofline_pct");
    const double lo = num(obj, "roofline_pct_min"), hi = num(obj, "roofline_pct_max");
    assert_true(tps > 0 && bpt > 0 && num(obj, "stddev") >= 0);
    assert_true(fabs(gbps - tps * bpt / 1e9) <= 1e-3 * gbps + 1e-3);
    assert_true(num(obj, "bandwidth_gbps") > 0);
    assert_true(num(obj, "bandwidth_before_gbps") > 0 && num(obj, "bandwidth_after_gbps") > 0);
    assert_true(lo > 0 && lo <= pct + 1e-2 && pct <= hi + 1e-2);
    assert_int_equal((int)num(obj, "reps"), reps);
    check_reps(obj, reps, bpt);
    /* decode tests carry the token latency distribution, prefill none */
    const char *eol = strchr(obj, '\n'), *itl = strstr(obj, "\"itl_p50_ms\"");
    const int has_itl = itl && (!eol || itl < eol);
    if (name[0] == 'p') {
        if (has_itl) fail_msg("bench --json: a prefill test with token latencies: %.300s", obj);
        return;
    }
    const double p50 = num(obj, "itl_p50_ms"), p90 = num(obj, "itl_p90_ms");
    const double p99 = num(obj, "itl_p99_ms"), mx = num(obj, "itl_max_ms"), st = num(obj, "stall_pct");
    assert_true(p50 > 0 && p50 <= p90 && p90 <= p99 && p99 <= mx);
    assert_true(st >= 0 && st < 100);
    /* p50_roofline_pct: a token at the median latency against the median roofline */
    const double w50 = 100.0 * (1e3 / p50) * bpt / 1e9 / num(obj, "bandwidth_gbps");
    assert_true(fabs(num(obj, "p50_roofline_pct") - w50) <= 1e-3 * w50 + 0.01);
}

static void test_bench_json(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "model", "synth", "--preset", "llama-tiny", "--type", "tq2_0", "--out", "m.gguf",
            "--quiet");
    if (r.status != 0) fail_msg("model synth: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "m.gguf", "-p", "8", "-n", "4", "-r", "3", "-t", "1", "--json");
    e2e_assert_clean(&r, "bench --json");
    if (r.status != 0) fail_msg("bench --json: exit %d: %s", r.status, r.err);
    const char *pp = r.out, *tg = strchr(r.out, '\n');
    if (!tg) fail_msg("bench --json: one line only: %s", r.out);
    tg++;
    check_test(pp, "pp8", 3);
    check_test(tg, "tg4@d0", 3);
    if (strchr(tg, '\n')[1] != '\0') fail_msg("bench --json: more than two objects: %s", r.out);
    e2e_res_free(&r);

    /* one measurement path: bench records its runs, and the figures it prints are the
     * ones derived from the recorded repetitions (median over the repetition rows) */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "m.gguf", "-p", "8", "-n", "4", "-r", "3", "-t", "1", "--json",
            "--db", "bench.db", "--tag", "case=e2e");
    if (r.status != 0) fail_msg("bench --db: exit %d: %s", r.status, r.err);
    {
        char dbp[1024];
        snprintf(dbp, sizeof dbp, "%s/bench.db", e2e_dir);
        sqlite3 *d;
        assert_int_equal(sqlite3_open(dbp, &d), SQLITE_OK);
        const char *line = r.out;
        for (int t = 0; t < 2; t++, line = strchr(line, '\n') + 1) {
            const int run = (int)num(line, "run_id");
            sqlite3_stmt *st;
            char sql[512];
            snprintf(sql, sizeof sql, "SELECT m.value FROM measurements m JOIN tests t ON t.id = m.test_id"
                     " WHERE t.run_id = %d AND t.kind = '%s' AND m.metric = '%s' ORDER BY m.value", run,
                     t ? "decode" : "prefill", t ? "decode_tok_per_s" : "prefill_tok_per_s");
            assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &st, NULL), SQLITE_OK);
            double v[8];
            int n = 0;
            while (sqlite3_step(st) == SQLITE_ROW && n < 8) v[n++] = sqlite3_column_double(st, 0);
            sqlite3_finalize(st);
            assert_int_equal(n, 3);
            const double tps = num(line, "tokens_per_s");
            if (fabs(tps - v[1]) > 5e-4 + 1e-9 * tps) fail_msg("bench printed %.3f, the database's median is %.3f", tps, v[1]);
            snprintf(sql, sizeof sql, "SELECT count(*) FROM run_tags WHERE run_id = %d AND key = 'case'"
                     " AND value = 'e2e'", run);
            assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &st, NULL), SQLITE_OK);
            assert_int_equal(sqlite3_step(st), SQLITE_ROW);
            assert_int_equal(sqlite3_column_int(st, 0), 1);
            sqlite3_finalize(st);
        }
        sqlite3_close(d);
    }
    e2e_res_free(&r);
    /* --no-db writes no database */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "m.gguf", "-p", "0", "-n", "2", "-r", "1", "-t", "1", "--no-db", "-q");
    if (r.status != 0) fail_msg("bench --no-db: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);

    /* --profile: one more object splitting a decode run of exactly -n
     * tokens at depth --ctx (the cache fill is not profiled) into phases */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "m.gguf", "--ctx", "8", "-p", "0", "-n", "4", "-r", "1", "-t", "1",
            "--json", "--profile");
    e2e_assert_clean(&r, "bench --profile");
    if (r.status != 0) fail_msg("bench --profile: exit %d: %s", r.status, r.err);
    const char *pr = strchr(r.out, '\n');
    static const char want_pr[] = "{\"profile\": \"tg4\",";
    if (!pr || strncmp(pr + 1, want_pr, sizeof want_pr - 1)) fail_msg("bench --profile: %s", r.out);
    pr++;
    assert_true(num(pr, "total_ms_per_token") > 0);
    for (const char *ph = "qkv\0attention\0attn_out\0ffn_up\0ffn_down\0output\0"; *ph; ph += strlen(ph) + 1) {
        char want[48];
        snprintf(want, sizeof want, "{\"phase\": \"%s\", \"ms_per_token\": ", ph);
        const char *at = strstr(pr, want);
        if (!at || !(strtod(at + strlen(want), NULL) > 0)) fail_msg("bench --profile: no time for %s: %s", ph, pr);
        /* its pool passes: as many per token as qkv's (one per layer), the
         * head one; their mean time times their count is the phase's time,
         * and the wake and tail of a pass lie within it */
        const double np = num(at, "passes_per_token"), us = num(at, "us_per_pass");
        const double ms = strtod(at + strlen(want), NULL);
        const double want_np = strcmp(ph, "output") ? num(strstr(pr, "{\"phase\": \"qkv\""), "passes_per_token") : 1.0;
        if (np != want_np || np < 1 || fabs(np * us / 1e3 - ms) > 1e-3 * ms + 1e-3)
            fail_msg("bench --profile: %s: %g passes a token of %g us for %g ms: %s", ph, np, us, ms, pr);
        if (num(at, "wake_us") < 0 || num(at, "wake_us") > us || num(at, "tail_us") < 0 || num(at, "tail_us") > us ||
            num(at, "prologue_us") < 0 || !(num(at, "stream_gbps") >= 0))
            fail_msg("bench --profile: pass split of %s: %s", ph, pr);
    }
    e2e_res_free(&r);

    /* the table form states the bracketing and prints the per-rep range */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "m.gguf", "-p", "0", "-n", "4", "-r", "2", "-t", "1");
    e2e_assert_clean(&r, "bench");
    if (r.status != 0) fail_msg("bench: exit %d: %s", r.status, r.err);
    if (!strstr(r.out, "just before and just after") || !strstr(r.out, "range") || !strstr(r.out, "tg4@d0 ") ||
        !strstr(r.out, "# tg4@d0: token latency p50 ") || !strstr(r.out, "over 8 tokens"))
        fail_msg("bench: unexpected table: %s", r.out);
    if (strstr(r.out, "pp")) fail_msg("bench -p 0 still ran a prefill test: %s", r.out);
    e2e_res_free(&r);
}

/* -m A -m B: every test of both files, A first, then one comparison per
 * test of B against A whose median lies within its per-rep range and
 * whose counts fit the reps; a bad second file fails before any test. */
static void test_bench_compare(void **state) {
    (void)state;
    e2e_res_t r;
    const char *types[2] = {"tq2_0", "q4_0"}, *files[2] = {"a.gguf", "b.gguf"};
    for (int i = 0; i < 2; i++) {
        E2E_RUN(&r, E2E_NO_LIMIT, "model", "synth", "--preset", "llama-tiny", "--type", types[i], "--out",
                files[i], "--quiet");
        if (r.status != 0) fail_msg("model synth: exit %d: %s", r.status, r.err);
        e2e_res_free(&r);
    }
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "a.gguf", "-m", "b.gguf", "-p", "8", "-n", "4", "-r", "3", "-t", "1",
            "--json");
    e2e_assert_clean(&r, "bench -m -m --json");
    if (r.status != 0) fail_msg("bench -m -m: exit %d: %s", r.status, r.err);
    const char *line = r.out;
    static const char *const tests[2] = {"pp8", "tg4@d0"};
    char got[256];
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 2; i++) {
            check_test(line, tests[t], 3);
            str(line, "model", got, sizeof got);
            assert_string_equal(got, files[i]);
            str(line, "type", got, sizeof got);
            assert_string_equal(got, types[i]);
            line = strchr(line, '\n') + 1;
        }
    for (int t = 0; t < 2; t++) {
        char want[48];
        snprintf(want, sizeof want, "{\"compare\": \"%s\",", tests[t]);
        if (strncmp(line, want, strlen(want))) fail_msg("bench -m -m: expected %s, got %.120s", want, line);
        str(line, "model", got, sizeof got);
        assert_string_equal(got, "b.gguf");
        str(line, "baseline", got, sizeof got);
        assert_string_equal(got, "a.gguf");
        const double med = num(line, "ratio_median"), lo = num(line, "ratio_min"), hi = num(line, "ratio_max");
        const double faster = num(line, "faster_reps"), p = num(line, "sign_p");
        assert_true(lo > 0 && lo <= med + 1e-4 && med <= hi + 1e-4);
        assert_true(faster >= 0 && faster <= 3 && (int)num(line, "reps") == 3);
        /* 3 reps: p = 1 for 1 or 2 faster, 0.25 for 0 or 3 */
        assert_true(fabs(p - (faster == 0 || faster == 3 ? 0.25 : 1.0)) < 1e-3);
        str(line, "interleave", got, sizeof got);
        assert_string_equal(got, "rep");
        if (in_line(line, "token_pairs")) fail_msg("bench -m -m: token pairs without --interleave token: %s", line);
        line = strchr(line, '\n') + 1;
    }
    if (*line) fail_msg("bench -m -m: unexpected extra output: %s", line);
    e2e_res_free(&r);

    /* --interleave token: decode takes turns token by token, and every
     * token pair is compared (prefill still rep by rep) */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "a.gguf", "-m", "b.gguf", "-p", "8", "-n", "5", "-r", "3", "-t", "1",
            "--interleave", "token", "--json");
    e2e_assert_clean(&r, "bench --interleave token --json");
    if (r.status != 0) fail_msg("bench --interleave token: exit %d: %s", r.status, r.err);
    line = r.out;
    const char *probes[4];   /* each object's rep_probe_gbps */
    for (int t = 0; t < 4; t++) {   /* pp8 a, pp8 b, tg5 a, tg5 b */
        check_test(line, t < 2 ? "pp8" : "tg5@d0", 3);
        str(line, "interleave", got, sizeof got);
        assert_string_equal(got, t < 2 ? "rep" : "token");
        probes[t] = strstr(line, "\"rep_probe_gbps\": [");
        assert_non_null(probes[t]);
        line = strchr(line, '\n') + 1;
    }
    {   /* turns token by token share one probe pair per rep; rep by rep each file has its own */
        const size_t n2 = (size_t)(strstr(probes[2], "]]") - probes[2]), n3 = (size_t)(strstr(probes[3], "]]") - probes[3]);
        if (n2 != n3 || memcmp(probes[2], probes[3], n2)) fail_msg("bench --interleave token: tg5 probes differ");
        const size_t n0 = (size_t)(strstr(probes[0], "]]") - probes[0]);
        if (!memcmp(probes[0], probes[1], n0)) fail_msg("bench --interleave token: pp8 files share probes");
    }
    str(line, "interleave", got, sizeof got);
    assert_string_equal(got, "rep");   /* a prefill is one eval: no tokens to pair */
    if (in_line(line, "token_pairs")) fail_msg("bench --interleave token: pp8 has token pairs: %s", line);
    line = strchr(line, '\n') + 1;
    static const char tg5[] = "{\"compare\": \"tg5@d0\",";
    if (strncmp(line, tg5, strlen(tg5))) fail_msg("bench --interleave token: got %.120s", line);
    str(line, "interleave", got, sizeof got);
    assert_string_equal(got, "token");
    {
        const double pairs = num(line, "token_pairs"), med = num(line, "token_ratio_median");
        const double q25 = num(line, "token_ratio_q25"), q75 = num(line, "token_ratio_q75");
        const double tf = num(line, "token_faster"), tp = num(line, "token_sign_p");
        assert_true(pairs == 15);   /* 3 reps x 5 tokens */
        assert_true(q25 > 0 && q25 <= med + 1e-4 && med <= q75 + 1e-4);
        assert_true(tf >= 0 && tf <= pairs && tp > 0 && tp <= 1.0 + 1e-9);
        /* the median pair is b faster exactly when more than half are */
        if (med > 1.0001) assert_true(tf >= 8);
        if (med < 0.9999) assert_true(tf <= 7);
        /* each rep's median: 3 of them, and the median over all pairs lies between them */
        const char *a = strstr(line, "\"rep_token_ratio\": [");
        assert_true(a && in_line(line, "\"rep_token_ratio\": ["));
        double rm[4];
        int nr = 0;
        for (char *e; nr < 4; a = e) {
            rm[nr] = strtod(a + (nr ? 1 : strlen("\"rep_token_ratio\": [")), &e);
            if (e == a + (nr ? 1 : strlen("\"rep_token_ratio\": ["))) break;
            assert_true(rm[nr] > 0);
            nr++;
            if (*e != ',') break;
        }
        assert_int_equal(nr, 3);
        qsort(rm, 3, sizeof *rm, cmp_double);
        assert_true(rm[0] <= med + 1e-3 && med <= rm[2] + 1e-3);
    }
    line = strchr(line, '\n') + 1;
    if (*line) fail_msg("bench --interleave token: unexpected extra output: %s", line);
    e2e_res_free(&r);

    /* the table says so and gives the token pairs' line */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "a.gguf", "-m", "b.gguf", "-p", "0", "-n", "3", "-r", "2", "-t", "1",
            "--interleave", "token");
    e2e_assert_clean(&r, "bench --interleave token");
    if (r.status != 0) fail_msg("bench --interleave token: exit %d: %s", r.status, r.err);
    if (!strstr(r.out, "token by token (each token's order") || !strstr(r.out, "# tg3@d0: token by token ") ||
        !strstr(r.out, "median of 6 paired tokens"))
        fail_msg("bench --interleave token: unexpected table: %s", r.out);
    e2e_res_free(&r);

    /* its usage errors: an unknown mode, and a single file */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "a.gguf", "-m", "b.gguf", "-n", "1", "--interleave", "sideways");
    assert_int_equal(r.status, 2);
    if (!strstr(r.err, "--interleave takes rep or token, not 'sideways'")) fail_msg("--interleave sideways: %s", r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "a.gguf", "-n", "1", "--interleave", "token");
    assert_int_equal(r.status, 2);
    if (!strstr(r.err, "two or more -m")) fail_msg("--interleave token, one file: %s", r.err);
    e2e_res_free(&r);

    /* the table names each file and states the comparison */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "a.gguf", "-m", "b.gguf", "-p", "0", "-n", "4", "-r", "2", "-t", "1");
    e2e_assert_clean(&r, "bench -m -m");
    if (r.status != 0) fail_msg("bench -m -m: exit %d: %s", r.status, r.err);
    if (!strstr(r.out, "take turns") || !strstr(r.out, "# tg4@d0: b.gguf / a.gguf = "))
        fail_msg("bench -m -m: unexpected table: %s", r.out);
    e2e_res_free(&r);

    /* a bad second file: an error naming it, nothing measured */
    e2e_write("bad.gguf", "GGUF", 4);
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "a.gguf", "-m", "bad.gguf", "-p", "0", "-n", "4", "-r", "2");
    e2e_assert_clean(&r, "bench -m bad");
    assert_int_equal(r.status, 1);
    if (!strstr(r.err, "bad.gguf") || r.out[0]) fail_msg("bench -m bad: out %s err %s", r.out, r.err);
    e2e_res_free(&r);

    /* more files than it compares: a usage error */
    E2E_RUN(&r, E2E_NO_LIMIT, "bench", "-m", "a.gguf", "-m", "a.gguf", "-m", "a.gguf", "-m", "a.gguf", "-m",
            "a.gguf", "-n", "1");
    assert_int_equal(r.status, 2);
    if (!strstr(r.err, "at most 4")) fail_msg("bench -m x5: %s", r.err);
    e2e_res_free(&r);
}

/* bandwidth -r R --json: one object per thread count, in order, whose
 * roofline is its best probe and whose spread is ordered; -r 0 is a usage
 * error naming the option. */
static void test_bandwidth_json(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "bandwidth", "-t", "2", "-r", "3", "--json");
    e2e_assert_clean(&r, "bandwidth --json");
    if (r.status != 0) fail_msg("bandwidth: exit %d: %s", r.status, r.err);
    const char *line = r.out;
    for (int t = 1; t <= 2; t++) {
        if (!line || !*line) fail_msg("bandwidth --json: %d objects expected: %s", 2, r.out);
        assert_int_equal((int)num(line, "threads"), t);
        assert_int_equal((int)num(line, "samples"), 3);
        const double lo = num(line, "min_gbps"), med = num(line, "median_gbps"), hi = num(line, "max_gbps");
        assert_true(lo > 0 && lo <= med && med <= hi && hi == num(line, "gbps"));
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (line && *line) fail_msg("bandwidth --json: extra output: %s", line);
    e2e_res_free(&r);

    E2E_RUN(&r, E2E_NO_LIMIT, "bandwidth", "-r", "0");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "bandwidth -r 0", "-r", "1..1000", NULL);
    e2e_res_free(&r);
}

/* kernels --shape --json: one matvec and one gemm object for the shape,
 * best no slower than median, throughput = work / best time, the time the
 * activations' quantization took (outside the pass) given apart; bad
 * shapes are usage errors. */
static void test_kernels_json(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "kernels", "--format", "q8_0", "--isa", "generic", "--shape", "16x256", "-t", "1",
            "--json");
    e2e_assert_clean(&r, "kernels --json");
    if (r.status != 0) fail_msg("kernels: exit %d: %s", r.status, r.err);
    const char *mv = r.out, *gm = strchr(r.out, '\n');
    if (!gm) fail_msg("kernels --json: one line only: %s", r.out);
    gm++;
    char got[64];
    for (int i = 0; i < 2; i++) {
        const char *o = i ? gm : mv;
        str(o, "format", got, sizeof got);
        assert_string_equal(got, "q8_0");
        str(o, "isa", got, sizeof got);
        assert_string_equal(got, "generic");
        str(o, "kind", got, sizeof got);
        assert_string_equal(got, i ? "gemm" : "matvec");
        assert_int_equal((int)num(o, "rows"), 16);
        assert_int_equal((int)num(o, "cols"), 256);
        assert_true(num(o, "reps") >= 2 && num(o, "best_us") > 0 && num(o, "best_us") <= num(o, "median_us"));
        assert_true(num(o, "act_us") > 0);   /* quantizing the activations, timed apart from the pass */
    }
    /* 16 rows of 256 Q8_0 weights: 16 x 8 blocks of 34 bytes */
    const double mbytes = 16.0 * 8 * 34, gops = 2.0 * 16 * 256 * num(gm, "tokens");
    assert_true(fabs(num(mv, "gbps") * num(mv, "best_us") * 1e3 - mbytes) < 1e-2 * mbytes);
    assert_true(num(mv, "gbps") >= num(mv, "median_gbps"));
    assert_true(fabs(num(gm, "gops") * num(gm, "best_us") * 1e3 - gops) < 1e-2 * gops);
    if (strchr(gm, '\n')[1] != '\0') fail_msg("kernels --json: more than two objects: %s", r.out);
    assert_non_null(strstr(mv, "\"hot\": false"));
    /* roofline_pct is gbps over bandwidth_gbps, to the precision printed:
     * %.2f for the percentage, %.3f for each rate (under ASan the generic
     * tier reads ~0.3 GB/s, where gbps's rounding alone is 0.16 %) */
    const double g = num(mv, "gbps"), bw = num(mv, "bandwidth_gbps"), pct = 100.0 * g / bw;
    assert_true(fabs(num(mv, "roofline_pct") - pct) <= 0.005 + pct * (0.0005 / g + 0.0005 / bw) + 1e-9);
    e2e_res_free(&r);

    /* --hot: the same objects, marked, and no roofline (the bytes come from cache) */
    E2E_RUN(&r, E2E_NO_LIMIT, "kernels", "--format", "q8_0", "--isa", "generic", "--shape", "16x256", "-t", "1",
            "--hot", "--json");
    e2e_assert_clean(&r, "kernels --hot --json");
    if (r.status != 0) fail_msg("kernels --hot: exit %d: %s", r.status, r.err);
    assert_non_null(strstr(r.out, "\"kind\": \"matvec\""));
    assert_non_null(strstr(r.out, "\"kind\": \"gemm\""));
    assert_null(strstr(r.out, "\"hot\": false"));
    assert_null(strstr(r.out, "roofline_pct"));
    assert_true(fabs(num(r.out, "gbps") * num(r.out, "best_us") * 1e3 - mbytes) < 1e-2 * mbytes);
    e2e_res_free(&r);

    /* --hot without --shape: one matvec per row length 2048, 512, 5632, each at most 256 KiB of
     * weights in whole 16-row groups, then the gemm */
    E2E_RUN(&r, E2E_NO_LIMIT, "kernels", "--format", "q8_0", "--isa", "generic", "-t", "1", "--hot", "--json");
    e2e_assert_clean(&r, "kernels --hot --json (decode set)");
    if (r.status != 0) fail_msg("kernels --hot: exit %d: %s", r.status, r.err);
    static const int hot_cols[] = {2048, 512, 5632};
    const char *o = r.out;
    for (int i = 0; i < 3; i++, o = strchr(o, '\n') + 1) {
        str(o, "kind", got, sizeof got);
        assert_string_equal(got, "matvec");
        const double rows = num(o, "rows"), cols = num(o, "cols"), bytes = rows * cols / 32 * 34;
        assert_int_equal((int)cols, hot_cols[i]);
        assert_true((int)rows % 16 == 0 && bytes <= 256.0 * 1024 && bytes + 16 * cols / 32 * 34 > 256.0 * 1024);
    }
    str(o, "kind", got, sizeof got);
    assert_string_equal(got, "gemm");
    e2e_res_free(&r);

    static const char *const bad[][3] = {{"--format", "q8_0", "16x"}, {"--format", "q8_0", "16x100"},
                                         {"--isa", "generic", "16x256"}};
    static const char *const why[] = {"ROWSxCOLS", "multiple of 32", "needs --format"};
    for (int i = 0; i < 3; i++) {
        E2E_RUN(&r, E2E_NO_LIMIT, "kernels", bad[i][0], bad[i][1], "--shape", bad[i][2]);
        assert_int_equal(r.status, 2);
        e2e_assert_err_has(&r, "kernels --shape", why[i], NULL);
        e2e_res_free(&r);
    }
}

/* --prefetch BYTES before the command: the distance the JSON reports (also
 * after --isa); a distance the engine refuses, or no number, is a usage
 * error naming the option and the value. */
static void test_prefetch_option(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "--isa", "avx2", "--prefetch", "4096", "kernels", "--format", "q8_0", "--isa", "generic",
            "--shape", "16x256", "-t", "1", "--json");
    e2e_assert_clean(&r, "--prefetch 4096 kernels --json");
    if (r.status != 0) fail_msg("--prefetch 4096: exit %d: %s", r.status, r.err);
    assert_int_equal((int)num(r.out, "prefetch_bytes"), 4096);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "--prefetch", "0", "kernels", "--format", "q8_0", "--isa", "generic", "--shape",
            "16x256", "-t", "1", "--json");
    if (r.status != 0) fail_msg("--prefetch 0: exit %d: %s", r.status, r.err);
    assert_int_equal((int)num(r.out, "prefetch_bytes"), 0);
    e2e_res_free(&r);
    /* TB_PREFETCH_L2=0|1 sets the L2 stage, which the JSON reports */
    static const char *const l2[] = {"1", "0"};
    for (int i = 0; i < 2; i++) {
        setenv("TB_PREFETCH_L2", l2[i], 1);
        E2E_RUN(&r, E2E_NO_LIMIT, "kernels", "--format", "q8_0", "--isa", "generic", "--shape", "16x256", "-t", "1",
                "--json");
        unsetenv("TB_PREFETCH_L2");
        if (r.status != 0) fail_msg("TB_PREFETCH_L2=%s: exit %d: %s", l2[i], r.status, r.err);
        assert_non_null(strstr(r.out, i == 0 ? "\"prefetch_l2\": true" : "\"prefetch_l2\": false"));
        e2e_res_free(&r);
    }
    static const char *const bad[] = {"100", "65600", "-64", "4k", ""};
    static const char *const why[] = {"multiple of 64", "multiple of 64", "not a number", "not a number",
                                      "not a number"};
    for (int i = 0; i < 5; i++) {
        E2E_RUN(&r, E2E_NO_LIMIT, "--prefetch", bad[i], "bandwidth");
        assert_int_equal(r.status, 2);
        e2e_assert_err_has(&r, "--prefetch", "--prefetch", why[i], NULL);
        assert_int_equal((int)strlen(r.out), 0);   /* refused before the command ran */
        e2e_res_free(&r);
    }
}

/* kernels --ceiling --json: one object per thread count 1..N, each with
 * its hot copy (whole 16-row groups, at most 256 KiB), best no lower than
 * median, per thread = total / n, every thread running in every window,
 * the % against the probe at n threads;
 * the options it refuses are usage errors. */
static void test_kernels_ceiling(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "kernels", "--ceiling", "--format", "q8_0", "--isa", "generic", "-t", "2", "-r", "2",
            "--window", "5", "--json");
    e2e_assert_clean(&r, "kernels --ceiling --json");
    if (r.status != 0) fail_msg("kernels --ceiling: exit %d: %s", r.status, r.err);
    const char *o = r.out;
    char got[64];
    for (int n = 1; n <= 2; n++) {
        if (!*o) fail_msg("kernels --ceiling: %d object(s), want 2: %s", n - 1, r.out);
        str(o, "kind", got, sizeof got);
        assert_string_equal(got, "ceiling");
        str(o, "isa", got, sizeof got);
        assert_string_equal(got, "generic");
        assert_int_equal((int)num(o, "threads"), n);
        assert_int_equal((int)num(o, "reps"), 2);
        assert_int_equal((int)num(o, "window_ms"), 5);
        const double rows = num(o, "rows"), cols = num(o, "cols"), bytes = rows * cols / 32 * 34;
        assert_int_equal((int)cols, 2048);
        assert_true((int)rows % 16 == 0 && bytes <= 256.0 * 1024 && bytes + 16 * cols / 32 * 34 > 256.0 * 1024);
        assert_true(num(o, "median_gbps") > 0 && num(o, "gbps") >= num(o, "median_gbps"));
        /* both printed to 3 decimals: a slow tier's small figures round by up to 0.0005 each */
        assert_true(fabs(num(o, "per_thread_gbps") * n - num(o, "gbps")) < 1e-2 * num(o, "gbps") + 2e-3);
        assert_true(num(o, "bandwidth_gbps") > 0);
        assert_true(num(o, "min_calls") >= 1);   /* every thread ran in every window */
        /* ceiling_pct to 2 decimals, from figures printed to 3: their rounding bounds the gap */
        const double g = num(o, "gbps"), bw = num(o, "bandwidth_gbps"), cp = num(o, "ceiling_pct");
        assert_true(fabs(cp - 100.0 * g / bw) < 0.0051 + cp * (5e-4 / g + 5e-4 / bw));
        o = strchr(o, '\n') + 1;
    }
    if (*o) fail_msg("kernels --ceiling: more than two objects: %s", r.out);
    e2e_res_free(&r);

    static const char *const bad[][2] = {{"--shape", "16x256"}, {"--hot", NULL}, {"--window", "0"}};
    static const char *const why[] = {"--ceiling takes neither", "--ceiling takes neither", "1..60000"};
    for (int i = 0; i < 3; i++) {
        if (bad[i][1])
            E2E_RUN(&r, E2E_NO_LIMIT, "kernels", "--ceiling", "--format", "q8_0", bad[i][0], bad[i][1]);
        else
            E2E_RUN(&r, E2E_NO_LIMIT, "kernels", "--ceiling", "--format", "q8_0", bad[i][0]);
        assert_int_equal(r.status, 2);
        e2e_assert_err_has(&r, "kernels --ceiling", why[i], NULL);
        e2e_res_free(&r);
    }
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "bench") != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bench_json),
        cmocka_unit_test(test_bench_compare),
        cmocka_unit_test(test_bandwidth_json),
        cmocka_unit_test(test_kernels_json),
        cmocka_unit_test(test_kernels_ceiling),
        cmocka_unit_test(test_prefetch_option),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    e2e_cleanup();
    return failed;
}
