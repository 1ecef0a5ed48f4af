/*
 * bandwidth.c — tb_bandwidth_probe: the read-bandwidth roofline.
 *
 * Streams a buffer much larger than the last-level cache with n threads,
 * each summing the 64-bit words of its contiguous slice with the widest
 * loads the best kernel tier has (the sum is kept, so reads cannot be
 * elided). The buffer is first touched by the thread that reads it and
 * lives in transparent huge pages, as the model weights do (hugemem.c).
 * Reports the best of `reps` timed passes after one untimed pass.
 */
#include "internal.h"
#include "kernels/kernels.h"

#include <string.h>

typedef struct {
    uint8_t *buf;            /* (bytes) */
    size_t bytes;
    tb_read_sum_fn sum;
    uint64_t sink[64];       /* per-thread results, kept */
    bool touch;
} probe_t;

static void slice(const probe_t *p, int ith, int nth, size_t *b, size_t *e) {
    size_t lines = p->bytes / 64;
    *b = lines * (size_t)ith / (size_t)nth * 64;
    *e = lines * (size_t)(ith + 1) / (size_t)nth * 64;
}

static void run(void *arg, int ith, int nth) {
    probe_t *p = arg;
    size_t b, e;
    slice(p, ith, nth, &b, &e);
    if (p->touch) memset(p->buf + b, ith + 1, e - b);
    p->sink[ith & 63] += p->sum(p->buf + b, e - b);
}

int tb_bandwidth_probe(int n_threads, size_t bytes, int reps, double *gbps) {
    if (!gbps || n_threads < 1 || n_threads > 64 || reps < 1 || bytes < (1u << 20))
        return tb_err(TB_ERR_ARG, "tb_bandwidth_probe: need 1..64 threads, reps >= 1 and >= 1 MiB "
                      "(got %d threads, %d reps, %zu bytes)", n_threads, reps, bytes);
    *gbps = 0;
    bytes &= ~(size_t)(64 * 64 - 1);
    tb_pool_t *pool;
    int rc = tb_pool_new(n_threads, &pool);
    if (rc) return rc;
    probe_t p = {.buf = tb_huge_alloc(bytes), .bytes = bytes,
                 .sum = tb_kernels_for(tb_isa_best())->read_sum, .touch = true};
    if (!p.buf) {
        tb_pool_free(pool);
        return tb_err(TB_ERR_NOMEM, "tb_bandwidth_probe: cannot allocate %zu bytes", bytes);
    }
    tb_pool_run(pool, run, &p);          /* first touch + warm-up */
    p.touch = false;
    uint64_t best_ns = UINT64_MAX;
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = tb_now_ns();
        tb_pool_run(pool, run, &p);
        uint64_t dt = tb_now_ns() - t0;
        if (dt < best_ns) best_ns = dt;
    }
    volatile uint64_t keep = 0;
    for (int i = 0; i < 64; i++) keep += p.sink[i];
    (void)keep;
    tb_huge_free(p.buf);
    tb_pool_free(pool);
    *gbps = (double)bytes / (double)(best_ns ? best_ns : 1);
    return TB_OK;
}
