/*
 * test_quality_tern.c — post-hoc ternarization (tb_quantize_model_ex with
 * TB_TERNARIZE_ABSMEAN): every projection matrix comes out exactly
 * {-1, 0, 1} times one scale, that scale is the matrix's mean |W| (up to
 * its storage type's rounding), the other tensors are untouched, and the
 * file is labelled post hoc. On a synthesized maple-tiny (rows of 256:
 * stored as TQ2_0) and on stories260K (rows of 64 and 172: stored in the
 * Q8_0 / F16 fallbacks), whose quality then collapses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "shared.h"

#include "quality.h"
#include "../harness/tmpdir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char stories[512], text_path[512];

static int group_setup(void **state) {
    (void)state;
    const char *sh = getenv("TB_SHARED_DIR");
    if (!sh) return -1;
    snprintf(stories, sizeof stories, "%s/models/stories260K.gguf", sh);
    snprintf(text_path, sizeof text_path, "%s/text/tinystories-valid-head.txt", sh);
    return tmpdir_make("quality_tern");
}

static bool is_projection(const tb_gguf_tensor_t *t) {
    return t->n_dims >= 2 && strncmp(t->name, "token_embd", 10) && strncmp(t->name, "output", 6) &&
           !strstr(t->name, "ffn_gate_inp");
}

/* Check every tensor of out against in; returns projections checked. */
static int check_file(const char *in_path, const char *out_path, tb_type_t want_type) {
    tb_gguf_t *gi, *go;
    assert_int_equal(tb_gguf_open(in_path, &gi), 0);
    assert_int_equal(tb_gguf_open(out_path, &go), 0);
    char s[64];
    assert_int_equal(tb_gguf_get_str(go, "ternbench.ternarize", s, sizeof s), 0);
    assert_string_equal(s, "absmean");
    bool ph = false;
    assert_int_equal(tb_gguf_get_bool(go, "ternbench.ternarize.post_hoc", &ph), 0);
    assert_true(ph);
    int n_proj = 0, n_want = 0;
    for (int64_t i = 0; i < tb_gguf_n_tensors(gi); i++) {
        tb_gguf_tensor_t a, b;
        assert_int_equal(tb_gguf_tensor(gi, i, &a), 0);
        assert_int_equal(tb_gguf_tensor(go, tb_gguf_find_tensor(go, a.name), &b), 0);
        if (!is_projection(&a)) {             /* untouched */
            assert_int_equal(a.type, b.type);
            assert_memory_equal(a.data, b.data, a.nbytes);
            continue;
        }
        n_proj++;
        n_want += b.type == want_type;
        const int64_t ne0 = a.ne[0], rows = a.ne[1], n_mat = a.ne[2] * a.ne[3];
        float *x = malloc((size_t)ne0 * sizeof *x), *y = malloc((size_t)ne0 * sizeof *y);
        const size_t sa = tb_type_row_bytes(a.type, ne0), sb = tb_type_row_bytes(b.type, ne0);
        for (int64_t m = 0; m < n_mat; m++) {
            double abs_sum = 0;
            float scale = 0;
            int64_t n_zero = 0, n_one = 0;
            for (int64_t r = 0; r < rows; r++) {
                const int64_t row = m * rows + r;
                assert_int_equal(tb_dequantize_row(a.type, (const uint8_t *)a.data + row * sa, x, ne0), 0);
                assert_int_equal(tb_dequantize_row(b.type, (const uint8_t *)b.data + row * sb, y, ne0), 0);
                for (int64_t k = 0; k < ne0; k++) {
                    abs_sum += fabs((double)x[k]);
                    if (y[k] == 0) { n_zero++; continue; }
                    if (scale == 0) scale = fabsf(y[k]);
                    assert_true(fabsf(y[k]) == scale);           /* exactly ±scale */
                    n_one++;
                }
            }
            const double gamma = abs_sum / (double)(ne0 * rows);
            assert_true(scale > 0 && n_zero > 0 && n_one > 0);
            /* the scale is gamma up to f16 rounding (TQ2_0, F16) or Q8_0's 127 * f16(gamma / 127) */
            assert_true(fabs(scale - gamma) <= gamma * 4e-3);
        }
        free(x);
        free(y);
    }
    tb_gguf_close(gi);
    tb_gguf_close(go);
    return n_want;
}

static void test_maple_tiny(void **state) {
    (void)state;
    char f32[600], tern[600];
    snprintf(f32, sizeof f32, "%s/maple-tiny.gguf", tmpdir);
    snprintf(tern, sizeof tern, "%s/maple-tiny-tern.gguf", tmpdir);
    const tb_synth_params_t sp = {.preset = "maple-tiny", .type = TB_TYPE_F32, .seed = 5};
    assert_int_equal(tb_synth_model(&sp, f32), 0);
    const tb_quantize_params_t qp = {.type = TB_TYPE_TQ2_0, .embd_type = TB_TYPE_COUNT,
                                     .output_type = TB_TYPE_COUNT, .ternarize = TB_TERNARIZE_ABSMEAN};
    assert_int_equal(tb_quantize_model_ex(f32, tern, &qp), 0);
    assert_true(check_file(f32, tern, TB_TYPE_TQ2_0) > 0);   /* real TQ2_0 tensors */
}

static void test_stories(void **state) {
    (void)state;
    char tern[600];
    snprintf(tern, sizeof tern, "%s/stories-tern.gguf", tmpdir);
    const tb_quantize_params_t qp = {.type = TB_TYPE_TQ2_0, .embd_type = TB_TYPE_COUNT,
                                     .output_type = TB_TYPE_COUNT, .ternarize = TB_TERNARIZE_ABSMEAN};
    assert_int_equal(tb_quantize_model_ex(stories, tern, &qp), 0);
    assert_int_equal(check_file(stories, tern, TB_TYPE_TQ2_0), 0);   /* all in fallbacks */
    /* labelled in the quality result; post-hoc ternary collapses: measured
     * ppl ratio 323, mean KLD 5.85, same top 2.6 % (ctx 128, 8 chunks) */
    tb_quality_opts_t o = {.model = tern, .ref_model = stories, .text = text_path, .n_ctx = 128,
                           .n_chunks = 4, .n_threads = 1};
    tb_quality_result_t r;
    assert_int_equal(tb_quality_run(&o, &r), 0);
    assert_string_equal(r.test_ternarize, "absmean");
    assert_string_equal(r.ref_ternarize, "");
    assert_true(r.st.ppl_ratio > 20);
    assert_true(r.st.kld_mean > 1);
    assert_true(r.st.same_top < 0.5);
}

static void test_bad_mode(void **state) {
    (void)state;
    char out[600];
    snprintf(out, sizeof out, "%s/bad.gguf", tmpdir);
    const tb_quantize_params_t qp = {.type = TB_TYPE_TQ2_0, .embd_type = TB_TYPE_COUNT,
                                     .output_type = TB_TYPE_COUNT, .ternarize = (tb_ternarize_t)7};
    assert_int_equal(tb_quantize_model_ex(stories, out, &qp), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "ternarization"));
    /* only into ternary types: q4_0 would not keep {-1, 0, 1} * gamma */
    const tb_quantize_params_t q4 = {.type = TB_TYPE_Q4_0, .embd_type = TB_TYPE_COUNT,
                                     .output_type = TB_TYPE_COUNT, .ternarize = TB_TERNARIZE_ABSMEAN};
    assert_int_equal(tb_quantize_model_ex(stories, out, &q4), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "tq2_0"));
}

int main(void) {
    quality_need_shared();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maple_tiny),
        cmocka_unit_test(test_stories),
        cmocka_unit_test(test_bad_mode),
    };
    return cmocka_run_group_tests(tests, group_setup, tmpdir_teardown);
}
