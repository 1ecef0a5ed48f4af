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

/* GPT-4o / Tekken: case-aware words (upper* lower+ | upper+ lower*). */
#define RE_UPPER "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define RE_LOWER "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
#define RE_CASED(CONTR, DIGITS)                                                       \
    "[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "*" RE_LOWER "+" CONTR                       \
    "|[^\\r\\n\\p{L}\\p{N}]?" RE_UPPER "+" RE_LOWER "*" CONTR                      \
    "|\\p{N}" DIGITS "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* CJK ideographs and Hangul as the DeepSeek tokenizers delimit them. */
#define RE_CJK "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

typedef struct pre_def {
    const char *names;          /* '|'-separated tokenizer.ggml.pre values */
    bool ignore_merges;         /* whole-token words skip the merges (and add BOS) */
    const char *re[MAX_PASSES];
} pre_def_t;

/* Names and patterns follow llama.cpp's llama-vocab.cpp, which takes them
 * from each model's tokenizer.json (where llama.cpp approximates a
 * pattern std::regex cannot express, the tokenizer.json original is used:
 * PCRE2 has the Unicode classes). */
static const pre_def_t PRE[] = {
    {"default|gpt-2|gpt2|phi-2|jina-es|jina-de|jina-v2-es|jina-v2-de|jina-v2-code|mpt|olmo|"
     "jais|trillion|granite-docling|exaone4|gigachat|roberta-bpe",
     false, {RE_GPT2}},
    {"qwen2|deepseek-r1-qwen|kormo|megrez|stablelm2|hunyuan|grok-2", false, {RE_CL100K("")}},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2", true,
     {RE_CL100K("{1,3}")}},
    {"dbrx|smaug-bpe|glm4|chatglm-bpe", false, {RE_CL100K("{1,3}")}},
    {"starcoder|refact|command-r|smollm|codeshell|exaone|minerva-7b", false, {"\\p{N}", RE_GPT2}},
    {"falcon", false, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}},
    {"deepseek-coder", false, {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK, "\\p{N}"}},
    {"deepseek-llm", false,
     {"[\\r\\n]",
      "\\s?["
      "\\x{41}-\\x{5A}\\x{61}-\\x{7A}\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}"
      "\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}"
      "\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}"
      "\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}"
      "\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"
      "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}"
      "\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}"
      "\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
      "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}"
      "\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
      "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"
      "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}"
      "\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"
      "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
      "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
      "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
      "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
      "\\x{1E900}-\\x{1E943}"
      "]+",
      "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
      "\\s+$", RE_CJK, "\\p{N}+"}},
    {"deepseek-v3|hunyuan-dense", false,
     {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"
      "|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*"
      "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"gpt-4o|llama4|minimax-m2", false, {RE_CASED("(?i:'s|'t|'re|'ve|'m|'ll|'d)?", "{1,3}")}},
    {"tekken", true, {RE_CASED("", "")}},
    {"poro-chat|bloom|gpt3-finnish", false,
     {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"}},
    {"viking", false,
     {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+",
      "\\p{N}"}},
    {"seed-coder", false,
     {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
      "|\\p{N}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"bailingmoe|bailingmoe2|llada-moe", false,
     {"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*"
      "|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"}},
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
