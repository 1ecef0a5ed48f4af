/*
 * test_synth_verify.c — a synthesized model records its provenance and
 * tb_synth_verify checks a file against the parameters it should have
 * been made from: the right file passes; another seed, preset, type or
 * vocabulary, a file without provenance (a requantized copy) and a file
 * with one changed data byte are each refused with TB_ERR_FORMAT naming
 * the file and what differs.
 */
#include "synth_test.h"

static void expect_refused(const tb_synth_params_t *p, const char *path, const char *needle) {
    tb_clear_error();
    int rc = tb_synth_verify(p, path);
    if (rc != TB_ERR_FORMAT || !strstr(tb_last_error(), needle) || !strstr(tb_last_error(), path))
        print_message("rc %d: %s (wanted '%s')\n", rc, tb_last_error(), needle);
    assert_int_equal(rc, TB_ERR_FORMAT);
    assert_non_null(strstr(tb_last_error(), path));
    assert_non_null(strstr(tb_last_error(), needle));
}

static void test_provenance_recorded(void **state) {
    (void)state;
    char path[512];
    st_tmp_path(path, sizeof path, "prov.gguf");
    assert_int_equal(st_synth("llama-tiny", TB_TYPE_Q8_0, 17, NULL, path), TB_OK);
    tb_gguf_t *g;
    assert_int_equal(tb_gguf_open(path, &g), TB_OK);
    char s[64];
    assert_int_equal(tb_gguf_get_str(g, "ternbench.synth.preset", s, sizeof s), TB_OK);
    assert_string_equal(s, "llama-tiny");
    assert_int_equal(tb_gguf_get_str(g, "ternbench.synth.type", s, sizeof s), TB_OK);
    assert_string_equal(s, "q8_0");
    int64_t seed;
    assert_int_equal(tb_gguf_get_i64(g, "ternbench.synth.seed", &seed), TB_OK);
    assert_int_equal(seed, 17);
    int64_t dig;
    assert_int_equal(tb_gguf_get_i64(g, "ternbench.synth.data_digest", &dig), TB_OK);
    assert_true(dig != 0);                       /* patched after the data */
    tb_gguf_close(g);
}

static void test_verify_accepts_and_refuses(void **state) {
    (void)state;
    char path[512], other[512], quant[512], edited[512], vocab[512], withv[512];
    st_tmp_path(path, sizeof path, "llama-tiny-default-seed1.gguf");
    assert_int_equal(st_synth("llama-tiny", -1, 1, NULL, path), TB_OK);
    tb_synth_params_t p = {.preset = "llama-tiny", .type = -1, .seed = 1};
    int rc = tb_synth_verify(&p, path);
    if (rc) print_message("%s\n", tb_last_error());
    assert_int_equal(rc, TB_OK);

    tb_synth_params_t q = p;
    q.seed = 2;
    expect_refused(&q, path, "synthesized as preset llama-tiny type f32 seed 1");
    q = p;
    q.preset = "maple-tiny";
    expect_refused(&q, path, "expected preset maple-tiny");
    q = p;
    q.type = TB_TYPE_Q4_0;
    expect_refused(&q, path, "expected preset llama-tiny type q4_0");

    /* another model under this name: a different seed's file */
    st_tmp_path(other, sizeof other, "seed2.gguf");
    assert_int_equal(st_synth("llama-tiny", -1, 2, NULL, other), TB_OK);
    expect_refused(&p, other, "seed 2");

    /* a requantized copy carries no provenance */
    st_tmp_path(quant, sizeof quant, "quant.gguf");
    assert_int_equal(tb_quantize_model(path, quant, TB_TYPE_Q8_0, NULL, NULL), TB_OK);
    expect_refused(&p, quant, "not a model synthesized by ternbench");

    /* one data byte changed */
    size_t n;
    uint8_t *b = st_read_all(path, &n);
    assert_non_null(b);
    b[n - 100] ^= 0x40;
    st_tmp_path(edited, sizeof edited, "edited.gguf");
    FILE *f = fopen(edited, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
    free(b);
    expect_refused(&p, edited, "tensor data digest");

    /* a copied vocabulary is part of the identity */
    st_tmp_path(vocab, sizeof vocab, "vocab.gguf");
    tb_gguf_writer_t *w;
    const char *toks[] = {"<unk>", "<s>", "</s>", "a", "b", "c"};
    assert_int_equal(tb_gguf_writer_new(&w), TB_OK);
    assert_int_equal(tb_gguf_set_str(w, "tokenizer.ggml.model", "llama"), TB_OK);
    assert_int_equal(tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 6), TB_OK);
    assert_int_equal(tb_gguf_writer_begin(w, vocab), TB_OK);
    assert_int_equal(tb_gguf_writer_finish(w), TB_OK);
    tb_gguf_writer_free(w);
    st_tmp_path(withv, sizeof withv, "withv.gguf");
    assert_int_equal(st_synth("llama-tiny", -1, 1, vocab, withv), TB_OK);
    q = p;
    q.vocab_from = vocab;
    assert_int_equal(tb_synth_verify(&q, withv), TB_OK);
    expect_refused(&p, withv, "vocabulary");
    expect_refused(&q, path, "vocabulary");
}

int main(void) {
    st_tmp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provenance_recorded),
        cmocka_unit_test(test_verify_accepts_and_refuses),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    st_tmp_cleanup();
    return rc;
}
