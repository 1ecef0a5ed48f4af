/*
 * test_facts.c — host provenance on ARM (facts.c, tb_facts_host_arm) from
 * fake /proc and /sys trees read by tb_cpu_topo_read:
 *  - a 2+6 phone (two Cortex-A78 at capacity 1024, six Cortex-A55): the
 *    host row's vendor is the fastest kind's implementer, cpu_model its
 *    MIDR part, cpu_brand the kinds' summary, isa_flags the features with
 *    their source, cores the CPUs found;
 *  - an x86 tree (cpuinfo "flags", no MIDR fields): the facts stay as
 *    they were;
 *  - the words given as hwcap: isa_flags names "hwcap" as the source.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "facts.h"
#include "ternbench.h"
#include "tmpdir.h"

static void put(const char *rel, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s%s", tmpdir, rel);
    for (char *q = p + strlen(tmpdir) + 1; *q; q++)
        if (*q == '/') { *q = '\0'; mkdir(p, 0755); *q = '/'; }
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) { (void)state; return tmpdir_make("facts"); }

static void blank(tb_host_facts_t *h) {
    memset(h, 0, sizeof *h);
    snprintf(h->cpu_vendor, sizeof h->cpu_vendor, "before");
    snprintf(h->cpu_brand, sizeof h->cpu_brand, "before");
    snprintf(h->isa_flags, sizeof h->isa_flags, "before");
    h->cpu_model = h->cores = -1;
}

static void test_phone(void **state) {
    (void)state;
    char info[8192] = "", rel[128];
    for (int n = 0; n < 8; n++) {
        size_t l = strlen(info);
        snprintf(info + l, sizeof info - l, "processor\t: %d\nFeatures\t: fp asimd asimddp\n"
                 "CPU implementer\t: 0x41\nCPU part\t: 0x%03x\n\n", n, n < 6 ? 0xd05 : 0xd41);
        snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu%d/cpu_capacity", n);
        put(rel, n < 6 ? "414\n" : "1024\n");
    }
    put("/proc/cpuinfo", info);
    tb_cpu_topo_t t;
    assert_int_equal(tb_cpu_topo_read(tmpdir, 0, 0, &t), TB_OK);
    tb_host_facts_t h;
    blank(&h);
    tb_facts_host_arm(&t, &h);
    assert_string_equal(h.cpu_vendor, "ARM");
    assert_int_equal(h.cpu_model, 0xd41);
    assert_string_equal(h.cpu_brand, "2x Cortex-A78 (cap 1024) + 6x Cortex-A55 (cap 414)");
    assert_string_equal(h.isa_flags, "asimd dotprod (cpuinfo)");
    assert_int_equal(h.cores, 8);

    assert_int_equal(tb_cpu_topo_read(tmpdir, 1ull << 1, 0, &t), TB_OK);
    blank(&h);
    tb_facts_host_arm(&t, &h);
    assert_string_equal(h.isa_flags, "asimd (hwcap)");
}

static void test_x86_tree(void **state) {
    (void)state;
    put("/proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx2\n\n"
                         "processor\t: 1\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx2\n\n");
    tb_cpu_topo_t t;
    assert_int_equal(tb_cpu_topo_read(tmpdir, 0, 0, &t), TB_OK);
    assert_int_equal(t.n_cpus, 2);
    tb_host_facts_t h;
    blank(&h);
    tb_facts_host_arm(&t, &h);
    assert_string_equal(h.cpu_vendor, "before");
    assert_string_equal(h.cpu_brand, "before");
    assert_string_equal(h.isa_flags, "before");
    assert_int_equal(h.cores, -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_phone, setup, tmpdir_teardown),
        cmocka_unit_test_setup_teardown(test_x86_tree, setup, tmpdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
