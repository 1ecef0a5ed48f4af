/*
 * cpuprobe.c — tb_cpu_probe: the clock each thread's core runs at now.
 *
 * A `% of roofline` figure assumes the cores computed at full speed while
 * memory was the limit. On a shared VM the host can time-slice a vCPU (this
 * project's 2-core VMs have shown one core at 1.4 GHz-equivalent beside
 * the other at 2.5, for minutes), and a phone throttles when hot; a rep
 * run then is arithmetic-bound whatever the kernels are. So `bench` takes
 * this probe beside each bandwidth probe and records it per rep.
 *
 * Each thread of a fresh pool times a chain of dependent integer adds
 * (one per cycle on every core ternbench targets: x86-64 and aarch64 add
 * with one-cycle latency), CHAIN adds per pass, and keeps its best of
 * `reps` passes: adds per nanosecond, the core's effective clock in GHz.
 * An empty asm statement between the adds keeps the compiler from folding
 * the chain. A pass is ~1 ms at 2 GHz.
 */
#include "internal.h"

#include <stdint.h>

#define CHAIN (1 << 21)          /* dependent adds per timed pass */
#define ADDS_PER_STEP 8

typedef struct {
    int reps;
    double ghz[64];
    uint64_t sink[64];
} cpu_probe_t;

/* One timed pass: CHAIN dependent adds; returns the elapsed ns. */
static uint64_t chain_pass(uint64_t *acc) {
    uint64_t x = *acc;
    const uint64_t t0 = tb_now_ns();
    for (uint32_t i = 0; i < CHAIN / ADDS_PER_STEP; i++) {
        /* ADDS_PER_STEP adds, each on the previous one's result */
#define STEP() do { x += i; __asm__ volatile("" : "+r"(x)); } while (0)
        STEP(); STEP(); STEP(); STEP(); STEP(); STEP(); STEP(); STEP();
#undef STEP
    }
    const uint64_t dt = tb_now_ns() - t0;
    *acc = x;
    return dt ? dt : 1;
}

static void run(void *arg, int ith, int nth) {
    cpu_probe_t *c = arg;
    (void)nth;
    uint64_t acc = (uint64_t)ith, best = UINT64_MAX;
    chain_pass(&acc);                                  /* warm-up */
    for (int r = 0; r < c->reps; r++) {
        const uint64_t dt = chain_pass(&acc);
        if (dt < best) best = dt;
    }
    c->ghz[ith] = (double)CHAIN / (double)best;
    c->sink[ith] = acc;
}

int tb_cpu_probe(int n_threads, int reps, double *ghz) {
    if (!ghz || n_threads < 1 || n_threads > 64 || reps < 1)
        return tb_err(TB_ERR_ARG, "tb_cpu_probe: need 1..64 threads and reps >= 1 (got %d threads, %d reps)",
                      n_threads, reps);
    tb_pool_t *pool;
    int rc = tb_pool_new(n_threads, &pool);
    if (rc) return rc;
    cpu_probe_t c = {.reps = reps};
    tb_pool_run(pool, run, &c);
    tb_pool_free(pool);
    volatile uint64_t keep = 0;
    for (int i = 0; i < n_threads; i++) {
        keep += c.sink[i];
        ghz[i] = c.ghz[i];
    }
    (void)keep;
    return TB_OK;
}
