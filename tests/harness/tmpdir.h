/*
 * tmpdir.h — the temporary directory a harness test group works in: made
 * by mkdtemp() in the group setup, removed with all it holds by the group
 * teardown (tmpdir_teardown).
 */
#ifndef TB_TEST_TMPDIR_H
#define TB_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char tmpdir[256];

/* mkdtemp "/tmp/tb_<name>_XXXXXX" into tmpdir; 0 ok. */
static inline int tmpdir_make(const char *name) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tb_%s_XXXXXX", name);
    return mkdtemp(tmpdir) ? 0 : -1;
}

/* cmocka group teardown: rm -rf tmpdir. */
static inline int tmpdir_teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* buf = "tmpdir/name". */
static inline void tpath(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

#endif
