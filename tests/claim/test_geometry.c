/*
 * test_geometry.c — the bytes-per-token account (tb_geometry_*): every
 * preset against a tensor table written out here by hand from the shapes it
 * cites, maple-preview exact at ctx 0, 512 and 4096, the synthesized
 * maple-preview plan and a synthesized, loaded maple-tiny file against the
 * same account, the approximate head, prefill FLOPs and bad arguments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "synth/synth.h"
#include "ternbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rb(tb_type_t t, int64_t n) { return tb_type_row_bytes(t, n); }

static uint64_t preset_total(const char *name, const char *layout, int32_t ctx, const tb_head_opts_t *h,
                             tb_bytes_per_token_t *out) {
    tb_geometry_t *g;
    assert_int_equal(tb_geometry_preset(name, layout, &g), TB_OK);
    tb_bytes_per_token_t b;
    assert_int_equal(tb_geometry_bytes_per_token(g, ctx, TB_TYPE_F16, h, &b), TB_OK);
    tb_geometry_free(g);
    if (out) *out = b;
    return b.total;
}

/* maple-preview, official layout: TQ2_0 projections and experts, F32 norms
 * and router, F16 embedding, Q4_K head; 24 layers, every 4th global. */
static uint64_t maple_hand(int64_t ctx) {
    const int64_t E = 2048, QD = 16 * 128, KD = 4 * 128, X = 256, FF = 512, V = 151936;
    const tb_type_t T = TB_TYPE_TQ2_0, F = TB_TYPE_F32;
    uint64_t layer = rb(T, E) * (QD + 2 * KD)          /* q, k, v      */
                   + rb(T, QD) * E                     /* output       */
                   + rb(F, E) * 2 + rb(F, 128) * 2     /* 2 norms, qk norms */
                   + rb(F, E) * X                      /* router       */
                   + (rb(T, E) * FF * 2 + rb(T, FF) * E) * 8;   /* 8 of 256 experts: gate, up, down */
    uint64_t total = 24 * layer + rb(F, E)             /* output_norm  */
                   + rb(TB_TYPE_F16, E)                /* one embedding row */
                   + rb(TB_TYPE_Q4_K, E) * V;          /* head         */
    const uint64_t kv = 2 * 4 * 128 * 2;               /* K+V, 4 kv heads, f16, per position */
    for (int il = 0; il < 24; il++) total += kv * (uint64_t)(il % 4 == 3 ? ctx : (ctx < 512 ? ctx : 512));
    return total;
}

static void test_maple_preview_exact(void **st) {
    (void)st;
    assert_int_equal(preset_total("maple-preview", NULL, 0, NULL, NULL), maple_hand(0));
    assert_int_equal(preset_total("maple-preview", NULL, 512, NULL, NULL), maple_hand(512));
    assert_int_equal(preset_total("maple-preview", NULL, 4096, NULL, NULL), maple_hand(4096));
    /* sliding layers stop growing past the window: 4096 - 512 adds only the 6 global layers */
    assert_int_equal(maple_hand(4096) - maple_hand(512), (uint64_t)(4096 - 512) * 6 * 2 * 4 * 128 * 2);
}

/* A dense llama-shaped model read at ctx: the table by hand. */
typedef struct dense {
    const char *name, *layout;
    int64_t L, E, H, KV, D, FF, V;
    tb_type_t proj, more, embd, head;   /* more: attn_v / ffn_down on Q4_K_M's "more bits" layers */
    int tied, qk_norm, qkv_bias, sub_norm;
} dense_t;

static int more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static uint64_t dense_hand(const dense_t *m, int64_t ctx) {
    const int64_t QD = m->H * m->D, KD = m->KV * m->D;
    const tb_type_t F = TB_TYPE_F32;
    uint64_t t = 0;
    for (int i = 0; i < m->L; i++) {
        tb_type_t v = more_bits(i, (int)m->L) ? m->more : m->proj;
        t += rb(m->proj, m->E) * (QD + KD) + rb(v, m->E) * KD + rb(m->proj, QD) * m->E;
        t += rb(m->proj, m->E) * 2 * m->FF + rb(v, m->FF) * m->E;
        t += 2 * rb(F, m->E);
        if (m->qk_norm) t += 2 * rb(F, m->D);
        if (m->qkv_bias) t += rb(F, QD) + 2 * rb(F, KD);
        if (m->sub_norm) t += rb(F, m->E) + rb(F, m->FF);
        t += 2 * (uint64_t)KD * 2 * (uint64_t)ctx;
    }
    t += rb(F, m->E);                                   /* output_norm */
    t += rb(m->embd, m->E);                             /* one embedding row */
    t += rb(m->tied ? m->embd : m->head, m->E) * m->V;  /* head (the embedding when tied) */
    return t;
}

static void test_dense_presets(void **st) {
    (void)st;
    const tb_type_t Q40 = TB_TYPE_Q4_0, Q4K = TB_TYPE_Q4_K, Q6K = TB_TYPE_Q6_K, Q80 = TB_TYPE_Q8_0,
                    F16 = TB_TYPE_F16, TQ2 = TB_TYPE_TQ2_0;
    const dense_t m[] = {
        {"llama-2-7b", NULL, 32, 4096, 32, 32, 128, 11008, 32000, Q40, Q40, Q40, Q6K, 0, 0, 0, 0},
        {"llama-2-7b", "f16", 32, 4096, 32, 32, 128, 11008, 32000, F16, F16, F16, F16, 0, 0, 0, 0},
        {"mistral-7b", NULL, 32, 4096, 32, 8, 128, 14336, 32000, Q40, Q40, Q40, Q6K, 0, 0, 0, 0},
        {"llama-3.2-1b", NULL, 16, 2048, 32, 8, 64, 8192, 128256, Q4K, Q6K, Q6K, Q6K, 1, 0, 0, 0},
        {"llama-3.2-3b", NULL, 28, 3072, 24, 8, 128, 8192, 128256, Q4K, Q6K, Q6K, Q6K, 1, 0, 0, 0},
        {"llama-3.1-8b", NULL, 32, 4096, 32, 8, 128, 14336, 128256, Q4K, Q6K, Q4K, Q6K, 0, 0, 0, 0},
        {"llama-3.1-8b", "q8_0", 32, 4096, 32, 8, 128, 14336, 128256, Q80, Q80, Q80, Q80, 0, 0, 0, 0},
        {"qwen3-0.6b", NULL, 28, 1024, 16, 8, 128, 3072, 151936, Q80, Q80, Q80, Q80, 1, 1, 0, 0},
        {"qwen3-4b", NULL, 36, 2560, 32, 8, 128, 9728, 151936, Q4K, Q6K, Q6K, Q6K, 1, 1, 0, 0},
        {"qwen2.5-1.5b", NULL, 28, 1536, 12, 2, 128, 8960, 151936, Q4K, Q6K, Q6K, Q6K, 1, 0, 1, 0},
        {"bitnet-b1.58-2b4t", NULL, 30, 2560, 20, 5, 128, 6912, 128256, TQ2, TQ2, F16, F16, 1, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        for (int64_t ctx = 0; ctx <= 4096; ctx += 2048) {
            uint64_t got = preset_total(m[i].name, m[i].layout, (int32_t)ctx, NULL, NULL);
            if (got != dense_hand(&m[i], ctx))
                fail_msg("%s/%s ctx %lld: %llu, by hand %llu", m[i].name, m[i].layout ? m[i].layout : "default",
                         (long long)ctx, (unsigned long long)got, (unsigned long long)dense_hand(&m[i], ctx));
        }
}

/* maple-preview in the vendor's MLX layout: 2-bit codes + one bf16 scale per
 * row for attention and experts, 4-bit group-64 (bf16 scale and bias per 64)
 * embedding and head, bf16 router and norms. */
static void test_maple_mlx(void **st) {
    (void)st;
    const uint64_t E = 2048, QD = 2048, KD = 512, FF = 512, V = 151936;
    uint64_t r2e = E / 4 + 2, r2f = FF / 4 + 2, r4 = E / 2 + E / 64 * 4;
    uint64_t layer = r2e * (QD + 2 * KD) + (QD / 4 + 2) * E + 2 * E * 2 + 2 * 128 * 2 + E * 2 * 256 +
                     8 * (r2e * FF * 2 + r2f * E);
    uint64_t hand = 24 * layer + E * 2 + r4 + r4 * V;
    assert_int_equal(preset_total("maple-preview-mlx", NULL, 0, NULL, NULL), hand);
}

/* qwen3-0.6b in mlx-8bit: 8-bit codes and a bf16 scale and bias per 64,
 * bf16 norms, the tied head 8-bit as well. */
static void test_mlx8(void **st) {
    (void)st;
    const uint64_t E = 1024, QD = 2048, KD = 1024, FF = 3072, V = 151936;
    uint64_t r8e = E + E / 64 * 4, r8q = QD + QD / 64 * 4, r8f = FF + FF / 64 * 4;
    uint64_t layer = r8e * (QD + 2 * KD) + r8q * E + r8e * 2 * FF + r8f * E + 2 * E * 2 + 2 * 128 * 2;
    uint64_t hand = 28 * layer + E * 2 + r8e + r8e * V;
    assert_int_equal(preset_total("qwen3-0.6b", "mlx-8bit", 0, NULL, NULL), hand);
}

/* gpt-oss-20b: MXFP4 experts (17 bytes per 32), the rest Q8_0, F32 small
 * tensors; alternate layers slide over 128 positions. */
static void test_gpt_oss(void **st) {
    (void)st;
    const int64_t E = 2880, QD = 64 * 64, KD = 8 * 64, FF = 2880, X = 32, V = 201088;
    const tb_type_t Q = TB_TYPE_Q8_0, F = TB_TYPE_F32;
    uint64_t layer = rb(Q, E) * (QD + 2 * KD) + rb(Q, QD) * E + rb(F, QD) + 2 * rb(F, KD) + rb(F, E) + rb(F, 64) +
                     2 * rb(F, E) + rb(F, E) * X + rb(F, X) +
                     4 * ((uint64_t)(E / 32 * 17) * FF * 2 + (uint64_t)(FF / 32 * 17) * E) +
                     (rb(F, FF) * X * 2 + rb(F, E) * X) / 32 * 4;
    for (int64_t ctx = 0; ctx <= 1024; ctx += 1024) {
        uint64_t hand = 24 * layer + rb(F, E) + rb(Q, E) + rb(Q, E) * V;
        for (int il = 0; il < 24; il++) hand += 2 * KD * 2 * (uint64_t)(il % 2 == 0 && ctx > 128 ? 128 : ctx);
        assert_int_equal(preset_total("gpt-oss-20b", NULL, (int32_t)ctx, NULL, NULL), hand);
    }
}

/* qwen3.6-27b: 48 Gated DeltaNet layers (a 48 x 128 x 128 f32 state read and
 * written each token, no KV) and 16 gated-attention layers. */
static void test_qwen36(void **st) {
    (void)st;
    const int64_t E = 5120, D = 256, QD = 24 * D, KD = 4 * D, FF = 17408, V = 248320, LQK = 16 * 128, LV = 48 * 128;
    const tb_type_t T = TB_TYPE_TQ2_0, F = TB_TYPE_F32;
    uint64_t ffn = rb(T, E) * 2 * FF + rb(T, FF) * E + 2 * rb(F, E);
    uint64_t att = rb(T, E) * (2 * QD + 2 * KD) + rb(T, QD) * E + 2 * rb(F, D);
    uint64_t lin = rb(T, E) * (2 * LQK + LV) + rb(T, E) * LV + rb(T, E) * 96 + rb(F, 4) * (2 * LQK + LV) +
                   2 * rb(F, 48) + rb(F, 128) + rb(T, LV) * E;
    const uint64_t state = 48ull * 128 * 128 * 4;
    for (int64_t ctx = 0; ctx <= 8192; ctx += 8192) {
        uint64_t hand = 64 * ffn + 16 * att + 48 * lin + rb(F, E) + rb(TB_TYPE_F16, E) + rb(TB_TYPE_Q4_K, E) * V +
                        48 * 2 * state + 16 * 2 * KD * 2 * (uint64_t)ctx;
        assert_int_equal(preset_total("qwen3.6-27b", NULL, (int32_t)ctx, NULL, NULL), hand);
    }
}

/* The synthesizer's maple-preview plan (the table of the 5.9 GB file
 * `model synth` writes) through the same account equals the preset. */
static void test_synth_plan_equals_preset(void **st) {
    (void)st;
    synth_plan_t pl;
    tb_synth_params_t sp = {.preset = "maple-preview", .type = -1};
    assert_int_equal(synth_plan_build(&sp, &pl), TB_OK);
    tb_geometry_t *p, *g = calloc(1, sizeof *g);
    assert_int_equal(tb_geometry_preset("maple-preview", NULL, &p), TB_OK);
    *g = *p;
    g->tensors = calloc((size_t)pl.n_tensors, sizeof *g->tensors);
    g->n_tensors = pl.n_tensors;
    for (int i = 0; i < pl.n_tensors; i++) {
        snprintf(g->tensors[i].name, sizeof g->tensors[i].name, "%s", pl.tensors[i].name);
        g->tensors[i].nbytes = pl.tensors[i].nbytes;
    }
    assert_int_equal(g->n_tensors, p->n_tensors);
    for (int32_t ctx = 0; ctx <= 4096; ctx += 512) {
        tb_bytes_per_token_t a, b;
        assert_int_equal(tb_geometry_bytes_per_token(g, ctx, TB_TYPE_F16, NULL, &a), TB_OK);
        assert_int_equal(tb_geometry_bytes_per_token(p, ctx, TB_TYPE_F16, NULL, &b), TB_OK);
        assert_int_equal(a.total, b.total);
        assert_int_equal(a.weights, b.weights);
        assert_int_equal(a.output, b.output);
    }
    free(g->tensors);
    free(g);
    tb_geometry_free(p);
    synth_plan_free(&pl);
}

/* A synthesized maple-tiny file: the loaded model's account (model info's
 * figure) equals its plan's through tb_geometry_bytes_per_token. */
static void test_synth_file_equals_plan(void **st) {
    (void)st;
    char path[] = "/tmp/tb_geom_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    tb_synth_params_t sp = {.preset = "maple-tiny", .type = -1, .seed = 3};
    assert_int_equal(tb_synth_model(&sp, path), TB_OK);
    tb_model_t *m;
    assert_int_equal(tb_model_load(path, &m), TB_OK);
    tb_geometry_t *g;
    assert_int_equal(tb_geometry_from_model(m, &g), TB_OK);
    synth_plan_t pl;
    assert_int_equal(synth_plan_build(&sp, &pl), TB_OK);
    uint64_t w = 0, embd = 0, out = 0;
    for (int i = 0; i < pl.n_tensors; i++) {
        const synth_tensor_t *t = &pl.tensors[i];
        if (!strcmp(t->name, "token_embd")) embd = t->nbytes / (uint64_t)t->ne[1];
        else if (!strcmp(t->name, "output")) out = t->nbytes;
        else if (strstr(t->name, "_exps")) w += t->nbytes / 8 * 2;
        else w += t->nbytes;
    }
    for (int32_t ctx = 0; ctx <= 40; ctx += 20) {
        tb_bytes_per_token_t a, b;
        assert_int_equal(tb_model_bytes_per_token(m, ctx, TB_TYPE_F32, &a), TB_OK);
        assert_int_equal(tb_geometry_bytes_per_token(g, ctx, TB_TYPE_F32, NULL, &b), TB_OK);
        assert_int_equal(a.total, b.total);
        uint64_t kv = 0;
        for (int il = 0; il < 4; il++) kv += 2ull * 2 * 64 * 4 * (uint64_t)(il == 3 || ctx < 16 ? ctx : 16);
        assert_int_equal(a.total, w + embd + out + kv);
    }
    synth_plan_free(&pl);
    tb_geometry_free(g);
    tb_model_free(m);
    unlink(path);
}

static void test_approx_head(void **st) {
    (void)st;
    tb_bytes_per_token_t e, a;
    preset_total("maple-preview", NULL, 512, NULL, &e);
    tb_head_opts_t h = {8016, 256};
    preset_total("maple-preview", NULL, 512, &h, &a);
    assert_false(e.head_approx);
    assert_true(a.head_approx);
    /* 8016 centroid rows + 256 clusters of ceil(151936 / 8016) = 19 rows */
    assert_int_equal(a.output, rb(TB_TYPE_Q4_K, 2048) * (8016 + 256 * 19));
    assert_int_equal(e.total - a.total, e.output - a.output);
    tb_geometry_t *g;
    assert_int_equal(tb_geometry_preset("maple-preview", NULL, &g), TB_OK);
    tb_head_opts_t bad[] = {{-1, 1}, {10, 11}, {200000, 1}, {10, 0}};
    for (size_t i = 0; i < 4; i++) assert_int_equal(tb_geometry_bytes_per_token(g, 0, TB_TYPE_F16, &bad[i], &a), TB_ERR_ARG);
    tb_geometry_free(g);
}

static void test_flops_and_errors(void **st) {
    (void)st;
    tb_geometry_t *g;
    assert_int_equal(tb_geometry_preset("llama-2-7b", "f16", &g), TB_OK);
    double f1, f2;
    assert_int_equal(tb_geometry_prefill_flops(g, 1, &f1), TB_OK);
    assert_int_equal(tb_geometry_prefill_flops(g, 2, &f2), TB_OK);
    /* active weights: 32 x (4 x 4096^2 + 3 x 4096 x 11008) + norms + head 4096 x 32000 */
    double P = 32.0 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096) + 4096 + 4096.0 * 32000;
    assert_true(f1 == 2 * P + 4.0 * 32 * 128 * 1 * 32);
    assert_true(f2 == 4 * P + 4.0 * 32 * 128 * 3 * 32);
    tb_bytes_per_token_t b;
    assert_int_equal(tb_geometry_bytes_per_token(g, -1, TB_TYPE_F16, NULL, &b), TB_ERR_ARG);
    assert_int_equal(tb_geometry_prefill_flops(g, -1, &f1), TB_ERR_ARG);
    assert_int_equal(tb_geometry_bytes_per_token(g, 0, TB_TYPE_Q8_0, NULL, &b), TB_OK);
    tb_geometry_free(g);
    assert_int_equal(tb_geometry_preset("no-such-model", NULL, &g), TB_ERR_NOT_FOUND);
    assert_non_null(strstr(tb_last_error(), "no-such-model"));
    assert_int_equal(tb_geometry_preset("llama-2-7b", "q3_k", &g), TB_ERR_ARG);
    for (const char *const *p = tb_geometry_presets(); *p; p++) {
        assert_non_null(tb_geometry_preset_source(*p));
        assert_non_null(strstr(tb_geometry_preset_source(*p), "http"));
        for (const char *const *l = tb_geometry_layouts(); *l; l++) {
            assert_int_equal(tb_geometry_preset(*p, *l, &g), TB_OK);
            assert_int_equal(tb_geometry_bytes_per_token(g, 100, TB_TYPE_F16, NULL, &b), TB_OK);
            assert_true(b.total > b.weights && b.output > 0);
            tb_geometry_free(g);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maple_preview_exact), cmocka_unit_test(test_dense_presets),
        cmocka_unit_test(test_maple_mlx),           cmocka_unit_test(test_gpt_oss),
        cmocka_unit_test(test_mlx8),
        cmocka_unit_test(test_qwen36),              cmocka_unit_test(test_synth_plan_equals_preset),
        cmocka_unit_test(test_synth_file_equals_plan), cmocka_unit_test(test_approx_head),
        cmocka_unit_test(test_flops_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
