/*
 * vocab.c — build a tb_tokenizer_t from tokenizer.ggml.* metadata.
 *
 * Keys read (llama.cpp's names): model, pre, tokens, scores, token_type,
 * merges, bos/eos/unknown/padding/eot/eom_token_id, add_bos_token,
 * add_eos_token, add_space_prefix. Every token text and merge string is
 * copied, so the tokenizer does not borrow from the tb_gguf_t.
 */
#include "text/text.h"
#include "util/siphash.h"

#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Hash maps                                                              */
/* ===================================================================== */

static uint64_t slots_for(uint64_t n) {
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    return cap;
}

int32_t tb_vocab_find(const tb_tokenizer_t *t, const char *s, size_t n) {
    uint64_t i = tb_hash_bytes(s, n) & t->tok_mask;
    for (;; i = (i + 1) & t->tok_mask) {
        int32_t id = t->tok_slots[i];
        if (id < 0) return -1;
        if (t->len[id] == n && memcmp(t->text[id], s, n) == 0) return id;
    }
}

/* Keyed hash of the pair (a, b): a's length first, so ("ab", "c") and
 * ("a", "bc") differ. */
static uint64_t merge_hash(const char *a, size_t alen, const char *b, size_t blen) {
    tb_siphash_t h;
    uint64_t n = alen;
    tb_siphash_init(&h, tb_hash_key());
    tb_siphash_update(&h, &n, sizeof n);
    tb_siphash_update(&h, a, alen);
    tb_siphash_update(&h, b, blen);
    return tb_siphash_final(&h);
}

int32_t tb_vocab_merge_rank(const tb_tokenizer_t *t, const char *a, size_t alen,
                            const char *b, size_t blen) {
    if (t->n_merges == 0) return -1;
    uint64_t i = merge_hash(a, alen, b, blen) & t->merge_mask;
    for (;; i = (i + 1) & t->merge_mask) {
        int32_t r = t->merge_slots[i];
        if (r < 0) return -1;
        const tb_merge_t *m = &t->merges[r];
        if (m->alen == alen && m->blen == blen && memcmp(m->a, a, alen) == 0 &&
            memcmp(m->b, b, blen) == 0)
            return r;
    }
}

/* Map every non-empty token text to its id; a repeated text maps to its
 * last id (as llama.cpp's token_to_id). */
static int build_token_map(tb_tokenizer_t *t) {
    uint64_t cap = slots_for((uint64_t)t->n_vocab);
    t->tok_slots = malloc(cap * sizeof *t->tok_slots);
    if (!t->tok_slots) return tb_err(TB_ERR_NOMEM, "tokenizer: token map of %llu slots",
                                     (unsigned long long)cap);
    memset(t->tok_slots, 0xff, cap * sizeof *t->tok_slots);
    t->tok_mask = cap - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (t->len[id] == 0) continue;
        uint64_t i = tb_hash_bytes(t->text[id], t->len[id]) & t->tok_mask;
        for (;; i = (i + 1) & t->tok_mask) {
            int32_t o = t->tok_slots[i];
            t->map_probes++;
            if (o < 0 || (t->len[o] == t->len[id] &&
                          memcmp(t->text[o], t->text[id], t->len[id]) == 0)) {
                t->tok_slots[i] = id;
                break;
            }
        }
    }
    return TB_OK;
}

/* ===================================================================== */
/* Metadata helpers                                                       */
/* ===================================================================== */

/* Array-valued key `key`, or absent (*found false). Optional keys are
 * looked up before they are read, so an absent key sets no error. */
static int get_array(const tb_gguf_t *g, const char *key, tb_gguf_value_t *arr, bool *found) {
    *found = false;
    int64_t i = tb_gguf_find_kv(g, key);
    if (i < 0) return TB_OK;
    int rc = tb_gguf_kv_value(g, i, arr);
    if (rc != TB_OK) return rc;
    if (arr->type != TB_GGUF_ARRAY)
        return tb_err(TB_ERR_FORMAT, "%s: key '%s': expected an array, found %s",
                      tb_gguf_path(g), key, tb_gguf_vtype_name(arr->type));
    *found = true;
    return TB_OK;
}

/* Optional token id key: `dflt` when absent; an id outside the vocab
 * (negative, or of the full model in a vocab-only file) counts as absent,
 * as llama.cpp ignores it. */
static int get_id(const tb_gguf_t *g, const char *key, int32_t n_vocab, int32_t dflt, int32_t *out) {
    if (tb_gguf_find_kv(g, key) < 0) {
        *out = dflt < n_vocab ? dflt : -1;
        return TB_OK;
    }
    int64_t v;
    int rc = tb_gguf_get_i64(g, key, &v);
    if (rc != TB_OK) return rc;
    *out = (v >= 0 && v < n_vocab) ? (int32_t)v : -1;
    return TB_OK;
}

/* Optional flag: a bool, or any integer (non-zero = true). */
static int get_flag(const tb_gguf_t *g, const char *key, bool *inout) {
    int64_t k = tb_gguf_find_kv(g, key);
    tb_gguf_value_t v;
    if (k < 0) return TB_OK;
    int rc = tb_gguf_kv_value(g, k, &v);
    if (rc != TB_OK) return rc;
    switch (v.type) {
    case TB_GGUF_BOOL: case TB_GGUF_UINT8: case TB_GGUF_UINT16: case TB_GGUF_UINT32:
    case TB_GGUF_UINT64:
        *inout = v.v.u64 != 0;
        return TB_OK;
    case TB_GGUF_INT8: case TB_GGUF_INT16: case TB_GGUF_INT32: case TB_GGUF_INT64:
        *inout = v.v.i64 != 0;
        return TB_OK;
    default:
        return tb_err(TB_ERR_FORMAT, "%s: key '%s': expected a bool, found %s", tb_gguf_path(g),
                      key, tb_gguf_vtype_name(v.type));
    }
}

/* ===================================================================== */
/* Loading                                                                */
/* ===================================================================== */

static int load_tokens(tb_tokenizer_t *t, const tb_gguf_t *g) {
    tb_gguf_value_t arr, e;
    bool found;
    int rc = get_array(g, "tokenizer.ggml.tokens", &arr, &found);
    if (rc != TB_OK) return rc;
    if (!found) return tb_err(TB_ERR_NOT_FOUND, "%s: key 'tokenizer.ggml.tokens' not found",
                              tb_gguf_path(g));
    if (arr.v.arr.type != TB_GGUF_STRING || arr.v.arr.n == 0 || arr.v.arr.n > INT32_MAX / 2)
        return tb_err(TB_ERR_FORMAT, "%s: 'tokenizer.ggml.tokens': expected a non-empty array of "
                      "strings, found %llu x %s", tb_gguf_path(g),
                      (unsigned long long)arr.v.arr.n, tb_gguf_vtype_name(arr.v.arr.type));
    t->n_vocab = (int32_t)arr.v.arr.n;
    size_t n = (size_t)t->n_vocab, total = 0;
    for (size_t i = 0; i < n; i++) {
        if ((rc = tb_gguf_arr_get(g, &arr, i, &e)) != TB_OK) return rc;
        if (e.v.str.len > UINT32_MAX / 2)
            return tb_err(TB_ERR_FORMAT, "%s: token %zu: text of %llu bytes", tb_gguf_path(g), i,
                          (unsigned long long)e.v.str.len);
        total += (size_t)e.v.str.len + 1;
    }
    t->blob = malloc(total);
    t->text = malloc(n * sizeof *t->text);
    t->len = malloc(n * sizeof *t->len);
    t->score = calloc(n, sizeof *t->score);
    t->type = malloc(n);
    if (!t->blob || !t->text || !t->len || !t->score || !t->type)
        return tb_err(TB_ERR_NOMEM, "tokenizer: %zu tokens (%zu text bytes)", n, total);
    char *p = t->blob;
    for (size_t i = 0; i < n; i++) {
        if ((rc = tb_gguf_arr_get(g, &arr, i, &e)) != TB_OK) return rc;
        memcpy(p, e.v.str.ptr, e.v.str.len);
        p[e.v.str.len] = '\0';
        t->text[i] = p;
        t->len[i] = (uint32_t)e.v.str.len;
        p += e.v.str.len + 1;
    }
    memset(t->type, TB_TOKTYPE_NORMAL, n);

    /* scores (float32) and token types (int32): optional, one per token */
    rc = get_array(g, "tokenizer.ggml.scores", &arr, &found);
    if (rc != TB_OK) return rc;
    if (found) {
        if (arr.v.arr.n != n || (arr.v.arr.type != TB_GGUF_FLOAT32 && arr.v.arr.type != TB_GGUF_FLOAT64))
            return tb_err(TB_ERR_FORMAT, "%s: 'tokenizer.ggml.scores': expected %zu floats, found "
                          "%llu x %s", tb_gguf_path(g), n, (unsigned long long)arr.v.arr.n,
                          tb_gguf_vtype_name(arr.v.arr.type));
        for (size_t i = 0; i < n; i++) {
            if ((rc = tb_gguf_arr_get(g, &arr, i, &e)) != TB_OK) return rc;
            t->score[i] = (float)e.v.f64;
        }
    }
    rc = get_array(g, "tokenizer.ggml.token_type", &arr, &found);
    if (rc != TB_OK) return rc;
    if (found) {
        tb_gguf_vtype_t et = arr.v.arr.type;
        if (arr.v.arr.n != n || et > TB_GGUF_INT32 || et == TB_GGUF_FLOAT32)
            return tb_err(TB_ERR_FORMAT, "%s: 'tokenizer.ggml.token_type': expected %zu integers, "
                          "found %llu x %s", tb_gguf_path(g), n, (unsigned long long)arr.v.arr.n,
                          tb_gguf_vtype_name(et));
        for (size_t i = 0; i < n; i++) {
            if ((rc = tb_gguf_arr_get(g, &arr, i, &e)) != TB_OK) return rc;
            int64_t v = (et == TB_GGUF_INT8 || et == TB_GGUF_INT16 || et == TB_GGUF_INT32)
                            ? e.v.i64 : (int64_t)e.v.u64;
            t->type[i] = (v >= 0 && v <= TB_TOKTYPE_BYTE) ? (uint8_t)v : TB_TOKTYPE_UNDEFINED;
        }
    }
    return TB_OK;
}

/* Merges "a b" (split at the first space after the first byte, as
 * llama.cpp); a repeated pair keeps its first (lowest) rank. */
static int load_merges(tb_tokenizer_t *t, const tb_gguf_t *g) {
    tb_gguf_value_t arr, e;
    bool found;
    int rc = get_array(g, "tokenizer.ggml.merges", &arr, &found);
    if (rc != TB_OK || !found) return rc;
    if (arr.v.arr.type != TB_GGUF_STRING || arr.v.arr.n > INT32_MAX / 2)
        return tb_err(TB_ERR_FORMAT, "%s: 'tokenizer.ggml.merges': expected an array of strings, "
                      "found %s", tb_gguf_path(g), tb_gguf_vtype_name(arr.v.arr.type));
    size_t n = (size_t)arr.v.arr.n, total = 0;
    for (size_t i = 0; i < n; i++) {
        if ((rc = tb_gguf_arr_get(g, &arr, i, &e)) != TB_OK) return rc;
        total += (size_t)e.v.str.len;
    }
    uint64_t cap = slots_for(n);
    t->merge_blob = malloc(total + 1);
    t->merges = malloc((n + 1) * sizeof *t->merges);
    t->merge_slots = malloc(cap * sizeof *t->merge_slots);
    if (!t->merge_blob || !t->merges || !t->merge_slots)
        return tb_err(TB_ERR_NOMEM, "tokenizer: %zu merges", n);
    memset(t->merge_slots, 0xff, cap * sizeof *t->merge_slots);
    t->merge_mask = cap - 1;
    char *p = t->merge_blob;
    for (size_t i = 0; i < n; i++) {
        if ((rc = tb_gguf_arr_get(g, &arr, i, &e)) != TB_OK) return rc;
        const char *s = e.v.str.ptr;
        size_t len = (size_t)e.v.str.len, sp = 1;
        while (sp < len && s[sp] != ' ') sp++;
        if (sp >= len)
            return tb_err(TB_ERR_FORMAT, "%s: 'tokenizer.ggml.merges'[%zu]: expected \"a b\", found "
                          "\"%.*s\"", tb_gguf_path(g), i, (int)TB_MIN(len, 64), s);
        memcpy(p, s, len);
        tb_merge_t m = {p, p + sp + 1, (uint32_t)sp, (uint32_t)(len - sp - 1)};
        p += len;
        uint64_t h = merge_hash(m.a, m.alen, m.b, m.blen) & t->merge_mask;
        for (;; h = (h + 1) & t->merge_mask) {
            int32_t r = t->merge_slots[h];
            t->map_probes++;
            if (r < 0) break;
            const tb_merge_t *o = &t->merges[r];
            if (o->alen == m.alen && o->blen == m.blen && !memcmp(o->a, m.a, m.alen) &&
                !memcmp(o->b, m.b, m.blen))
                goto next;                              /* duplicate: keep the first */
        }
        t->merges[i] = m;                  /* rank == index */
        t->merge_slots[h] = (int32_t)i;
        continue;
    next:
        t->merges[i] = (tb_merge_t){"", "", 0, 0};   /* never looked up */
    }
    t->n_merges = (int32_t)n;
    return TB_OK;
}

/* Special tokens (control, user-defined, unknown), longest text first,
 * ties by id, as tb_tokenize matches them. */
typedef struct special_key { uint32_t len; int32_t id; } special_key_t;

static int cmp_special(const void *pa, const void *pb) {
    const special_key_t *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static bool is_special_type(uint8_t ty) {
    return ty == TB_TOKTYPE_CONTROL || ty == TB_TOKTYPE_USER_DEFINED || ty == TB_TOKTYPE_UNKNOWN;
}

static int collect_specials(tb_tokenizer_t *t) {
    int32_t n = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (is_special_type(t->type[id]) && t->len[id] > 0) n++;
    special_key_t *keys = malloc((size_t)(n + 1) * sizeof *keys);
    t->specials = malloc((size_t)(n + 1) * sizeof *t->specials);
    if (!keys || !t->specials) {
        free(keys);
        return tb_err(TB_ERR_NOMEM, "tokenizer: %d special tokens", n);
    }
    int32_t k = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (is_special_type(t->type[id]) && t->len[id] > 0) keys[k++] = (special_key_t){t->len[id], id};
    qsort(keys, (size_t)n, sizeof *keys, cmp_special);
    for (int32_t i = 0; i < n; i++) t->specials[i] = keys[i].id;
    t->n_specials = n;
    free(keys);
    return TB_OK;
}

static void add_eog(tb_tokenizer_t *t, int32_t id) {
    if (id < 0 || t->n_eog >= (int32_t)TB_ARRAY_LEN(t->eog)) return;
    for (int32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return;
    t->eog[t->n_eog++] = id;
}

/* End-of-generation set: eos, eot, eom, plus tokens whose text is one of
 * the usual end-of-turn markers. As llama.cpp, such marker tokens are
 * made control tokens whatever their stored type (so they are neither
 * matched in text without parse_special nor printed). */
static int collect_eog(tb_tokenizer_t *t, const tb_gguf_t *g) {
    static const char *const names[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
        "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
        "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",   /* DeepSeek */
    };
    int32_t eot, eom;
    int rc = get_id(g, "tokenizer.ggml.eot_token_id", t->n_vocab, -1, &eot);
    if (rc == TB_OK) rc = get_id(g, "tokenizer.ggml.eom_token_id", t->n_vocab, -1, &eom);
    if (rc != TB_OK) return rc;
    add_eog(t, t->eos);
    add_eog(t, eot);
    add_eog(t, eom);
    for (size_t k = 0; k < TB_ARRAY_LEN(names); k++) {
        int32_t id = tb_vocab_find(t, names[k], strlen(names[k]));
        if (id < 0) continue;
        add_eog(t, id);
        t->type[id] = TB_TOKTYPE_CONTROL;
    }
    return TB_OK;
}

/* SPM byte fallback table: byte -> "<0xXX>" id, else the one-byte token. */
static void build_byte_table(tb_tokenizer_t *t) {
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char s[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
        int32_t id = tb_vocab_find(t, s, 6);
        if (id < 0) {
            char c = (char)b;
            id = tb_vocab_find(t, &c, 1);
        }
        t->byte_tok[b] = id;
    }
}

static int load(tb_tokenizer_t *t, const tb_gguf_t *g) {
    char model[64];
    int rc = tb_gguf_get_str(g, "tokenizer.ggml.model", model, sizeof model);
    if (rc != TB_OK) return rc;
    if (strcmp(model, "llama") == 0) {
        t->model = TB_TOK_SPM;
    } else if (strcmp(model, "gpt2") == 0) {
        t->model = TB_TOK_BPE;
    } else {
        return tb_err(TB_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model '%s' is not supported "
                      "(expected 'llama' or 'gpt2')", tb_gguf_path(g), model);
    }
    t->pre[0] = '\0';                           /* absent: the default pre-tokenizer */
    int64_t k = tb_gguf_find_kv(g, "tokenizer.ggml.pre");
    tb_gguf_value_t pre;
    if (k >= 0) {
        if ((rc = tb_gguf_kv_value(g, k, &pre)) != TB_OK) return rc;
        if (pre.type != TB_GGUF_STRING)
            return tb_err(TB_ERR_FORMAT, "%s: key 'tokenizer.ggml.pre': expected a string, found %s",
                          tb_gguf_path(g), tb_gguf_vtype_name(pre.type));
        if (pre.v.str.len < sizeof t->pre) {      /* longer: no known name, the default */
            memcpy(t->pre, pre.v.str.ptr, pre.v.str.len);
            t->pre[pre.v.str.len] = '\0';
        }
    }

    if ((rc = load_tokens(t, g)) != TB_OK) return rc;
    if ((rc = build_token_map(t)) != TB_OK) return rc;
    if (t->model == TB_TOK_BPE && (rc = load_merges(t, g)) != TB_OK) return rc;

    /* defaults as llama.cpp: SPM has <unk>=0 <s>=1 </s>=2, adds BOS and a
     * space prefix; BPE adds nothing unless told (llama3 adds BOS) */
    bool spm = t->model == TB_TOK_SPM;
    t->add_bos = spm || tb_pretok_ignore_merges(t->pre);
    t->add_eos = false;
    t->add_space_prefix = spm;
    t->ignore_merges = !spm && tb_pretok_ignore_merges(t->pre);
    if ((rc = get_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, spm ? 1 : -1, &t->bos)) ||
        (rc = get_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, spm ? 2 : -1, &t->eos)) ||
        (rc = get_id(g, "tokenizer.ggml.unknown_token_id", t->n_vocab, spm ? 0 : -1, &t->unk)) ||
        (rc = get_id(g, "tokenizer.ggml.padding_token_id", t->n_vocab, -1, &t->pad)) ||
        (rc = get_flag(g, "tokenizer.ggml.add_bos_token", &t->add_bos)) ||
        (rc = get_flag(g, "tokenizer.ggml.add_eos_token", &t->add_eos)) ||
        (rc = get_flag(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix)))
        return rc;
    if ((rc = collect_eog(t, g)) != TB_OK) return rc;          /* may retype tokens */
    if ((rc = collect_specials(t)) != TB_OK) return rc;

    if (spm) {
        build_byte_table(t);
    } else {
        bool fallback;
        if ((rc = tb_pretok_new(t->pre, &t->pretok, &fallback)) != TB_OK) return rc;
    }
    return TB_OK;
}

/* ===================================================================== */
/* Public API                                                             */
/* ===================================================================== */

int tb_tokenizer_from_gguf(const tb_gguf_t *g, tb_tokenizer_t **out) {
    if (!g || !out) return tb_err(TB_ERR_ARG, "tb_tokenizer_from_gguf: NULL argument");
    *out = NULL;
    tb_tokenizer_t *t = calloc(1, sizeof *t);
    if (!t) return tb_err(TB_ERR_NOMEM, "tokenizer: allocation failed");
    int rc = load(t, g);
    if (rc != TB_OK) {
        tb_tokenizer_free(t);
        return tb_err_prefix(rc, "tokenizer");
    }
    *out = t;
    return TB_OK;
}

void tb_tokenizer_free(tb_tokenizer_t *t) {
    if (!t) return;
    tb_pretok_free(t->pretok);
    free(t->blob);
    free(t->text);
    free(t->len);
    free(t->score);
    free(t->type);
    free(t->tok_slots);
    free(t->merge_blob);
    free(t->merges);
    free(t->merge_slots);
    free(t->specials);
    free(t);
}

int32_t tb_tokenizer_n_vocab(const tb_tokenizer_t *t) { return t ? t->n_vocab : 0; }
int32_t tb_tokenizer_bos(const tb_tokenizer_t *t) { return t ? t->bos : -1; }
int32_t tb_tokenizer_eos(const tb_tokenizer_t *t) { return t ? t->eos : -1; }

bool tb_tokenizer_is_eog(const tb_tokenizer_t *t, int32_t id) {
    if (!t || id < 0) return false;
    for (int32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return true;
    return false;
}
