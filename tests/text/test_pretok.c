/*
 * test_pretok.c — the pre-tokenizer regexes split text as the published
 * patterns define (expected words worked out by hand from each regex's
 * alternation order), including multi-pass pre-tokenizers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "text/text.h"

/* Split text with pre-tokenizer `name`; compare with the NULL-terminated
 * list of expected words. */
static void expect_split(const char *name, const char *text, const char *const *want) {
    tb_pretok_t *p;
    bool fallback;
    assert_int_equal(tb_pretok_new(name, &p, &fallback), TB_OK);
    assert_false(fallback);
    tb_tok_scratch_t s = {0};
    assert_int_equal(tb_pretok_split(p, &s, text, strlen(text)), TB_OK);
    size_t nw = 0;
    while (want[nw]) nw++;
    bool same = s.nspans == 2 * nw;
    for (size_t i = 0; same && i < nw; i++)
        same = s.spans[2 * i + 1] == strlen(want[i]) &&
               memcmp(text + s.spans[2 * i], want[i], strlen(want[i])) == 0;
    if (!same) {
        print_message("%s: \"%s\" ->", name, text);
        for (size_t i = 0; i < s.nspans; i += 2)
            print_message(" [%.*s]", (int)s.spans[i + 1], text + s.spans[i]);
        print_message("\n");
    }
    assert_true(same);
    tb_tok_scratch_free(&s);
    tb_pretok_free(p);
}
#define SPLIT(name, text, ...) expect_split(name, text, (const char *const[]){__VA_ARGS__, NULL})

#define MIXED "Hello, y'all! How are you \xF0\x9F\x98\x81 ?\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8" \
              "apple\xE5\xB7\xA5\xE4\xBD\x9C" "1314151\xE5\xA4\xA9\xEF\xBD\x9E"
#define CJK "\xE6\x88\x91\xE6\x83\xB3\xE5\x9C\xA8" "apple\xE5\xB7\xA5\xE4\xBD\x9C"

static void test_gpt2(void **state) {
    (void)state;
    SPLIT("gpt-2", MIXED, "Hello", ",", " y", "'", "all", "!", " How", " are", " you",
          " \xF0\x9F\x98\x81", " ?", CJK, "1314151", "\xE5\xA4\xA9", "\xEF\xBD\x9E");
    SPLIT("gpt-2", "   Hello\n\n\tworld  ", "  ", " Hello", "\n\n", "\t", "world", "  ");
    SPLIT("default", "I'm 3 o'clock", "I", "'m", " 3", " o", "'", "clock");
}

static void test_qwen2(void **state) {
    (void)state;
    SPLIT("qwen2", MIXED, "Hello", ",", " y", "'all", "!", " How", " are", " you",
          " \xF0\x9F\x98\x81", " ?", CJK, "1", "3", "1", "4", "1", "5", "1", "\xE5\xA4\xA9",
          "\xEF\xBD\x9E");
    SPLIT("qwen2", "   Hello\n\n\tworld  ", "  ", " Hello", "\n\n", "\tworld", "  ");
    SPLIT("qwen2", "I'M here!\n\nOK", "I", "'M", " here", "!\n\n", "OK");
}

static void test_llama3(void **state) {
    (void)state;
    SPLIT("llama3", "1314151 abc", "131", "415", "1", " abc");
    assert_true(tb_pretok_ignore_merges("llama-bpe"));
    assert_false(tb_pretok_ignore_merges("qwen2"));
}

static void test_multi_pass(void **state) {
    (void)state;
    /* starcoder: single digits first, then GPT-2 within the rest */
    SPLIT("starcoder", "ab 123", "ab", " ", "1", "2", "3");
    /* falcon: punctuation runs, GPT-2, then digit triples */
    SPLIT("falcon", "x=12345!", "x", "=", "123", "45", "!");
    /* deepseek-llm: newlines, cased-letter runs (with one leading space),
     * ASCII/CJK punctuation runs, trailing space, CJK, digit runs */
    SPLIT("deepseek-llm", "Hello World\n3rd \xC3\x84\xC3\x96", "Hello", " World", "\n", "3", "rd",
          " \xC3\x84\xC3\x96");
    SPLIT("deepseek-coder", "a, b\n12", "a", ",", " b", "\n", "1", "2");
}

static void test_every_name_compiles(void **state) {
    (void)state;
    static const char *const names[] = {
        "default", "gpt-2", "mpt", "olmo", "qwen2", "stablelm2", "llama3", "llama-bpe", "dbrx",
        "chatglm-bpe", "starcoder", "refact", "command-r", "falcon", "deepseek-coder",
        "deepseek-llm", "deepseek-v3", "gpt-4o", "tekken", "poro-chat", "viking", "seed-coder",
        "bailingmoe", "exaone", "smollm",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        tb_pretok_t *p;
        bool fallback;
        int rc = tb_pretok_new(names[i], &p, &fallback);
        if (rc != TB_OK) print_message("%s: %s\n", names[i], tb_last_error());
        assert_int_equal(rc, TB_OK);
        assert_false(fallback);
        /* every pass covers the text exactly, in order */
        const char text[] = "Hello, y'all! 3333 \xE4\xBD\xA0\xE5\xA5\xBD\n\n  \xD0\x91\xC3\xA9x  ";
        tb_tok_scratch_t s = {0};
        assert_int_equal(tb_pretok_split(p, &s, text, sizeof text - 1), TB_OK);
        size_t covered = 0;
        for (size_t k = 0; k < s.nspans; k += 2) {
            assert_int_equal(s.spans[k], covered);
            assert_true(s.spans[k + 1] > 0);
            covered += s.spans[k + 1];
        }
        assert_int_equal(covered, sizeof text - 1);
        tb_tok_scratch_free(&s);
        tb_pretok_free(p);
    }
}

static void test_fallback_and_invalid(void **state) {
    (void)state;
    tb_pretok_t *p;
    bool fallback;
    assert_int_equal(tb_pretok_new("surely-not-a-pre", &p, &fallback), TB_OK);
    assert_true(fallback);
    /* invalid UTF-8 never matches: it lands in a gap word, nothing is lost */
    tb_tok_scratch_t s = {0};
    const char text[] = "ab\xFF\xFE cd";
    assert_int_equal(tb_pretok_split(p, &s, text, sizeof text - 1), TB_OK);
    size_t covered = 0;
    for (size_t i = 0; i < s.nspans; i += 2) {
        assert_int_equal(s.spans[i], covered);
        covered += s.spans[i + 1];
    }
    assert_int_equal(covered, sizeof text - 1);
    tb_tok_scratch_free(&s);
    tb_pretok_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_qwen2),
        cmocka_unit_test(test_llama3),
        cmocka_unit_test(test_multi_pass),
        cmocka_unit_test(test_every_name_compiles),
        cmocka_unit_test(test_fallback_and_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
