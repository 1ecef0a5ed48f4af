/*
 * test_sensors.c — sensor discovery and sampling over a fake sysfs tree
 * (VMs have none), RAPL counter wrap, absent families with reasons, the
 * thermal verdict rules, and the reference workload; a phone's tree:
 * per-cluster cpufreq policies and the battery's temperature, current,
 * voltage and power (their units and scales, unreadable and partial
 * batteries).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sensors.h"
#include "ternbench.h"
#include "tmpdir.h"

/* Write TEXT to ROOT/REL, creating directories. */
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

static int setup(void **state) {
    (void)state;
    return tmpdir_make("sensors");
}

static int find(const tb_sensors_t *s, const char *name) {
    for (int i = 0; i < tb_sensors_count(s); i++)
        if (!strcmp(tb_sensors_name(s, i), name)) return i;
    return -1;
}

static void test_fake_sysfs(void **state) {
    (void)state;
    put("/sys/class/thermal/thermal_zone0/temp", "45000\n");
    put("/sys/class/thermal/thermal_zone1/temp", "52500\n");
    put("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "2400000\n");
    put("/sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "1200000\n");
    put("/sys/class/powercap/intel-rapl:0/energy_uj", "1000000\n");
    put("/sys/class/powercap/intel-rapl:0/max_energy_range_uj", "2000000\n");
    put("/sys/class/powercap/intel-rapl:0/name", "package-0\n");
    char dir[600];   /* a hwmon input that cannot be read as a number */
    snprintf(dir, sizeof dir, "%s/sys/class/hwmon/hwmon0/temp1_input", tmpdir);
    put("/sys/class/hwmon/hwmon0/name", "k10temp\n");
    assert_int_equal(mkdir(dir, 0755), 0);

    tb_sensors_t *s;
    assert_int_equal(tb_sensors_start_at(tmpdir, 0, tb_now_ns(), &s), TB_OK);
    assert_int_equal(tb_sensors_count(s), 5);
    int z1 = find(s, "thermal_zone1"), c0 = find(s, "cpu0_freq"), r = find(s, "rapl_0_package-0_energy");
    assert_true(z1 >= 0 && c0 >= 0 && r >= 0);
    assert_string_equal(tb_sensors_unit(s, z1), "C");
    assert_string_equal(tb_sensors_unit(s, c0), "MHz");
    assert_string_equal(tb_sensors_unit(s, r), "J");
    assert_int_equal(tb_sensors_absent_count(s), 3);   /* hwmon, and no phone's policies or battery */
    const char *fam, *why;
    tb_sensors_absent(s, 0, &fam, &why);
    assert_string_equal(fam, "hwmon_temp");
    assert_non_null(strstr(why, "1 found, none readable"));
    tb_sensors_absent(s, 1, &fam, &why);
    assert_string_equal(fam, "cpufreq_policy");
    tb_sensors_absent(s, 2, &fam, &why);
    assert_string_equal(fam, "battery");
    assert_non_null(strstr(why, "no /sys/class/power_supply/battery"));

    assert_float_equal(tb_sensors_temp_c(s), 52.5, 1e-9);         /* hottest */
    assert_float_equal(tb_sensors_freq_mhz(s), 1800.0, 1e-9);      /* mean */
    assert_float_equal(tb_sensors_energy_j(s), 0.0, 1e-12);        /* since start */
    put("/sys/class/powercap/intel-rapl:0/energy_uj", "1500000\n");
    assert_float_equal(tb_sensors_energy_j(s), 0.5, 1e-9);
    put("/sys/class/powercap/intel-rapl:0/energy_uj", "200000\n");  /* wrapped at 2e6 uJ */
    assert_float_equal(tb_sensors_energy_j(s), 1.2, 1e-9);
    tb_sensors_stop(s);

    /* with the thread: samples arrive for every sensor, timestamps ordered */
    assert_int_equal(tb_sensors_start_at(tmpdir, 10, tb_now_ns(), &s), TB_OK);
    struct timespec ts = {0, 80 * 1000000L};
    nanosleep(&ts, NULL);
    tb_sensor_sample_t *smp;
    size_t n = tb_sensors_drain(s, &smp);
    assert_true(n >= 5);
    int seen[8] = {0};
    for (size_t i = 0; i < n; i++) {
        assert_true(smp[i].sensor >= 0 && smp[i].sensor < 5);
        seen[smp[i].sensor] = 1;
        if (i) assert_true(smp[i].t_ns >= smp[i - 1].t_ns);
        if (smp[i].sensor == c0) assert_float_equal(smp[i].value, 2400.0, 1e-9);
    }
    for (int i = 0; i < 5; i++) assert_true(seen[i]);
    free(smp);
    tb_sensors_stop(s);

    /* an empty root: every family absent, nothing sampled */
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty", tmpdir);
    mkdir(empty, 0755);
    assert_int_equal(tb_sensors_start_at(empty, 10, tb_now_ns(), &s), TB_OK);
    assert_int_equal(tb_sensors_count(s), 0);
    assert_int_equal(tb_sensors_absent_count(s), 6);
    assert_true(tb_sensors_energy_j(s) < 0);
    assert_true(tb_sensors_freq_mhz(s) < 0);
    tb_sensors_stop(s);
}

/* A phone: three cpufreq policies (clusters) and a discharging battery
 * (Android's units: tenths of a degree, uA with a negative sign, uV). */
static void test_phone_sysfs(void **state) {
    (void)state;
    char root[300];
    snprintf(root, sizeof root, "%s/phone", tmpdir);
    mkdir(root, 0755);
    put("/phone/sys/devices/system/cpu/cpufreq/policy0/scaling_cur_freq", "1804800\n");
    put("/phone/sys/devices/system/cpu/cpufreq/policy4/scaling_cur_freq", "2499000\n");
    put("/phone/sys/devices/system/cpu/cpufreq/policy7/scaling_cur_freq", "3302400\n");
    put("/phone/sys/devices/system/cpu/cpufreq/policy7/scaling_max_freq", "3302400\n");
    put("/phone/sys/class/power_supply/battery/temp", "312\n");
    put("/phone/sys/class/power_supply/battery/current_now", "-1250000\n");
    put("/phone/sys/class/power_supply/battery/voltage_now", "3950000\n");
    tb_sensors_t *s;
    assert_int_equal(tb_sensors_start_at(root, 0, tb_now_ns(), &s), TB_OK);
    assert_int_equal(tb_sensors_count(s), 7);
    const struct { const char *name, *unit; double v; } want[] = {
        {"policy0_freq", "MHz", 1804.8}, {"policy4_freq", "MHz", 2499.0}, {"policy7_freq", "MHz", 3302.4},
        {"battery_temp", "C", 31.2},     {"battery_current", "mA", -1250.0}, {"battery_voltage", "V", 3.95},
        {"battery_power", "W", 1.25 * 3.95},
    };
    /* the values through the sampler thread */
    tb_sensors_stop(s);
    assert_int_equal(tb_sensors_start_at(root, 10, tb_now_ns(), &s), TB_OK);
    struct timespec ts = {0, 60 * 1000000L};
    nanosleep(&ts, NULL);
    tb_sensor_sample_t *smp;
    const size_t n = tb_sensors_drain(s, &smp);
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const int i = find(s, want[k].name);
        if (i < 0) fail_msg("no sensor %s", want[k].name);
        assert_string_equal(tb_sensors_unit(s, i), want[k].unit);
        int got = 0;
        for (size_t j = 0; j < n; j++)
            if (smp[j].sensor == i) { assert_float_equal(smp[j].value, want[k].v, 1e-9); got++; }
        if (!got) fail_msg("no sample of %s", want[k].name);
    }
    free(smp);
    /* per-cpu frequencies, thermal zones, hwmon and RAPL absent; no battery family absent */
    assert_int_equal(tb_sensors_absent_count(s), 4);
    for (int a = 0; a < tb_sensors_absent_count(s); a++) {
        const char *fam, *why;
        tb_sensors_absent(s, a, &fam, &why);
        assert_true(strcmp(fam, "battery") && strcmp(fam, "cpufreq_policy"));
    }
    assert_true(tb_sensors_freq_mhz(s) < 0);   /* the mean is over cpuN_freq only */
    tb_sensors_stop(s);

    /* a battery with temp alone: no current, voltage or power sensors */
    put("/phone/sys/class/power_supply/battery/current_now", "n/a\n");
    assert_int_equal(tb_sensors_start_at(root, 0, tb_now_ns(), &s), TB_OK);
    assert_true(find(s, "battery_temp") >= 0);
    assert_true(find(s, "battery_current") < 0 && find(s, "battery_power") < 0);
    assert_true(find(s, "battery_voltage") >= 0);
    tb_sensors_stop(s);
    /* none readable: absent with the reason */
    put("/phone/sys/class/power_supply/battery/temp", "\n");
    put("/phone/sys/class/power_supply/battery/voltage_now", "x\n");
    assert_int_equal(tb_sensors_start_at(root, 0, tb_now_ns(), &s), TB_OK);
    assert_true(find(s, "battery_temp") < 0);
    bool absent = false;
    for (int a = 0; a < tb_sensors_absent_count(s); a++) {
        const char *fam, *why;
        tb_sensors_absent(s, a, &fam, &why);
        if (!strcmp(fam, "battery")) { absent = true; assert_non_null(strstr(why, "3 found, none readable")); }
    }
    assert_true(absent);
    tb_sensors_stop(s);
}

/* Steal time from a fake /proc/stat: the aggregate "cpu " line's 8th
 * field over the sum of its first 8; malformed or missing input is -1. */
static void test_steal(void **state) {
    (void)state;
    uint64_t st = 7, tot = 7;
    put("/proc/stat", "cpu  100 5 50 800 10 0 5 30 0 0\ncpu0 50 2 25 400 5 0 2 15 0 0\n");
    assert_int_equal(tb_sensors_steal_read(tmpdir, &st, &tot), 0);
    assert_int_equal(st, 30);
    assert_int_equal(tot, 1000);
    assert_float_equal(tb_sensors_steal_pct(30, 1000, 50, 1100), 20.0, 1e-9);
    assert_true(isnan(tb_sensors_steal_pct(30, 1000, 30, 1000)));   /* no tick passed */
    assert_true(isnan(tb_sensors_steal_pct(30, 1000, 20, 1100)));   /* a counter went back */
    put("/proc/stat", "cpu  100 5 50 800 10 0 5\n");               /* no steal field */
    assert_int_equal(tb_sensors_steal_read(tmpdir, &st, &tot), -1);
    put("/proc/stat", "cpu0 100 5 50 800 10 0 5 30\n");            /* no aggregate line first */
    assert_int_equal(tb_sensors_steal_read(tmpdir, &st, &tot), -1);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/nowhere", tmpdir);
    assert_int_equal(tb_sensors_steal_read(missing, &st, &tot), -1);
    /* this machine's own, where Linux has it */
    if (tb_sensors_steal_read("", &st, &tot) == 0) assert_true(st <= tot && tot > 0);
}

static void test_verdict(void **state) {
    (void)state;
    /* frequency decides where present: 2400 MHz -> 10 % threshold 2160 */
    assert_string_equal(tb_thermal_verdict(2400, 2100, 1, 5, 10), "throttled");
    assert_string_equal(tb_thermal_verdict(2400, 2200, 1, 5, 10), "nominal");
    /* else the reference workload: 10 ms -> 10 % threshold 11 ms */
    assert_string_equal(tb_thermal_verdict(-1, -1, 10, 11.5, 10), "throttled");
    assert_string_equal(tb_thermal_verdict(-1, -1, 10, 10.9, 10), "nominal");
    assert_string_equal(tb_thermal_verdict(-1, -1, 10, 9, 10), "nominal");
    assert_string_equal(tb_thermal_verdict(-1, -1, -1, -1, 10), "unknown");
}

static void test_refwork(void **state) {
    (void)state;
    double a = tb_refwork_ms(3);
    assert_true(a > 0 && a < 1000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_sysfs),
        cmocka_unit_test(test_phone_sysfs),
        cmocka_unit_test(test_steal),
        cmocka_unit_test(test_verdict),
        cmocka_unit_test(test_refwork),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
