/*
 * qtest.h — helpers for the quant tests: a seeded generator and the error
 * measures the budgets are stated in. Header-only, test-private.
 */
#ifndef TB_QTEST_H
#define TB_QTEST_H

#include <math.h>
#include <stdint.h>

/* splitmix64: small, seeded, identical on every platform. */
typedef struct { uint64_t s; } qt_rng_t;

static inline uint64_t qt_next(qt_rng_t *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static inline double qt_uniform(qt_rng_t *r) {
    return ((double)(qt_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal (Box-Muller). */
static inline float qt_gauss(qt_rng_t *r) {
    double u = qt_uniform(r), v = qt_uniform(r);
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* Heavy-tailed: Student-t with 3 degrees of freedom (finite variance,
 * frequent outliers several sigma out — like real weight matrices). */
static inline float qt_heavy(qt_rng_t *r) {
    double z = qt_gauss(r), c = 0;
    for (int k = 0; k < 3; k++) { double g = qt_gauss(r); c += g * g; }
    return (float)(z / sqrt(c / 3.0));
}

/* RMS(x - y) / RMS(x) over n values. */
static inline double qt_rel_rmse(const float *x, const float *y, int64_t n) {
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        e += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        s += (double)x[i] * x[i];
    }
    return s > 0 ? sqrt(e / s) : sqrt(e);
}

#endif
