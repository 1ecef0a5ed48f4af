/*
 * vocab.c — the built-in byte-level BPE vocabulary ("gpt2" model) that every
 * synthetic model carries when no --vocab-from is given.
 *
 * Layout of the vocabulary (n_vocab tokens):
 *   [0, 256)            the byte alphabet, id = byte, spelled with GPT-2's
 *                       byte→code-point map (printable bytes stand for
 *                       themselves, the rest shift to U+0100..)
 *   [256, 256+M)        merge results learned by BPE on the text below,
 *                       pre-split into words the way GPT-2-style regexes do
 *                       (a leading space sticks to the following word)
 *   next 3              <|endoftext|>, <|im_start|>, <|im_end|> (control)
 *   rest                <|unused_N|> fillers (type 5, never produced)
 *
 * Every byte string is encodable (byte alphabet), so text round-trips.
 */
#include "synth/synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MERGES 1024

/* Training text: written for this project. */
static const char corpus[] =
    "The quick brown fox jumps over the lazy dog. The dog was not amused, and the fox ran "
    "into the forest where the trees were tall and the light was green. "
    "A benchmark is a promise that can be checked: it says how fast a model runs on a "
    "given machine, and anyone with the same machine should see the same numbers. "
    "When a speed claim cannot be reproduced, the reason is often in the details: the "
    "number of threads, the context length, the prompt, the quantization of the weights, "
    "or the temperature of the processor after a long run. "
    "This harness measures the time to process the prompt and the time to generate each "
    "new token, and it counts the bytes that must be read from memory for every token. "
    "On a small device the memory bandwidth sets the speed of decoding, because each "
    "token needs the weights of the whole model, or of the experts that the router picks. "
    "Ternary weights take two bits or less, so they move fewer bytes than half precision "
    "floats, and the model can run faster when the kernels are good. "
    "In the morning the engineers read the results, compare the numbers with the claims, "
    "and write a report with plots and tables. They are careful, and they are patient. "
    "Hello, world! How are you today? I am fine, thank you. What is your name? "
    "My name is Maple and I like to read, to write, and to think about numbers. "
    "Once upon a time there was a little model that wanted to be fast. It practised every "
    "day, it learned to skip the work it did not need, and it became the fastest model "
    "in the whole town. The other models were happy for it and they all had tea. "
    "1 2 3 4 5 6 7 8 9 10 100 1000 2024 3.14 42 0.5 "
    "def main(): return 0; int main(void) { return 0; } for (int i = 0; i < n; i++) "
    "Questions and answers: Why is the sky blue? Because light is scattered by the air. "
    "Where do rivers go? To the sea. What makes a good test? One that could fail. "
    "The end of the story is the beginning of another one, and so the work goes on.";

/* ===================================================================== */
/* Byte alphabet                                                          */
/* ===================================================================== */

/* GPT-2's byte -> code point map. */
static uint32_t byte_cp(int b) {
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
        return (uint32_t)b;
    int n = 0;                         /* rank of b among the shifted bytes */
    for (int c = 0; c < b; c++)
        if (!((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)))
            n++;
    return 256u + (uint32_t)n;
}

static int utf8_put(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
}

/* ===================================================================== */
/* BPE training                                                           */
/* ===================================================================== */

typedef struct word { int32_t *sym; int n; int count; } word_t;

static int char_class(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return 1;
    if (c >= '0' && c <= '9') return 2;
    if (c == ' ' || c == '\n' || c == '\t') return 3;
    return 4;
}

/* Split the corpus into words (" word", "123", " ,", ...) with counts. */
static int split_words(word_t **out, int *n_out) {
    const size_t len = sizeof corpus - 1;
    word_t *w = calloc(len + 1, sizeof *w);
    if (!w) return TB_ERR_NOMEM;
    int nw = 0;
    size_t i = 0;
    while (i < len) {
        size_t s = i;
        if (corpus[i] == ' ' && i + 1 < len && char_class((unsigned char)corpus[i + 1]) != 3) i++;
        int cls = char_class((unsigned char)corpus[i]);
        while (i < len && char_class((unsigned char)corpus[i]) == cls && (cls != 3 || i == s)) i++;
        if (i == s) i++;
        int n = (int)(i - s);
        int k;
        for (k = 0; k < nw; k++) {
            if (w[k].n != n) continue;
            int j = 0;
            while (j < n && w[k].sym[j] == (unsigned char)corpus[s + (size_t)j]) j++;
            if (j == n) break;
        }
        if (k < nw) { w[k].count++; continue; }
        w[nw].sym = malloc((size_t)n * sizeof(int32_t));
        if (!w[nw].sym) { *out = w; *n_out = nw; return TB_ERR_NOMEM; }
        for (int j = 0; j < n; j++) w[nw].sym[j] = (unsigned char)corpus[s + (size_t)j];
        w[nw].n = n;
        w[nw].count = 1;
        nw++;
    }
    *out = w;
    *n_out = nw;
    return TB_OK;
}

/* Pair counts in a small open-addressing table keyed by (a << 32 | b). */
#define PAIR_SLOTS 16384
typedef struct pair_slot { uint64_t key; int count; } pair_slot_t;

/* Most frequent adjacent pair (ties: smallest (a, b)); 0 when none. */
static int best_pair(const word_t *w, int nw, int32_t *a, int32_t *b, pair_slot_t *tab) {
    memset(tab, 0, PAIR_SLOTS * sizeof *tab);
    for (int k = 0; k < nw; k++)
        for (int j = 0; j + 1 < w[k].n; j++) {
            uint64_t key = ((uint64_t)(uint32_t)w[k].sym[j] << 32 | (uint32_t)w[k].sym[j + 1]) + 1;
            uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 50;   /* 14 bits */
            while (tab[h].key && tab[h].key != key) h = (h + 1) & (PAIR_SLOTS - 1);
            tab[h].key = key;
            tab[h].count += w[k].count;
        }
    int best = 0;
    uint64_t best_key = 0;
    for (int i = 0; i < PAIR_SLOTS; i++)
        if (tab[i].count > best || (tab[i].count == best && best && tab[i].key < best_key)) {
            best = tab[i].count;
            best_key = tab[i].key;
        }
    if (best) { *a = (int32_t)((best_key - 1) >> 32); *b = (int32_t)((best_key - 1) & 0xFFFFFFFFu); }
    return best;
}

static void apply_merge(word_t *w, int nw, int32_t a, int32_t b, int32_t id) {
    for (int k = 0; k < nw; k++) {
        int o = 0;
        for (int j = 0; j < w[k].n; j++) {
            if (j + 1 < w[k].n && w[k].sym[j] == a && w[k].sym[j + 1] == b) {
                w[k].sym[o++] = id;
                j++;
            } else {
                w[k].sym[o++] = w[k].sym[j];
            }
        }
        w[k].n = o;
    }
}

static char *xstrcat2(const char *a, const char *sep, const char *b) {
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    char *s = malloc(la + ls + lb + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    memcpy(s + la, sep, ls);
    memcpy(s + la + ls, b, lb + 1);
    return s;
}

/* Learn up to max_merges merges; appends tokens to v (whose first 256 are
 * the bytes). Symbols are token ids; a merge whose text already exists
 * reuses that token (the rule is still recorded). */
static int learn_merges(synth_vocab_t *v, int max_merges) {
    word_t *w = NULL;
    int nw = 0, rc = split_words(&w, &nw);
    pair_slot_t *tab = NULL;
    if (rc == TB_OK && !(tab = malloc(PAIR_SLOTS * sizeof *tab))) rc = TB_ERR_NOMEM;
    while (rc == TB_OK && v->n_merges < max_merges) {
        int32_t a = 0, b = 0;
        if (best_pair(w, nw, &a, &b, tab) < 2) break;
        char *text = xstrcat2(v->tokens[a], "", v->tokens[b]);
        char *rule = xstrcat2(v->tokens[a], " ", v->tokens[b]);
        if (!text || !rule) { free(text); free(rule); rc = TB_ERR_NOMEM; break; }
        int32_t id = -1;
        for (int32_t t = 256; t < v->n_tokens; t++)
            if (!strcmp(v->tokens[t], text)) { id = t; break; }
        if (id < 0) {
            id = v->n_tokens;
            v->tokens[v->n_tokens] = text;
            v->types[v->n_tokens++] = 1;
        } else {
            free(text);
        }
        v->merges[v->n_merges++] = rule;
        apply_merge(w, nw, a, b, id);
    }
    for (int k = 0; k < nw; k++) free(w[k].sym);
    free(w);
    free(tab);
    return rc == TB_OK ? TB_OK : tb_err(rc, "out of memory while learning BPE merges");
}

/* ===================================================================== */
/* Public (internal) entry points                                         */
/* ===================================================================== */

int synth_vocab_build(int32_t n_vocab, synth_vocab_t *v) {
    memset(v, 0, sizeof *v);
    if (n_vocab < 260)
        return tb_err(TB_ERR_ARG, "synth: vocabulary of %d tokens is too small for the "
                      "byte-level tokenizer (need at least 260)", n_vocab);
    v->tokens = calloc((size_t)n_vocab, sizeof *v->tokens);
    v->types = calloc((size_t)n_vocab, sizeof *v->types);
    v->merges = calloc(MAX_MERGES, sizeof *v->merges);
    if (!v->tokens || !v->types || !v->merges) goto nomem;
    for (int b = 0; b < 256; b++) {
        char buf[4] = {0};
        utf8_put(byte_cp(b), buf);
        if (!(v->tokens[b] = strdup(buf))) goto nomem;
        v->types[b] = 1;
    }
    v->n_tokens = 256;
    int rc = learn_merges(v, TB_MIN(MAX_MERGES, n_vocab - 256 - 3));
    if (rc != TB_OK) return rc;
    static const char *const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    for (size_t i = 0; i < TB_ARRAY_LEN(specials); i++) {
        if (!(v->tokens[v->n_tokens] = strdup(specials[i]))) goto nomem;
        v->types[v->n_tokens++] = 3;
    }
    v->bos = v->eos = v->n_tokens - 3;
    for (int32_t i = 0; v->n_tokens < n_vocab; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "<|unused_%d|>", i);
        if (!(v->tokens[v->n_tokens] = strdup(buf))) goto nomem;
        v->types[v->n_tokens++] = 5;
    }
    return TB_OK;
nomem:
    return tb_err(TB_ERR_NOMEM, "out of memory for a %d-token vocabulary", n_vocab);
}

void synth_vocab_free(synth_vocab_t *v) {
    if (!v) return;
    if (v->tokens)
        for (int32_t i = 0; i < v->n_tokens; i++) free(v->tokens[i]);
    if (v->merges)
        for (int32_t i = 0; i < v->n_merges; i++) free(v->merges[i]);
    free(v->tokens);
    free(v->types);
    free(v->merges);
    memset(v, 0, sizeof *v);
}
