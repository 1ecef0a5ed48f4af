/*
 * test_gguf_read.c — the reader on the hand-built fixture (every value
 * type, string arrays, nested arrays, tensors, typed getters) and on the
 * real vocabulary files in $TB_SHARED_DIR/tokenizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf_fixture.h"
#include "ternbench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static tb_gguf_t *open_fixture(const fx_opts_t *o, fx_map_t *m, char **dir) {
    bb_t b;
    fx_build(o, &b, m);
    *dir = fx_mkdtemp();
    char *p = fx_write(*dir, "f.gguf", b.p, b.n);
    bb_free(&b);
    tb_gguf_t *g = NULL;
    int rc = tb_gguf_open(p, &g);
    if (rc) print_error("open %s: %s\n", p, tb_last_error());
    assert_int_equal(rc, TB_OK);
    assert_non_null(g);
    free(p);
    return g;
}

static tb_gguf_value_t get(const tb_gguf_t *g, const char *key) {
    int64_t i = tb_gguf_find_kv(g, key);
    assert_true(i >= 0);
    assert_string_equal(tb_gguf_kv_key(g, i), key);
    tb_gguf_value_t v;
    assert_int_equal(tb_gguf_kv_value(g, i, &v), TB_OK);
    return v;
}

static void assert_str(tb_gguf_value_t v, const char *s) {
    assert_int_equal(v.type, TB_GGUF_STRING);
    assert_int_equal(v.v.str.len, strlen(s));
    if (*s) assert_memory_equal(v.v.str.ptr, s, strlen(s));
}

/* ===================================================================== */
/* Fixture                                                                */
/* ===================================================================== */

static void test_every_value_type(void **state) {
    (void)state;
    fx_map_t m;
    char *dir;
    tb_gguf_t *g = open_fixture(&(fx_opts_t){.alignment = 64}, &m, &dir);

    assert_int_equal(tb_gguf_version(g), 3);
    assert_int_equal(tb_gguf_alignment(g), 64);
    assert_int_equal(tb_gguf_file_size(g), m.size);
    assert_int_equal(tb_gguf_n_kv(g), 21);
    assert_int_equal(tb_gguf_find_kv(g, "no.such.key"), -1);
    assert_null(tb_gguf_kv_key(g, 21));
    tb_gguf_value_t v;
    assert_int_equal(tb_gguf_kv_value(g, 21, &v), TB_ERR_RANGE);
    assert_int_equal(tb_gguf_kv_value(g, -1, &v), TB_ERR_RANGE);

    assert_str(get(g, "general.architecture"), "llama");
    assert_str(get(g, "general.name"), "fixture");
    assert_str(get(g, "fx.empty_str"), "");
    v = get(g, "fx.uint8");   assert_int_equal(v.type, TB_GGUF_UINT8);   assert_int_equal(v.v.u64, 200);
    v = get(g, "fx.int8");    assert_int_equal(v.type, TB_GGUF_INT8);    assert_int_equal(v.v.i64, -100);
    v = get(g, "fx.uint16");  assert_int_equal(v.type, TB_GGUF_UINT16);  assert_int_equal(v.v.u64, 60000);
    v = get(g, "fx.int16");   assert_int_equal(v.type, TB_GGUF_INT16);   assert_int_equal(v.v.i64, -30000);
    v = get(g, "fx.uint32");  assert_int_equal(v.type, TB_GGUF_UINT32);  assert_int_equal(v.v.u64, 4000000000u);
    v = get(g, "fx.int32");   assert_int_equal(v.type, TB_GGUF_INT32);   assert_int_equal(v.v.i64, -2000000000);
    v = get(g, "fx.float32"); assert_int_equal(v.type, TB_GGUF_FLOAT32); assert_true(v.v.f64 == 1.5);
    v = get(g, "fx.bool");    assert_int_equal(v.type, TB_GGUF_BOOL);    assert_int_equal(v.v.u64, 1);
    v = get(g, "fx.uint64");  assert_int_equal(v.type, TB_GGUF_UINT64);  assert_true(v.v.u64 == (1ull << 63) + 5);
    v = get(g, "fx.int64");   assert_int_equal(v.type, TB_GGUF_INT64);   assert_true(v.v.i64 == -(1ll << 62));
    v = get(g, "fx.float64"); assert_int_equal(v.type, TB_GGUF_FLOAT64); assert_true(v.v.f64 == -2.25);

    /* string array, O(1) element access in any order */
    tb_gguf_value_t a = get(g, "fx.arr_str"), e;
    assert_int_equal(a.type, TB_GGUF_ARRAY);
    assert_int_equal(a.v.arr.type, TB_GGUF_STRING);
    assert_int_equal(a.v.arr.n, 3);
    assert_int_equal(tb_gguf_arr_get(g, &a, 2, &e), TB_OK); assert_str(e, "h\xc3\xa9llo");
    assert_int_equal(tb_gguf_arr_get(g, &a, 0, &e), TB_OK); assert_str(e, "alpha");
    assert_int_equal(tb_gguf_arr_get(g, &a, 1, &e), TB_OK); assert_str(e, "");
    assert_int_equal(tb_gguf_arr_get(g, &a, 3, &e), TB_ERR_RANGE);
    assert_int_equal(tb_gguf_arr_get(g, &v, 0, &e), TB_ERR_ARG);   /* not an array */
    tb_gguf_value_t forged = a;
    forged.v.arr.handle = &forged;                                  /* not this file's handle */
    assert_int_equal(tb_gguf_arr_get(g, &forged, 0, &e), TB_ERR_ARG);
    forged.v.arr.handle = (const char *)a.v.arr.handle + 1;         /* inside, misaligned */
    assert_int_equal(tb_gguf_arr_get(g, &forged, 0, &e), TB_ERR_ARG);

    /* nested: [[1, 2], [3], []] of uint16 */
    a = get(g, "fx.nested");
    assert_int_equal(a.v.arr.type, TB_GGUF_ARRAY);
    assert_int_equal(a.v.arr.n, 3);
    const uint64_t want_n[3] = {2, 1, 0};
    uint64_t next = 1;
    for (uint64_t i = 0; i < 3; i++) {
        tb_gguf_value_t in;
        assert_int_equal(tb_gguf_arr_get(g, &a, i, &in), TB_OK);
        assert_int_equal(in.type, TB_GGUF_ARRAY);
        assert_int_equal(in.v.arr.type, TB_GGUF_UINT16);
        assert_int_equal(in.v.arr.n, want_n[i]);
        for (uint64_t k = 0; k < in.v.arr.n; k++) {
            assert_int_equal(tb_gguf_arr_get(g, &in, k, &e), TB_OK);
            assert_int_equal(e.type, TB_GGUF_UINT16);
            assert_int_equal(e.v.u64, next++);
        }
        assert_int_equal(tb_gguf_arr_get(g, &in, in.v.arr.n, &e), TB_ERR_RANGE);
    }

    /* nested strings: [["x", "yz"], []] */
    a = get(g, "fx.nested_str");
    tb_gguf_value_t in;
    assert_int_equal(tb_gguf_arr_get(g, &a, 0, &in), TB_OK);
    assert_int_equal(in.v.arr.type, TB_GGUF_STRING);
    assert_int_equal(tb_gguf_arr_get(g, &in, 1, &e), TB_OK); assert_str(e, "yz");
    assert_int_equal(tb_gguf_arr_get(g, &in, 0, &e), TB_OK); assert_str(e, "x");
    assert_int_equal(tb_gguf_arr_get(g, &a, 1, &in), TB_OK);
    assert_int_equal(in.v.arr.n, 0);

    a = get(g, "fx.arr_f32");
    const double fs[3] = {0.5, -1.0, 3.0};
    for (uint64_t i = 0; i < 3; i++) {
        assert_int_equal(tb_gguf_arr_get(g, &a, i, &e), TB_OK);
        assert_int_equal(e.type, TB_GGUF_FLOAT32);
        assert_true(e.v.f64 == fs[i]);
    }
    a = get(g, "fx.arr_empty");
    assert_int_equal(a.v.arr.type, TB_GGUF_INT64);
    assert_int_equal(a.v.arr.n, 0);

    tb_gguf_close(g);
    fx_rmtree(dir);
}

static void test_tensors(void **state) {
    (void)state;
    const uint32_t aligns[] = {0, 8, 32, 64, 4096};
    for (size_t ai = 0; ai < sizeof aligns / sizeof *aligns; ai++) {
        fx_map_t m;
        char *dir;
        tb_gguf_t *g = open_fixture(&(fx_opts_t){.alignment = aligns[ai]}, &m, &dir);
        assert_int_equal(tb_gguf_alignment(g), m.alignment);
        assert_int_equal(tb_gguf_data_offset(g), m.data_off);
        assert_int_equal(tb_gguf_data_offset(g) % m.alignment, 0);
        assert_int_equal(tb_gguf_n_tensors(g), FX_N_TENSORS);

        tb_gguf_tensor_t t;
        int64_t i = tb_gguf_find_tensor(g, "blk.0.attn_q.weight");
        assert_int_equal(i, 1);
        assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
        assert_string_equal(t.name, "blk.0.attn_q.weight");
        assert_int_equal(t.type, TB_TYPE_Q8_0);
        assert_int_equal(t.n_dims, 2);
        assert_int_equal(t.ne[0], 64);
        assert_int_equal(t.ne[1], 2);
        assert_int_equal(t.ne[2], 1);
        assert_int_equal(t.ne[3], 1);
        assert_int_equal(t.nbytes, tb_type_row_bytes(TB_TYPE_Q8_0, 64) * 2);
        assert_int_equal(tb_gguf_find_tensor(g, "missing"), -1);
        assert_int_equal(tb_gguf_tensor(g, FX_N_TENSORS, &t), TB_ERR_RANGE);

        for (int k = 0; k < FX_N_TENSORS; k++) {
            assert_int_equal(tb_gguf_tensor(g, k, &t), TB_OK);
            assert_int_equal(tb_gguf_find_tensor(g, t.name), k);
            assert_int_equal(t.offset, m.t_offset[k]);
            assert_int_equal(t.nbytes, m.t_nbytes[k]);
            const uint8_t *p = t.data;
            for (uint64_t j = 0; j < t.nbytes; j++)
                if (p[j] != fx_data_byte(t.offset + j)) fail_msg("tensor %d byte %llu", k, (unsigned long long)j);
        }
        tb_gguf_close(g);
        fx_rmtree(dir);
    }
}

static void test_typed_getters(void **state) {
    (void)state;
    fx_map_t m;
    char *dir;
    tb_gguf_t *g = open_fixture(&(fx_opts_t){0}, &m, &dir);
    uint32_t u;
    int64_t i;
    float f;
    bool b;
    char buf[16];

    assert_int_equal(tb_gguf_get_u32(g, "fx.uint32", &u), TB_OK); assert_int_equal(u, 4000000000u);
    assert_int_equal(tb_gguf_get_u32(g, "fx.uint8", &u), TB_OK);  assert_int_equal(u, 200);
    assert_int_equal(tb_gguf_get_u32(g, "fx.small_i32", &u), TB_OK); assert_int_equal(u, 7);
    assert_int_equal(tb_gguf_get_u32(g, "fx.int8", &u), TB_ERR_FORMAT);     /* negative */
    assert_int_equal(tb_gguf_get_u32(g, "fx.uint64", &u), TB_ERR_FORMAT);   /* too large */
    assert_int_equal(tb_gguf_get_u32(g, "fx.float32", &u), TB_ERR_FORMAT);
    assert_int_equal(tb_gguf_get_u32(g, "fx.bool", &u), TB_ERR_FORMAT);
    assert_non_null(strstr(tb_last_error(), "fx.bool"));
    assert_int_equal(tb_gguf_get_u32(g, "nope", &u), TB_ERR_NOT_FOUND);
    assert_non_null(strstr(tb_last_error(), "nope"));

    assert_int_equal(tb_gguf_get_i64(g, "fx.int64", &i), TB_OK);  assert_true(i == -(1ll << 62));
    assert_int_equal(tb_gguf_get_i64(g, "fx.int16", &i), TB_OK);  assert_int_equal(i, -30000);
    assert_int_equal(tb_gguf_get_i64(g, "fx.uint32", &i), TB_OK); assert_int_equal(i, 4000000000ll);
    assert_int_equal(tb_gguf_get_i64(g, "fx.uint64", &i), TB_ERR_FORMAT);   /* > INT64_MAX */
    assert_int_equal(tb_gguf_get_i64(g, "general.name", &i), TB_ERR_FORMAT);

    assert_int_equal(tb_gguf_get_f32(g, "fx.float32", &f), TB_OK); assert_true(f == 1.5f);
    assert_int_equal(tb_gguf_get_f32(g, "fx.float64", &f), TB_OK); assert_true(f == -2.25f);
    assert_int_equal(tb_gguf_get_f32(g, "fx.uint8", &f), TB_ERR_FORMAT);

    assert_int_equal(tb_gguf_get_bool(g, "fx.bool", &b), TB_OK); assert_true(b);
    assert_int_equal(tb_gguf_get_bool(g, "fx.uint8", &b), TB_ERR_FORMAT);

    assert_int_equal(tb_gguf_get_str(g, "general.name", buf, sizeof buf), TB_OK);
    assert_string_equal(buf, "fixture");
    assert_int_equal(tb_gguf_get_str(g, "general.name", buf, 7), TB_ERR_RANGE);   /* no room for NUL */
    assert_int_equal(tb_gguf_get_str(g, "general.name", buf, 8), TB_OK);
    assert_int_equal(tb_gguf_get_str(g, "fx.empty_str", buf, 1), TB_OK);
    assert_string_equal(buf, "");
    assert_int_equal(tb_gguf_get_str(g, "fx.uint8", buf, sizeof buf), TB_ERR_FORMAT);
    assert_int_equal(tb_gguf_get_str(g, "missing", buf, sizeof buf), TB_ERR_NOT_FOUND);

    tb_gguf_close(g);
    fx_rmtree(dir);
}

static void test_version2_and_names(void **state) {
    (void)state;
    fx_map_t m;
    char *dir;
    tb_gguf_t *g = open_fixture(&(fx_opts_t){.version = 2}, &m, &dir);
    assert_int_equal(tb_gguf_version(g), 2);
    assert_int_equal(tb_gguf_n_tensors(g), FX_N_TENSORS);
    assert_non_null(strstr(tb_gguf_path(g), "f.gguf"));
    tb_gguf_close(g);
    fx_rmtree(dir);

    assert_string_equal(tb_gguf_vtype_name(TB_GGUF_UINT32), "uint32");
    assert_string_equal(tb_gguf_vtype_name(TB_GGUF_ARRAY), "array");
    assert_string_equal(tb_gguf_vtype_name(TB_GGUF_FLOAT64), "float64");
    assert_string_equal(tb_gguf_vtype_name((tb_gguf_vtype_t)99), "?");
    tb_gguf_close(NULL);
}

static void test_open_missing(void **state) {
    (void)state;
    tb_gguf_t *g = (tb_gguf_t *)1;
    assert_int_equal(tb_gguf_open("/nonexistent/dir/x.gguf", &g), TB_ERR_IO);
    assert_null(g);
    assert_non_null(strstr(tb_last_error(), "/nonexistent/dir/x.gguf"));
    char *dir = fx_mkdtemp();
    assert_int_equal(tb_gguf_open(dir, &g), TB_ERR_IO);   /* a directory */
    fx_rmtree(dir);
}

/* ===================================================================== */
/* Real vocabulary files                                                  */
/* ===================================================================== */

/* Open $TB_SHARED_DIR/tokenizer/NAME, or skip when the folder is absent. */
static tb_gguf_t *open_shared(const char *name) {
    const char *sd = getenv("TB_SHARED_DIR");
    char p[4096];
    snprintf(p, sizeof p, "%s/tokenizer", sd ? sd : "../shared");
    if (access(p, R_OK) != 0) {
        print_message("skipping: %s is absent (no shared reference data)\n", p);
        return NULL;
    }
    snprintf(p, sizeof p, "%s/tokenizer/%s", sd ? sd : "../shared", name);
    tb_gguf_t *g = NULL;
    int rc = tb_gguf_open(p, &g);
    if (rc) print_error("%s\n", tb_last_error());
    assert_int_equal(rc, TB_OK);
    return g;
}

static void check_vocab(const char *file, const char *model, uint64_t n_vocab) {
    tb_gguf_t *g = open_shared(file);
    if (!g) { skip(); return; }
    char buf[64];
    assert_int_equal(tb_gguf_get_str(g, "tokenizer.ggml.model", buf, sizeof buf), TB_OK);
    assert_string_equal(buf, model);
    assert_int_equal(tb_gguf_n_tensors(g), 0);
    tb_gguf_value_t toks = get(g, "tokenizer.ggml.tokens");
    assert_int_equal(toks.v.arr.type, TB_GGUF_STRING);
    assert_int_equal(toks.v.arr.n, n_vocab);
    tb_gguf_value_t types = get(g, "tokenizer.ggml.token_type");
    assert_int_equal(types.v.arr.n, n_vocab);
    uint64_t total = 0;
    for (uint64_t i = 0; i < n_vocab; i++) {
        tb_gguf_value_t e;
        assert_int_equal(tb_gguf_arr_get(g, &toks, i, &e), TB_OK);
        assert_int_equal(e.type, TB_GGUF_STRING);
        total += e.v.str.len;
    }
    assert_true(total >= n_vocab);           /* tokens are non-empty on average */
    assert_true(total < tb_gguf_file_size(g));
    uint32_t bos;
    assert_int_equal(tb_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &bos), TB_OK);
    assert_true(bos < n_vocab);
    tb_gguf_close(g);
}

static void test_shared_gpt2(void **state) {
    (void)state;
    check_vocab("ggml-vocab-gpt-2.gguf", "gpt2", 50257);
}

static void test_shared_llama_spm(void **state) {
    (void)state;
    check_vocab("ggml-vocab-llama-spm.gguf", "llama", 32000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_value_type),
        cmocka_unit_test(test_tensors),
        cmocka_unit_test(test_typed_getters),
        cmocka_unit_test(test_version2_and_names),
        cmocka_unit_test(test_open_missing),
        cmocka_unit_test(test_shared_gpt2),
        cmocka_unit_test(test_shared_llama_spm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
