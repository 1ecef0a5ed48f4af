/*
 * test_gguf_flood.c — hash flooding of the GGUF name indexes.
 *
 * A valid file whose 2000 keys and 2000 tensor names all fall in one slot
 * of the old unseeded FNV-1a index (fnv_collide.h) must open, answer every
 * lookup correctly, and build both indexes in a linear number of probes
 * (the old index needed n^2/2 for these names). The bound counts slots,
 * never time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_fixture.h"
#include "fnv_collide.h"
#include "io/gguf_impl.h"

#define N 2000
#define ROW 8                               /* f32 elements per tensor */

static char g_key[N][32], g_tname[N][32];

static void craft_names(void) {
    for (int i = 0; i < N; i++) {
        char pre[24];
        snprintf(pre, sizeof pre, "k.%d.", i);
        assert_int_equal(fnv_collide(FNV_BASIS_GGUF, pre, 0x5a5a, g_key[i]), 0);
        snprintf(pre, sizeof pre, "t.%d.", i);
        assert_int_equal(fnv_collide(FNV_BASIS_GGUF, pre, 0x5a5a, g_tname[i]), 0);
    }
    /* the attack is real: every name shares the old index's slot */
    for (int i = 0; i < N; i++) {
        assert_int_equal(fnv_step(FNV_BASIS_GGUF, g_key[i], strlen(g_key[i])) & 0xffff, 0x5a5a);
        assert_int_equal(fnv_step(FNV_BASIS_GGUF, g_tname[i], strlen(g_tname[i])) & 0xffff, 0x5a5a);
    }
}

/* GGUF v3: N uint32 keys (value i), N f32 [ROW] tensors (data i, i+1, ...);
 * `dup` names the last tensor like the first. */
static void build(bb_t *b, int dup) {
    memset(b, 0, sizeof *b);
    bb_bytes(b, "GGUF", 4);
    bb_u32(b, 3);
    bb_u64(b, N);
    bb_u64(b, N);
    for (int i = 0; i < N; i++) {
        bb_str(b, g_key[i]);
        bb_u32(b, TB_GGUF_UINT32);
        bb_u32(b, (uint32_t)i);
    }
    for (int i = 0; i < N; i++) {
        bb_str(b, dup && i == N - 1 ? g_tname[0] : g_tname[i]);
        bb_u32(b, 1);
        bb_u64(b, ROW);
        bb_u32(b, TB_TYPE_F32);
        bb_u64(b, (uint64_t)i * ROW * 4);
    }
    bb_pad(b, 32);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < ROW; k++) {
            float f = (float)(i + k);
            bb_bytes(b, &f, 4);
        }
}

static void test_colliding_names_open_linearly(void **state) {
    (void)state;
    craft_names();
    bb_t b;
    build(&b, 0);
    char *dir = fx_mkdtemp(), path[512];
    int fd = fx_stage(dir, "flood.gguf", b.p, b.n, path, sizeof path);
    tb_gguf_t *g;
    int rc = tb_gguf_open(path, &g);
    if (rc) print_message("%s\n", tb_last_error());
    assert_int_equal(rc, TB_OK);
    assert_int_equal(tb_gguf_n_kv(g), N);
    assert_int_equal(tb_gguf_n_tensors(g), N);
    for (int i = 0; i < N; i++) {
        uint32_t v;
        assert_int_equal(tb_gguf_find_kv(g, g_key[i]), i);
        assert_int_equal(tb_gguf_get_u32(g, g_key[i], &v), TB_OK);
        assert_int_equal(v, (uint32_t)i);
        int64_t ti = tb_gguf_find_tensor(g, g_tname[i]);
        assert_int_equal(ti, i);
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, ti, &t), TB_OK);
        assert_string_equal(t.name, g_tname[i]);
        float f0;
        memcpy(&f0, t.data, 4);
        assert_true(f0 == (float)i);
    }
    /* absent names, colliding too, are not found */
    char miss[32];
    assert_int_equal(fnv_collide(FNV_BASIS_GGUF, "absent.", 0x5a5a, miss), 0);
    assert_int_equal(tb_gguf_find_kv(g, miss), -1);
    assert_int_equal(tb_gguf_find_tensor(g, miss), -1);
    /* linear: about 1.5 probes per name at the index's load of <= 1/2;
     * the old hash needed N * (N + 1) / 2 for each index */
    uint64_t pk, pt;
    tb_gguf_index_probes(g, &pk, &pt);
    print_message("probes: keys %llu, tensors %llu for %d names each\n",
                  (unsigned long long)pk, (unsigned long long)pt, N);
    assert_true(pk >= N && pk <= 4 * N);
    assert_true(pt >= N && pt <= 4 * N);
    tb_gguf_close(g);
    if (fd >= 0) close(fd);
    bb_free(&b);
    fx_rmtree(dir);
}

static void test_colliding_duplicate_still_refused(void **state) {
    (void)state;
    craft_names();
    bb_t b;
    build(&b, 1);
    char *dir = fx_mkdtemp(), path[512];
    int fd = fx_stage(dir, "dup.gguf", b.p, b.n, path, sizeof path);
    tb_gguf_t *g = NULL;
    assert_int_equal(tb_gguf_open(path, &g), TB_ERR_FORMAT);
    assert_null(g);
    assert_non_null(strstr(tb_last_error(), "duplicate tensor name"));
    if (fd >= 0) close(fd);
    bb_free(&b);
    fx_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colliding_names_open_linearly),
        cmocka_unit_test(test_colliding_duplicate_still_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
