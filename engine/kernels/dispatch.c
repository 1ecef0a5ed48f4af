/*
 * dispatch.c — choose the kernel tier once, from libcpuid (x86-64) or the
 * kernel's hwcap words (aarch64), capped by TB_ISA.
 *
 * At first use every tier this build contains and this CPU can run gets a
 * merged table (entries a tier leaves NULL are inherited from the tier
 * below, down to ref, which is complete). The active tier is the best one,
 * capped by the TB_ISA environment variable and later by tb_isa_set().
 *
 * x86-64: AVX2 needs AVX+AVX2+FMA+F16C and the OS saving YMM state (XCR0);
 * AVX-512 additionally F+BW+VL+DQ and ZMM/opmask state. VNNI is a runtime
 * option inside the AVX-512 tier. libcpuid 0.6 fills the AVX-512 flags only
 * for Intel, so the leaf-7 bits are also read from its raw data; it has no
 * flag for AVX512_BF16 at all,
 * so that bit is read with the compiler's <cpuid.h> (leaf 7, sub-leaf 1).
 * Under valgrind the emulated CPUID reports no AVX-512, so the binary runs.
 *
 * aarch64: neon (ARMv8.0) always; dotprod (its SDOT kernels on top of
 * neon's) when HWCAP_ASIMDDP is set, so TB_ISA=neon / --isa neon runs the
 * baseline kernels on a dotprod CPU; i8mm (its SMMLA gemms on top of
 * dotprod's) when HWCAP2_I8MM is set too, each gemm kept only where it
 * times faster than dotprod's on this core (i8mm_calibrate).
 */
#include "kernels/kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <libcpuid.h>
#endif

static tb_kernels_t tables[TB_ISA_LAST + 1];
static bool table_ok[TB_ISA_LAST + 1];
static tb_isa_t best = TB_ISA_GENERIC, active = TB_ISA_GENERIC;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Feature bits found at start-up, read by the ISA tiers' fill functions. */
tb_cpu_features_t tb_cpu;
uint32_t tb_pf_bytes;
bool tb_pf_l2;
static uint32_t pf_default;
static bool pf_l2_default;

/* ---------------------------------------------------------------------- */
/* CPU detection                                                           */
/* ---------------------------------------------------------------------- */

#if defined(__x86_64__)
static void quiet_warn(const char *msg) { (void)msg; }

static uint64_t xcr0_read(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* Fill tb_cpu from libcpuid (and XCR0 for OS state support). */
static void detect_x86(void) {
    cpuid_set_warn_function(quiet_warn);
    if (!cpuid_present()) return;
    struct cpu_raw_data_t raw;
    struct cpu_id_t id;
    if (cpuid_get_raw_data(&raw) != 0 || cpu_identify(&raw, &id) != 0) return;
    const uint8_t *f = id.flags;
    uint64_t xcr0 = f[CPU_FEATURE_OSXSAVE] ? xcr0_read() : 0;
    bool ymm_os = (xcr0 & 0x06) == 0x06;            /* SSE + AVX state      */
    bool zmm_os = (xcr0 & 0xE6) == 0xE6;            /* + opmask, ZMM_Hi256, Hi16_ZMM */
    tb_cpu.avx2 = ymm_os && f[CPU_FEATURE_AVX] && f[CPU_FEATURE_AVX2] &&
                  f[CPU_FEATURE_FMA3] && f[CPU_FEATURE_F16C];
    /* libcpuid 0.6 sets the AVX-512 flags only for Intel CPUs; on AMD (Zen 4)
     * read the same bits from its raw leaf 7 (sub-leaf 0) data. */
    uint32_t b7 = 0, c7 = 0;
    if (raw.basic_cpuid[0][0] >= 7) { b7 = raw.basic_cpuid[7][1]; c7 = raw.basic_cpuid[7][2]; }
    bool f512 = f[CPU_FEATURE_AVX512F] || ((b7 >> 16) & 1);
    bool dq = f[CPU_FEATURE_AVX512DQ] || ((b7 >> 17) & 1);
    bool bw = f[CPU_FEATURE_AVX512BW] || ((b7 >> 30) & 1);
    bool vl = f[CPU_FEATURE_AVX512VL] || ((b7 >> 31) & 1);
    bool vnni = f[CPU_FEATURE_AVX512VNNI] || ((c7 >> 11) & 1);
    bool vbmi = f[CPU_FEATURE_AVX512VBMI] || ((c7 >> 1) & 1);
    tb_cpu.avx512 = tb_cpu.avx2 && zmm_os && f512 && bw && vl && dq;
    tb_cpu.avx512vnni = tb_cpu.avx512 && vnni;
    tb_cpu.avx512vbmi = tb_cpu.avx512 && vbmi;
    unsigned a, b, c, d;
    if (tb_cpu.avx512 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
        tb_cpu.avx512bf16 = (a >> 5) & 1;
    /* The software prefetch distance (docs/kernels.md, "Software
     * prefetch"), by the CPUs measured:
     * - Zen 5 (AMD family 1Ah): 8 KB; the repacked matvecs from memory at
     *   1 thread, medians TQ1_0 29 -> 39 GB/s, Q4_K 27 -> 40, Q6_K 26 -> 40.
     * - Intel Xeon Sapphire and Emerald Rapids (family 6, models 8Fh and
     *   CFh, whose cores and mesh are of one design): 4 KB; measured on an
     *   Emerald Rapids, decode at 2 threads against none 1.23-1.41x (TQ2_0,
     *   TQ1_0, Q4_0, F16), and 4 KB ahead of 8 KB on TQ2_0.
     * - Zen 4 (19h): the same prefetch in TQ1_0's matvec measured no faster.
     * Other CPUs keep 0 until measured (`ternbench --prefetch BYTES
     * kernels ...`, TB_PREFETCH). */
    if (id.vendor == VENDOR_AMD && id.ext_family >= 0x1A) pf_default = 8192;
    if (id.vendor == VENDOR_INTEL && id.family == 6 && (id.ext_model == 0x8F || id.ext_model == 0xCF)) {
        pf_default = 4096;
        pf_l2_default = true;   /* + L2 stage at 8 KB: decode 1.03-1.19x more (docs/kernels.md) */
    }
}
#endif

#if defined(__aarch64__)
/* From the kernel's hwcap words (tb_cpu_topo_host, util/cputopo.c). */
static void detect_arm(void) {
    const tb_cpu_topo_t *t = tb_cpu_topo_host();
    tb_cpu.neon = true;                     /* mandatory on aarch64 */
    tb_cpu.dotprod = t->dotprod;
    tb_cpu.i8mm = t->i8mm;
}
#endif

#if defined(__aarch64__)
/* Best of 3 timed runs of gemm g of type t on a fixed shape (32 rows of
 * 1024 columns, 4 tokens; bytes 0x11: small normal scales), in ns; -1
 * when the buffers cannot be had. The shape is in cache: this times the
 * instructions, as prefill (whose weight rows are reused across tokens)
 * runs them. */
static double time_gemm(tb_gemm_fn g, tb_type_t t) {
    enum { ROWS = 32, COLS = 1024, TOK = 4, REPS = 3 };
    const size_t ws = tb_type_row_bytes(t, COLS), as = tb_act_row_bytes(t, COLS);
    void *W = malloc(ws * ROWS), *A = malloc(as * TOK);
    float *Y = malloc(sizeof(float) * ROWS * TOK);
    double best_ns = -1;
    if (W && A && Y) {
        memset(W, 0x11, ws * ROWS);
        memset(A, 0x11, as * TOK);
        for (int r = 0; r < REPS; r++) {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            g(W, ws, A, as, TOK, Y, ROWS, 0, ROWS, COLS);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            const double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
            if (best_ns < 0 || ns < best_ns) best_ns = ns;
        }
    }
    free(W);
    free(A);
    free(Y);
    return best_ns;
}

/* The i8mm tier keeps its SMMLA gemm of a format only where it beats
 * dotprod's on this core (TB_I8MM=auto, the default), or as TB_I8MM says
 * (smmla, sdot; another value is ignored); its features string names the
 * choice. Both gemms give the same bits, so only speed changes. */
static void i8mm_calibrate(void) {
    static char feat[96];
    const char *mode = getenv("TB_I8MM");
    const bool timed = !mode || !*mode || strcasecmp(mode, "auto") == 0 ||
                       (strcasecmp(mode, "smmla") != 0 && strcasecmp(mode, "sdot") != 0);
    double sdot_ns[TB_I8MM_N] = {0}, mm_ns[TB_I8MM_N] = {0};
    for (int i = 0; i < TB_I8MM_N && timed; i++) {
        const tb_type_t t = tb_i8mm_types[i];
        for (int k = 0; k < 2; k++) {   /* interleaved: a clock change hits both */
            const double a = time_gemm(tables[TB_ISA_DOTPROD].t[t].gemm, t);
            const double b = time_gemm(tables[TB_ISA_I8MM].t[t].gemm, t);
            if (k == 0 || a < sdot_ns[i]) sdot_ns[i] = a;
            if (k == 0 || b < mm_ns[i]) mm_ns[i] = b;
        }
    }
    bool use[TB_I8MM_N];
    if (tb_i8mm_choose(timed ? NULL : mode, sdot_ns, mm_ns, use) != TB_OK) tb_clear_error();
    for (int i = 0; i < TB_I8MM_N; i++)
        if (!use[i]) tables[TB_ISA_I8MM].t[tb_i8mm_types[i]].gemm = tables[TB_ISA_DOTPROD].t[tb_i8mm_types[i]].gemm;
    tb_i8mm_describe(use, feat, sizeof feat);
    tables[TB_ISA_I8MM].features = feat;
}
#endif

/* ---------------------------------------------------------------------- */
/* Tables                                                                  */
/* ---------------------------------------------------------------------- */

static void inherit(tb_kernels_t *dst, const tb_kernels_t *lower) {
    for (int t = 0; t < TB_TYPE_COUNT; t++) {
        tb_type_kernels_t *d = &dst->t[t];
        const tb_type_kernels_t *l = &lower->t[t];
        if (!d->quantize_act) d->quantize_act = l->quantize_act;
        if (!d->vec_dot) d->vec_dot = l->vec_dot;
        if (!d->matvec) d->matvec = l->matvec;
        if (!d->gemm) d->gemm = l->gemm;
    }
    if (!dst->read_sum) dst->read_sum = lower->read_sum;
}

/* Build tier `isa` with `fill` on top of tier `below`. */
static void add_tier(tb_isa_t isa, tb_isa_t below, void (*fill)(tb_kernels_t *)) {
    tables[isa].isa = isa;
    tables[isa].features = "";
    fill(&tables[isa]);
    tables[isa].isa = isa;
    inherit(&tables[isa], &tables[below]);
    table_ok[isa] = true;
    best = isa;
}

/* Highest available tier at or below cap. */
static tb_isa_t cap_to(tb_isa_t cap) {
    tb_isa_t t = cap < best ? cap : best;
    while (t > TB_ISA_REF && !table_ok[t]) t--;
    return t;
}

/* s as a prefetch distance: decimal bytes, 0 or a multiple of 64 up to
 * TB_PREFETCH_MAX. Sets the sticky error (without the option's name) and
 * returns TB_ERR_ARG otherwise. */
static int prefetch_parse(const char *s, uint32_t *out) {
    char *end;
    const unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return tb_err(TB_ERR_ARG, "not a number of bytes");
    if (v > TB_PREFETCH_MAX || v % 64 != 0)
        return tb_err(TB_ERR_ARG, "prefetch distance %s: expected 0 or a multiple of 64 up to %d bytes", s,
                      TB_PREFETCH_MAX);
    *out = (uint32_t)v;
    return TB_OK;
}

static void init(void) {
    tb_kernels_fill_ref(&tables[TB_ISA_REF]);
    tables[TB_ISA_REF].isa = TB_ISA_REF;
    if (!tables[TB_ISA_REF].read_sum) tables[TB_ISA_REF].read_sum = tb_read_sum_generic;
    table_ok[TB_ISA_REF] = true;
    add_tier(TB_ISA_GENERIC, TB_ISA_REF, tb_kernels_fill_generic);
#if defined(__x86_64__)
    detect_x86();
    if (tb_cpu.avx2) add_tier(TB_ISA_AVX2, TB_ISA_GENERIC, tb_kernels_fill_avx2);
    if (tb_cpu.avx512) add_tier(TB_ISA_AVX512, TB_ISA_AVX2, tb_kernels_fill_avx512);
#elif defined(__aarch64__)
    detect_arm();
    add_tier(TB_ISA_NEON, TB_ISA_GENERIC, tb_kernels_fill_neon);
    if (tb_cpu.dotprod) add_tier(TB_ISA_DOTPROD, TB_ISA_NEON, tb_kernels_fill_neon_dotprod);
    if (tb_cpu.dotprod && tb_cpu.i8mm) {
        add_tier(TB_ISA_I8MM, TB_ISA_DOTPROD, tb_kernels_fill_i8mm);
        i8mm_calibrate();
    }
#endif
    tb_pf_bytes = pf_default;
    const char *pf = getenv("TB_PREFETCH");
    if (pf && *pf && prefetch_parse(pf, &tb_pf_bytes) != TB_OK)   /* as TB_ISA: a bad value is ignored */
        tb_pf_bytes = pf_default;
    tb_pf_l2 = pf_l2_default;
    const char *l2 = getenv("TB_PREFETCH_L2");
    if (l2 && (!strcmp(l2, "0") || !strcmp(l2, "1"))) tb_pf_l2 = l2[0] == '1';   /* else ignored */
    active = best;
    const char *env = getenv("TB_ISA");
    if (env && *env) {
        for (unsigned i = 0; i <= TB_ISA_LAST; i++)
            if (strcasecmp(env, tb_isa_name((tb_isa_t)i)) == 0) {
                active = cap_to((tb_isa_t)i);
                break;
            }
    }
}

const tb_kernels_t *tb_kernels(void) {
    pthread_once(&once, init);
    return &tables[active];
}

const tb_kernels_t *tb_kernels_for(tb_isa_t isa) {
    pthread_once(&once, init);
    if ((unsigned)isa > TB_ISA_LAST || !table_ok[isa]) return NULL;
    return &tables[isa];
}

tb_isa_t tb_isa_best(void) { pthread_once(&once, init); return best; }
tb_isa_t tb_isa_active(void) { pthread_once(&once, init); return active; }

int tb_isa_set(tb_isa_t cap) {
    pthread_once(&once, init);
    if ((unsigned)cap > TB_ISA_LAST || !table_ok[cap])
        return tb_err(TB_ERR_UNSUPPORTED, "ISA tier '%s' is not available on this CPU/build (best: %s)",
                      tb_isa_name(cap), tb_isa_name(best));
    active = cap;
    return TB_OK;
}

size_t tb_prefetch_bytes(void) { pthread_once(&once, init); return tb_pf_bytes; }
size_t tb_prefetch_default(void) { pthread_once(&once, init); return pf_default; }

int tb_prefetch_set(size_t bytes) {
    pthread_once(&once, init);
    if (bytes > TB_PREFETCH_MAX || bytes % 64 != 0)
        return tb_err(TB_ERR_ARG, "prefetch distance %zu: expected 0 or a multiple of 64 up to %d bytes", bytes,
                      TB_PREFETCH_MAX);
    tb_pf_bytes = (uint32_t)bytes;
    return TB_OK;
}

bool tb_prefetch_l2(void) { pthread_once(&once, init); return tb_pf_l2; }

void tb_prefetch_set_l2(bool on) {
    pthread_once(&once, init);
    tb_pf_l2 = on;
}

int tb_prefetch_set_str(const char *s) {
    pthread_once(&once, init);
    return prefetch_parse(s, &tb_pf_bytes);
}

static const char *const isa_names[] = {"ref", "generic", "avx2", "avx512", "neon", "dotprod", "i8mm"};

const char *tb_isa_name(tb_isa_t isa) {
    return (unsigned)isa < TB_ARRAY_LEN(isa_names) ? isa_names[isa] : "?";
}

int tb_isa_from_name(const char *name, tb_isa_t *out) {
    for (unsigned i = 0; i < TB_ARRAY_LEN(isa_names); i++)
        if (strcasecmp(name, isa_names[i]) == 0) { *out = (tb_isa_t)i; return TB_OK; }
    return tb_err(TB_ERR_ARG, "unknown ISA tier '%s' (expected ref, generic, avx2, avx512, neon, dotprod or i8mm)", name);
}

const char *tb_isa_features(void) { return tb_kernels()->features; }

size_t tb_act_row_bytes(tb_type_t wtype, int64_t n) {
    const tb_type_traits_t *tr = tb_type_traits(wtype);
    if (!tr) return 0;
    return tb_type_row_bytes(tr->vec_dot_type, n);
}
