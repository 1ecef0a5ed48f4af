/*
 * test_gguf_write.c — the streaming writer: round trips of every value
 * type (verbatim copies of nested and string arrays included), many
 * tensors of every supported type under several alignments, misuse, an
 * unfinished writer, a full disk, and a byte-exact copy of a real vocab.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gguf_fixture.h"
#include "ternbench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static char *path_in(const char *dir, const char *name) {
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* Number of the writer's temporaries BASE.XXXXXX.tmp in dir. */
static int n_temps(const char *dir, const char *base) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    size_t bl = strlen(base);
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l == bl + 11 && !strncmp(e->d_name, base, bl) && e->d_name[bl] == '.' &&
            !strcmp(e->d_name + l - 4, ".tmp"))
            n++;
    }
    closedir(d);
    return n;
}

static uint64_t rng_next(uint64_t *s) {   /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint8_t data_byte(uint64_t i) { return (uint8_t)((i * 2654435761u) >> 13); }

#define OK(call) do { int rc_ = (call); if (rc_) fail_msg("%s -> %d: %s", #call, rc_, tb_last_error()); } while (0)

static tb_gguf_value_t get(const tb_gguf_t *g, const char *key) {
    int64_t i = tb_gguf_find_kv(g, key);
    if (i < 0) fail_msg("key %s missing", key);
    tb_gguf_value_t v;
    OK(tb_gguf_kv_value(g, i, &v));
    return v;
}

/* ===================================================================== */
/* Metadata round trip                                                    */
/* ===================================================================== */

static void test_roundtrip_kv(void **state) {
    (void)state;
    char *dir = fx_mkdtemp();
    bb_t b;
    fx_map_t m;
    fx_build(&(fx_opts_t){.alignment = 16}, &b, &m);
    char *src_path = fx_write(dir, "src.gguf", b.p, b.n);
    bb_free(&b);
    tb_gguf_t *src;
    OK(tb_gguf_open(src_path, &src));

    tb_gguf_writer_t *w;
    OK(tb_gguf_writer_new(&w));
    OK(tb_gguf_set_u8(w, "w.u8", 250));
    OK(tb_gguf_set_u32(w, "w.u32", 0xdeadbeefu));
    OK(tb_gguf_set_i32(w, "w.i32", -123456));
    OK(tb_gguf_set_u64(w, "w.u64", UINT64_MAX));
    OK(tb_gguf_set_f32(w, "w.f32", -0.125f));
    OK(tb_gguf_set_bool(w, "w.bool", false));
    OK(tb_gguf_set_str(w, "w.str", "first"));
    OK(tb_gguf_set_str(w, "w.str", "replaced"));   /* same key: replaced in place */
    OK(tb_gguf_set_str(w, "w.empty", ""));

    /* one array per fixed-size type, elements i*37+1 (fits 8 bits) */
    uint8_t raw[16 * 8];
    for (int t = 0; t < TB_GGUF_VTYPE_COUNT; t++) {
        if (t == TB_GGUF_STRING || t == TB_GGUF_ARRAY) {
            assert_int_equal(tb_gguf_set_arr(w, "bad", (tb_gguf_vtype_t)t, raw, 1), TB_ERR_ARG);
            continue;
        }
        memset(raw, 0, sizeof raw);
        size_t sz = t == TB_GGUF_UINT8 || t == TB_GGUF_INT8 || t == TB_GGUF_BOOL ? 1
                  : t == TB_GGUF_UINT16 || t == TB_GGUF_INT16 ? 2
                  : t == TB_GGUF_UINT64 || t == TB_GGUF_INT64 || t == TB_GGUF_FLOAT64 ? 8 : 4;
        for (int i = 0; i < 16; i++) {
            uint8_t x = (uint8_t)(t == TB_GGUF_BOOL ? i & 1 : i * 37 + 1);
            if (t == TB_GGUF_FLOAT32) { float f = x; memcpy(raw + i * 4, &f, 4); }
            else if (t == TB_GGUF_FLOAT64) { double d = x; memcpy(raw + i * 8, &d, 8); }
            else raw[i * sz] = x;
        }
        char key[32];
        snprintf(key, sizeof key, "w.arr.%s", tb_gguf_vtype_name((tb_gguf_vtype_t)t));
        OK(tb_gguf_set_arr(w, key, (tb_gguf_vtype_t)t, raw, 16));
    }
    const char *strs[4] = {"a", "", "with\0nul", "\xe2\x96\x81tok"};
    const uint64_t lens[4] = {1, 0, 8, 6};
    OK(tb_gguf_set_arr_str(w, "w.arr_str", strs, lens, 4));
    const char *strs2[2] = {"x", "yy"};
    OK(tb_gguf_set_arr_str(w, "w.arr_str_nolens", strs2, NULL, 2));
    OK(tb_gguf_set_arr_str(w, "w.arr_str_empty", NULL, NULL, 0));
    for (int64_t i = 0; i < tb_gguf_n_kv(src); i++) OK(tb_gguf_copy_kv(w, src, i));
    assert_int_equal(tb_gguf_copy_kv(w, src, tb_gguf_n_kv(src)), TB_ERR_RANGE);

    const char *out = path_in(dir, "out.gguf");
    OK(tb_gguf_writer_begin(w, out));
    OK(tb_gguf_writer_finish(w));
    tb_gguf_writer_free(w);
    assert_int_equal(n_temps(dir, "out.gguf"), 0);

    tb_gguf_t *g;
    OK(tb_gguf_open(path_in(dir, "out.gguf"), &g));
    assert_int_equal(tb_gguf_alignment(g), 16);     /* copied general.alignment took effect */
    tb_gguf_value_t v;
    v = get(g, "w.u8");   assert_int_equal(v.type, TB_GGUF_UINT8);   assert_int_equal(v.v.u64, 250);
    v = get(g, "w.u32");  assert_int_equal(v.type, TB_GGUF_UINT32);  assert_int_equal(v.v.u64, 0xdeadbeefu);
    v = get(g, "w.i32");  assert_int_equal(v.type, TB_GGUF_INT32);   assert_int_equal(v.v.i64, -123456);
    v = get(g, "w.u64");  assert_int_equal(v.type, TB_GGUF_UINT64);  assert_true(v.v.u64 == UINT64_MAX);
    v = get(g, "w.f32");  assert_int_equal(v.type, TB_GGUF_FLOAT32); assert_true(v.v.f64 == -0.125);
    v = get(g, "w.bool"); assert_int_equal(v.type, TB_GGUF_BOOL);    assert_int_equal(v.v.u64, 0);
    v = get(g, "w.str");
    assert_int_equal(v.v.str.len, 8);
    assert_memory_equal(v.v.str.ptr, "replaced", 8);
    assert_int_equal(get(g, "w.empty").v.str.len, 0);

    for (int t = 0; t < TB_GGUF_VTYPE_COUNT; t++) {
        if (t == TB_GGUF_STRING || t == TB_GGUF_ARRAY) continue;
        char key[32];
        snprintf(key, sizeof key, "w.arr.%s", tb_gguf_vtype_name((tb_gguf_vtype_t)t));
        tb_gguf_value_t a = get(g, key), e;
        assert_int_equal(a.v.arr.type, t);
        assert_int_equal(a.v.arr.n, 16);
        for (uint64_t i = 0; i < 16; i++) {
            OK(tb_gguf_arr_get(g, &a, i, &e));
            uint8_t x = (uint8_t)(t == TB_GGUF_BOOL ? i & 1 : i * 37 + 1);
            if (t == TB_GGUF_FLOAT32 || t == TB_GGUF_FLOAT64) assert_true(e.v.f64 == x);
            else if (t == TB_GGUF_INT8) assert_int_equal(e.v.i64, (int8_t)x);
            else assert_int_equal(e.v.u64, x);
        }
    }
    tb_gguf_value_t a = get(g, "w.arr_str"), e;
    assert_int_equal(a.v.arr.n, 4);
    for (uint64_t i = 0; i < 4; i++) {
        OK(tb_gguf_arr_get(g, &a, i, &e));
        assert_int_equal(e.v.str.len, lens[i]);
        if (lens[i]) assert_memory_equal(e.v.str.ptr, strs[i], lens[i]);
    }
    a = get(g, "w.arr_str_nolens");
    OK(tb_gguf_arr_get(g, &a, 1, &e));
    assert_int_equal(e.v.str.len, 2);
    assert_int_equal(get(g, "w.arr_str_empty").v.arr.n, 0);

    /* every copied kv is deeply equal to its source (nested arrays included) */
    for (int64_t i = 0; i < tb_gguf_n_kv(src); i++) {
        const char *key = tb_gguf_kv_key(src, i);
        tb_gguf_value_t sv, dv = get(g, key);
        OK(tb_gguf_kv_value(src, i, &sv));
        if (!fx_value_equal(src, &sv, g, &dv)) fail_msg("copied key %s differs", key);
    }
    tb_gguf_close(g);
    tb_gguf_close(src);
    free(src_path);
    fx_rmtree(dir);
}

/* ===================================================================== */
/* Tensors                                                                */
/* ===================================================================== */

typedef struct decl { char name[32]; tb_type_t type; int n_dims; int64_t ne[4]; uint64_t nbytes; } decl_t;

/* Write n random tensors with `alignment`, streaming random-sized chunks
 * that cross tensor boundaries; read back and check layout and bytes. */
static void roundtrip_tensors(const char *dir, uint32_t alignment, uint64_t seed, int n) {
    tb_type_t types[TB_TYPE_COUNT];
    int n_types = 0;
    for (uint32_t t = 0; t < TB_TYPE_COUNT; t++)
        if (tb_type_supported(t)) types[n_types++] = (tb_type_t)t;
    assert_true(n_types >= 9);

    decl_t *d = calloc((size_t)n, sizeof *d);
    assert_non_null(d);
    uint64_t s = seed, total = 0;
    tb_gguf_writer_t *w;
    OK(tb_gguf_writer_new(&w));
    OK(tb_gguf_set_alignment(w, alignment));
    OK(tb_gguf_set_str(w, "general.architecture", "test"));
    for (int i = 0; i < n; i++) {
        snprintf(d[i].name, sizeof d[i].name, "blk.%d.w", i);
        d[i].type = types[rng_next(&s) % (uint64_t)n_types];
        d[i].n_dims = 1 + (int)(rng_next(&s) % 4);
        d[i].ne[0] = tb_type_block_elems(d[i].type) * (int64_t)(1 + rng_next(&s) % 3);
        for (int k = 1; k < 4; k++) d[i].ne[k] = k < d[i].n_dims ? (int64_t)(1 + rng_next(&s) % 3) : 1;
        d[i].nbytes = tb_type_row_bytes(d[i].type, d[i].ne[0]) * (uint64_t)(d[i].ne[1] * d[i].ne[2] * d[i].ne[3]);
        total += d[i].nbytes;
        OK(tb_gguf_add_tensor(w, d[i].name, d[i].type, d[i].n_dims, d[i].ne));
    }
    const char *out = path_in(dir, "t.gguf");
    OK(tb_gguf_writer_begin(w, out));
    uint8_t chunk[700];
    for (uint64_t done = 0; done < total;) {
        size_t k = (size_t)(rng_next(&s) % sizeof chunk) + 1;
        if (k > total - done) k = (size_t)(total - done);
        for (size_t j = 0; j < k; j++) chunk[j] = data_byte(done + j);
        OK(tb_gguf_write_tensor_data(w, chunk, k));
        done += k;
    }
    assert_int_equal(tb_gguf_write_tensor_data(w, chunk, 1), TB_ERR_ARG);   /* one byte too many */
    OK(tb_gguf_write_tensor_data(w, NULL, 0));
    OK(tb_gguf_writer_finish(w));
    tb_gguf_writer_free(w);

    tb_gguf_t *g;
    OK(tb_gguf_open(path_in(dir, "t.gguf"), &g));
    assert_int_equal(tb_gguf_alignment(g), alignment);
    assert_int_equal(tb_gguf_n_tensors(g), n);
    assert_int_equal(tb_gguf_data_offset(g) % alignment, 0);
    const uint8_t *base = NULL;
    uint64_t expect_off = 0, stream = 0;
    for (int i = 0; i < n; i++) {
        tb_gguf_tensor_t t;
        OK(tb_gguf_tensor(g, i, &t));
        assert_string_equal(t.name, d[i].name);
        assert_int_equal(t.type, d[i].type);
        assert_int_equal(t.n_dims, d[i].n_dims);
        for (int k = 0; k < 4; k++) assert_int_equal(t.ne[k], d[i].ne[k]);
        assert_int_equal(t.nbytes, d[i].nbytes);
        assert_int_equal(t.offset, expect_off);   /* consecutive, as llama.cpp requires */
        if (i == 0) base = (const uint8_t *)t.data - tb_gguf_data_offset(g);
        const uint8_t *p = t.data;
        for (uint64_t j = 0; j < t.nbytes; j++)
            if (p[j] != data_byte(stream + j)) fail_msg("tensor %d byte %llu", i, (unsigned long long)j);
        uint64_t padded = (t.nbytes + alignment - 1) / alignment * alignment;
        for (uint64_t j = t.nbytes; j < padded; j++)
            if (p[j] != 0) fail_msg("tensor %d padding byte %llu is not zero", i, (unsigned long long)j);
        stream += t.nbytes;
        expect_off += padded;
    }
    assert_int_equal(tb_gguf_file_size(g), tb_gguf_data_offset(g) + expect_off);
    (void)base;
    tb_gguf_close(g);
    free(d);
}

static void test_roundtrip_tensors(void **state) {
    (void)state;
    char *dir = fx_mkdtemp();
    const uint32_t aligns[] = {1, 8, 32, 64, 4096};
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++)
        roundtrip_tensors(dir, aligns[i], 1000 + i, 60);
    fx_rmtree(dir);
}

static void test_no_tensors(void **state) {
    (void)state;
    char *dir = fx_mkdtemp();
    tb_gguf_writer_t *w;
    OK(tb_gguf_writer_new(&w));
    OK(tb_gguf_writer_begin(w, path_in(dir, "empty.gguf")));
    OK(tb_gguf_writer_finish(w));
    assert_int_equal(tb_gguf_writer_finish(w), TB_ERR_ARG);   /* twice */
    tb_gguf_writer_free(w);
    tb_gguf_t *g;
    OK(tb_gguf_open(path_in(dir, "empty.gguf"), &g));
    assert_int_equal(tb_gguf_n_kv(g), 0);
    assert_int_equal(tb_gguf_n_tensors(g), 0);
    assert_int_equal(tb_gguf_version(g), 3);
    tb_gguf_close(g);
    fx_rmtree(dir);
}

/* ===================================================================== */
/* Misuse and failures                                                    */
/* ===================================================================== */

static void test_writer_misuse(void **state) {
    (void)state;
    char *dir = fx_mkdtemp();
    tb_gguf_writer_t *w;
    OK(tb_gguf_writer_new(&w));
    int64_t ne[4] = {256, 2, 1, 1};
    assert_int_equal(tb_gguf_set_alignment(w, 0), TB_ERR_ARG);
    assert_int_equal(tb_gguf_set_alignment(w, 3), TB_ERR_ARG);
    assert_int_equal(tb_gguf_set_u64(w, "general.alignment", 64), TB_ERR_ARG);   /* must be uint32 */
    assert_int_equal(tb_gguf_set_u32(w, "general.alignment", 48), TB_ERR_ARG);
    assert_int_equal(tb_gguf_set_u32(w, "", 1), TB_ERR_ARG);
    assert_int_equal(tb_gguf_set_str(w, "k", NULL), TB_ERR_ARG);
    assert_int_equal(tb_gguf_add_tensor(w, "", TB_TYPE_F32, 1, ne), TB_ERR_ARG);
    assert_int_equal(tb_gguf_add_tensor(w, "a", (tb_type_t)3, 1, ne), TB_ERR_ARG);
    assert_int_equal(tb_gguf_add_tensor(w, "a", TB_TYPE_F32, 0, ne), TB_ERR_ARG);
    assert_int_equal(tb_gguf_add_tensor(w, "a", TB_TYPE_F32, 5, ne), TB_ERR_ARG);
    int64_t odd[2] = {100, 1};
    assert_int_equal(tb_gguf_add_tensor(w, "a", TB_TYPE_Q4_K, 2, odd), TB_ERR_ARG);
    int64_t zero[2] = {32, 0};
    assert_int_equal(tb_gguf_add_tensor(w, "a", TB_TYPE_F32, 2, zero), TB_ERR_ARG);
    int64_t huge[4] = {1ll << 40, 1ll << 40, 1, 1};
    assert_int_equal(tb_gguf_add_tensor(w, "a", TB_TYPE_F32, 2, huge), TB_ERR_ARG);
    char longname[80];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(tb_gguf_add_tensor(w, longname, TB_TYPE_F32, 1, ne), TB_ERR_ARG);
    OK(tb_gguf_add_tensor(w, "a", TB_TYPE_Q4_K, 2, ne));
    assert_int_equal(tb_gguf_add_tensor(w, "a", TB_TYPE_F32, 1, ne), TB_ERR_ARG);   /* duplicate */
    assert_int_equal(tb_gguf_write_tensor_data(w, "x", 1), TB_ERR_ARG);            /* before begin */
    assert_int_equal(tb_gguf_writer_finish(w), TB_ERR_ARG);

    OK(tb_gguf_writer_begin(w, path_in(dir, "m.gguf")));
    assert_int_equal(tb_gguf_writer_begin(w, path_in(dir, "m.gguf")), TB_ERR_ARG);
    assert_int_equal(tb_gguf_set_u32(w, "late", 1), TB_ERR_ARG);
    assert_int_equal(tb_gguf_add_tensor(w, "b", TB_TYPE_F32, 1, ne), TB_ERR_ARG);
    uint8_t buf[144] = {0};
    OK(tb_gguf_write_tensor_data(w, buf, sizeof buf));        /* one of two rows */
    assert_int_equal(tb_gguf_writer_finish(w), TB_ERR_ARG);    /* incomplete */
    assert_non_null(strstr(tb_last_error(), "'a'"));
    assert_int_equal(n_temps(dir, "m.gguf"), 1);
    tb_gguf_writer_free(w);                                    /* unfinished: tmp removed */
    assert_int_equal(n_temps(dir, "m.gguf"), 0);
    assert_false(exists(path_in(dir, "m.gguf")));

    /* default alignment set explicitly: no key written */
    OK(tb_gguf_writer_new(&w));
    OK(tb_gguf_set_alignment(w, 64));
    OK(tb_gguf_set_alignment(w, 32));
    OK(tb_gguf_writer_begin(w, path_in(dir, "d.gguf")));
    OK(tb_gguf_writer_finish(w));
    tb_gguf_writer_free(w);
    tb_gguf_t *g;
    OK(tb_gguf_open(path_in(dir, "d.gguf"), &g));
    assert_int_equal(tb_gguf_find_kv(g, "general.alignment"), -1);
    assert_int_equal(tb_gguf_alignment(g), 32);
    tb_gguf_close(g);

    /* uncreatable output */
    OK(tb_gguf_writer_new(&w));
    assert_int_equal(tb_gguf_writer_begin(w, "/nonexistent/dir/x.gguf"), TB_ERR_IO);
    assert_non_null(strstr(tb_last_error(), "/nonexistent/dir/x.gguf"));
    tb_gguf_writer_free(w);
    tb_gguf_writer_free(NULL);
    fx_rmtree(dir);
}

/* In a child limited to 64 KiB files, a 1 MiB tensor must fail with
 * TB_ERR_IO naming the path, and leave neither the file nor a temporary. */
static void test_disk_full(void **state) {
    (void)state;
    char *dir = fx_mkdtemp();
    char out[4096];
    snprintf(out, sizeof out, "%s/full.gguf", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {65536, 65536};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(10);
        tb_gguf_writer_t *w;
        int64_t ne[2] = {1024, 256};
        if (tb_gguf_writer_new(&w) || tb_gguf_add_tensor(w, "big", TB_TYPE_F32, 2, ne)) _exit(11);
        if (tb_gguf_writer_begin(w, out)) _exit(12);
        static float row[1024];
        int rc = TB_OK;
        for (int r = 0; r < 256 && !rc; r++) rc = tb_gguf_write_tensor_data(w, row, sizeof row);
        if (!rc) rc = tb_gguf_writer_finish(w);
        if (rc != TB_ERR_IO) _exit(13);
        if (!strstr(tb_last_error(), out)) _exit(14);
        if (tb_gguf_writer_finish(w) == TB_OK) _exit(15);
        tb_gguf_writer_free(w);
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_false(exists(out));
    assert_int_equal(n_temps(dir, "full.gguf"), 0);
    fx_rmtree(dir);
}

/* ===================================================================== */
/* A real vocabulary, copied                                              */
/* ===================================================================== */

static void test_copy_shared_vocab(void **state) {
    (void)state;
    const char *sd = getenv("TB_SHARED_DIR");
    char src_path[4096];
    snprintf(src_path, sizeof src_path, "%s/tokenizer/ggml-vocab-llama-spm.gguf", sd ? sd : "../shared");
    if (access(src_path, R_OK) != 0) {
        print_message("skipping: %s is absent (no shared reference data)\n", src_path);
        skip();
    }
    tb_gguf_t *src;
    OK(tb_gguf_open(src_path, &src));
    char *dir = fx_mkdtemp();
    tb_gguf_writer_t *w;
    OK(tb_gguf_writer_new(&w));
    for (int64_t i = 0; i < tb_gguf_n_kv(src); i++) OK(tb_gguf_copy_kv(w, src, i));
    OK(tb_gguf_writer_begin(w, path_in(dir, "copy.gguf")));
    OK(tb_gguf_writer_finish(w));
    tb_gguf_writer_free(w);

    tb_gguf_t *g;
    OK(tb_gguf_open(path_in(dir, "copy.gguf"), &g));
    assert_int_equal(tb_gguf_n_kv(g), tb_gguf_n_kv(src));
    for (int64_t i = 0; i < tb_gguf_n_kv(src); i++) {
        assert_string_equal(tb_gguf_kv_key(g, i), tb_gguf_kv_key(src, i));
        tb_gguf_value_t a, b;
        OK(tb_gguf_kv_value(src, i, &a));
        OK(tb_gguf_kv_value(g, i, &b));
        if (!fx_value_equal(src, &a, g, &b)) fail_msg("key %s differs", tb_gguf_kv_key(src, i));
    }
    /* the source has no tensors: its metadata runs to its end, byte for byte ours */
    FILE *fa = fopen(src_path, "rb"), *fb = fopen(path_in(dir, "copy.gguf"), "rb");
    assert_non_null(fa);
    assert_non_null(fb);
    uint64_t n = tb_gguf_file_size(src), same = 0;
    for (uint64_t i = 0; i < n; i++) same += fgetc(fa) == fgetc(fb);
    assert_int_equal(same, n);
    fclose(fa);
    fclose(fb);
    tb_gguf_close(g);
    tb_gguf_close(src);
    fx_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_kv),
        cmocka_unit_test(test_roundtrip_tensors),
        cmocka_unit_test(test_no_tensors),
        cmocka_unit_test(test_writer_misuse),
        cmocka_unit_test(test_disk_full),
        cmocka_unit_test(test_copy_shared_vocab),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
