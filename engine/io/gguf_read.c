/*
 * gguf_read.c — GGUF v2/v3 reader: map the file, validate everything once,
 * then answer queries from compact tables.
 *
 * Nothing is read before it is checked against the mapping: every length,
 * count and offset is compared with the bytes that remain, so a hostile
 * file ends in a TB_ERR_FORMAT naming the byte offset, never in a read past
 * the mapping. Values are read with memcpy (the file is byte-packed).
 *
 * Tables built at open:
 *   kvs      one entry per key/value: key, vtype, [off, end) of the value
 *   arrs     one descriptor per array value (nested arrays: one per inner
 *            array, the inner arrays of one array stored contiguously)
 *   stroffs  for string arrays: file offset of each element, so that
 *            tb_gguf_arr_get is O(1)
 *   tensors  tb_gguf_tensor_t, validated (type, shape, offset, overlap)
 *   index    open-addressing hash over keys and over tensor names, keyed
 *            SipHash-2-4 (util/siphash.h) so that no file can choose where
 *            its names land: opening stays linear for any names
 */
#include "io/gguf_impl.h"
#include "util/siphash.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ===================================================================== */
/* Tables                                                                 */
/* ===================================================================== */

typedef struct kv_entry {
    uint64_t at;       /* file offset of the record (for messages)        */
    uint64_t key;      /* offset of the NUL-terminated key in g->names    */
    uint32_t type;     /* tb_gguf_vtype_t                                */
    uint64_t off;      /* file offset of the value                        */
    uint64_t end;      /* one past its last byte                          */
    int64_t arr;       /* descriptor index when type == ARRAY, else -1    */
} kv_entry_t;

typedef struct arr_desc {
    uint32_t elem;     /* element vtype                                   */
    uint64_t n;        /* element count                                    */
    uint64_t off;      /* file offset of the first element                 */
    int64_t sub;       /* STRING: first index in stroffs; ARRAY: first child in arrs */
} arr_desc_t;

typedef struct name_index {
    int64_t *slots;    /* entry index or -1; capacity is a power of two  */
    uint64_t mask;
    uint64_t probes;   /* slots inspected while the index was built        */
} name_index_t;

struct tb_gguf {
    char *path;
    const uint8_t *base;   /* the mapping (NULL for an empty file)        */
    uint64_t size;
    uint32_t version;
    uint64_t alignment;
    uint64_t data_off;

    int64_t n_kv;
    kv_entry_t *kvs;       /* (n_kv)           */
    uint64_t cap_kvs;
    arr_desc_t *arrs;      /* (n_arrs)         */
    uint64_t n_arrs, cap_arrs;
    uint64_t *stroffs;     /* (n_stroffs)      */
    uint64_t n_stroffs, cap_stroffs;
    char *names;           /* keys and tensor names, NUL-terminated      */
    uint64_t n_names, cap_names;

    int64_t n_tensors;
    tb_gguf_tensor_t *tensors;  /* (n_tensors) */
    uint64_t *tensor_name_off;  /* (n_tensors) offsets into names               */
    uint64_t *tensor_at;        /* (n_tensors) file offset of each tensor info  */
    uint64_t cap_tensors, cap_tensor_name_off, cap_tensor_at;
    name_index_t kv_index, tensor_index;
};

/* Grow *p (of elements `size`) so it holds at least `need`; amortised doubling. */
static int vec_reserve(void **p, uint64_t *cap, uint64_t need, size_t size) {
    if (need <= *cap) return TB_OK;
    uint64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    if (c > SIZE_MAX / size) return tb_err(TB_ERR_NOMEM, "gguf: table of %" PRIu64 " entries is too large", c);
    void *q = realloc(*p, (size_t)(c * size));
    if (!q) return tb_err(TB_ERR_NOMEM, "gguf: out of memory growing a table to %" PRIu64 " entries", c);
    *p = q;
    *cap = c;
    return TB_OK;
}

/* Keyed hash of a NUL-terminated string (the per-process key). */
static uint64_t hash_str(const char *s) { return tb_hash_bytes(s, strlen(s)); }

static int index_init(name_index_t *ix, int64_t n) {
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2) cap *= 2;
    ix->slots = malloc(cap * sizeof *ix->slots);
    if (!ix->slots) return tb_err(TB_ERR_NOMEM, "gguf: out of memory for a name index of %" PRId64, n);
    memset(ix->slots, 0xff, cap * sizeof *ix->slots);  /* all -1 */
    ix->mask = cap - 1;
    return TB_OK;
}

/* Slot of `name` in ix: holding it, or the empty slot where it would go.
 * name_of(ctx, i) gives the name of entry i; *probes counts the slots seen. */
static uint64_t index_slot(const name_index_t *ix, const char *name,
                           const char *(*name_of)(const tb_gguf_t *, int64_t), const tb_gguf_t *g,
                           uint64_t *probes) {
    uint64_t h = hash_str(name) & ix->mask, k = 1;
    while (ix->slots[h] >= 0 && strcmp(name_of(g, ix->slots[h]), name) != 0) {
        h = (h + 1) & ix->mask;
        k++;
    }
    *probes += k;
    return h;
}

/* Names live in g->names, which grows while parsing: address them by offset. */
static const char *kv_name(const tb_gguf_t *g, int64_t i) { return g->names + g->kvs[i].key; }
static const char *tensor_name(const tb_gguf_t *g, int64_t i) { return g->names + g->tensor_name_off[i]; }
static uint64_t kv_at(const tb_gguf_t *g, int64_t i) { return g->kvs[i].at; }
static uint64_t tensor_at(const tb_gguf_t *g, int64_t i) { return g->tensor_at[i]; }

/* ===================================================================== */
/* Value types                                                            */
/* ===================================================================== */

size_t tb_gguf_vtype_size(uint32_t t) {
    switch (t) {
    case TB_GGUF_UINT8: case TB_GGUF_INT8: case TB_GGUF_BOOL: return 1;
    case TB_GGUF_UINT16: case TB_GGUF_INT16: return 2;
    case TB_GGUF_UINT32: case TB_GGUF_INT32: case TB_GGUF_FLOAT32: return 4;
    case TB_GGUF_UINT64: case TB_GGUF_INT64: case TB_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

const char *tb_gguf_vtype_name(tb_gguf_vtype_t t) {
    static const char *const names[TB_GGUF_VTYPE_COUNT] = {
        "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
        "bool", "string", "array", "uint64", "int64", "float64",
    };
    return (unsigned)t < TB_GGUF_VTYPE_COUNT ? names[t] : "?";
}

/* ===================================================================== */
/* Cursor: bounds-checked reads with offset-naming errors                 */
/* ===================================================================== */

typedef struct cursor {
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    const char *path;
} cursor_t;

#define FMT_ERR(c, at, ...) fmt_err((c), (at), __VA_ARGS__)

/* "PATH: offset 0xAT: <message>" as TB_ERR_FORMAT. */
__attribute__((format(printf, 3, 4)))
static int fmt_err(const cursor_t *c, uint64_t at, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tb_err(TB_ERR_FORMAT, "%s: offset 0x%" PRIx64 ": %s", c->path, at, msg);
}

static uint64_t remain(const cursor_t *c) { return c->size - c->pos; }

/* Check that n bytes of `what` follow the cursor. */
static int need(const cursor_t *c, uint64_t n, const char *what) {
    if (remain(c) < n)
        return FMT_ERR(c, c->pos, "expected %s (%" PRIu64 " bytes) but the file ends at 0x%" PRIx64
                       " (file is %" PRIu64 " bytes)", what, n, c->size, c->size);
    return TB_OK;
}

/* Read n bytes of `what` into v and step over them. */
static int rd(cursor_t *c, const char *what, void *v, uint64_t n) {
    int rc = need(c, n, what);
    if (rc) return rc;
    memcpy(v, c->base + c->pos, n);
    c->pos += n;
    return TB_OK;
}

static int rd_u32(cursor_t *c, const char *what, uint32_t *v) { return rd(c, what, v, 4); }
static int rd_u64(cursor_t *c, const char *what, uint64_t *v) { return rd(c, what, v, 8); }

/* A gguf string: uint64 len + bytes. Leaves *off at the bytes. */
static int rd_str(cursor_t *c, const char *what, uint64_t *off, uint64_t *len) {
    uint64_t at = c->pos;
    int rc = rd_u64(c, what, len);
    if (rc) return rc;
    if (*len > remain(c))
        return FMT_ERR(c, at, "%s length %" PRIu64 " exceeds the %" PRIu64
                       " bytes left in the file (file is %" PRIu64 " bytes)", what, *len, remain(c), c->size);
    *off = c->pos;
    c->pos += *len;
    return TB_OK;
}

/* Copy a name (key or tensor name) into g->names; *out gets its offset. */
static int add_name(tb_gguf_t *g, const cursor_t *c, uint64_t at, uint64_t off, uint64_t len,
                    const char *what, uint64_t *out) {
    if (len == 0) return FMT_ERR(c, at, "empty %s (expected a non-empty string)", what);
    if (memchr(c->base + off, '\0', len))
        return FMT_ERR(c, at, "%s contains a NUL byte", what);
    int rc = vec_reserve((void **)&g->names, &g->cap_names, g->n_names + len + 1, 1);
    if (rc) return rc;
    memcpy(g->names + g->n_names, c->base + off, len);
    g->names[g->n_names + len] = '\0';
    *out = g->n_names;
    g->n_names += len + 1;
    return TB_OK;
}

/* ===================================================================== */
/* Metadata                                                               */
/* ===================================================================== */

/* Parse the array whose header (elem vtype, n) is at the cursor into
 * descriptor `slot` (already reserved); `depth` counts enclosing arrays. */
static int parse_array(tb_gguf_t *g, cursor_t *c, uint64_t slot, int depth, const char *key) {
    uint64_t at = c->pos;
    if (depth > TB_GGUF_MAX_DEPTH)
        return FMT_ERR(c, at, "key '%s': arrays nested deeper than %d levels", key, TB_GGUF_MAX_DEPTH);
    uint32_t elem;
    uint64_t n;
    int rc = rd_u32(c, "array element type", &elem);
    if (!rc) rc = rd_u64(c, "array element count", &n);
    if (rc) return rc;
    if (elem >= TB_GGUF_VTYPE_COUNT)
        return FMT_ERR(c, at, "key '%s': unknown array element type %" PRIu32 " (expected 0..%d)",
                       key, elem, TB_GGUF_VTYPE_COUNT - 1);
    /* smallest encoding of one element: its size, 8 (string length) or 12 (array header) */
    uint64_t min = tb_gguf_vtype_size(elem);
    if (elem == TB_GGUF_STRING) min = 8;
    if (elem == TB_GGUF_ARRAY) min = 12;
    if (n > remain(c) / min)
        return FMT_ERR(c, at + 4, "key '%s': array of %" PRIu64 " %s exceeds what the file can hold"
                       " (%" PRIu64 " bytes left, file is %" PRIu64 " bytes)",
                       key, n, tb_gguf_vtype_name(elem), remain(c), c->size);
    g->arrs[slot] = (arr_desc_t){.elem = elem, .n = n, .off = c->pos, .sub = -1};

    if (elem == TB_GGUF_STRING) {
        rc = vec_reserve((void **)&g->stroffs, &g->cap_stroffs, g->n_stroffs + n, sizeof *g->stroffs);
        if (rc) return rc;
        g->arrs[slot].sub = (int64_t)g->n_stroffs;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t off, len;
            g->stroffs[g->n_stroffs++] = c->pos;
            rc = rd_str(c, "string array element", &off, &len);
            if (rc) return rc;
        }
    } else if (elem == TB_GGUF_ARRAY) {
        rc = vec_reserve((void **)&g->arrs, &g->cap_arrs, g->n_arrs + n, sizeof *g->arrs);
        if (rc) return rc;
        uint64_t first = g->n_arrs;
        g->n_arrs += n;
        g->arrs[slot].sub = (int64_t)first;
        for (uint64_t i = 0; i < n; i++) {
            rc = parse_array(g, c, first + i, depth + 1, key);
            if (rc) return rc;
        }
    } else {
        c->pos += n * min;   /* n * min <= remain, checked above */
    }
    return TB_OK;
}

/* Parse one key/value at the cursor into g->kvs[i]. */
static int parse_kv(tb_gguf_t *g, cursor_t *c, int64_t i) {
    uint64_t at = c->pos, off, len, name;
    kv_entry_t *kv = &g->kvs[i];
    int rc = rd_str(c, "key", &off, &len);
    if (!rc) rc = add_name(g, c, at, off, len, "key", &name);
    if (rc) return rc;
    kv->at = at;
    kv->key = name;
    kv->arr = -1;
    const char *key = g->names + name;

    uint64_t tat = c->pos;
    rc = rd_u32(c, "value type", &kv->type);
    if (rc) return rc;
    if (kv->type >= TB_GGUF_VTYPE_COUNT)
        return FMT_ERR(c, tat, "key '%s': unknown value type %" PRIu32 " (expected 0..%d)",
                       key, kv->type, TB_GGUF_VTYPE_COUNT - 1);
    kv->off = c->pos;
    if (kv->type == TB_GGUF_STRING) {
        rc = rd_str(c, "string value", &off, &len);
    } else if (kv->type == TB_GGUF_ARRAY) {
        rc = vec_reserve((void **)&g->arrs, &g->cap_arrs, g->n_arrs + 1, sizeof *g->arrs);
        if (rc) return rc;
        kv = &g->kvs[i];
        kv->arr = (int64_t)g->n_arrs++;
        rc = parse_array(g, c, (uint64_t)kv->arr, 1, key);
    } else {
        size_t sz = tb_gguf_vtype_size(kv->type);
        rc = need(c, sz, tb_gguf_vtype_name(kv->type));
        c->pos += rc ? 0 : sz;
    }
    if (rc) return rc;
    g->kvs[i].end = c->pos;
    return TB_OK;
}

/* Decode the value of vtype `type` at file offset `off` (already validated). */
static void decode(const tb_gguf_t *g, uint32_t type, uint64_t off, int64_t arr, tb_gguf_value_t *out) {
    const uint8_t *p = g->base + off;
    memset(out, 0, sizeof *out);
    out->type = (tb_gguf_vtype_t)type;
    switch (type) {
    case TB_GGUF_UINT8: case TB_GGUF_BOOL: out->v.u64 = p[0]; break;
    case TB_GGUF_INT8: out->v.i64 = (int8_t)p[0]; break;
    case TB_GGUF_UINT16: { uint16_t x; memcpy(&x, p, 2); out->v.u64 = x; break; }
    case TB_GGUF_INT16: { int16_t x; memcpy(&x, p, 2); out->v.i64 = x; break; }
    case TB_GGUF_UINT32: { uint32_t x; memcpy(&x, p, 4); out->v.u64 = x; break; }
    case TB_GGUF_INT32: { int32_t x; memcpy(&x, p, 4); out->v.i64 = x; break; }
    case TB_GGUF_UINT64: memcpy(&out->v.u64, p, 8); break;
    case TB_GGUF_INT64: memcpy(&out->v.i64, p, 8); break;
    case TB_GGUF_FLOAT32: { float x; memcpy(&x, p, 4); out->v.f64 = x; break; }
    case TB_GGUF_FLOAT64: memcpy(&out->v.f64, p, 8); break;
    case TB_GGUF_STRING:
        memcpy(&out->v.str.len, p, 8);
        out->v.str.ptr = (const char *)p + 8;
        break;
    case TB_GGUF_ARRAY: {
        const arr_desc_t *d = &g->arrs[arr];
        out->v.arr.type = (tb_gguf_vtype_t)d->elem;
        out->v.arr.n = d->n;
        out->v.arr.handle = d;
        break;
    }
    }
}

/* ===================================================================== */
/* Tensor infos                                                           */
/* ===================================================================== */

/* Parse tensor info i at the cursor (shape, type; offsets checked later). */
static int parse_tensor(tb_gguf_t *g, cursor_t *c, int64_t i) {
    uint64_t at = c->pos, off, len, name;
    g->tensor_at[i] = at;
    int rc = rd_str(c, "tensor name", &off, &len);
    if (!rc) rc = add_name(g, c, at, off, len, "tensor name", &name);
    if (rc) return rc;
    g->tensor_name_off[i] = name;
    const char *tname = g->names + name;

    tb_gguf_tensor_t *t = &g->tensors[i];
    uint32_t n_dims, type;
    uint64_t dat = c->pos;
    if ((rc = rd_u32(c, "tensor n_dims", &n_dims))) return rc;
    if (n_dims < 1 || n_dims > 4)
        return FMT_ERR(c, dat, "tensor '%s': n_dims %" PRIu32 " (expected 1..4)", tname, n_dims);
    t->n_dims = (int)n_dims;
    for (int d = 0; d < 4; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t ne, nat = c->pos;
        if ((rc = rd_u64(c, "tensor dimension", &ne))) return rc;
        if (ne == 0 || ne > (uint64_t)INT64_MAX)
            return FMT_ERR(c, nat, "tensor '%s': dimension %" PRIu32 " is %" PRId64 " (expected 1..2^63-1)",
                           tname, d, (int64_t)ne);
        t->ne[d] = (int64_t)ne;
    }
    uint64_t tat = c->pos;
    if ((rc = rd_u32(c, "tensor type", &type))) return rc;
    if (!tb_type_supported(type))
        return FMT_ERR(c, tat, "tensor '%s': unsupported tensor type %" PRIu32 " (expected one of f32, f16,"
                       " bf16, q4_0, q8_0, q4_K, q6_K, tq1_0, tq2_0)", tname, type);
    t->type = (tb_type_t)type;
    if ((rc = rd_u64(c, "tensor data offset", &t->offset))) return rc;

    /* size: ne0 a block multiple; elements and bytes without overflow */
    uint64_t blck = (uint64_t)tb_type_block_elems(t->type), bb = tb_type_block_bytes(t->type);
    if ((uint64_t)t->ne[0] % blck)
        return FMT_ERR(c, dat, "tensor '%s': row length %" PRId64 " is not a multiple of %s's block of %" PRIu64,
                       tname, t->ne[0], tb_type_name(t->type), blck);
    uint64_t elems = (uint64_t)t->ne[0], bytes = (uint64_t)t->ne[0] / blck * bb;
    bool ovf = __builtin_mul_overflow((uint64_t)t->ne[0] / blck, bb, &bytes);
    for (int d = 1; d < 4; d++) {
        ovf |= __builtin_mul_overflow(elems, (uint64_t)t->ne[d], &elems);
        ovf |= __builtin_mul_overflow(bytes, (uint64_t)t->ne[d], &bytes);
    }
    if (ovf || elems > (uint64_t)INT64_MAX)
        return FMT_ERR(c, dat, "tensor '%s': shape [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                       "] of %s overflows 64 bits", tname, t->ne[0], t->ne[1], t->ne[2], t->ne[3],
                       tb_type_name(t->type));
    t->nbytes = bytes;
    return TB_OK;
}

typedef struct span { uint64_t off, end; int64_t i; } span_t;

static int span_cmp(const void *a, const void *b) {
    const span_t *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* Check tensor offsets: aligned, inside the file, not overlapping. */
static int check_offsets(tb_gguf_t *g, const cursor_t *c) {
    const uint64_t *info_at = g->tensor_at;
    if (g->n_tensors == 0) return TB_OK;
    if (g->data_off > g->size)
        return FMT_ERR(c, g->size, "the data section should start at 0x%" PRIx64
                       " but the file ends at 0x%" PRIx64 " (file is %" PRIu64 " bytes)",
                       g->data_off, g->size, g->size);
    uint64_t room = g->size - g->data_off;
    span_t *sp = malloc((size_t)g->n_tensors * sizeof *sp);
    if (!sp) return tb_err(TB_ERR_NOMEM, "%s: out of memory sorting %" PRId64 " tensors", g->path, g->n_tensors);
    int rc = TB_OK;
    for (int64_t i = 0; i < g->n_tensors && !rc; i++) {
        const tb_gguf_tensor_t *t = &g->tensors[i];
        const char *tname = g->names + g->tensor_name_off[i];
        if (t->offset % g->alignment)
            rc = FMT_ERR(c, info_at[i], "tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                         tname, t->offset, g->alignment);
        else if (t->offset > room || t->nbytes > room - t->offset)
            rc = FMT_ERR(c, info_at[i], "tensor '%s': data [0x%" PRIx64 ", +%" PRIu64 " bytes) lies outside"
                         " the file (data section 0x%" PRIx64 "..0x%" PRIx64 ", file is %" PRIu64 " bytes)",
                         tname, t->offset, t->nbytes, g->data_off, g->size, g->size);
        sp[i] = (span_t){t->offset, t->offset + t->nbytes, i};
    }
    if (!rc) {
        qsort(sp, (size_t)g->n_tensors, sizeof *sp, span_cmp);
        for (int64_t k = 1; k < g->n_tensors && !rc; k++)
            if (sp[k].off < sp[k - 1].end)
                rc = FMT_ERR(c, info_at[sp[k].i], "tensor '%s': data at offset %" PRIu64 " overlaps tensor '%s'"
                             " (%" PRIu64 "..%" PRIu64 ")", g->names + g->tensor_name_off[sp[k].i], sp[k].off,
                             g->names + g->tensor_name_off[sp[k - 1].i], sp[k - 1].off, sp[k - 1].end);
    }
    free(sp);
    return rc;
}

/* Index the n names of a table (name_of/at_of give entry i's name and
 * record offset); a repeated name is a format error at its second record. */
static int build_index(tb_gguf_t *g, const cursor_t *c, name_index_t *ix, int64_t n,
                       const char *(*name_of)(const tb_gguf_t *, int64_t),
                       uint64_t (*at_of)(const tb_gguf_t *, int64_t), const char *what) {
    int rc = index_init(ix, n);
    for (int64_t i = 0; i < n && !rc; i++) {
        uint64_t slot = index_slot(ix, name_of(g, i), name_of, g, &ix->probes);
        if (ix->slots[slot] >= 0)
            return FMT_ERR(c, at_of(g, i), "duplicate %s '%s' (first at offset 0x%" PRIx64 "; expected each once)",
                           what, name_of(g, i), at_of(g, ix->slots[slot]));
        ix->slots[slot] = i;
    }
    return rc;
}

/* ===================================================================== */
/* Open / close                                                           */
/* ===================================================================== */

/* general.alignment: uint32, a power of two; default 32. */
static int read_alignment(tb_gguf_t *g, const cursor_t *c) {
    g->alignment = TB_GGUF_DEFAULT_ALIGNMENT;
    int64_t i = tb_gguf_find_kv(g, TB_GGUF_KEY_ALIGNMENT);
    if (i < 0) return TB_OK;
    const kv_entry_t *kv = &g->kvs[i];
    if (kv->type != TB_GGUF_UINT32)
        return FMT_ERR(c, kv->off - 4, "'%s' has type %s (expected uint32)", TB_GGUF_KEY_ALIGNMENT,
                       tb_gguf_vtype_name(kv->type));
    uint32_t a;
    memcpy(&a, g->base + kv->off, 4);
    if (a == 0 || (a & (a - 1)))
        return FMT_ERR(c, kv->off, "'%s' is %" PRIu32 " (expected a non-zero power of two)",
                       TB_GGUF_KEY_ALIGNMENT, a);
    g->alignment = a;
    return TB_OK;
}

/* Everything after the mapping: header, kvs, tensor infos, offsets. */
static int parse(tb_gguf_t *g) {
    cursor_t c = {g->base, g->size, 0, g->path};
    int rc = need(&c, 4, "the magic 'GGUF'");
    if (rc) return rc;
    if (memcmp(g->base, TB_GGUF_MAGIC, 4) != 0)
        return FMT_ERR(&c, 0, "bad magic %02x %02x %02x %02x (expected 'GGUF')",
                       g->base[0], g->base[1], g->base[2], g->base[3]);
    c.pos = 4;
    if ((rc = rd_u32(&c, "the version", &g->version))) return rc;
    if (g->version == 0x03000000u || g->version == 0x02000000u)
        return FMT_ERR(&c, 4, "big-endian GGUF (expected a little-endian file)");
    if (g->version != 2 && g->version != 3)
        return FMT_ERR(&c, 4, "version %" PRIu32 " (expected 2 or 3)", g->version);

    uint64_t n_tensors, n_kv;
    if ((rc = rd_u64(&c, "the tensor count", &n_tensors))) return rc;
    if ((rc = rd_u64(&c, "the key/value count", &n_kv))) return rc;
    /* smallest records: kv 8+1+4+1 bytes, tensor info 8+1+4+8+4+8 */
    if (n_kv > remain(&c) / 14)
        return FMT_ERR(&c, 16, "key/value count %" PRIu64 " exceeds what the file can hold (file is %" PRIu64 " bytes)",
                       n_kv, g->size);
    if (n_tensors > remain(&c) / 33)
        return FMT_ERR(&c, 8, "tensor count %" PRIu64 " exceeds what the file can hold (file is %" PRIu64 " bytes)",
                       n_tensors, g->size);
    g->n_kv = (int64_t)n_kv;
    g->n_tensors = (int64_t)n_tensors;

    /* tables grow with what is actually parsed, not with the claimed counts */
    for (int64_t i = 0; i < g->n_kv && !rc; i++) {
        rc = vec_reserve((void **)&g->kvs, &g->cap_kvs, (uint64_t)i + 1, sizeof *g->kvs);
        if (!rc) rc = parse_kv(g, &c, i);
    }
    if (!rc) rc = build_index(g, &c, &g->kv_index, g->n_kv, kv_name, kv_at, "key");
    if (!rc) rc = read_alignment(g, &c);
    for (int64_t i = 0; i < g->n_tensors && !rc; i++) {
        uint64_t n = (uint64_t)i + 1;
        rc = vec_reserve((void **)&g->tensors, &g->cap_tensors, n, sizeof *g->tensors);
        if (!rc) rc = vec_reserve((void **)&g->tensor_name_off, &g->cap_tensor_name_off, n, sizeof(uint64_t));
        if (!rc) rc = vec_reserve((void **)&g->tensor_at, &g->cap_tensor_at, n, sizeof(uint64_t));
        if (!rc) rc = parse_tensor(g, &c, i);
    }
    if (!rc) rc = build_index(g, &c, &g->tensor_index, g->n_tensors, tensor_name, tensor_at, "tensor name");
    if (!rc) {
        /* The data section starts at the aligned end of the infos. A file
         * without tensors may end before that (no padding written): then
         * data_off lies past the end, which is harmless as nothing is read. */
        g->data_off = tb_gguf_align_up(c.pos, g->alignment);
        rc = check_offsets(g, &c);
    }
    if (rc) return rc;

    for (int64_t i = 0; i < g->n_tensors; i++) {
        tb_gguf_tensor_t *t = &g->tensors[i];
        t->name = g->names + g->tensor_name_off[i];
        t->data = g->base + g->data_off + t->offset;
    }
    return TB_OK;
}

int tb_gguf_open(const char *path, tb_gguf_t **out) {
    if (!path || !out) return tb_err(TB_ERR_ARG, "tb_gguf_open: NULL argument");
    *out = NULL;
    tb_gguf_t *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(path))) {
        free(g);
        return tb_err(TB_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);   /* a FIFO must not block: it is refused below */
    if (fd < 0) {
        int e = errno;
        tb_gguf_close(g);
        return tb_err(TB_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    struct stat st;
    int rc = TB_OK;
    if (fstat(fd, &st) != 0)
        rc = tb_err(TB_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = tb_err(TB_ERR_IO, "%s: not a regular file", path);
    else if ((uint64_t)st.st_size > SIZE_MAX)
        rc = tb_err(TB_ERR_IO, "%s: file of %lld bytes does not fit the address space", path, (long long)st.st_size);
    if (!rc && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) rc = tb_err(TB_ERR_IO, "%s: cannot mmap %lld bytes: %s", path,
                                         (long long)st.st_size, strerror(errno));
        else g->base = p;
    }
    if (!rc) g->size = (uint64_t)st.st_size;
    close(fd);
    if (!rc) rc = parse(g);
    if (rc) {
        tb_gguf_close(g);
        return rc;
    }
    *out = g;
    return TB_OK;
}

void tb_gguf_close(tb_gguf_t *g) {
    if (!g) return;
    if (g->base) munmap((void *)g->base, (size_t)g->size);
    free(g->kvs);
    free(g->arrs);
    free(g->stroffs);
    free(g->names);
    free(g->tensors);
    free(g->tensor_name_off);
    free(g->tensor_at);
    free(g->kv_index.slots);
    free(g->tensor_index.slots);
    free(g->path);
    free(g);
}

/* ===================================================================== */
/* Queries                                                                */
/* ===================================================================== */

uint32_t tb_gguf_version(const tb_gguf_t *g) { return g->version; }
uint64_t tb_gguf_alignment(const tb_gguf_t *g) { return g->alignment; }
uint64_t tb_gguf_file_size(const tb_gguf_t *g) { return g->size; }
uint64_t tb_gguf_data_offset(const tb_gguf_t *g) { return g->data_off; }
const char *tb_gguf_path(const tb_gguf_t *g) { return g->path; }
int64_t tb_gguf_n_kv(const tb_gguf_t *g) { return g->n_kv; }
int64_t tb_gguf_n_tensors(const tb_gguf_t *g) { return g->n_tensors; }

const char *tb_gguf_kv_key(const tb_gguf_t *g, int64_t i) {
    return i >= 0 && i < g->n_kv ? kv_name(g, i) : NULL;
}

int tb_gguf_kv_value(const tb_gguf_t *g, int64_t i, tb_gguf_value_t *out) {
    if (i < 0 || i >= g->n_kv)
        return tb_err(TB_ERR_RANGE, "%s: key/value index %" PRId64 " out of range (file has %" PRId64 ")",
                      g->path, i, g->n_kv);
    decode(g, g->kvs[i].type, g->kvs[i].off, g->kvs[i].arr, out);
    return TB_OK;
}

int tb_gguf_kv_raw(const tb_gguf_t *g, int64_t i, uint32_t *type, const uint8_t **bytes, uint64_t *len) {
    if (i < 0 || i >= g->n_kv)
        return tb_err(TB_ERR_RANGE, "%s: key/value index %" PRId64 " out of range (file has %" PRId64 ")",
                      g->path, i, g->n_kv);
    *type = g->kvs[i].type;
    *bytes = g->base + g->kvs[i].off;
    *len = g->kvs[i].end - g->kvs[i].off;
    return TB_OK;
}

int64_t tb_gguf_find_kv(const tb_gguf_t *g, const char *key) {
    if (!key) return -1;
    uint64_t probes = 0;
    return g->kv_index.slots[index_slot(&g->kv_index, key, kv_name, g, &probes)];
}

int64_t tb_gguf_find_tensor(const tb_gguf_t *g, const char *name) {
    if (!name) return -1;
    uint64_t probes = 0;
    return g->tensor_index.slots[index_slot(&g->tensor_index, name, tensor_name, g, &probes)];
}

void tb_gguf_index_probes(const tb_gguf_t *g, uint64_t *kv, uint64_t *tensors) {
    *kv = g->kv_index.probes;
    *tensors = g->tensor_index.probes;
}

int tb_gguf_arr_get(const tb_gguf_t *g, const tb_gguf_value_t *arr, uint64_t idx, tb_gguf_value_t *out) {
    const arr_desc_t *d = arr ? arr->v.arr.handle : NULL;
    uintptr_t h = (uintptr_t)d, lo = (uintptr_t)g->arrs;   /* integers: d may belong to another file */
    if (!arr || arr->type != TB_GGUF_ARRAY || h < lo || h >= lo + g->n_arrs * sizeof *d
        || (h - lo) % sizeof *d)
        return tb_err(TB_ERR_ARG, "%s: tb_gguf_arr_get: not an array value of this file", g->path);
    if (idx >= d->n)
        return tb_err(TB_ERR_RANGE, "%s: array index %" PRIu64 " out of range (array has %" PRIu64 ")",
                      g->path, idx, d->n);
    if (d->elem == TB_GGUF_STRING)
        decode(g, d->elem, g->stroffs[(uint64_t)d->sub + idx], -1, out);
    else if (d->elem == TB_GGUF_ARRAY)
        decode(g, d->elem, 0, d->sub + (int64_t)idx, out);
    else
        decode(g, d->elem, d->off + idx * tb_gguf_vtype_size(d->elem), -1, out);
    return TB_OK;
}

int tb_gguf_tensor(const tb_gguf_t *g, int64_t i, tb_gguf_tensor_t *out) {
    if (i < 0 || i >= g->n_tensors)
        return tb_err(TB_ERR_RANGE, "%s: tensor index %" PRId64 " out of range (file has %" PRId64 ")",
                      g->path, i, g->n_tensors);
    *out = g->tensors[i];
    return TB_OK;
}

/* ===================================================================== */
/* Typed getters                                                          */
/* ===================================================================== */

/* Find `key` and decode it; TB_ERR_NOT_FOUND if absent. */
static int lookup(const tb_gguf_t *g, const char *key, tb_gguf_value_t *v) {
    int64_t i = tb_gguf_find_kv(g, key);
    if (i < 0) return tb_err(TB_ERR_NOT_FOUND, "%s: key '%s' not found", g->path, key ? key : "(null)");
    return tb_gguf_kv_value(g, i, v);
}

static bool is_unsigned(tb_gguf_vtype_t t) {
    return t == TB_GGUF_UINT8 || t == TB_GGUF_UINT16 || t == TB_GGUF_UINT32 || t == TB_GGUF_UINT64;
}
static bool is_signed(tb_gguf_vtype_t t) {
    return t == TB_GGUF_INT8 || t == TB_GGUF_INT16 || t == TB_GGUF_INT32 || t == TB_GGUF_INT64;
}

static int mismatch(const tb_gguf_t *g, const char *key, const tb_gguf_value_t *v, const char *want) {
    int64_t i = tb_gguf_find_kv(g, key);
    return tb_err(TB_ERR_FORMAT, "%s: offset 0x%" PRIx64 ": key '%s' holds a %s (expected %s)",
                  g->path, g->kvs[i].off, key, tb_gguf_vtype_name(v->type), want);
}

int tb_gguf_get_u32(const tb_gguf_t *g, const char *key, uint32_t *out) {
    tb_gguf_value_t v;
    int rc = lookup(g, key, &v);
    if (rc) return rc;
    if (is_unsigned(v.type) && v.v.u64 <= UINT32_MAX) *out = (uint32_t)v.v.u64;
    else if (is_signed(v.type) && v.v.i64 >= 0 && v.v.i64 <= UINT32_MAX) *out = (uint32_t)v.v.i64;
    else return mismatch(g, key, &v, "an integer in 0..4294967295");
    return TB_OK;
}

int tb_gguf_get_i64(const tb_gguf_t *g, const char *key, int64_t *out) {
    tb_gguf_value_t v;
    int rc = lookup(g, key, &v);
    if (rc) return rc;
    if (is_unsigned(v.type) && v.v.u64 <= (uint64_t)INT64_MAX) *out = (int64_t)v.v.u64;
    else if (is_signed(v.type)) *out = v.v.i64;
    else return mismatch(g, key, &v, "an integer in the int64 range");
    return TB_OK;
}

int tb_gguf_get_f32(const tb_gguf_t *g, const char *key, float *out) {
    tb_gguf_value_t v;
    int rc = lookup(g, key, &v);
    if (rc) return rc;
    if (v.type != TB_GGUF_FLOAT32 && v.type != TB_GGUF_FLOAT64) return mismatch(g, key, &v, "float32 or float64");
    *out = (float)v.v.f64;
    return TB_OK;
}

int tb_gguf_get_bool(const tb_gguf_t *g, const char *key, bool *out) {
    tb_gguf_value_t v;
    int rc = lookup(g, key, &v);
    if (rc) return rc;
    if (v.type != TB_GGUF_BOOL) return mismatch(g, key, &v, "bool");
    *out = v.v.u64 != 0;
    return TB_OK;
}

int tb_gguf_get_str(const tb_gguf_t *g, const char *key, char *buf, size_t cap) {
    tb_gguf_value_t v;
    int rc = lookup(g, key, &v);
    if (rc) return rc;
    if (v.type != TB_GGUF_STRING) return mismatch(g, key, &v, "string");
    if (!buf || v.v.str.len >= cap)
        return tb_err(TB_ERR_RANGE, "%s: string '%s' of %" PRIu64 " bytes does not fit a buffer of %zu",
                      g->path, key, v.v.str.len, cap);
    memcpy(buf, v.v.str.ptr, (size_t)v.v.str.len);
    buf[v.v.str.len] = '\0';
    return TB_OK;
}
