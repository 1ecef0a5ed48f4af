/*
 * sensors.h — the thermal / frequency / energy sampler thread, and the
 * fixed reference workload used to detect throttling where sensors are
 * absent (VMs).
 *
 * Sensors (Linux sysfs), found once at start:
 *   thermal_zoneN      /sys/class/thermal/thermal_zoneN/temp        C
 *   hwmonN_NAME_tempK  /sys/class/hwmon/hwmonN/tempK_input          C
 *   cpuN_freq          /sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq  MHz
 *   rapl_NAME_energy   /sys/class/powercap/intel-rapl:*\/energy_uj  J (since start, wrap-corrected)
 *   policyN_freq       /sys/devices/system/cpu/cpufreq/policyN/scaling_cur_freq  MHz (one per
 *                      cluster: a phone's prime, performance and efficiency cores)
 *   battery_temp       /sys/class/power_supply/battery/temp         C (tenths in the file)
 *   battery_current    .../battery/current_now                      mA (the driver's sign)
 *   battery_voltage    .../battery/voltage_now                      V
 *   battery_power      |current_now x voltage_now|                  W
 * A sensor family that does not exist or cannot be read is reported as
 * absent with the reason, never sampled as zero.
 */
#ifndef TB_HARNESS_SENSORS_H
#define TB_HARNESS_SENSORS_H

#include <stddef.h>
#include <stdint.h>

typedef struct tb_sensors tb_sensors_t;

typedef struct tb_sensor_sample {
    int64_t t_ns;           /* since the t0 given at start */
    int sensor;             /* index, see tb_sensors_name   */
    double value;
} tb_sensor_sample_t;

/* Find sensors and start sampling every interval_ms (0: find only, no thread). */
int  tb_sensors_start(int interval_ms, uint64_t t0_ns, tb_sensors_t **out);
/* Same under another filesystem root ("" = "/"), for tests with a fake sysfs. */
int  tb_sensors_start_at(const char *root, int interval_ms, uint64_t t0_ns, tb_sensors_t **out);
/* Stop the thread (if any) and free. */
void tb_sensors_stop(tb_sensors_t *s);

int tb_sensors_count(const tb_sensors_t *s);
const char *tb_sensors_name(const tb_sensors_t *s, int i);
const char *tb_sensors_unit(const tb_sensors_t *s, int i);
int tb_sensors_absent_count(const tb_sensors_t *s);
void tb_sensors_absent(const tb_sensors_t *s, int i, const char **family, const char **reason);

/* Move the samples collected so far into *out (malloc'd, caller frees);
 * returns the count (0: *out == NULL). */
size_t tb_sensors_drain(tb_sensors_t *s, tb_sensor_sample_t **out);

/* Read now: total RAPL energy in J since start (< 0: no RAPL); mean current
 * CPU frequency in MHz (< 0: no cpufreq); hottest temperature in C (< 0: none). */
double tb_sensors_energy_j(tb_sensors_t *s);
double tb_sensors_freq_mhz(tb_sensors_t *s);
double tb_sensors_temp_c(tb_sensors_t *s);

/* Thermal verdict of a test: "throttled", "nominal" or "unknown".
 * Frequency decides where it was readable (f0 > 0: at the start, f_min: the
 * lowest seen during the test): throttled when f_min < f0 * (1 - pct/100).
 * Otherwise the reference workload (ref0 > 0: before, ref_worst: slowest
 * during/after): throttled when ref_worst > ref0 * (1 + pct/100). */
const char *tb_thermal_verdict(double f0, double f_min, double ref0, double ref_worst, double pct);

/* The machine's CPU time so far from ROOT/proc/stat ("" = "/"): *steal
 * the ticks a hypervisor ran something else on our vCPUs (steal), *total
 * all ticks (user, nice, system, idle, iowait, irq, softirq, steal), over
 * every CPU. 0 on success; -1 when the file or its "cpu " line cannot be
 * read or parsed (errno set), e.g. on a kernel without steal accounting. */
int tb_sensors_steal_read(const char *root, uint64_t *steal, uint64_t *total);

/* The share of CPU time stolen between two tb_sensors_steal_read readings, in
 * %; NAN when no tick passed. */
double tb_sensors_steal_pct(uint64_t steal0, uint64_t total0, uint64_t steal1, uint64_t total1);

/* The reference workload: a fixed, dependent integer/FP chain (~1-2 ms),
 * best of `reps` timings, in ms. Same work every call. */
double tb_refwork_ms(int reps);

#endif
