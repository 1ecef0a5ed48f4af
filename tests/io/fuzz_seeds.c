/*
 * fuzz_seeds.c — writes the seed corpus of fuzz_gguf into DIR (argv[1]):
 * the io fixture file (every value type, nested arrays, three tensors), an
 * SPM and a BPE vocabulary-only file, and two tiny complete llama models
 * (f32 and q8_0 weights, one layer, 32-wide) carrying the BPE vocabulary,
 * so that mutations start from inputs that reach the tokenizer and the
 * model loader. Built with the fuzzer (tools/fuzz.sh), not by default.
 */
#include "gguf_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E 32
#define FF 32
#define NV 16

static const char *const bpe_tok[NV] = {
    "H", "e", "l", "o", "\xC4\xA0", "w", "r", "d", "He", "ll", "llo", "\xC4\xA0w", "or", "ld",
    "<|endoftext|>", "x",
};
static const int32_t bpe_type[NV] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1};
static const char *const bpe_merges[] = {"H e", "l l", "ll o", "\xC4\xA0 w", "o r", "l d"};

static int die(const char *what) {
    fprintf(stderr, "fuzz_seeds: %s: %s\n", what, tb_last_error());
    return 1;
}

static int bpe_keys(tb_gguf_writer_t *w) {
    int rc = tb_gguf_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (!rc) rc = tb_gguf_set_str(w, "tokenizer.ggml.pre", "llama-bpe");
    if (!rc) rc = tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", bpe_tok, NULL, NV);
    if (!rc) rc = tb_gguf_set_arr(w, "tokenizer.ggml.token_type", TB_GGUF_INT32, bpe_type, NV);
    if (!rc) rc = tb_gguf_set_arr_str(w, "tokenizer.ggml.merges", bpe_merges, NULL, 6);
    if (!rc) rc = tb_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 14);
    return rc;
}

static int vocab_spm(const char *path) {
    const char *tok[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab",
                         "<0x41>", "<0xC3>", "<0xA9>", "\xE2\x96\x81" "ab"};
    const int32_t type[] = {2, 3, 3, 1, 1, 1, 1, 1, 6, 6, 6, 1};
    const float score[] = {0, 0, 0, -1, -2, -2, -1.5f, -1.2f, 0, 0, 0, -0.5f};
    tb_gguf_writer_t *w;
    int rc = tb_gguf_writer_new(&w);
    if (!rc) rc = tb_gguf_set_str(w, "tokenizer.ggml.model", "llama");
    if (!rc) rc = tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", tok, NULL, 12);
    if (!rc) rc = tb_gguf_set_arr(w, "tokenizer.ggml.token_type", TB_GGUF_INT32, type, 12);
    if (!rc) rc = tb_gguf_set_arr(w, "tokenizer.ggml.scores", TB_GGUF_FLOAT32, score, 12);
    if (!rc) rc = tb_gguf_writer_begin(w, path);
    if (!rc) rc = tb_gguf_writer_finish(w);
    tb_gguf_writer_free(w);
    return rc;
}

static int vocab_bpe(const char *path) {
    tb_gguf_writer_t *w;
    int rc = tb_gguf_writer_new(&w);
    if (!rc) rc = bpe_keys(w);
    if (!rc) rc = tb_gguf_writer_begin(w, path);
    if (!rc) rc = tb_gguf_writer_finish(w);
    tb_gguf_writer_free(w);
    return rc;
}

/* One tensor's data: f32 small values, or q8_0 blocks from them. */
static int put_tensor(tb_gguf_writer_t *w, tb_type_t type, int64_t n) {
    float row[E];
    for (int64_t i = 0; i < n; i += E) {
        for (int k = 0; k < E; k++) row[k] = (float)(((i + k) * 37) % 17 - 8) / 64.0f;
        int rc;
        if (type == TB_TYPE_F32) {
            rc = tb_gguf_write_tensor_data(w, row, sizeof row);
        } else {
            uint8_t q[E / 32 * 34];
            if ((rc = tb_quantize_row(TB_TYPE_Q8_0, row, q, E)) < 0) return rc;
            rc = tb_gguf_write_tensor_data(w, q, sizeof q);
        }
        if (rc) return rc;
    }
    return TB_OK;
}

static int model(const char *path, tb_type_t proj) {
    struct { const char *name; int nd; int64_t ne0, ne1; bool proj; } t[] = {
        {"token_embd.weight", 2, E, NV, false},       {"blk.0.attn_norm.weight", 1, E, 1, false},
        {"blk.0.attn_q.weight", 2, E, E, true},       {"blk.0.attn_k.weight", 2, E, E, true},
        {"blk.0.attn_v.weight", 2, E, E, true},       {"blk.0.attn_output.weight", 2, E, E, true},
        {"blk.0.ffn_norm.weight", 1, E, 1, false},    {"blk.0.ffn_gate.weight", 2, E, FF, true},
        {"blk.0.ffn_up.weight", 2, E, FF, true},      {"blk.0.ffn_down.weight", 2, FF, E, true},
        {"output_norm.weight", 1, E, 1, false},
    };
    const int nt = (int)(sizeof t / sizeof t[0]);
    tb_gguf_writer_t *w;
    int rc = tb_gguf_writer_new(&w);
    if (!rc) rc = tb_gguf_set_str(w, "general.architecture", "llama");
    if (!rc) rc = tb_gguf_set_u32(w, "llama.context_length", 64);
    if (!rc) rc = tb_gguf_set_u32(w, "llama.block_count", 1);
    if (!rc) rc = tb_gguf_set_u32(w, "llama.embedding_length", E);
    if (!rc) rc = tb_gguf_set_u32(w, "llama.feed_forward_length", FF);
    if (!rc) rc = tb_gguf_set_u32(w, "llama.attention.head_count", 2);
    if (!rc) rc = tb_gguf_set_u32(w, "llama.attention.head_count_kv", 2);
    if (!rc) rc = tb_gguf_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    if (!rc) rc = bpe_keys(w);
    for (int i = 0; i < nt && !rc; i++) {
        int64_t ne[2] = {t[i].ne0, t[i].ne1};
        rc = tb_gguf_add_tensor(w, t[i].name, t[i].proj ? proj : TB_TYPE_F32, t[i].nd, ne);
    }
    if (!rc) rc = tb_gguf_writer_begin(w, path);
    for (int i = 0; i < nt && !rc; i++) rc = put_tensor(w, t[i].proj ? proj : TB_TYPE_F32, t[i].ne0 * t[i].ne1);
    if (!rc) rc = tb_gguf_writer_finish(w);
    tb_gguf_writer_free(w);
    if (rc) return rc;
    tb_model_t *m;   /* the seed must be a model the loader accepts */
    if ((rc = tb_model_load(path, &m))) return rc;
    tb_model_free(m);
    return TB_OK;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: fuzz_seeds DIR\n"); return 2; }
    char p[4096];
    bb_t b = {0};
    fx_map_t map;
    fx_build(&(fx_opts_t){.alignment = 32}, &b, &map);
    snprintf(p, sizeof p, "%s/fixture.gguf", argv[1]);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b.p, 1, b.n, f) != b.n || fclose(f)) { perror(p); return 1; }
    bb_free(&b);
    snprintf(p, sizeof p, "%s/vocab_spm.gguf", argv[1]);
    if (vocab_spm(p)) return die(p);
    snprintf(p, sizeof p, "%s/vocab_bpe.gguf", argv[1]);
    if (vocab_bpe(p)) return die(p);
    snprintf(p, sizeof p, "%s/model_f32.gguf", argv[1]);
    if (model(p, TB_TYPE_F32)) return die(p);
    snprintf(p, sizeof p, "%s/model_q8_0.gguf", argv[1]);
    if (model(p, TB_TYPE_Q8_0)) return die(p);
    return 0;
}
