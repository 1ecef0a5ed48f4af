/*
 * synth_test.h — helpers shared by the synth tests: a private temporary
 * directory, file comparison and small GGUF accessors.
 */
#ifndef TB_SYNTH_TEST_H
#define TB_SYNTH_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <cmocka.h>

#include "ternbench.h"

/* mkdtemp()'d directory; st_tmp_path() builds paths inside it. */
static char st_dir[256];

static inline void st_tmp_init(void) {
    const char *base = getenv("TMPDIR");
    snprintf(st_dir, sizeof st_dir, "%s/tb-synth-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(st_dir)) { perror("mkdtemp"); exit(1); }
}

static inline const char *st_tmp_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", st_dir, name);
    return buf;
}

/* Remove every file of the directory, then the directory. */
static inline void st_tmp_cleanup(void) {
    DIR *d = opendir(st_dir);
    if (!d) return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(st_tmp_path(p, sizeof p, e->d_name));
    closedir(d);
    rmdir(st_dir);
}

static inline int st_synth(const char *preset, int type, uint64_t seed, const char *vocab_from,
                           const char *path) {
    tb_synth_params_t p = {.preset = preset, .type = type, .seed = seed, .vocab_from = vocab_from};
    int rc = tb_synth_model(&p, path);
    if (rc != TB_OK) fprintf(stderr, "tb_synth_model(%s): %s\n", preset, tb_last_error());
    return rc;
}

/* Whole file into memory (caller frees); NULL on error. */
static inline uint8_t *st_read_all(const char *path, size_t *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)len + 1);
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) { free(p); p = NULL; }
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* Tensor `name`, or `name`.weight as synthesized files name it. */
static inline int st_tensor(const tb_gguf_t *g, const char *name, tb_gguf_tensor_t *t) {
    int64_t i = tb_gguf_find_tensor(g, name);
    if (i < 0) {
        char full[128];
        snprintf(full, sizeof full, "%s.weight", name);
        i = tb_gguf_find_tensor(g, full);
    }
    if (i < 0) { fprintf(stderr, "missing tensor %s\n", name); return TB_ERR_NOT_FOUND; }
    return tb_gguf_tensor(g, i, t);
}

#endif
