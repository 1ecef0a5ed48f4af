/*
 * shared.h — the quality suites need the real model and text in
 * ../shared (TB_SHARED_DIR). Where that folder is genuinely absent (a
 * checkout used outside this workplace) a suite reports itself skipped
 * (exit 77, meson's skip) with the path it looked for; never passed.
 */
#ifndef TB_TESTS_QUALITY_SHARED_H
#define TB_TESTS_QUALITY_SHARED_H

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

#endif
