/*
 * facts.c — host, build and model provenance (see facts.h).
 */
#include "facts.h"
#include "build_git.h"
#include "build_info.h"
#include "tbutil.h"
#include "ternbench.h"
#include "scenario.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifdef TB_HAVE_LIBCPUID
#include <libcpuid/libcpuid.h>
#endif

/* ===================================================================== */
/* Host                                                                   */
/* ===================================================================== */

/* Value of "Key:" in a /proc-style file into buf; 0 if found. */
static int proc_field(const char *path, const char *key, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[1024];
    size_t klen = strlen(key);
    int rc = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0) continue;
        const char *v = line + klen;
        while (*v == ' ' || *v == '\t' || *v == ':' || *v == '=') v++;
        if (*v == '"') v++;
        snprintf(buf, cap, "%s", v);
        buf[strcspn(buf, "\"\n")] = '\0';
        rc = 0;
        break;
    }
    fclose(f);
    return rc;
}

/* Fill CPU facts from /proc/cpuinfo (non-x86 hosts, or libcpuid failure). */
static void cpu_from_proc(tb_host_facts_t *h) {
    char v[4096];
    if (!h->cpu_vendor[0] && proc_field("/proc/cpuinfo", "vendor_id", v, sizeof v) == 0)
        snprintf(h->cpu_vendor, sizeof h->cpu_vendor, "%.63s", v);
    if (!h->cpu_vendor[0] && proc_field("/proc/cpuinfo", "CPU implementer", v, sizeof v) == 0)
        snprintf(h->cpu_vendor, sizeof h->cpu_vendor, "implementer %.40s", v);
    if (!h->cpu_brand[0] && proc_field("/proc/cpuinfo", "model name", v, sizeof v) == 0)
        snprintf(h->cpu_brand, sizeof h->cpu_brand, "%.127s", v);
    if (!h->isa_flags[0] && (proc_field("/proc/cpuinfo", "flags", v, sizeof v) == 0 ||
                             proc_field("/proc/cpuinfo", "Features", v, sizeof v) == 0))
        snprintf(h->isa_flags, sizeof h->isa_flags, "%s", v);
    if (h->threads < 0) h->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* MIDR implementer codes of the vendors whose cores tb_cpu_midr_name
 * knows (Linux arch/arm64/include/asm/cputype.h, ARM_CPU_IMP_*). */
static const char *implementer_name(int impl) {
    switch (impl) {
    case 0x41: return "ARM";
    case 0x51: return "Qualcomm";
    case 0x61: return "Apple";
    case 0x48: return "HiSilicon";
    case 0x4e: return "NVIDIA";
    case 0x53: return "Samsung";
    default: return NULL;
    }
}

void tb_facts_host_arm(const tb_cpu_topo_t *t, tb_host_facts_t *h) {
    bool arm = t->features_from[0] && !strcmp(t->features_from, "hwcap");
    for (int k = 0; k < t->n_kinds; k++) arm |= t->kind[k].implementer >= 0;
    if (!arm) return;
    if (t->n_kinds > 0 && t->kind[0].implementer >= 0) {
        const char *v = implementer_name(t->kind[0].implementer);
        if (v) snprintf(h->cpu_vendor, sizeof h->cpu_vendor, "%s", v);
        else snprintf(h->cpu_vendor, sizeof h->cpu_vendor, "implementer 0x%02x", t->kind[0].implementer);
        h->cpu_model = t->kind[0].part;
    }
    if (t->summary[0] && t->kind[0].part >= 0) snprintf(h->cpu_brand, sizeof h->cpu_brand, "%.127s", t->summary);
    if (t->features_from[0])
        snprintf(h->isa_flags, sizeof h->isa_flags, "%s (%s)", t->features[0] ? t->features : "none",
                 t->features_from);
    if (t->n_cpus > 0) h->cores = t->n_cpus;
}

void tb_facts_host(tb_host_facts_t *h) {
    memset(h, 0, sizeof *h);
    h->cpu_family = h->cpu_model = h->cpu_stepping = -1;
    h->cores = h->threads = h->l1d_kb = h->l2_kb = h->l3_kb = -1;
    h->mem_bytes = -1;
    gethostname(h->hostname, sizeof h->hostname - 1);

#ifdef TB_HAVE_LIBCPUID
    struct cpu_raw_data_t raw;
    struct cpu_id_t id;
    if (cpuid_get_raw_data(&raw) == 0 && cpu_identify(&raw, &id) == 0) {
        snprintf(h->cpu_vendor, sizeof h->cpu_vendor, "%s", id.vendor_str);
        snprintf(h->cpu_brand, sizeof h->cpu_brand, "%s", id.brand_str);
        h->cpu_family = id.family;
        h->cpu_model = id.model;
        h->cpu_stepping = id.stepping;
        h->cores = id.num_cores;
        h->threads = id.num_logical_cpus;
        h->l1d_kb = id.l1_data_cache;
        h->l2_kb = id.l2_cache;
        h->l3_kb = id.l3_cache;
        size_t n = 0;
        for (int f = 0; f < NUM_CPU_FEATURES && n + 1 < sizeof h->isa_flags; f++) {
            if (!id.flags[f]) continue;
            const char *name = cpu_feature_str((cpu_feature_t)f);
            if (name && *name)
                n += (size_t)snprintf(h->isa_flags + n, sizeof h->isa_flags - n, "%s%s",
                                      n ? " " : "", name);
        }
    }
#endif
    cpu_from_proc(h);
    tb_facts_host_arm(tb_cpu_topo_host(), h);
    /* The machine's online CPU count is what the harness can use; libcpuid
     * reports one package. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > 0 && (h->threads < 0 || h->threads > online)) h->threads = (int)online;
    if (h->cores > h->threads && h->threads > 0) h->cores = h->threads;

    char v[256];
    if (proc_field("/proc/meminfo", "MemTotal", v, sizeof v) == 0)
        h->mem_bytes = strtoll(v, NULL, 10) * 1024;
    if (proc_field("/etc/os-release", "PRETTY_NAME", v, sizeof v) == 0)
        snprintf(h->os, sizeof h->os, "%s", v);
    else
        snprintf(h->os, sizeof h->os, "unknown");
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(h->kernel, sizeof h->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    else
        snprintf(h->kernel, sizeof h->kernel, "unknown");

    char fp[8192];
    snprintf(fp, sizeof fp, "%s|%s|%s|%d|%d|%d|%d|%d|%d|%d|%d|%s|%lld|%s|%s", h->hostname,
             h->cpu_vendor, h->cpu_brand, h->cpu_family, h->cpu_model, h->cpu_stepping, h->cores,
             h->threads, h->l1d_kb, h->l2_kb, h->l3_kb, h->isa_flags, (long long)h->mem_bytes,
             h->os, h->kernel);
    tb_sha256_hex(fp, strlen(fp), h->fingerprint);
}

/* ===================================================================== */
/* Build                                                                  */
/* ===================================================================== */

void tb_facts_build(tb_build_facts_t *b) {
    memset(b, 0, sizeof *b);
    snprintf(b->version, sizeof b->version, "%s", TB_VERSION_STRING);
    const char *g = TB_GIT_DESCRIBE;
    size_t n = strlen(g);
    const char *suffix = "-dirty";
    b->git_dirty = n > strlen(suffix) && !strcmp(g + n - strlen(suffix), suffix);
    if (b->git_dirty) n -= strlen(suffix);
    snprintf(b->git_commit, sizeof b->git_commit, "%.*s", (int)n, g[0] ? g : "unknown");
    if (!b->git_commit[0]) snprintf(b->git_commit, sizeof b->git_commit, "unknown");
    snprintf(b->compiler, sizeof b->compiler, "%s", TB_BUILD_COMPILER);
    snprintf(b->cflags, sizeof b->cflags, "%s", TB_BUILD_CFLAGS);
    snprintf(b->build_type, sizeof b->build_type, "%s", TB_BUILD_TYPE);
    snprintf(b->isa_best, sizeof b->isa_best, "%s", tb_isa_name(tb_isa_best()));
    char fp[1024];
    snprintf(fp, sizeof fp, "%s|%s|%d|%s|%s|%s|%s", b->version, b->git_commit, b->git_dirty,
             b->compiler, b->cflags, b->build_type, b->isa_best);
    tb_sha256_hex(fp, strlen(fp), b->fingerprint);
}

/* ===================================================================== */
/* Model                                                                  */
/* ===================================================================== */

/* SHA-256 over the file size, the first 4 MiB (header and metadata) and 64
 * evenly spaced 64 KiB samples of the rest: cheap on multi-GB files, and
 * any realistic difference between two models changes it. */
static int content_hash(const char *path, char out[65]) {
    FILE *f = fopen(path, "rb");
    if (!f) return tb_err(TB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseeko(f, 0, SEEK_END) != 0) { fclose(f); return tb_err(TB_ERR_IO, "%s: seek failed", path); }
    off_t size = ftello(f);
    tb_sha256_t c;
    tb_sha256_init(&c);
    uint64_t sz = (uint64_t)size;
    tb_sha256_update(&c, &sz, sizeof sz);
    enum { HEAD = 4 << 20, CHUNK = 64 << 10, SAMPLES = 64 };
    char *buf = malloc(CHUNK);
    if (!buf) { fclose(f); return tb_err(TB_ERR_NOMEM, "out of memory"); }
    int rc = TB_OK;
    for (off_t at = 0; at < size && at < HEAD && rc == TB_OK; at += CHUNK) {
        size_t r;
        if (fseeko(f, at, SEEK_SET) != 0 || (r = fread(buf, 1, CHUNK, f)) == 0)
            rc = tb_err(TB_ERR_IO, "%s: read failed at byte %lld", path, (long long)at);
        else
            tb_sha256_update(&c, buf, r);
    }
    if (size > HEAD) {
        for (int i = 0; i < SAMPLES && rc == TB_OK; i++) {
            off_t at = HEAD + (off_t)((double)(size - HEAD) * i / SAMPLES);
            size_t r;
            if (fseeko(f, at, SEEK_SET) != 0 || (r = fread(buf, 1, CHUNK, f)) == 0)
                rc = tb_err(TB_ERR_IO, "%s: read failed at byte %lld", path, (long long)at);
            else
                tb_sha256_update(&c, buf, r);
        }
    }
    free(buf);
    fclose(f);
    if (rc) return rc;
    uint8_t d[32];
    tb_sha256_final(&c, d);
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
    return TB_OK;
}

int tb_facts_model(const tb_model_t *m, const char *path, tb_type_t kv_type,
                   tb_model_facts_t *out) {
    memset(out, 0, sizeof *out);
    tb_model_info_t info;
    int rc = tb_model_get_info(m, &info);
    if (rc) return rc;
    if ((rc = content_hash(path, out->content_hash))) return rc;
    snprintf(out->path, sizeof out->path, "%s", path);
    snprintf(out->name, sizeof out->name, "%s", info.name);
    snprintf(out->arch, sizeof out->arch, "%s", info.arch);
    snprintf(out->main_type, sizeof out->main_type, "%s", tb_type_name(info.main_type));
    out->file_bytes = (int64_t)info.file_bytes;
    out->n_params = info.n_params;
    out->n_params_active = info.n_params_active;
    out->n_layer = info.n_layer;
    out->n_embd = info.n_embd;
    out->n_vocab = info.n_vocab;
    out->n_expert = info.n_expert;
    out->n_expert_used = info.n_expert_used;
    out->synth_seed = -1;
    out->bytes_per_token = -1;
    tb_bytes_per_token_t bpt;
    if (tb_model_bytes_per_token(m, 0, kv_type, &bpt) == TB_OK) out->bytes_per_token = (int64_t)bpt.total;

    /* weight types: type:count in order of first appearance */
    const tb_gguf_t *g = tb_model_gguf(m);
    int counts[TB_TYPE_COUNT] = {0}, order[TB_TYPE_COUNT], n_order = 0;
    for (int64_t i = 0; g && i < tb_gguf_n_tensors(g); i++) {
        tb_gguf_tensor_t t;
        if (tb_gguf_tensor(g, i, &t) != TB_OK || (unsigned)t.type >= TB_TYPE_COUNT) continue;
        if (counts[t.type]++ == 0) order[n_order++] = t.type;
    }
    size_t n = 0;
    for (int i = 0; i < n_order && n + 1 < sizeof out->weight_types; i++)
        n += (size_t)snprintf(out->weight_types + n, sizeof out->weight_types - n, "%s%s:%d",
                              i ? "," : "", tb_type_name((tb_type_t)order[i]), counts[order[i]]);
    return TB_OK;
}

/* ===================================================================== */
/* Process                                                                */
/* ===================================================================== */

int64_t tb_facts_peak_rss(void) {
    char v[64];
    if (proc_field("/proc/self/status", "VmHWM", v, sizeof v) != 0) return -1;
    return strtoll(v, NULL, 10) * 1024;
}

void tb_facts_uuid(char out[37]) {
    uint8_t b[16];
#if defined(__APPLE__)   /* macOS has getentropy, not getrandom */
    if (getentropy(b, sizeof b) != 0) {
#else
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
#endif
        uint64_t x = tb_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
        for (int i = 0; i < 16; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            b[i] = (uint8_t)x;
        }
    }
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}
