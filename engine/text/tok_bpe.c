/*
 * tok_bpe.c — byte-level BPE encoding ("tokenizer.ggml.model = gpt2"),
 * the algorithm of llama.cpp's llm_tokenizer_bpe:
 *
 *   1. pre-tokenize the fragment into words (pretok.c);
 *   2. write each word's bytes in GPT-2's byte alphabet (every byte is one
 *      printable code point: bytes that are printable Latin-1 map to
 *      themselves, the 68 others to U+0100.., in byte order);
 *   3. with ignore_merges (llama3), a word that is a whole token is emitted
 *      as is; otherwise start with one symbol per mapped character and
 *      repeatedly merge the adjacent pair of lowest merge rank (ties:
 *      leftmost first);
 *   4. emit each symbol's token; a symbol that is not a token emits the
 *      tokens of its single bytes that exist (llama.cpp does the same).
 */
#include "text/text.h"

#include <pthread.h>
#include <string.h>

/* ===================================================================== */
/* Byte alphabet                                                          */
/* ===================================================================== */

static bool printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* Both directions of the alphabet, filled once (pthread_once). */
static struct {
    uint16_t cp[256];      /* byte -> code point                   */
    int16_t byte[324];     /* code point -> byte, -1 if not a byte  */
    char utf8[256][2];     /* byte -> UTF-8 of its code point       */
    uint8_t n[256];        /* its length (1 or 2)                   */
} alpha;
static pthread_once_t alpha_once = PTHREAD_ONCE_INIT;

static void alpha_init(void) {
    unsigned k = 0;
    for (unsigned i = 0; i < TB_ARRAY_LEN(alpha.byte); i++) alpha.byte[i] = -1;
    for (unsigned b = 0; b < 256; b++) {
        unsigned cp = printable(b) ? b : 256 + k++;
        alpha.cp[b] = (uint16_t)cp;
        alpha.byte[cp] = (int16_t)b;
        if (cp < 0x80) {
            alpha.utf8[b][0] = (char)cp;
            alpha.n[b] = 1;
        } else {
            alpha.utf8[b][0] = (char)(0xC0 | (cp >> 6));
            alpha.utf8[b][1] = (char)(0x80 | (cp & 0x3F));
            alpha.n[b] = 2;
        }
    }
}

uint32_t tb_bpe_byte_to_cp(uint8_t b) {
    pthread_once(&alpha_once, alpha_init);
    return alpha.cp[b];
}

int tb_bpe_cp_to_byte(uint32_t cp) {
    pthread_once(&alpha_once, alpha_init);
    return cp < TB_ARRAY_LEN(alpha.byte) ? alpha.byte[cp] : -1;
}

/* ===================================================================== */
/* Merge priority and emission                                           */
/* ===================================================================== */

/* A pair merges when "l r" is a merge; the lowest rank merges first. */
static bool pair_prio(const tb_tokenizer_t *t, const tb_symbol_t *l, const tb_symbol_t *r,
                      double *prio) {
    int32_t rank = tb_vocab_merge_rank(t, l->text, (size_t)l->n, r->text, (size_t)r->n);
    *prio = -(double)rank;
    return rank >= 0;
}

static int emit(const tb_tokenizer_t *t, const char *text, size_t n, tb_ids_t *out) {
    int32_t id = tb_vocab_find(t, text, n);
    if (id >= 0) return tb_ids_push(out, id);
    for (size_t j = 0; j < n; j++) {
        int32_t b = tb_vocab_find(t, text + j, 1);
        int rc = b >= 0 ? tb_ids_push(out, b) : TB_OK;
        if (rc != TB_OK) return rc;
    }
    return TB_OK;
}

/* Encode one mapped word w[0..n). */
static int encode_word(const tb_tokenizer_t *t, tb_tok_scratch_t *s, const char *w, size_t n,
                       tb_ids_t *out) {
    if (t->ignore_merges && tb_vocab_find(t, w, n) >= 0) return emit(t, w, n, out);
    int rc = tb_tok_merge(t, s, w, n, pair_prio);
    if (rc != TB_OK) return rc;
    for (int32_t i = 0; i != -1; i = s->sym[i].next)
        if ((rc = emit(t, s->sym[i].text, (size_t)s->sym[i].n, out)) != TB_OK) return rc;
    return TB_OK;
}

int tb_bpe_encode(const tb_tokenizer_t *t, tb_tok_scratch_t *s, const char *text, size_t len,
                  tb_ids_t *out) {
    int rc = tb_pretok_split(t->pretok, s, text, len);
    if (rc != TB_OK) return rc;
    pthread_once(&alpha_once, alpha_init);
    for (size_t k = 0; k < s->nspans; k += 2) {
        size_t off = s->spans[k], n = s->spans[k + 1];
        if ((rc = tb_tok_scratch_buf(s, 2 * n)) != TB_OK) return rc;
        char *w = s->buf;   // (2 * n) the word in the byte alphabet
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            uint8_t b = (uint8_t)text[off + i];
            memcpy(w + m, alpha.utf8[b], alpha.n[b]);
            m += alpha.n[b];
        }
        if ((rc = encode_word(t, s, w, m, out)) != TB_OK) return rc;
    }
    return TB_OK;
}
