/*
 * test_cputopo.c — CPU features and core kinds from fake /proc and /sys
 * trees (util/cputopo.c), on any host:
 *  - a 1+3+4 phone (Cortex-X4, A720, A520 with capacities and top clocks,
 *    cpuinfo blocks in another order than the sysfs directories): kinds
 *    fastest first with their counts, names and values, each core's kind,
 *    the summary, and the default placement (performance cores first);
 *  - a board of four equal cores without cpu_capacity (Raspberry Pi 5):
 *    one kind, capacity unknown, the placement capped at 4;
 *  - features from the hwcap words (each bit alone) and, with both words
 *    0, from cpuinfo's Features line (word boundaries: "sve2" alone is not
 *    "sve", "asimddp" is not "asimd");
 *  - an empty root: nothing found, no failure; garbage in the files:
 *    unknown values; an unlisted MIDR part: named by its numbers;
 *  - macOS sysctl text (an M4's 4 performance + 6 efficiency cores, its
 *    FEAT_ flags): features, the levels as kinds in level order, the
 *    placement on the performance cores first; a key that is only a
 *    prefix of another ("hw.optional.arm.FEAT_SVE" vs "..._SVE2") is not
 *    taken for it; empty text: nothing found.
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

#include "ternbench.h"

static char root[256];

/* Write text to root/rel, creating directories. */
static void put(const char *rel, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s%s", root, rel);
    for (char *q = p + strlen(root) + 1; *q; q++)
        if (*q == '/') { *q = '\0'; mkdir(p, 0755); *q = '/'; }
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int fresh_root(void **state) {
    (void)state;
    snprintf(root, sizeof root, "/tmp/tb_cputopo_XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int drop_root(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* One cpuinfo block. */
static void block(char *buf, size_t cap, int n, int impl, int part) {
    size_t l = strlen(buf);
    snprintf(buf + l, cap - l,
             "processor\t: %d\nBogoMIPS\t: 38.40\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics "
             "fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp i8mm bf16 sve2\nCPU implementer\t: 0x%02x\n"
             "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0x%03x\nCPU revision\t: 1\n\n",
             n, impl, part);
}

static void cpu_sysfs(int n, const char *cap, const char *khz) {
    char rel[128];
    if (cap) {
        snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu%d/cpu_capacity", n);
        put(rel, cap);
    }
    snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", n);
    put(rel, khz);
}

static void test_phone(void **state) {
    (void)state;
    /* cpu0-3 A520 (little), cpu4-6 A720, cpu7 X4: as phones number them */
    char info[8192] = "";
    const int order[8] = {7, 0, 1, 2, 3, 4, 5, 6};   /* cpuinfo in another order */
    for (int i = 0; i < 8; i++) {
        const int n = order[i];
        block(info, sizeof info, n, 0x41, n < 4 ? 0xd80 : n < 7 ? 0xd81 : 0xd82);
        cpu_sysfs(n, n < 4 ? "250\n" : n < 7 ? "870\n" : "1024\n", n < 4 ? "2265600\n" : n < 7 ? "2956800\n" : "3302400\n");
    }
    put("/proc/cpuinfo", info);
    put("/sys/devices/system/cpu/online", "0-7\n");   /* not a cpuN directory */
    tb_cpu_topo_t t;
    assert_int_equal(tb_cpu_topo_read(root, 0, 0, &t), TB_OK);
    assert_int_equal(t.n_cpus, 8);
    for (int i = 0; i < 8; i++) assert_int_equal(t.cpu[i].cpu, i);
    assert_int_equal(t.n_kinds, 3);
    assert_string_equal(t.kind[0].name, "Cortex-X4");
    assert_int_equal(t.kind[0].n, 1);
    assert_int_equal(t.kind[0].capacity, 1024);
    assert_int_equal(t.kind[0].max_khz, 3302400);
    assert_int_equal(t.kind[0].implementer, 0x41);
    assert_int_equal(t.kind[0].part, 0xd82);
    assert_string_equal(t.kind[1].name, "Cortex-A720");
    assert_int_equal(t.kind[1].n, 3);
    assert_string_equal(t.kind[2].name, "Cortex-A520");
    assert_int_equal(t.kind[2].n, 4);
    assert_int_equal(t.kind[2].capacity, 250);
    assert_int_equal(t.cpu[7].kind, 0);
    assert_int_equal(t.cpu[5].kind, 1);
    assert_int_equal(t.cpu[0].kind, 2);
    assert_string_equal(t.summary, "1x Cortex-X4 (cap 1024, 3.30 GHz) + 3x Cortex-A720 (cap 870, 2.96 GHz) + "
                                   "4x Cortex-A520 (cap 250, 2.27 GHz)");
    /* features from cpuinfo when the hwcap words are 0 */
    assert_string_equal(t.features_from, "cpuinfo");
    assert_true(t.asimd && t.dotprod && t.i8mm && t.bf16 && t.sve2);
    assert_false(t.sve);   /* "sve2" is not "sve" */
    assert_false(t.sme);
    assert_string_equal(t.features, "asimd dotprod i8mm bf16 sve2");

    int32_t cpus[16];
    assert_int_equal(tb_cpu_topo_pick(&t, 4, cpus), 4);
    assert_int_equal(cpus[0], 7);   /* the X4, then the A720s in order */
    assert_int_equal(cpus[1], 4);
    assert_int_equal(cpus[2], 5);
    assert_int_equal(cpus[3], 6);
    assert_int_equal(tb_cpu_topo_pick(&t, 16, cpus), 8);
    assert_int_equal(cpus[7], 3);
    assert_int_equal(tb_cpu_topo_pick(&t, 0, cpus), TB_ERR_ARG);
}

static void test_board(void **state) {
    (void)state;
    char info[4096] = "";
    for (int n = 0; n < 4; n++) {
        block(info, sizeof info, n, 0x41, 0xd0b);
        cpu_sysfs(n, NULL, "2400000\n");
    }
    put("/proc/cpuinfo", info);
    tb_cpu_topo_t t;
    assert_int_equal(tb_cpu_topo_read(root, 0, 0, &t), TB_OK);
    assert_int_equal(t.n_cpus, 4);
    assert_int_equal(t.n_kinds, 1);
    assert_string_equal(t.kind[0].name, "Cortex-A76");
    assert_int_equal(t.kind[0].capacity, -1);
    assert_string_equal(t.summary, "4x Cortex-A76 (2.40 GHz)");
    int32_t cpus[8];
    assert_int_equal(tb_cpu_topo_pick(&t, 8, cpus), 4);
    assert_int_equal(cpus[0], 0);
    assert_int_equal(cpus[3], 3);
}

static void test_hwcap_bits(void **state) {
    (void)state;
    /* the tree's Features line says everything; the words win */
    char info[2048] = "";
    block(info, sizeof info, 0, 0x41, 0xd0b);
    put("/proc/cpuinfo", info);
    tb_cpu_topo_t t;
    assert_int_equal(tb_cpu_topo_read(root, 1ull << 1, 0, &t), TB_OK);
    assert_string_equal(t.features_from, "hwcap");
    assert_true(t.asimd);
    assert_false(t.dotprod || t.i8mm || t.bf16 || t.sve || t.sve2 || t.sme);
    assert_string_equal(t.features, "asimd");
    const struct { uint64_t w1, w2; const char *want; } one[] = {
        {1ull << 20, 0, "dotprod"}, {1ull << 22, 0, "sve"}, {0, 1ull << 1, "sve2"},
        {0, 1ull << 13, "i8mm"},    {0, 1ull << 14, "bf16"}, {0, 1ull << 23, "sme"},
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        assert_int_equal(tb_cpu_topo_read(root, one[i].w1, one[i].w2, &t), TB_OK);
        assert_string_equal(t.features, one[i].want);
    }
    assert_int_equal(tb_cpu_topo_read(root, ~0ull, ~0ull, &t), TB_OK);
    assert_string_equal(t.features, "asimd dotprod i8mm bf16 sve sve2 sme");
    /* Features without asimddp: no dotprod; "asimddp" alone is not "asimd" */
    put("/proc/cpuinfo", "processor\t: 0\nFeatures\t: fp asimd evtstrm\n\n");
    assert_int_equal(tb_cpu_topo_read(root, 0, 0, &t), TB_OK);
    assert_true(t.asimd);
    assert_false(t.dotprod);
    put("/proc/cpuinfo", "processor\t: 0\nFeatures\t: fp asimddp\n\n");
    assert_int_equal(tb_cpu_topo_read(root, 0, 0, &t), TB_OK);
    assert_true(t.dotprod);
    assert_false(t.asimd);
}

static void test_empty_and_garbage(void **state) {
    (void)state;
    tb_cpu_topo_t t;
    assert_int_equal(tb_cpu_topo_read(root, 0, 0, &t), TB_OK);   /* nothing there */
    assert_int_equal(t.n_cpus, 0);
    assert_int_equal(t.n_kinds, 0);
    assert_string_equal(t.features_from, "");
    assert_string_equal(t.summary, "");
    int32_t cpus[2];
    assert_int_equal(tb_cpu_topo_pick(&t, 2, cpus), 0);

    put("/proc/cpuinfo", "processor : x\nCPU part : 0xd0b\n\nprocessor\t: 1\nCPU implementer\t: 0x99\n"
                         "CPU part\t: 0x123\n\n");
    put("/sys/devices/system/cpu/cpu1/cpu_capacity", "fast\n");
    put("/sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq", "");
    put("/sys/devices/system/cpu/cpufreq/policy0/x", "1\n");   /* cpufreq: not a cpuN */
    assert_int_equal(tb_cpu_topo_read(root, 0, 0, &t), TB_OK);
    assert_int_equal(t.n_cpus, 1);   /* "processor : x" names no core */
    assert_int_equal(t.cpu[0].cpu, 1);
    assert_int_equal(t.cpu[0].capacity, -1);
    assert_int_equal(t.cpu[0].max_khz, -1);
    assert_string_equal(t.kind[0].name, "0x99:0x123");
    assert_null(tb_cpu_midr_name(0x99, 0x123));
    assert_string_equal(tb_cpu_midr_name(0x41, 0xd05), "Cortex-A55");
    assert_int_equal(tb_cpu_topo_read(root, 0, 0, NULL), TB_ERR_ARG);
}

static void test_sysctl(void **state) {
    (void)state;
    const char *m4 = "hw.optional.AdvSIMD: 1\nhw.optional.arm.FEAT_DotProd: 1\nhw.optional.arm.FEAT_I8MM: 1\n"
                     "hw.optional.arm.FEAT_BF16: 1\nhw.optional.arm.FEAT_SME: 1\nhw.optional.arm.FEAT_SVE2: 0\n"
                     "hw.nperflevels: 2\nhw.perflevel0.logicalcpu: 4\nhw.perflevel0.name: Performance\n"
                     "hw.perflevel1.logicalcpu: 6\nhw.perflevel1.name: Efficiency\n";
    tb_cpu_topo_t t;
    assert_int_equal(tb_cpu_topo_from_sysctl(m4, &t), TB_OK);
    assert_string_equal(t.features_from, "sysctl");
    assert_string_equal(t.features, "asimd dotprod i8mm bf16 sme");
    assert_int_equal(t.n_cpus, 10);
    assert_int_equal(t.n_kinds, 2);
    assert_string_equal(t.kind[0].name, "Performance");
    assert_int_equal(t.kind[0].n, 4);
    assert_string_equal(t.kind[1].name, "Efficiency");
    assert_int_equal(t.kind[1].n, 6);
    assert_int_equal(t.cpu[3].kind, 0);
    assert_int_equal(t.cpu[4].kind, 1);
    assert_string_equal(t.summary, "4x Performance + 6x Efficiency");
    int32_t cpus[4];
    assert_int_equal(tb_cpu_topo_pick(&t, 4, cpus), 4);
    assert_int_equal(cpus[3], 3);
    /* FEAT_SVE absent: "FEAT_SVE2: 1" alone does not set sve */
    assert_int_equal(tb_cpu_topo_from_sysctl("hw.optional.arm.FEAT_SVE2: 1\nhw.optional.neon=1", &t), TB_OK);
    assert_true(t.sve2 && t.asimd);
    assert_false(t.sve);
    assert_int_equal(tb_cpu_topo_from_sysctl("", &t), TB_OK);
    assert_int_equal(t.n_cpus, 0);
    assert_string_equal(t.features_from, "");
    assert_int_equal(tb_cpu_topo_from_sysctl(NULL, &t), TB_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_phone, fresh_root, drop_root),
        cmocka_unit_test_setup_teardown(test_board, fresh_root, drop_root),
        cmocka_unit_test_setup_teardown(test_hwcap_bits, fresh_root, drop_root),
        cmocka_unit_test_setup_teardown(test_empty_and_garbage, fresh_root, drop_root),
        cmocka_unit_test(test_sysctl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
