/*
 * kern_rng.h — seeded test helpers shared by the kernel suites: a
 * splitmix64 stream (each file defines KERN_RNG_SEED before including, so
 * every suite keeps its own reproducible sequence) and a checked malloc.
 */
#ifndef TB_TESTS_KERN_RNG_H
#define TB_TESTS_KERN_RNG_H

#include <stdint.h>
#include <stdlib.h>

#ifndef KERN_RNG_SEED
#error "define KERN_RNG_SEED before including kern_rng.h"
#endif

static uint64_t rng_s = KERN_RNG_SEED;
static uint64_t rnd(void) {
    uint64_t z = (rng_s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [-1, 1). */
static float frand(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }
/* Uniform integer in [lo, hi]. */
static int irand(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }

static void *xalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    return p;
}

#endif
