/*
 * test_float.c — binary16 and bfloat16 conversions: exhaustive decode,
 * encode against an independent double-precision rounding model, and the
 * edge cases (±0, ±inf, NaN, subnormals, overflow, ties to even).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "quant/quant.h"
#include "qtest.h"

#include <float.h>

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ===================================================================== */
/* binary16                                                               */
/* ===================================================================== */

/* Value of a half by the IEEE formula, computed in double. */
static double half_value(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

/* Every non-special half decodes to its formula value, and encodes back to
 * itself; specials keep their class and sign. */
static void test_fp16_exhaustive_decode(void **state) {
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tb_fp16_to_fp32((tb_fp16_t)h);
        int e = (h >> 10) & 31;
        if (e == 31) {
            if (h & 1023) assert_true(isnan(f));
            else assert_true(isinf(f));
            assert_int_equal(!!signbit(f), h >> 15);
            continue;
        }
        assert_true((double)f == half_value((uint16_t)h));
        assert_int_equal(!!signbit(f), h >> 15);
        assert_int_equal(tb_fp32_to_fp16(f), h);
    }
}

/* Rounding model: round |f| to the half grid in double (ties to even via
 * nearbyint in the default rounding mode), saturating to inf at 65520. */
static double fp16_model(float f) {
    double a = fabs((double)f);
    if (a >= 65520.0) return copysign(INFINITY, f);
    int e;
    frexp(a, &e);                    /* a = frac * 2^e, frac in [0.5, 1) */
    int ulp_exp = (e - 1 < -14 ? -14 : e - 1) - 10;
    double q = nearbyint(ldexp(a, -ulp_exp));
    return copysign(ldexp(q, ulp_exp), f);
}

static void test_fp16_encode_random(void **state) {
    (void)state;
    qt_rng_t r = {42};
    for (int i = 0; i < 200000; i++) {
        /* log-uniform magnitudes from 2^-30 to 2^17: subnormals to overflow */
        float f = (float)ldexp(1.0 + qt_uniform(&r), (int)(qt_next(&r) % 48) - 30);
        if (qt_next(&r) & 1) f = -f;
        double want = fp16_model(f);
        float got = tb_fp16_to_fp32(tb_fp32_to_fp16(f));
        if ((double)got != want) fail_msg("fp16(%a) = %a, want %a", f, got, want);
    }
}

static void test_fp16_edges(void **state) {
    (void)state;
    assert_int_equal(tb_fp32_to_fp16(0.0f), 0x0000);
    assert_int_equal(tb_fp32_to_fp16(-0.0f), 0x8000);
    assert_int_equal(tb_fp32_to_fp16(INFINITY), 0x7c00);
    assert_int_equal(tb_fp32_to_fp16(-INFINITY), 0xfc00);
    uint16_t n = tb_fp32_to_fp16(NAN);
    assert_int_equal(n & 0x7c00, 0x7c00);
    assert_true((n & 0x3ff) != 0);
    /* a NaN whose payload sits only in the low 13 bits must stay NaN */
    n = tb_fp32_to_fp16(from_bits(0xff800001u));
    assert_int_equal(n & 0x7c00, 0x7c00);
    assert_true((n & 0x3ff) != 0);
    assert_int_equal(n >> 15, 1);
    assert_int_equal(tb_fp32_to_fp16(1.0f), 0x3c00);
    assert_int_equal(tb_fp32_to_fp16(-2.0f), 0xc000);
    assert_int_equal(tb_fp32_to_fp16(65504.0f), 0x7bff);          /* largest finite */
    assert_int_equal(tb_fp32_to_fp16(65519.996f), 0x7bff);        /* just below the tie */
    assert_int_equal(tb_fp32_to_fp16(65520.0f), 0x7c00);          /* tie rounds to even: inf */
    assert_int_equal(tb_fp32_to_fp16(1e6f), 0x7c00);
    assert_int_equal(tb_fp32_to_fp16(ldexpf(1, -14)), 0x0400);    /* smallest normal */
    assert_int_equal(tb_fp32_to_fp16(ldexpf(1, -24)), 0x0001);    /* smallest subnormal */
    assert_int_equal(tb_fp32_to_fp16(ldexpf(1, -25)), 0x0000);    /* tie with 0: even */
    assert_int_equal(tb_fp32_to_fp16(-ldexpf(1, -25)), 0x8000);
    assert_int_equal(tb_fp32_to_fp16(ldexpf(1.0001f, -25)), 0x0001);
    assert_int_equal(tb_fp32_to_fp16(ldexpf(3, -25)), 0x0002);    /* 1.5 ulp: tie to even 2 */
    assert_int_equal(tb_fp32_to_fp16(ldexpf(5, -25)), 0x0002);    /* 2.5 ulp: tie to even 2 */
    assert_int_equal(tb_fp32_to_fp16(ldexpf(1023.5f, -24)), 0x0400); /* carries into normal */
    assert_int_equal(tb_fp32_to_fp16(1.0f + ldexpf(1, -11)), 0x3c00);     /* tie: even */
    assert_int_equal(tb_fp32_to_fp16(1.0f + 3 * ldexpf(1, -11)), 0x3c02); /* tie: even */
    assert_int_equal(tb_fp32_to_fp16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3c01);
    assert_int_equal(tb_fp32_to_fp16(2047.0f / 1024.0f * 32768.0f), 0x7bff);
    assert_true(signbit(tb_fp16_to_fp32(0x8000)));
    assert_true(tb_fp16_to_fp32(0x0001) == ldexpf(1, -24));
    assert_true(tb_fp16_to_fp32(0x03ff) == ldexpf(1023, -24));
}

/* ===================================================================== */
/* bfloat16                                                               */
/* ===================================================================== */

static void test_bf16_edges(void **state) {
    (void)state;
    assert_int_equal(tb_fp32_to_bf16(0.0f), 0x0000);
    assert_int_equal(tb_fp32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(tb_fp32_to_bf16(1.0f), 0x3f80);
    assert_int_equal(tb_fp32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(tb_fp32_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(tb_fp32_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80);     /* tie: even */
    assert_int_equal(tb_fp32_to_bf16(1.0f + 3 * ldexpf(1, -8)), 0x3f82); /* tie: even */
    assert_int_equal(tb_fp32_to_bf16(1.0f + ldexpf(1, -8) + ldexpf(1, -20)), 0x3f81);
    assert_int_equal(tb_fp32_to_bf16(FLT_MAX), 0x7f80);                  /* rounds up to inf */
    /* NaNs stay NaN, even when the payload is only in the dropped bits */
    uint16_t n = tb_fp32_to_bf16(from_bits(0x7f800001u));
    assert_int_equal(n & 0x7f80, 0x7f80);
    assert_true((n & 0x7f) != 0);
    assert_true(isnan(tb_bf16_to_fp32(tb_fp32_to_bf16(NAN))));
    /* subnormals are kept, not flushed */
    assert_int_equal(tb_fp32_to_bf16(from_bits(0x00010000u)), 0x0001);
    assert_int_equal(tb_fp32_to_bf16(from_bits(0x80018000u)), 0x8002);  /* tie: even */
    /* exhaustive: every finite bf16 decodes to the float with the same top bits and back */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tb_bf16_to_fp32((tb_bf16_t)h);
        assert_int_equal(bits(f), h << 16);
        if (!isnan(f)) assert_int_equal(tb_fp32_to_bf16(f), h);
    }
}

/* Random floats: bf16 result is one of the two neighbours, the nearer one. */
static void test_bf16_random(void **state) {
    (void)state;
    qt_rng_t r = {7};
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)qt_next(&r) & 0x7effffffu;   /* finite, exp <= 0xfd */
        float f = from_bits(u);
        float lo = from_bits(u & 0xffff0000u), hi = from_bits((u & 0xffff0000u) + 0x10000u);
        float got = tb_bf16_to_fp32(tb_fp32_to_bf16(f));
        double dl = (double)f - lo, dh = (double)hi - f;
        if (dl < dh) assert_true(got == lo);
        else if (dh < dl) assert_true(got == hi);
        else assert_int_equal((bits(got) >> 16) & 1, 0);
    }
}

/* ===================================================================== */
/* Rows and float dot products                                            */
/* ===================================================================== */

static void test_float_rows_and_dots(void **state) {
    (void)state;
    enum { N = 1000 };
    float x[N], a[N], y[N];
    tb_fp16_t h[N];
    tb_bf16_t b[N];
    qt_rng_t r = {3};
    for (int i = 0; i < N; i++) { x[i] = qt_gauss(&r); a[i] = qt_gauss(&r); }

    tb_quantize_row_f16_ref(x, h, N);
    tb_dequantize_row_f16_ref(h, y, N);
    for (int i = 0; i < N; i++) assert_int_equal(h[i], tb_fp32_to_fp16(x[i]));
    /* f16 keeps 11 significant bits: relative error <= 2^-11 for normals */
    for (int i = 0; i < N; i++) assert_true(fabsf(y[i] - x[i]) <= ldexpf(fabsf(x[i]), -11) + ldexpf(1, -25));
    double want = 0, mag = 0;
    for (int i = 0; i < N; i++) { want += (double)y[i] * a[i]; mag += fabs((double)y[i] * a[i]); }
    float s;
    tb_vec_dot_f16_ref(N, &s, h, a);
    assert_true(fabs(s - want) <= 1e-6 * mag);

    tb_quantize_row_bf16_ref(x, b, N);
    tb_dequantize_row_bf16_ref(b, y, N);
    for (int i = 0; i < N; i++) assert_true(fabsf(y[i] - x[i]) <= ldexpf(fabsf(x[i]), -8));
    want = 0, mag = 0;
    for (int i = 0; i < N; i++) { want += (double)y[i] * a[i]; mag += fabs((double)y[i] * a[i]); }
    tb_vec_dot_bf16_ref(N, &s, b, a);
    assert_true(fabs(s - want) <= 1e-6 * mag);

    float c[N];
    tb_quantize_row_f32_ref(x, c, N);
    tb_dequantize_row_f32_ref(c, y, N);
    assert_memory_equal(x, y, sizeof x);
    want = 0, mag = 0;
    for (int i = 0; i < N; i++) { want += (double)x[i] * a[i]; mag += fabs((double)x[i] * a[i]); }
    tb_vec_dot_f32_ref(N, &s, x, a);
    assert_true(fabs(s - want) <= 1e-6 * mag);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_exhaustive_decode),
        cmocka_unit_test(test_fp16_encode_random),
        cmocka_unit_test(test_fp16_edges),
        cmocka_unit_test(test_bf16_edges),
        cmocka_unit_test(test_bf16_random),
        cmocka_unit_test(test_float_rows_and_dots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
