/*
 * internal.h — helpers shared by every engine translation unit (not public).
 */
#ifndef TB_INTERNAL_H
#define TB_INTERNAL_H

#include "ternbench.h"
#include <assert.h>
#include <sched.h>
#include <stdarg.h>

/* tb_err and tb_err_prefix, the sticky error message, are public
 * (ternbench.h). */

#include "tbutil.h"

/* One step of a busy wait (call with *spins = 0 first): a CPU pause, and
 * after 4000 steps a yield of the CPU, so a waiter that is not the next to
 * run gives its core away. */
static inline void tb_spin_wait(int *spins) {
    if (++*spins > 4000) { sched_yield(); return; }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* tb_pool_run for a shared run: fn's threads claim the work dynamically,
 * so the caller (thread 0) alone can finish all of it. A worker that has
 * not started fn by the time the caller's fn returns skips the run (pool.c,
 * seats), so fn must complete every item on any set of threads that
 * includes thread 0, and must not count on every ith being called. */
void tb_pool_run_shared(tb_pool_t *p, void (*fn)(void *arg, int ith, int nth), void *arg);
/* Test hook: once, worker ith (>= 1) waits for *gate != 0 after it sees
 * the next run and before it takes its seat (a worker that wakes late).
 * Open the gate before tb_pool_free, which joins the worker. */
void tb_pool_hold_next(tb_pool_t *p, int ith, const _Atomic int *gate);

/* Aligned allocation (64 bytes), zeroed; free with tb_free_aligned. */
void *tb_alloc_aligned(size_t n);
void tb_free_aligned(void *p);

/* Anonymous memory, 2 MiB aligned and advised for transparent huge pages
 * (hugemem.c), not zeroed beyond what mmap gives (zero pages). NULL on
 * failure. For weights, KV caches and the bandwidth probe. */
void *tb_huge_alloc(size_t n);
void tb_huge_free(void *p);
/* Prefault [p, p+n) of a file mapping before reading all of it. */
void tb_mapping_populate(const void *p, size_t n);
/* Drop the whole pages inside [p, p+n) of a read-only file mapping from
 * the resident set (the page cache keeps them; a later read refaults). */
void tb_mapping_release(const void *p, size_t n);

#endif
