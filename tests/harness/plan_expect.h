/*
 * plan_expect.h — scenario text parsed as if it were the file TMPDIR/NAME,
 * and the check that a bad one fails with "TMPDIR/NAME:LINE: ...". Shared
 * by the harness suites that test scenario sections. Include after
 * cmocka.h, scenario.h and tmpdir.h.
 */
#ifndef TB_TEST_PLAN_EXPECT_H
#define TB_TEST_PLAN_EXPECT_H

#include <stdio.h>
#include <string.h>

/* Parse text as TMPDIR/name into *p (caller frees with tb_plan_free). */
static inline int plan_parse_in(const char *name, const char *text, tb_plan_t *p) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return tb_plan_parse(path, text, strlen(text), p);
}

/* Expect TB_ERR_FORMAT whose message is "TMPDIR/name:LINE: ...WHAT...". */
static inline void plan_expect_error_in(const char *name, const char *text, int line, const char *what) {
    tb_plan_t p;
    int rc = plan_parse_in(name, text, &p);
    tb_plan_free(&p);
    if (rc == TB_OK) fail_msg("parsed but expected an error containing \"%s\":\n%s", what, text);
    assert_int_equal(rc, TB_ERR_FORMAT);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/%s:%d: ", tmpdir, name, line);
    const char *msg = tb_last_error();
    if (strncmp(msg, prefix, strlen(prefix)) != 0)
        fail_msg("message \"%s\" does not start with \"%s\"", msg, prefix);
    if (!strstr(msg, what)) fail_msg("message \"%s\" lacks \"%s\"", msg, what);
}

#endif
