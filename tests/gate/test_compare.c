/*
 * test_compare.c — `ternbench compare` on a fixture database written
 * through results/store.h (argv[1] is the binary): A/A unchanged (exit 0),
 * a 10 % slower candidate regressed (exit 1) in tok/s, in per-token
 * latency (with effective sample sizes) and a 2 % higher instruction count;
 * a run compared with itself, overlapping sides, an empty selection and a
 * bad option exit 2; differing thread counts are noted; summary rows
 * (repetition -1) are ignored; --md prints a pull-request table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../e2e/e2e.h"
#include "store.h"
#include "ternbench.h"

static char db[512];

static const double tok_s[6] = {50.1, 49.8, 50.3, 49.9, 50.0, 50.2};

/* One complete run tagged side=SIDE: test tg32 (decode) with 6 reps of
 * decode_tok_per_s (x scale), a summary row of 1e9 that compare must not
 * read, 32 decode tokens per rep ~20 ms apart (/ scale), and test
 * kernel/x with one instruction count (x count_scale). */
static int64_t make_run(const char *side, int threads, double scale, double count_scale) {
    tb_store_t *s;
    assert_int_equal(tb_store_open(db, &s, NULL), TB_OK);
    tb_host_facts_t h = {.cpu_family = -1, .cpu_model = -1, .cpu_stepping = -1, .cores = 2, .threads = 2,
                         .l1d_kb = -1, .l2_kb = -1, .l3_kb = -1, .mem_bytes = -1};
    snprintf(h.fingerprint, sizeof h.fingerprint, "host-fp");
    snprintf(h.hostname, sizeof h.hostname, "ci-runner");
    tb_build_facts_t b = {0};
    snprintf(b.fingerprint, sizeof b.fingerprint, "build-%s", side);
    snprintf(b.version, sizeof b.version, "0.1.0");
    snprintf(b.git_commit, sizeof b.git_commit, "%s", !strcmp(side, "a") ? "aaaa1111" : "bbbb2222");
    snprintf(b.compiler, sizeof b.compiler, "gcc");
    snprintf(b.build_type, sizeof b.build_type, "release");
    snprintf(b.isa_best, sizeof b.isa_best, "avx2");
    tb_model_facts_t m = {.file_bytes = 1000, .n_params = 100, .n_params_active = 100, .n_layer = 2,
                          .n_embd = 64, .n_vocab = 256, .bytes_per_token = 500, .synth_seed = 1};
    snprintf(m.content_hash, sizeof m.content_hash, "model-hash");
    snprintf(m.name, sizeof m.name, "llama-tiny");
    snprintf(m.arch, sizeof m.arch, "llama");
    snprintf(m.main_type, sizeof m.main_type, "tq2_0");
    snprintf(m.weight_types, sizeof m.weight_types, "tq2_0:14");
    int64_t hid, bid, mid, sid, rid, tid, kid;
    assert_int_equal(tb_store_put_host(s, &h, &hid), TB_OK);
    assert_int_equal(tb_store_put_build(s, &b, &bid), TB_OK);
    assert_int_equal(tb_store_put_model(s, &m, &mid), TB_OK);
    assert_int_equal(tb_store_put_scenario(s, "scen-hash", "gate", "gate.ini", "[model]\n", &sid), TB_OK);
    const char *keys[] = {"side"}, *vals[] = {side};
    tb_run_facts_t r = {.host_id = hid, .build_id = bid, .model_id = mid, .scenario_id = sid,
                        .threads = threads, .isa = "avx2", .kv_type = "f16", .bandwidth_gbps_before = -1,
                        .record_tokens = 1, .n_tags = 1, .tag_keys = keys, .tag_values = vals};
    snprintf(r.uuid, sizeof r.uuid, "uuid-%s-%lld", side, (long long)tb_now_ns());
    assert_int_equal(tb_store_run_begin(s, &r, &rid), TB_OK);
    assert_int_equal(tb_store_test_begin(s, rid, "decode", "decode", "tg32", NULL, 0, &tid), TB_OK);
    for (int rep = 0; rep < 6; rep++) {
        assert_int_equal(tb_store_tx_begin(s), TB_OK);
        assert_int_equal(tb_store_add_measurement(s, tid, rep, "decode_tok_per_s", tok_s[rep] * scale, "tok/s"), TB_OK);
        int64_t t = 0;
        for (int i = 0; i < 32; i++) {
            t += (int64_t)(20e6 * (1 + 0.01 * ((i * 7 + rep) % 5)) / scale);
            assert_int_equal(tb_store_add_token(s, tid, rep, i, "decode", t, -1, 1, "a", 1), TB_OK);
        }
        assert_int_equal(tb_store_tx_commit(s), TB_OK);
    }
    assert_int_equal(tb_store_tx_begin(s), TB_OK);
    assert_int_equal(tb_store_add_measurement(s, tid, -1, "decode_tok_per_s", 1e9, "tok/s"), TB_OK);
    assert_int_equal(tb_store_add_measurement(s, tid, -1, "repetitions", 6, "count"), TB_OK);
    assert_int_equal(tb_store_tx_commit(s), TB_OK);
    assert_int_equal(tb_store_test_end(s, tid, "complete", "nominal", NULL, NAN), TB_OK);
    assert_int_equal(tb_store_test_begin(s, rid, "count", "decode", "kernel/x", NULL, 0, &kid), TB_OK);
    assert_int_equal(tb_store_tx_begin(s), TB_OK);
    assert_int_equal(tb_store_add_measurement(s, kid, 0, "instructions", 1000000 * count_scale, "instr/call"), TB_OK);
    assert_int_equal(tb_store_tx_commit(s), TB_OK);
    assert_int_equal(tb_store_test_end(s, kid, "complete", "unknown", NULL, NAN), TB_OK);
    assert_int_equal(tb_store_run_end(s, rid, "complete", NULL, -1), TB_OK);
    tb_store_close(s);
    return rid;
}

static int setup(void **st) {
    (void)st;
    e2e_path(db, sizeof db, "cmp.db");
    make_run("a", 1, 1.0, 1.0);      /* run 1 */
    make_run("b", 1, 1.0, 1.0);      /* run 2: the same numbers */
    make_run("slow", 1, 0.9, 1.02);  /* run 3: 10 % slower, 2 % more instructions */
    make_run("t2", 2, 1.0, 1.0);     /* run 4: another thread count */
    return 0;
}

/* The text of the row of metric `metric` (up to its newline). */
static char *line_of(const char *out, const char *metric) {
    static char buf[1024];
    const char *p = strstr(out, metric);
    if (!p) return NULL;
    while (p > out && p[-1] != '\n') p--;
    size_t n = strcspn(p, "\n");
    snprintf(buf, sizeof buf, "%.*s", (int)n, p);
    return buf;
}

static void test_aa_unchanged(void **st) {
    (void)st;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "tag:side=a", "--cand", "side=b");
    e2e_assert_clean(&r, "a/a");
    assert_int_equal(r.status, 0);
    char *l = line_of(r.out, "decode_tok_per_s");
    assert_non_null(l);
    assert_non_null(strstr(l, "unchanged"));
    /* the median of the six reps (50.05), not the 1e9 summary row */
    assert_non_null(strstr(l, "50.05"));
    assert_non_null(strstr(line_of(r.out, "token_latency_ms"), "unchanged"));
    assert_non_null(strstr(line_of(r.out, "instructions"), "exact"));
    assert_null(strstr(r.out, "repetitions"));
    assert_non_null(strstr(r.out, "0 of 3 compared metrics regressed"));
    e2e_res_free(&r);
}

static void test_shift_regressed(void **st) {
    (void)st;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "1", "--cand", "3", "--json");
    e2e_assert_clean(&r, "shift");
    assert_int_equal(r.status, 1);
    const char *p = strstr(r.out, "\"metric\":\"decode_tok_per_s\"");
    assert_non_null(p);
    assert_non_null(strstr(p, "\"ratio\":0.9000"));
    assert_true(strstr(p, "\"verdict\":\"regressed\"") < strstr(p, "}"));
    p = strstr(r.out, "\"metric\":\"token_latency_ms\"");
    assert_non_null(p);
    assert_true(strstr(p, "\"method\":\"ess\"") < strstr(p, "}"));
    assert_true(strstr(p, "\"ess_base\":") < strstr(p, "}"));
    assert_true(strstr(p, "\"verdict\":\"regressed\"") < strstr(p, "}"));
    p = strstr(r.out, "\"metric\":\"instructions\"");
    assert_non_null(p);
    assert_true(strstr(p, "\"ratio\":1.020000") < strstr(p, "}"));
    assert_true(strstr(p, "\"verdict\":\"regressed\"") < strstr(p, "}"));
    assert_non_null(strstr(r.out, "\"regressed\":3}"));
    e2e_res_free(&r);
    /* 2 % more instructions pass a 3 % count threshold; the timings still regress */
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "1", "--cand", "3", "--count-threshold", "3");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(line_of(r.out, "instructions"), "unchanged"));
    e2e_res_free(&r);
    /* the other way round the candidate improved: exit 0 */
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "3", "--cand", "2", "--md");
    e2e_assert_clean(&r, "improved");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "| Model | Test | Metric |"));
    assert_non_null(strstr(line_of(r.out, "decode_tok_per_s"), "| llama-tiny | tg32 |"));
    assert_non_null(strstr(line_of(r.out, "decode_tok_per_s"), "improved"));
    e2e_res_free(&r);
}

static void test_refusals(void **st) {
    (void)st;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "2", "--cand", "side=b");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "itself", "same run", NULL);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "1,2", "--cand", "2,3");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "overlap", "must not overlap", NULL);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "tag:side=zzz", "--cand", "2");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "empty", "matches no run", NULL);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "1", "--cand", "2", "--threshold", "abc");
    assert_int_equal(r.status, 2);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--db", db, "--base", "1", "--cand", "2");
    assert_int_equal(r.status, 2);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", "/nonexistent/x.db", "--base", "1", "--cand", "2");
    assert_int_equal(r.status, 2);
    e2e_res_free(&r);
}

static void test_notes(void **st) {
    (void)st;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "compare", "--db", db, "--base", "commit:aaaa", "--cand", "side=t2");
    assert_int_equal(r.status, 0);
    e2e_assert_err_has(&r, "threads", "thread counts differ (base 1, candidate 2)", NULL);
    e2e_res_free(&r);
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "gate_compare")) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aa_unchanged),
        cmocka_unit_test(test_shift_regressed),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_notes),
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    e2e_cleanup();
    return rc;
}
