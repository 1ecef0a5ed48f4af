/*
 * test_search.c — the K-quant scale searches (quant/scale_search.h):
 * codes in range, exact recovery of inputs already on a grid, and a real
 * improvement over the plain min/max (resp. max-magnitude) mapping.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "quant/quant.h"
#include "quant/scale_search.h"
#include "quant/rounding.h"
#include "qtest.h"

#include <stdio.h>

/* Plain mapping of [min(x, 0), max(x)] onto 0..nmax: the baseline. */
static double plain_asym_err(int n, int nmax, const float *x) {
    float lo = 0, hi = x[0];
    for (int i = 0; i < n; i++) { lo = fminf(lo, x[i]); hi = fmaxf(hi, x[i]); }
    double s = (hi - lo) / nmax, e = 0;
    for (int i = 0; i < n; i++) {
        double l = nearbyint((x[i] - lo) / s);
        l = l < 0 ? 0 : l > nmax ? nmax : l;
        e += (s * l + lo - x[i]) * (s * l + lo - x[i]);
    }
    return e;
}

static double asym_err(int n, const float *x, const uint8_t *L, float scale, float min) {
    double e = 0;
    for (int i = 0; i < n; i++) e += ((double)scale * L[i] - min - x[i]) * ((double)scale * L[i] - min - x[i]);
    return e;
}

static void test_scale_min(void **state) {
    (void)state;
    qt_rng_t r = {17};
    float x[32], w[32];
    uint8_t L[32], aux[32];
    double e_plain = 0, e_search = 0;
    for (int rep = 0; rep < 2000; rep++) {
        for (int i = 0; i < 32; i++) { x[i] = qt_gauss(&r) + 0.5f; w[i] = 1.0f; }
        float min;
        float scale = tb_search_scale_min(32, 15, x, w, L, &min, aux, -1.0f, 0.1f, 20);
        assert_true(scale > 0);
        assert_true(min >= 0);
        for (int i = 0; i < 32; i++) assert_true(L[i] <= 15);
        double ep = plain_asym_err(32, 15, x), es = asym_err(32, x, L, scale, min);
        assert_true(es <= ep * (1 + 1e-5));   /* never worse than the plain mapping */
        e_plain += ep;
        e_search += es;
    }
    /* least-squares refinement buys a real reduction in squared error */
    printf("# scale_min: squared error search / plain = %.3f\n", e_search / e_plain);
    assert_true(e_search < 0.85 * e_plain);

    /* inputs already on a grid s * L - m are recovered exactly */
    for (int i = 0; i < 32; i++) { L[i] = (uint8_t)(qt_next(&r) % 16); w[i] = 1.0f; }
    L[3] = 0; L[7] = 15;
    for (int i = 0; i < 32; i++) x[i] = 0.25f * L[i] - 1.5f;
    uint8_t Lr[32];
    float min;
    float scale = tb_search_scale_min(32, 15, x, w, Lr, &min, aux, -1.0f, 0.1f, 20);
    assert_true(fabsf(scale - 0.25f) < 1e-6f);
    assert_true(fabsf(min - 1.5f) < 1e-6f);
    assert_memory_equal(Lr, L, 32);

    /* constant block: scale 0, codes 0, min = -x (x < 0) */
    for (int i = 0; i < 32; i++) x[i] = -2.0f;
    scale = tb_search_scale_min(32, 15, x, w, Lr, &min, aux, -1.0f, 0.1f, 20);
    assert_true(scale == 0.0f);
    assert_true(min == 2.0f);
    for (int i = 0; i < 32; i++) assert_int_equal(Lr[i], 0);
}

/* Baseline: scale from the largest magnitude, d = m / -nmax. */
static double plain_sym_err(int n, int nmax, const float *x) {
    float amax = 0, m = 0;
    for (int i = 0; i < n; i++) if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); m = x[i]; }
    double d = m / -nmax, e = 0;
    for (int i = 0; i < n; i++) {
        double l = nearbyint(x[i] / d);
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        e += (d * l - x[i]) * (d * l - x[i]);
    }
    return e;
}

static void test_scale_sym(void **state) {
    (void)state;
    qt_rng_t r = {23};
    float x[16];
    uint8_t L[16];
    double e_plain = 0, e_search = 0, w_plain = 0, w_search = 0;
    for (int rep = 0; rep < 4000; rep++) {
        for (int i = 0; i < 16; i++) x[i] = qt_heavy(&r);
        float scale = tb_search_scale_sym(16, 32, x, L);
        double es = 0, ws = 0;
        for (int i = 0; i < 16; i++) {
            assert_true(L[i] <= 63);
            double diff = (double)scale * (L[i] - 32) - x[i];
            es += diff * diff;
            ws += (double)x[i] * x[i] * diff * diff;
        }
        /* the objective is x^2-weighted: compare that, and plain error loosely */
        float amax = 0, m = 0;
        for (int i = 0; i < 16; i++) if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); m = x[i]; }
        double d = m / -32.0, wp = 0;
        for (int i = 0; i < 16; i++) {
            double l = nearbyint(x[i] / d);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            wp += (double)x[i] * x[i] * (d * l - x[i]) * (d * l - x[i]);
        }
        if (!(ws <= wp * (1 + 1e-4) + 1e-12)) fail_msg("rep %d: weighted err %.9g > plain %.9g", rep, ws, wp);
        e_plain += plain_sym_err(16, 32, x);
        e_search += es;
        w_plain += wp;
        w_search += ws;
    }
    printf("# scale_sym: weighted error search / plain = %.3f, plain error %.3f\n",
           w_search / w_plain, e_search / e_plain);
    assert_true(w_search < 0.9 * w_plain);
    assert_true(e_search < 1.1 * e_plain);

    /* a block already on a grid d * q, q in -32..31, -32 present: exact */
    int8_t q[16];
    for (int i = 0; i < 16; i++) q[i] = (int8_t)((int)(qt_next(&r) % 64) - 32);
    q[5] = -32;
    for (int i = 0; i < 16; i++) x[i] = 0.125f * q[i];
    float scale = tb_search_scale_sym(16, 32, x, L);
    for (int i = 0; i < 16; i++) assert_true(scale * (L[i] - 32) == x[i]);

    /* zero block */
    for (int i = 0; i < 16; i++) x[i] = 0;
    assert_true(tb_search_scale_sym(16, 32, x, L) == 0.0f);
    for (int i = 0; i < 16; i++) assert_int_equal(L[i], 0);
}

/* Rounding helper: nearest integer, ties to even, both signs. */
static void test_nearest_int(void **state) {
    (void)state;
    static const float in[] = {0.0f, -0.0f, 0.4f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f,
                               -0.6f, 63.49f, 127.5f, -128.5f, 1000000.5f};
    static const int want[] = {0, 0, 0, 0, 2, 2, 0, -2, -2, -1, 63, 128, -128, 1000000};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        if (tb_nearest_int(in[i]) != want[i])
            fail_msg("nearest_int(%g) = %d, want %d", in[i], tb_nearest_int(in[i]), want[i]);
    qt_rng_t r = {3};
    for (int i = 0; i < 100000; i++) {
        float f = (float)((qt_uniform(&r) - 0.5) * 2000.0);
        assert_int_equal(tb_nearest_int(f), (int)nearbyintf(f));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nearest_int),
        cmocka_unit_test(test_scale_min),
        cmocka_unit_test(test_scale_sym),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
