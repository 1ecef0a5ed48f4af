/*
 * test_sched.c — the dynamic split of a pass (sched.c) and the claimed
 * prologue (linear.c):
 *  - one caller drains every range: each unit handed out once, a claim is
 *    never below min_units unless its range held fewer, an empty own range
 *    steals from the back of the fullest range; a caller with units of its
 *    own takes them from its front, in order;
 *  - threads of a real pool with random uneven cuts, one of them held back
 *    until the others are done: every unit claimed exactly once, the held
 *    thread gets nothing (its range is taken by the others);
 *  - tb_lin_cut_units equals the unit index of tb_lin_cut;
 *  - a prologue run by claims while one thread is held back: that thread
 *    claims nothing and the bytes equal the static split's;
 *  - shared pool runs with a worker held past them: the caller does every
 *    item, the held worker's fn is never called for them, and it takes
 *    part in the next plain run.
 * Threads only record what they saw; all asserts run on the main thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model.h"
#include "kernels/kernels.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t urand(uint64_t n) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (rng >> 11) % n;
}

/* ===================================================================== */
/* One caller                                                             */
/* ===================================================================== */

static void test_single_caller(void **st) {
    (void)st;
    enum { NTH = 3, UNITS = 257, MIN = 3 };
    tb_sched_t *s = tb_alloc_aligned(NTH * sizeof *s);
    assert_non_null(s);
    const int64_t cut[NTH + 1] = {0, 100, 100, UNITS};     /* thread 1 owns nothing */
    tb_sched_init(s, NTH, cut);
    static int seen[UNITS];
    memset(seen, 0, sizeof seen);
    int64_t u0, u1;
    bool first = true;
    while (tb_sched_next(s, 1, NTH, MIN, &u0, &u1)) {
        assert_true(0 <= u0 && u0 < u1 && u1 <= UNITS);
        if (first) {   /* a theft from the back of the fullest range, [100, 257) */
            assert_int_equal(u1, UNITS);
            assert_int_equal(u1 - u0, (UNITS - 100) / 4);
            first = false;
        }
        const bool in0 = u1 <= 100;
        assert_true(in0 || u0 >= 100);        /* never across two ranges */
        for (int64_t u = u0; u < u1; u++) seen[u]++;
        if (u1 - u0 < MIN) {                  /* only a range's last units */
            int64_t lo = in0 ? 0 : 100, hi = in0 ? 100 : UNITS, left = 0;
            for (int64_t u = lo; u < hi; u++) left += seen[u] == 0;
            assert_int_equal(left, 0);
        }
    }
    for (int u = 0; u < UNITS; u++) assert_int_equal(seen[u], 1);
    /* a caller with units of its own starts at its own front, in order */
    tb_sched_init(s, NTH, cut);
    int64_t next = 100;
    for (int i = 0; i < 3; i++) {
        assert_true(tb_sched_next(s, 2, NTH, MIN, &u0, &u1));
        assert_int_equal(u0, next);
        next = u1;
    }
    tb_free_aligned(s);
}

/* ===================================================================== */
/* Threads of a pool, one held back                                       */
/* ===================================================================== */

#define T_UNITS 20000
#define T_MAXTH 4

typedef struct run_ctx {
    tb_sched_t *s;
    int64_t min_units, cut[T_MAXTH + 1];
    int held;                         /* this thread starts when the others are done */
    _Atomic int finished;             /* threads other than `held` done claiming */
    _Atomic int owner[T_UNITS];       /* claimant + 1 of every unit, 0 if none    */
    _Atomic int claims[T_UNITS];      /* times each unit was handed out            */
    int64_t first_u0[T_MAXTH];        /* each thread's first claim, -1 if none     */
} run_ctx;

static void run_worker(void *arg, int ith, int nth) {
    run_ctx *c = arg;
    if (ith == c->held) {
        int spins = 0;
        while (atomic_load(&c->finished) < nth - 1) tb_spin_wait(&spins);
    }
    c->first_u0[ith] = -1;
    int64_t u0, u1;
    while (tb_sched_next(c->s, ith, nth, c->min_units, &u0, &u1)) {
        if (c->first_u0[ith] < 0) c->first_u0[ith] = u0;
        for (int64_t u = u0; u < u1; u++) {
            atomic_fetch_add(&c->claims[u], 1);
            atomic_store(&c->owner[u], ith + 1);
        }
    }
    if (ith != c->held) atomic_fetch_add(&c->finished, 1);
}

static void test_pool_threads(void **st) {
    (void)st;
    static run_ctx c;
    for (int nth = 2; nth <= T_MAXTH; nth++) {
        tb_pool_t *pool;
        assert_int_equal(tb_pool_new(nth, &pool), TB_OK);
        c.s = tb_alloc_aligned((size_t)nth * sizeof *c.s);
        assert_non_null(c.s);
        for (int round = 0; round < 30; round++) {
            /* random non-decreasing cuts, some ranges empty */
            c.cut[0] = 0;
            c.cut[nth] = 1000 + (int64_t)urand(T_UNITS - 1000);
            for (int k = 1; k < nth; k++) c.cut[k] = (int64_t)urand((uint64_t)c.cut[nth] + 1);
            for (int k = 1; k < nth; k++)          /* insertion sort */
                for (int j = k; j > 1 && c.cut[j] < c.cut[j - 1]; j--) {
                    int64_t t = c.cut[j]; c.cut[j] = c.cut[j - 1]; c.cut[j - 1] = t;
                }
            c.min_units = 1 + (int64_t)urand(20);
            c.held = (int)urand((uint64_t)nth);
            atomic_store(&c.finished, 0);
            for (int u = 0; u < T_UNITS; u++) { atomic_store(&c.owner[u], 0); atomic_store(&c.claims[u], 0); }
            tb_sched_init(c.s, nth, c.cut);
            tb_pool_run(pool, run_worker, &c);
            for (int64_t u = 0; u < c.cut[nth]; u++) {
                assert_int_equal(atomic_load(&c.claims[u]), 1);
                assert_int_not_equal(atomic_load(&c.owner[u]), c.held + 1);
            }
            assert_int_equal(c.first_u0[c.held], -1);
        }
        tb_free_aligned(c.s);
        tb_pool_free(pool);
    }
}

/* ===================================================================== */
/* Cuts as units                                                          */
/* ===================================================================== */

static void test_cut_units(void **st) {
    (void)st;
    tb_weight_t ws[10];
    tb_lin_job_t js[10];
    for (int round = 0; round < 300; round++) {
        const int n = 1 + (int)urand(10);
        for (int j = 0; j < n; j++) {
            ws[j] = (tb_weight_t){.n_in = 256, .n_out = 1 + (int64_t)urand(3000),
                                  .row_bytes = 16 + (size_t)urand(4000)};
            js[j] = (tb_lin_job_t){.w = &ws[j], .n_tok = 1 + (int64_t)urand(4)};
        }
        int64_t total = 0;
        for (int j = 0; j < n; j++) total += (ws[j].n_out + 15) / 16;
        for (int nth = 1; nth <= 5; nth++) {
            int64_t prev = 0;
            for (int k = 0; k <= nth; k++) {
                int job;
                int64_t row, want = 0;
                tb_lin_cut(js, n, k, nth, &job, &row);
                for (int j = 0; j < job; j++) want += (ws[j].n_out + 15) / 16;
                want += row / 16;
                const int64_t got = tb_lin_cut_units(js, n, k, nth);
                assert_int_equal(got, want);
                assert_true(got >= prev);
                prev = got;
            }
            assert_int_equal(prev, total);
        }
    }
}

/* ===================================================================== */
/* Claimed prologue                                                       */
/* ===================================================================== */

#define P_N 2
#define P_IN 1024

typedef struct pro_ctx {
    tb_lin_pro_claim_t claim;
    const tb_lin_pro_t *pro;
    int held;
    _Atomic int released;
    int64_t claimed_before[T_MAXTH];  /* claim.next seen by the held thread */
} pro_ctx;

static void pro_worker(void *arg, int ith, int nth) {
    pro_ctx *c = arg;
    if (ith == c->held) {
        int spins = 0;
        while (!atomic_load(&c->released)) tb_spin_wait(&spins);
        c->claimed_before[ith] = atomic_load(&c->claim.done);
    }
    tb_lin_pro_claim_run(&c->claim, c->pro, nth);
    if (ith != c->held) atomic_store(&c->released, 1);   /* after all items are done */
}

static void test_claimed_prologue(void **st) {
    (void)st;
    static float x0[P_N * P_IN], x[P_N * P_IN], xn[P_N * P_IN], w[P_IN];
    static uint8_t q_static[P_N * 2048], q_claim[P_N * 2048];
    for (int i = 0; i < P_N * P_IN; i++) x0[i] = (float)((int)urand(2001) - 1000) / 100.0f;
    for (int i = 0; i < P_IN; i++) w[i] = 0.5f + (float)urand(1000) / 1000.0f;
    const tb_type_t wt = TB_TYPE_Q4_0;
    const size_t qs = tb_act_row_bytes(wt, P_IN);
    assert_true(qs * P_N <= sizeof q_static);
    tb_lin_pro_t p = {.kind = TB_PRO_NORM, .x = x, .ld = P_IN, .n_in = P_IN, .n = P_N, .w = w,
                      .eps = 1e-5f, .xn = xn, .wtype = wt, .q = q_static, .q_stride = qs};
    memcpy(x, x0, sizeof x);
    tb_lin_prologue(&p, 0, 1);
    const int64_t items = tb_lin_pro_items(&p);
    assert_true(items >= 4);
    for (int nth = 2; nth <= 3; nth++) {
        tb_pool_t *pool;
        assert_int_equal(tb_pool_new(nth, &pool), TB_OK);
        for (int held = 0; held < nth; held++) {
            memcpy(x, x0, sizeof x);
            memset(q_claim, 0xAB, sizeof q_claim);
            p.q = q_claim;
            static pro_ctx c;
            c.pro = &p;
            c.held = held;
            atomic_store(&c.released, 0);
            atomic_store(&c.claim.next, 0);
            atomic_store(&c.claim.done, 0);
            tb_pool_run(pool, pro_worker, &c);
            assert_int_equal(c.claimed_before[held], items);   /* the others did it all */
            assert_memory_equal(q_static, q_claim, qs * P_N);
        }
        tb_pool_free(pool);
    }
}

/* ===================================================================== */
/* Shared runs: a late worker is closed out                               */
/* ===================================================================== */

#define S_ITEMS 5000
#define S_LOG 64

typedef struct shared_ctx {
    int id;                           /* this run's number                        */
    _Atomic int next;                 /* the next item to claim                   */
    _Atomic int done[S_ITEMS];        /* claimant + 1 of every item               */
} shared_ctx;

static _Atomic int cur_id;            /* the run the caller is in                 */
static _Atomic int n_log;
static int log_ith[S_LOG], log_id[S_LOG], log_cur[S_LOG];   /* every fn call */

static void shared_worker(void *arg, int ith, int nth) {
    shared_ctx *c = arg;
    (void)nth;
    const int at = atomic_fetch_add(&n_log, 1);
    if (at < S_LOG) {
        log_ith[at] = ith;
        log_id[at] = c->id;
        log_cur[at] = atomic_load(&cur_id);
    }
    for (int i; (i = atomic_fetch_add(&c->next, 1)) < S_ITEMS;) atomic_fetch_add(&c->done[i], ith + 1);
}

/* The items of run c were each done once; returns how many thread ith did. */
static int shared_check(const shared_ctx *c, int ith) {
    int mine = 0;
    for (int i = 0; i < S_ITEMS; i++) {
        const int d = atomic_load(&c->done[i]);
        assert_true(d >= 1);
        mine += d == ith + 1;
    }
    return mine;
}

/* Worker 1 held past two shared runs: the caller does all their items and
 * closes worker 1's seat, so fn is never called on worker 1 for them (nor
 * with a finished run's arg later); released, it takes a seat in each of
 * the two plain runs that follow, once. (A worker not held may be closed
 * out of a shared run too when it comes late; in plain runs every worker
 * runs fn once.) */
static void test_pool_shared(void **st) {
    (void)st;
    static shared_ctx c[4];
    for (int nth = 2; nth <= 3; nth++) {
        tb_pool_t *pool;
        assert_int_equal(tb_pool_new(nth, &pool), TB_OK);
        static _Atomic int gate;
        atomic_store(&gate, 0);
        atomic_store(&n_log, 0);
        tb_pool_hold_next(pool, 1, &gate);
        for (int r = 0; r < 4; r++) {   /* shared, shared, plain, plain */
            memset(&c[r], 0, sizeof c[r]);
            c[r].id = r + 1;
            if (r == 2) {                  /* release worker 1 between runs: it must not run fn */
                atomic_store(&gate, 1);
                const struct timespec ms20 = {0, 20 * 1000 * 1000};
                nanosleep(&ms20, NULL);
            }
            atomic_store(&cur_id, r + 1);
            if (r < 2) tb_pool_run_shared(pool, shared_worker, &c[r]);
            else tb_pool_run(pool, shared_worker, &c[r]);
            atomic_store(&cur_id, 0);
            (void)shared_check(&c[r], 0);
        }
        int calls[4][3] = {{0}};                  /* [run][ith] */
        const int n = atomic_load(&n_log);
        assert_true(n <= S_LOG);
        for (int i = 0; i < n; i++) {
            assert_int_equal(log_id[i], log_cur[i]);   /* never a finished run's arg */
            calls[log_id[i] - 1][log_ith[i]]++;
        }
        for (int r = 0; r < 4; r++) {
            assert_int_equal(calls[r][0], 1);
            assert_int_equal(calls[r][1], r < 2 ? 0 : 1);
            if (nth == 3 && r >= 2) assert_int_equal(calls[r][2], 1);
        }
        assert_int_equal(shared_check(&c[0], 1) + shared_check(&c[1], 1), 0);
        tb_pool_free(pool);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_caller),
        cmocka_unit_test(test_pool_threads),
        cmocka_unit_test(test_cut_units),
        cmocka_unit_test(test_claimed_prologue),
        cmocka_unit_test(test_pool_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
