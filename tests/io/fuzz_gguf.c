/*
 * fuzz_gguf.c — libFuzzer entry point for the GGUF reader (clang only,
 * not part of the test suite). Each input is written to a memfd and opened
 * through /proc/self/fd, so the reader maps exactly the fuzzer's bytes;
 * a successful open is walked end to end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ternbench.h"

#include <stdio.h>
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
        tb_gguf_close(g);
    }
    close(fd);
    return 0;
}
