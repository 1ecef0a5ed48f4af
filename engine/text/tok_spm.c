/*
 * tok_spm.c — SentencePiece-BPE encoding ("tokenizer.ggml.model = llama"),
 * the algorithm of llama.cpp's llm_tokenizer_spm:
 *
 *   1. optionally prepend one space; replace every ' ' by U+2581 "▁";
 *   2. split into UTF-8 characters (a malformed byte is its own symbol);
 *   3. repeatedly merge the adjacent pair whose concatenation is a token
 *      with the highest score (ties: leftmost pair first);
 *   4. emit each final symbol's token, or, when it is not a token, one
 *      <0xXX> byte token per byte (byte fallback; <unk> if even that is
 *      missing from the vocab).
 */
#include "text/text.h"

#include <string.h>

#define SPACE_ESC "\xE2\x96\x81"   /* U+2581 LOWER ONE EIGHTH BLOCK */

/* A pair merges when its concatenation is a token; the best score first. */
static bool pair_prio(const tb_tokenizer_t *t, const tb_symbol_t *l, const tb_symbol_t *r,
                      double *prio) {
    int32_t id = tb_vocab_find(t, l->text, (size_t)(l->n + r->n));
    if (id < 0) return false;
    *prio = t->score[id];
    return true;
}

/* Emit symbol text as its token or as byte-fallback tokens. */
static int emit(const tb_tokenizer_t *t, const tb_symbol_t *sym, tb_ids_t *out) {
    int32_t id = tb_vocab_find(t, sym->text, (size_t)sym->n);
    if (id >= 0) return tb_ids_push(out, id);
    for (int32_t j = 0; j < sym->n; j++) {
        int32_t b = t->byte_tok[(uint8_t)sym->text[j]];
        if (b < 0) b = t->unk;
        if (b < 0)
            return tb_err(TB_ERR_UNSUPPORTED, "tokenizer: byte 0x%02X has no <0x%02X> token and "
                          "the vocab has no <unk>", (uint8_t)sym->text[j], (uint8_t)sym->text[j]);
        int rc = tb_ids_push(out, b);
        if (rc != TB_OK) return rc;
    }
    return TB_OK;
}

int tb_spm_encode(const tb_tokenizer_t *t, tb_tok_scratch_t *s, const char *text, size_t len,
                  bool prefix, tb_ids_t *out) {
    /* 1. escape: every byte grows to at most 3 */
    int rc = tb_tok_scratch_buf(s, 3 * (len + 1));
    if (rc != TB_OK) return rc;
    char *e = s->buf;   // (3 * (len + 1)) escaped text
    size_t n = 0;
    if (prefix) { memcpy(e, SPACE_ESC, 3); n = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(e + n, SPACE_ESC, 3); n += 3; }
        else e[n++] = text[i];
    }
    if (n == 0) return TB_OK;

    /* 2-3. one symbol per UTF-8 character, merged by score */
    if ((rc = tb_tok_merge(t, s, e, n, pair_prio)) != TB_OK) return rc;

    /* 4. emit */
    for (int32_t i = 0; i != -1; i = s->sym[i].next)
        if ((rc = emit(t, &s->sym[i], out)) != TB_OK) return rc;
    return TB_OK;
}
