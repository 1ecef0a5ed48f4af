/*
 * test_synth_vocab.c — checks of a model against itself at load and at
 * session size: a model whose tokenizer and token_embd disagree on the
 * vocabulary size is refused at load, naming the file and both counts
 * (one token fewer and one more than the embedding has rows); a context
 * longer than the trained one is flagged by tb_model_ctx_check.
 */
#include "synth_test.h"

/* Copy src to dst with tokenizer.ggml.tokens replaced by n_tok fresh
 * texts (scores and token types dropped, as they are per token). */
static void rewrite_tokens(const char *src, const char *dst, int n_tok) {
    tb_gguf_t *g;
    assert_int_equal(tb_gguf_open(src, &g), TB_OK);
    tb_gguf_writer_t *w;
    assert_int_equal(tb_gguf_writer_new(&w), TB_OK);
    for (int64_t i = 0; i < tb_gguf_n_kv(g); i++) {
        const char *k = tb_gguf_kv_key(g, i);
        if (!strcmp(k, "tokenizer.ggml.tokens") || !strcmp(k, "tokenizer.ggml.scores") ||
            !strcmp(k, "tokenizer.ggml.token_type"))
            continue;
        assert_int_equal(tb_gguf_copy_kv(w, g, i), TB_OK);
    }
    char **texts = calloc((size_t)n_tok, sizeof *texts);
    assert_non_null(texts);
    for (int i = 0; i < n_tok; i++) {
        texts[i] = malloc(16);
        snprintf(texts[i], 16, "<t%d>", i);
    }
    assert_int_equal(tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)texts, NULL,
                                         (uint64_t)n_tok), TB_OK);
    for (int64_t i = 0; i < tb_gguf_n_tensors(g); i++) {
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
        assert_int_equal(tb_gguf_add_tensor(w, t.name, t.type, t.n_dims, t.ne), TB_OK);
    }
    assert_int_equal(tb_gguf_writer_begin(w, dst), TB_OK);
    for (int64_t i = 0; i < tb_gguf_n_tensors(g); i++) {
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
        assert_int_equal(tb_gguf_write_tensor_data(w, t.data, (size_t)t.nbytes), TB_OK);
    }
    assert_int_equal(tb_gguf_writer_finish(w), TB_OK);
    tb_gguf_writer_free(w);
    for (int i = 0; i < n_tok; i++) free(texts[i]);
    free(texts);
    tb_gguf_close(g);
}

static void test_vocab_size_mismatch_refused(void **state) {
    (void)state;
    char src[512], dst[512];
    st_tmp_path(src, sizeof src, "tiny.gguf");
    assert_int_equal(st_synth("llama-tiny", -1, 3, NULL, src), TB_OK);
    tb_model_t *m;
    assert_int_equal(tb_model_load(src, &m), TB_OK);
    tb_model_info_t info;
    assert_int_equal(tb_model_get_info(m, &info), TB_OK);
    const int rows = info.n_vocab;
    assert_int_equal(tb_tokenizer_n_vocab(tb_model_tokenizer(m)), rows);
    tb_model_free(m);

    const int counts[] = {rows - 1, rows + 1};
    for (size_t k = 0; k < 2; k++) {
        st_tmp_path(dst, sizeof dst, k ? "more.gguf" : "fewer.gguf");
        rewrite_tokens(src, dst, counts[k]);
        m = NULL;
        assert_int_equal(tb_model_load(dst, &m), TB_ERR_FORMAT);
        assert_null(m);
        char want[640];
        snprintf(want, sizeof want, "%s: tokenizer has %d tokens, token_embd has %d rows", dst,
                 counts[k], rows);
        if (!strstr(tb_last_error(), want)) print_message("got: %s\nwant: %s\n", tb_last_error(), want);
        assert_non_null(strstr(tb_last_error(), want));
    }
}

static void test_ctx_beyond_training_flagged(void **state) {
    (void)state;
    char src[512];
    st_tmp_path(src, sizeof src, "ctx.gguf");
    assert_int_equal(st_synth("llama-tiny", -1, 3, NULL, src), TB_OK);
    tb_model_t *m;
    assert_int_equal(tb_model_load(src, &m), TB_OK);
    tb_model_info_t info;
    assert_int_equal(tb_model_get_info(m, &info), TB_OK);
    assert_int_equal(info.n_ctx_train, 2048);
    char note[256] = "x";
    assert_false(tb_model_ctx_check(m, 2048, note, sizeof note));
    assert_string_equal(note, "");
    assert_true(tb_model_ctx_check(m, 2049, note, sizeof note));
    assert_non_null(strstr(note, "context of 2049 positions exceeds the 2048 the model was trained for"));
    assert_true(tb_model_ctx_check(m, 100000, NULL, 0));
    tb_model_free(m);
}

int main(void) {
    st_tmp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vocab_size_mismatch_refused),
        cmocka_unit_test(test_ctx_beyond_training_flagged),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    st_tmp_cleanup();
    return rc;
}
