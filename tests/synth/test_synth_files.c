/*
 * test_synth_files.c — synthetic GGUF files: structure against the plan,
 * determinism by seed, --type variants, ternary statistics, weight scale,
 * the maple-preview layout (plan only) and the built-in vocabulary.
 */
#include "synth_test.h"
#include "synth/synth.h"
#include "quant/quant.h"

#include <math.h>

static const char *const tiny_presets[] = {"maple-tiny", "llama-tiny", "moe-tiny"};

/* ===================================================================== */
/* Structure                                                              */
/* ===================================================================== */

static void test_presets_listed(void **state) {
    (void)state;
    const char *want[] = {"maple-preview", "maple-tiny", "llama-tiny", "moe-tiny", "llama-1b"};
    const char *const *have = tb_synth_presets();
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        bool found = false;
        for (const char *const *p = have; *p; p++) found |= !strcmp(*p, want[i]);
        assert_true(found);
    }
    char path[512];
    tb_synth_params_t p = {.preset = "no-such-preset", .type = -1};
    assert_int_equal(tb_synth_model(&p, st_tmp_path(path, sizeof path, "x.gguf")), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "no-such-preset"));
    assert_int_equal(access(path, F_OK), -1);
}

/* Each tiny preset: the file holds exactly the planned tensors (types,
 * shapes), has the planned size, finite float data and a tokenizer whose
 * size matches token_embd. */
static void test_tiny_files_match_plan(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof tiny_presets / sizeof tiny_presets[0]; k++) {
        char path[512];
        st_tmp_path(path, sizeof path, "tiny.gguf");
        assert_int_equal(st_synth(tiny_presets[k], -1, 7, NULL, path), TB_OK);
        synth_plan_t pl;
        tb_synth_params_t p = {.preset = tiny_presets[k], .type = -1, .seed = 7};
        assert_int_equal(synth_plan_build(&p, &pl), TB_OK);
        tb_gguf_t *g;
        assert_int_equal(tb_gguf_open(path, &g), TB_OK);
        assert_int_equal(tb_gguf_file_size(g), pl.file_bytes);
        assert_int_equal(tb_gguf_n_tensors(g), pl.n_tensors);
        for (int i = 0; i < pl.n_tensors; i++) {
            tb_gguf_tensor_t t;
            assert_int_equal(st_tensor(g, pl.tensors[i].name, &t), TB_OK);
            assert_int_equal(t.type, pl.tensors[i].type);
            assert_int_equal(t.n_dims, pl.tensors[i].n_dims);
            for (int d = 0; d < t.n_dims; d++) assert_int_equal(t.ne[d], pl.tensors[i].ne[d]);
            assert_int_equal(t.nbytes, pl.tensors[i].nbytes);
            assert_int_equal(t.type, TB_TYPE_F32);
            const float *x = t.data;
            int64_t n = (int64_t)(t.nbytes / 4);
            double ss = 0;
            for (int64_t j = 0; j < n; j++) { assert_true(isfinite(x[j])); ss += (double)x[j] * x[j]; }
            assert_true(ss > 0);
        }
        char buf[64];
        assert_int_equal(tb_gguf_get_str(g, "general.architecture", buf, sizeof buf), TB_OK);
        assert_string_equal(buf, !strncmp(tiny_presets[k], "maple", 5) ? "maple" : "llama");
        assert_int_equal(tb_gguf_get_str(g, "tokenizer.ggml.model", buf, sizeof buf), TB_OK);
        assert_string_equal(buf, "gpt2");
        int64_t ik = tb_gguf_find_kv(g, "tokenizer.ggml.tokens");
        assert_true(ik >= 0);
        tb_gguf_value_t v;
        assert_int_equal(tb_gguf_kv_value(g, ik, &v), TB_OK);
        tb_gguf_tensor_t emb;
        assert_int_equal(st_tensor(g, "token_embd", &emb), TB_OK);
        assert_int_equal((int64_t)v.v.arr.n, emb.ne[1]);
        tb_gguf_close(g);
        synth_plan_free(&pl);
        unlink(path);
    }
}

/* ===================================================================== */
/* Determinism                                                            */
/* ===================================================================== */

static void test_seed_determinism(void **state) {
    (void)state;
    char a[512], b[512], c[512];
    st_tmp_path(a, sizeof a, "s1a.gguf");
    st_tmp_path(b, sizeof b, "s1b.gguf");
    st_tmp_path(c, sizeof c, "s2.gguf");
    assert_int_equal(st_synth("maple-tiny", TB_TYPE_TQ2_0, 1, NULL, a), TB_OK);
    assert_int_equal(st_synth("maple-tiny", TB_TYPE_TQ2_0, 1, NULL, b), TB_OK);
    assert_int_equal(st_synth("maple-tiny", TB_TYPE_TQ2_0, 2, NULL, c), TB_OK);
    size_t na, nb, nc;
    uint8_t *pa = st_read_all(a, &na), *pb = st_read_all(b, &nb), *pc = st_read_all(c, &nc);
    assert_non_null(pa); assert_non_null(pb); assert_non_null(pc);
    assert_int_equal(na, nb);
    assert_int_equal(na, nc);
    assert_memory_equal(pa, pb, na);
    size_t diff = 0;
    for (size_t i = 0; i < na; i++) diff += pa[i] != pc[i];
    assert_true(diff > na / 4);          /* the data section dominates the file */
    free(pa); free(pb); free(pc);
    unlink(a); unlink(b); unlink(c);
}

/* The bytes do not depend on the generator's thread count. */
static void test_threads_do_not_matter(void **state) {
    (void)state;
    char a[512], b[512];
    st_tmp_path(a, sizeof a, "t1.gguf");
    st_tmp_path(b, sizeof b, "t3.gguf");
    /* maple-tiny f32: 2 MB expert stacks span several 1 MB chunks */
    tb_synth_params_t p = {.preset = "maple-tiny", .type = -1, .seed = 77};
    assert_int_equal(synth_model_run(&p, a, 1), TB_OK);
    assert_int_equal(synth_model_run(&p, b, 3), TB_OK);
    size_t na, nb;
    uint8_t *pa = st_read_all(a, &na), *pb = st_read_all(b, &nb);
    assert_non_null(pa);
    assert_non_null(pb);
    assert_int_equal(na, nb);
    assert_memory_equal(pa, pb, na);
    free(pa); free(pb);
    unlink(a); unlink(b);
    assert_int_equal(synth_model_run(&p, a, 0), TB_ERR_ARG);
}

/* Chunk streams do not depend on how many rows are filled per call. */
static void test_rows_independent_of_split(void **state) {
    (void)state;
    synth_tensor_t t = {.name = "w", .type = TB_TYPE_TQ2_0, .n_dims = 2,
                        .ne = {512, 8, 1, 1}, .init = SYNTH_INIT_WEIGHT};
    const size_t rb = tb_type_row_bytes(t.type, 512);
    uint8_t *x = calloc(8, rb), *y = calloc(8, rb);
    float scratch[512];
    synth_rng_t r1, r2;
    synth_rng_seed(&r1, 3, 4, 5);
    synth_rng_seed(&r2, 3, 4, 5);
    assert_int_equal(synth_fill_rows(&t, &r1, 8, x, scratch), TB_OK);
    assert_int_equal(synth_fill_rows(&t, &r2, 3, y, scratch), TB_OK);
    assert_int_equal(synth_fill_rows(&t, &r2, 5, y + 3 * rb, scratch), TB_OK);
    assert_memory_equal(x, y, 8 * rb);
    free(x); free(y);
}

/* ===================================================================== */
/* Types and statistics                                                   */
/* ===================================================================== */

static void test_type_variants(void **state) {
    (void)state;
    const tb_type_t types[] = {TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_Q8_0, TB_TYPE_Q4_0,
                               TB_TYPE_Q4_K, TB_TYPE_TQ1_0, TB_TYPE_TQ2_0};
    const char *proj[] = {"blk.0.attn_q", "blk.1.attn_output", "blk.0.ffn_gate_exps",
                          "blk.1.ffn_down_exps"};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        char path[512];
        st_tmp_path(path, sizeof path, "typed.gguf");
        assert_int_equal(st_synth("moe-tiny", (int)types[k], 5, NULL, path), TB_OK);
        tb_gguf_t *g;
        assert_int_equal(tb_gguf_open(path, &g), TB_OK);
        tb_gguf_tensor_t t;
        for (size_t i = 0; i < sizeof proj / sizeof proj[0]; i++) {
            assert_int_equal(st_tensor(g, proj[i], &t), TB_OK);
            assert_int_equal(t.type, types[k]);
        }
        assert_int_equal(st_tensor(g, "blk.0.attn_norm", &t), TB_OK);
        assert_int_equal(t.type, TB_TYPE_F32);
        assert_int_equal(st_tensor(g, "blk.0.ffn_gate_inp", &t), TB_OK);
        assert_int_equal(t.type, TB_TYPE_F32);
        uint32_t ft;
        assert_int_equal(tb_gguf_get_u32(g, "general.file_type", &ft), TB_OK);
        assert_int_equal(ft, synth_ftype_of(types[k]));
        tb_gguf_close(g);
        unlink(path);
    }
}

/* Ternary tensors: zero fraction 39 % ± 3 %, the rest split evenly by sign,
 * and an effective std near 1/sqrt(fan_in). */
static void check_ternary(const tb_gguf_t *g, const char *name) {
    tb_gguf_tensor_t t;
    assert_int_equal(st_tensor(g, name, &t), TB_OK);
    const int64_t n = t.ne[0], rows = t.ne[1] * t.ne[2];
    const size_t rb = tb_type_row_bytes(t.type, n);
    float *row = malloc((size_t)n * sizeof *row);
    int64_t zeros = 0, pos = 0, neg = 0;
    double ss = 0;
    for (int64_t r = 0; r < rows; r++) {
        assert_int_equal(tb_dequantize_row(t.type, (const uint8_t *)t.data + (size_t)r * rb, row, n), TB_OK);
        for (int64_t i = 0; i < n; i++) {
            zeros += row[i] == 0.0f;
            pos += row[i] > 0.0f;
            neg += row[i] < 0.0f;
            ss += (double)row[i] * row[i];
        }
    }
    const double total = (double)(n * rows);
    const double zf = (double)zeros / total;
    assert_true(zf > 0.36 && zf < 0.42);
    assert_true(fabs((double)(pos - neg)) / total < 0.02);
    const double sd = sqrt(ss / total) * sqrt((double)n);   /* ≈ 1 */
    assert_true(sd > 0.8 && sd < 1.25);
    free(row);
}

static void test_ternary_statistics(void **state) {
    (void)state;
    const tb_type_t types[] = {TB_TYPE_TQ2_0, TB_TYPE_TQ1_0};
    for (size_t k = 0; k < 2; k++) {
        char path[512];
        st_tmp_path(path, sizeof path, "tern.gguf");
        assert_int_equal(st_synth("maple-tiny", (int)types[k], 11, NULL, path), TB_OK);
        tb_gguf_t *g;
        assert_int_equal(tb_gguf_open(path, &g), TB_OK);
        check_ternary(g, "blk.0.ffn_up_exps");
        check_ternary(g, "blk.3.attn_k");
        tb_gguf_close(g);
        unlink(path);
    }
}

/* Float and Q4_K weights: mean ≈ 0, std ≈ 1/sqrt(fan_in); norms ≈ 1. */
static void check_scale(const tb_gguf_t *g, const char *name, double want_mean, double want_sd,
                        double tol) {
    tb_gguf_tensor_t t;
    assert_int_equal(st_tensor(g, name, &t), TB_OK);
    const int64_t n = t.ne[0], rows = t.ne[1] * t.ne[2];
    const size_t rb = tb_type_row_bytes(t.type, n);
    float *row = malloc((size_t)n * sizeof *row);
    double s = 0, ss = 0;
    for (int64_t r = 0; r < rows; r++) {
        assert_int_equal(tb_dequantize_row(t.type, (const uint8_t *)t.data + (size_t)r * rb, row, n), TB_OK);
        for (int64_t i = 0; i < n; i++) { s += row[i]; ss += (double)row[i] * row[i]; }
    }
    const double N = (double)(n * rows), mean = s / N, sd = sqrt(ss / N - mean * mean);
    assert_true(fabs(mean - want_mean) < tol * (want_sd > 0 ? want_sd : 1));
    if (want_sd > 0) assert_true(fabs(sd / want_sd - 1) < tol);
    free(row);
}

static void test_weight_scale(void **state) {
    (void)state;
    const tb_type_t types[] = {TB_TYPE_F32, TB_TYPE_Q4_K};
    for (size_t k = 0; k < 2; k++) {
        char path[512];
        st_tmp_path(path, sizeof path, "scale.gguf");
        assert_int_equal(st_synth("llama-tiny", (int)types[k], 3, NULL, path), TB_OK);
        tb_gguf_t *g;
        assert_int_equal(tb_gguf_open(path, &g), TB_OK);
        check_scale(g, "blk.0.ffn_up", 0, 1 / sqrt(256.0), 0.2);
        check_scale(g, "blk.1.ffn_down", 0, 1 / sqrt(512.0), 0.2);
        check_scale(g, "blk.0.attn_norm", 1.0, 0, 0.05);
        tb_gguf_close(g);
        unlink(path);
    }
}

/* ===================================================================== */
/* maple-preview layout (plan only: the real file is 5.9 GB)              */
/* ===================================================================== */

static void expect_tensor(const synth_plan_t *pl, const char *name, tb_type_t type, int n_dims,
                          int64_t ne0, int64_t ne1, int64_t ne2) {
    const synth_tensor_t *t = synth_plan_find_tensor(pl, name);
    if (!t) fprintf(stderr, "plan lacks %s\n", name);
    assert_non_null(t);
    assert_int_equal(t->type, type);
    assert_int_equal(t->n_dims, n_dims);
    assert_int_equal(t->ne[0], ne0);
    assert_int_equal(t->ne[1], ne1);
    assert_int_equal(t->ne[2], ne2);
    /* bytes from the format definitions, independent of tb_type_row_bytes */
    double per_elem = type == TB_TYPE_TQ2_0 ? 66.0 / 256 : type == TB_TYPE_Q4_K ? 144.0 / 256
                    : type == TB_TYPE_F16 ? 2 : 4;
    assert_true(fabs((double)t->nbytes - per_elem * (double)(ne0 * ne1 * ne2)) < 0.5);
}

static uint32_t kv_u32(const synth_plan_t *pl, const char *key) {
    const synth_kv_t *e = synth_plan_find_kv(pl, key);
    if (!e) fprintf(stderr, "plan lacks %s\n", key);
    assert_non_null(e);
    assert_int_equal(e->kind, SYNTH_KV_U32);
    return e->v.u32;
}

static void test_preview_plan(void **state) {
    (void)state;
    synth_plan_t pl;
    tb_synth_params_t p = {.preset = "maple-preview", .type = -1, .seed = 1};
    assert_int_equal(synth_plan_build(&p, &pl), TB_OK);
    const tb_type_t T2 = TB_TYPE_TQ2_0, F = TB_TYPE_F32;
    expect_tensor(&pl, "token_embd.weight", TB_TYPE_F16, 2, 2048, 151936, 1);
    expect_tensor(&pl, "output.weight", TB_TYPE_Q4_K, 2, 2048, 151936, 1);
    expect_tensor(&pl, "output_norm.weight", F, 1, 2048, 1, 1);
    for (int il = 0; il < 24; il++) {
        char n[64];
#define T(s) (snprintf(n, sizeof n, "blk.%d." s ".weight", il), n)
        expect_tensor(&pl, T("attn_norm"), F, 1, 2048, 1, 1);
        expect_tensor(&pl, T("attn_q"), T2, 2, 2048, 16 * 128, 1);
        expect_tensor(&pl, T("attn_k"), T2, 2, 2048, 4 * 128, 1);
        expect_tensor(&pl, T("attn_v"), T2, 2, 2048, 4 * 128, 1);
        expect_tensor(&pl, T("attn_output"), T2, 2, 16 * 128, 2048, 1);
        expect_tensor(&pl, T("attn_q_norm"), F, 1, 128, 1, 1);
        expect_tensor(&pl, T("attn_k_norm"), F, 1, 128, 1, 1);
        expect_tensor(&pl, T("ffn_norm"), F, 1, 2048, 1, 1);
        expect_tensor(&pl, T("ffn_gate_inp"), F, 2, 2048, 256, 1);
        expect_tensor(&pl, T("ffn_gate_exps"), T2, 3, 2048, 512, 256);
        expect_tensor(&pl, T("ffn_up_exps"), T2, 3, 2048, 512, 256);
        expect_tensor(&pl, T("ffn_down_exps"), T2, 3, 512, 2048, 256);
#undef T
    }
    assert_int_equal(pl.n_tensors, 3 + 24 * 12);
    assert_int_equal(kv_u32(&pl, "maple.block_count"), 24);
    assert_int_equal(kv_u32(&pl, "maple.embedding_length"), 2048);
    assert_int_equal(kv_u32(&pl, "maple.attention.head_count"), 16);
    assert_int_equal(kv_u32(&pl, "maple.attention.head_count_kv"), 4);
    assert_int_equal(kv_u32(&pl, "maple.attention.key_length"), 128);
    assert_int_equal(kv_u32(&pl, "maple.attention.value_length"), 128);
    assert_int_equal(kv_u32(&pl, "maple.attention.sliding_window"), 512);
    assert_int_equal(kv_u32(&pl, "maple.expert_count"), 256);
    assert_int_equal(kv_u32(&pl, "maple.expert_used_count"), 8);
    assert_int_equal(kv_u32(&pl, "maple.expert_feed_forward_length"), 512);
    assert_int_equal(kv_u32(&pl, "maple.rope.dimension_count"), 64);
    assert_true(kv_u32(&pl, "maple.context_length") >= 4096);
    assert_int_equal(kv_u32(&pl, "general.file_type"), 37);
    const char *fkeys[] = {"maple.attention.layer_norm_rms_epsilon", "maple.rope.freq_base",
                           "maple.rope.freq_base_swa"};
    for (size_t i = 0; i < 3; i++) {
        const synth_kv_t *e = synth_plan_find_kv(&pl, fkeys[i]);
        assert_non_null(e);
        assert_int_equal(e->kind, SYNTH_KV_F32);
    }
    const synth_kv_t *pat = synth_plan_find_kv(&pl, "maple.attention.sliding_window_pattern");
    assert_non_null(pat);
    assert_int_equal(pat->arr_type, TB_GGUF_BOOL);
    assert_int_equal(pat->arr_n, 24);
    int n_sliding = 0;
    for (int il = 0; il < 24; il++) {
        const bool sliding = ((const uint8_t *)pat->arr)[il] != 0;
        assert_int_equal(sliding, il % 4 != 3);
        n_sliding += sliding;
    }
    assert_int_equal(n_sliding, 18);
    const synth_kv_t *clamp = synth_plan_find_kv(&pl, "maple.swiglu_clamp_exp");
    assert_non_null(clamp);
    assert_int_equal(clamp->arr_type, TB_GGUF_FLOAT32);
    assert_int_equal(clamp->arr_n, 24);
    assert_true(((const float *)clamp->arr)[5] == 7.0f);
    const synth_kv_t *arch = synth_plan_find_kv(&pl, "general.architecture");
    assert_non_null(arch);
    assert_string_equal(arch->v.str, "maple");
    assert_int_equal(pl.n_vocab, 151936);
    assert_int_equal(pl.vocab.n_tokens, 151936);
    assert_string_equal(pl.preset->pre, "qwen2");
    /* ≈ 5.9 GB, ~20 B parameters */
    assert_true(pl.file_bytes > 5800000000ull && pl.file_bytes < 6000000000ull);
    assert_true(pl.n_params > 19000000000ll && pl.n_params < 20500000000ll);
    synth_plan_free(&pl);
}

static void test_llama_1b_plan(void **state) {
    (void)state;
    synth_plan_t pl;
    tb_synth_params_t p = {.preset = "llama-1b", .type = TB_TYPE_Q8_0, .seed = 1};
    assert_int_equal(synth_plan_build(&p, &pl), TB_OK);
    assert_true(pl.n_params > 800000000ll && pl.n_params < 900000000ll);
    assert_int_equal(kv_u32(&pl, "llama.feed_forward_length"), 5632);
    assert_int_equal(kv_u32(&pl, "llama.attention.head_count"), 32);
    assert_int_equal(kv_u32(&pl, "llama.attention.head_count_kv"), 8);
    const synth_tensor_t *t = synth_plan_find_tensor(&pl, "blk.15.ffn_down");
    assert_non_null(t);
    assert_int_equal(t->type, TB_TYPE_Q8_0);
    assert_int_equal(t->ne[0], 5632);
    synth_plan_free(&pl);
    /* a type whose block does not divide a row is refused with the tensor's name */
    tb_synth_params_t bad = {.preset = "maple-tiny", .type = TB_TYPE_Q8_K, .seed = 1};
    assert_int_equal(synth_plan_build(&bad, &pl), TB_ERR_ARG);
    synth_plan_free(&pl);
}

/* ===================================================================== */
/* Built-in vocabulary                                                    */
/* ===================================================================== */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_builtin_vocab(void **state) {
    (void)state;
    synth_vocab_t v;
    assert_int_equal(synth_vocab_build(2000, &v), TB_OK);
    assert_int_equal(v.n_tokens, 2000);
    assert_true(v.n_merges > 100);
    /* all texts unique */
    char **sorted = malloc((size_t)v.n_tokens * sizeof *sorted);
    memcpy(sorted, v.tokens, (size_t)v.n_tokens * sizeof *sorted);
    qsort(sorted, (size_t)v.n_tokens, sizeof *sorted, cmp_str);
    for (int32_t i = 1; i < v.n_tokens; i++) assert_true(strcmp(sorted[i - 1], sorted[i]) != 0);
    free(sorted);
    /* byte alphabet: printable ASCII stands for itself, space is "Ġ" (U+0120) */
    assert_string_equal(v.tokens['a'], "a");
    assert_string_equal(v.tokens[' '], "\xC4\xA0");
    /* every merge "A B" joins two existing tokens into an existing token */
    for (int32_t m = 0; m < v.n_merges; m++) {
        const char *sp = strchr(v.merges[m], ' ');
        assert_non_null(sp);
        char a[256], ab[512];
        size_t la = (size_t)(sp - v.merges[m]);
        memcpy(a, v.merges[m], la); a[la] = 0;
        snprintf(ab, sizeof ab, "%s%s", a, sp + 1);
        bool fa = false, fb = false, fab = false;
        for (int32_t i = 0; i < v.n_tokens; i++) {
            fa |= !strcmp(v.tokens[i], a);
            fb |= !strcmp(v.tokens[i], sp + 1);
            fab |= !strcmp(v.tokens[i], ab);
        }
        assert_true(fa && fb && fab);
    }
    int n_control = 0;
    for (int32_t i = 0; i < v.n_tokens; i++) n_control += v.types[i] == 3;
    assert_int_equal(n_control, 3);
    assert_string_equal(v.tokens[v.eos], "<|endoftext|>");
    assert_int_equal(v.types[v.n_tokens - 1], 5);
    synth_vocab_free(&v);
    assert_int_equal(synth_vocab_build(100, &v), TB_ERR_ARG);
    synth_vocab_free(&v);
}

int main(void) {
    st_tmp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_listed),
        cmocka_unit_test(test_tiny_files_match_plan),
        cmocka_unit_test(test_seed_determinism),
        cmocka_unit_test(test_threads_do_not_matter),
        cmocka_unit_test(test_rows_independent_of_split),
        cmocka_unit_test(test_type_variants),
        cmocka_unit_test(test_ternary_statistics),
        cmocka_unit_test(test_weight_scale),
        cmocka_unit_test(test_preview_plan),
        cmocka_unit_test(test_llama_1b_plan),
        cmocka_unit_test(test_builtin_vocab),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    st_tmp_cleanup();
    return rc;
}
