/*
 * test_e2e_model.c — well-formed GGUF files with the wrong contents, fed to
 * the real `ternbench` binary: metadata of the wrong type, out of range or
 * missing; unknown architecture; tensors missing, misshapen or retyped;
 * tokenizer arrays of the wrong type or length, odd merges, ids out of
 * range. Each variant is written from a synthesized llama-tiny with the
 * public GGUF writer. Every command that loads the model must either work
 * or fail with a message naming the file (and the key or tensor when the
 * variant must be refused) — never a signal or a sanitizer report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "e2e.h"
#include "ternbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Variants                                                               */
/* ===================================================================== */

typedef enum {
    KV_NONE, KV_DROP, KV_U32, KV_STR, KV_ARR_U32, KV_STRS_N, KV_I32S_N, KV_STRS_ODD,
} kv_op_t;

typedef struct variant {
    const char *name;
    kv_op_t op;
    const char *key;
    uint32_t u;              /* KV_U32 value; KV_ARR_U32 / *_N element count */
    const char *s;           /* KV_STR value                                  */
    const char *tensor;      /* tensor to change (NULL: none)                 */
    int t_drop;
    int64_t ne0, ne1;        /* new shape when ne0 > 0                        */
    int t_type;              /* new type when >= 0                            */
    int must_fail;
    const char *needle;      /* in the message when must_fail                 */
} variant_t;

#define V_KV(n, o, k, uu, ss, mf, nd) {n, o, k, uu, ss, NULL, 0, 0, 0, -1, mf, nd}
#define V_T(n, t, drop, a, b, ty, mf, nd) {n, KV_NONE, NULL, 0, NULL, t, drop, a, b, ty, mf, nd}

static const variant_t variants[] = {
    V_KV("kv-block-count-string.gguf", KV_STR, "llama.block_count", 0, "2", 1, "block_count"),
    V_KV("kv-head-count-zero.gguf", KV_U32, "llama.attention.head_count", 0, NULL, 1, "head_count"),
    V_KV("kv-block-count-huge.gguf", KV_U32, "llama.block_count", 1u << 30, NULL, 1, NULL),
    V_KV("kv-embd-missing.gguf", KV_DROP, "llama.embedding_length", 0, NULL, 1, "embedding_length"),
    V_KV("kv-kv-heads.gguf", KV_U32, "llama.attention.head_count_kv", 3, NULL, 1, "head_count_kv"),
    V_KV("kv-arch-unknown.gguf", KV_STR, "general.architecture", 0, "gpt9", 1, "gpt9"),
    V_KV("kv-arch-missing.gguf", KV_DROP, "general.architecture", 0, NULL, 1, "general.architecture"),
    V_KV("kv-arch-number.gguf", KV_U32, "general.architecture", 7, NULL, 1, "general.architecture"),
    V_KV("kv-rope-dims.gguf", KV_U32, "llama.rope.dimension_count", 1000, NULL, 1, "dimension_count"),
    V_KV("kv-eps-string.gguf", KV_STR, "llama.attention.layer_norm_rms_epsilon", 0, "x", 1, "epsilon"),
    V_KV("kv-ctx-zero.gguf", KV_U32, "llama.context_length", 0, NULL, 0, NULL),
    V_T("t-missing.gguf", "blk.1.ffn_down.weight", 1, 0, 0, -1, 1, "blk.1.ffn_down"),
    V_T("t-shape.gguf", "blk.0.attn_q.weight", 0, 256, 128, -1, 1, "blk.0.attn_q"),
    V_T("t-embd-rows.gguf", "token_embd.weight", 0, 256, 300, -1, 1, NULL),
    /* a model vocabulary smaller than the tokenizer's: ids >= 300 must not index past it */
    V_T("t-vocab-small.gguf", "token_embd.weight|output.weight", 0, 256, 300, -1, 0, NULL),
    V_T("t-norm-q8.gguf", "blk.0.attn_norm.weight", 0, 0, 0, TB_TYPE_Q8_0, 0, NULL),
    V_T("t-output-missing.gguf", "output.weight", 1, 0, 0, -1, 0, NULL),
    V_KV("tok-tokens-u32.gguf", KV_ARR_U32, "tokenizer.ggml.tokens", 512, NULL, 1, "tokenizer.ggml.tokens"),
    V_KV("tok-tokens-empty.gguf", KV_STRS_N, "tokenizer.ggml.tokens", 0, NULL, 1, "tokenizer"),
    V_KV("tok-tokens-short.gguf", KV_STRS_N, "tokenizer.ggml.tokens", 300, NULL, 0, NULL),
    V_KV("tok-ttype-short.gguf", KV_I32S_N, "tokenizer.ggml.token_type", 10, NULL, 0, NULL),
    V_KV("tok-merges-odd.gguf", KV_STRS_ODD, "tokenizer.ggml.merges", 0, NULL, 0, NULL),
    V_KV("tok-model-unknown.gguf", KV_STR, "tokenizer.ggml.model", 0, "sentencepiece9", 0, NULL),
    V_KV("tok-model-llama.gguf", KV_STR, "tokenizer.ggml.model", 0, "llama", 0, NULL),
    V_KV("tok-bos-huge.gguf", KV_U32, "tokenizer.ggml.bos_token_id", 99999, NULL, 0, NULL),
    V_KV("tok-merges-missing.gguf", KV_DROP, "tokenizer.ggml.merges", 0, NULL, 0, NULL),
};

/* Odd merges: empty, no space, three parts, unknown pieces, a lone space. */
static const char *const odd_merges[] = {"", "abc", "a b c", "zz yy", " ", "\xff\xfe \x01", "h e"};

/* The elements of string array key i of g, truncated to n (n <= count). */
static int copy_strs(tb_gguf_writer_t *w, const tb_gguf_t *g, int64_t i, const char *key, uint64_t n) {
    tb_gguf_value_t v, e;
    if (tb_gguf_kv_value(g, i, &v) != TB_OK || v.type != TB_GGUF_ARRAY || v.v.arr.n < n) return -1;
    const char **s = calloc(n + 1, sizeof *s);
    uint64_t *len = calloc(n + 1, sizeof *len);
    int rc = s && len ? TB_OK : -1;
    for (uint64_t k = 0; rc == TB_OK && k < n; k++) {
        rc = tb_gguf_arr_get(g, &v, k, &e);
        s[k] = e.v.str.ptr;
        len[k] = e.v.str.len;
    }
    if (rc == TB_OK) rc = tb_gguf_set_arr_str(w, key, s, len, n);
    free(s);
    free(len);
    return rc;
}

static int copy_i32s(tb_gguf_writer_t *w, const tb_gguf_t *g, int64_t i, const char *key, uint64_t n) {
    tb_gguf_value_t v, e;
    if (tb_gguf_kv_value(g, i, &v) != TB_OK || v.type != TB_GGUF_ARRAY || v.v.arr.n < n) return -1;
    int32_t *a = calloc(n + 1, sizeof *a);
    int rc = a ? TB_OK : -1;
    for (uint64_t k = 0; rc == TB_OK && k < n; k++) {
        rc = tb_gguf_arr_get(g, &v, k, &e);
        a[k] = (int32_t)e.v.i64;
    }
    if (rc == TB_OK) rc = tb_gguf_set_arr(w, key, TB_GGUF_INT32, a, n);
    free(a);
    return rc;
}

/* The key/value part of variant v: key i of the source, changed or copied. */
static int put_kv(tb_gguf_writer_t *w, const tb_gguf_t *g, int64_t i, const variant_t *v) {
    const char *key = tb_gguf_kv_key(g, i);
    if (v->op == KV_NONE || strcmp(key, v->key) != 0) return tb_gguf_copy_kv(w, g, i);
    switch (v->op) {
    case KV_DROP: return TB_OK;
    case KV_U32: return tb_gguf_set_u32(w, key, v->u);
    case KV_STR: return tb_gguf_set_str(w, key, v->s);
    case KV_ARR_U32: {
        uint32_t *a = calloc(v->u + 1, sizeof *a);
        if (!a) return -1;
        for (uint32_t k = 0; k < v->u; k++) a[k] = k;
        int rc = tb_gguf_set_arr(w, key, TB_GGUF_UINT32, a, v->u);
        free(a);
        return rc;
    }
    case KV_STRS_N: return copy_strs(w, g, i, key, v->u);
    case KV_I32S_N: return copy_i32s(w, g, i, key, v->u);
    case KV_STRS_ODD: {
        uint64_t len[sizeof odd_merges / sizeof odd_merges[0]];
        for (size_t k = 0; k < sizeof odd_merges / sizeof odd_merges[0]; k++) len[k] = strlen(odd_merges[k]);
        return tb_gguf_set_arr_str(w, key, odd_merges, len, sizeof odd_merges / sizeof odd_merges[0]);
    }
    case KV_NONE: break;
    }
    return -1;
}

/* True when tensor `name` is one of v->tensor's '|'-separated names. */
static int is_mine(const variant_t *v, const char *name) {
    if (!v->tensor) return 0;
    size_t n = strlen(name);
    for (const char *p = v->tensor; *p;) {
        size_t k = strcspn(p, "|");
        if (k == n && !strncmp(p, name, n)) return 1;
        p += k + (p[k] == '|');
    }
    return 0;
}

/* Write TMP/v->name from the source model g. */
static void write_variant(const tb_gguf_t *g, const variant_t *v) {
    tb_gguf_writer_t *w;
    assert_int_equal(tb_gguf_writer_new(&w), TB_OK);
    for (int64_t i = 0; i < tb_gguf_n_kv(g); i++)
        if (put_kv(w, g, i, v) != TB_OK) fail_msg("%s: key %lld: %s", v->name, (long long)i, tb_last_error());
    int64_t nt = tb_gguf_n_tensors(g);
    uint64_t *nbytes = calloc((size_t)nt, sizeof *nbytes);
    assert_non_null(nbytes);
    for (int64_t i = 0; i < nt; i++) {
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, i, &t), TB_OK);
        int mine = is_mine(v, t.name);
        if (mine && v->t_drop) continue;
        tb_type_t type = mine && v->t_type >= 0 ? (tb_type_t)v->t_type : t.type;
        int64_t ne[4] = {t.ne[0], t.ne[1], t.ne[2], t.ne[3]};   // (ne0, ne1, ne2, ne3)
        if (mine && v->ne0 > 0) { ne[0] = v->ne0; ne[1] = v->ne1; }
        if (tb_gguf_add_tensor(w, t.name, type, t.n_dims, ne) != TB_OK)
            fail_msg("%s: tensor %s: %s", v->name, t.name, tb_last_error());
        nbytes[i] = tb_type_row_bytes(type, ne[0]) * (uint64_t)(ne[1] * ne[2] * ne[3]);
    }
    char path[512];
    e2e_path(path, sizeof path, v->name);
    assert_int_equal(tb_gguf_writer_begin(w, path), TB_OK);
    static const char zeros[4096];
    for (int64_t i = 0; i < nt; i++) {
        tb_gguf_tensor_t t;
        tb_gguf_tensor(g, i, &t);
        if (is_mine(v, t.name) && v->t_drop) continue;
        uint64_t from_src = t.nbytes < nbytes[i] ? t.nbytes : nbytes[i];
        if (from_src && tb_gguf_write_tensor_data(w, t.data, from_src) != TB_OK)
            fail_msg("%s: data of %s: %s", v->name, t.name, tb_last_error());
        for (uint64_t k = from_src; k < nbytes[i];) {
            size_t c = nbytes[i] - k < sizeof zeros ? (size_t)(nbytes[i] - k) : sizeof zeros;
            if (tb_gguf_write_tensor_data(w, zeros, c) != TB_OK) fail_msg("%s: padding: %s", v->name, tb_last_error());
            k += c;
        }
    }
    if (tb_gguf_writer_finish(w) != TB_OK) fail_msg("%s: finish: %s", v->name, tb_last_error());
    tb_gguf_writer_free(w);
    free(nbytes);
}

/* ===================================================================== */
/* The test                                                               */
/* ===================================================================== */

static void test_wrong_contents(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "model", "synth", "--preset", "llama-tiny", "--type", "q8_0", "--out", "m.gguf", "--quiet");
    if (r.status != 0) fail_msg("model synth: exit %d: %s", r.status, r.err);
    e2e_res_free(&r);
    char src[512];
    e2e_path(src, sizeof src, "m.gguf");
    tb_gguf_t *g;
    if (tb_gguf_open(src, &g) != TB_OK) fail_msg("%s", tb_last_error());
    int refused = 0, loaded = 0;
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const variant_t *v = &variants[i];
        write_variant(g, v);
        const char *f = v->name;
        const char *const cmds[][12] = {
            {"model", "info", f, NULL},
            {"generate", "-m", f, "-p", "hello world", "-n", "4", "-t", "1", NULL},
            {"tokenize", "-m", f, "--text", "hello world, h\xc3\xa9llo", NULL},
            {"detokenize", "-m", f, "1", "299", "300", "511", NULL},
            {"bench", "-m", f, "-p", "4", "-n", "4", "-r", "1", "-t", "1", NULL},
        };
        int tok = !strncmp(f, "tok-", 4);
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            /* the tokenizer commands only matter for tokenizer variants, bench
             * only for model variants (generate covers the tokenizer's use) */
            if ((!tok && (c == 2 || c == 3)) || (tok && c == 4)) continue;
            char what[160];
            snprintf(what, sizeof what, "%s %s (%s)", cmds[c][0], cmds[c][1], f);
            e2e_run(E2E_NO_LIMIT, cmds[c], &r);
            e2e_assert_clean(&r, what);
            if (r.status != 0) {
                /* a load failure names the file; a later one (an id outside a
                 * smaller model vocabulary) names what was wrong instead */
                if (c == 0 || v->must_fail) e2e_assert_err_has(&r, what, f, NULL);
                else if (!r.err[0]) fail_msg("%s: exit %d without a message", what, r.status);
                if (c == 0) refused++;
            } else if (c == 0) {
                loaded++;
            }
            if (v->must_fail) {
                if (r.status == 0) fail_msg("%s: exit 0, but the model must be refused", what);
                if (v->needle) e2e_assert_err_has(&r, what, v->needle, NULL);
            }
            e2e_res_free(&r);
        }
        char p[512];
        e2e_path(p, sizeof p, f);
        remove(p);
    }
    print_message("%d variants refused by model info, %d loaded\n", refused, loaded);
    tb_gguf_close(g);
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "model") != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrong_contents),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    e2e_cleanup();
    return failed;
}
