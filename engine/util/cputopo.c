/*
 * cputopo.c — CPU features and core kinds from the kernel, without
 * libcpuid (aarch64: phones, boards; readable on any host for tests).
 *
 * Features: the aarch64 hardware capability words (getauxval(AT_HWCAP),
 * AT_HWCAP2; the bit numbers are the kernel's ABI, arch/arm64/include/
 * uapi/asm/hwcap.h, fixed on every host), or, when both words are 0 (a
 * non-aarch64 host reading a fake tree, or a kernel that has no auxv),
 * the "Features" line of ROOT/proc/cpuinfo, whose names the kernel derives
 * from the same bits.
 * Cores: every ROOT/sys/devices/system/cpu/cpuN directory and every
 * "processor : N" block of ROOT/proc/cpuinfo; per core its cpu_capacity
 * (the scheduler's relative speed, 1024 the fastest), its cpufreq
 * cpuinfo_max_freq (kHz), and the MIDR fields of its cpuinfo block ("CPU
 * implementer", "CPU part"). Cores with the same implementer, part,
 * capacity and top clock are one kind; kinds are ordered fastest first.
 * A missing or unreadable file leaves its value unknown (-1): the reader
 * never fails on the machine's account.
 *
 * macOS has neither file: there the same facts come from sysctl (the
 * hw.optional.arm.FEAT_* feature flags and the hw.perflevelN core levels,
 * performance first), gathered into "key: value" text as `sysctl` prints
 * it and read by tb_cpu_topo_from_sysctl, which is tested on any host.
 */
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

/* The kernel's aarch64 hwcap bits (uapi/asm/hwcap.h). */
#define HWCAP_ASIMD_BIT (1ull << 1)
#define HWCAP_ASIMDDP_BIT (1ull << 20)
#define HWCAP_SVE_BIT (1ull << 22)
#define HWCAP2_SVE2_BIT (1ull << 1)
#define HWCAP2_I8MM_BIT (1ull << 13)
#define HWCAP2_BF16_BIT (1ull << 14)
#define HWCAP2_SME_BIT (1ull << 23)

/* MIDR implementer and part numbers of common cores, as the Linux kernel
 * lists them in arch/arm64/include/asm/cputype.h
 * (https://github.com/torvalds/linux/blob/master/arch/arm64/include/asm/cputype.h,
 * read 2026-12-03). A core not listed is named by its numbers. */
static const struct { int impl, part; const char *name; } midr_names[] = {
    {0x41, 0xd03, "Cortex-A53"},   {0x41, 0xd04, "Cortex-A35"},   {0x41, 0xd05, "Cortex-A55"},
    {0x41, 0xd07, "Cortex-A57"},   {0x41, 0xd08, "Cortex-A72"},   {0x41, 0xd09, "Cortex-A73"},
    {0x41, 0xd0a, "Cortex-A75"},   {0x41, 0xd0b, "Cortex-A76"},   {0x41, 0xd0c, "Neoverse-N1"},
    {0x41, 0xd0d, "Cortex-A77"},   {0x41, 0xd40, "Neoverse-V1"},  {0x41, 0xd41, "Cortex-A78"},
    {0x41, 0xd44, "Cortex-X1"},    {0x41, 0xd46, "Cortex-A510"},  {0x41, 0xd47, "Cortex-A710"},
    {0x41, 0xd48, "Cortex-X2"},    {0x41, 0xd49, "Neoverse-N2"},  {0x41, 0xd4b, "Cortex-A78C"},
    {0x41, 0xd4c, "Cortex-X1C"},   {0x41, 0xd4d, "Cortex-A715"},  {0x41, 0xd4e, "Cortex-X3"},
    {0x41, 0xd4f, "Neoverse-V2"},  {0x41, 0xd80, "Cortex-A520"},  {0x41, 0xd81, "Cortex-A720"},
    {0x41, 0xd82, "Cortex-X4"},    {0x41, 0xd84, "Neoverse-V3"},  {0x41, 0xd85, "Cortex-X925"},
    {0x41, 0xd87, "Cortex-A725"},  {0x51, 0x800, "Kryo-2xx-Gold"}, {0x51, 0x801, "Kryo-2xx-Silver"},
    {0x51, 0x802, "Kryo-3xx-Gold"}, {0x51, 0x803, "Kryo-3xx-Silver"}, {0x51, 0x804, "Kryo-4xx-Gold"},
    {0x51, 0x805, "Kryo-4xx-Silver"}, {0x51, 0x001, "Oryon"},     {0x61, 0x022, "Apple-Icestorm"},
    {0x61, 0x023, "Apple-Firestorm"},
};

const char *tb_cpu_midr_name(int implementer, int part) {
    for (size_t i = 0; i < TB_ARRAY_LEN(midr_names); i++)
        if (midr_names[i].impl == implementer && midr_names[i].part == part) return midr_names[i].name;
    return NULL;
}

/* root + rel into buf ("" or "/" root: rel itself). */
static void join(char *buf, size_t cap, const char *root, const char *rel) {
    if (!root || !*root || !strcmp(root, "/")) snprintf(buf, cap, "%s", rel);
    else snprintf(buf, cap, "%s%s", root, rel);
}

/* A file's first integer (decimal, or 0x hex); -1 when absent or not one. */
static int32_t read_int(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[64];
    int32_t v = -1;
    if (fgets(line, sizeof line, f)) {
        char *end;
        long x = strtol(line, &end, 0);
        if (end != line && x >= 0 && x <= INT32_MAX) v = (int32_t)x;
    }
    fclose(f);
    return v;
}

/* The core with logical number n (added when new); NULL when full. */
static tb_cpu_core_t *core_at(tb_cpu_topo_t *t, int32_t n) {
    for (int i = 0; i < t->n_cpus; i++)
        if (t->cpu[i].cpu == n) return &t->cpu[i];
    if (t->n_cpus >= TB_TOPO_MAX_CPUS) return NULL;
    tb_cpu_core_t *c = &t->cpu[t->n_cpus++];
    *c = (tb_cpu_core_t){.cpu = n, .capacity = -1, .implementer = -1, .part = -1, .max_khz = -1, .kind = -1};
    return c;
}

/* Features from the capability words. */
static void features_hwcap(tb_cpu_topo_t *t, uint64_t hwcap, uint64_t hwcap2) {
    t->asimd = hwcap & HWCAP_ASIMD_BIT;
    t->dotprod = hwcap & HWCAP_ASIMDDP_BIT;
    t->sve = hwcap & HWCAP_SVE_BIT;
    t->sve2 = hwcap2 & HWCAP2_SVE2_BIT;
    t->i8mm = hwcap2 & HWCAP2_I8MM_BIT;
    t->bf16 = hwcap2 & HWCAP2_BF16_BIT;
    t->sme = hwcap2 & HWCAP2_SME_BIT;
}

/* Whether the space-separated list s holds the word w. */
static bool has_word(const char *s, const char *w) {
    const size_t n = strlen(w);
    for (const char *p = s; (p = strstr(p, w)); p += n)
        if ((p == s || isspace((unsigned char)p[-1])) && (!p[n] || isspace((unsigned char)p[n]))) return true;
    return false;
}

static void features_words(tb_cpu_topo_t *t, const char *s) {
    t->asimd = has_word(s, "asimd");
    t->dotprod = has_word(s, "asimddp");
    t->sve = has_word(s, "sve");
    t->sve2 = has_word(s, "sve2");
    t->i8mm = has_word(s, "i8mm");
    t->bf16 = has_word(s, "bf16");
    t->sme = has_word(s, "sme");
}

/* "Key<spaces/tabs>: value" -> value (NULL when line is not key's). */
static const char *field(const char *line, const char *key) {
    const size_t n = strlen(key);
    if (strncmp(line, key, n) != 0) return NULL;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

/* ROOT/proc/cpuinfo: processor blocks (MIDR fields) and the first
 * Features line (into words, cap bytes). */
static void read_cpuinfo(tb_cpu_topo_t *t, const char *root, char *words, size_t cap) {
    char path[4096];
    join(path, sizeof path, root, "/proc/cpuinfo");
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[4096];
    tb_cpu_core_t *cur = NULL;
    const char *v;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if ((v = field(line, "processor"))) {
            char *end;
            long n = strtol(v, &end, 10);
            cur = end != v && n >= 0 && n < 1 << 20 ? core_at(t, (int32_t)n) : NULL;
        } else if ((v = field(line, "Features"))) {
            if (!words[0]) snprintf(words, cap, "%s", v);
        } else if (cur && (v = field(line, "CPU implementer"))) {
            cur->implementer = (int32_t)strtol(v, NULL, 0);
        } else if (cur && (v = field(line, "CPU part"))) {
            cur->part = (int32_t)strtol(v, NULL, 0);
        }
    }
    fclose(f);
}

/* ROOT/sys/devices/system/cpu/cpuN: every N, its capacity and top clock. */
static void read_sysfs(tb_cpu_topo_t *t, const char *root) {
    char dir[4096];
    join(dir, sizeof dir, root, "/sys/devices/system/cpu");
    DIR *d = opendir(dir);
    if (d) {
        for (struct dirent *e; (e = readdir(d));) {
            if (strncmp(e->d_name, "cpu", 3) || !isdigit((unsigned char)e->d_name[3])) continue;
            char *end;
            long n = strtol(e->d_name + 3, &end, 10);
            if (*end || n >= 1 << 20) continue;
            core_at(t, (int32_t)n);
        }
        closedir(d);
    }
    for (int i = 0; i < t->n_cpus; i++) {
        tb_cpu_core_t *c = &t->cpu[i];
        char p[4200];
        snprintf(p, sizeof p, "%s/cpu%d/cpu_capacity", dir, c->cpu);
        c->capacity = read_int(p);
        snprintf(p, sizeof p, "%s/cpu%d/cpufreq/cpuinfo_max_freq", dir, c->cpu);
        c->max_khz = read_int(p);
    }
}

static int core_cmp(const void *a, const void *b) {
    const tb_cpu_core_t *x = a, *y = b;
    return (x->cpu > y->cpu) - (x->cpu < y->cpu);
}

/* Kind a is faster than b: capacity, then top clock, then part. */
static bool kind_before(const tb_cpu_kind_t *a, const tb_cpu_kind_t *b) {
    if (a->capacity != b->capacity) return a->capacity > b->capacity;
    if (a->max_khz != b->max_khz) return a->max_khz > b->max_khz;
    return a->part > b->part;
}

static void group_kinds(tb_cpu_topo_t *t) {
    t->n_kinds = 0;
    for (int i = 0; i < t->n_cpus; i++) {
        const tb_cpu_core_t *c = &t->cpu[i];
        int k = 0;
        for (; k < t->n_kinds; k++) {
            const tb_cpu_kind_t *K = &t->kind[k];
            if (K->implementer == c->implementer && K->part == c->part && K->capacity == c->capacity &&
                K->max_khz == c->max_khz)
                break;
        }
        if (k == t->n_kinds) {
            if (t->n_kinds == TB_TOPO_MAX_KINDS) k = TB_TOPO_MAX_KINDS - 1;   /* the rest share the last */
            else t->kind[t->n_kinds++] = (tb_cpu_kind_t){.implementer = c->implementer, .part = c->part,
                                                        .capacity = c->capacity, .max_khz = c->max_khz};
        }
        t->kind[k].n++;
    }
    /* fastest first (insertion sort: a handful of kinds) */
    for (int i = 1; i < t->n_kinds; i++)
        for (int j = i; j > 0 && kind_before(&t->kind[j], &t->kind[j - 1]); j--) {
            const tb_cpu_kind_t tmp = t->kind[j];
            t->kind[j] = t->kind[j - 1];
            t->kind[j - 1] = tmp;
        }
    for (int i = 0; i < t->n_cpus; i++) {
        tb_cpu_core_t *c = &t->cpu[i];
        c->kind = t->n_kinds - 1;
        for (int k = 0; k < t->n_kinds; k++) {
            const tb_cpu_kind_t *K = &t->kind[k];
            if (K->implementer == c->implementer && K->part == c->part && K->capacity == c->capacity &&
                K->max_khz == c->max_khz) { c->kind = k; break; }
        }
    }
    for (int k = 0; k < t->n_kinds; k++) {
        tb_cpu_kind_t *K = &t->kind[k];
        const char *nm = tb_cpu_midr_name(K->implementer, K->part);
        if (nm) snprintf(K->name, sizeof K->name, "%s", nm);
        else if (K->part >= 0) snprintf(K->name, sizeof K->name, "0x%02x:0x%03x", K->implementer & 0xff, K->part);
        else K->name[0] = '\0';
    }
}

/* "asimd dotprod ..." and "1x Cortex-X4 (cap 1024, 3.30 GHz) + ...". */
static void describe(tb_cpu_topo_t *t) {
    const struct { bool on; const char *name; } fs[] = {
        {t->asimd, "asimd"}, {t->dotprod, "dotprod"}, {t->i8mm, "i8mm"}, {t->bf16, "bf16"},
        {t->sve, "sve"},     {t->sve2, "sve2"},       {t->sme, "sme"},
    };
    size_t n = 0;
    t->features[0] = '\0';
    for (size_t i = 0; i < TB_ARRAY_LEN(fs); i++)
        if (fs[i].on) n += (size_t)snprintf(t->features + n, sizeof t->features - n, "%s%s", n ? " " : "", fs[i].name);
    n = 0;
    t->summary[0] = '\0';
    for (int k = 0; k < t->n_kinds && n + 1 < sizeof t->summary; k++) {
        const tb_cpu_kind_t *K = &t->kind[k];
        char extra[64] = "";
        if (K->capacity >= 0 && K->max_khz > 0)
            snprintf(extra, sizeof extra, " (cap %d, %.2f GHz)", K->capacity, K->max_khz / 1e6);
        else if (K->capacity >= 0)
            snprintf(extra, sizeof extra, " (cap %d)", K->capacity);
        else if (K->max_khz > 0)
            snprintf(extra, sizeof extra, " (%.2f GHz)", K->max_khz / 1e6);
        n += (size_t)snprintf(t->summary + n, sizeof t->summary - n, "%s%dx %s%s", k ? " + " : "", K->n,
                              K->name[0] ? K->name : "core", extra);
    }
    if (n >= sizeof t->summary) t->summary[sizeof t->summary - 1] = '\0';
}

int tb_cpu_topo_read(const char *root, uint64_t hwcap, uint64_t hwcap2, tb_cpu_topo_t *out) {
    if (!out) return tb_err(TB_ERR_ARG, "tb_cpu_topo_read: no output");
    memset(out, 0, sizeof *out);
    char words[4096] = "";
    read_cpuinfo(out, root, words, sizeof words);
    read_sysfs(out, root);
    qsort(out->cpu, (size_t)out->n_cpus, sizeof out->cpu[0], core_cmp);
    if (hwcap || hwcap2) {
        features_hwcap(out, hwcap, hwcap2);
        snprintf(out->features_from, sizeof out->features_from, "hwcap");
    } else if (words[0]) {
        features_words(out, words);
        snprintf(out->features_from, sizeof out->features_from, "cpuinfo");
    }
    group_kinds(out);
    describe(out);
    return TB_OK;
}

/* One "key: value" line of text (NULL: none); value copied into buf. */
static const char *sysctl_value(const char *text, const char *key, char *buf, size_t cap) {
    const size_t n = strlen(key);
    for (const char *p = text; *p;) {
        if (!strncmp(p, key, n) && (p[n] == ':' || p[n] == '=')) {
            const char *v = p + n + 1;
            while (*v == ' ' || *v == '\t') v++;
            const size_t l = strcspn(v, "\n");
            snprintf(buf, cap, "%.*s", (int)TB_MIN(l, cap - 1), v);
            return buf;
        }
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    return NULL;
}

static bool sysctl_flag(const char *text, const char *key) {
    char v[32];
    return sysctl_value(text, key, v, sizeof v) && atoi(v) != 0;
}

int tb_cpu_topo_from_sysctl(const char *text, tb_cpu_topo_t *out) {
    if (!text || !out) return tb_err(TB_ERR_ARG, "tb_cpu_topo_from_sysctl: bad arguments");
    memset(out, 0, sizeof *out);
    out->asimd = sysctl_flag(text, "hw.optional.AdvSIMD") || sysctl_flag(text, "hw.optional.neon");
    out->dotprod = sysctl_flag(text, "hw.optional.arm.FEAT_DotProd");
    out->i8mm = sysctl_flag(text, "hw.optional.arm.FEAT_I8MM");
    out->bf16 = sysctl_flag(text, "hw.optional.arm.FEAT_BF16");
    out->sme = sysctl_flag(text, "hw.optional.arm.FEAT_SME");
    out->sve = sysctl_flag(text, "hw.optional.arm.FEAT_SVE");
    out->sve2 = sysctl_flag(text, "hw.optional.arm.FEAT_SVE2");
    char v[64], key[64];
    if (sysctl_value(text, "hw.optional.AdvSIMD", v, sizeof v) || sysctl_value(text, "hw.optional.neon", v, sizeof v))
        snprintf(out->features_from, sizeof out->features_from, "sysctl");
    /* hw.perflevel0 is the fastest level; logical CPU numbers are given in
     * level order (macOS does not say which number is which core, and has
     * no thread pinning to need it) */
    const int levels = sysctl_value(text, "hw.nperflevels", v, sizeof v) ? atoi(v) : 0;
    for (int l = 0; l < levels && l < TB_TOPO_MAX_KINDS; l++) {
        snprintf(key, sizeof key, "hw.perflevel%d.logicalcpu", l);
        const int n = sysctl_value(text, key, v, sizeof v) ? atoi(v) : 0;
        if (n <= 0) continue;
        tb_cpu_kind_t *K = &out->kind[out->n_kinds];
        *K = (tb_cpu_kind_t){.implementer = 0x61, .part = -1, .capacity = -1, .max_khz = -1};
        snprintf(key, sizeof key, "hw.perflevel%d.name", l);
        if (sysctl_value(text, key, v, sizeof v)) snprintf(K->name, sizeof K->name, "%.31s", v);
        else snprintf(K->name, sizeof K->name, "level %d", l);
        for (int i = 0; i < n && out->n_cpus < TB_TOPO_MAX_CPUS; i++) {
            out->cpu[out->n_cpus] = (tb_cpu_core_t){.cpu = out->n_cpus, .capacity = -1, .implementer = 0x61,
                                                    .part = -1, .max_khz = -1, .kind = out->n_kinds};
            out->n_cpus++;
            K->n++;
        }
        out->n_kinds++;
    }
    describe(out);
    return TB_OK;
}

#if defined(__APPLE__)
/* The sysctl keys tb_cpu_topo_from_sysctl reads, as "key: value" text. */
static void sysctl_text(char *buf, size_t cap) {
    static const char *const ints[] = {
        "hw.optional.AdvSIMD", "hw.optional.neon", "hw.optional.arm.FEAT_DotProd", "hw.optional.arm.FEAT_I8MM",
        "hw.optional.arm.FEAT_BF16", "hw.optional.arm.FEAT_SME", "hw.optional.arm.FEAT_SVE",
        "hw.optional.arm.FEAT_SVE2", "hw.nperflevels",
    };
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < TB_ARRAY_LEN(ints); i++) {
        int v = 0;
        size_t len = sizeof v;
        if (sysctlbyname(ints[i], &v, &len, NULL, 0) == 0 && n < cap)
            n += (size_t)snprintf(buf + n, cap - n, "%s: %d\n", ints[i], v);
    }
    for (int l = 0; l < TB_TOPO_MAX_KINDS && n < cap; l++) {
        char key[64], name[64];
        int v = 0;
        size_t len = sizeof v;
        snprintf(key, sizeof key, "hw.perflevel%d.logicalcpu", l);
        if (sysctlbyname(key, &v, &len, NULL, 0) != 0) break;
        n += (size_t)snprintf(buf + n, cap - n, "%s: %d\n", key, v);
        snprintf(key, sizeof key, "hw.perflevel%d.name", l);
        len = sizeof name;
        if (n < cap && sysctlbyname(key, name, &len, NULL, 0) == 0 && len > 0 && len <= sizeof name)
            n += (size_t)snprintf(buf + n, cap - n, "%s: %.*s\n", key, (int)strnlen(name, len), name);
    }
}
#endif

static tb_cpu_topo_t host_topo;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void host_init(void) {
    uint64_t hwcap = 0, hwcap2 = 0;
    const char *root = getenv("TB_CPU_ROOT");
#if defined(__APPLE__)
    if (!root || !*root) {
        char text[4096];
        sysctl_text(text, sizeof text);
        (void)tb_cpu_topo_from_sysctl(text, &host_topo);
        return;
    }
#endif
#if defined(__aarch64__) && defined(__linux__)
    hwcap = getauxval(AT_HWCAP);
    hwcap2 = getauxval(AT_HWCAP2);
#endif
    (void)tb_cpu_topo_read(root && *root ? root : "/", hwcap, hwcap2, &host_topo);
}

const tb_cpu_topo_t *tb_cpu_topo_host(void) {
    pthread_once(&host_once, host_init);
    return &host_topo;
}

int tb_cpu_topo_pick(const tb_cpu_topo_t *t, int n, int32_t *cpus) {
    if (!t || n < 1 || !cpus) return tb_err(TB_ERR_ARG, "tb_cpu_topo_pick: bad arguments");
    int got = 0;
    for (int k = 0; k < t->n_kinds && got < n; k++)
        for (int i = 0; i < t->n_cpus && got < n; i++)
            if (t->cpu[i].kind == k) cpus[got++] = t->cpu[i].cpu;
    return got;
}
