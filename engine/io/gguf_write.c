/*
 * gguf_write.c — streaming GGUF v3 writer.
 *
 * Metadata and tensor declarations are held in memory (they are small);
 * tensor data is streamed through a buffered FILE* straight to a private
 * temporary file beside PATH, PATH.XXXXXX.tmp (mkstemps: unique, so two
 * writers of one PATH never share an inode), so writing a 6 GB model needs
 * a few MB of RAM. finish() flushes, fsyncs and renames the temporary to
 * PATH (atomic: PATH is always one writer's complete file); any failure
 * removes the temporary and leaves the writer failed (every later call
 * returns an error). Temporaries being written are listed in a fixed table
 * that tb_gguf_writer_remove_inflight() empties from a signal handler.
 *
 * The output is what llama.cpp's gguf reader expects: tensor offsets are
 * consecutive in declaration order, each tensor's data is zero-padded to
 * the alignment, and the data section starts at the aligned end of the
 * tensor-info table.
 */
#include "io/gguf_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITE_BUFFER_BYTES (1u << 20)

/* ===================================================================== */
/* Temporaries in flight (for signal handlers)                            */
/* ===================================================================== */

#define INFLIGHT_SLOTS 16
#define INFLIGHT_PATH 4096

/* state: 0 free, 1 being filled or cleared, 2 holds a path to remove */
static _Atomic int inflight_state[INFLIGHT_SLOTS];
static char inflight_path[INFLIGHT_SLOTS][INFLIGHT_PATH];

/* Slot now holding `path`, or -1 (table full or path too long: such a
 * temporary is still removed on every failure, only not by a signal). */
static int inflight_add(const char *path) {
    size_t n = strlen(path);
    if (n >= INFLIGHT_PATH) return -1;
    for (int i = 0; i < INFLIGHT_SLOTS; i++) {
        int want = 0;
        if (!atomic_compare_exchange_strong(&inflight_state[i], &want, 1)) continue;
        memcpy(inflight_path[i], path, n + 1);
        atomic_store(&inflight_state[i], 2);
        return i;
    }
    return -1;
}

static void inflight_drop(int slot) {
    if (slot < 0) return;
    atomic_store(&inflight_state[slot], 1);
    inflight_path[slot][0] = '\0';
    atomic_store(&inflight_state[slot], 0);
}

void tb_gguf_writer_remove_inflight(void) {
    for (int i = 0; i < INFLIGHT_SLOTS; i++)
        if (atomic_load(&inflight_state[i]) == 2) unlink(inflight_path[i]);   /* async-signal-safe */
}

/* Permissions for a new file under the process umask (mkstemp gives 0600;
 * the published model should look like any file the user creates). The
 * umask is read from /proc, as umask(2) cannot read it without setting it. */
static mode_t file_mode(void) {
    mode_t mask = 022;
    FILE *f = fopen("/proc/self/status", "re");
    if (f) {
        char line[256];
        unsigned m;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Umask: %o", &m) == 1) { mask = (mode_t)m; break; }
        fclose(f);
    }
    return 0666 & ~mask;
}

/* ===================================================================== */
/* State                                                                  */
/* ===================================================================== */

typedef struct wkv {
    char *key;
    uint8_t *blob;     /* uint32 vtype + the value, as written to the file */
    size_t len;
} wkv_t;

typedef struct wtensor {
    char *name;
    tb_type_t type;
    int n_dims;
    int64_t ne[4];
    uint64_t nbytes;
    uint64_t offset;   /* in the data section, assigned by begin()      */
} wtensor_t;

enum { W_DECLARE, W_WRITING, W_DONE, W_FAILED };

struct tb_gguf_writer {
    wkv_t *kvs;
    size_t n_kv, cap_kv;
    wtensor_t *ts;
    size_t n_ts, cap_ts;
    uint32_t alignment;

    int state;
    char *path, *tmp;       /* PATH and its private temporary PATH.XXXXXX.tmp */
    int inflight;           /* slot of tmp in the in-flight table, or -1   */
    FILE *f;
    char *fbuf;             /* stdio buffer of WRITE_BUFFER_BYTES         */
    size_t cur;             /* tensor receiving data                       */
    uint64_t cur_done;      /* bytes of it written                         */
    uint64_t data_total;    /* bytes of all tensors                        */
    uint64_t data_done;
};

int tb_gguf_writer_new(tb_gguf_writer_t **out) {
    if (!out) return tb_err(TB_ERR_ARG, "tb_gguf_writer_new: NULL argument");
    tb_gguf_writer_t *w = calloc(1, sizeof *w);
    if (!w) return tb_err(TB_ERR_NOMEM, "gguf writer: out of memory");
    w->alignment = TB_GGUF_DEFAULT_ALIGNMENT;
    w->inflight = -1;
    *out = w;
    return TB_OK;
}

/* Close and remove the temporary if it is still open. */
static void discard_tmp(tb_gguf_writer_t *w) {
    if (w->f) {
        fclose(w->f);
        w->f = NULL;
        unlink(w->tmp);
    }
    inflight_drop(w->inflight);
    w->inflight = -1;
    free(w->fbuf);
    w->fbuf = NULL;
}

void tb_gguf_writer_free(tb_gguf_writer_t *w) {
    if (!w) return;
    discard_tmp(w);
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].blob);
    }
    for (size_t i = 0; i < w->n_ts; i++) free(w->ts[i].name);
    free(w->kvs);
    free(w->ts);
    free(w->path);
    free(w->tmp);
    free(w);
}

/* Grow *p (of elements `size`) to hold at least `need`. */
static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return TB_OK;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return tb_err(TB_ERR_NOMEM, "gguf writer: out of memory");
    *p = q;
    *cap = c;
    return TB_OK;
}

static int check_declaring(const tb_gguf_writer_t *w, const char *what) {
    if (w->state != W_DECLARE)
        return tb_err(TB_ERR_ARG, "gguf writer: %s after begin() (declare all metadata and tensors first)", what);
    return TB_OK;
}

/* ===================================================================== */
/* Metadata                                                               */
/* ===================================================================== */

/* A growing byte buffer for one encoded value. */
typedef struct blob {
    uint8_t *p;
    size_t n, cap;
    int rc;            /* first failure, sticky */
} blob_t;

/* Append n bytes (noinline: inlined, gcc 12 misreads the growth as a
 * write into a NULL buffer and warns). */
__attribute__((noinline)) static void put(blob_t *b, const void *data, size_t n) {
    if (b->rc) return;
    if (n > SIZE_MAX - b->n) { b->rc = tb_err(TB_ERR_NOMEM, "gguf writer: value too large"); return; }
    if ((b->rc = grow((void **)&b->p, &b->cap, b->n + n, 1))) return;
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
}
static void put_u32(blob_t *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(blob_t *b, uint64_t v) { put(b, &v, 8); }

static int64_t find_kv(const tb_gguf_writer_t *w, const char *key) {
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kvs[i].key, key) == 0) return (int64_t)i;
    return -1;
}

/* Set key to the encoded value in b (taking ownership of b->p, even on
 * failure). Replaces an earlier value of the same key in place.
 * general.alignment must be a uint32 power of two and sets the alignment. */
static int kv_put(tb_gguf_writer_t *w, const char *key, blob_t *b) {
    int rc = b->rc;
    if (!rc) rc = check_declaring(w, "setting metadata");
    if (!rc && (!key || !*key)) rc = tb_err(TB_ERR_ARG, "gguf writer: empty key");
    if (!rc && strcmp(key, TB_GGUF_KEY_ALIGNMENT) == 0) {
        uint32_t type = 0, a = 0;
        if (b->n == 8) { memcpy(&type, b->p, 4); memcpy(&a, b->p + 4, 4); }
        if (type != TB_GGUF_UINT32 || b->n != 8 || a == 0 || (a & (a - 1)))
            rc = tb_err(TB_ERR_ARG, "gguf writer: %s must be a uint32 power of two", TB_GGUF_KEY_ALIGNMENT);
        else
            w->alignment = a;
    }
    int64_t i = rc ? -1 : find_kv(w, key);
    if (!rc && i < 0) {
        rc = grow((void **)&w->kvs, &w->cap_kv, w->n_kv + 1, sizeof *w->kvs);
        char *k = rc ? NULL : strdup(key);
        if (!rc && !k) rc = tb_err(TB_ERR_NOMEM, "gguf writer: out of memory");
        if (!rc) {
            i = (int64_t)w->n_kv++;
            w->kvs[i] = (wkv_t){.key = k};
        }
    }
    if (rc) {
        free(b->p);
        return rc;
    }
    free(w->kvs[i].blob);
    w->kvs[i].blob = b->p;
    w->kvs[i].len = b->n;
    return TB_OK;
}

/* Encode a scalar of vtype `type` from `size` bytes at v. */
static int set_scalar(tb_gguf_writer_t *w, const char *key, uint32_t type, const void *v, size_t size) {
    blob_t b = {0};
    put_u32(&b, type);
    put(&b, v, size);
    return kv_put(w, key, &b);
}

int tb_gguf_set_u8(tb_gguf_writer_t *w, const char *key, uint8_t v) { return set_scalar(w, key, TB_GGUF_UINT8, &v, 1); }
int tb_gguf_set_u32(tb_gguf_writer_t *w, const char *key, uint32_t v) { return set_scalar(w, key, TB_GGUF_UINT32, &v, 4); }
int tb_gguf_set_i32(tb_gguf_writer_t *w, const char *key, int32_t v) { return set_scalar(w, key, TB_GGUF_INT32, &v, 4); }
int tb_gguf_set_u64(tb_gguf_writer_t *w, const char *key, uint64_t v) { return set_scalar(w, key, TB_GGUF_UINT64, &v, 8); }
int tb_gguf_set_f32(tb_gguf_writer_t *w, const char *key, float v) { return set_scalar(w, key, TB_GGUF_FLOAT32, &v, 4); }

int tb_gguf_set_bool(tb_gguf_writer_t *w, const char *key, bool v) {
    uint8_t x = v ? 1 : 0;
    return set_scalar(w, key, TB_GGUF_BOOL, &x, 1);
}

int tb_gguf_set_str(tb_gguf_writer_t *w, const char *key, const char *v) {
    if (!v) return tb_err(TB_ERR_ARG, "gguf writer: NULL string for key '%s'", key ? key : "");
    blob_t b = {0};
    size_t n = strlen(v);
    put_u32(&b, TB_GGUF_STRING);
    put_u64(&b, n);
    put(&b, v, n);
    return kv_put(w, key, &b);
}

int tb_gguf_set_arr(tb_gguf_writer_t *w, const char *key, tb_gguf_vtype_t type, const void *data, uint64_t n) {
    size_t sz = tb_gguf_vtype_size(type);
    if (sz == 0)
        return tb_err(TB_ERR_ARG, "gguf writer: key '%s': tb_gguf_set_arr takes fixed-size elements, not %s",
                      key ? key : "", tb_gguf_vtype_name(type));
    if (n && !data) return tb_err(TB_ERR_ARG, "gguf writer: key '%s': NULL array data", key ? key : "");
    if (n > SIZE_MAX / sz) return tb_err(TB_ERR_ARG, "gguf writer: key '%s': array too large", key ? key : "");
    blob_t b = {0};
    put_u32(&b, TB_GGUF_ARRAY);
    put_u32(&b, type);
    put_u64(&b, n);
    put(&b, data, (size_t)n * sz);
    return kv_put(w, key, &b);
}

int tb_gguf_set_arr_str(tb_gguf_writer_t *w, const char *key, const char *const *strs,
                        const uint64_t *lens, uint64_t n) {
    if (n && !strs) return tb_err(TB_ERR_ARG, "gguf writer: key '%s': NULL string array", key ? key : "");
    blob_t b = {0};
    put_u32(&b, TB_GGUF_ARRAY);
    put_u32(&b, TB_GGUF_STRING);
    put_u64(&b, n);
    for (uint64_t i = 0; i < n && !b.rc; i++) {
        if (!strs[i]) {
            free(b.p);
            return tb_err(TB_ERR_ARG, "gguf writer: key '%s': string %" PRIu64 " is NULL", key ? key : "", i);
        }
        uint64_t len = lens ? lens[i] : strlen(strs[i]);
        put_u64(&b, len);
        put(&b, strs[i], (size_t)len);
    }
    return kv_put(w, key, &b);
}

int tb_gguf_copy_kv(tb_gguf_writer_t *w, const tb_gguf_t *src, int64_t i) {
    uint32_t type;
    const uint8_t *bytes;
    uint64_t len;
    int rc = tb_gguf_kv_raw(src, i, &type, &bytes, &len);
    if (rc) return rc;
    blob_t b = {0};
    put_u32(&b, type);
    put(&b, bytes, (size_t)len);
    return kv_put(w, tb_gguf_kv_key(src, i), &b);
}

int tb_gguf_set_alignment(tb_gguf_writer_t *w, uint32_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)))
        return tb_err(TB_ERR_ARG, "gguf writer: alignment %" PRIu32 " is not a non-zero power of two", alignment);
    int rc = check_declaring(w, "setting the alignment");
    if (rc) return rc;
    if (alignment != TB_GGUF_DEFAULT_ALIGNMENT) return tb_gguf_set_u32(w, TB_GGUF_KEY_ALIGNMENT, alignment);
    int64_t i = find_kv(w, TB_GGUF_KEY_ALIGNMENT);   /* default: drop the key */
    if (i >= 0) {
        free(w->kvs[i].key);
        free(w->kvs[i].blob);
        memmove(&w->kvs[i], &w->kvs[i + 1], (w->n_kv - (size_t)i - 1) * sizeof *w->kvs);
        w->n_kv--;
    }
    w->alignment = alignment;
    return TB_OK;
}

/* ===================================================================== */
/* Tensors                                                                */
/* ===================================================================== */

int tb_gguf_add_tensor(tb_gguf_writer_t *w, const char *name, tb_type_t type, int n_dims, const int64_t *ne) {
    int rc = check_declaring(w, "adding a tensor");
    if (rc) return rc;
    if (!name || !*name || strlen(name) >= TB_GGUF_MAX_NAME)
        return tb_err(TB_ERR_ARG, "gguf writer: tensor name '%s' must have 1..%d bytes", name ? name : "",
                      TB_GGUF_MAX_NAME - 1);
    if (!tb_type_supported((uint32_t)type))
        return tb_err(TB_ERR_ARG, "gguf writer: tensor '%s': unsupported type %d", name, (int)type);
    if (n_dims < 1 || n_dims > 4 || !ne)
        return tb_err(TB_ERR_ARG, "gguf writer: tensor '%s': n_dims %d (expected 1..4)", name, n_dims);
    for (size_t i = 0; i < w->n_ts; i++)
        if (strcmp(w->ts[i].name, name) == 0)
            return tb_err(TB_ERR_ARG, "gguf writer: duplicate tensor name '%s'", name);
    wtensor_t t = {.type = type, .n_dims = n_dims, .ne = {1, 1, 1, 1}};
    for (int d = 0; d < n_dims; d++) {
        if (ne[d] < 1) return tb_err(TB_ERR_ARG, "gguf writer: tensor '%s': dimension %d is %" PRId64 " (expected >= 1)",
                                     name, d, ne[d]);
        t.ne[d] = ne[d];
    }
    int64_t blck = tb_type_block_elems(type);
    if (t.ne[0] % blck)
        return tb_err(TB_ERR_ARG, "gguf writer: tensor '%s': row length %" PRId64 " is not a multiple of %s's block of %" PRId64,
                      name, t.ne[0], tb_type_name(type), blck);
    uint64_t elems = (uint64_t)t.ne[0], bytes;
    bool ovf = __builtin_mul_overflow((uint64_t)(t.ne[0] / blck), (uint64_t)tb_type_block_bytes(type), &bytes);
    for (int d = 1; d < 4; d++) {
        ovf |= __builtin_mul_overflow(elems, (uint64_t)t.ne[d], &elems);
        ovf |= __builtin_mul_overflow(bytes, (uint64_t)t.ne[d], &bytes);
    }
    if (ovf || elems > (uint64_t)INT64_MAX || bytes > UINT64_MAX / 2)
        return tb_err(TB_ERR_ARG, "gguf writer: tensor '%s': shape overflows 64 bits", name);
    t.nbytes = bytes;
    if ((rc = grow((void **)&w->ts, &w->cap_ts, w->n_ts + 1, sizeof *w->ts))) return rc;
    if (!(t.name = strdup(name))) return tb_err(TB_ERR_NOMEM, "gguf writer: out of memory");
    w->ts[w->n_ts++] = t;
    return TB_OK;
}

/* ===================================================================== */
/* Streaming                                                              */
/* ===================================================================== */

/* Record an I/O failure (errno `e`) of `what`: drop the temporary, fail the writer. */
static int fail_io(tb_gguf_writer_t *w, int e, const char *what) {
    discard_tmp(w);
    w->state = W_FAILED;
    return tb_err(TB_ERR_IO, "%s: %s failed: %s", w->tmp, what, strerror(e ? e : EIO));
}

static int wr(tb_gguf_writer_t *w, const void *data, size_t n) {
    if (n && fwrite(data, 1, n, w->f) != n) return fail_io(w, errno, "write");
    return TB_OK;
}

static int wr_u32(tb_gguf_writer_t *w, uint32_t v) { return wr(w, &v, 4); }
static int wr_u64(tb_gguf_writer_t *w, uint64_t v) { return wr(w, &v, 8); }

static int wr_str(tb_gguf_writer_t *w, const char *s) {
    size_t n = strlen(s);
    int rc = wr_u64(w, n);
    return rc ? rc : wr(w, s, n);
}

/* Zero bytes up to the next multiple of the alignment of position `pos`. */
static int wr_pad(tb_gguf_writer_t *w, uint64_t pos) {
    static const uint8_t zeros[256];
    uint64_t pad = tb_gguf_align_up(pos, w->alignment) - pos;
    int rc = TB_OK;
    while (pad && !rc) {
        size_t k = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
        rc = wr(w, zeros, k);
        pad -= k;
    }
    return rc;
}

/* Header, metadata and tensor infos, then padding to the data section. */
static int write_head(tb_gguf_writer_t *w) {
    int rc = wr(w, TB_GGUF_MAGIC, 4);
    if (!rc) rc = wr_u32(w, TB_GGUF_VERSION);
    if (!rc) rc = wr_u64(w, w->n_ts);
    if (!rc) rc = wr_u64(w, w->n_kv);
    uint64_t pos = 24;
    for (size_t i = 0; i < w->n_kv && !rc; i++) {
        rc = wr_str(w, w->kvs[i].key);
        if (!rc) rc = wr(w, w->kvs[i].blob, w->kvs[i].len);
        pos += 8 + strlen(w->kvs[i].key) + w->kvs[i].len;
    }
    for (size_t i = 0; i < w->n_ts && !rc; i++) {
        const wtensor_t *t = &w->ts[i];
        rc = wr_str(w, t->name);
        if (!rc) rc = wr_u32(w, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims && !rc; d++) rc = wr_u64(w, (uint64_t)t->ne[d]);
        if (!rc) rc = wr_u32(w, (uint32_t)t->type);
        if (!rc) rc = wr_u64(w, t->offset);
        pos += 8 + strlen(t->name) + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
    }
    return rc ? rc : wr_pad(w, pos);
}

int tb_gguf_writer_begin(tb_gguf_writer_t *w, const char *path) {
    int rc = check_declaring(w, "begin");
    if (rc) return rc;
    if (!path || !*path) return tb_err(TB_ERR_ARG, "gguf writer: empty output path");
    size_t n = strlen(path);
    free(w->path);
    free(w->tmp);
    w->path = strdup(path);
    w->tmp = malloc(n + 12);
    if (!w->path || !w->tmp) return tb_err(TB_ERR_NOMEM, "gguf writer: out of memory");
    memcpy(w->tmp, path, n);
    memcpy(w->tmp + n, ".XXXXXX.tmp", 12);

    uint64_t off = 0;   /* consecutive, each padded to the alignment */
    for (size_t i = 0; i < w->n_ts; i++) {
        w->ts[i].offset = off;
        uint64_t padded = tb_gguf_align_up(w->ts[i].nbytes, w->alignment);
        if (padded < w->ts[i].nbytes || __builtin_add_overflow(off, padded, &off))
            return tb_err(TB_ERR_ARG, "gguf writer: tensor data exceeds 2^64 bytes");
        w->data_total += w->ts[i].nbytes;
    }
    int fd = mkostemps(w->tmp, 4, O_CLOEXEC);
    if (fd < 0) return tb_err(TB_ERR_IO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
    w->inflight = inflight_add(w->tmp);
    if (fchmod(fd, file_mode()) != 0 || !(w->f = fdopen(fd, "wb"))) {
        int e = errno;
        close(fd);
        unlink(w->tmp);
        inflight_drop(w->inflight);
        w->inflight = -1;
        return tb_err(TB_ERR_IO, "%s: cannot open: %s", w->tmp, strerror(e));
    }
    w->fbuf = malloc(WRITE_BUFFER_BYTES);
    if (w->fbuf) setvbuf(w->f, w->fbuf, _IOFBF, WRITE_BUFFER_BYTES);
    w->state = W_WRITING;
    w->cur = 0;
    w->cur_done = 0;
    return write_head(w);
}

int tb_gguf_write_tensor_data(tb_gguf_writer_t *w, const void *data, size_t n) {
    if (w->state != W_WRITING)
        return tb_err(TB_ERR_ARG, "gguf writer: tensor data outside begin()..finish()%s",
                      w->state == W_FAILED ? " (the writer failed earlier)" : "");
    if (n && !data) return tb_err(TB_ERR_ARG, "gguf writer: NULL tensor data");
    if (n > w->data_total - w->data_done)
        return tb_err(TB_ERR_ARG, "%s: %zu bytes of tensor data but only %" PRIu64 " remain to be written",
                      w->tmp, n, w->data_total - w->data_done);
    const uint8_t *p = data;
    while (n) {
        const wtensor_t *t = &w->ts[w->cur];
        uint64_t left = t->nbytes - w->cur_done;
        size_t k = n < left ? n : (size_t)left;
        int rc = wr(w, p, k);
        if (rc) return rc;
        p += k;
        n -= k;
        w->cur_done += k;
        w->data_done += k;
        if (w->cur_done == t->nbytes) {
            if ((rc = wr_pad(w, t->nbytes))) return rc;
            w->cur++;
            w->cur_done = 0;
        }
    }
    return TB_OK;
}

int tb_gguf_writer_patch_u64(tb_gguf_writer_t *w, const char *key, uint64_t v) {
    if (w->state != W_WRITING)
        return tb_err(TB_ERR_ARG, "gguf writer: patch of '%s' outside begin()..finish()", key);
    uint64_t off = 24;   /* magic, version, n_tensors, n_kv */
    for (size_t i = 0; i < w->n_kv; i++) {
        const wkv_t *e = &w->kvs[i];
        uint32_t vt;
        memcpy(&vt, e->blob, 4);
        if (strcmp(e->key, key) != 0) {
            off += 8 + strlen(e->key) + e->len;
            continue;
        }
        if (vt != TB_GGUF_UINT64 || e->len != 12)
            return tb_err(TB_ERR_ARG, "gguf writer: key '%s' to patch is not a uint64", key);
        memcpy(e->blob + 4, &v, 8);
        off += 8 + strlen(e->key) + 4;
        if (fflush(w->f) != 0) return fail_io(w, errno, "flush");
        if (fseeko(w->f, (off_t)off, SEEK_SET) != 0) return fail_io(w, errno, "seek");
        int rc = wr(w, &v, 8);
        if (rc) return rc;
        if (fflush(w->f) != 0) return fail_io(w, errno, "flush");
        if (fseeko(w->f, 0, SEEK_END) != 0) return fail_io(w, errno, "seek");
        return TB_OK;
    }
    return tb_err(TB_ERR_NOT_FOUND, "gguf writer: no key '%s' to patch", key);
}

/* fsync the directory holding `path` so the rename is durable (best effort). */
static void sync_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int tb_gguf_writer_finish(tb_gguf_writer_t *w) {
    if (w->state != W_WRITING)
        return tb_err(TB_ERR_ARG, "gguf writer: finish() without a successful begin()%s",
                      w->state == W_FAILED ? " (the writer failed earlier)" : "");
    if (w->data_done != w->data_total) {
        const wtensor_t *t = &w->ts[w->cur];
        return tb_err(TB_ERR_ARG, "%s: tensor '%s' has %" PRIu64 " of %" PRIu64 " bytes written (%zu tensors declared)",
                      w->tmp, t->name, w->cur_done, t->nbytes, w->n_ts);
    }
    if (fflush(w->f) != 0) return fail_io(w, errno, "flush");
    if (fsync(fileno(w->f)) != 0 && errno != EINVAL) return fail_io(w, errno, "fsync");
    FILE *f = w->f;
    w->f = NULL;
    if (fclose(f) != 0) {
        int e = errno;
        unlink(w->tmp);
        return fail_io(w, e, "close");
    }
    free(w->fbuf);
    w->fbuf = NULL;
    int rc = rename(w->tmp, w->path), e = errno;
    inflight_drop(w->inflight);
    w->inflight = -1;
    if (rc != 0) {
        unlink(w->tmp);
        w->state = W_FAILED;
        return tb_err(TB_ERR_IO, "%s: cannot rename to %s: %s", w->tmp, w->path, strerror(e));
    }
    sync_dir(w->path);
    w->state = W_DONE;
    return TB_OK;
}
