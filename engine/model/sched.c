/*
 * sched.c — the dynamic split of one pool pass's work over its threads.
 *
 * Thread k starts with the static range [cut[k], cut[k+1]) of the pass's
 * units (for a linear pass: 16-row groups, balanced by bytes) and claims
 * chunks from its front, so while the threads keep pace each one streams
 * its own range in order, exactly as a static split would. A thread whose
 * range is empty claims chunks from the back of the range with the most
 * units left. So a thread that starts late (its worker was asleep) or
 * streams slower (a hypervisor gave its core less bandwidth) costs the pass
 * about one chunk of imbalance instead of the difference of the halves.
 *
 * A range is one 64-bit word, front << 32 | back, alone on its owner's
 * cache line; every claim is a compare-and-swap on it, uncontended until
 * a thief arrives. front only grows and back only shrinks, each claim
 * moves one of them by at least one unit, so every unit is handed out
 * exactly once.
 *
 * Chunks shrink as a range empties: max(min, left / 4) units, few claims
 * on a long range, small ones near its end where a thief may arrive.
 */
#include "model/model.h"

#include <stdatomic.h>

#define SCHED_DIV 4   /* a claim takes 1/SCHED_DIV of what is left */


static inline uint64_t pack(int64_t f, int64_t b) { return (uint64_t)f << 32 | (uint64_t)b; }
static inline int64_t front_of(uint64_t v) { return (int64_t)(v >> 32); }
static inline int64_t back_of(uint64_t v) { return (int64_t)(v & 0xffffffffu); }

void tb_sched_init(tb_sched_t *s, int nth, const int64_t *cut) {
    for (int k = 0; k < nth; k++) {
        assert(0 <= cut[k] && cut[k] <= cut[k + 1] && cut[k + 1] < ((int64_t)1 << 32));
        atomic_store_explicit(&s[k].fb, pack(cut[k], cut[k + 1]), memory_order_relaxed);
    }
}

/* Take up to n units from the front (own range) or the back (theft) of
 * range r; false when it is empty. */
static bool take(tb_sched_t *r, bool from_front, int64_t min_units, int64_t *u0, int64_t *u1) {
    uint64_t v = atomic_load_explicit(&r->fb, memory_order_acquire);
    for (;;) {
        const int64_t f = front_of(v), b = back_of(v), left = b - f;
        if (left <= 0) return false;
        const int64_t n = TB_MIN(left, TB_MAX(min_units, left / SCHED_DIV));
        const uint64_t nv = from_front ? pack(f + n, b) : pack(f, b - n);
        if (atomic_compare_exchange_weak_explicit(&r->fb, &v, nv, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            *u0 = from_front ? f : b - n;
            *u1 = from_front ? f + n : b;
            return true;
        }
    }
}

bool tb_sched_next(tb_sched_t *s, int ith, int nth, int64_t min_units, int64_t *u0, int64_t *u1) {
    assert(min_units >= 1);
    if (take(&s[ith], true, min_units, u0, u1)) return true;
    for (;;) {      /* steal from the range with the most left */
        int victim = -1;
        int64_t most = 0;
        for (int k = 0; k < nth; k++) {
            const uint64_t v = atomic_load_explicit(&s[k].fb, memory_order_relaxed);
            if (back_of(v) - front_of(v) > most) { most = back_of(v) - front_of(v); victim = k; }
        }
        if (victim < 0) return false;
        if (take(&s[victim], false, min_units, u0, u1)) return true;
    }
}
