/*
 * test_gguf_hostile.c — the reader against broken and malicious files:
 * every truncation, absurd counts and lengths, bad offsets, bad alignment,
 * unknown types, bad shapes, duplicates, and a seeded byte-flip fuzz loop.
 * Each must fail with TB_ERR_FORMAT (or TB_ERR_IO) and a message naming
 * the offset — never crash, never read outside the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf_fixture.h"
#include "ternbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static char *g_dir;

static int setup(void **state) {
    (void)state;
    g_dir = fx_mkdtemp();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    fx_rmtree(g_dir);
    return 0;
}

/* Open `n` bytes as a file; return the status (closing on success). The
 * path opened is left in g_path for message checks. */
static char g_path[4096];

static int open_bytes(const void *data, size_t n) {
    int fd = fx_stage(g_dir, "h.gguf", data, n, g_path, sizeof g_path);
    tb_gguf_t *g = (tb_gguf_t *)&g;   /* must be reset to NULL on failure */
    tb_clear_error();
    int rc = tb_gguf_open(g_path, &g);
    if (rc) assert_null(g);
    else tb_gguf_close(g);
    if (fd >= 0) close(fd);
    return rc;
}

/* The variant must fail with TB_ERR_FORMAT, a message with "offset", the
 * file name, and `expect` (if non-NULL). */
static void expect_format(const bb_t *b, const char *expect, const char *what) {
    int rc = open_bytes(b->p, b->n);
    const char *msg = tb_last_error();
    if (rc != TB_ERR_FORMAT) fail_msg("%s: status %d (%s), expected TB_ERR_FORMAT", what, rc, msg);
    if (!strstr(msg, "offset")) fail_msg("%s: message lacks the offset: %s", what, msg);
    if (!strstr(msg, g_path)) fail_msg("%s: message lacks the file name: %s", what, msg);
    if (expect && !strstr(msg, expect)) fail_msg("%s: message lacks '%s': %s", what, expect, msg);
}

static void base(bb_t *b, fx_map_t *m) { fx_build(&(fx_opts_t){.alignment = 32}, b, m); }

/* ===================================================================== */
/* Truncation                                                             */
/* ===================================================================== */

static void test_truncated_everywhere(void **state) {
    (void)state;
    bb_t b;
    fx_map_t m;
    base(&b, &m);
    assert_int_equal(open_bytes(b.p, b.n), TB_OK);   /* the untouched file is valid */
    for (size_t n = 0; n < b.n; n++) {
        int rc = open_bytes(b.p, n);
        const char *msg = tb_last_error();
        if (rc != TB_ERR_FORMAT && rc != TB_ERR_IO)
            fail_msg("truncated to %zu of %zu bytes: status %d (%s)", n, b.n, rc, msg);
        if (!strstr(msg, "offset")) fail_msg("truncated to %zu: message lacks the offset: %s", n, msg);
    }
    bb_free(&b);
}

/* ===================================================================== */
/* Header                                                                 */
/* ===================================================================== */

static void test_bad_header(void **state) {
    (void)state;
    bb_t b;
    fx_map_t m;
    base(&b, &m);
    b.p[0] = 'X';
    expect_format(&b, "magic", "bad magic");
    b.p[0] = 'G';
    bb_patch_u32(&b, 4, 1);
    expect_format(&b, "version 1", "version 1");
    bb_patch_u32(&b, 4, 4);
    expect_format(&b, "version 4", "version 4");
    bb_patch_u32(&b, 4, 0x03000000u);
    expect_format(&b, "big-endian", "big-endian");
    bb_patch_u32(&b, 4, 3);

    bb_patch_u64(&b, m.n_tensors, 99999999);
    expect_format(&b, "tensor count 99999999 exceeds", "absurd tensor count");
    bb_patch_u64(&b, m.n_tensors, UINT64_MAX);
    expect_format(&b, "exceeds", "tensor count 2^64-1");
    bb_patch_u64(&b, m.n_tensors, FX_N_TENSORS);
    bb_patch_u64(&b, m.n_kv, 1ull << 60);
    expect_format(&b, "key/value count", "absurd kv count");
    bb_patch_u64(&b, m.n_kv, 21 + 1);   /* one more kv than present: runs into the tensor infos */
    expect_format(&b, NULL, "kv count one too many");
    bb_free(&b);
}

/* ===================================================================== */
/* Metadata                                                               */
/* ===================================================================== */

static void test_bad_metadata(void **state) {
    (void)state;
    bb_t b;
    fx_map_t m;
    base(&b, &m);
    bb_patch_u64(&b, m.first_key_len, 1ull << 62);
    expect_format(&b, "key length", "absurd key length");
    bb_patch_u64(&b, m.first_key_len, 0);
    expect_format(&b, "empty key", "empty key");
    bb_free(&b);

    base(&b, &m);
    bb_patch_u64(&b, m.str_len, b.n);
    expect_format(&b, "length", "string value longer than the file");
    bb_free(&b);

    base(&b, &m);
    bb_patch_u64(&b, m.arr_count, 1ull << 61);
    expect_format(&b, "exceeds what the file can hold", "absurd array count");
    bb_patch_u64(&b, m.arr_count, 4);   /* one more string than present: misparses, then fails */
    expect_format(&b, NULL, "array count one too many");
    bb_free(&b);

    base(&b, &m);
    bb_patch_u32(&b, m.u32_type, 13);
    expect_format(&b, "unknown value type 13", "unknown value type");
    bb_patch_u32(&b, m.u32_type, 0xffffffffu);
    expect_format(&b, "unknown value type", "value type 2^32-1");
    bb_free(&b);

    base(&b, &m);
    bb_patch_u32(&b, m.nested_elem, 77);
    expect_format(&b, "unknown array element type 77", "unknown element type");
    bb_free(&b);

    fx_build(&(fx_opts_t){.alignment = 32, .dup_key = 1}, &b, &m);
    expect_format(&b, "duplicate key 'general.name'", "duplicate key");
    bb_free(&b);

    /* arrays nested 40 deep: refused without deep recursion */
    bb_t d = {0};
    bb_bytes(&d, "GGUF", 4);
    bb_u32(&d, 3);
    bb_u64(&d, 0);
    bb_u64(&d, 1);
    bb_str(&d, "deep");
    bb_u32(&d, TB_GGUF_ARRAY);
    for (int i = 0; i < 40; i++) { bb_u32(&d, TB_GGUF_ARRAY); bb_u64(&d, 1); }
    bb_u32(&d, TB_GGUF_UINT8);
    bb_u64(&d, 0);
    expect_format(&d, "nested", "deep nesting");
    bb_free(&d);
}

/* ===================================================================== */
/* Alignment                                                              */
/* ===================================================================== */

static void test_bad_alignment(void **state) {
    (void)state;
    bb_t b;
    fx_map_t m;
    base(&b, &m);
    const uint32_t bad[] = {0, 3, 48, 0x80000001u};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        bb_patch_u32(&b, m.align_val, bad[i]);
        char want[64];
        snprintf(want, sizeof want, "is %u", bad[i]);
        expect_format(&b, want, "bad alignment");
    }
    bb_patch_u32(&b, m.align_val, 32);
    bb_patch_u32(&b, m.align_type, TB_GGUF_INT32);
    expect_format(&b, "expected uint32", "alignment of the wrong type");
    bb_free(&b);

    /* a larger valid alignment moves the data section: offsets now misaligned/outside */
    base(&b, &m);
    bb_patch_u32(&b, m.align_val, 4096);
    expect_format(&b, NULL, "alignment 4096 on a 32-aligned file");
    bb_free(&b);
}

/* ===================================================================== */
/* Tensor infos                                                           */
/* ===================================================================== */

static void test_bad_tensors(void **state) {
    (void)state;
    bb_t b;
    fx_map_t m;
    base(&b, &m);

    bb_patch_u32(&b, m.t_type[1], 39);
    expect_format(&b, "'blk.0.attn_q.weight': unsupported tensor type 39", "unknown tensor type");
    bb_patch_u32(&b, m.t_type[1], 3);   /* q4_1: a ggml type ternbench does not support */
    expect_format(&b, "unsupported tensor type 3", "unsupported ggml type");
    bb_patch_u32(&b, m.t_type[1], 0xffffffffu);
    expect_format(&b, "unsupported tensor type", "type 2^32-1");
    bb_patch_u32(&b, m.t_type[1], TB_TYPE_Q4_K);   /* ne0 = 64 is not a block multiple of 256 */
    expect_format(&b, "not a multiple", "row not a block multiple");
    bb_patch_u32(&b, m.t_type[1], TB_TYPE_Q8_0);

    bb_patch_u32(&b, m.t_ndims[0], 0);
    expect_format(&b, "n_dims 0", "n_dims 0");
    bb_patch_u32(&b, m.t_ndims[0], 5);
    expect_format(&b, "n_dims 5", "n_dims 5");
    bb_patch_u32(&b, m.t_ndims[0], 2);

    bb_patch_u64(&b, m.t_ne[0] + 8, 0);
    expect_format(&b, "dimension 1 is 0", "zero dimension");
    bb_patch_u64(&b, m.t_ne[0] + 8, UINT64_MAX);   /* -1 as int64 */
    expect_format(&b, "dimension 1", "negative dimension");
    bb_patch_u64(&b, m.t_ne[0], 1ull << 40);       /* (2^40 x 2^40) f32: elements and bytes > 2^64 */
    bb_patch_u64(&b, m.t_ne[0] + 8, 1ull << 40);
    expect_format(&b, "overflows", "shape overflow");
    bb_patch_u64(&b, m.t_ne[0], 1ull << 30);       /* 2^62 elements, 2^64 bytes */
    bb_patch_u64(&b, m.t_ne[0] + 8, 1ull << 32);
    expect_format(&b, "overflows", "byte overflow only");
    bb_patch_u64(&b, m.t_ne[0], 8);
    bb_patch_u64(&b, m.t_ne[0] + 8, 1ull << 20);   /* fits 64 bits, not the file */
    expect_format(&b, "outside", "tensor larger than the file");
    bb_patch_u64(&b, m.t_ne[0] + 8, 4);

    bb_patch_u64(&b, m.t_off[2], 1ull << 40);
    expect_format(&b, "outside", "offset out of range");
    bb_patch_u64(&b, m.t_off[2], UINT64_MAX - 31);
    expect_format(&b, "outside", "offset near 2^64");
    bb_patch_u64(&b, m.t_off[2], m.t_offset[2] + 4);
    expect_format(&b, "not a multiple of the alignment", "misaligned offset");
    bb_patch_u64(&b, m.t_off[2], m.t_offset[1]);
    expect_format(&b, "overlaps", "overlapping offsets");
    bb_patch_u64(&b, m.t_off[1], m.t_offset[0]);
    bb_patch_u64(&b, m.t_off[2], m.t_offset[2]);
    expect_format(&b, "overlaps", "overlap with the first tensor");
    bb_patch_u64(&b, m.t_off[1], m.t_offset[1]);
    assert_int_equal(open_bytes(b.p, b.n), TB_OK);   /* all patches undone */
    bb_free(&b);

    fx_build(&(fx_opts_t){.alignment = 32, .dup_tensor = 1}, &b, &m);
    expect_format(&b, "duplicate tensor name 'tok_embd'", "duplicate tensor name");
    bb_free(&b);

    base(&b, &m);
    bb_patch_u64(&b, m.t_info[1], 0);
    expect_format(&b, "empty tensor name", "empty tensor name");
    bb_patch_u64(&b, m.t_info[1], 1ull << 63);
    expect_format(&b, "tensor name length", "absurd tensor name length");
    bb_free(&b);

    /* a nested array claiming 2^40 inner arrays */
    base(&b, &m);
    bb_patch_u64(&b, m.nested_elem + 4, 1ull << 40);
    expect_format(&b, "exceeds what the file can hold", "absurd nested array count");
    bb_free(&b);
}

static void test_empty_and_tiny(void **state) {
    (void)state;
    expect_format(&(bb_t){.p = (uint8_t *)"", .n = 0}, "magic", "empty file");
    expect_format(&(bb_t){.p = (uint8_t *)"GGUF", .n = 4}, "version", "magic only");
    bb_t b = {0};
    bb_bytes(&b, "GGUF", 4);
    bb_u32(&b, 3);
    bb_u64(&b, 0);
    bb_u64(&b, 0);
    assert_int_equal(open_bytes(b.p, b.n), TB_OK);   /* the smallest valid file */
    bb_free(&b);
}

/* ===================================================================== */
/* Fuzz                                                                   */
/* ===================================================================== */

static uint64_t rng_next(uint64_t *s) {   /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Everything a successful open exposes must lie inside [lo, hi). */
static void walk_value(const tb_gguf_t *g, const tb_gguf_value_t *v, const uint8_t *lo,
                       const uint8_t *hi, uint64_t *sum, int depth) {
    assert_true(depth < 64);
    if (v->type == TB_GGUF_STRING) {
        const uint8_t *p = (const uint8_t *)v->v.str.ptr;
        if (lo && (p < lo || v->v.str.len > (uint64_t)(hi - p))) fail_msg("string outside the mapping");
        for (uint64_t i = 0; i < v->v.str.len; i++) *sum += p[i];
    } else if (v->type == TB_GGUF_ARRAY) {
        assert_true(v->v.arr.type < TB_GGUF_VTYPE_COUNT);
        uint64_t n = v->v.arr.n < 4096 ? v->v.arr.n : 4096;
        for (uint64_t i = 0; i < n; i++) {
            tb_gguf_value_t e;
            assert_int_equal(tb_gguf_arr_get(g, v, i, &e), TB_OK);
            walk_value(g, &e, lo, hi, sum, depth + 1);
        }
        if (v->v.arr.n) {
            tb_gguf_value_t e;
            assert_int_equal(tb_gguf_arr_get(g, v, v->v.arr.n - 1, &e), TB_OK);
            walk_value(g, &e, lo, hi, sum, depth + 1);
        }
    } else {
        *sum += v->v.u64;
    }
}

static void walk(const tb_gguf_t *g) {
    const uint8_t *lo = NULL, *hi = NULL;
    uint64_t sum = 0;
    for (int64_t i = 0; i < tb_gguf_n_tensors(g); i++) {
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
        assert_true(t.n_dims >= 1 && t.n_dims <= 4);
        assert_true(tb_type_supported(t.type));
        assert_int_equal(t.offset % tb_gguf_alignment(g), 0);
        const uint8_t *base = (const uint8_t *)t.data - tb_gguf_data_offset(g) - t.offset;
        if (!lo) { lo = base; hi = base + tb_gguf_file_size(g); }
        assert_ptr_equal(base, lo);
        assert_true(tb_gguf_data_offset(g) + t.offset + t.nbytes <= tb_gguf_file_size(g));
        const uint8_t *p = t.data;
        sum += p[0] + p[t.nbytes - 1];
        assert_int_equal(tb_gguf_find_tensor(g, t.name), i);
    }
    for (int64_t i = 0; i < tb_gguf_n_kv(g); i++) {
        tb_gguf_value_t v;
        assert_int_equal(tb_gguf_kv_value(g, i, &v), TB_OK);
        assert_int_equal(tb_gguf_find_kv(g, tb_gguf_kv_key(g, i)), i);
        walk_value(g, &v, lo, hi, &sum, 0);
    }
    (void)sum;
}

/* Flip 1..4 random bytes (mostly in the header region) of a file that ends
 * on a page boundary, so a read past the end would fault. 3000 iterations
 * (TB_FUZZ_ITERS and TB_FUZZ_SEED override, for longer local runs). */
static void test_fuzz_byte_flips(void **state) {
    (void)state;
    bb_t b;
    fx_map_t m;
    fx_build(&(fx_opts_t){.alignment = 32, .page_end = 1}, &b, &m);
    assert_int_equal(b.n % 4096, 0);
    uint8_t *buf = malloc(b.n);
    assert_non_null(buf);
    char p[4096];
    uint64_t s = 20240601;
    int n_ok = 0, n_fail = 0, iters = 3000;
    const char *env = getenv("TB_FUZZ_ITERS");   /* longer local runs */
    if (env && atoi(env) > 0) iters = atoi(env);
    if (getenv("TB_FUZZ_SEED")) s = strtoull(getenv("TB_FUZZ_SEED"), NULL, 10);
    for (int it = 0; it < iters; it++) {
        memcpy(buf, b.p, b.n);
        int flips = 1 + (int)(rng_next(&s) % 4);
        for (int f = 0; f < flips; f++) {
            uint64_t r = rng_next(&s);
            size_t at = (r & 7) ? (size_t)((r >> 8) % m.info_end) : (size_t)((r >> 8) % b.n);
            switch ((r >> 3) & 3) {
            case 0: buf[at] ^= (uint8_t)(1u << ((r >> 5) & 7)); break;
            case 1: buf[at] = (uint8_t)(r >> 40); break;
            case 2: buf[at] = 0xff; break;
            default: buf[at] = 0; break;
            }
        }
        int fd = fx_stage(g_dir, "fuzz.gguf", buf, b.n, p, sizeof p);
        tb_gguf_t *g = NULL;
        int rc = tb_gguf_open(p, &g);
        if (fd >= 0) close(fd);   /* the mapping outlives the descriptor */
        if (rc == TB_OK) {
            walk(g);
            tb_gguf_close(g);
            n_ok++;
        } else {
            if (rc != TB_ERR_FORMAT) fail_msg("iteration %d: status %d: %s", it, rc, tb_last_error());
            if (!strstr(tb_last_error(), "offset")) fail_msg("iteration %d: %s", it, tb_last_error());
            assert_null(g);
            n_fail++;
        }
    }
    print_message("fuzz: %d opened, %d rejected\n", n_ok, n_fail);
    assert_true(n_ok > 0 && n_fail > 0);   /* both paths were exercised */
    free(buf);
    bb_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_bad_metadata),
        cmocka_unit_test(test_bad_alignment),
        cmocka_unit_test(test_bad_tensors),
        cmocka_unit_test(test_empty_and_tiny),
        cmocka_unit_test(test_fuzz_byte_flips),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
