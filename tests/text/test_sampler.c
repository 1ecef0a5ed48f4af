/*
 * test_sampler.c — greedy, top-k, temperature, top-p, min-p, seeding.
 *
 * Distribution tests compute the expected (renormalised) probabilities in
 * double precision here, independently of the sampler, and compare the
 * empirical frequencies of many draws with a tolerance of a few standard
 * errors. No timing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "ternbench.h"

#define OK(x) assert_int_equal((x), TB_OK)
#define DRAWS 20000

static tb_sampler_t *mk(float temp, int32_t k, float p, float minp, uint64_t seed) {
    tb_sampler_t *s;
    tb_sampler_params_t sp = {.temp = temp, .top_k = k, .top_p = p, .min_p = minp, .seed = seed};
    OK(tb_sampler_new(&sp, &s));
    return s;
}

/* Deterministic pseudo-random logits in [-4, 4) (test-local LCG). */
static void fill_logits(float *l, int n, uint32_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        l[i] = (float)((seed >> 8) / 16777216.0 * 8.0 - 4.0);
    }
}

/* Reference: softmax(l / temp) restricted to keep[], renormalised. */
static void expected(const float *l, int n, float temp, const bool *keep, double *p) {
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) if (keep[i] && l[i] > mx) mx = l[i];
    for (int i = 0; i < n; i++) {
        p[i] = keep[i] ? exp((l[i] - mx) / temp) : 0;
        sum += p[i];
    }
    for (int i = 0; i < n; i++) p[i] /= sum;
}

/* Draw DRAWS tokens and compare frequencies with p (|diff| < 5 sigma + eps). */
static void check_distribution(tb_sampler_t *s, const float *l, int n, const double *p) {
    int count[64] = {0};
    assert_true(n <= 64);
    for (int i = 0; i < DRAWS; i++) {
        int32_t t = tb_sampler_sample(s, l, n);
        assert_true(t >= 0 && t < n);
        count[t]++;
    }
    for (int i = 0; i < n; i++) {
        double f = (double)count[i] / DRAWS;
        double sigma = sqrt(p[i] * (1 - p[i]) / DRAWS);
        if (p[i] == 0) assert_int_equal(count[i], 0);
        else assert_true(fabs(f - p[i]) < 5 * sigma + 1e-3);
    }
}

static void test_greedy(void **state) {
    (void)state;
    float l[8] = {0.5f, 2.0f, -1.0f, 2.0f, NAN, 1.0f, 2.0f, -INFINITY};
    tb_sampler_t *s = mk(0, 0, 1, 0, 1);
    assert_int_equal(tb_sampler_sample(s, l, 8), 1);     /* ties -> lowest id */
    l[1] = 1.9f;
    assert_int_equal(tb_sampler_sample(s, l, 8), 3);
    float nan_first[3] = {NAN, -5.0f, -3.0f};
    assert_int_equal(tb_sampler_sample(s, nan_first, 3), 2);
    assert_true(tb_sampler_sample(s, l, 0) < 0);
    assert_true(tb_sampler_sample(s, NULL, 8) < 0);
    tb_sampler_free(s);
}

static void test_top_k1_is_greedy(void **state) {
    (void)state;
    float l[1000];
    tb_sampler_t *g = mk(0, 0, 1, 0, 7), *k1 = mk(1.5f, 1, 0.9f, 0.05f, 7);
    for (uint32_t r = 0; r < 50; r++) {
        fill_logits(l, 1000, r);
        if (r % 5 == 0) l[r] = l[r + 1] = 10;             /* a tie at the top */
        int32_t want = tb_sampler_sample(g, l, 1000);
        int32_t best = 0;
        for (int i = 1; i < 1000; i++) if (l[i] > l[best]) best = i;
        assert_int_equal(want, best);
        assert_int_equal(tb_sampler_sample(k1, l, 1000), want);
    }
    tb_sampler_free(g);
    tb_sampler_free(k1);
}

static void test_seeded_determinism(void **state) {
    (void)state;
    enum { N = 151936 };   /* Qwen2-size vocab */
    float *l = malloc(N * sizeof *l);
    assert_non_null(l);
    fill_logits(l, N, 42);
    int32_t a[40], b[40], c[40];
    tb_sampler_t *s1 = mk(1.0f, 0, 0.95f, 0, 1234), *s2 = mk(1.0f, 0, 0.95f, 0, 1234),
                 *s3 = mk(1.0f, 0, 0.95f, 0, 1235);
    for (int i = 0; i < 40; i++) {
        a[i] = tb_sampler_sample(s1, l, N);
        b[i] = tb_sampler_sample(s2, l, N);
        c[i] = tb_sampler_sample(s3, l, N);
        assert_true(a[i] >= 0 && a[i] < N);
    }
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    tb_sampler_free(s1);
    tb_sampler_free(s2);
    tb_sampler_free(s3);
    free(l);
}

static void test_temperature(void **state) {
    (void)state;
    float l[6] = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f, 1.5f};
    bool all[6] = {1, 1, 1, 1, 1, 1};
    double p[6];
    for (float temp = 0.5f; temp <= 2.0f; temp *= 2) {
        tb_sampler_t *s = mk(temp, 0, 1, 0, 99);
        expected(l, 6, temp, all, p);
        check_distribution(s, l, 6, p);
        tb_sampler_free(s);
    }
    /* temperature -> 0 approaches greedy */
    tb_sampler_t *s = mk(1e-3f, 0, 1, 0, 5);
    for (int i = 0; i < 1000; i++) assert_int_equal(tb_sampler_sample(s, l, 6), 2);
    tb_sampler_free(s);
}

static void test_top_k(void **state) {
    (void)state;
    float l[6] = {1.0f, 0.0f, 2.0f, -1.0f, 1.0f, 1.5f};
    /* k = 3: 2.0 (id 2), 1.5 (id 5), then the tie 1.0 -> lower id 0 */
    bool keep[6] = {1, 0, 1, 0, 0, 1};
    double p[6];
    expected(l, 6, 1.0f, keep, p);
    tb_sampler_t *s = mk(1.0f, 3, 1, 0, 3);
    check_distribution(s, l, 6, p);
    tb_sampler_free(s);
}

static void test_top_p(void **state) {
    (void)state;
    /* probabilities at temp 1 of {3, 2, 1, 0, -1}: .636 .234 .086 .032 .012 */
    float l[5] = {1.0f, 3.0f, -1.0f, 2.0f, 0.0f};
    bool all[5] = {1, 1, 1, 1, 1};
    double p0[5], p[5];
    expected(l, 5, 1.0f, all, p0);
    /* the smallest prefix reaching 0.8 is {3, 2}; reaching 0.9 adds 1 */
    struct { float top_p; bool keep[5]; } cases[] = {
        {0.80f, {0, 1, 0, 1, 0}},
        {0.90f, {1, 1, 0, 1, 0}},
        {0.50f, {0, 1, 0, 0, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        /* the reference set, from the cumulative definition */
        double cum = 0;
        bool keep[5] = {0};
        int order[5] = {1, 3, 0, 4, 2};
        for (int i = 0; i < 5 && cum < cases[c].top_p; i++) {
            keep[order[i]] = true;
            cum += p0[order[i]];
        }
        assert_memory_equal(keep, cases[c].keep, sizeof keep);
        expected(l, 5, 1.0f, keep, p);
        tb_sampler_t *s = mk(1.0f, 0, cases[c].top_p, 0, 11 + c);
        check_distribution(s, l, 5, p);
        tb_sampler_free(s);
        /* the same through top-k first (sorted path) */
        s = mk(1.0f, 4, cases[c].top_p, 0, 17 + c);
        check_distribution(s, l, 5, p);
        tb_sampler_free(s);
    }
}

/* 64 candidates: top-p without top-k goes through the selection path
 * (more than a small sort); the kept set and its weights must match the
 * definition computed here by a plain sort. */
static void test_top_p_selection(void **state) {
    (void)state;
    enum { N = 64 };
    float l[N];
    bool all[N], keep[N];
    double p0[N], p[N];
    for (int i = 0; i < N; i++) {
        l[i] = 0.09f * (float)((i * 37) % N);          /* distinct, shuffled */
        all[i] = true;
        keep[i] = false;
    }
    expected(l, N, 0.7f, all, p0);
    int order[N];
    for (int i = 0; i < N; i++) order[i] = i;
    for (int i = 1; i < N; i++)                         /* insertion sort by p desc */
        for (int j = i; j > 0 && p0[order[j]] > p0[order[j - 1]]; j--) {
            int x = order[j]; order[j] = order[j - 1]; order[j - 1] = x;
        }
    double cum = 0;
    int kept = 0;
    for (int i = 0; i < N && cum < 0.6; i++) {
        keep[order[i]] = true;
        cum += p0[order[i]];
        kept++;
    }
    assert_true(kept > 4 && kept < N - 4);
    expected(l, N, 0.7f, keep, p);
    tb_sampler_t *s = mk(0.7f, 0, 0.6f, 0, 31);
    check_distribution(s, l, N, p);
    tb_sampler_free(s);
}

static void test_min_p(void **state) {
    (void)state;
    float l[5] = {1.0f, 3.0f, -1.0f, 2.0f, 0.0f};
    /* min_p 0.1: keep p >= 0.1 * p_max <=> l >= 3 + ln 0.1 = 0.697 */
    bool keep[5] = {1, 1, 0, 1, 0};
    double p[5];
    expected(l, 5, 1.0f, keep, p);
    tb_sampler_t *s = mk(1.0f, 0, 1, 0.1f, 21);
    check_distribution(s, l, 5, p);
    tb_sampler_free(s);
    /* min_p after top-p: top-p 0.9 keeps {1,3,0}, min-p 0.3 drops 0 */
    bool keep2[5] = {0, 1, 0, 1, 0};
    expected(l, 5, 1.0f, keep2, p);
    s = mk(1.0f, 0, 0.9f, 0.3f, 22);
    check_distribution(s, l, 5, p);
    tb_sampler_free(s);
    /* min_p >= 1 keeps only the maximum */
    s = mk(1.0f, 0, 1, 1.5f, 23);
    for (int i = 0; i < 100; i++) assert_int_equal(tb_sampler_sample(s, l, 5), 1);
    tb_sampler_free(s);
}

static void test_large_vocab_top_p(void **state) {
    (void)state;
    /* flat vocab with a nucleus of 300 tokens holding ~all mass: top-p
     * without top-k must find it (the candidate set grows past 64) */
    enum { N = 151936 };
    float *l = malloc(N * sizeof *l);
    assert_non_null(l);
    for (int i = 0; i < N; i++) l[i] = -30.0f;
    for (int i = 0; i < 300; i++) l[(i * 499) % N] = 5.0f;
    tb_sampler_t *s = mk(1.0f, 0, 0.5f, 0, 77);
    for (int d = 0; d < 200; d++) {
        int32_t t = tb_sampler_sample(s, l, N);
        assert_true(t >= 0 && t < N);
        assert_true(l[t] == 5.0f);
    }
    tb_sampler_free(s);
    free(l);
}

/* The same seed gives the same tokens whichever thread samples. */
typedef struct draw_job { const float *l; int n; int32_t out[64]; } draw_job_t;

static void *draw64(void *arg) {
    draw_job_t *j = arg;
    tb_sampler_t *s = mk(0.8f, 50, 0.9f, 0.02f, 2024);
    for (int i = 0; i < 64; i++) j->out[i] = tb_sampler_sample(s, j->l, j->n);
    tb_sampler_free(s);
    return NULL;
}

static void test_thread_independent(void **state) {
    (void)state;
    float l[4096];
    fill_logits(l, 4096, 9);
    draw_job_t main_job = {l, 4096, {0}}, jobs[2] = {{l, 4096, {0}}, {l, 4096, {0}}};
    draw64(&main_job);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, draw64, &jobs[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_memory_equal(jobs[i].out, main_job.out, sizeof main_job.out);
    }
}

static void test_bad_params(void **state) {
    (void)state;
    tb_sampler_t *s = NULL;
    tb_sampler_params_t sp = {.temp = NAN};
    assert_int_equal(tb_sampler_new(&sp, &s), TB_ERR_ARG);
    assert_null(s);
    assert_int_equal(tb_sampler_new(NULL, &s), TB_ERR_ARG);
    tb_sampler_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_top_k1_is_greedy),
        cmocka_unit_test(test_seeded_determinism),
        cmocka_unit_test(test_temperature),
        cmocka_unit_test(test_top_k),
        cmocka_unit_test(test_top_p),
        cmocka_unit_test(test_top_p_selection),
        cmocka_unit_test(test_min_p),
        cmocka_unit_test(test_large_vocab_top_p),
        cmocka_unit_test(test_thread_independent),
        cmocka_unit_test(test_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
