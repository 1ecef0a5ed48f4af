/*
 * cmd_devices.c — `ternbench devices [--json] [--devices DIR]` lists the
 * device profiles; `ternbench devices show ID [--json]` prints one (`this`:
 * the running machine, its bandwidth probed now).
 */
#include "claim.h"
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_num(const char *key, double v, bool comma) {
    printf("\"%s\": ", key);
    if (v > 0) printf("%g", v);
    else printf("null");
    if (comma) printf(", ");
}

static void json_kv(const char *key, const char *v, bool comma) {
    printf("\"%s\": ", key);
    if (v && *v) cmd_json_str(v);
    else printf("null");
    if (comma) printf(", ");
}

static void device_json(const cl_device_t *d) {
    printf("{");
    json_kv("id", d->id, true);
    json_kv("name", d->name, true);
    json_kv("class", d->cls, true);
    json_kv("soc", d->soc, true);
    json_kv("cpu", d->cpu, true);
    json_kv("gpu", d->gpu, true);
    json_kv("memory", d->memory, true);
    json_num("ram_gb", d->ram_gb, true);
    json_num("bandwidth_gbps", d->bw_gbps, true);
    json_kv("bandwidth_source", d->bw_source, true);
    json_kv("bandwidth_read", d->bw_read, true);
    printf("\"bandwidth_estimate\": %s, \"bandwidth_measured\": %s, ", d->bw_estimate ? "true" : "false",
           d->bw_measured ? "true" : "false");
    json_kv("bandwidth_note", d->bw_note, true);
    json_num("gpu_fp16_tflops", d->fp16_tflops, true);
    json_kv("gpu_fp16_source", d->fp16_source, true);
    printf("\"gpu_fp16_estimate\": %s, ", d->fp16_estimate ? "true" : "false");
    json_num("npu_tops", d->npu_tops, true);
    json_kv("npu_source", d->npu_source, true);
    json_num("app_memory_limit_gb", d->app_limit_gb, true);
    json_kv("app_memory_note", d->app_note, true);
    json_kv("file", d->path, false);
    printf("}");
}

static void line(const char *k, const char *v) {
    if (v && *v) printf("%-18s %s\n", k, v);
}

static void device_text(const cl_device_t *d) {
    char b[512];
    line("id:", d->id);
    line("name:", d->name);
    line("class:", d->cls);
    line("soc:", d->soc);
    line("cpu:", d->cpu);
    line("gpu:", d->gpu);
    line("memory:", d->memory);
    if (d->ram_gb > 0) printf("%-18s %g GB (largest configuration)\n", "ram:", d->ram_gb);
    snprintf(b, sizeof b, "%g GB/s%s%s", d->bw_gbps, d->bw_measured ? " (measured)" : " (nominal peak)",
             d->bw_estimate ? ", ESTIMATE" : "");
    line("bandwidth:", b);
    line("  source:", d->bw_source);
    line("  read:", d->bw_read);
    line("  note:", d->bw_note);
    if (d->fp16_tflops > 0) {
        snprintf(b, sizeof b, "%g TFLOP/s%s", d->fp16_tflops, d->fp16_estimate ? ", ESTIMATE" : "");
        line("gpu fp16:", b);
        line("  source:", d->fp16_source);
        line("  note:", d->fp16_note);
    }
    if (d->npu_tops > 0) {
        snprintf(b, sizeof b, "%g TOPS%s", d->npu_tops, d->npu_estimate ? ", ESTIMATE" : "");
        line("npu:", b);
        line("  source:", d->npu_source);
    }
    if (d->has_app_memory) {
        if (d->app_limit_gb > 0) snprintf(b, sizeof b, "%g GB", d->app_limit_gb);
        else snprintf(b, sizeof b, "not documented");
        line("app memory limit:", b);
        line("  source:", d->app_source);
        line("  note:", d->app_note);
    }
    line("file:", d->path);
}

static int usage(void) {
    fprintf(stderr, "usage: ternbench devices [--json] [--devices DIR]\n"
                    "       ternbench devices show ID|this [--json] [--devices DIR]\n"
                    "       ternbench devices probe [--json]   measure this machine's bandwidth and store it\n"
                    "  the profiles live in DIR, else $TB_DEVICES_DIR, else the shipped devices/ folder\n");
    return 2;
}

int cmd_devices(int argc, char **argv) {
    bool json = false;
    const char *dirflag = NULL, *show = NULL;
    int i = 1;
    bool probe = false;
    if (i < argc && !strcmp(argv[i], "probe")) {
        probe = true;
        show = "this";
        i++;
    } else if (i < argc && !strcmp(argv[i], "show")) {
        if (i + 1 >= argc) return usage();
        show = argv[i + 1];
        i += 2;
    }
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--devices") && i + 1 < argc) dirflag = argv[++i];
        else return usage();
    }
    const char *dir = cl_devices_dir(dirflag);
    if (show) {
        cl_device_t d;
        int rc = probe ? cl_device_this(&d, true) : cl_device_find(dir, show, &d);
        if (rc) return rc;
        if (json) { device_json(&d); printf("\n"); }
        else device_text(&d);
        return 0;
    }
    cl_device_t *v;
    int n, rc = cl_devices_load_all(dir, &v, &n);
    if (rc) return rc;
    if (json) {
        printf("[");
        for (int k = 0; k < n; k++) {
            if (k) printf(",\n ");
            device_json(&v[k]);
        }
        printf("]\n");
    } else {
        printf("%-20s %-8s %10s  %s\n", "id", "class", "GB/s", "name");
        for (int k = 0; k < n; k++)
            printf("%-20s %-8s %9g%s  %s\n", v[k].id, v[k].cls, v[k].bw_gbps, v[k].bw_estimate ? "*" : " ", v[k].name);
        printf("%-20s %-8s %10s  %s\n", "this", "", "probe", "this machine (ternbench devices show this)");
        printf("# %d profiles in %s; * = estimated bandwidth (see `devices show ID`)\n", n, dir);
    }
    free(v);
    return 0;
}
