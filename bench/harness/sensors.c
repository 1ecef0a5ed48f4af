/*
 * sensors.c — sysfs sensor discovery, the sampler thread, the reference
 * workload (see sensors.h).
 */
#include "sensors.h"
#include "tbutil.h"
#include "ternbench.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { FAM_THERMAL, FAM_HWMON, FAM_FREQ, FAM_RAPL, FAM_POLICY, FAM_BATTERY, FAM_COUNT };
static const char *const fam_names[FAM_COUNT] = {"thermal_zone", "hwmon_temp", "cpufreq", "rapl",
                                                 "cpufreq_policy", "battery"};

typedef struct sensor {
    char name[96];
    char path[512];
    char path2[512];        /* battery power: voltage_now beside path's current_now */
    const char *unit;
    int fam;
    double scale;           /* raw -> unit                          */
    double rapl_range;      /* max_energy_range_uj (RAPL only)       */
    double rapl_first, rapl_last, rapl_acc;   /* raw uj, wrap-corrected accumulation */
} sensor_t;

struct tb_sensors {
    sensor_t *s;
    int n;
    struct { int fam; char reason[160]; } absent[FAM_COUNT];
    int n_absent;
    uint64_t t0;
    int interval_ms;
    pthread_t thread;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    tb_sensor_sample_t *buf;
    size_t n_buf, cap_buf;
};

/* ===================================================================== */
/* Discovery                                                              */
/* ===================================================================== */

/* Read a sysfs number; 0 on success. */
static int read_num(const char *path, double *out) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[64];
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok) { errno = EIO; return -1; }
    char *end;
    double v = strtod(line, &end);
    if (end == line) { errno = EINVAL; return -1; }
    *out = v;
    return 0;
}

static void read_word(const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(buf, (int)cap, f)) buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
    for (char *p = buf; *p; p++)
        if (*p == ' ' || *p == '/' || *p == ':') *p = '_';
}

static const char *fam_unit(int fam) {
    switch (fam) {
    case FAM_FREQ: case FAM_POLICY: return "MHz";
    case FAM_RAPL: return "J";
    default: return "C";
    }
}

static int add_sensor(tb_sensors_t *s, int fam, const char *name, const char *path, double scale) {
    sensor_t *ns = realloc(s->s, (size_t)(s->n + 1) * sizeof *ns);
    if (!ns) return -1;
    s->s = ns;
    sensor_t *x = &s->s[s->n++];
    memset(x, 0, sizeof *x);
    x->fam = fam;
    x->scale = scale;
    x->unit = fam_unit(fam);
    snprintf(x->name, sizeof x->name, "%s", name);
    snprintf(x->path, sizeof x->path, "%s", path);
    return 0;
}

/* Glob one family under root; every readable match becomes a sensor. */
static void discover(tb_sensors_t *s, const char *root, int fam, const char *rel) {
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%s%s", root, rel);
    glob_t g;
    int found = 0, readable = 0, last_errno = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            const char *p = g.gl_pathv[i];
            found++;
            double v;
            if (read_num(p, &v) != 0) { last_errno = errno; continue; }
            char name[96] = "", dir[512], extra[64];
            snprintf(dir, sizeof dir, "%s", p);
            *strrchr(dir, '/') = '\0';
            const char *base = strrchr(dir, '/') + 1;
            double scale = 1;
            switch (fam) {
            case FAM_THERMAL: snprintf(name, sizeof name, "%s", base); scale = 1e-3; break;
            case FAM_HWMON: {
                char np[600];
                snprintf(np, sizeof np, "%s/name", dir);
                read_word(np, extra, sizeof extra);
                const char *file = strrchr(p, '/') + 1;
                snprintf(name, sizeof name, "%s_%s_%.*s", base, extra[0] ? extra : "x",
                         (int)strcspn(file, "_"), file);
                scale = 1e-3;
                break;
            }
            case FAM_FREQ: {
                /* .../cpuN/cpufreq/scaling_cur_freq: name from the cpuN component */
                char tmp[512];
                snprintf(tmp, sizeof tmp, "%s", dir);
                *strrchr(tmp, '/') = '\0';
                snprintf(name, sizeof name, "%s_freq", strrchr(tmp, '/') + 1);
                scale = 1e-3;   /* kHz -> MHz */
                break;
            }
            case FAM_POLICY:   /* .../cpufreq/policyN/scaling_cur_freq: one per cluster */
                snprintf(name, sizeof name, "%s_freq", base);
                scale = 1e-3;   /* kHz -> MHz */
                break;
            case FAM_RAPL: {
                char np[600];
                snprintf(np, sizeof np, "%s/name", dir);
                read_word(np, extra, sizeof extra);
                snprintf(name, sizeof name, "rapl_%s_%s_energy", base + strcspn(base, ":") + 1,
                         extra[0] ? extra : "x");
                for (char *q = name; *q; q++) if (*q == ':') *q = '_';
                scale = 1e-6;   /* uJ -> J */
                break;
            }
            }
            if (add_sensor(s, fam, name, p, scale) != 0) break;
            if (fam == FAM_RAPL) {
                sensor_t *x = &s->s[s->n - 1];
                char rp[600];
                snprintf(rp, sizeof rp, "%s/max_energy_range_uj", dir);
                if (read_num(rp, &x->rapl_range) != 0) x->rapl_range = 0;
                x->rapl_first = x->rapl_last = v;
            }
            readable++;
        }
        globfree(&g);
    }
    if (readable == 0) {
        int a = s->n_absent++;
        s->absent[a].fam = fam;
        if (found == 0) snprintf(s->absent[a].reason, sizeof s->absent[a].reason, "no %s", rel);
        else snprintf(s->absent[a].reason, sizeof s->absent[a].reason, "%d found, none readable: %s",
                      found, strerror(last_errno));
    }
}

/* The battery (Android, Linux laptops): ROOT/sys/class/power_supply/
 * battery/ temp in tenths of a degree C, current_now in uA (its sign
 * follows the driver: discharging is negative on most phones, positive
 * on some), voltage_now in uV; with both of the last two, their product
 * as battery_power in W (its magnitude: the sign is the driver's). */
static void discover_battery(tb_sensors_t *s, const char *root) {
    char dir[400], p[512], p2[512];
    snprintf(dir, sizeof dir, "%s/sys/class/power_supply/battery", root);
    static const struct { const char *file, *name, *unit; double scale; } f[] = {
        {"temp", "battery_temp", "C", 0.1},
        {"current_now", "battery_current", "mA", 1e-3},
        {"voltage_now", "battery_voltage", "V", 1e-6},
    };
    int readable = 0, found = 0, last_errno = ENOENT;
    bool have[3] = {false};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, f[i].file);
        double v;
        if (read_num(p, &v) != 0) {
            if (errno != ENOENT) { found++; last_errno = errno; }
            continue;
        }
        found++;
        if (add_sensor(s, FAM_BATTERY, f[i].name, p, f[i].scale) != 0) return;
        s->s[s->n - 1].unit = f[i].unit;
        have[i] = true;
        readable++;
    }
    if (have[1] && have[2]) {
        snprintf(p, sizeof p, "%s/current_now", dir);
        snprintf(p2, sizeof p2, "%s/voltage_now", dir);
        if (add_sensor(s, FAM_BATTERY, "battery_power", p, 1e-12) == 0) {   /* uA * uV -> W */
            memcpy(s->s[s->n - 1].path2, p2, sizeof p2);
            s->s[s->n - 1].unit = "W";
        }
    }
    if (readable == 0) {
        int a = s->n_absent++;
        s->absent[a].fam = FAM_BATTERY;
        if (found == 0) snprintf(s->absent[a].reason, sizeof s->absent[a].reason,
                                 "no /sys/class/power_supply/battery/{temp,current_now,voltage_now}");
        else snprintf(s->absent[a].reason, sizeof s->absent[a].reason, "%d found, none readable: %s", found,
                      strerror(last_errno));
    }
}

/* ===================================================================== */
/* Sampling                                                               */
/* ===================================================================== */

/* Current value of sensor x in its unit; < 0 status if unreadable now. */
static int sample_one(sensor_t *x, double *out) {
    double raw;
    if (read_num(x->path, &raw) != 0) return -1;
    if (x->path2[0]) {   /* battery power: |current x voltage| */
        double v2;
        if (read_num(x->path2, &v2) != 0) return -1;
        *out = fabs(raw * v2) * x->scale;
        return 0;
    }
    if (x->fam == FAM_RAPL) {
        double d = raw - x->rapl_last;
        if (d < 0) d += x->rapl_range > 0 ? x->rapl_range : 0;   /* counter wrapped */
        x->rapl_acc += d;
        x->rapl_last = raw;
        *out = x->rapl_acc * x->scale;
        return 0;
    }
    *out = raw * x->scale;
    return 0;
}

static void sample_all(tb_sensors_t *s) {
    int64_t t = (int64_t)(tb_now_ns() - s->t0);
    for (int i = 0; i < s->n; i++) {
        double v;
        if (sample_one(&s->s[i], &v) != 0) continue;
        if (s->n_buf == s->cap_buf) {
            size_t nc = s->cap_buf ? s->cap_buf * 2 : 256;
            tb_sensor_sample_t *nb = realloc(s->buf, nc * sizeof *nb);
            if (!nb) return;   /* drop samples rather than fail a benchmark */
            s->buf = nb;
            s->cap_buf = nc;
        }
        s->buf[s->n_buf++] = (tb_sensor_sample_t){t, i, v};
    }
}

static void *sampler_main(void *arg) {
    tb_sensors_t *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        sample_all(s);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + (long)s->interval_ms % 1000 * 1000000L;
        ts.tv_sec += s->interval_ms / 1000 + ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &ts) == 0) {}
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int tb_sensors_start(int interval_ms, uint64_t t0_ns, tb_sensors_t **out) {
    return tb_sensors_start_at("", interval_ms, t0_ns, out);
}

int tb_sensors_start_at(const char *root, int interval_ms, uint64_t t0_ns, tb_sensors_t **out) {
    *out = NULL;
    tb_sensors_t *s = calloc(1, sizeof *s);
    if (!s) return tb_err(TB_ERR_NOMEM, "sensors: out of memory");
    s->t0 = t0_ns;
    s->interval_ms = interval_ms;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    discover(s, root, FAM_THERMAL, "/sys/class/thermal/thermal_zone*/temp");
    discover(s, root, FAM_HWMON, "/sys/class/hwmon/hwmon*/temp*_input");
    discover(s, root, FAM_FREQ, "/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq");
    discover(s, root, FAM_RAPL, "/sys/class/powercap/intel-rapl:*/energy_uj");
    discover(s, root, FAM_POLICY, "/sys/devices/system/cpu/cpufreq/policy*/scaling_cur_freq");
    discover_battery(s, root);
    if (interval_ms > 0 && s->n > 0) {
        if (pthread_create(&s->thread, NULL, sampler_main, s) != 0) {
            tb_sensors_stop(s);
            return tb_err(TB_ERR_INTERNAL, "sensors: cannot start the sampler thread");
        }
        s->running = 1;
    }
    *out = s;
    return TB_OK;
}

void tb_sensors_stop(tb_sensors_t *s) {
    if (!s) return;
    if (s->running) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->s);
    free(s->buf);
    free(s);
}

int tb_sensors_count(const tb_sensors_t *s) { return s->n; }
const char *tb_sensors_name(const tb_sensors_t *s, int i) { return s->s[i].name; }
const char *tb_sensors_unit(const tb_sensors_t *s, int i) { return s->s[i].unit; }
int tb_sensors_absent_count(const tb_sensors_t *s) { return s->n_absent; }
void tb_sensors_absent(const tb_sensors_t *s, int i, const char **family, const char **reason) {
    *family = fam_names[s->absent[i].fam];
    *reason = s->absent[i].reason;
}

size_t tb_sensors_drain(tb_sensors_t *s, tb_sensor_sample_t **out) {
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_buf;
    *out = s->buf;
    s->buf = NULL;
    s->n_buf = s->cap_buf = 0;
    pthread_mutex_unlock(&s->mu);
    if (n == 0) { free(*out); *out = NULL; }
    return n;
}

/* Aggregate the current value over one family: sum (RAPL), mean (freq), max (temps). */
static double read_family(tb_sensors_t *s, int fam) {
    double acc = 0, best = -1;
    int n = 0;
    pthread_mutex_lock(&s->mu);   /* RAPL accumulation state is shared with the thread */
    for (int i = 0; i < s->n; i++) {
        sensor_t *x = &s->s[i];
        bool match = fam == FAM_THERMAL ? (x->fam == FAM_THERMAL || x->fam == FAM_HWMON) : x->fam == fam;
        double v;
        if (!match || sample_one(x, &v) != 0) continue;
        acc += v;
        if (v > best) best = v;
        n++;
    }
    pthread_mutex_unlock(&s->mu);
    if (n == 0) return -1;
    return fam == FAM_FREQ ? acc / n : fam == FAM_RAPL ? acc : best;
}

/* ===================================================================== */
/* Steal time                                                             */
/* ===================================================================== */

int tb_sensors_steal_read(const char *root, uint64_t *steal, uint64_t *total) {
    char path[1024];
    snprintf(path, sizeof path, "%s/proc/stat", root ? root : "");
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[512];
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    unsigned long long v[8];
    if (!ok || strncmp(line, "cpu ", 4) ||
        sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) != 8) {
        errno = EINVAL;
        return -1;
    }
    *total = 0;
    for (int i = 0; i < 8; i++) *total += v[i];
    *steal = v[7];
    return 0;
}

double tb_sensors_steal_pct(uint64_t steal0, uint64_t total0, uint64_t steal1, uint64_t total1) {
    if (total1 <= total0 || steal1 < steal0) return NAN;
    return 100.0 * (double)(steal1 - steal0) / (double)(total1 - total0);
}

double tb_sensors_energy_j(tb_sensors_t *s) { return read_family(s, FAM_RAPL); }
double tb_sensors_freq_mhz(tb_sensors_t *s) { return read_family(s, FAM_FREQ); }
double tb_sensors_temp_c(tb_sensors_t *s) { return read_family(s, FAM_THERMAL); }

const char *tb_thermal_verdict(double f0, double f_min, double ref0, double ref_worst, double pct) {
    if (f0 > 0 && f_min > 0) return f_min < f0 * (1 - pct / 100) ? "throttled" : "nominal";
    if (ref0 > 0 && ref_worst > 0) return ref_worst > ref0 * (1 + pct / 100) ? "throttled" : "nominal";
    return "unknown";
}

/* ===================================================================== */
/* Reference workload                                                     */
/* ===================================================================== */

double tb_refwork_ms(int reps) {
    double best = -1;
    for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
        uint64_t t0 = tb_now_ns();
        volatile double sink;
        uint64_t x = 0x9e3779b97f4a7c15ull;
        double f = 1.0;
        for (int i = 0; i < 400000; i++) {   /* dependent chain: no vectorization, no elision */
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            f = f * 0.999999 + (double)(x & 0xff) * 1e-9;
        }
        sink = f + (double)x;
        (void)sink;
        double ms = (double)(tb_now_ns() - t0) / 1e6;
        if (best < 0 || ms < best) best = ms;
    }
    return best;
}
