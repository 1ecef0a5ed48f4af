/*
 * detok.c — token ids back to bytes, and the streaming detokenizer.
 *
 * tb_token_to_bytes follows llama.cpp's token_to_piece:
 *   control, unknown   their text only when `special`, else nothing
 *   user-defined       their text, verbatim
 *   byte "<0xXX>"      the byte
 *   normal             SPM: "▁" -> ' ';  BPE: GPT-2 alphabet -> bytes
 *                      (a code point outside the alphabet passes through
 *                      as its UTF-8, where llama.cpp would print a marker)
 *   unused             nothing
 * An "undefined" (type 0) token is treated as normal.
 *
 * tb_detok_* buffers bytes until they form complete UTF-8 characters, so
 * a character split across byte-fallback tokens is emitted whole, once.
 * Malformed sequences become U+FFFD (one per maximal ill-formed subpart,
 * as the Unicode standard recommends). The first non-empty piece of an
 * SPM stream loses one leading space (the one add_space_prefix added).
 * The detokenizer never prints control tokens (special = false).
 * A piece has no length limit: text that does not fit the caller's buffer
 * stays pending and comes out of the next tb_detok_drain / tb_detok_flush
 * (callers loop until 0), so no byte is dropped.
 */
#include "text/text.h"

#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* One token                                                              */
/* ===================================================================== */

/* Append byte c at *n (writing only below cap). */
static inline void put(char *buf, size_t cap, size_t *n, char c) {
    if (*n < cap) buf[*n] = c;
    (*n)++;
}

/* The byte of a "<0xXX>" text, or -1. */
static int hex_byte(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Decode GPT-2-alphabet text s[0..n) to bytes. */
static size_t bpe_unmap(const char *s, size_t n, char *buf, size_t cap) {
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = (uint8_t)s[i];
        size_t k = TB_MIN(tb_utf8_len(c), n - i);
        int b = -1;
        if (k == 1)
            b = tb_bpe_cp_to_byte(c);
        else if (k == 2 && ((uint8_t)s[i + 1] & 0xC0) == 0x80)
            b = tb_bpe_cp_to_byte(((c & 0x1Fu) << 6) | ((uint8_t)s[i + 1] & 0x3Fu));
        if (b >= 0) {
            put(buf, cap, &w, (char)b);
        } else {
            for (size_t j = 0; j < k; j++) put(buf, cap, &w, s[i + j]);
        }
        i += k;
    }
    return w;
}

int tb_token_to_bytes(const tb_tokenizer_t *t, int32_t id, bool special, char *buf, size_t cap) {
    if (!t || (!buf && cap > 0)) return tb_err(TB_ERR_ARG, "tb_token_to_bytes: NULL argument");
    if (id < 0 || id >= t->n_vocab)
        return tb_err(TB_ERR_RANGE, "tb_token_to_bytes: token id %d outside [0, %d)", id, t->n_vocab);
    const char *s = t->text[id];
    size_t n = t->len[id], w = 0;
    switch (t->type[id]) {
    case TB_TOKTYPE_CONTROL:
    case TB_TOKTYPE_UNKNOWN:
        if (!special) return 0;
        /* fall through */
    case TB_TOKTYPE_USER_DEFINED:
        for (size_t i = 0; i < n; i++) put(buf, cap, &w, s[i]);
        break;
    case TB_TOKTYPE_UNUSED:
        return 0;
    case TB_TOKTYPE_BYTE:       /* without <0xXX> text it decodes as normal */
        if (hex_byte(s, n) >= 0) {
            put(buf, cap, &w, (char)hex_byte(s, n));
            break;
        }
        /* fall through */
    default:
        if (t->model == TB_TOK_BPE) {
            w = bpe_unmap(s, n, buf, cap);
        } else {
            for (size_t i = 0; i < n; i++) {
                if (i + 2 < n && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
                    put(buf, cap, &w, ' ');
                    i += 2;
                } else {
                    put(buf, cap, &w, s[i]);
                }
            }
        }
    }
    if (w > (size_t)INT32_MAX) return tb_err(TB_ERR_RANGE, "tb_token_to_bytes: piece too long");
    return (int)w;
}

/* ===================================================================== */
/* Streaming                                                              */
/* ===================================================================== */

struct tb_detok {
    const tb_tokenizer_t *t;
    bool strip;            /* SPM: first non-empty piece still to come */
    char *pend;            /* (cap) bytes received, not yet emitted     */
    size_t n, cap;
};

int tb_detok_new(const tb_tokenizer_t *t, tb_detok_t **out) {
    if (!t || !out) return tb_err(TB_ERR_ARG, "tb_detok_new: NULL argument");
    tb_detok_t *d = calloc(1, sizeof *d);
    if (!d) return tb_err(TB_ERR_NOMEM, "tb_detok_new: allocation failed");
    d->t = t;
    d->strip = t->model == TB_TOK_SPM && t->add_space_prefix;
    *out = d;
    return TB_OK;
}

void tb_detok_free(tb_detok_t *d) {
    if (!d) return;
    free(d->pend);
    free(d);
}

/* Length of the well-formed UTF-8 character at p[0..n): > 0 complete,
 * 0 incomplete but valid so far, < 0 ill-formed (-k: k bytes to replace). */
static int utf8_scan(const uint8_t *p, size_t n) {
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    int need;
    uint8_t lo = 0x80, hi = 0xBF;                    /* range of the 2nd byte */
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return -1;
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= n) return 0;
        uint8_t x = p[k];
        bool ok = k == 1 ? (x >= lo && x <= hi) : (x >= 0x80 && x <= 0xBF);
        if (!ok) return -k;
    }
    return need + 1;
}

/* Move complete characters from the pending bytes to out; at `final`, an
 * incomplete tail becomes U+FFFD. Stops before a character that does not
 * fit in cap (it stays pending for the next call: with cap >= 4 every
 * call that returns 0 has emitted all it can). Returns bytes written. */
static int drain(tb_detok_t *d, char *out, size_t cap, bool final) {
    size_t i = 0, w = 0;
    if (cap > (size_t)INT32_MAX) cap = (size_t)INT32_MAX;
    while (i < d->n) {
        int k = utf8_scan((const uint8_t *)d->pend + i, d->n - i);
        if (k == 0 && !final) break;
        size_t take = k > 0 ? (size_t)k : k < 0 ? (size_t)-k : d->n - i;
        size_t emit = k > 0 ? (size_t)k : 3;
        if (w + emit > cap) break;
        if (k > 0) memcpy(out + w, d->pend + i, emit);
        else memcpy(out + w, "\xEF\xBF\xBD", 3);
        w += emit;
        i += take;
    }
    if (i > 0) {
        memmove(d->pend, d->pend + i, d->n - i);
        d->n -= i;
    }
    return (int)w;
}

int tb_detok_push(tb_detok_t *d, int32_t id, char *out, size_t cap) {
    if (!d || (!out && cap > 0)) return tb_err(TB_ERR_ARG, "tb_detok_push: NULL argument");
    char small[256];
    int k = tb_token_to_bytes(d->t, id, false, small, sizeof small);
    if (k < 0) return k;
    if (k == 0) return drain(d, out, cap, false);
    if (d->n + (size_t)k > d->cap) {
        size_t nc = d->cap ? d->cap : 64;
        while (nc < d->n + (size_t)k) nc *= 2;
        char *np = realloc(d->pend, nc);
        if (!np) return tb_err(TB_ERR_NOMEM, "tb_detok_push: %zu pending bytes", nc);
        d->pend = np;
        d->cap = nc;
    }
    if ((size_t)k <= sizeof small) {
        memcpy(d->pend + d->n, small, (size_t)k);
    } else if (tb_token_to_bytes(d->t, id, false, d->pend + d->n, (size_t)k) != k) {
        return tb_err(TB_ERR_INTERNAL, "tb_detok_push: token %d changed length", id);
    }
    size_t skip = 0;
    if (d->strip) {
        d->strip = false;
        if (d->pend[d->n] == ' ') skip = 1;
    }
    memmove(d->pend + d->n, d->pend + d->n + skip, (size_t)k - skip);
    d->n += (size_t)k - skip;
    return drain(d, out, cap, false);
}

int tb_detok_drain(tb_detok_t *d, char *out, size_t cap) {
    if (!d || (!out && cap > 0)) return tb_err(TB_ERR_ARG, "tb_detok_drain: NULL argument");
    return drain(d, out, cap, false);
}

int tb_detok_flush(tb_detok_t *d, char *out, size_t cap) {
    if (!d || (!out && cap > 0)) return tb_err(TB_ERR_ARG, "tb_detok_flush: NULL argument");
    return drain(d, out, cap, true);
}

size_t tb_detok_pending(const tb_detok_t *d) { return d ? d->n : 0; }
