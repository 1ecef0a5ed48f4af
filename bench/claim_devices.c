/*
 * claim_devices.c — device profiles: one small ini file per device in
 * devices/ (parsed with libinih), found from a build tree, an installed
 * layout or an override, plus `this`, the machine ternbench runs on, whose
 * bandwidth the read-bandwidth probe measures.
 */
#include "claim.h"
#include "ternbench.h"

#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef TB_DEVICES_SRC_DIR
#define TB_DEVICES_SRC_DIR ""
#endif
#ifndef TB_DEVICES_INSTALL_DIR
#define TB_DEVICES_INSTALL_DIR ""
#endif

static bool is_dir(const char *p) {
    struct stat st;
    return p && *p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *cl_devices_dir(const char *flag) {
    if (flag && *flag) return flag;
    const char *e = getenv("TB_DEVICES_DIR");
    if (e && *e) return e;
    if (is_dir(TB_DEVICES_SRC_DIR)) return TB_DEVICES_SRC_DIR;
    return TB_DEVICES_INSTALL_DIR;
}

typedef struct parse {
    cl_device_t *d;
    const char *path;
    char err[256];
    int err_line;
} parse_t;

static bool yes_no(const char *v, bool *out) {
    if (!strcmp(v, "yes") || !strcmp(v, "true")) return (*out = true), true;
    if (!strcmp(v, "no") || !strcmp(v, "false")) return (*out = false), true;
    return false;
}

static bool number(const char *v, double *out) {
    if (!*v) return (*out = 0), true;   /* empty: not known */
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || x < 0) return false;
    *out = x;
    return true;
}

#define STR(field) snprintf(p->d->field, sizeof p->d->field, "%s", v)

static int handler(void *ud, const char *sec, const char *k, const char *v) {
    parse_t *p = ud;
    cl_device_t *d = p->d;
    bool ok = true;
    if (p->err[0]) return 0;   /* report the first error only */
    if (!strcmp(sec, "device")) {
        if (!strcmp(k, "id")) STR(id);
        else if (!strcmp(k, "name")) STR(name);
        else if (!strcmp(k, "class")) {
            static const char *const cls[] = {"phone", "tablet", "laptop", "desktop", "sbc", "gpu", "server"};
            ok = false;
            for (size_t i = 0; i < sizeof cls / sizeof cls[0]; i++) ok |= !strcmp(v, cls[i]);
            if (!ok) { snprintf(p->err, sizeof p->err, "class '%s' is not phone, tablet, laptop, desktop, sbc, gpu or server", v); return 0; }
            STR(cls);
        } else if (!strcmp(k, "soc")) STR(soc);
        else if (!strcmp(k, "cpu")) STR(cpu);
        else if (!strcmp(k, "gpu")) STR(gpu);
        else if (!strcmp(k, "memory")) STR(memory);
        else if (!strcmp(k, "ram_gb")) ok = number(v, &d->ram_gb);
        else goto unknown;
    } else if (!strcmp(sec, "bandwidth")) {
        if (!strcmp(k, "peak_gbps")) ok = number(v, &d->bw_gbps) && d->bw_gbps > 0;
        else if (!strcmp(k, "source")) STR(bw_source);
        else if (!strcmp(k, "read")) STR(bw_read);
        else if (!strcmp(k, "estimate")) ok = yes_no(v, &d->bw_estimate);
        else if (!strcmp(k, "note")) STR(bw_note);
        else goto unknown;
    } else if (!strcmp(sec, "compute")) {
        if (!strcmp(k, "gpu_fp16_tflops")) ok = number(v, &d->fp16_tflops);
        else if (!strcmp(k, "gpu_fp16_source")) STR(fp16_source);
        else if (!strcmp(k, "gpu_fp16_estimate")) ok = yes_no(v, &d->fp16_estimate);
        else if (!strcmp(k, "gpu_fp16_note")) STR(fp16_note);
        else if (!strcmp(k, "npu_tops")) ok = number(v, &d->npu_tops);
        else if (!strcmp(k, "npu_source")) STR(npu_source);
        else if (!strcmp(k, "npu_estimate")) ok = yes_no(v, &d->npu_estimate);
        else goto unknown;
    } else if (!strcmp(sec, "app_memory")) {
        d->has_app_memory = true;
        if (!strcmp(k, "limit_gb")) ok = number(v, &d->app_limit_gb);
        else if (!strcmp(k, "source")) STR(app_source);
        else if (!strcmp(k, "note")) STR(app_note);
        else goto unknown;
    } else {
        snprintf(p->err, sizeof p->err, "unknown section [%s]", sec);
        return 0;
    }
    if (!ok) snprintf(p->err, sizeof p->err, "bad value '%s' for %s.%s", v, sec, k);
    return ok;
unknown:
    snprintf(p->err, sizeof p->err, "unknown key %s.%s", sec, k);
    return 0;
}

int cl_device_load(const char *path, cl_device_t *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%.500s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ternbench: %s: %s\n", path, strerror(errno));
        return 2;
    }
    parse_t p = {.d = d, .path = path};
    int line = ini_parse_file(f, handler, &p);
    fclose(f);
    if (line != 0) {
        fprintf(stderr, "ternbench: %s:%d: %s\n", path, line, p.err[0] ? p.err : "not an ini line");
        return 2;
    }
    const char *miss = !d->id[0] ? "device.id" : !d->name[0] ? "device.name" : !d->cls[0] ? "device.class"
                     : d->bw_gbps <= 0 ? "bandwidth.peak_gbps" : !d->bw_source[0] ? "bandwidth.source"
                     : !d->bw_read[0] ? "bandwidth.read" : NULL;
    if (miss) {
        fprintf(stderr, "ternbench: %s: missing %s\n", path, miss);
        return 2;
    }
    return 0;
}

static int by_id(const void *a, const void *b) {
    return strcmp(((const cl_device_t *)a)->id, ((const cl_device_t *)b)->id);
}

int cl_devices_load_all(const char *dir, cl_device_t **out, int *n) {
    *out = NULL;
    *n = 0;
    DIR *dh = opendir(dir);
    if (!dh) {
        fprintf(stderr, "ternbench: devices folder %s: %s (set TB_DEVICES_DIR or --devices DIR)\n",
                dir && *dir ? dir : "(none)", strerror(errno));
        return 2;
    }
    int cap = 0, rc = 0;
    cl_device_t *v = NULL;
    struct dirent *e;
    while ((e = readdir(dh))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".ini")) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            cl_device_t *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) { rc = 1; break; }
            v = nv;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if ((rc = cl_device_load(path, &v[*n])) != 0) break;
        (*n)++;
    }
    closedir(dh);
    if (rc) {
        free(v);
        *n = 0;
        return rc;
    }
    qsort(v, (size_t)*n, sizeof *v, by_id);
    *out = v;
    return 0;
}

/* Where `this`'s probed bandwidth is kept between runs: $TB_CACHE_DIR, else
 * $XDG_CACHE_HOME/ternbench, else ~/.cache/ternbench. */
static void store_path(char *buf, size_t cap) {
    const char *e;
    if ((e = getenv("TB_CACHE_DIR")) && *e) snprintf(buf, cap, "%s/this-bandwidth.ini", e);
    else if ((e = getenv("XDG_CACHE_HOME")) && *e) snprintf(buf, cap, "%s/ternbench/this-bandwidth.ini", e);
    else snprintf(buf, cap, "%s/.cache/ternbench/this-bandwidth.ini", (e = getenv("HOME")) && *e ? e : ".");
}

typedef struct stored { double gbps; int threads; char when[32], host[64]; } stored_t;

static int stored_handler(void *ud, const char *sec, const char *k, const char *v) {
    stored_t *st = ud;
    if (strcmp(sec, "bandwidth")) return 1;
    if (!strcmp(k, "peak_gbps")) st->gbps = strtod(v, NULL);
    else if (!strcmp(k, "threads")) st->threads = atoi(v);
    else if (!strcmp(k, "measured")) snprintf(st->when, sizeof st->when, "%s", v);
    else if (!strcmp(k, "host")) snprintf(st->host, sizeof st->host, "%s", v);
    return 1;
}

static void this_host(char *buf, size_t cap) {
    if (gethostname(buf, cap) != 0) snprintf(buf, cap, "unknown");
    buf[cap - 1] = '\0';
}

/* Write the probe's result next to where it is read from (tmp + rename). */
static void store_write(double gbps, int threads, const char *when) {
    char path[1024], tmp[1100], host[64];
    store_path(path, sizeof path);
    this_host(host, sizeof host);
    for (char *q = path + 1; *q; q++)   /* create the directories on the way */
        if (*q == '/') { *q = '\0'; mkdir(path, 0777); *q = '/'; }
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "ternbench: note: cannot store the probed bandwidth in %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "# this machine's read bandwidth, written by ternbench (devices probe)\n[bandwidth]\n"
               "peak_gbps = %.3f\nthreads = %d\nmeasured = %s\nhost = %s\n", gbps, threads, when, host);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "ternbench: note: cannot store the probed bandwidth in %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
}

int cl_device_this(cl_device_t *d, bool probe) {
    memset(d, 0, sizeof *d);
    snprintf(d->id, sizeof d->id, "this");
    snprintf(d->name, sizeof d->name, "this machine");
    snprintf(d->cls, sizeof d->cls, "desktop");
    snprintf(d->soc, sizeof d->soc, "%s", tb_isa_features());
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus;
    snprintf(d->cpu, sizeof d->cpu, "%d online CPUs", threads);
    d->bw_measured = true;
    const char *e = getenv("TB_THIS_GBPS");
    if (e && *e) {
        if (!number(e, &d->bw_gbps) || d->bw_gbps <= 0) {
            fprintf(stderr, "ternbench: TB_THIS_GBPS='%s' is not a positive number\n", e);
            return 2;
        }
        snprintf(d->bw_source, sizeof d->bw_source, "TB_THIS_GBPS (given, not measured)");
        snprintf(d->bw_read, sizeof d->bw_read, "now");
        return 0;
    }
    char path[512], host[64];
    store_path(path, sizeof path);
    this_host(host, sizeof host);
    stored_t st = {0};
    FILE *f = probe ? NULL : fopen(path, "r");
    if (f) {
        ini_parse_file(f, stored_handler, &st);
        fclose(f);
        if (st.gbps > 0 && st.when[0] && !strcmp(st.host, host)) {
            d->bw_gbps = st.gbps;
            snprintf(d->bw_read, sizeof d->bw_read, "%.19s", st.when);
            snprintf(d->bw_source, sizeof d->bw_source,
                     "stored by an earlier probe (tb_bandwidth_probe, %d threads, 256 MiB, best of 5) in %.150s; "
                     "`ternbench devices probe` measures again", st.threads, path);
            snprintf(d->path, sizeof d->path, "%.500s", path);
            return 0;
        }
    }
    /* the `bandwidth` command's probe: 256 MiB, best of 5 passes */
    if (tb_bandwidth_probe(threads, (size_t)256 << 20, 5, &d->bw_gbps) != TB_OK) {
        fprintf(stderr, "ternbench: bandwidth probe failed: %s\n", tb_last_error());
        return 1;
    }
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%MZ", &tm);
    snprintf(d->bw_read, sizeof d->bw_read, "%.19s", when);
    snprintf(d->bw_source, sizeof d->bw_source,
             "measured now: tb_bandwidth_probe, %d threads, 256 MiB, best of 5 (as `ternbench bandwidth`); stored in %.150s",
             threads, path);
    store_write(d->bw_gbps, threads, when);
    snprintf(d->path, sizeof d->path, "%.500s", path);
    return 0;
}

int cl_device_find(const char *dir, const char *id, cl_device_t *d) {
    if (!strcmp(id, "this")) return cl_device_this(d, false);
    cl_device_t *v;
    int n, rc = cl_devices_load_all(dir, &v, &n);
    if (rc) return rc;
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i].id, id)) {
            *d = v[i];
            free(v);
            return 0;
        }
    fprintf(stderr, "ternbench: unknown device '%s' (`ternbench devices` lists the %d in %s, and `this`)\n",
            id, n, dir);
    free(v);
    return 2;
}
