/*
 * test_types.c — the public type API: names, parse, geometry, row sizes,
 * and tb_quantize_row / tb_dequantize_row including their error paths.
 * Uses only ternbench.h (plus the internal traits for the pairing check).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ternbench.h"
#include "quant/quant.h"

#include <string.h>

typedef struct { tb_type_t t; const char *name; int64_t blck; size_t bytes; tb_type_t act; } row_t;

/* ggml's geometry of each format (ggml.c type_traits) */
static const row_t table[] = {
    {TB_TYPE_F32, "f32", 1, 4, TB_TYPE_F32},
    {TB_TYPE_F16, "f16", 1, 2, TB_TYPE_F32},
    {TB_TYPE_BF16, "bf16", 1, 2, TB_TYPE_F32},
    {TB_TYPE_Q8_0, "q8_0", 32, 34, TB_TYPE_Q8_0},
    {TB_TYPE_Q4_0, "q4_0", 32, 18, TB_TYPE_Q8_0},
    {TB_TYPE_Q4_K, "q4_k", 256, 144, TB_TYPE_Q8_K},
    {TB_TYPE_Q6_K, "q6_k", 256, 210, TB_TYPE_Q8_K},
    {TB_TYPE_Q8_K, "q8_k", 256, 292, TB_TYPE_Q8_K},
    {TB_TYPE_TQ1_0, "tq1_0", 256, 54, TB_TYPE_Q8_K},
    {TB_TYPE_TQ2_0, "tq2_0", 256, 66, TB_TYPE_Q8_K},
};

static void test_names_and_geometry(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const row_t *r = &table[i];
        assert_true(tb_type_supported((uint32_t)r->t));
        assert_string_equal(tb_type_name(r->t), r->name);
        assert_int_equal(tb_type_block_elems(r->t), r->blck);
        assert_int_equal(tb_type_block_bytes(r->t), r->bytes);
        assert_int_equal(tb_type_row_bytes(r->t, 4096), (size_t)(4096 / r->blck) * r->bytes);
        assert_int_equal(tb_type_row_bytes(r->t, 0), 0);
        if (r->blck > 1) assert_int_equal(tb_type_row_bytes(r->t, r->blck + 1), 0);
        assert_int_equal(tb_type_traits(r->t)->vec_dot_type, r->act);

        /* parse: exact, upper-case, mixed case */
        tb_type_t t = TB_TYPE_COUNT;
        assert_int_equal(tb_type_from_name(r->name, &t), TB_OK);
        assert_int_equal(t, r->t);
        char up[16];
        size_t n = strlen(r->name);
        for (size_t k = 0; k <= n; k++) up[k] = (char)(r->name[k] >= 'a' && r->name[k] <= 'z' ? r->name[k] - 32 : r->name[k]);
        t = TB_TYPE_COUNT;
        assert_int_equal(tb_type_from_name(up, &t), TB_OK);
        assert_int_equal(t, r->t);
    }
    tb_type_t t;
    assert_int_equal(tb_type_from_name("Q4_K", &t), TB_OK);
    assert_int_equal(t, TB_TYPE_Q4_K);
}

static void test_unsupported(void **state) {
    (void)state;
    /* ggml ids we do not implement: q4_1 = 3, q5_0 = 6, q2_K = 10, iq2_xxs = 16 */
    static const uint32_t missing[] = {3, 6, 10, 16, TB_TYPE_COUNT, 1000};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        assert_false(tb_type_supported(missing[i]));
        assert_string_equal(tb_type_name((tb_type_t)missing[i]), "?");
        assert_int_equal(tb_type_block_bytes((tb_type_t)missing[i]), 0);
        assert_int_equal(tb_type_row_bytes((tb_type_t)missing[i], 256), 0);
    }
    tb_type_t t = TB_TYPE_F32;
    tb_clear_error();
    assert_int_equal(tb_type_from_name("q5_0", &t), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "q5_0"));
    assert_int_equal(tb_type_from_name("", &t), TB_ERR_ARG);
    assert_int_equal(tb_type_from_name("q4_K_M", &t), TB_ERR_ARG);
    assert_int_equal(t, TB_TYPE_F32);   /* untouched on failure */

    float x[256] = {0};
    uint8_t buf[512];
    tb_clear_error();
    assert_int_equal(tb_quantize_row((tb_type_t)3, x, buf, 32), TB_ERR_UNSUPPORTED);
    assert_true(strlen(tb_last_error()) > 0);
    assert_int_equal(tb_dequantize_row((tb_type_t)3, buf, x, 32), TB_ERR_UNSUPPORTED);
    /* length not a multiple of the block */
    tb_clear_error();
    assert_int_equal(tb_quantize_row(TB_TYPE_Q4_0, x, buf, 48), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "48"));
    assert_int_equal(tb_dequantize_row(TB_TYPE_Q6_K, buf, x, 128), TB_ERR_ARG);
    assert_int_equal(tb_quantize_row(TB_TYPE_Q8_0, x, buf, -32), TB_ERR_ARG);
}

/* tb_quantize_row / tb_dequantize_row run the reference functions: a row
 * through the public API equals the row through the traits, byte for byte. */
static void test_row_api(void **state) {
    (void)state;
    enum { N = 512 };
    float x[N], y[N], z[N];
    for (int i = 0; i < N; i++) x[i] = (float)((i * 37) % 101 - 50) / 17.0f;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        tb_type_t t = table[i].t;
        size_t nb = tb_type_row_bytes(t, N);
        assert_true(nb > 0 && nb <= N * 4);
        uint8_t a[N * 4], b[N * 4];
        memset(a, 0xa5, sizeof a);
        memset(b, 0x5a, sizeof b);
        assert_int_equal(tb_quantize_row(t, x, a, N), TB_OK);
        tb_type_traits(t)->from_float_ref(x, b, N);
        assert_memory_equal(a, b, nb);
        /* nothing written past the row */
        for (size_t k = nb; k < sizeof a; k++) assert_int_equal(a[k], 0xa5);
        assert_int_equal(tb_dequantize_row(t, a, y, N), TB_OK);
        tb_type_traits(t)->to_float_ref(b, z, N);
        assert_memory_equal(y, z, sizeof y);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_geometry),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_row_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
