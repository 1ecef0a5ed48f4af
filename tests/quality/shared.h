/*
 * shared.h — the quality suites need the real model and text in
 * ../shared (TB_SHARED_DIR). Where that folder is genuinely absent (a
 * checkout used outside this workplace) a suite reports itself skipped
 * (exit 77, meson's skip) with the path it looked for; never passed.
 */
#ifndef TB_TESTS_QUALITY_SHARED_H
#define TB_TESTS_QUALITY_SHARED_H

#include "../harness/tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void quality_need_shared(void) {
    const char *sh = getenv("TB_SHARED_DIR");
    char p[1024];
    snprintf(p, sizeof p, "%s/models/stories260K.gguf", sh ? sh : "../shared");
    if (access(p, R_OK) == 0) return;
    fprintf(stderr, "SKIP: %s is absent (../shared is not beside this checkout): the quality suites need it\n", p);
    exit(77);
}

/* The common group setup: stories (cap 512) gets the model's path, a
 * temporary directory `name` is made, and text_path (cap 512) gets a copy
 * of the first 48 KiB of the shipped text there (enough chunks, quick to
 * tokenize). 0, or -1 for cmocka's group setup to fail. */
static inline int quality_setup(const char *name, char *stories, char *text_path) {
    const char *sh = getenv("TB_SHARED_DIR");
    if (!sh) return -1;
    snprintf(stories, 512, "%s/models/stories260K.gguf", sh);
    if (tmpdir_make(name)) return -1;
    char src[512];
    snprintf(src, sizeof src, "%s/text/tinystories-valid-head.txt", sh);
    FILE *in = fopen(src, "rb");
    if (!in) return -1;
    static char buf[48 << 10];
    size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    tpath(text_path, 512, "text.txt");
    FILE *out = fopen(text_path, "wb");
    if (!out || fwrite(buf, 1, n, out) != n) return -1;
    return fclose(out);
}

#endif
