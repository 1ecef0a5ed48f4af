/*
 * test_placement.c — thread placement (util/placement.c, pool.c):
 *  - CPU lists parse ("0-3,6", single numbers, ranges) and bad ones are
 *    refused naming the problem (empty, letters, a reversed range, a
 *    trailing comma, past CPU_SETSIZE, more than the room given);
 *  - with a placement of the CPUs this process may use, in reverse order,
 *    a pool of n threads (n = 1..4, wrapping past the list) pins thread i
 *    to entry i mod len (tb_pool_cpus) and each thread runs there
 *    (sched_getcpu inside a pool run); a 1-thread pool pins nothing;
 *  - tb_cpus_set(NULL, 0) returns to the default, which on a machine of
 *    one core kind is no placement;
 *  - with argv[1] "default": TB_CPU_ROOT names a fake two-core phone tree
 *    (cpu1 a Cortex-X4, cpu0 a Cortex-A520) before the first read, and the
 *    default placement is 1, 0 (fastest first); a 2-thread pool runs there
 *    (where this process may use CPUs 0 and 1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ternbench.h"

static void test_parse(void **st) {
    (void)st;
    int32_t c[16];
    assert_int_equal(tb_cpus_parse("0-3,6", c, 16), 5);
    assert_int_equal(c[0], 0);
    assert_int_equal(c[3], 3);
    assert_int_equal(c[4], 6);
    assert_int_equal(tb_cpus_parse("7", c, 16), 1);
    assert_int_equal(c[0], 7);
    assert_int_equal(tb_cpus_parse("4-5,1,1", c, 16), 4);   /* repeats are allowed: two threads on cpu 1 */
    const char *bad[] = {"", "a", "1-", "3-1", "1,", "1,,2", "-1", "1 2", "99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tb_cpus_parse(bad[i], c, 16), TB_ERR_ARG);
        assert_non_null(strstr(tb_last_error(), "CPU"));
    }
    assert_int_equal(tb_cpus_parse("0-20", c, 16), TB_ERR_ARG);
    assert_non_null(strstr(tb_last_error(), "more than 16"));
    assert_int_equal(tb_cpus_set_str("2-1"), TB_ERR_ARG);
}

typedef struct { int cpu[8]; } seen_t;
static void where(void *arg, int ith, int nth) {
    (void)nth;
    ((seen_t *)arg)->cpu[ith] = tb_cpus_current();
}

static void test_pin(void **st) {
    (void)st;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int32_t mine[8];
    int n_mine = 0;
    for (int c = CPU_SETSIZE - 1; c >= 0 && n_mine < 8; c--)   /* reverse order */
        if (CPU_ISSET(c, &set)) mine[n_mine++] = c;
    assert_true(n_mine >= 1);
    assert_int_equal(tb_cpus_set(mine, n_mine), TB_OK);
    int32_t got[8];
    assert_int_equal(tb_cpus_get(got, 8), n_mine);
    assert_memory_equal(got, mine, sizeof *mine * (size_t)n_mine);
    for (int nth = 1; nth <= 4; nth++) {
        tb_pool_t *p;
        assert_int_equal(tb_pool_new(nth, &p), TB_OK);
        seen_t s;
        memset(&s, 0xff, sizeof s);
        tb_pool_run(p, where, &s);   /* every worker has started and pinned itself by its first run */
        int32_t pin[8];
        assert_int_equal(tb_pool_cpus(p, pin, 8), nth);
        for (int i = 0; i < nth; i++) {
            if (nth == 1) { assert_int_equal(pin[0], -1); continue; }
            assert_int_equal(pin[i], mine[i % n_mine]);
            assert_int_equal(s.cpu[i], mine[i % n_mine]);
        }
        tb_pool_free(p);
    }
    /* back to the default: one core kind here (or none found), so no placement */
    assert_int_equal(tb_cpus_set(NULL, 0), TB_OK);
    const tb_cpu_topo_t *t = tb_cpu_topo_host();
    if (t->n_kinds <= 1) assert_int_equal(tb_cpus_get(got, 8), 0);
    /* and the caller may run anywhere again */
    assert_int_equal(sched_setaffinity(0, sizeof set, &set), 0);
}

static char root[256];

static void put(const char *rel, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s%s", root, rel);
    for (char *q = p + strlen(root) + 1; *q; q++)
        if (*q == '/') { *q = '\0'; mkdir(p, 0755); *q = '/'; }
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_default(void **st) {
    (void)st;
    snprintf(root, sizeof root, "/tmp/tb_placement_XXXXXX");
    assert_non_null(mkdtemp(root));
    put("/proc/cpuinfo", "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd80\n\n"
                         "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd82\n\n");
    put("/sys/devices/system/cpu/cpu0/cpu_capacity", "250\n");
    put("/sys/devices/system/cpu/cpu1/cpu_capacity", "1024\n");
    assert_int_equal(setenv("TB_CPU_ROOT", root, 1), 0);
    assert_int_equal(unsetenv("TB_CPUS"), 0);
    int32_t got[4];
    assert_int_equal(tb_cpus_get(got, 4), 2);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 0);
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    if (CPU_ISSET(0, &set) && CPU_ISSET(1, &set)) {
        tb_pool_t *p;
        assert_int_equal(tb_pool_new(2, &p), TB_OK);
        seen_t s;
        tb_pool_run(p, where, &s);
        assert_int_equal(s.cpu[0], 1);
        assert_int_equal(s.cpu[1], 0);
        tb_pool_free(p);
        assert_int_equal(sched_setaffinity(0, sizeof set, &set), 0);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "default")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_default)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_pin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
