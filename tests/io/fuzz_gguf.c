/*
 * fuzz_gguf.c — libFuzzer entry point for the GGUF reader, the tokenizer
 * and the model loader (clang only, not part of the test suite; run it
 * with tools/fuzz.sh, see docs/hardening.md). Each input is written to a
 * memfd and opened through /proc/self/fd, so the reader maps exactly the
 * fuzzer's bytes. A file that opens is walked end to end; if it has a
 * tokenizer, fixed texts are tokenized and the ids detokenized; then the
 * same bytes are loaded as a model (weights copied and mapped).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ternbench.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Touch every value, array element (bounded) and tensor byte boundary. */
static void walk(const tb_gguf_t *g) {
    volatile uint64_t sum = 0;
    for (int64_t i = 0; i < tb_gguf_n_kv(g); i++) {
        tb_gguf_value_t v, e;
        if (tb_gguf_kv_value(g, i, &v)) continue;
        if (v.type == TB_GGUF_STRING && v.v.str.len) sum += (uint8_t)v.v.str.ptr[v.v.str.len - 1];
        if (v.type != TB_GGUF_ARRAY) continue;
        for (uint64_t k = 0; k < v.v.arr.n && k < 1024; k++)
            if (!tb_gguf_arr_get(g, &v, k, &e) && e.type == TB_GGUF_STRING && e.v.str.len)
                sum += (uint8_t)e.v.str.ptr[e.v.str.len - 1];
    }
    for (int64_t i = 0; i < tb_gguf_n_tensors(g); i++) {
        tb_gguf_tensor_t t;
        if (tb_gguf_tensor(g, i, &t) == TB_OK)
            sum += ((const uint8_t *)t.data)[0] + ((const uint8_t *)t.data)[t.nbytes - 1];
    }
    (void)sum;
}

/* Tokenize fixed texts (specials parsed and not), detokenize every id
 * through the streaming detokenizer with a small buffer, drained fully. */
static void tokenize(const tb_tokenizer_t *t) {
    static const char *const texts[] = {
        "Hello world, 12 caf\xC3\xA9 <s></s><|endoftext|>  \n\t x",
        "\xF0\x9F\x98\x80\xE2\x96\x81\xFF\xC3 ab",
        "",
    };
    int32_t ids[256];
    char buf[16];
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
        for (int special = 0; special < 2; special++) {
            int n = tb_tokenize(t, texts[k], strlen(texts[k]), special, special, ids, 256);
            if (n < 0) continue;
            if (n > 256) n = 256;
            tb_detok_t *d;
            if (tb_detok_new(t, &d)) continue;
            for (int i = 0; i < n; i++) {
                char piece[64];
                (void)tb_token_to_bytes(t, ids[i], true, piece, sizeof piece);
                for (int r = tb_detok_push(d, ids[i], buf, sizeof buf); r > 0;
                     r = tb_detok_drain(d, buf, sizeof buf)) {}
            }
            while (tb_detok_flush(d, buf, sizeof buf) > 0) {}
            tb_detok_free(d);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("gguf-fuzz", MFD_CLOEXEC);
    if (fd < 0) return 0;
    size_t done = 0;
    while (done < size) {
        ssize_t k = write(fd, data + done, size - done);
        if (k <= 0) { close(fd); return 0; }
        done += (size_t)k;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    tb_gguf_t *g;
    if (tb_gguf_open(path, &g) == TB_OK) {
        walk(g);
        tb_tokenizer_t *t;
        if (tb_gguf_find_kv(g, "tokenizer.ggml.model") >= 0 && tb_tokenizer_from_gguf(g, &t) == TB_OK) {
            tokenize(t);
            tb_tokenizer_free(t);
        }
        tb_gguf_close(g);
        const tb_weights_mode_t modes[] = {TB_WEIGHTS_COPY, TB_WEIGHTS_MMAP};
        for (int k = 0; k < 2; k++) {
            tb_model_t *m;
            tb_model_params_t mp = {.weights = modes[k], .n_threads = 1};
            if (tb_model_load_ex(path, &mp, &m) == TB_OK) {
                tb_model_info_t info;
                (void)tb_model_get_info(m, &info);
                tb_model_free(m);
            }
        }
    }
    close(fd);
    return 0;
}
