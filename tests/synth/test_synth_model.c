/*
 * test_synth_model.c — synthetic models through the engine: they load, give
 * finite and non-degenerate logits, carry a tokenizer that round-trips
 * text (built-in or copied with vocab_from), and survive requantization
 * (types changed, metadata kept, logits close to the original's).
 */
#include "synth_test.h"
#include "synth/synth.h"

#include <math.h>

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

/* Logits (caller frees, n_vocab floats) of the last of n tokens 0..n-1
 * (ids spread over the vocabulary), evaluated in one prefill. */
static float *last_logits(const char *path, int n, int32_t *n_vocab) {
    tb_model_t *m;
    if (tb_model_load(path, &m) != TB_OK) { fprintf(stderr, "%s\n", tb_last_error()); return NULL; }
    *n_vocab = tb_model_n_vocab(m);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 128;
    sp.n_threads = 2;
    tb_session_t *s;
    float *out = NULL;
    if (tb_session_new(m, &sp, &s) == TB_OK) {
        int32_t ids[128];
        for (int i = 0; i < n; i++) ids[i] = (int32_t)((i * 37 + 11) % 256);   /* byte tokens */
        if (tb_session_eval(s, ids, n, false) == TB_OK) {
            const float *l = tb_session_logits(s, -1);
            out = malloc((size_t)*n_vocab * sizeof *out);
            if (l && out) memcpy(out, l, (size_t)*n_vocab * sizeof *out);
        } else {
            fprintf(stderr, "%s\n", tb_last_error());
        }
        tb_session_free(s);
    }
    tb_model_free(m);
    return out;
}

/* Logits are finite, not all equal, and of a sane spread. */
static void check_logits(const float *l, int32_t n) {
    assert_non_null(l);
    double mn = INFINITY, mx = -INFINITY, s = 0, ss = 0;
    for (int32_t i = 0; i < n; i++) {
        assert_true(isfinite(l[i]));
        mn = fmin(mn, l[i]);
        mx = fmax(mx, l[i]);
        s += l[i];
        ss += (double)l[i] * l[i];
    }
    const double sd = sqrt(ss / n - (s / n) * (s / n));
    assert_true(mx - mn > 1e-3);
    assert_true(sd > 0.05 && sd < 100);
}

/* ===================================================================== */
/* Loading and logits                                                     */
/* ===================================================================== */

static void test_tiny_presets_give_logits(void **state) {
    (void)state;
    struct { const char *preset; tb_type_t type; } cases[] = {
        {"maple-tiny", (tb_type_t)-1}, {"llama-tiny", (tb_type_t)-1}, {"moe-tiny", (tb_type_t)-1},
        {"maple-tiny", TB_TYPE_TQ2_0}, {"moe-tiny", TB_TYPE_Q4_K}, {"llama-tiny", TB_TYPE_TQ1_0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[512];
        st_tmp_path(path, sizeof path, "m.gguf");
        assert_int_equal(st_synth(cases[k].preset, (int)cases[k].type, 42, NULL, path), TB_OK);
        int32_t nv = 0;
        /* 40 tokens: more than maple-tiny's 16-token window, so the ring wraps */
        float *l = last_logits(path, 40, &nv);
        assert_int_equal(nv, 512);
        check_logits(l, nv);
        free(l);
        unlink(path);
    }
}

static void test_model_info_of_tiny(void **state) {
    (void)state;
    char path[512];
    st_tmp_path(path, sizeof path, "info.gguf");
    assert_int_equal(st_synth("maple-tiny", -1, 1, NULL, path), TB_OK);
    tb_model_t *m;
    assert_int_equal(tb_model_load(path, &m), TB_OK);
    tb_model_info_t in;
    assert_int_equal(tb_model_get_info(m, &in), TB_OK);
    assert_string_equal(in.arch, "maple");
    assert_true(in.n_layer - in.n_swa_layers >= 1);   /* ≥ 1 global layer  */
    assert_true(in.n_swa_layers >= 2);                /* ≥ 2 sliding layers */
    assert_true(in.n_expert >= 8 && in.n_expert_used >= 2);
    assert_true(in.n_swa > 0 && in.n_swa < 40);
    assert_true(in.swiglu_clamp == 7.0f);
    assert_true(in.n_params_active < in.n_params);
    tb_model_free(m);
    unlink(path);
}

/* ===================================================================== */
/* Tokenizers                                                             */
/* ===================================================================== */

static void roundtrip(const tb_tokenizer_t *t, const char *text) {
    int32_t ids[512];
    int n = tb_tokenize(t, text, strlen(text), false, false, ids, 512);
    assert_true(n > 0 && n <= 512);
    assert_true(n <= (int)strlen(text));
    tb_detok_t *d;
    assert_int_equal(tb_detok_new(t, &d), TB_OK);
    char out[4096];
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        int w = tb_detok_push(d, ids[i], out + k, sizeof out - k);
        assert_true(w >= 0);
        k += (size_t)w;
    }
    int w = tb_detok_flush(d, out + k, sizeof out - k);
    assert_true(w >= 0);
    k += (size_t)w;
    tb_detok_free(d);
    assert_int_equal(k, strlen(text));
    assert_memory_equal(out, text, k);
}

static const char *const texts[] = {
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "  leading spaces, tabs\tand\nnew lines\n\n",
    "numbers 3.14159 and 2024-11-29, code: for (int i = 0; i < n; i++) {}",
    "UTF-8: caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x99\x82",
};

static void test_builtin_tokenizer_roundtrip(void **state) {
    (void)state;
    const char *presets[] = {"maple-tiny", "llama-tiny"};   /* qwen2 and gpt-2 pre-tokenizers */
    for (size_t k = 0; k < 2; k++) {
        char path[512];
        st_tmp_path(path, sizeof path, "tok.gguf");
        assert_int_equal(st_synth(presets[k], -1, 1, NULL, path), TB_OK);
        tb_model_t *m;
        assert_int_equal(tb_model_load(path, &m), TB_OK);
        const tb_tokenizer_t *t = tb_model_tokenizer(m);
        assert_non_null(t);
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) roundtrip(t, texts[i]);
        /* merges learned from the built-in text make common English compact */
        int32_t ids[64];
        const char *s = " the the the";
        assert_int_equal(tb_tokenize(t, s, strlen(s), false, false, ids, 64), 3);
        tb_model_free(m);
        unlink(path);
    }
}

static void test_vocab_from(void **state) {
    (void)state;
    const char *shared = getenv("TB_SHARED_DIR");
    char vocab[512];
    snprintf(vocab, sizeof vocab, "%s/tokenizer/ggml-vocab-llama-spm.gguf", shared ? shared : "../shared");
    if (access(vocab, R_OK) != 0) { fprintf(stderr, "skip: %s absent\n", vocab); skip(); }
    char path[512];
    st_tmp_path(path, sizeof path, "vf.gguf");
    assert_int_equal(st_synth("llama-tiny", -1, 1, vocab, path), TB_OK);
    tb_gguf_t *src, *g;
    assert_int_equal(tb_gguf_open(vocab, &src), TB_OK);
    assert_int_equal(tb_gguf_open(path, &g), TB_OK);
    int n_tok_keys = 0;
    for (int64_t i = 0; i < tb_gguf_n_kv(src); i++) {
        const char *key = tb_gguf_kv_key(src, i);
        if (strncmp(key, "tokenizer.", 10)) continue;
        n_tok_keys++;
        int64_t j = tb_gguf_find_kv(g, key);
        assert_true(j >= 0);
        tb_gguf_value_t a, b;
        assert_int_equal(tb_gguf_kv_value(src, i, &a), TB_OK);
        assert_int_equal(tb_gguf_kv_value(g, j, &b), TB_OK);
        assert_int_equal(a.type, b.type);
        if (a.type == TB_GGUF_ARRAY) assert_int_equal(a.v.arr.n, b.v.arr.n);
    }
    assert_true(n_tok_keys >= 3);
    tb_gguf_tensor_t emb;
    assert_int_equal(st_tensor(g, "token_embd", &emb), TB_OK);
    assert_int_equal(emb.ne[1], 32000);
    /* the plan predicts the file exactly, copied keys included */
    synth_plan_t pl;
    tb_synth_params_t p = {.preset = "llama-tiny", .type = -1, .seed = 1, .vocab_from = vocab};
    assert_int_equal(synth_plan_build(&p, &pl), TB_OK);
    assert_int_equal(pl.n_vocab, 32000);
    assert_int_equal(pl.file_bytes, tb_gguf_file_size(g));
    synth_plan_free(&pl);
    /* llama-1b takes the vocabulary size from the copied tokenizer: ≈ 0.85 B params */
    p.preset = "llama-1b";
    assert_int_equal(synth_plan_build(&p, &pl), TB_OK);
    const synth_tensor_t *out = synth_plan_find_tensor(&pl, "output");
    assert_non_null(out);
    assert_int_equal(out->ne[1], 32000);
    assert_true(pl.n_params > 800000000ll && pl.n_params < 900000000ll);
    synth_plan_free(&pl);
    tb_gguf_close(g);
    tb_gguf_close(src);
    tb_model_t *m;
    assert_int_equal(tb_model_load(path, &m), TB_OK);
    assert_int_equal(tb_model_n_vocab(m), 32000);
    roundtrip(tb_model_tokenizer(m), texts[0]);
    tb_model_free(m);
    unlink(path);
}

/* ===================================================================== */
/* Requantization                                                         */
/* ===================================================================== */

typedef struct keep_log { int n; char names[8][64]; tb_type_t types[8]; } keep_log_t;

static void on_keep(void *ud, const char *name, tb_type_t kept) {
    keep_log_t *k = ud;
    if (k->n < 8) {
        snprintf(k->names[k->n], sizeof k->names[k->n], "%s", name);
        k->types[k->n] = kept;
    }
    k->n++;
}

static void test_quantize_roundtrip(void **state) {
    (void)state;
    char in[512], out[512];
    st_tmp_path(in, sizeof in, "q_in.gguf");
    st_tmp_path(out, sizeof out, "q_out.gguf");
    assert_int_equal(st_synth("moe-tiny", -1, 9, NULL, in), TB_OK);
    keep_log_t kl = {0};
    assert_int_equal(tb_quantize_model(in, out, TB_TYPE_Q8_0, on_keep, &kl), TB_OK);
    assert_int_equal(kl.n, 0);
    tb_gguf_t *a, *b;
    assert_int_equal(tb_gguf_open(in, &a), TB_OK);
    assert_int_equal(tb_gguf_open(out, &b), TB_OK);
    /* metadata: every key kept (file_type updated) but the synthesis
     * provenance, which the requantized file no longer matches */
    int n_prov = 0;
    for (int64_t i = 0; i < tb_gguf_n_kv(a); i++) {
        const char *k = tb_gguf_kv_key(a, i);
        bool prov = !strncmp(k, "ternbench.synth.", 16);
        n_prov += prov;
        assert_int_equal(tb_gguf_find_kv(b, k) >= 0, !prov);
    }
    assert_int_equal(n_prov, 5);
    assert_int_equal(tb_gguf_n_kv(a), tb_gguf_n_kv(b) + n_prov);
    uint32_t ft;
    assert_int_equal(tb_gguf_get_u32(b, "general.file_type", &ft), TB_OK);
    assert_int_equal(ft, 7);
    /* tensors: projections and experts q8_0, the rest as before */
    assert_int_equal(tb_gguf_n_tensors(a), tb_gguf_n_tensors(b));
    for (int64_t i = 0; i < tb_gguf_n_tensors(a); i++) {
        tb_gguf_tensor_t ta, tbb;
        assert_int_equal(tb_gguf_tensor(a, i, &ta), TB_OK);
        assert_int_equal(st_tensor(b, ta.name, &tbb), TB_OK);
        const bool keep = ta.n_dims < 2 || !strcmp(ta.name, "token_embd.weight") ||
                          !strcmp(ta.name, "output.weight") || strstr(ta.name, "ffn_gate_inp");
        assert_int_equal(tbb.type, keep ? ta.type : TB_TYPE_Q8_0);
        for (int d = 0; d < 4; d++) assert_int_equal(ta.ne[d], tbb.ne[d]);
    }
    tb_gguf_close(a);
    tb_gguf_close(b);
    /* logits close to the original's (q8_0: well under 10 % relative L2) */
    int32_t nv1, nv2;
    float *l1 = last_logits(in, 12, &nv1), *l2 = last_logits(out, 12, &nv2);
    assert_non_null(l1);
    assert_non_null(l2);
    assert_int_equal(nv1, nv2);
    check_logits(l2, nv2);
    double num = 0, den = 0;
    for (int32_t i = 0; i < nv1; i++) {
        num += ((double)l1[i] - l2[i]) * ((double)l1[i] - l2[i]);
        den += (double)l1[i] * l1[i];
    }
    assert_true(sqrt(num / den) < 0.1);
    free(l1);
    free(l2);
    /* a second requantization to a ternary type still loads and runs */
    assert_int_equal(tb_quantize_model(out, in, TB_TYPE_TQ2_0, NULL, NULL), TB_OK);
    l1 = last_logits(in, 12, &nv1);
    check_logits(l1, nv1);
    free(l1);
    unlink(in);
    unlink(out);
}

/* Rows that do not fit the block keep a wider type, and the caller hears of it. */
static void test_quantize_keeps_wider(void **state) {
    (void)state;
    char in[512], out[512];
    st_tmp_path(in, sizeof in, "odd_in.gguf");
    st_tmp_path(out, sizeof out, "odd_out.gguf");
    tb_gguf_writer_t *w;
    assert_int_equal(tb_gguf_writer_new(&w), TB_OK);
    assert_int_equal(tb_gguf_set_str(w, "general.architecture", "llama"), TB_OK);
    assert_int_equal(tb_gguf_set_u32(w, "general.file_type", 0), TB_OK);
    const int64_t ne_fit[2] = {256, 4}, ne_32[2] = {96, 4}, ne_odd[2] = {40, 4}, ne_norm[1] = {40};
    assert_int_equal(tb_gguf_add_tensor(w, "blk.0.attn_q", TB_TYPE_F32, 2, ne_fit), TB_OK);
    assert_int_equal(tb_gguf_add_tensor(w, "blk.0.ffn_down", TB_TYPE_F32, 2, ne_32), TB_OK);
    assert_int_equal(tb_gguf_add_tensor(w, "blk.0.ffn_up", TB_TYPE_F32, 2, ne_odd), TB_OK);
    assert_int_equal(tb_gguf_add_tensor(w, "blk.0.attn_norm", TB_TYPE_F32, 1, ne_norm), TB_OK);
    assert_int_equal(tb_gguf_writer_begin(w, in), TB_OK);
    float buf[1024];
    for (int i = 0; i < 1024; i++) buf[i] = (float)((i * 7) % 13 - 6) / 8.0f;
    assert_int_equal(tb_gguf_write_tensor_data(w, buf, 256 * 4 * 4), TB_OK);
    assert_int_equal(tb_gguf_write_tensor_data(w, buf, 96 * 4 * 4), TB_OK);
    assert_int_equal(tb_gguf_write_tensor_data(w, buf, 40 * 4 * 4), TB_OK);
    assert_int_equal(tb_gguf_write_tensor_data(w, buf, 40 * 4), TB_OK);
    assert_int_equal(tb_gguf_writer_finish(w), TB_OK);
    tb_gguf_writer_free(w);

    keep_log_t kl = {0};
    assert_int_equal(tb_quantize_model(in, out, TB_TYPE_Q4_K, on_keep, &kl), TB_OK);
    assert_int_equal(kl.n, 2);
    assert_string_equal(kl.names[0], "blk.0.ffn_down");
    assert_int_equal(kl.types[0], TB_TYPE_Q8_0);
    assert_string_equal(kl.names[1], "blk.0.ffn_up");
    assert_int_equal(kl.types[1], TB_TYPE_F16);
    tb_gguf_t *g;
    assert_int_equal(tb_gguf_open(out, &g), TB_OK);
    tb_gguf_tensor_t t;
    assert_int_equal(st_tensor(g, "blk.0.attn_q", &t), TB_OK);
    assert_int_equal(t.type, TB_TYPE_Q4_K);
    assert_int_equal(st_tensor(g, "blk.0.ffn_down", &t), TB_OK);
    assert_int_equal(t.type, TB_TYPE_Q8_0);
    float row[96];
    assert_int_equal(tb_dequantize_row(t.type, t.data, row, 96), TB_OK);
    for (int i = 0; i < 96; i++) assert_true(fabsf(row[i] - buf[i]) < 0.01f);
    assert_int_equal(st_tensor(g, "blk.0.ffn_up", &t), TB_OK);
    assert_int_equal(t.type, TB_TYPE_F16);
    assert_int_equal(st_tensor(g, "blk.0.attn_norm", &t), TB_OK);
    assert_int_equal(t.type, TB_TYPE_F32);
    tb_gguf_close(g);
    /* errors name the input */
    assert_true(tb_quantize_model("/nonexistent/x.gguf", out, TB_TYPE_Q8_0, NULL, NULL) != TB_OK);
    assert_non_null(strstr(tb_last_error(), "/nonexistent/x.gguf"));
    unlink(in);
    unlink(out);
}

int main(void) {
    st_tmp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_presets_give_logits),
        cmocka_unit_test(test_model_info_of_tiny),
        cmocka_unit_test(test_builtin_tokenizer_roundtrip),
        cmocka_unit_test(test_vocab_from),
        cmocka_unit_test(test_quantize_roundtrip),
        cmocka_unit_test(test_quantize_keeps_wider),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    st_tmp_cleanup();
    return rc;
}
