/*
 * scratch.c — per-call growable buffers and the bigram priority queue the
 * SPM and BPE merge loops share.
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
