/*
 * test_isa.c — dispatch: the active tier follows TB_ISA (set per test in
 * meson.build via argv[1], including values above this CPU's best and invalid ones)
 * and tb_isa_set(); names round-trip; unavailable tiers are refused. The
 * software prefetch distance follows TB_PREFETCH (argv[2]; refused values
 * leave the CPU's default) and tb_prefetch_set(), which refuses what is
 * not 0 or a multiple of 64 up to TB_PREFETCH_MAX. The i8mm tier's choice
 * per format between SMMLA and SDOT (tb_i8mm_choose) on injected timings:
 * the faster path per format, ties and failed timings to SDOT, the
 * smmla / sdot overrides, a bad mode refused; and the features string
 * that names the choice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/kernels.h"

/* The tier TB_ISA should have produced: the named tier if available, else
 * the highest available one below it; best if unset or unknown. */
static tb_isa_t expected_from_env(void) {
    const char *env = getenv("TB_ISA");
    tb_isa_t cap;
    if (!env || !*env || tb_isa_from_name(env, &cap) != TB_OK) return tb_isa_best();
    if (cap > tb_isa_best()) cap = tb_isa_best();
    while (!tb_kernels_for(cap)) cap--;
    return cap;
}

static void test_env_cap(void **state) {
    (void)state;
    tb_isa_t want = expected_from_env();
    assert_int_equal(tb_isa_active(), want);
    assert_int_equal(tb_kernels()->isa, want);
    const char *env = getenv("TB_ISA");
    /* an explicit, available tier is taken exactly */
    tb_isa_t named;
    if (env && tb_isa_from_name(env, &named) == TB_OK && tb_kernels_for(named))
        assert_int_equal(tb_isa_active(), named);
}

static void test_set(void **state) {
    (void)state;
    tb_isa_t best = tb_isa_best();
    assert_int_equal(tb_isa_set(TB_ISA_REF), TB_OK);
    assert_int_equal(tb_isa_active(), TB_ISA_REF);
    assert_ptr_equal(tb_kernels(), tb_kernels_for(TB_ISA_REF));
    assert_string_equal(tb_isa_features(), "");
    for (int isa = 0; isa <= TB_ISA_LAST; isa++) {
        int rc = tb_isa_set((tb_isa_t)isa);
        if (tb_kernels_for((tb_isa_t)isa)) {
            assert_int_equal(rc, TB_OK);
            assert_int_equal(tb_isa_active(), isa);
            assert_true(isa <= (int)best);
        } else {
            assert_int_equal(rc, TB_ERR_UNSUPPORTED);
            assert_non_null(strstr(tb_last_error(), tb_isa_name((tb_isa_t)isa)));
        }
    }
    assert_int_equal(tb_isa_set((tb_isa_t)99), TB_ERR_UNSUPPORTED);
    assert_int_equal(tb_isa_set(best), TB_OK);
    assert_int_equal(tb_isa_active(), best);
#if defined(__x86_64__)
    if (best >= TB_ISA_AVX2) assert_non_null(strstr(tb_isa_features(), "avx"));
    if (best == TB_ISA_AVX512) {   /* the features recorded are the ones this CPU has and the tier uses */
        const char *f = tb_isa_features();
        assert_int_equal(strstr(f, "avx512vnni") != NULL, tb_cpu.avx512vnni);
        assert_int_equal(strstr(f, "avx512vbmi") != NULL, tb_cpu.avx512vnni && tb_cpu.avx512vbmi);
        assert_int_equal(strstr(f, "avx512bf16") != NULL, tb_cpu.avx512bf16);   /* the tier is built with -mavx512bf16 */
    }
#endif
}

static void test_i8mm_choose(void **state) {
    (void)state;
    bool use[TB_I8MM_N];
    /* Q8_0 faster with SMMLA, Q4_0 slower (as on cores where SMMLA loses), TQ2_0 a tie */
    const double sdot[TB_I8MM_N] = {1000, 800, 500}, mm[TB_I8MM_N] = {600, 900, 500};
    assert_int_equal(tb_i8mm_choose(NULL, sdot, mm, use), TB_OK);
    assert_true(use[0]);
    assert_false(use[1]);
    assert_false(use[2]);
    assert_int_equal(tb_i8mm_choose("auto", mm, sdot, use), TB_OK);   /* swapped: the other way */
    assert_false(use[0]);
    assert_true(use[1]);
    assert_false(use[2]);
    const double failed[TB_I8MM_N] = {-1, 0, 100};    /* a timing that did not run never wins */
    assert_int_equal(tb_i8mm_choose("", sdot, failed, use), TB_OK);
    assert_false(use[0]);
    assert_false(use[1]);
    assert_true(use[2]);
    assert_int_equal(tb_i8mm_choose("", failed, mm, use), TB_OK);
    assert_false(use[0]);
    assert_false(use[1]);
    assert_false(use[2]);
    assert_int_equal(tb_i8mm_choose("SMMLA", sdot, mm, use), TB_OK);
    for (int i = 0; i < TB_I8MM_N; i++) assert_true(use[i]);
    assert_int_equal(tb_i8mm_choose("sdot", sdot, mm, use), TB_OK);
    for (int i = 0; i < TB_I8MM_N; i++) assert_false(use[i]);
    assert_int_equal(tb_i8mm_choose("fast", sdot, mm, use), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "fast"));
    assert_true(use[0] && !use[1] && !use[2]);   /* as auto */
    char buf[96];
    tb_i8mm_describe(use, buf, sizeof buf);
    assert_string_equal(buf, "neon,dotprod,i8mm(gemm q8_0:smmla q4_0:sdot tq2_0:sdot)");
    tb_i8mm_describe(use, buf, 20);   /* cut, still a string */
    assert_int_equal(strlen(buf), 19);
}

static void test_names(void **state) {
    (void)state;
    for (int isa = 0; isa <= TB_ISA_NEON; isa++) {
        tb_isa_t back;
        assert_int_equal(tb_isa_from_name(tb_isa_name((tb_isa_t)isa), &back), TB_OK);
        assert_int_equal(back, isa);
    }
    tb_isa_t x;
    assert_int_equal(tb_isa_from_name("AVX2", &x), TB_OK);
    assert_int_equal(x, TB_ISA_AVX2);
    assert_int_equal(tb_isa_from_name("sse9", &x), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "sse9"));
}

/* The prefetch distance TB_PREFETCH should have produced: a decimal
 * multiple of 64 up to TB_PREFETCH_MAX, else the CPU's default. */
static void test_prefetch_env(void **state) {
    (void)state;
    const char *env = getenv("TB_PREFETCH");
    const size_t def = tb_prefetch_default();
    assert_true(def % 64 == 0 && def <= TB_PREFETCH_MAX);
    size_t want = def;
    if (env && *env && strspn(env, "0123456789") == strlen(env)) {
        const unsigned long long v = strtoull(env, NULL, 10);
        if (v % 64 == 0 && v <= TB_PREFETCH_MAX) want = (size_t)v;
    }
    assert_int_equal(tb_prefetch_bytes(), want);
}

static void test_prefetch_set(void **state) {
    (void)state;
    const size_t before = tb_prefetch_bytes();
    static const size_t bad[] = {1, 63, 100, TB_PREFETCH_MAX + 64, (size_t)-64};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tb_prefetch_set(bad[i]), TB_ERR_ARG);
        assert_non_null(strstr(tb_last_error(), "prefetch distance"));
        assert_int_equal(tb_prefetch_bytes(), before);   /* a refused value changes nothing */
    }
    static const size_t good[] = {0, 64, 8192, TB_PREFETCH_MAX};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(tb_prefetch_set(good[i]), TB_OK);
        assert_int_equal(tb_prefetch_bytes(), good[i]);
    }
    assert_int_equal(tb_prefetch_set(before), TB_OK);
}

int main(int argc, char **argv) {
    /* argv[1]: the TB_ISA value under test ("unset" leaves it unset);
     * argv[2], if given: the TB_PREFETCH value, the same way */
    if (argc > 1 && strcmp(argv[1], "unset") != 0) setenv("TB_ISA", argv[1], 1);
    else unsetenv("TB_ISA");
    if (argc > 2 && strcmp(argv[2], "unset") != 0) setenv("TB_PREFETCH", argv[2], 1);
    else unsetenv("TB_PREFETCH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_cap),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_i8mm_choose),
        cmocka_unit_test(test_prefetch_env),
        cmocka_unit_test(test_prefetch_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
