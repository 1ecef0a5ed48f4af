/*
 * test_quality_metrics.c — the quality metrics on hand-made distributions
 * (log-softmax, the top-K record, KL against the exact sum and its bound,
 * percentiles, the summary's formulas) and the reference file: round trip,
 * and each bad input a clear error naming the file (truncated, oversized,
 * bad magic, another vocabulary, another tokenizer, another text, a text
 * shorter than two chunks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "shared.h"

#include "quality.h"
#include "scenario.h"
#include "../harness/tmpdir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char stories[512], text_path[512];

static int group_setup(void **state) {
    (void)state;
    return quality_setup("quality_metrics", stories, text_path);
}

/* A deterministic distribution over n: logits from a small LCG. */
static void make_logits(float *x, int n, uint32_t seed, float spread) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = spread * ((float)(seed >> 8) / 16777216.0f - 0.5f);
    }
}

static void test_log_softmax(void **state) {
    (void)state;
    float x[100], lp[100];
    make_logits(x, 100, 7, 12);
    tb_quality_log_softmax(x, 100, lp);
    double s = 0;
    for (int i = 0; i < 100; i++) {
        assert_true(lp[i] <= 0);
        s += exp((double)lp[i]);
    }
    assert_true(fabs(s - 1) < 1e-6);
    /* shift invariance: logits + c give the same log-probabilities */
    float y[100], lq[100];
    for (int i = 0; i < 100; i++) y[i] = x[i] + 3.0f;
    tb_quality_log_softmax(y, 100, lq);
    for (int i = 0; i < 100; i++) assert_true(fabs(lp[i] - lq[i]) < 1e-5);
}

static void test_rec_make(void **state) {
    (void)state;
    enum { N = 200 };
    float x[N], lp[N];
    uint8_t mark[N] = {0};
    make_logits(x, N, 11, 10);
    x[17] = x[18] = 50;                    /* a tie at the top: lower id first */
    tb_quality_log_softmax(x, N, lp);
    tb_quality_rec_t r;
    tb_quality_rec_make(lp, N, 32, 5, mark, &r);
    assert_int_equal(r.id[0], 17);
    assert_int_equal(r.id[1], 18);
    for (int j = 1; j < 32; j++) assert_true(r.lp[j] <= r.lp[j - 1]);
    /* every id outside the top 32 is no more likely than the 32nd */
    double tail = 0;
    for (int i = 0; i < N; i++) {
        bool in = false;
        for (int j = 0; j < 32; j++) in |= r.id[j] == i;
        if (!in) { assert_true(lp[i] <= r.lp[31]); tail += exp((double)lp[i]); }
    }
    assert_true(fabs(tail - r.tail) < 1e-6);
    assert_true(r.lp_next == lp[5]);
    for (int i = 0; i < N; i++) assert_int_equal(mark[i], 0);
}

/* KL of the top-K form: 0 on identical inputs, below the exact KL, above
 * it with the bound; the exact sum against a direct double computation. */
static void test_kld_bounds(void **state) {
    (void)state;
    enum { N = 300 };
    float x[N], y[N], lp[N], lq[N];
    uint8_t mark[N] = {0};
    tb_quality_acc_t a = {0}, self = {0};
    for (int t = 0; t < 40; t++) {
        make_logits(x, N, 100 + t, 8);
        memcpy(y, x, sizeof x);
        for (int i = 0; i < N; i++) y[i] += 0.5f * sinf((float)(i * (t + 1)));
        tb_quality_log_softmax(x, N, lp);
        tb_quality_log_softmax(y, N, lq);
        tb_quality_rec_t r;
        tb_quality_rec_make(lp, N, 32, t, mark, &r);
        assert_int_equal(tb_quality_acc_add(&a, &r, 32, lq, lp, N, t, mark), 0);
        assert_int_equal(tb_quality_acc_add(&self, &r, 32, lp, lp, N, t, mark), 0);
        double full = 0;
        for (int i = 0; i < N; i++) full += exp((double)lp[i]) * ((double)lp[i] - (double)lq[i]);
        const double kld = a.kld_v[a.n - 1];
        assert_true(kld <= full + 1e-9);        /* grouping never adds KL */
        assert_true(kld > 0);
    }
    tb_quality_stats_t st, ss;
    assert_int_equal(tb_quality_summarize(&a, &st), 0);
    assert_true(st.kld_mean <= st.kld_full_mean + 1e-9);
    assert_true(st.kld_full_mean <= st.kld_ub_mean + 1e-9);
    assert_true(st.kld_median <= st.kld_p90 && st.kld_p90 <= st.kld_p95 && st.kld_p95 <= st.kld_p99 &&
                st.kld_p99 <= st.kld_max);
    assert_int_equal(tb_quality_summarize(&self, &ss), 0);
    assert_true(ss.kld_mean == 0 && ss.kld_max == 0 && ss.kld_full_mean == 0);
    assert_true(ss.same_top == 1 && ss.dp_rms == 0 && ss.ppl == ss.ppl_base && ss.ppl_ratio == 1);
    tb_quality_acc_free(&a);
    tb_quality_acc_free(&self);
}

/* The summary's formulas on known values. */
static void test_summary_formulas(void **state) {
    (void)state;
    tb_quality_acc_t a = {0};
    a.cap = 64;
    a.kld_v = calloc(64, sizeof(float));
    a.dp_v = calloc(64, sizeof(float));
    /* 20 tokens: nll alternating 1 and 3, nllb all 2, 15 same top */
    for (int i = 0; i < 20; i++) {
        const double nll = i % 2 ? 3 : 1, nllb = 2;
        a.nll += nll; a.nll2 += nll * nll; a.nllb += nllb; a.nllb2 += nllb * nllb; a.nll_nllb += nll * nllb;
        a.kld += i; a.kld2 += (double)i * i; a.kld_v[i] = (float)i;
        a.dp_v[i] = (float)(i - 10) / 100; a.dp += a.dp_v[i]; a.dp2 += a.dp_v[i] * a.dp_v[i];
        a.dp4 += pow(a.dp_v[i], 4);
        a.n_same += i < 15;
        a.n++;
    }
    tb_quality_stats_t s;
    assert_int_equal(tb_quality_summarize(&a, &s), 0);
    assert_true(fabs(s.ppl - exp(2.0)) < 1e-12);                  /* e^mean(nll) */
    assert_true(fabs(s.ppl_unc - exp(2.0) * sqrt(1.0 / 19)) < 1e-9);  /* var 1, n-1 = 19 */
    assert_true(fabs(s.ppl_base - exp(2.0)) < 1e-12 && s.ppl_base_unc == 0);
    assert_true(fabs(s.ln_ratio) < 1e-12 && fabs(s.ppl_ratio - 1) < 1e-12);
    assert_true(fabs(s.kld_mean - 9.5) < 1e-12);
    assert_true(fabs(s.kld_median - 9.5) < 1e-6);                 /* (9 + 10) / 2 */
    assert_true(fabs(s.kld_p90 - 17.1) < 1e-5);                   /* 0.9 * 19 = 17.1 */
    assert_true(fabs(s.kld_p99 - 18.81) < 1e-5);
    assert_true(s.kld_max == 19);
    assert_true(fabs(s.same_top - 0.75) < 1e-12);
    assert_true(fabs(s.same_top_unc - sqrt(0.75 * 0.25 / 19)) < 1e-12);
    assert_true(fabs(s.dp_min + 0.10) < 1e-6 && fabs(s.dp_max - 0.09) < 1e-6);
    tb_quality_acc_free(&a);
}

/* ---- the reference file ---------------------------------------------- */

static void make_ref(tb_qref_t *r, uint32_t n_vocab) {
    memset(r, 0, sizeof *r);
    r->n_vocab = n_vocab; r->n_ctx = 16; r->n_chunk = 2; r->k = 4; r->n_scored = 16 - 1 - 8;
    r->flags = 1; r->bos = 1; r->text_bytes = 123; r->n_text_tokens = 40;
    memset(r->model_hash, 0xab, 32);
    memset(r->tok_hash, 0xcd, 32);
    r->tokens = calloc(32, sizeof *r->tokens);
    r->recs = calloc(14, sizeof *r->recs);
    for (int i = 0; i < 32; i++) r->tokens[i] = i % (int)n_vocab;
    for (int i = 0; i < 14; i++)
        for (int j = 0; j < 4; j++) {
            r->recs[i].id[j] = (i + j) % (int)n_vocab;
            r->recs[i].lp[j] = -0.5f * (float)(j + 1);
            r->recs[i].lp_next = -1.25f;
            r->recs[i].tail = 0.125f;
        }
}

static void truncate_to(const char *path, long n) { assert_int_equal(truncate(path, n), 0); }

static void test_reffile_roundtrip(void **state) {
    (void)state;
    char p[512];
    tpath(p, sizeof p, "a.ref");
    tb_qref_t w, r;
    make_ref(&w, 100);
    assert_int_equal(tb_qref_write(p, &w), 0);
    assert_int_equal(tb_qref_read(p, &r), 0);
    assert_int_equal(r.n_vocab, 100);
    assert_int_equal(r.n_chunk, 2);
    assert_int_equal(r.k, 4);
    assert_int_equal(r.bos, 1);
    assert_memory_equal(r.tokens, w.tokens, 32 * sizeof(int32_t));
    for (int i = 0; i < 14; i++) {
        assert_memory_equal(r.recs[i].id, w.recs[i].id, 4 * sizeof(int32_t));
        assert_memory_equal(r.recs[i].lp, w.recs[i].lp, 4 * sizeof(float));
        assert_true(r.recs[i].tail == w.recs[i].tail && r.recs[i].lp_next == w.recs[i].lp_next);
    }
    assert_memory_equal(r.model_hash, w.model_hash, 32);
    FILE *f = fopen(p, "rb");
    fseek(f, 0, SEEK_END);
    assert_int_equal(ftell(f), (long)tb_qref_file_bytes(&w));
    fclose(f);
    tb_qref_free(&r);

    /* truncated: an error naming the file and saying so */
    truncate_to(p, (long)tb_qref_file_bytes(&w) - 3);
    assert_int_equal(tb_qref_read(p, &r), TB_ERR_FORMAT);
    assert_non_null(strstr(tb_quality_last_error(), p));
    assert_non_null(strstr(tb_quality_last_error(), "truncated"));
    truncate_to(p, 50);
    assert_int_equal(tb_qref_read(p, &r), TB_ERR_FORMAT);
    assert_non_null(strstr(tb_quality_last_error(), "truncated"));
    /* trailing bytes */
    assert_int_equal(tb_qref_write(p, &w), 0);
    f = fopen(p, "ab");
    fputc(0, f);
    fclose(f);
    assert_int_equal(tb_qref_read(p, &r), TB_ERR_FORMAT);
    assert_non_null(strstr(tb_quality_last_error(), "oversized"));
    /* bad magic, future version */
    assert_int_equal(tb_qref_write(p, &w), 0);
    f = fopen(p, "r+b");
    fputc('X', f);
    fclose(f);
    assert_int_equal(tb_qref_read(p, &r), TB_ERR_FORMAT);
    assert_non_null(strstr(tb_quality_last_error(), "magic"));
    assert_int_equal(tb_qref_write(p, &w), 0);
    f = fopen(p, "r+b");
    fseek(f, 8, SEEK_SET);
    fputc(9, f);
    fclose(f);
    assert_int_equal(tb_qref_read(p, &r), TB_ERR_UNSUPPORTED);
    assert_non_null(strstr(tb_quality_last_error(), "version 9"));
    /* an id outside the vocabulary, with its byte offset */
    w.recs[3].id[2] = 100;
    assert_int_equal(tb_qref_write(p, &w), 0);
    assert_int_equal(tb_qref_read(p, &r), TB_ERR_FORMAT);
    assert_non_null(strstr(tb_quality_last_error(), "byte "));
    assert_non_null(strstr(tb_quality_last_error(), "record 3"));
    tb_qref_free(&w);
}

/* ---- bad inputs through the pipeline --------------------------------- */

static void save_stories_ref(const char *path) {
    tb_quality_opts_t o = {.ref_model = stories, .save_ref = path, .text = text_path, .n_ctx = 64, .n_chunks = 2,
                           .n_threads = 1};
    tb_quality_result_t r;
    assert_int_equal(tb_quality_run(&o, &r), 0);
    assert_int_equal(r.n_chunk, 2);
    assert_false(r.has_test);
}

static void test_short_text(void **state) {
    (void)state;
    char p[512];
    tpath(p, sizeof p, "short.txt");
    FILE *f = fopen(p, "w");
    fputs("Once upon a time, there was a little girl named Lily.", f);
    fclose(f);
    tb_quality_opts_t o = {.model = stories, .ref_model = stories, .text = p, .n_ctx = 64, .n_threads = 1};
    tb_quality_result_t r;
    assert_int_equal(tb_quality_run(&o, &r), TB_ERR_ARG);
    assert_non_null(strstr(tb_quality_last_error(), p));
    assert_non_null(strstr(tb_quality_last_error(), "shorter than two chunks"));
}

static void test_ref_mismatch(void **state) {
    (void)state;
    char ref[512];
    tpath(ref, sizeof ref, "stories.ref");
    save_stories_ref(ref);
    tb_quality_result_t r;
    /* the same file scores stories against itself */
    tb_quality_opts_t o = {.model = stories, .ref_file = ref, .text = text_path, .n_threads = 1};
    assert_int_equal(tb_quality_run(&o, &r), 0);
    assert_true(r.st.kld_max == 0 && r.st.same_top == 1);

    /* another tokenizer: the header's tokenizer hash changed */
    tb_qref_t q;
    assert_int_equal(tb_qref_read(ref, &q), 0);
    char bad[512];
    tpath(bad, sizeof bad, "othertok.ref");
    q.tok_hash[0] ^= 1;
    assert_int_equal(tb_qref_write(bad, &q), 0);
    o.ref_file = bad;
    assert_int_equal(tb_quality_run(&o, &r), TB_ERR_ARG);
    assert_non_null(strstr(tb_quality_last_error(), bad));
    assert_non_null(strstr(tb_quality_last_error(), "another tokenizer"));
    q.tok_hash[0] ^= 1;

    /* another vocabulary: a reference over 1000 tokens */
    tb_qref_t v;
    make_ref(&v, 1000);
    memcpy(v.text_hash, q.text_hash, 32);
    tpath(bad, sizeof bad, "othervocab.ref");
    assert_int_equal(tb_qref_write(bad, &v), 0);
    assert_int_equal(tb_quality_run(&o, &r), TB_ERR_ARG);
    assert_non_null(strstr(tb_quality_last_error(), bad));
    assert_non_null(strstr(tb_quality_last_error(), "vocabulary of 1000"));
    tb_qref_free(&v);

    /* another text */
    char other[512];
    tpath(other, sizeof other, "other.txt");
    FILE *f = fopen(other, "w");
    fputs("a different text", f);
    fclose(f);
    o.ref_file = ref;
    o.text = other;
    assert_int_equal(tb_quality_run(&o, &r), TB_ERR_ARG);
    assert_non_null(strstr(tb_quality_last_error(), "another text"));
    o.text = text_path;

    /* truncated */
    tpath(bad, sizeof bad, "trunc.ref");
    assert_int_equal(tb_qref_write(bad, &q), 0);
    truncate_to(bad, (long)tb_qref_file_bytes(&q) / 2);
    o.ref_file = bad;
    assert_int_equal(tb_quality_run(&o, &r), TB_ERR_FORMAT);
    assert_non_null(strstr(tb_quality_last_error(), bad));
    assert_non_null(strstr(tb_quality_last_error(), "truncated"));
    tb_qref_free(&q);
}

int main(void) {
    quality_need_shared();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_softmax),
        cmocka_unit_test(test_rec_make),
        cmocka_unit_test(test_kld_bounds),
        cmocka_unit_test(test_summary_formulas),
        cmocka_unit_test(test_reffile_roundtrip),
        cmocka_unit_test(test_short_text),
        cmocka_unit_test(test_ref_mismatch),
    };
    return cmocka_run_group_tests(tests, group_setup, tmpdir_teardown);
}
