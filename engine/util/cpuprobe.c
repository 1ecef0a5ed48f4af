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
 *
 * tb_cpu_probe_vec is its companion for the vector units. A dependent
 * chain runs at full speed on a core whose SIMD pipes another hardware
 * thread (a host's SMT sibling, running another tenant's vector code)
 * takes half of, and the kernels, whose decode and prefill are vector
 * arithmetic, do not: a 2-vCPU AMD EPYC (Zen 4) KVM guest has run for
 * seconds at a time with its vector throughput at 35-60 % while the add
 * chain read its usual 2.8 GHz (~9 ms samples of each; docs/method.md,
 * "Vector units shared"). So
 * each thread times VCHAINS independent chains of 16-byte integer
 * multiply-adds (GCC vector extensions: SSE2 pmullw/paddw on x86-64, NEON
 * mul/add on aarch64; enough chains to cover the multiply's latency, so
 * the pipes' issue rate bounds the pass) and keeps its best of `reps`
 * passes: vector ops per nanosecond.
 */
#include "internal.h"

#include <stdint.h>

#define CHAIN (1 << 21)          /* dependent adds per timed pass */
#define ADDS_PER_STEP 8

/* A timed pass: runs its loop on *state (seeded per thread, left as a
 * sink so the work cannot be elided) and returns the elapsed ns. */
typedef uint64_t (*pass_fn)(uint64_t *state);

typedef struct {
    pass_fn pass;
    double ops;         /* per pass: adds (tb_cpu_probe) or vector ops (tb_cpu_probe_vec) */
    int reps;
    double rate[64];    /* ops per ns of each thread's best pass */
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

/* ---------------------------------------------------------------------- */
/* Vector throughput                                                        */
/* ---------------------------------------------------------------------- */

#define VCHAINS 12              /* independent chains: 12 + 2 constants fit x86-64's 16 XMM */
#define VSTEPS (1 << 18)        /* steps per timed pass: 2 * VCHAINS * VSTEPS vector ops */

typedef uint16_t v8u16 __attribute__((vector_size(16)));   /* unsigned: the products wrap, defined */

#if defined(__x86_64__) || defined(__i386__)
#define VKEEP(v) __asm__ volatile("" : "+x"(v))
#elif defined(__aarch64__)
#define VKEEP(v) __asm__ volatile("" : "+w"(v))
#else
#define VKEEP(v) __asm__ volatile("" : "+m"(v))
#endif

/* One timed pass: VSTEPS steps of v = v * k + c on each chain (a multiply
 * and an add, 8 uint16 lanes, wrapping mod 2^16: any values do), seeded by
 * *state and leaving a lane of the chains there; the elapsed ns. */
static uint64_t vec_pass(uint64_t *state) {
    const v8u16 k = {3, 5, 7, 9, 11, 13, 15, 17}, c = {1, 2, 3, 4, 5, 6, 7, 8};
    v8u16 a0 = k + (uint16_t)*state, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5;
    v8u16 a6 = a0 + 6, a7 = a0 + 7, a8 = a0 + 8, a9 = a0 + 9, a10 = a0 + 10, a11 = a0 + 11;
    const uint64_t t0 = tb_now_ns();
    for (uint32_t i = 0; i < VSTEPS; i++) {
#define VSTEP(v) do { v = v * k + c; VKEEP(v); } while (0)
        VSTEP(a0); VSTEP(a1); VSTEP(a2); VSTEP(a3); VSTEP(a4); VSTEP(a5);
        VSTEP(a6); VSTEP(a7); VSTEP(a8); VSTEP(a9); VSTEP(a10); VSTEP(a11);
#undef VSTEP
    }
    const uint64_t dt = tb_now_ns() - t0;
    const v8u16 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    *state += s[0];
    return dt ? dt : 1;
}

/* ---------------------------------------------------------------------- */
/* Entry points                                                             */
/* ---------------------------------------------------------------------- */

/* Each thread: a warm-up pass, then its best of `reps`. */
static void run(void *arg, int ith, int nth) {
    cpu_probe_t *c = arg;
    (void)nth;
    uint64_t state = (uint64_t)ith, best = UINT64_MAX;
    c->pass(&state);
    for (int r = 0; r < c->reps; r++) {
        const uint64_t dt = c->pass(&state);
        if (dt < best) best = dt;
    }
    c->rate[ith] = c->ops / (double)best;
    c->sink[ith] = state;
}

/* Each of n_threads threads of a fresh pool times `pass` (ops each);
 * out[i] = thread i's ops per ns. */
static int probe(const char *name, pass_fn pass, double ops, int n_threads, int reps, double *out) {
    if (!out || n_threads < 1 || n_threads > 64 || reps < 1)
        return tb_err(TB_ERR_ARG, "%s: need 1..64 threads and reps >= 1 (got %d threads, %d reps)", name,
                      n_threads, reps);
    tb_pool_t *pool;
    int rc = tb_pool_new(n_threads, &pool);
    if (rc) return rc;
    cpu_probe_t c = {.pass = pass, .ops = ops, .reps = reps};
    tb_pool_run(pool, run, &c);
    tb_pool_free(pool);
    volatile uint64_t keep = 0;
    for (int i = 0; i < n_threads; i++) {
        keep += c.sink[i];
        out[i] = c.rate[i];
    }
    (void)keep;
    return TB_OK;
}

int tb_cpu_probe_vec(int n_threads, int reps, double *gops) {
    return probe("tb_cpu_probe_vec", vec_pass, 2.0 * VCHAINS * VSTEPS, n_threads, reps, gops);
}

int tb_cpu_probe(int n_threads, int reps, double *ghz) {
    return probe("tb_cpu_probe", chain_pass, CHAIN, n_threads, reps, ghz);
}
