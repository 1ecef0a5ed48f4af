/*
 * repack.c — the registry of load-time repacked weight copies.
 *
 * A tier whose kernels run faster on another in-memory layout (rows
 * interleaved, codes transposed) sets `repack` for the type. The model
 * loader registers every weight stack once; the active tier's repack makes
 * a copy in its layout and the registry remembers (file address -> copy).
 * That tier's matvec/gemm look their W up here and read the copy when one
 * exists. The file layout is never modified, so tb_matvec on arbitrary
 * buffers, the other tiers and tb_isa_set after loading all stay correct.
 *
 * Entries are kept sorted by file address; lookups binary-search under a
 * read lock. Each thread also remembers the entry it found last, valid
 * while the registry's generation (bumped by every change) is the one it
 * was found in: a kernel called chunk by chunk on one matrix then takes no
 * lock, whose shared counter would move between the cores on every call.
 */
#include "kernels/kernels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct entry {
    const void *owner;
    const uint8_t *base;      /* file data of matrix 0                   */
    size_t ws, mat_bytes;     /* file row stride, file matrix stride     */
    int64_t n_mat;
    size_t rp_mat_bytes;      /* repacked matrix stride                  */
    uint8_t *data;            /* (n_mat, rows padded, ...) repacked copy */
    bool owned;               /* data allocated (and freed) by the registry */
    tb_isa_t isa;
    tb_type_t type;
} entry;

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static entry *tab;            /* (n_tab) sorted by base */
static size_t n_tab, cap_tab;
static _Atomic uint64_t gen = 1;        /* bumped (under the write lock) by every change */
static _Thread_local struct {
    uint64_t gen;                       /* 0: nothing remembered */
    entry e;
} memo;

/* The copy for W in entry e (isa, type and stride matched), or NULL. */
static const void *entry_copy(const entry *e, const void *W, size_t ws, tb_isa_t isa, tb_type_t t) {
    if ((const uint8_t *)W < e->base || e->isa != isa || e->type != t || e->ws != ws) return NULL;
    const size_t off = (size_t)((const uint8_t *)W - e->base);
    if (off % e->mat_bytes || off / e->mat_bytes >= (size_t)e->n_mat) return NULL;
    return e->data + off / e->mat_bytes * e->rp_mat_bytes;
}

/* Index of the first entry with base > p. */
static size_t upper(const void *p) {
    size_t lo = 0, hi = n_tab;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((const uint8_t *)p < tab[mid].base) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

size_t tb_repack_size(tb_type_t t, size_t rb, int64_t rows, int64_t n_mat) {
    if ((unsigned)t >= TB_TYPE_COUNT || rows < 1 || n_mat < 1) return 0;
    const tb_type_kernels_t *e = &tb_kernels()->t[t];
    if (!e->repack || e->repack_rows < 1) return 0;
    return tb_repack_entry_bytes(e, rb, rows) * (size_t)n_mat;
}

int tb_repack_register(const void *owner, tb_type_t t, const void *W, size_t ws, int64_t rows,
                       int64_t n, int64_t n_mat, void *dst, size_t *extra) {
    return tb_repack_register_at(owner, t, W, ws, rows, n, n_mat, dst, 0, extra);
}

int tb_repack_register_at(const void *owner, tb_type_t t, const void *W, size_t ws, int64_t rows,
                          int64_t n, int64_t n_mat, void *dst, size_t dst_stride, size_t *extra) {
    if (extra) *extra = 0;
    if ((unsigned)t >= TB_TYPE_COUNT || !W || rows < 1 || n_mat < 1) return TB_OK;
    const tb_kernels_t *k = tb_kernels();
    const tb_type_kernels_t *e = &k->t[t];
    if (!e->repack || e->repack_rows < 1) return TB_OK;
    const size_t rp = tb_repack_entry_bytes(e, tb_type_row_bytes(t, n), rows);   /* n columns only */
    const size_t stride = dst_stride ? dst_stride : rp;     /* copy of matrix m at m * stride */
    assert(((uintptr_t)dst & 63) == 0);
    assert(!dst_stride || (dst && dst_stride % 64 == 0 && dst_stride >= rp));
    uint8_t *data = dst ? dst : tb_alloc_aligned(rp * (size_t)n_mat);
    if (!data)
        return tb_err(TB_ERR_NOMEM, "out of memory repacking %lld x %lld %s weights (%zu bytes)",
                      (long long)rows, (long long)n, tb_type_name(t), rp * (size_t)n_mat);
    for (int64_t m = 0; m < n_mat; m++)
        e->repack((const uint8_t *)W + (size_t)m * ws * (size_t)rows, ws, rows, n, data + (size_t)m * stride);
    pthread_rwlock_wrlock(&lock);
    if (n_tab == cap_tab) {
        size_t nc = cap_tab ? 2 * cap_tab : 64;
        entry *nt = realloc(tab, nc * sizeof *nt);
        if (!nt) {
            pthread_rwlock_unlock(&lock);
            if (!dst) tb_free_aligned(data);
            return tb_err(TB_ERR_NOMEM, "out of memory for the repack registry");
        }
        tab = nt;
        cap_tab = nc;
    }
    size_t at = upper(W);
    memmove(&tab[at + 1], &tab[at], (n_tab - at) * sizeof *tab);
    tab[at] = (entry){.owner = owner, .base = W, .ws = ws, .mat_bytes = ws * (size_t)rows,
                      .n_mat = n_mat, .rp_mat_bytes = stride, .data = data, .owned = !dst, .isa = k->isa, .type = t};
    n_tab++;
    atomic_fetch_add(&gen, 1);
    pthread_rwlock_unlock(&lock);
    if (extra) *extra = rp * (size_t)n_mat;
    return TB_OK;
}

void tb_repack_release(const void *owner) {
    pthread_rwlock_wrlock(&lock);
    size_t j = 0;
    for (size_t i = 0; i < n_tab; i++) {
        if (tab[i].owner == owner) {
            if (tab[i].owned) tb_free_aligned(tab[i].data);
        }
        else tab[j++] = tab[i];
    }
    n_tab = j;
    atomic_fetch_add(&gen, 1);
    if (n_tab == 0) {
        free(tab);
        tab = NULL;
        cap_tab = 0;
    }
    pthread_rwlock_unlock(&lock);
}

const void *tb_repack_lookup(const void *W, size_t ws, tb_isa_t isa, tb_type_t t) {
    const uint64_t g = atomic_load_explicit(&gen, memory_order_acquire);
    if (memo.gen == g) {
        const void *r = entry_copy(&memo.e, W, ws, isa, t);
        if (r) return r;
    }
    const void *r = NULL;
    pthread_rwlock_rdlock(&lock);
    size_t i = upper(W);
    if (i > 0) {
        r = entry_copy(&tab[i - 1], W, ws, isa, t);
        /* remembered under the generation read before the lock: a change
         * since then makes the next lookup search again */
        if (r) {
            memo.gen = g;
            memo.e = tab[i - 1];
        }
    }
    pthread_rwlock_unlock(&lock);
    return r;
}
