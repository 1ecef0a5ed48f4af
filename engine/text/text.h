/*
 * text.h — tokenizer internals shared by the engine/text sources (not public).
 *
 * One tb_tokenizer_t is built once from a GGUF's tokenizer.ggml.* metadata
 * and is immutable afterwards: tb_tokenize() keeps all its scratch memory
 * on the call, so one tokenizer may be used from many threads at once.
 *
 *   vocab.c     load, token-text hash map, merge-rank hash map, accessors
 *               (keyed SipHash, util/siphash.h: texts read from a file
 *               cannot be chosen to collide)
 *   scratch.c   per-call buffers, bigram heap, the shared merge loop
 *   pretok.c    pre-tokenizer regexes (PCRE2, UTF + UCP), multi-pass split
 *   tok_spm.c   SentencePiece-BPE ("llama"): score-ordered bigram merges
 *   tok_bpe.c   byte-level BPE ("gpt2"): byte alphabet, rank-ordered merges
 *   tokenize.c  tb_tokenize: special-token partition, BOS/EOS, dispatch
 *   detok.c     tb_token_to_bytes and the streaming UTF-8 detokenizer
 *   sampler.c   tb_sampler_*
 */
#ifndef TB_TEXT_H
#define TB_TEXT_H

#include "internal.h"

#include <stdint.h>
#include <stddef.h>

/* ===================================================================== */
/* Vocabulary                                                             */
/* ===================================================================== */

typedef enum tb_tok_model { TB_TOK_SPM = 1, TB_TOK_BPE = 2 } tb_tok_model_t;

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
enum {
    TB_TOKTYPE_UNDEFINED = 0, TB_TOKTYPE_NORMAL = 1, TB_TOKTYPE_UNKNOWN = 2,
    TB_TOKTYPE_CONTROL = 3, TB_TOKTYPE_USER_DEFINED = 4, TB_TOKTYPE_UNUSED = 5,
    TB_TOKTYPE_BYTE = 6,
};

/* One merge "a b" of tokenizer.ggml.merges: both halves point into the
 * tokenizer's merge blob. Its rank is its index in the merges array. */
typedef struct tb_merge {
    const char *a, *b;
    uint32_t alen, blen;
} tb_merge_t;

typedef struct tb_pretok tb_pretok_t;

struct tb_tokenizer {
    tb_tok_model_t model;
    int32_t n_vocab;

    char *blob;                 /* every token text, back to back (NUL after each) */
    const char **text;          /* (n_vocab) token text, into blob                  */
    uint32_t *len;              /* (n_vocab) its byte length                         */
    float *score;               /* (n_vocab) tokenizer.ggml.scores (0 if absent)     */
    uint8_t *type;              /* (n_vocab) TB_TOKTYPE_*                            */

    int32_t *tok_slots;         /* (tok_mask + 1) text -> id, -1 empty               */
    uint64_t tok_mask;
    uint64_t map_probes;        /* slots inspected building both maps (tests bound it) */

    char *merge_blob;           /* merge strings, back to back                       */
    tb_merge_t *merges;         /* (n_merges)                                        */
    int32_t n_merges;
    int32_t *merge_slots;       /* (merge_mask + 1) (a, b) -> rank, -1 empty          */
    uint64_t merge_mask;

    int32_t *specials;          /* (n_specials) control/user/unknown ids, longest text first */
    int32_t n_specials;
    int32_t eog[16];            /* end-of-generation ids                              */
    int32_t n_eog;

    int32_t bos, eos, unk, pad; /* -1 when absent                                     */
    bool add_bos, add_eos, add_space_prefix, ignore_merges;
    int32_t byte_tok[256];      /* SPM byte fallback: byte -> <0xXX> id (-1 absent)   */

    char pre[64];               /* tokenizer.ggml.pre as stored ("" if absent)        */
    tb_pretok_t *pretok;        /* BPE pre-tokenizer (NULL for SPM)                   */
};


/* Id of the token whose text is exactly s[0..n), or -1. */
int32_t tb_vocab_find(const tb_tokenizer_t *t, const char *s, size_t n);
/* Rank of the merge (a, b), or -1 when the pair is not a merge. */
int32_t tb_vocab_merge_rank(const tb_tokenizer_t *t, const char *a, size_t alen,
                            const char *b, size_t blen);

/* Byte length of the UTF-8 sequence a lead byte announces (llama.cpp's
 * unicode_len_utf8: continuation and invalid bytes count as 1, F8..FF as 4). */
static inline size_t tb_utf8_len(uint8_t c) {
    static const uint8_t lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lens[c >> 4];
}

/* ===================================================================== */
/* Growable buffers used by the encoders (per call, never shared)         */
/* ===================================================================== */

typedef struct tb_ids {
    int32_t *v;
    size_t n, cap;
} tb_ids_t;

int tb_ids_push(tb_ids_t *o, int32_t id);

/* A symbol of the merge loop: a byte range of the word being encoded,
 * linked to its neighbours (-1 at the ends); n == 0 once merged away. */
typedef struct tb_symbol {
    const char *text;
    int32_t n;
    int32_t prev, next;
} tb_symbol_t;

/* A candidate merge of symbols left and right. Higher prio pops first,
 * ties pop the lower `left` first; `size` detects stale entries. */
typedef struct tb_bigram {
    double prio;
    int32_t left, right;
    int32_t size;
} tb_bigram_t;

typedef struct tb_bigram_heap {
    tb_bigram_t *v;
    size_t n, cap;
} tb_bigram_heap_t;

int  tb_heap_push(tb_bigram_heap_t *h, tb_bigram_t b);
tb_bigram_t tb_heap_pop(tb_bigram_heap_t *h);   /* requires h->n > 0 */

/* Scratch shared by one tb_tokenize call. */
typedef struct tb_tok_scratch {
    tb_symbol_t *sym;
    size_t nsym, capsym;
    tb_bigram_heap_t heap;
    char *buf;                 /* SPM escaped text / BPE byte-mapped word */
    size_t capbuf;
    size_t *spans;             /* pre-tokenizer (offset, length) pairs     */
    size_t nspans, capspans;
} tb_tok_scratch_t;

void tb_tok_scratch_free(tb_tok_scratch_t *s);
int  tb_tok_scratch_buf(tb_tok_scratch_t *s, size_t n);   /* ensure capbuf >= n */
int  tb_tok_scratch_sym(tb_tok_scratch_t *s, size_t n);   /* ensure capsym >= n */

/* Priority of merging the adjacent symbols l, r (higher merges first);
 * false when the pair is not a merge. */
typedef bool (*tb_pair_prio_fn)(const tb_tokenizer_t *t, const tb_symbol_t *l,
                                const tb_symbol_t *r, double *prio);

/* The merge loop of both encoders: split text[0..n) (n > 0) into one symbol
 * per UTF-8 character (a malformed byte is its own), then repeatedly merge
 * the adjacent pair of highest `prio` (ties: leftmost first) until no pair
 * merges. The result is the list s->sym[0], s->sym[0].next, ... (-1 ends). */
int  tb_tok_merge(const tb_tokenizer_t *t, tb_tok_scratch_t *s, const char *text, size_t n,
                  tb_pair_prio_fn prio);

/* ===================================================================== */
/* Encoders (one raw-text fragment each, appending to out)                */
/* ===================================================================== */

/* SPM: escape ' ' as U+2581 (after prepending one space when `prefix`),
 * merge UTF-8 characters by best score, unknown characters as <0xXX>. */
int tb_spm_encode(const tb_tokenizer_t *t, tb_tok_scratch_t *s, const char *text,
                  size_t len, bool prefix, tb_ids_t *out);

/* BPE: pre-tokenize, map bytes to the GPT-2 alphabet, merge by rank. */
int tb_bpe_encode(const tb_tokenizer_t *t, tb_tok_scratch_t *s, const char *text,
                  size_t len, tb_ids_t *out);

/* GPT-2 byte <-> unicode alphabet. */
uint32_t tb_bpe_byte_to_cp(uint8_t b);
int tb_bpe_cp_to_byte(uint32_t cp);          /* -1 when cp is not in the alphabet */

/* ===================================================================== */
/* Pre-tokenizer                                                          */
/* ===================================================================== */

/* Compile the regexes for tokenizer.ggml.pre `name`; unknown names use the
 * GPT-2 pattern (*fallback set true). */
int  tb_pretok_new(const char *name, tb_pretok_t **out, bool *fallback);
void tb_pretok_free(tb_pretok_t *p);
/* True when the named pre-tokenizer wants merges skipped for words that are
 * already whole tokens (llama3). */
bool tb_pretok_ignore_merges(const char *name);
/* Split text into words: s->spans receives (offset, length) pairs covering
 * the text in order (matches and the gaps between them, as llama.cpp). */
int  tb_pretok_split(const tb_pretok_t *p, tb_tok_scratch_t *s, const char *text,
                     size_t len);

#endif
