/*
 * pool.c — a persistent thread pool: tb_pool_run(fn) runs fn on every thread
 * (the caller is thread 0) and returns when all are done.
 *
 * Workers spin on a generation counter for up to SPIN_NS before sleeping
 * on a condition variable, so back-to-back runs (one per layer op in
 * decode) cost a few hundred nanoseconds, not a futex round trip: waking a
 * sleeping worker took 40-180 us on the reference VM (an idle vCPU has to
 * be scheduled again), and the gap before a pass can be tens of us (the
 * other thread's tail of a MoE pass, the caller's sampling between tokens).
 * Spinning 20000 loads (~5.5 us there) instead lost to spinning ~0.5 ms
 * in paired runs (ternbench bench -m F -m F, the two sessions' pools
 * alternating the two, llama-1b TQ2_0 and maple-preview, 2026-11-30): the
 * longer spin was faster in 101 of 160 repetitions, the runs' median
 * ratios 0.973-1.054 (most 1.00-1.04).
 *
 * Seats: before it calls fn for run g, worker i takes its seat for that run
 * by a compare-and-swap of seat[i] from g - 1 to g. In a shared run
 * (tb_pool_run_shared: fn's threads claim the work dynamically, so the
 * caller alone can finish all of it) the caller, once its fn returns,
 * closes every seat not yet taken by the same swap, and those workers skip
 * the run: a worker that wakes late (its vCPU descheduled, a core parked)
 * no longer holds the pass for the milliseconds it is away. Every run sets
 * every seat to g exactly once (worker or caller, whoever swaps first),
 * so seat[i] == g - 1 while run g is open; a worker that lost the swap
 * never reads fn or arg, which the caller may already have replaced.
 */
#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <errno.h>
#include <time.h>

#define SPIN_NS 500000ull   /* spin this long on an idle worker before sleeping */
#define SPIN_CHECK 1024     /* loads between clock reads                        */

struct tb_pool {
    int n;                         /* threads including the caller */
    pthread_t *tid;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint gen;               /* bumped for every run          */
    atomic_int pending;            /* workers still running the job */
    atomic_uint *seat;             /* (n) [i]: the last run worker i took or was closed out of */
    _Atomic int32_t *cpu;          /* (n) [i]: the CPU thread i is pinned to, -1 none (placement.c) */
    atomic_bool quit;
    atomic_int hold_ith;           /* test hook (tb_pool_hold_next): the worker that waits */
    const atomic_int *_Atomic hold_gate;   /* for *gate != 0 before taking its next seat */
    void (*fn)(void *, int, int);
    void *arg;
};

typedef struct { tb_pool_t *p; int ith; } worker_arg;

static void sleep_us(long us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void *worker_main(void *va) {
    worker_arg wa = *(worker_arg *)va;
    free(va);
    tb_pool_t *p = wa.p;
    atomic_store(&p->cpu[wa.ith], tb_cpus_pin_thread(wa.ith));
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        uint64_t idle_since = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
            if (++spins < SPIN_CHECK) continue;
            spins = 0;
            const uint64_t now = tb_now_ns();
            if (!idle_since) idle_since = now;
            if (now - idle_since < SPIN_NS) continue;
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
            idle_since = 0;
        }
        seen = g;
        if (atomic_load(&p->quit)) return NULL;
        if (atomic_load_explicit(&p->hold_ith, memory_order_relaxed) == wa.ith) {
            const atomic_int *gate = atomic_load(&p->hold_gate);
            atomic_store(&p->hold_ith, 0);
            while (!atomic_load(gate)) sleep_us(100);
        }
        unsigned open = g - 1;
        if (!atomic_compare_exchange_strong_explicit(&p->seat[wa.ith], &open, g, memory_order_acq_rel,
                                                     memory_order_relaxed))
            continue;   /* the caller closed run g (done without us), or a later run is out */
        p->fn(p->arg, wa.ith, p->n);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
    }
}

int tb_pool_new(int n_threads, tb_pool_t **out) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 512)
        return tb_err(TB_ERR_ARG, "thread count %d out of range 1..512", n_threads);
    tb_pool_t *p = calloc(1, sizeof *p);
    if (!p) return tb_err(TB_ERR_NOMEM, "out of memory for thread pool");
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->tid = calloc((size_t)n_threads, sizeof *p->tid);
    p->seat = calloc((size_t)n_threads, sizeof *p->seat);
    p->cpu = calloc((size_t)n_threads, sizeof *p->cpu);
    if (!p->tid || !p->seat || !p->cpu) {
        free(p->tid);
        free(p->seat);
        free(p->cpu);
        free(p);
        return tb_err(TB_ERR_NOMEM, "out of memory for thread pool");
    }
    for (int i = 0; i < n_threads; i++) {
        atomic_init(&p->seat[i], 0);
        atomic_init(&p->cpu[i], -1);
    }
    /* the caller is thread 0 (of a pool of more than one: a 1-thread pool
     * runs on the caller as it is) */
    if (n_threads > 1) atomic_store(&p->cpu[0], tb_cpus_pin_thread(0));
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa || pthread_create(&p->tid[i], NULL, worker_main, wa ? (wa->p = p, wa->ith = i, wa) : NULL) != 0) {
            free(wa);
            p->n = i;            /* join only what started */
            tb_pool_free(p);
            return tb_err(TB_ERR_NOMEM, "cannot start thread %d of %d", i, n_threads);
        }
    }
    *out = p;
    return TB_OK;
}

int tb_pool_n_threads(const tb_pool_t *p) { return p ? p->n : 1; }

int tb_pool_cpus(const tb_pool_t *p, int32_t *cpus, int cap) {
    const int n = TB_MIN(tb_pool_n_threads(p), cap);
    for (int i = 0; i < n; i++) cpus[i] = p ? atomic_load(&p->cpu[i]) : -1;
    return n;
}

static void pool_run(tb_pool_t *p, void (*fn)(void *arg, int ith, int nth), void *arg, bool shared) {
    if (!p || p->n == 1) { fn(arg, 0, 1); return; }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->n - 1);
    pthread_mutex_lock(&p->mu);
    const unsigned g = atomic_fetch_add_explicit(&p->gen, 1, memory_order_release) + 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    if (shared)     /* the work is done: close the seats nobody took */
        for (int i = 1; i < p->n; i++) {
            unsigned open = g - 1;
            if (atomic_compare_exchange_strong_explicit(&p->seat[i], &open, g, memory_order_acq_rel,
                                                        memory_order_relaxed))
                atomic_fetch_sub_explicit(&p->pending, 1, memory_order_relaxed);
        }
    /* the workers finish within a claim of the caller (the passes share
     * their work dynamically): spin with pauses before yielding */
    for (int spins = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0;)
        tb_spin_wait(&spins);
}

void tb_pool_run(tb_pool_t *p, void (*fn)(void *arg, int ith, int nth), void *arg) {
    pool_run(p, fn, arg, false);
}

void tb_pool_run_shared(tb_pool_t *p, void (*fn)(void *arg, int ith, int nth), void *arg) {
    pool_run(p, fn, arg, true);
}

void tb_pool_hold_next(tb_pool_t *p, int ith, const atomic_int *gate) {
    if (!p || !gate || ith < 1 || ith >= p->n) return;
    atomic_store(&p->hold_gate, gate);
    atomic_store(&p->hold_ith, ith);
}

void tb_pool_free(tb_pool_t *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, true);
    atomic_fetch_add(&p->gen, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->tid);
    free(p->seat);
    free(p->cpu);
    free(p);
}
