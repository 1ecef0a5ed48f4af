/* gguf_fixture.c — see gguf_fixture.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memfd_create */
#endif
#include "gguf_fixture.h"

#include <dirent.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ===================================================================== */
/* Byte buffer                                                            */
/* ===================================================================== */

void bb_bytes(bb_t *b, const void *data, size_t n) {
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n) c *= 2;
        uint8_t *p = realloc(b->p, c);
        if (!p) abort();
        b->p = p;
        b->cap = c;
    }
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
}

void bb_u8(bb_t *b, uint8_t v) { bb_bytes(b, &v, 1); }
void bb_u16(bb_t *b, uint16_t v) { bb_bytes(b, &v, 2); }
void bb_u32(bb_t *b, uint32_t v) { bb_bytes(b, &v, 4); }
void bb_u64(bb_t *b, uint64_t v) { bb_bytes(b, &v, 8); }

void bb_str(bb_t *b, const char *s) {
    size_t n = strlen(s);
    bb_u64(b, n);
    bb_bytes(b, s, n);
}

void bb_pad(bb_t *b, uint64_t align) {
    while (b->n % align) bb_u8(b, 0);
}

void bb_patch_u32(bb_t *b, size_t at, uint32_t v) { memcpy(b->p + at, &v, 4); }
void bb_patch_u64(bb_t *b, size_t at, uint64_t v) { memcpy(b->p + at, &v, 8); }

void bb_free(bb_t *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* ===================================================================== */
/* The base file                                                          */
/* ===================================================================== */

uint8_t fx_data_byte(uint64_t i) { return (uint8_t)(i * 131 + 17); }

/* key + vtype; returns the offset of the vtype field. */
static size_t kv_head(bb_t *b, const char *key, uint32_t vtype) {
    bb_str(b, key);
    size_t at = b->n;
    bb_u32(b, vtype);
    return at;
}

static uint64_t up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

void fx_build(const fx_opts_t *opts, bb_t *b, fx_map_t *m) {
    memset(b, 0, sizeof *b);
    memset(m, 0, sizeof *m);
    uint32_t a = opts->alignment;
    m->alignment = (a && !(a & (a - 1))) ? a : 32;
    uint64_t n_kv = 20 + (opts->alignment != 0) + (opts->dup_key != 0);

    bb_bytes(b, "GGUF", 4);
    bb_u32(b, opts->version ? opts->version : 3);
    m->n_tensors = b->n;
    bb_u64(b, FX_N_TENSORS);
    m->n_kv = b->n;
    bb_u64(b, n_kv);

    /* metadata */
    m->first_key_len = b->n;
    kv_head(b, "general.architecture", TB_GGUF_STRING);
    bb_str(b, "llama");
    kv_head(b, "general.name", TB_GGUF_STRING);
    m->str_len = b->n;
    bb_str(b, "fixture");
    if (opts->alignment) {
        m->align_type = kv_head(b, "general.alignment", TB_GGUF_UINT32);
        m->align_val = b->n;
        bb_u32(b, opts->alignment);
    }
    kv_head(b, "fx.uint8", TB_GGUF_UINT8);     bb_u8(b, 200);
    kv_head(b, "fx.int8", TB_GGUF_INT8);       bb_u8(b, (uint8_t)-100);
    kv_head(b, "fx.uint16", TB_GGUF_UINT16);   bb_u16(b, 60000);
    kv_head(b, "fx.int16", TB_GGUF_INT16);     bb_u16(b, (uint16_t)-30000);
    m->u32_type = kv_head(b, "fx.uint32", TB_GGUF_UINT32);
    bb_u32(b, 4000000000u);
    kv_head(b, "fx.int32", TB_GGUF_INT32);     bb_u32(b, (uint32_t)-2000000000);
    float f = 1.5f;
    kv_head(b, "fx.float32", TB_GGUF_FLOAT32); bb_bytes(b, &f, 4);
    kv_head(b, "fx.bool", TB_GGUF_BOOL);       bb_u8(b, 1);
    kv_head(b, "fx.uint64", TB_GGUF_UINT64);   bb_u64(b, (1ull << 63) + 5);
    kv_head(b, "fx.int64", TB_GGUF_INT64);     bb_u64(b, (uint64_t)-(1ll << 62));
    double d = -2.25;
    kv_head(b, "fx.float64", TB_GGUF_FLOAT64); bb_bytes(b, &d, 8);
    kv_head(b, "fx.small_i32", TB_GGUF_INT32); bb_u32(b, 7);

    kv_head(b, "fx.arr_str", TB_GGUF_ARRAY);
    bb_u32(b, TB_GGUF_STRING);
    m->arr_count = b->n;
    bb_u64(b, 3);
    bb_str(b, "alpha");
    bb_str(b, "");
    bb_str(b, "h\xc3\xa9llo");

    kv_head(b, "fx.nested", TB_GGUF_ARRAY);    /* [[1, 2], [3], []] of uint16 */
    m->nested_elem = b->n;
    bb_u32(b, TB_GGUF_ARRAY);
    bb_u64(b, 3);
    bb_u32(b, TB_GGUF_UINT16); bb_u64(b, 2); bb_u16(b, 1); bb_u16(b, 2);
    bb_u32(b, TB_GGUF_UINT16); bb_u64(b, 1); bb_u16(b, 3);
    bb_u32(b, TB_GGUF_UINT16); bb_u64(b, 0);

    kv_head(b, "fx.nested_str", TB_GGUF_ARRAY); /* [["x", "yz"], []] */
    bb_u32(b, TB_GGUF_ARRAY);
    bb_u64(b, 2);
    bb_u32(b, TB_GGUF_STRING); bb_u64(b, 2); bb_str(b, "x"); bb_str(b, "yz");
    bb_u32(b, TB_GGUF_STRING); bb_u64(b, 0);

    kv_head(b, "fx.arr_f32", TB_GGUF_ARRAY);
    bb_u32(b, TB_GGUF_FLOAT32);
    bb_u64(b, 3);
    float fs[3] = {0.5f, -1.0f, 3.0f};
    bb_bytes(b, fs, sizeof fs);

    kv_head(b, "fx.arr_empty", TB_GGUF_ARRAY);
    bb_u32(b, TB_GGUF_INT64);
    bb_u64(b, 0);

    kv_head(b, "fx.empty_str", TB_GGUF_STRING);
    bb_str(b, "");

    if (opts->dup_key) {
        kv_head(b, "general.name", TB_GGUF_STRING);
        bb_str(b, "again");
    }
    m->kv_end = b->n;

    /* tensor infos */
    static const char *const names[FX_N_TENSORS] = {"tok_embd", "blk.0.attn_q.weight", "output"};
    const uint32_t types[FX_N_TENSORS] = {TB_TYPE_F32, TB_TYPE_Q8_0, TB_TYPE_F32};
    const int n_dims[FX_N_TENSORS] = {2, 2, 1};
    uint64_t ne[FX_N_TENSORS][2] = {{8, 4}, {64, 2}, {16, 1}};
    m->t_nbytes[0] = 8 * 4 * 4;
    m->t_nbytes[1] = 2 * 2 * 34;
    m->t_offset[0] = 0;
    m->t_offset[1] = up(m->t_nbytes[0], m->alignment);
    m->t_offset[2] = up(m->t_offset[1] + m->t_nbytes[1], m->alignment);
    for (int i = 0; i < FX_N_TENSORS; i++) {
        m->t_info[i] = b->n;
        bb_str(b, (i == 2 && opts->dup_tensor) ? names[0] : names[i]);
        m->t_ndims[i] = b->n;
        bb_u32(b, (uint32_t)n_dims[i]);
        m->t_ne[i] = b->n;
        for (int k = 0; k < n_dims[i]; k++) bb_u64(b, ne[i][k]);
        m->t_type[i] = b->n;
        bb_u32(b, types[i]);
        m->t_off[i] = b->n;
        bb_u64(b, m->t_offset[i]);
    }
    m->info_end = b->n;
    m->data_off = up(b->n, m->alignment);
    uint64_t last = 16;
    if (opts->page_end) {
        uint64_t start = m->data_off + m->t_offset[2];
        last = (up(start + 64, 4096) - start) / 4;
    }
    bb_patch_u64(b, m->t_ne[2], last);
    m->t_nbytes[2] = last * 4;

    /* data: padding, then each tensor at its offset */
    bb_pad(b, m->alignment);
    for (int i = 0; i < FX_N_TENSORS; i++) {
        while (b->n < m->data_off + m->t_offset[i]) bb_u8(b, 0);
        for (uint64_t k = 0; k < m->t_nbytes[i]; k++) bb_u8(b, fx_data_byte(m->t_offset[i] + k));
    }
    m->size = b->n;
}

/* ===================================================================== */
/* Files                                                                  */
/* ===================================================================== */

char *fx_mkdtemp(void) {
    const char *t = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/tb-io-XXXXXX", t && *t ? t : "/tmp");
    char *d = mkdtemp(tmpl);
    if (!d) abort();
    return strdup(d);
}

void fx_rmtree(char *dir) {
    DIR *dp = opendir(dir);
    if (dp) {
        struct dirent *e;
        char p[4096];
        while ((e = readdir(dp))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(dp);
    }
    rmdir(dir);
    free(dir);
}

void fx_rewrite(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    if (fclose(f) != 0) abort();
}

char *fx_write(const char *dir, const char *name, const void *data, size_t n) {
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (!p) abort();
    snprintf(p, len, "%s/%s", dir, name);
    fx_rewrite(p, data, n);
    return p;
}

int fx_stage(const char *dir, const char *name, const void *data, size_t n, char *path, size_t cap) {
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd >= 0) {
        snprintf(path, cap, "/proc/self/fd/%d", fd);
        size_t done = 0;
        while (done < n) {
            ssize_t k = write(fd, (const uint8_t *)data + done, n - done);
            if (k <= 0) abort();
            done += (size_t)k;
        }
        if (access(path, R_OK) == 0) return fd;
        close(fd);
    }
    snprintf(path, cap, "%s/%s", dir, name);
    fx_rewrite(path, data, n);
    return -1;
}

/* ===================================================================== */
/* Value equality                                                         */
/* ===================================================================== */

int fx_value_equal(const tb_gguf_t *ga, const tb_gguf_value_t *a,
                   const tb_gguf_t *gb, const tb_gguf_value_t *b) {
    if (a->type != b->type) return 0;
    switch (a->type) {
    case TB_GGUF_STRING:
        return a->v.str.len == b->v.str.len && memcmp(a->v.str.ptr, b->v.str.ptr, a->v.str.len) == 0;
    case TB_GGUF_ARRAY:
        if (a->v.arr.type != b->v.arr.type || a->v.arr.n != b->v.arr.n) return 0;
        for (uint64_t i = 0; i < a->v.arr.n; i++) {
            tb_gguf_value_t ea, eb;
            if (tb_gguf_arr_get(ga, a, i, &ea) || tb_gguf_arr_get(gb, b, i, &eb)) return 0;
            if (!fx_value_equal(ga, &ea, gb, &eb)) return 0;
        }
        return 1;
    case TB_GGUF_FLOAT32: case TB_GGUF_FLOAT64:
        return memcmp(&a->v.f64, &b->v.f64, sizeof(double)) == 0;
    default:
        return a->v.u64 == b->v.u64;   /* i64 shares the bits */
    }
}
