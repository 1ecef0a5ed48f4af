/*
 * tokenize.c — tb_tokenize: special-token partition, BOS/EOS, dispatch.
 *
 * As llama.cpp's tokenizer_st_partition: the text is a list of fragments,
 * initially one raw fragment. For each special token, longest text first
 * (ties: lower id first), every raw fragment is cut at each occurrence of
 * the token's text (left to right, non-overlapping). User-defined tokens
 * are always matched; control and unknown tokens only with parse_special.
 * Raw fragments are then encoded by the vocab's model; token fragments
 * are emitted as is.
 *
 * SPM prepends a space (add_space_prefix) to a raw fragment at the start
 * of the text or right after a special token, as llama.cpp.
 */
#include "text/text.h"

#include <stdlib.h>
#include <string.h>

/* A fragment: raw text [off, off+len) when id < 0, else the token id. */
typedef struct frag { size_t off, len; int32_t id; } frag_t;

typedef struct frags { frag_t *v; size_t n, cap; } frags_t;

static int frag_push(frags_t *f, frag_t x) {
    if (f->n == f->cap) {
        size_t nc = f->cap ? 2 * f->cap : 16;
        frag_t *nv = realloc(f->v, nc * sizeof *nv);
        if (!nv) return tb_err(TB_ERR_NOMEM, "tokenizer: %zu fragments", nc);
        f->v = nv;
        f->cap = nc;
    }
    f->v[f->n++] = x;
    return TB_OK;
}

/* Cut every raw fragment of *cur at occurrences of token id's text. */
static int cut_special(const tb_tokenizer_t *t, const char *text, int32_t id, frags_t *cur,
                       frags_t *next) {
    const char *st = t->text[id];
    size_t sl = t->len[id];
    next->n = 0;
    int rc = TB_OK;
    for (size_t i = 0; i < cur->n && rc == TB_OK; i++) {
        frag_t f = cur->v[i];
        if (f.id >= 0 || f.len < sl) { rc = frag_push(next, f); continue; }
        size_t pos = f.off, end = f.off + f.len;
        while (rc == TB_OK) {
            const char *hit = memmem(text + pos, end - pos, st, sl);
            if (!hit) {
                if (end > pos) rc = frag_push(next, (frag_t){pos, end - pos, -1});
                break;
            }
            size_t h = (size_t)(hit - text);
            if (h > pos) rc = frag_push(next, (frag_t){pos, h - pos, -1});
            if (rc == TB_OK) rc = frag_push(next, (frag_t){h, sl, id});
            pos = h + sl;
        }
    }
    frags_t tmp = *cur;
    *cur = *next;
    *next = tmp;
    return rc;
}

/* Encode into out (the whole pipeline). */
static int encode(const tb_tokenizer_t *t, const char *text, size_t len, bool add_special,
                  bool parse_special, tb_ids_t *out) {
    frags_t cur = {0}, next = {0};
    tb_tok_scratch_t s = {0};
    int rc = TB_OK;
    if (len > 0) rc = frag_push(&cur, (frag_t){0, len, -1});
    for (int32_t k = 0; k < t->n_specials && rc == TB_OK; k++) {
        int32_t id = t->specials[k];
        if (!parse_special && t->type[id] != TB_TOKTYPE_USER_DEFINED) continue;
        rc = cut_special(t, text, id, &cur, &next);
    }
    if (rc == TB_OK && add_special && t->add_bos && t->bos >= 0) rc = tb_ids_push(out, t->bos);
    bool prev_special = true;
    for (size_t i = 0; i < cur.n && rc == TB_OK; i++) {
        frag_t f = cur.v[i];
        if (f.id >= 0) {
            rc = tb_ids_push(out, f.id);
            prev_special = true;
        } else if (t->model == TB_TOK_SPM) {
            rc = tb_spm_encode(t, &s, text + f.off, f.len, t->add_space_prefix && prev_special, out);
            prev_special = false;
        } else {
            rc = tb_bpe_encode(t, &s, text + f.off, f.len, out);
            prev_special = false;
        }
    }
    if (rc == TB_OK && add_special && t->add_eos && t->eos >= 0) rc = tb_ids_push(out, t->eos);
    free(cur.v);
    free(next.v);
    tb_tok_scratch_free(&s);
    return rc;
}

int tb_tokenize(const tb_tokenizer_t *t, const char *text, size_t len, bool add_special,
                bool parse_special, int32_t *ids, int max_ids) {
    if (!t || (!text && len > 0) || max_ids < 0 || (!ids && max_ids > 0))
        return tb_err(TB_ERR_ARG, "tb_tokenize: invalid argument (t=%p text=%p ids=%p max_ids=%d)",
                      (const void *)t, (const void *)text, (void *)ids, max_ids);
    if (len > (size_t)INT32_MAX / 4)
        return tb_err(TB_ERR_RANGE, "tb_tokenize: text of %zu bytes is too long", len);
    tb_ids_t out = {0};
    int rc = encode(t, text, len, add_special, parse_special, &out);
    if (rc == TB_OK && out.n > (size_t)INT32_MAX)
        rc = tb_err(TB_ERR_RANGE, "tb_tokenize: %zu tokens", out.n);
    if (rc == TB_OK) {
        if (out.n > 0 && max_ids > 0) memcpy(ids, out.v, TB_MIN(out.n, (size_t)max_ids) * sizeof *ids);
        rc = (int)out.n;
    }
    free(out.v);
    return rc;
}
