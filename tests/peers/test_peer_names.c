/*
 * test_peer_names.c — every tensor ternbench synthesizes has the name and
 * shape llama.cpp's loader asks for, so the files load there.
 *
 * The expected table below is written from llama.cpp's loader: the tensor
 * name table in src/llama-arch.cpp and the create_tensor() calls of
 * src/models/llama.cpp and src/models/maple.cpp (the fork with the maple
 * architecture, commit c2e63492b, build 10346). Each row: the name pattern
 * (per layer when it holds %d), the shape in hparams llama.cpp reads from the
 * file's metadata, and whether llama.cpp refuses a file without it.
 *
 * For each preset the plan (no weights: maple-preview is 5.9 GB) is checked
 * both ways: every planned tensor matches a row, and every required row is
 * planned. The tiny presets are also written and read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "synth/synth.h"

/* Dimensions a shape is made of, as llama.cpp derives them. */
typedef enum {
    D_1,      /* unused dimension                                   */
    D_E,      /* n_embd = <arch>.embedding_length                   */
    D_V,      /* n_vocab = len(tokenizer.ggml.tokens)               */
    D_QD,     /* n_head * head_dim                                  */
    D_KD,     /* n_head_kv * head_dim                               */
    D_HD,     /* head_dim = key_length, else n_embd / n_head        */
    D_FF,     /* llama: feed_forward_length; maple: expert width    */
    D_X,      /* n_expert = <arch>.expert_count                     */
} dim_t;

/* When a row applies. */
typedef enum { W_ALL, W_DENSE, W_MOE } when_t;

typedef struct {
    const char *name;     /* "blk.%d." prefix when per layer */
    dim_t ne[3];
    int required;
    when_t when;
} row_t;

/* llama (src/models/llama.cpp; qkv via create_tensor_qkv). */
static const row_t llama_rows[] = {
    {"token_embd.weight", {D_E, D_V, D_1}, 1, W_ALL},
    {"output_norm.weight", {D_E, D_1, D_1}, 1, W_ALL},
    {"output.weight", {D_E, D_V, D_1}, 0, W_ALL},             /* tied to token_embd when absent */
    {"blk.%d.attn_norm.weight", {D_E, D_1, D_1}, 1, W_ALL},
    {"blk.%d.attn_q.weight", {D_E, D_QD, D_1}, 1, W_ALL},
    {"blk.%d.attn_k.weight", {D_E, D_KD, D_1}, 1, W_ALL},
    {"blk.%d.attn_v.weight", {D_E, D_KD, D_1}, 1, W_ALL},
    {"blk.%d.attn_q.bias", {D_QD, D_1, D_1}, 0, W_ALL},
    {"blk.%d.attn_k.bias", {D_KD, D_1, D_1}, 0, W_ALL},
    {"blk.%d.attn_v.bias", {D_KD, D_1, D_1}, 0, W_ALL},
    {"blk.%d.attn_output.weight", {D_QD, D_E, D_1}, 1, W_ALL},
    {"blk.%d.attn_output.bias", {D_E, D_1, D_1}, 0, W_ALL},
    {"blk.%d.ffn_norm.weight", {D_E, D_1, D_1}, 1, W_ALL},
    {"blk.%d.ffn_gate.weight", {D_E, D_FF, D_1}, 1, W_DENSE},
    {"blk.%d.ffn_down.weight", {D_FF, D_E, D_1}, 1, W_DENSE},
    {"blk.%d.ffn_up.weight", {D_E, D_FF, D_1}, 1, W_DENSE},
    {"blk.%d.ffn_gate.bias", {D_FF, D_1, D_1}, 0, W_DENSE},
    {"blk.%d.ffn_down.bias", {D_E, D_1, D_1}, 0, W_DENSE},
    {"blk.%d.ffn_up.bias", {D_FF, D_1, D_1}, 0, W_DENSE},
    {"blk.%d.ffn_gate_inp.weight", {D_E, D_X, D_1}, 1, W_MOE},
    {"blk.%d.ffn_gate_exps.weight", {D_E, D_FF, D_X}, 0, W_MOE},
    {"blk.%d.ffn_down_exps.weight", {D_FF, D_E, D_X}, 1, W_MOE},
    {"blk.%d.ffn_up_exps.weight", {D_E, D_FF, D_X}, 1, W_MOE},
};

/* maple (src/models/maple.cpp): MoE only, QK-norm, untied head. */
static const row_t maple_rows[] = {
    {"token_embd.weight", {D_E, D_V, D_1}, 1, W_ALL},
    {"output_norm.weight", {D_E, D_1, D_1}, 1, W_ALL},
    {"output.weight", {D_E, D_V, D_1}, 1, W_ALL},
    {"blk.%d.attn_norm.weight", {D_E, D_1, D_1}, 1, W_ALL},
    {"blk.%d.attn_q.weight", {D_E, D_QD, D_1}, 1, W_ALL},
    {"blk.%d.attn_k.weight", {D_E, D_KD, D_1}, 1, W_ALL},
    {"blk.%d.attn_v.weight", {D_E, D_KD, D_1}, 1, W_ALL},
    {"blk.%d.attn_q.bias", {D_QD, D_1, D_1}, 0, W_ALL},
    {"blk.%d.attn_k.bias", {D_KD, D_1, D_1}, 0, W_ALL},
    {"blk.%d.attn_v.bias", {D_KD, D_1, D_1}, 0, W_ALL},
    {"blk.%d.attn_output.weight", {D_QD, D_E, D_1}, 1, W_ALL},
    {"blk.%d.attn_q_norm.weight", {D_HD, D_1, D_1}, 1, W_ALL},
    {"blk.%d.attn_k_norm.weight", {D_HD, D_1, D_1}, 1, W_ALL},
    {"blk.%d.ffn_norm.weight", {D_E, D_1, D_1}, 1, W_ALL},
    {"blk.%d.ffn_gate_inp.weight", {D_E, D_X, D_1}, 1, W_ALL},
    {"blk.%d.ffn_gate_exps.weight", {D_E, D_FF, D_X}, 1, W_ALL},
    {"blk.%d.ffn_down_exps.weight", {D_FF, D_E, D_X}, 1, W_ALL},
    {"blk.%d.ffn_up_exps.weight", {D_E, D_FF, D_X}, 1, W_ALL},
};

/* The hparams, read from the plan's metadata the way llama.cpp reads the file's. */
typedef struct {
    int maple;
    int64_t n_layer, d[8];
} hp_t;

static uint32_t kv_u32(const synth_plan_t *pl, const char *arch, const char *k, int required,
                       uint32_t def) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    const synth_kv_t *e = synth_plan_find_kv(pl, key);
    if (!e) {
        if (required) fail_msg("plan lacks %s", key);
        return def;
    }
    assert_int_equal(e->kind, SYNTH_KV_U32);
    return e->v.u32;
}

static hp_t hparams(const synth_plan_t *pl) {
    const synth_kv_t *a = synth_plan_find_kv(pl, "general.architecture");
    assert_non_null(a);
    hp_t h = {.maple = !strcmp(a->v.str, "maple")};
    if (!h.maple) assert_string_equal(a->v.str, "llama");
    const char *arch = a->v.str;
    const int64_t E = kv_u32(pl, arch, "embedding_length", 1, 0);
    const int64_t H = kv_u32(pl, arch, "attention.head_count", 1, 0);
    const int64_t HKV = kv_u32(pl, arch, "attention.head_count_kv", 0, (uint32_t)H);
    const int64_t HD = kv_u32(pl, arch, "attention.key_length", 0, (uint32_t)(E / H));
    h.n_layer = kv_u32(pl, arch, "block_count", 1, 0);
    h.d[D_1] = 1;
    h.d[D_E] = E;
    h.d[D_V] = pl->n_vocab;
    h.d[D_QD] = H * HD;
    h.d[D_KD] = HKV * HD;
    h.d[D_HD] = HD;
    h.d[D_X] = kv_u32(pl, arch, "expert_count", 0, 0);
    h.d[D_FF] = h.maple ? kv_u32(pl, arch, "expert_feed_forward_length", 1, 0)
                        : kv_u32(pl, arch, "feed_forward_length", 1, 0);
    return h;
}

static int applies(const row_t *r, const hp_t *h) {
    return r->when == W_ALL || (r->when == W_MOE) == (h->d[D_X] > 0);
}

/* The row `name` instantiates (layer il in 0..n_layer-1), or NULL. */
static const row_t *match(const row_t *rows, size_t n, const hp_t *h, const char *name) {
    for (size_t i = 0; i < n; i++) {
        if (!applies(&rows[i], h)) continue;
        if (!strstr(rows[i].name, "%d")) {
            if (!strcmp(rows[i].name, name)) return &rows[i];
            continue;
        }
        for (int64_t il = 0; il < h->n_layer; il++) {
            char full[96];
            snprintf(full, sizeof full, rows[i].name, (int)il);
            if (!strcmp(full, name)) return &rows[i];
        }
    }
    return NULL;
}

static void check_shape(const row_t *r, const hp_t *h, const char *name, int n_dims,
                        const int64_t *ne) {
    int want_dims = 1;
    for (int d = 0; d < 3; d++)
        if (r->ne[d] != D_1) want_dims = d + 1;
    if (n_dims != want_dims) fail_msg("%s: %d dims, llama.cpp expects %d", name, n_dims, want_dims);
    for (int d = 0; d < 3; d++)
        if (ne[d] != h->d[r->ne[d]])
            fail_msg("%s: ne[%d] = %lld, llama.cpp expects %lld", name, d, (long long)ne[d],
                     (long long)h->d[r->ne[d]]);
}

static void rows_of(const hp_t *h, const row_t **rows, size_t *n) {
    *rows = h->maple ? maple_rows : llama_rows;
    *n = h->maple ? sizeof maple_rows / sizeof *maple_rows : sizeof llama_rows / sizeof *llama_rows;
}

static void check_plan(const char *preset) {
    synth_plan_t pl;
    tb_synth_params_t p = {.preset = preset, .type = -1, .seed = 1};
    assert_int_equal(synth_plan_build(&p, &pl), TB_OK);
    const hp_t h = hparams(&pl);
    const row_t *rows;
    size_t n;
    rows_of(&h, &rows, &n);
    for (int i = 0; i < pl.n_tensors; i++) {
        const synth_tensor_t *t = &pl.tensors[i];
        const row_t *r = match(rows, n, &h, t->name);
        if (!r) fail_msg("%s: tensor %s is not in llama.cpp's table", preset, t->name);
        check_shape(r, &h, t->name, t->n_dims, t->ne);
        for (int j = 0; j < i; j++)
            if (!strcmp(pl.tensors[j].name, t->name)) fail_msg("%s: %s twice", preset, t->name);
    }
    /* every tensor llama.cpp requires is planned, under its exact name */
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].required || !applies(&rows[i], &h)) continue;
        const int per_layer = strstr(rows[i].name, "%d") != NULL;
        for (int64_t il = 0; il < (per_layer ? h.n_layer : 1); il++) {
            char full[96];
            snprintf(full, sizeof full, rows[i].name, (int)il);
            int found = 0;
            for (int k = 0; k < pl.n_tensors && !found; k++) found = !strcmp(pl.tensors[k].name, full);
            if (!found) fail_msg("%s: llama.cpp requires %s, the plan lacks it", preset, full);
        }
    }
    synth_plan_free(&pl);
}

static void test_every_preset_plan(void **state) {
    (void)state;
    const char *const *names = tb_synth_presets();
    int n = 0;
    for (; names[n]; n++) check_plan(names[n]);
    assert_true(n >= 5);
}

/* A table row that is wrong must be caught: a renamed tensor fails the match. */
static void test_bare_name_rejected(void **state) {
    (void)state;
    synth_plan_t pl;
    tb_synth_params_t p = {.preset = "llama-tiny", .type = -1, .seed = 1};
    assert_int_equal(synth_plan_build(&p, &pl), TB_OK);
    const hp_t h = hparams(&pl);
    assert_null(match(llama_rows, sizeof llama_rows / sizeof *llama_rows, &h, "blk.0.attn_q"));
    assert_null(match(llama_rows, sizeof llama_rows / sizeof *llama_rows, &h, "token_embd"));
    assert_null(match(llama_rows, sizeof llama_rows / sizeof *llama_rows, &h, "blk.2.attn_q.weight"));
    assert_non_null(match(llama_rows, sizeof llama_rows / sizeof *llama_rows, &h, "blk.1.attn_q.weight"));
    synth_plan_free(&pl);
}

/* The written files carry the planned names (read back with the public reader). */
static void test_written_files(void **state) {
    (void)state;
    const char *base = getenv("TMPDIR");
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/tb-peer-names-XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(dir));
    const char *presets[] = {"llama-tiny", "maple-tiny", "moe-tiny"};
    for (size_t k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s.gguf", dir, presets[k]);
        tb_synth_params_t p = {.preset = presets[k], .type = -1, .seed = 3};
        assert_int_equal(tb_synth_model(&p, path), TB_OK);
        synth_plan_t pl;
        assert_int_equal(synth_plan_build(&p, &pl), TB_OK);
        const hp_t h = hparams(&pl);
        const row_t *rows;
        size_t n;
        rows_of(&h, &rows, &n);
        tb_gguf_t *g;
        assert_int_equal(tb_gguf_open(path, &g), TB_OK);
        assert_int_equal(tb_gguf_n_tensors(g), pl.n_tensors);
        for (int64_t i = 0; i < tb_gguf_n_tensors(g); i++) {
            tb_gguf_tensor_t t;
            assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
            const row_t *r = match(rows, n, &h, t.name);
            if (!r) fail_msg("%s: written tensor %s is not in llama.cpp's table", presets[k], t.name);
            check_shape(r, &h, t.name, (int)t.n_dims, t.ne);
        }
        tb_gguf_close(g);
        synth_plan_free(&pl);
        /* and the engine still loads its own file */
        tb_model_t *m;
        assert_int_equal(tb_model_load(path, &m), TB_OK);
        tb_model_free(m);
        unlink(path);
    }
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_preset_plan),
        cmocka_unit_test(test_bare_name_rejected),
        cmocka_unit_test(test_written_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
