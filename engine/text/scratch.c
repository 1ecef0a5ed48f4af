/*
 * scratch.c — per-call growable buffers, the bigram priority queue and the
 * merge loop SPM and BPE share (they differ only in a pair's priority).
 */
#include "text/text.h"

#include <stdlib.h>

/* ===================================================================== */
/* Growable arrays                                                        */
/* ===================================================================== */

/* Grow *v (elements of size `esz`, capacity *cap) to hold at least n. */
static int grow(void **v, size_t *cap, size_t n, size_t esz, const char *what) {
    if (n <= *cap) return TB_OK;
    size_t nc = *cap ? *cap : 64;
    while (nc < n) nc *= 2;
    void *nv = realloc(*v, nc * esz);
    if (!nv) return tb_err(TB_ERR_NOMEM, "tokenizer: %s of %zu elements", what, nc);
    *v = nv;
    *cap = nc;
    return TB_OK;
}

int tb_ids_push(tb_ids_t *o, int32_t id) {
    int rc = grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v, "id list");
    if (rc != TB_OK) return rc;
    o->v[o->n++] = id;
    return TB_OK;
}

int tb_tok_scratch_buf(tb_tok_scratch_t *s, size_t n) {
    return grow((void **)&s->buf, &s->capbuf, n, 1, "text buffer");
}

int tb_tok_scratch_sym(tb_tok_scratch_t *s, size_t n) {
    return grow((void **)&s->sym, &s->capsym, n, sizeof *s->sym, "symbol list");
}

void tb_tok_scratch_free(tb_tok_scratch_t *s) {
    free(s->sym);
    free(s->heap.v);
    free(s->buf);
    free(s->spans);
    *s = (tb_tok_scratch_t){0};
}

/* ===================================================================== */
/* Bigram heap: max-heap on prio, then min on left                        */
/* ===================================================================== */

static bool before(const tb_bigram_t *a, const tb_bigram_t *b) {
    return a->prio > b->prio || (a->prio == b->prio && a->left < b->left);
}

int tb_heap_push(tb_bigram_heap_t *h, tb_bigram_t b) {
    int rc = grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v, "merge queue");
    if (rc != TB_OK) return rc;
    size_t i = h->n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(&b, &h->v[up])) break;
        h->v[i] = h->v[up];
        i = up;
    }
    h->v[i] = b;
    return TB_OK;
}

tb_bigram_t tb_heap_pop(tb_bigram_heap_t *h) {
    assert(h->n > 0);
    tb_bigram_t top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
        if (!before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0) h->v[i] = last;
    return top;
}

/* ===================================================================== */
/* Merge loop                                                             */
/* ===================================================================== */

/* Queue the pair (left, right) if `prio` says it is a merge. */
static int try_bigram(const tb_tokenizer_t *t, tb_tok_scratch_t *s, tb_pair_prio_fn prio,
                      int32_t left, int32_t right) {
    if (left < 0 || right < 0) return TB_OK;
    const tb_symbol_t *l = &s->sym[left], *r = &s->sym[right];
    double p;
    if (!prio(t, l, r, &p)) return TB_OK;
    return tb_heap_push(&s->heap, (tb_bigram_t){p, left, right, l->n + r->n});
}

int tb_tok_merge(const tb_tokenizer_t *t, tb_tok_scratch_t *s, const char *text, size_t n,
                 tb_pair_prio_fn prio) {
    assert(n > 0);
    int rc = tb_tok_scratch_sym(s, n);
    if (rc != TB_OK) return rc;
    s->nsym = 0;
    for (size_t off = 0; off < n;) {
        size_t k = TB_MIN(tb_utf8_len((uint8_t)text[off]), n - off);
        int32_t i = (int32_t)s->nsym++;
        s->sym[i] = (tb_symbol_t){text + off, (int32_t)k, i - 1, off + k == n ? -1 : i + 1};
        off += k;
    }
    s->heap.n = 0;
    for (int32_t i = 1; i < (int32_t)s->nsym; i++)
        if ((rc = try_bigram(t, s, prio, i - 1, i)) != TB_OK) return rc;
    while (s->heap.n > 0) {
        tb_bigram_t b = tb_heap_pop(&s->heap);
        tb_symbol_t *l = &s->sym[b.left], *r = &s->sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue;   /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s->sym[r->next].prev = b.left;
        if ((rc = try_bigram(t, s, prio, l->prev, b.left)) != TB_OK) return rc;
        if ((rc = try_bigram(t, s, prio, b.left, l->next)) != TB_OK) return rc;
    }
    return TB_OK;
}
