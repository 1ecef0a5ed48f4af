/*
 * test_siphash.c — SipHash-2-4 against the published test vectors (key
 * 00..0f, message 00..n-1: the paper's appendix gives n = 15; n = 0 and
 * n = 8 are the reference implementation's vectors), the incremental
 * interface against the one-shot one for every split, and the per-process
 * key (stable within a process, not all zero).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/siphash.h"

static const uint64_t KEY[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};

static void test_vectors(void **state) {
    (void)state;
    uint8_t m[64];
    for (int i = 0; i < 64; i++) m[i] = (uint8_t)i;
    assert_int_equal(tb_siphash(KEY, m, 0), 0x726fdb47dd0e0e31ull);
    assert_int_equal(tb_siphash(KEY, m, 8), 0x93f5f5799a932462ull);
    assert_int_equal(tb_siphash(KEY, m, 15), 0xa129ca6149be45e5ull);
}

static void test_incremental_matches(void **state) {
    (void)state;
    uint8_t m[40];
    for (int i = 0; i < 40; i++) m[i] = (uint8_t)(i * 37 + 1);
    for (size_t n = 0; n <= 40; n++) {
        uint64_t want = tb_siphash(KEY, m, n);
        for (size_t a = 0; a <= n; a++)
            for (size_t b = a; b <= n; b++) {
                tb_siphash_t s;
                tb_siphash_init(&s, KEY);
                tb_siphash_update(&s, m, a);
                tb_siphash_update(&s, m + a, b - a);
                tb_siphash_update(&s, m + b, n - b);
                assert_int_equal(tb_siphash_final(&s), want);
            }
    }
}

static void test_process_key(void **state) {
    (void)state;
    const uint64_t *k = tb_hash_key();
    assert_true(k[0] != 0 || k[1] != 0);
    assert_ptr_equal(k, tb_hash_key());
    assert_int_equal(tb_hash_bytes("abc", 3), tb_hash_bytes("abc", 3));
    assert_int_not_equal(tb_hash_bytes("abc", 3), tb_hash_bytes("abd", 3));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_incremental_matches),
        cmocka_unit_test(test_process_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
