/*
 * test_tiny.c — hand-built vocabularies written with the GGUF writer:
 * a byte-level BPE vocab (merge ranks, special tokens, BOS, invalid
 * UTF-8, unknown pre-tokenizer fallback) and an SPM vocab (score order,
 * byte fallback, space prefix after specials, streaming detokenization of
 * characters split across byte tokens).
 *
 * Expected ids are written from the algorithm's definition by hand (the
 * vocab is small enough to follow every merge), not read back from the
 * implementation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ternbench.h"

#define OK(x) assert_int_equal((x), TB_OK)

static char g_dir[256];

/* ===================================================================== */
/* Building vocab files                                                   */
/* ===================================================================== */

typedef struct vocab {
    const char *tok[600];
    int32_t type[600];
    float score[600];
    int n;
    const char *merges[32];
    int n_merges;
} vocab_t;

static int add(vocab_t *v, const char *s, int32_t type, float score) {
    v->tok[v->n] = s;
    v->type[v->n] = type;
    v->score[v->n] = score;
    return v->n++;
}

/* Write v as a vocab-only GGUF and load its tokenizer. Extra keys: pre
 * (BPE) and add_bos. */
static tb_tokenizer_t *load_vocab(const vocab_t *v, const char *model, const char *pre,
                                  int32_t bos, int32_t eos, bool add_bos, const char *file,
                                  tb_gguf_t **g) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, file);
    tb_gguf_writer_t *w;
    OK(tb_gguf_writer_new(&w));
    OK(tb_gguf_set_str(w, "general.architecture", "llama"));
    OK(tb_gguf_set_str(w, "tokenizer.ggml.model", model));
    if (pre) OK(tb_gguf_set_str(w, "tokenizer.ggml.pre", pre));
    OK(tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", v->tok, NULL, (uint64_t)v->n));
    OK(tb_gguf_set_arr(w, "tokenizer.ggml.token_type", TB_GGUF_INT32, v->type, (uint64_t)v->n));
    OK(tb_gguf_set_arr(w, "tokenizer.ggml.scores", TB_GGUF_FLOAT32, v->score, (uint64_t)v->n));
    if (v->n_merges)
        OK(tb_gguf_set_arr_str(w, "tokenizer.ggml.merges", v->merges, NULL, (uint64_t)v->n_merges));
    OK(tb_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos));
    OK(tb_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos));
    OK(tb_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", add_bos));
    OK(tb_gguf_writer_begin(w, path));
    OK(tb_gguf_writer_finish(w));
    tb_gguf_writer_free(w);
    int rc = tb_gguf_open(path, g);
    if (rc != TB_OK) print_message("%s\n", tb_last_error());
    OK(rc);
    tb_tokenizer_t *t;
    rc = tb_tokenizer_from_gguf(*g, &t);
    if (rc != TB_OK) print_message("%s\n", tb_last_error());
    OK(rc);
    unlink(path);
    return t;
}

/* Encode and compare with the expected ids (terminated by -1). */
static void expect(const tb_tokenizer_t *t, const char *s, bool add_special, bool parse_special,
                   const int32_t *want) {
    int32_t got[256];
    int n = tb_tokenize(t, s, strlen(s), add_special, parse_special, got, 256);
    int nw = 0;
    while (want[nw] >= 0) nw++;
    bool same = n == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0;
    if (!same) {
        print_message("\"%s\": want", s);
        for (int i = 0; i < nw; i++) print_message(" %d", want[i]);
        print_message(", got");
        for (int i = 0; i < n; i++) print_message(" %d", got[i]);
        print_message("\n");
    }
    assert_true(same);
}
#define EXPECT(t, s, as, ps, ...) expect(t, s, as, ps, (const int32_t[]){__VA_ARGS__, -1})

/* ===================================================================== */
/* Byte-level BPE                                                         */
/* ===================================================================== */

/* GPT-2 alphabet character of byte b, as UTF-8 (written independently of
 * the engine's table, from the published definition). */
static void alpha(unsigned b, char out[3]) {
    bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    unsigned cp = b;
    if (!printable) {
        unsigned k = 0;
        for (unsigned c = 0; c < b; c++)
            k += !((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE));
        cp = 256 + k;
    }
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; }
    else { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); out[2] = 0; }
}

static char bytes_storage[256][3];
enum { B_HE = 256, B_LL, B_HELL, B_HELLO, B_GW, B_EL, B_12, B_AS, B_AS_UP, B_END, B_TOOL, B_IMEND, B_TOOLX, B_N };

static vocab_t bpe_vocab(void) {
    vocab_t v = {0};
    for (unsigned b = 0; b < 256; b++) {
        alpha(b, bytes_storage[b]);
        add(&v, bytes_storage[b], 1, 0);          /* id == byte */
    }
    add(&v, "he", 1, 0);
    add(&v, "ll", 1, 0);
    add(&v, "hell", 1, 0);
    add(&v, "hello", 1, 0);
    add(&v, "\xC4\xA0w", 1, 0);                   /* "Ġw" = " w" */
    add(&v, "el", 1, 0);
    add(&v, "12", 1, 0);
    add(&v, "'s", 1, 0);
    add(&v, "'S", 1, 0);
    add(&v, "<|end|>", 3, 0);                     /* control */
    add(&v, "<tool>", 4, 0);                      /* user-defined */
    add(&v, "<|im_end|>", 1, 0);                  /* end-of-turn marker stored as normal */
    add(&v, "<tool>x", 4, 0);                     /* user-defined, longer than <tool> */
    const char *merges[] = {"l l", "h e", "he ll", "hell o", "\xC4\xA0 w", "e l", "1 2", "' s", "' S"};
    for (size_t i = 0; i < sizeof merges / sizeof *merges; i++) v.merges[v.n_merges++] = merges[i];
    return v;
}

static void test_bpe_merges(void **state) {
    (void)state;
    vocab_t v = bpe_vocab();
    tb_gguf_t *g;
    tb_tokenizer_t *t = load_vocab(&v, "gpt2", "qwen2", B_END, B_END, false, "bpe.gguf", &g);
    assert_int_equal(tb_tokenizer_n_vocab(t), B_N);
    assert_int_equal(tb_tokenizer_bos(t), B_END);
    assert_true(tb_tokenizer_is_eog(t, B_END));
    assert_false(tb_tokenizer_is_eog(t, 'a'));
    /* an end-of-turn marker is end-of-generation and becomes a control token */
    assert_true(tb_tokenizer_is_eog(t, B_IMEND));
    char piece[16];
    assert_int_equal(tb_token_to_bytes(t, B_IMEND, false, piece, sizeof piece), 0);
    assert_int_equal(tb_token_to_bytes(t, B_IMEND, true, piece, sizeof piece), 10);
    EXPECT(t, "<|im_end|>", false, true, B_IMEND);

    EXPECT(t, "hello", false, false, B_HELLO);
    /* "ll" (rank 0) beats "el" (rank 5): e + ll, never el + l */
    EXPECT(t, "ell", false, false, 'e', B_LL);
    /* equal ranks: the leftmost pair merges first */
    EXPECT(t, "lll", false, false, B_LL, 'l');
    /* " w" merges; the space before "hello" is its own byte (no "Ġh" merge) */
    EXPECT(t, "hello world", false, false, B_HELLO, B_GW, 'o', 'r', 'l', 'd');
    /* qwen2 splits digits one by one, so "1 2" cannot merge */
    EXPECT(t, "he12", false, false, B_HE, '1', '2');
    /* qwen2 contractions are case-insensitive: "'S" is one word */
    EXPECT(t, "'s'S", false, false, B_AS, B_AS_UP);
    /* newline and control bytes map through the alphabet */
    EXPECT(t, "\n\t", false, false, '\n', '\t');
    /* invalid UTF-8 still encodes, byte by byte */
    EXPECT(t, "\xFF\xC3", false, false, 0xFF, 0xC3);

    /* specials: control only with parse_special; user-defined always */
    EXPECT(t, "he<|end|>he", false, true, B_HE, B_END, B_HE);
    int32_t ids[64];
    int n = tb_tokenize(t, "he<|end|>he", 11, false, false, ids, 64);
    assert_true(n > 3);
    for (int i = 0; i < n; i++) assert_int_not_equal(ids[i], B_END);
    EXPECT(t, "<tool>he", false, false, B_TOOL, B_HE);
    /* the longest special text wins wherever it starts */
    EXPECT(t, "<tool>x<tool>", false, false, B_TOOLX, B_TOOL);
    EXPECT(t, "he<tool>xhe", false, false, B_HE, B_TOOLX, B_HE);
    EXPECT(t, "<|end|><|end|>", false, true, B_END, B_END);

    /* add_bos is false in this file: add_special adds nothing */
    EXPECT(t, "he", true, false, B_HE);

    /* decoding: byte-level unmapping; control text only when asked */
    char buf[32];
    assert_int_equal(tb_token_to_bytes(t, B_GW, false, buf, sizeof buf), 2);
    assert_memory_equal(buf, " w", 2);
    assert_int_equal(tb_token_to_bytes(t, 0xFF, false, buf, sizeof buf), 1);
    assert_int_equal((unsigned char)buf[0], 0xFF);
    assert_int_equal(tb_token_to_bytes(t, B_END, false, buf, sizeof buf), 0);
    assert_int_equal(tb_token_to_bytes(t, B_END, true, buf, sizeof buf), 7);
    assert_memory_equal(buf, "<|end|>", 7);
    assert_int_equal(tb_token_to_bytes(t, B_TOOL, false, buf, sizeof buf), 6);
    /* too small a buffer: full length reported, cap respected */
    buf[2] = 'X';
    assert_int_equal(tb_token_to_bytes(t, B_HELLO, false, buf, 2), 5);
    assert_int_equal(buf[2], 'X');
    assert_true(tb_token_to_bytes(t, B_N, false, buf, sizeof buf) < 0);
    assert_true(tb_token_to_bytes(t, -1, false, buf, sizeof buf) < 0);

    tb_tokenizer_free(t);
    tb_gguf_close(g);
}

static void test_bpe_bos_and_fallback_pre(void **state) {
    (void)state;
    vocab_t v = bpe_vocab();
    tb_gguf_t *g;
    /* an unknown pre-tokenizer falls back to GPT-2's pattern, which keeps
     * digit runs together: "12" is one word and merges */
    tb_tokenizer_t *t = load_vocab(&v, "gpt2", "no-such-pre", 'a', B_END, true, "bpe2.gguf", &g);
    EXPECT(t, "he12", true, false, 'a', B_HE, B_12);
    EXPECT(t, "hello world", false, false, B_HELLO, B_GW, 'o', 'r', 'l', 'd');
    /* GPT-2 contractions are lower-case only: "'S" splits and cannot merge */
    EXPECT(t, "'s'S", false, false, B_AS, '\'', 'S');
    int32_t one;
    assert_int_equal(tb_tokenize(t, "", 0, true, false, &one, 1), 1);
    assert_int_equal(one, 'a');
    assert_int_equal(tb_tokenize(t, "", 0, false, false, NULL, 0), 0);
    assert_true(tb_tokenize(NULL, "x", 1, false, false, &one, 1) < 0);
    tb_tokenizer_free(t);
    tb_gguf_close(g);
}

/* ===================================================================== */
/* SentencePiece                                                          */
/* ===================================================================== */

static char hex_storage[256][7];
static int S_UNK, S_BOS, S_EOS, S_SP, S_A, S_B, S_C, S_AB, S_BC, S_SPA, S_X;

static vocab_t spm_vocab(float ab, float bc) {
    vocab_t v = {0};
    S_UNK = add(&v, "<unk>", 2, 0);
    S_BOS = add(&v, "<s>", 3, 0);
    S_EOS = add(&v, "</s>", 3, 0);
    for (unsigned b = 0; b < 256; b++) {
        snprintf(hex_storage[b], sizeof hex_storage[b], "<0x%02X>", b);
        add(&v, hex_storage[b], 6, 0);           /* id 3 + b */
    }
    S_SP = add(&v, "\xE2\x96\x81", 1, -1);       /* "▁" */
    S_A = add(&v, "a", 1, -2);
    S_B = add(&v, "b", 1, -2);
    S_C = add(&v, "c", 1, -2);
    S_AB = add(&v, "ab", 1, ab);
    S_BC = add(&v, "bc", 1, bc);
    S_SPA = add(&v, "\xE2\x96\x81" "a", 1, -50);  /* "▁a": a poor merge */
    S_X = add(&v, "x", 1, -2);
    return v;
}

static void test_spm_scores(void **state) {
    (void)state;
    tb_gguf_t *g;
    vocab_t v = spm_vocab(-1, -2);
    tb_tokenizer_t *t = load_vocab(&v, "llama", "default", 1, 2, true, "spm1.gguf", &g);
    /* ab (-1) > bc (-2) > ▁a (-50): "▁abc" -> ▁ ab c */
    EXPECT(t, "abc", false, false, S_SP, S_AB, S_C);
    /* add_bos is true: BOS first with add_special */
    EXPECT(t, "abc", true, false, S_BOS, S_SP, S_AB, S_C);
    /* the prefix space and inner spaces become ▁; "▁a" merges when nothing better */
    EXPECT(t, "a x", false, false, S_SPA, S_SP, S_X);
    /* byte fallback for unknown characters: é = C3 A9 */
    EXPECT(t, "\xC3\xA9", false, false, S_SP, 3 + 0xC3, 3 + 0xA9);
    EXPECT(t, "\n", false, false, S_SP, 3 + '\n');
    /* specials with parse_special, and the space prefix after them */
    EXPECT(t, "x<s>x", false, true, S_SP, S_X, S_BOS, S_SP, S_X);
    EXPECT(t, "<s>", false, false, S_SP, 3 + '<', 3 + 's', 3 + '>');
    EXPECT(t, "", true, false, S_BOS);
    tb_tokenizer_free(t);
    tb_gguf_close(g);

    /* swapping the scores swaps the merge; then "▁a" is no longer stale */
    v = spm_vocab(-2, -1);
    t = load_vocab(&v, "llama", NULL, 1, 2, false, "spm2.gguf", &g);
    EXPECT(t, "abc", false, false, S_SPA, S_BC);
    EXPECT(t, "abc", true, false, S_SPA, S_BC);          /* add_bos false in this file */
    tb_tokenizer_free(t);
    tb_gguf_close(g);
}

/* Push ids through a detokenizer, recording the length of each chunk. */
static size_t stream(const tb_tokenizer_t *t, const int32_t *ids, int n, char *out, int *chunks) {
    tb_detok_t *d;
    OK(tb_detok_new(t, &d));
    size_t w = 0;
    for (int i = 0; i < n; i++) {
        int k = tb_detok_push(d, ids[i], out + w, 64);
        assert_true(k >= 0);
        chunks[i] = k;
        w += (size_t)k;
    }
    int k = tb_detok_flush(d, out + w, 64);
    assert_true(k >= 0);
    chunks[n] = k;
    w += (size_t)k;
    tb_detok_free(d);
    return w;
}

static void test_spm_detok(void **state) {
    (void)state;
    tb_gguf_t *g;
    vocab_t v = spm_vocab(-1, -2);
    tb_tokenizer_t *t = load_vocab(&v, "llama", "default", 1, 2, true, "spm3.gguf", &g);
    char out[256];
    int chunks[16];

    /* "▁ é 😀 a": é and 😀 arrive byte by byte; nothing partial comes out */
    int32_t ids[] = {S_SP, 3 + 0xC3, 3 + 0xA9, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80, S_A};
    size_t n = stream(t, ids, 8, out, chunks);
    int want[] = {0, 0, 2, 0, 0, 0, 4, 1, 0};   /* leading space stripped */
    assert_memory_equal(chunks, want, sizeof want);
    assert_int_equal(n, 7);
    assert_memory_equal(out, "\xC3\xA9\xF0\x9F\x98\x80" "a", 7);

    /* the round trip of encode */
    const char *s = "a x \xC3\xA9 abc";
    int32_t e[64];
    int ne = tb_tokenize(t, s, strlen(s), true, false, e, 64);
    assert_true(ne > 0 && ne < 16);
    n = stream(t, e, ne, out, chunks);
    assert_int_equal(n, strlen(s));
    assert_memory_equal(out, s, n);

    /* a broken sequence: lead byte then an ASCII byte -> U+FFFD then the byte;
     * a dangling lead byte at the end -> U+FFFD on flush */
    int32_t bad[] = {S_A, 3 + 0xE2, S_X, 3 + 0xF0, 3 + 0x9F};
    n = stream(t, bad, 5, out, chunks);
    assert_int_equal(chunks[4], 0);
    assert_int_equal(chunks[5], 3);
    assert_int_equal(n, 1 + 3 + 1 + 3);
    assert_memory_equal(out, "a\xEF\xBF\xBDx\xEF\xBF\xBD", 8);

    /* control tokens print nothing; only the first piece loses its space */
    int32_t sp[] = {S_BOS, S_SP, S_SP, S_A, S_EOS};
    n = stream(t, sp, 5, out, chunks);
    assert_int_equal(n, 2);
    assert_memory_equal(out, " a", 2);

    /* a small output buffer: text stays pending, nothing is lost or split */
    tb_detok_t *d;
    OK(tb_detok_new(t, &d));
    int32_t emoji[] = {S_X, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80};
    size_t w = 0;
    for (int i = 0; i < 5; i++) {
        int k = tb_detok_push(d, emoji[i], out + w, 2);
        assert_true(k >= 0 && k <= 2);
        w += (size_t)k;
    }
    assert_int_equal(w, 1);                        /* the 4-byte emoji did not fit in 2 */
    int k = tb_detok_flush(d, out + w, 8);
    assert_int_equal(k, 4);
    assert_memory_equal(out, "x\xF0\x9F\x98\x80", 5);
    tb_detok_free(d);

    tb_tokenizer_free(t);
    tb_gguf_close(g);
}

/* Write a vocab file with the given broken piece; expect `status` and a
 * message containing `needle`. */
static void expect_bad(int variant, int status, const char *needle) {
    char path[512];
    snprintf(path, sizeof path, "%s/bad%d.gguf", g_dir, variant);
    tb_gguf_writer_t *w;
    OK(tb_gguf_writer_new(&w));
    const char *toks[] = {"a", "b", "ab"};
    int32_t types[] = {1, 1, 1};
    OK(tb_gguf_set_str(w, "tokenizer.ggml.model", variant == 0 ? "wordpiece" : "gpt2"));
    if (variant != 1) OK(tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 3));
    OK(tb_gguf_set_arr(w, "tokenizer.ggml.token_type", TB_GGUF_INT32, types, variant == 2 ? 2 : 3));
    const char *merges[] = {variant == 3 ? "ab" : "a b"};
    OK(tb_gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 1));
    if (variant == 4) OK(tb_gguf_set_str(w, "tokenizer.ggml.scores", "not an array"));
    OK(tb_gguf_writer_begin(w, path));
    OK(tb_gguf_writer_finish(w));
    tb_gguf_writer_free(w);
    tb_gguf_t *g;
    OK(tb_gguf_open(path, &g));
    tb_tokenizer_t *t = (tb_tokenizer_t *)&t;       /* must be reset to NULL */
    int rc = tb_tokenizer_from_gguf(g, &t);
    if (rc != status || !strstr(tb_last_error(), needle))
        print_message("variant %d: %d %s\n", variant, rc, tb_last_error());
    assert_int_equal(rc, status);
    if (status == TB_OK) {
        assert_non_null(t);
        EXPECT(t, "ab", false, false, 2);
        tb_tokenizer_free(t);
    } else {
        assert_null(t);
        assert_non_null(strstr(tb_last_error(), needle));
        assert_non_null(strstr(tb_last_error(), path));   /* names the file */
    }
    tb_gguf_close(g);
    unlink(path);
}

static void test_bad_vocab(void **state) {
    (void)state;
    expect_bad(0, TB_ERR_UNSUPPORTED, "wordpiece");
    expect_bad(1, TB_ERR_NOT_FOUND, "tokenizer.ggml.tokens");
    expect_bad(2, TB_ERR_FORMAT, "token_type");
    expect_bad(3, TB_ERR_FORMAT, "merges");
    expect_bad(4, TB_ERR_FORMAT, "scores");
    expect_bad(5, TB_OK, "");                         /* the well-formed variant loads */
}

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/tb_text_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return rmdir(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bpe_merges),
        cmocka_unit_test(test_bpe_bos_and_fallback_pre),
        cmocka_unit_test(test_spm_scores),
        cmocka_unit_test(test_spm_detok),
        cmocka_unit_test(test_bad_vocab),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
