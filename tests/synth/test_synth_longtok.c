/*
 * test_synth_longtok.c — tokens longer than any output buffer lose no
 * byte: the streaming detokenizer through the API (push, then drain until
 * 0; flush until 0) and `detokenize` / `generate` through the binary (its
 * path is argv[1]) on a model whose every token is 3000 bytes. Also:
 * generate warns when --ctx exceeds the model's trained context.
 */
#include "synth_test.h"

#include <sys/wait.h>

#define N_TOK 64
#define TOK_BYTES 3000

static const char *exe;
static char vocab[512], model[512];
static char *texts[N_TOK];   /* (N_TOK) each TOK_BYTES bytes + NUL */

/* "T%03d", 998 x U+20AC (3 bytes each), "xx": 3000 bytes of whole characters. */
static char *long_text(int i) {
    char *s = malloc(TOK_BYTES + 1);
    assert_non_null(s);
    snprintf(s, 5, "T%03d", i);
    for (int k = 0; k < 998; k++) memcpy(s + 4 + 3 * k, "\xE2\x82\xAC", 3);
    memcpy(s + 4 + 3 * 998, "xx", 3);
    assert_int_equal(strlen(s), TOK_BYTES);
    return s;
}

static int run(const char *args, const char *out_name) {
    char cmd[4096], o[512], e[512];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", exe, args,
             st_tmp_path(o, sizeof o, out_name), st_tmp_path(e, sizeof e, "err.txt"));
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int setup(void **state) {
    (void)state;
    for (int i = 0; i < N_TOK; i++) texts[i] = long_text(i);
    st_tmp_path(vocab, sizeof vocab, "long-vocab.gguf");
    tb_gguf_writer_t *w;
    if (tb_gguf_writer_new(&w)) return -1;
    int rc = tb_gguf_set_str(w, "general.architecture", "llama");
    if (!rc) rc = tb_gguf_set_str(w, "tokenizer.ggml.model", "llama");
    if (!rc) rc = tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)texts, NULL, N_TOK);
    if (!rc) rc = tb_gguf_writer_begin(w, vocab);
    if (!rc) rc = tb_gguf_writer_finish(w);
    tb_gguf_writer_free(w);
    if (rc) return -1;
    st_tmp_path(model, sizeof model, "long.gguf");
    return st_synth("llama-tiny", -1, 5, vocab, model) == TB_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < N_TOK; i++) free(texts[i]);
    return 0;
}

/* Whole captured file, NUL-terminated (caller frees); *n excludes the NUL. */
static char *slurp(const char *name, size_t *n) {
    char p[512];
    uint8_t *b = st_read_all(st_tmp_path(p, sizeof p, name), n);
    char *s = b ? malloc(*n + 1) : NULL;
    if (s) {
        memcpy(s, b, *n);
        s[*n] = '\0';
    }
    free(b);
    return s;
}

static void test_api_drains_every_byte(void **state) {
    (void)state;
    tb_gguf_t *g;
    tb_tokenizer_t *t;
    assert_int_equal(tb_gguf_open(vocab, &g), TB_OK);
    assert_int_equal(tb_tokenizer_from_gguf(g, &t), TB_OK);
    tb_detok_t *d;
    assert_int_equal(tb_detok_new(t, &d), TB_OK);
    const int ids[] = {7, 0, 63};
    char buf[1024], *got = malloc(3 * TOK_BYTES);
    size_t n = 0;
    for (int i = 0; i < 3; i++) {
        int calls = 0;
        for (int k = tb_detok_push(d, ids[i], buf, sizeof buf); k != 0;
             k = tb_detok_drain(d, buf, sizeof buf), calls++) {
            assert_true(k > 0 && k <= (int)sizeof buf);
            memcpy(got + n, buf, (size_t)k);
            n += (size_t)k;
        }
        assert_true(calls >= 2);                 /* 3000 bytes need three 1024-byte calls */
        assert_int_equal(tb_detok_pending(d), 0);
    }
    assert_int_equal(tb_detok_flush(d, buf, sizeof buf), 0);
    assert_int_equal(n, 3 * TOK_BYTES);
    for (int i = 0; i < 3; i++) assert_memory_equal(got + i * TOK_BYTES, texts[ids[i]], TOK_BYTES);

    /* without draining, flush until 0 still gives everything, whole characters */
    n = 0;
    int k = tb_detok_push(d, 9, buf, 102);
    assert_int_equal(k, 100);                     /* "T009" + 32 whole 3-byte characters */
    memcpy(got, buf, (size_t)k);
    n = (size_t)k;
    while ((k = tb_detok_flush(d, buf, sizeof buf)) > 0) {
        memcpy(got + n, buf, (size_t)k);
        n += (size_t)k;
    }
    assert_int_equal(k, 0);
    assert_int_equal(n, TOK_BYTES);
    assert_memory_equal(got, texts[9], TOK_BYTES);

    /* a buffer too small for one character leaves it pending, counted */
    assert_int_equal(tb_detok_push(d, 1, buf, 4), 4);      /* "T001" */
    assert_int_equal(tb_detok_drain(d, buf, 2), 0);
    assert_int_equal(tb_detok_pending(d), TOK_BYTES - 4);
    assert_int_equal(tb_detok_drain(d, buf, 4), 3);        /* one U+20AC */
    free(got);
    tb_detok_free(d);
    tb_tokenizer_free(t);
    tb_gguf_close(g);
}

static void test_cli_prints_every_byte(void **state) {
    (void)state;
    char args[2048];
    snprintf(args, sizeof args, "detokenize -m '%s' 5 62", model);
    assert_int_equal(run(args, "detok.txt"), 0);
    size_t n;
    char *out = slurp("detok.txt", &n);
    assert_non_null(out);
    assert_int_equal(n, 2 * TOK_BYTES);
    assert_memory_equal(out, texts[5], TOK_BYTES);
    assert_memory_equal(out + TOK_BYTES, texts[62], TOK_BYTES);
    free(out);

    /* every token of this vocabulary is 3000 bytes: two tokens and "\n" */
    snprintf(args, sizeof args, "generate -m '%s' -p 'T001' -n 2 --temp 0 --ignore-eos -t 1", model);
    assert_int_equal(run(args, "gen.txt"), 0);
    out = slurp("gen.txt", &n);
    assert_non_null(out);
    assert_int_equal(n, 2 * TOK_BYTES + 1);
    assert_int_equal(out[n - 1], '\n');
    for (int k = 0; k < 2; k++) {
        int id = -1;
        for (int i = 0; i < N_TOK && id < 0; i++)
            if (!memcmp(out + k * TOK_BYTES, texts[i], TOK_BYTES)) id = i;
        assert_true(id >= 0);
    }
    free(out);
    char *err = slurp("err.txt", &n);
    assert_non_null(err);
    assert_null(strstr(err, "warning"));
    free(err);

    /* llama-tiny is trained for 2048 positions: a longer --ctx runs, with a warning */
    snprintf(args, sizeof args, "generate -m '%s' -p 'T001' -n 1 --temp 0 -t 1 --ctx 4096", model);
    assert_int_equal(run(args, "gen.txt"), 0);
    err = slurp("err.txt", &n);
    assert_non_null(err);
    assert_non_null(strstr(err, "warning: context of 4096 positions exceeds the 2048"));
    free(err);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s TERNBENCH\n", argv[0]); return 2; }
    exe = argv[1];
    st_tmp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_drains_every_byte),
        cmocka_unit_test(test_cli_prints_every_byte),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    st_tmp_cleanup();
    return rc;
}
