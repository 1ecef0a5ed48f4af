/*
 * pretok.c — BPE pre-tokenizers: the regexes named by tokenizer.ggml.pre.
 *
 * A pre-tokenizer is a list of regexes applied in passes (as llama.cpp's
 * unicode_regex_split): pass k splits every word of pass k-1 into its
 * matches and the unmatched gaps between them, all kept, in order. Each
 * word is matched in isolation (lookarounds and `$` see the word's ends).
 *
 * Regexes are compiled once with PCRE2 (UTF, UCP: \p{L}, \p{N} and \s are
 * Unicode properties; DOLLAR_ENDONLY as std::regex; MATCH_INVALID_UTF so
 * invalid UTF-8 never matches and falls into a gap instead of failing).
 * JIT is used when available. Compiled code is read-only and shared;
 * match data is allocated per call, so splitting is thread-safe.
 *
 * Unknown names fall back to the GPT-2 pattern (tb_pretok_new reports it).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/text.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PASSES 8

struct tb_pretok {
    pcre2_code *re[MAX_PASSES];
    int n;
};

/* ===================================================================== */
/* The table                                                              */
/* ===================================================================== */

/* GPT-2's pattern (OpenAI's encoder.py). */
#define RE_GPT2 \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

/* cl100k-style: ASCII-case-insensitive contractions, an optional non-letter
 * before letters, digits in groups of DIGITS, punctuation runs that keep
 * their trailing newlines. */
#define RE_CL100K(DIGITS)                                                          \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"                   \
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" DIGITS                                \
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

typedef struct pre_def {
    const char *names;          /* '|'-separated tokenizer.ggml.pre values */
    bool ignore_merges;
    const char *re[MAX_PASSES];
} pre_def_t;

static const pre_def_t PRE[] = {
    {"default|gpt-2|gpt2|mpt|olmo|jais|trillion|phi-2", false, {RE_GPT2}},
    {"qwen2|deepseek-r1-qwen|megrez", false, {RE_CL100K("")}},
    {"llama3|llama-v3|llama-bpe|falcon3|pixtral|dbrx|smaug-bpe", true, {RE_CL100K("{1,3}")}},
    {"starcoder|refact|command-r|smollm|codeshell|exaone|minerva", false,
     {"\\p{N}", RE_GPT2}},
    {"falcon", false,
     {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}},
    {"deepseek-coder", false,
     {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
      "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"}},
    {"deepseek-v3", false,
     {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"
      "|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*"
      "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"gpt-4o|llama4", false,
     {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
      "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
      "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
};

/* The table entry for `name`, or NULL. */
static const pre_def_t *find_def(const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < TB_ARRAY_LEN(PRE); i++) {
        const char *p = PRE[i].names;
        while (*p) {
            const char *e = strchr(p, '|');
            size_t k = e ? (size_t)(e - p) : strlen(p);
            if (k == n && memcmp(p, name, n) == 0) return &PRE[i];
            p += k + (e ? 1 : 0);
        }
    }
    return NULL;
}

bool tb_pretok_ignore_merges(const char *name) {
    const pre_def_t *d = find_def(name ? name : "");
    return d && d->ignore_merges;
}

/* ===================================================================== */
/* Compile                                                                */
/* ===================================================================== */

int tb_pretok_new(const char *name, tb_pretok_t **out, bool *fallback) {
    *out = NULL;
    const pre_def_t *d = find_def(name ? name : "");
    *fallback = d == NULL;
    if (!d) d = &PRE[0];
    tb_pretok_t *p = calloc(1, sizeof *p);
    if (!p) return tb_err(TB_ERR_NOMEM, "pre-tokenizer: allocation failed");
    for (int i = 0; i < MAX_PASSES && d->re[i]; i++) {
        int ec;
        PCRE2_SIZE eo;
        p->re[i] = pcre2_compile((PCRE2_SPTR)d->re[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY |
                                     PCRE2_MATCH_INVALID_UTF,
                                 &ec, &eo, NULL);
        if (!p->re[i]) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(ec, msg, sizeof msg);
            tb_pretok_free(p);
            return tb_err(TB_ERR_INTERNAL, "pre-tokenizer '%s': regex %d at offset %zu: %s",
                          name ? name : "", i, (size_t)eo, (const char *)msg);
        }
        (void)pcre2_jit_compile(p->re[i], PCRE2_JIT_COMPLETE);   /* optional speed-up */
        p->n = i + 1;
    }
    *out = p;
    return TB_OK;
}

void tb_pretok_free(tb_pretok_t *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->re[i]);
    free(p);
}

/* ===================================================================== */
/* Split                                                                  */
/* ===================================================================== */

static int push_span(size_t **v, size_t *n, size_t *cap, size_t off, size_t len) {
    if (*n + 2 > *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        size_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv) return tb_err(TB_ERR_NOMEM, "pre-tokenizer: %zu spans", nc / 2);
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = off;
    (*v)[(*n)++] = len;
    return TB_OK;
}

/* Split word text[off..off+len) by `re` into out (matches and gaps). */
static int split_word(const pcre2_code *re, pcre2_match_data *md, const char *text, size_t off,
                      size_t len, size_t **out, size_t *n, size_t *cap) {
    const PCRE2_SPTR subj = (PCRE2_SPTR)(text + off);
    size_t gap = 0, pos = 0;
    int rc;
    while (pos < len) {
        int m = pcre2_match(re, subj, len, pos, 0, md, NULL);
        if (m == PCRE2_ERROR_NOMATCH) break;
        if (m < 0) return tb_err(TB_ERR_INTERNAL, "pre-tokenizer: pcre2_match error %d at byte %zu",
                                 m, off + pos);
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t m0 = ov[0], m1 = ov[1];
        if (m1 == m0) {                                /* empty match: step one character */
            pos = m0 + TB_MIN(tb_utf8_len((uint8_t)text[off + m0]), len - m0);
            continue;
        }
        if (m0 > gap && (rc = push_span(out, n, cap, off + gap, m0 - gap)) != TB_OK) return rc;
        if ((rc = push_span(out, n, cap, off + m0, m1 - m0)) != TB_OK) return rc;
        gap = pos = m1;
    }
    if (gap < len && (rc = push_span(out, n, cap, off + gap, len - gap)) != TB_OK) return rc;
    return TB_OK;
}

int tb_pretok_split(const tb_pretok_t *p, tb_tok_scratch_t *s, const char *text, size_t len) {
    s->nspans = 0;
    if (len == 0) return TB_OK;
    int rc = push_span(&s->spans, &s->nspans, &s->capspans, 0, len);
    if (rc != TB_OK) return rc;
    size_t *next = NULL, nn = 0, ncap = 0;
    for (int k = 0; k < p->n && rc == TB_OK; k++) {
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->re[k], NULL);
        if (!md) { rc = tb_err(TB_ERR_NOMEM, "pre-tokenizer: match data"); break; }
        nn = 0;
        for (size_t i = 0; i < s->nspans && rc == TB_OK; i += 2)
            rc = split_word(p->re[k], md, text, s->spans[i], s->spans[i + 1], &next, &nn, &ncap);
        pcre2_match_data_free(md);
        if (rc != TB_OK) break;
        size_t *tv = s->spans, tc = s->capspans;          /* swap: next pass reads `next` */
        s->spans = next;
        s->nspans = nn;
        s->capspans = ncap;
        next = tv;
        ncap = tc;
    }
    free(next);
    return rc;
}
