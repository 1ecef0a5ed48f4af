/*
 * ternbench.h — the ternbench inference engine, public API.
 *
 * A small, complete engine for GGUF language models (dense and MoE, llama and
 * maple architectures) whose purpose is to be *measured*: every decoded token
 * can be accounted for in bytes read, and every kernel has a scalar reference.
 *
 * Example (error handling shortened):
 *
 *     tb_model_t *m;
 *     if (tb_model_load("model.gguf", &m) != TB_OK) {
 *         fprintf(stderr, "%s\n", tb_last_error()); return 1;
 *     }
 *     tb_session_params_t sp = tb_session_default_params();
 *     sp.n_ctx = 1024; sp.n_threads = 2;
 *     tb_session_t *s;  tb_session_new(m, &sp, &s);
 *     int32_t ids[256];
 *     int n = tb_tokenize(tb_model_tokenizer(m), "Hello", 5, true, false, ids, 256);
 *     tb_session_eval(s, ids, n, false);               // prefill
 *     tb_sampler_t *smp; tb_sampler_new(&(tb_sampler_params_t){.temp = 0}, &smp);
 *     for (int i = 0; i < 32; i++) {
 *         int32_t t = tb_sampler_sample(smp, tb_session_logits(s, -1), tb_model_n_vocab(m));
 *         char buf[64];                                    // see tb_detok_*
 *         for (int k = tb_detok_push(d, t, buf, sizeof buf); k > 0;
 *              k = tb_detok_drain(d, buf, sizeof buf))
 *             fwrite(buf, 1, k, stdout);
 *         tb_session_eval(s, &t, 1, false);            // decode
 *     }
 *     tb_sampler_free(smp); tb_session_free(s); tb_model_free(m);
 *
 * Error model: functions return int status (TB_OK == 0, negative tb_status
 * on failure) and set a thread-local sticky message readable with
 * tb_last_error(); the message stays until the next failure or
 * tb_clear_error(). The library never prints and never calls exit().
 *
 * Ownership: every tb_X_new/open/load has a matching tb_X_free/close; objects
 * returned by accessors (tb_model_tokenizer, tb_model_gguf, strings from a
 * gguf) are borrowed and live as long as their owner.
 *
 * Threading: a tb_session_t runs its forward pass on its own thread pool of
 * n_threads (the caller's thread included), or on one it borrows
 * (tb_session_params_t.pool). Distinct sessions may be used from distinct
 * threads unless they share a pool; one session must not be used from two
 * threads at once. Models are immutable after load and may be shared by
 * sessions.
 */
#ifndef TERNBENCH_H
#define TERNBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TB_VERSION_STRING "0.1.0"

/* ===================================================================== */
/* Errors                                                                 */
/* ===================================================================== */

typedef enum tb_status {
    TB_OK              = 0,
    TB_ERR_IO          = -1,  /* open/read/write/mmap failed (errno text in message) */
    TB_ERR_FORMAT      = -2,  /* malformed file: message names the byte offset       */
    TB_ERR_NOMEM       = -3,
    TB_ERR_ARG         = -4,  /* caller passed an invalid argument                    */
    TB_ERR_UNSUPPORTED = -5,  /* valid but not supported (arch, type, ISA)            */
    TB_ERR_RANGE       = -6,  /* context full, id out of range, buffer too small      */
    TB_ERR_NOT_FOUND   = -7,  /* key or tensor absent                                 */
    TB_ERR_INTERNAL    = -8,
} tb_status_t;

/* Last error message of this thread ("" when none). Never NULL. */
const char *tb_last_error(void);
void tb_clear_error(void);
const char *tb_status_name(int status);
/* Set this thread's sticky message (printf-style) and return `status`, so
 * a caller writes `return tb_err(TB_ERR_ARG, "...")`; for the library and
 * for the layers built on it (the ternbench harness, store, report), which
 * report their errors through the same message. */
int tb_err(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message: "<prefix>: <old message>"; returns status. */
int tb_err_prefix(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ===================================================================== */
/* Tensor element types — numbering identical to ggml's enum ggml_type    */
/* ===================================================================== */

typedef enum tb_type {
    TB_TYPE_F32   = 0,
    TB_TYPE_F16   = 1,
    TB_TYPE_Q4_0  = 2,
    TB_TYPE_Q8_0  = 8,
    TB_TYPE_Q4_K  = 12,
    TB_TYPE_Q6_K  = 14,
    TB_TYPE_Q8_K  = 15,   /* activation format only */
    TB_TYPE_BF16  = 30,
    TB_TYPE_TQ1_0 = 34,
    TB_TYPE_TQ2_0 = 35,
    TB_TYPE_COUNT = 40,   /* one past the largest ggml id we reserve */
} tb_type_t;

/* True when `t` is a type ternbench can read and compute with. */
bool tb_type_supported(uint32_t t);
/* Name as ggml spells it, lower-case ("q4_K" -> "q4_k", "tq2_0", "f16"); "?" if unknown. */
const char *tb_type_name(tb_type_t t);
/* Case-insensitive parse of a type name; TB_ERR_ARG if unknown. */
int tb_type_from_name(const char *name, tb_type_t *out);
int64_t tb_type_block_elems(tb_type_t t);   /* elements per block (1 for float types) */
size_t  tb_type_block_bytes(tb_type_t t);   /* bytes per block                        */
/* Bytes of a row of n elements; 0 if n is not a multiple of the block size. */
size_t  tb_type_row_bytes(tb_type_t t, int64_t n);

/* Scalar reference quantization / dequantization of one row (n % block == 0). */
int tb_quantize_row(tb_type_t t, const float *src, void *dst, int64_t n);
int tb_dequantize_row(tb_type_t t, const void *src, float *dst, int64_t n);

/* ===================================================================== */
/* ISA tiers and kernel dispatch                                          */
/* ===================================================================== */

typedef enum tb_isa {
    TB_ISA_REF     = 0,  /* scalar reference (the specification)     */
    TB_ISA_GENERIC = 1,  /* portable C, auto-vectorisable             */
    TB_ISA_AVX2    = 2,  /* x86-64 AVX2 + FMA + F16C                  */
    TB_ISA_AVX512  = 3,  /* x86-64 AVX-512 F/BW/VL (+VNNI/BF16 used when present) */
    TB_ISA_NEON    = 4,  /* aarch64 NEON, ARMv8.0 (widening multiplies)  */
    TB_ISA_DOTPROD = 5,  /* aarch64 NEON + SDOT (ARMv8.2 dotprod)        */
    TB_ISA_I8MM    = 6,  /* aarch64 dotprod + SMMLA prefill gemms (FEAT_I8MM) */
} tb_isa_t;
#define TB_ISA_LAST TB_ISA_I8MM

/* On aarch64 the tiers come from tb_cpu_topo_host()'s features (the hwcap
 * words): neon always, dotprod when the CPU has asimddp, i8mm when it also
 * has i8mm (its SMMLA gemms kept per format only where a start-up timing
 * finds them faster than SDOT's; TB_I8MM=smmla|sdot forces the choice,
 * and tb_isa_features() names it). */

/* Highest tier this CPU supports (libcpuid on x86, the hwcap words on aarch64). */
tb_isa_t tb_isa_best(void);
/* Tier in use: best, capped by the TB_ISA environment variable at first use,
 * and by tb_isa_set(). */
tb_isa_t tb_isa_active(void);
/* Cap the tier (a tier above tb_isa_best() is TB_ERR_UNSUPPORTED). Not
 * thread-safe against running sessions: call before creating sessions. */
int tb_isa_set(tb_isa_t cap);
const char *tb_isa_name(tb_isa_t isa);
int tb_isa_from_name(const char *name, tb_isa_t *out);
/* Comma-separated CPU features the active tier makes use of ("avx512f,avx512bw,avx512vnni"). */
const char *tb_isa_features(void);

/* Software prefetch in the streaming matvecs (decode's weight reads): how
 * many bytes ahead of the block being read its lines are requested; 0
 * leaves it to the hardware prefetcher. The default is chosen per CPU at
 * first use (tb_prefetch_default: 8192 on AMD family 1Ah, Zen 5, where the
 * hardware prefetcher alone left TQ1_0's matvec at 25-30 GB/s of a core's
 * 43-45; 4096 on Intel Xeon Sapphire/Emerald Rapids; 0 elsewhere, as
 * measured on Zen 4), then the TB_PREFETCH environment variable (bytes)
 * overrides it, then tb_prefetch_set(). Results do not depend on it. Like
 * tb_isa_set, call it between runs, not during one. */
#define TB_PREFETCH_MAX 65536
size_t tb_prefetch_bytes(void);
size_t tb_prefetch_default(void);
/* bytes: 0 or a multiple of 64 up to TB_PREFETCH_MAX, else TB_ERR_ARG. */
int tb_prefetch_set(size_t bytes);
/* The same from text (decimal bytes, as TB_PREFETCH takes it): TB_ERR_ARG
 * "not a number of bytes" or the range error above. */
int tb_prefetch_set_str(const char *s);
/* The L2 stage: each line is also requested into L2 (prefetcht2) twice the
 * distance ahead, so that the nearer request finds it there. On by default
 * where measured faster (Intel Xeon Sapphire/Emerald Rapids), else off;
 * TB_PREFETCH_L2=0|1 overrides it, then tb_prefetch_set_l2(). Nothing is
 * requested at either stage while the distance is 0. */
bool tb_prefetch_l2(void);
void tb_prefetch_set_l2(bool on);

/* ===================================================================== */
/* Thread pool and raw kernels (for benchmarks and tools)                 */
/* ===================================================================== */

typedef struct tb_pool tb_pool_t;
int  tb_pool_new(int n_threads, tb_pool_t **out);
int  tb_pool_n_threads(const tb_pool_t *p);
/* The CPU each of the pool's first cap threads is pinned to (-1: not
 * pinned, or the pin was refused), as tb_cpus_get's placement chose when
 * the pool started; the caller's thread 0 is pinned only in pools of more
 * than one thread. A worker that has not started yet reads -1. Returns how
 * many were written. */
int  tb_pool_cpus(const tb_pool_t *p, int32_t *cpus, int cap);
/* Run fn(arg, ith, nth) on every thread (ith = 0 is the caller) and wait. */
void tb_pool_run(tb_pool_t *p, void (*fn)(void *arg, int ith, int nth), void *arg);
void tb_pool_free(tb_pool_t *p);

/* y (rows) = W (rows, cols) · x (cols), W in type wtype, file layout.
 * x is quantized to the weight type's activation format once. pool may be NULL. */
int tb_matvec(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows,
              int64_t cols, const float *x, float *y);
/* Y (n, rows) = X (n, cols) · W^T; the prefill form of tb_matvec. */
int tb_matmul(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows,
              int64_t cols, const float *X, int64_t n, float *Y);

/* A stack of n_mat weight matrices (rows, cols) prepared as tb_model_load
 * prepares the model's: copied into huge-page memory and, when the kernel
 * tier active at creation has a faster layout for the type, repacked for
 * it. W (file layout) is not kept. Multiplies read the prepared copy; other
 * tiers (after tb_isa_set) read the file-layout copy. */
typedef struct tb_weights tb_weights_t;
int  tb_weights_new(tb_type_t type, const void *W, int64_t rows, int64_t cols, int64_t n_mat,
                    tb_weights_t **out);
void tb_weights_free(tb_weights_t *w);
/* Bytes held: the file-layout copy plus the repacked one. */
size_t tb_weights_resident_bytes(const tb_weights_t *w);
/* y (rows) = W[mat] · x; Y (n, rows) = X (n, cols) · W[mat]^T. */
int  tb_weights_matvec(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, const float *x, float *y);
int  tb_weights_matmul(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, const float *X, int64_t n,
                       float *Y);

/* Activations (n, cols) already in weight type wtype's activation format
 * (Q8_K, Q8_0 or f32), so that a benchmark can time the weight pass alone,
 * as the forward pass runs it after its prologue. tb_act_set quantizes X
 * (n, cols) with the tier active at the call; the *_act multiplies then
 * give the same bits as tb_weights_matvec / tb_weights_matmul on X under
 * that tier. */
typedef struct tb_act tb_act_t;
int  tb_act_new(tb_type_t wtype, int64_t cols, int64_t n, tb_act_t **out);
int  tb_act_set(tb_act_t *a, const float *X);
void tb_act_free(tb_act_t *a);
int  tb_weights_matvec_act(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, const tb_act_t *a, float *y);
int  tb_weights_matmul_act(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, const tb_act_t *a, float *Y);

/* Monotonic clock in nanoseconds. */
uint64_t tb_now_ns(void);

/* Best-of-`reps` read bandwidth in GB/s (1e9 B/s) streaming `bytes` with
 * n_threads threads (summing 64-bit words, so reads cannot be elided). */
int tb_bandwidth_probe(int n_threads, size_t bytes, int reps, double *gbps);

/* The effective clock of each of n_threads threads' cores now, in GHz
 * (ghz: n_threads values): each thread times a chain of dependent integer
 * adds (one per cycle on x86-64 and aarch64), best of `reps` passes of
 * ~1 ms. Below the core's clock when the core was not running at full
 * speed while probed: frequency scaling, thermal throttling, or a
 * hypervisor sharing the CPU. */
int tb_cpu_probe(int n_threads, int reps, double *ghz);

/* The vector throughput of each of n_threads threads' cores now, in
 * vector ops per nanosecond (gops: n_threads values): each thread times
 * independent chains of 16-byte integer multiply-adds, best of `reps`
 * passes (~0.7 ms each at 9 ops per ns). A figure to compare with the
 * same core's earlier ones, not across CPUs. Falls where tb_cpu_probe
 * does, and also where it does not: when another hardware thread (a
 * hypervisor's SMT sibling) shares the core's vector units. */
int tb_cpu_probe_vec(int n_threads, int reps, double *gops);

/* ===================================================================== */
/* CPU features and core kinds from the kernel (ARM; no libcpuid)         */
/* ===================================================================== */

#define TB_TOPO_MAX_CPUS 256
#define TB_TOPO_MAX_KINDS 8

/* One logical CPU. Unknown values are -1. */
typedef struct tb_cpu_core {
    int32_t cpu;           /* logical CPU number (sysfs cpuN, cpuinfo "processor") */
    int32_t capacity;      /* cpu_capacity: the scheduler's relative speed, 1024 the fastest */
    int32_t implementer;   /* MIDR implementer ("CPU implementer": 0x41 Arm, 0x51 Qualcomm, 0x61 Apple) */
    int32_t part;          /* MIDR part number ("CPU part": 0xd0b Cortex-A76, ...) */
    int32_t max_khz;       /* cpufreq/cpuinfo_max_freq in kHz */
    int32_t kind;          /* index into tb_cpu_topo_t.kind */
} tb_cpu_core_t;

/* Cores of one kind: same implementer, part, capacity and top clock. */
typedef struct tb_cpu_kind {
    char name[32];         /* "Cortex-X4", else "0xIM:0xPRT", "" when the part is unknown */
    int32_t implementer, part, capacity, max_khz;
    int32_t n;             /* cores of this kind */
} tb_cpu_kind_t;

typedef struct tb_cpu_topo {
    /* aarch64 features: from the hwcap words, else from cpuinfo's "Features" */
    bool asimd, dotprod, i8mm, sve, sve2, sme, bf16;
    char features[96];         /* those present, space-separated: "asimd dotprod i8mm" */
    char features_from[16];    /* "hwcap", "cpuinfo" or "" (none found) */
    int32_t n_cpus;
    tb_cpu_core_t cpu[TB_TOPO_MAX_CPUS];   // (n_cpus) ordered by cpu number
    int32_t n_kinds;
    tb_cpu_kind_t kind[TB_TOPO_MAX_KINDS]; // (n_kinds) fastest first: capacity, top clock, part
    char summary[192];         /* "1x Cortex-X4 (cap 1024, 3.30 GHz) + 3x Cortex-A720 (...) + ..." */
} tb_cpu_topo_t;

/* Read the topology under root ("/" for this machine; a directory holding
 * proc/cpuinfo and sys/devices/system/cpu/ for a fake tree) with the
 * aarch64 capability words hwcap, hwcap2 (getauxval(AT_HWCAP/AT_HWCAP2);
 * both 0: the features come from cpuinfo's "Features" line). Missing files
 * leave values unknown; TB_ERR_ARG only for a NULL out. */
int tb_cpu_topo_read(const char *root, uint64_t hwcap, uint64_t hwcap2, tb_cpu_topo_t *out);
/* The same from macOS sysctl facts as `sysctl hw` prints them ("key: value"
 * lines): hw.optional.AdvSIMD (or .neon), hw.optional.arm.FEAT_DotProd,
 * _I8MM, _BF16, _SME, _SVE, _SVE2, hw.nperflevels and per level N
 * hw.perflevelN.logicalcpu and .name (level 0 the fastest: its cores are
 * numbered first). features_from is "sysctl"; kinds are the levels.
 * TB_ERR_ARG only for NULL arguments. */
int tb_cpu_topo_from_sysctl(const char *text, tb_cpu_topo_t *out);
/* This machine's, read once (Linux: hwcaps from getauxval on aarch64, 0
 * elsewhere, and root "/" or the TB_CPU_ROOT environment variable; macOS:
 * sysctl, unless TB_CPU_ROOT is set). Never NULL. */
const tb_cpu_topo_t *tb_cpu_topo_host(void);
/* Name of a MIDR implementer/part pair ("Cortex-A76"), NULL if not listed. */
const char *tb_cpu_midr_name(int implementer, int part);
/* Up to n logical CPU numbers into cpus, fastest kind first (then by
 * number): the default placement of n threads. Returns how many (fewer
 * than n when the topology has fewer cores; 0 when it found none). */
int tb_cpu_topo_pick(const tb_cpu_topo_t *t, int n, int32_t *cpus);

/* Thread placement: the CPUs pool threads are pinned to when a pool
 * starts, thread i (the caller is 0) on entry i mod n. Set by tb_cpus_set,
 * else the TB_CPUS environment variable (a CPU list, read at first use; a
 * bad one is ignored), else the default: on ARM, where the cores are of
 * more than one kind (MIDR parts known), every core fastest kind first
 * (tb_cpu_topo_pick), so n threads use the n fastest cores; elsewhere none
 * (the kernel places threads).
 * Like tb_isa_set, set it before creating sessions. */
/* Parse a CPU list "0-3,6" into cpus (cap entries): the count, or
 * TB_ERR_ARG naming the bad part. */
int tb_cpus_parse(const char *list, int32_t *cpus, int cap);
/* Placement of n CPUs (each 0..CPU_SETSIZE-1); n = 0 restores the default. */
int tb_cpus_set(const int32_t *cpus, int n);
/* The same from a CPU list (the CLI's --cpus). */
int tb_cpus_set_str(const char *list);
/* The placement in force into cpus (cap entries): how many; 0 = unpinned. */
int tb_cpus_get(int32_t *cpus, int cap);
/* Pin the calling thread as pool thread ith: its CPU, or -1 (no placement,
 * or the kernel refused: a CPU outside the process's cpuset, offline). */
int tb_cpus_pin_thread(int ith);
/* The CPU the calling thread runs on now (sched_getcpu), -1 if unknown. */
int tb_cpus_current(void);

/* ===================================================================== */
/* GGUF v3 reader                                                         */
/* ===================================================================== */

typedef enum tb_gguf_vtype {
    TB_GGUF_UINT8 = 0, TB_GGUF_INT8 = 1, TB_GGUF_UINT16 = 2, TB_GGUF_INT16 = 3,
    TB_GGUF_UINT32 = 4, TB_GGUF_INT32 = 5, TB_GGUF_FLOAT32 = 6, TB_GGUF_BOOL = 7,
    TB_GGUF_STRING = 8, TB_GGUF_ARRAY = 9, TB_GGUF_UINT64 = 10, TB_GGUF_INT64 = 11,
    TB_GGUF_FLOAT64 = 12,
    TB_GGUF_VTYPE_COUNT
} tb_gguf_vtype_t;

typedef struct tb_gguf tb_gguf_t;

/* A metadata value. Strings are NOT NUL-terminated (use len); pointers
 * point into the mapping and live as long as the tb_gguf_t. */
typedef struct tb_gguf_value {
    tb_gguf_vtype_t type;
    union {
        uint64_t u64;     /* UINT8..UINT64 and BOOL            */
        int64_t  i64;     /* INT8..INT64                        */
        double   f64;     /* FLOAT32, FLOAT64                   */
        struct { const char *ptr; uint64_t len; } str;
        struct {
            tb_gguf_vtype_t type;  /* element type (may be ARRAY: nested) */
            uint64_t n;            /* element count                       */
            const void *handle;    /* opaque; pass to tb_gguf_arr_get     */
        } arr;
    } v;
} tb_gguf_value_t;

typedef struct tb_gguf_tensor {
    const char *name;      /* NUL-terminated copy owned by the tb_gguf_t */
    tb_type_t type;
    int n_dims;
    int64_t ne[4];         /* ne[0] is the contiguous (row) dimension; unused dims are 1 */
    uint64_t offset;       /* relative to the data section                */
    uint64_t nbytes;
    const void *data;      /* into the mapping                            */
} tb_gguf_tensor_t;

/* Map and fully validate a GGUF file. On TB_ERR_FORMAT the message names
 * the file, the byte offset and what was expected. */
int  tb_gguf_open(const char *path, tb_gguf_t **out);
void tb_gguf_close(tb_gguf_t *g);

uint32_t tb_gguf_version(const tb_gguf_t *g);
uint64_t tb_gguf_alignment(const tb_gguf_t *g);
uint64_t tb_gguf_file_size(const tb_gguf_t *g);
uint64_t tb_gguf_data_offset(const tb_gguf_t *g);
const char *tb_gguf_path(const tb_gguf_t *g);

int64_t tb_gguf_n_kv(const tb_gguf_t *g);
const char *tb_gguf_kv_key(const tb_gguf_t *g, int64_t i);   /* NUL-terminated */
int  tb_gguf_kv_value(const tb_gguf_t *g, int64_t i, tb_gguf_value_t *out);
int64_t tb_gguf_find_kv(const tb_gguf_t *g, const char *key);  /* -1 if absent */
/* Element idx of an array value (any element type, strings included). */
int  tb_gguf_arr_get(const tb_gguf_t *g, const tb_gguf_value_t *arr, uint64_t idx,
                     tb_gguf_value_t *out);

/* Typed getters: TB_ERR_NOT_FOUND if absent, TB_ERR_FORMAT if the stored
 * type does not convert losslessly (any integer type to the target when in
 * range; FLOAT32/64 for floats; BOOL for bool). */
int tb_gguf_get_u32(const tb_gguf_t *g, const char *key, uint32_t *out);
int tb_gguf_get_i64(const tb_gguf_t *g, const char *key, int64_t *out);
int tb_gguf_get_f32(const tb_gguf_t *g, const char *key, float *out);
int tb_gguf_get_bool(const tb_gguf_t *g, const char *key, bool *out);
/* String into buf (NUL-terminated; TB_ERR_RANGE if it does not fit). */
int tb_gguf_get_str(const tb_gguf_t *g, const char *key, char *buf, size_t cap);

int64_t tb_gguf_n_tensors(const tb_gguf_t *g);
int  tb_gguf_tensor(const tb_gguf_t *g, int64_t i, tb_gguf_tensor_t *out);
int64_t tb_gguf_find_tensor(const tb_gguf_t *g, const char *name); /* -1 if absent */

/* Human-readable name of a metadata value type ("uint32", "array", ...). */
const char *tb_gguf_vtype_name(tb_gguf_vtype_t t);

/* ===================================================================== */
/* GGUF v3 writer — streams tensor data, never holds the file in memory   */
/* ===================================================================== */

typedef struct tb_gguf_writer tb_gguf_writer_t;

/* Usage: new → set_* / add_tensor (declare all) → begin(path) →
 * write_tensor_data for each tensor in declaration order (any number of
 * chunks per tensor) → finish. begin() creates a private temporary beside
 * PATH (PATH.XXXXXX.tmp, unique per writer) and finish() renames it to PATH,
 * so a killed writer never leaves a half file under the final name and two
 * writers of one PATH publish one complete file each, the last rename
 * winning. A SIGKILLed writer leaves its PATH.XXXXXX.tmp behind. */
int  tb_gguf_writer_new(tb_gguf_writer_t **out);
void tb_gguf_writer_free(tb_gguf_writer_t *w);   /* removes the temporary if unfinished */
/* Remove the temporary file of every writer of this process that has begun
 * and not finished. Async-signal-safe: for a SIGINT/SIGTERM handler that
 * then terminates the process (the writers are left unusable). */
void tb_gguf_writer_remove_inflight(void);

int tb_gguf_set_u8  (tb_gguf_writer_t *w, const char *key, uint8_t v);
int tb_gguf_set_u32 (tb_gguf_writer_t *w, const char *key, uint32_t v);
int tb_gguf_set_i32 (tb_gguf_writer_t *w, const char *key, int32_t v);
int tb_gguf_set_u64 (tb_gguf_writer_t *w, const char *key, uint64_t v);
int tb_gguf_set_f32 (tb_gguf_writer_t *w, const char *key, float v);
int tb_gguf_set_bool(tb_gguf_writer_t *w, const char *key, bool v);
int tb_gguf_set_str (tb_gguf_writer_t *w, const char *key, const char *v);
/* Arrays of fixed-size elements: data holds n elements of `type` (LE). */
int tb_gguf_set_arr (tb_gguf_writer_t *w, const char *key, tb_gguf_vtype_t type,
                     const void *data, uint64_t n);
int tb_gguf_set_arr_str(tb_gguf_writer_t *w, const char *key,
                        const char *const *strs, const uint64_t *lens, uint64_t n);
/* Copy key/value i of a reader verbatim (nested arrays included). */
int tb_gguf_copy_kv(tb_gguf_writer_t *w, const tb_gguf_t *src, int64_t i);
int tb_gguf_set_alignment(tb_gguf_writer_t *w, uint32_t alignment); /* default 32 */

/* Declare a tensor; ne[0] is the row length and must be a block multiple. */
int tb_gguf_add_tensor(tb_gguf_writer_t *w, const char *name, tb_type_t type,
                       int n_dims, const int64_t *ne);
int tb_gguf_writer_begin(tb_gguf_writer_t *w, const char *path);
int tb_gguf_write_tensor_data(tb_gguf_writer_t *w, const void *data, size_t n);
int tb_gguf_writer_finish(tb_gguf_writer_t *w);

/* ===================================================================== */
/* Tokenizer                                                              */
/* ===================================================================== */

typedef struct tb_tokenizer tb_tokenizer_t;

/* Build from tokenizer.ggml.* metadata (model "llama" = SentencePiece BPE
 * with byte fallback, "gpt2" = byte-level BPE with tokenizer.ggml.pre).
 * Pre-tokenizers follow llama.cpp's names (gpt-2, qwen2, llama3, ...; see
 * engine/text/pretok.c); an absent or unknown tokenizer.ggml.pre falls back
 * to the GPT-2 pattern. The tokenizer copies what it needs (it may outlive
 * g) and is immutable: tb_tokenize may run on many threads at once. */
int  tb_tokenizer_from_gguf(const tb_gguf_t *g, tb_tokenizer_t **out);
void tb_tokenizer_free(tb_tokenizer_t *t);

int32_t tb_tokenizer_n_vocab(const tb_tokenizer_t *t);
int32_t tb_tokenizer_bos(const tb_tokenizer_t *t);   /* -1 if none */
int32_t tb_tokenizer_eos(const tb_tokenizer_t *t);   /* -1 if none */
bool    tb_tokenizer_is_eog(const tb_tokenizer_t *t, int32_t id);

/* Encode len bytes of UTF-8 text. add_special: BOS/EOS as the vocab's
 * add_bos/add_eos flags say. parse_special: recognise special tokens' text.
 * Returns the number of ids (written up to max_ids; when larger than
 * max_ids, nothing beyond max_ids is written and the caller retries), or a
 * negative status. */
int tb_tokenize(const tb_tokenizer_t *t, const char *text, size_t len,
                bool add_special, bool parse_special, int32_t *ids, int max_ids);

/* The bytes token id stands for (byte-level decoded, "▁" → " ", <0xXX> →
 * the byte). Special/control tokens give their text only if `special`.
 * Returns byte count (may exceed cap: then only cap bytes written). */
int tb_token_to_bytes(const tb_tokenizer_t *t, int32_t id, bool special,
                      char *buf, size_t cap);

/* Streaming detokenizer: emits only complete UTF-8 characters; strips the
 * leading space SentencePiece adds to the first token. */
typedef struct tb_detok tb_detok_t;
int  tb_detok_new(const tb_tokenizer_t *t, tb_detok_t **out);
/* Push one id, copy newly completed text to out: at most cap bytes, whole
 * characters only. A token's text has no length limit; what does not fit
 * stays pending, so after each push call tb_detok_drain until it returns 0
 * (or size out for the longest piece). Returns bytes written or a negative
 * status. With cap >= 4 a return of 0 means nothing complete is left; a
 * smaller cap may leave a character pending (see tb_detok_pending). */
int  tb_detok_push(tb_detok_t *d, int32_t id, char *out, size_t cap);
/* Copy more complete characters still pending (no new id) to out; 0 when
 * none are left. Loop: while ((k = tb_detok_drain(d, buf, n)) > 0) ... */
int  tb_detok_drain(tb_detok_t *d, char *out, size_t cap);
/* Emit whatever is pending (invalid trailing bytes become U+FFFD), at most
 * cap bytes per call: call until it returns 0. */
int  tb_detok_flush(tb_detok_t *d, char *out, size_t cap);
/* Bytes received and not yet emitted. */
size_t tb_detok_pending(const tb_detok_t *d);
void tb_detok_free(tb_detok_t *d);

/* ===================================================================== */
/* Sampler                                                                */
/* ===================================================================== */

typedef struct tb_sampler_params {
    float    temp;    /* <= 0: greedy (argmax, lowest id on ties)  */
    int32_t  top_k;   /* <= 0: off                                 */
    float    top_p;   /* >= 1: off                                 */
    float    min_p;   /* <= 0: off                                 */
    uint64_t seed;
} tb_sampler_params_t;

typedef struct tb_sampler tb_sampler_t;
int  tb_sampler_new(const tb_sampler_params_t *p, tb_sampler_t **out);
/* Draw one token. Deterministic for a given seed and call sequence;
 * independent of thread count. Order: top-k, softmax(temp), top-p, min-p. */
int32_t tb_sampler_sample(tb_sampler_t *s, const float *logits, int32_t n_vocab);
void tb_sampler_free(tb_sampler_t *s);

/* ===================================================================== */
/* Model                                                                  */
/* ===================================================================== */

typedef struct tb_model tb_model_t;

typedef struct tb_model_info {
    char arch[32];          /* "llama", "maple"                           */
    char name[128];         /* general.name or ""                         */
    int32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_vocab, n_ctx_train;
    int32_t n_ff;           /* dense FFN width (0 for pure MoE)            */
    int32_t n_expert, n_expert_used, n_ff_exp;
    int32_t n_swa;          /* sliding window (0: none)                    */
    int32_t n_swa_layers;   /* layers that use it                          */
    int32_t rope_dims;      /* rotated dims per head                       */
    float rope_base, rope_base_swa, norm_eps, swiglu_clamp;
    int64_t n_params;       /* all parameters                               */
    int64_t n_params_active;/* parameters touched per token (top-k experts) */
    uint64_t file_bytes;
    uint64_t weight_bytes;  /* tensor data bytes                            */
    tb_type_t main_type;    /* type holding most bytes of the projections and
                               experts (token_embd/output excluded unless the
                               model has nothing else)                        */
    uint64_t load_ns;       /* wall time of tb_model_load                   */
    uint64_t repack_bytes;  /* weight bytes held in repacked layouts        */
    uint64_t resident_bytes;/* weight memory the engine allocated: copies and
                               repacked layouts (0 with TB_WEIGHTS_MMAP and
                               no repacking)                                 */
    int32_t split_layers;   /* layers whose decode runs split (dense: at 2
                               or more threads; MoE: at 2): their Wo (and a
                               dense layer's ffn_down) placed as two column
                               slices, one per half, in the memory the whole
                               matrix would take                             */
    int32_t weights_mode;   /* tb_weights_mode_t the model was loaded with  */
} tb_model_info_t;

/* Where the weights live while the model is loaded.
 *   TB_WEIGHTS_COPY (default): every matrix the forward pass multiplies is
 *     copied (or repacked) once into anonymous memory backed by transparent
 *     huge pages, and the file's pages are dropped from the resident set;
 *     resident memory ~ the file size. Decode streams 1.2-1.6x faster than
 *     from 4 KiB page-cache pages on the reference VM.
 *   TB_WEIGHTS_MMAP: matrices are read from the file mapping (page cache)
 *     where no repacked layout exists: fastest load, least private memory,
 *     slower decode (llama.cpp's default). */
typedef enum tb_weights_mode { TB_WEIGHTS_COPY = 0, TB_WEIGHTS_MMAP = 1 } tb_weights_mode_t;

typedef struct tb_model_params {
    tb_weights_mode_t weights;
    int n_threads;          /* threads that copy/repack the weights while
                               loading (0 or 1: the caller alone); the
                               result is the same for any count          */
} tb_model_params_t;

/* Bytes read from memory to decode one token at context depth `ctx`. */
typedef struct tb_bytes_per_token {
    uint64_t weights;       /* dense tensors + the active experts' share    */
    uint64_t embd_row;      /* one token_embd row                           */
    uint64_t output;        /* the output head                              */
    uint64_t kv;            /* K and V read (sliding layers capped at n_swa) */
    uint64_t total;
    int32_t head_approx;    /* 1: output counts an approximate head's rows   */
} tb_bytes_per_token_t;

/* True when a session of n_ctx positions exceeds the model's trained
 * context (general context_length; unknown: false); note[cap] then gets a
 * one-line explanation for a warning ("" otherwise). Such a context is
 * allowed: speed is measured as usual, text past the trained length is
 * not meaningful. */
bool tb_model_ctx_check(const tb_model_t *m, int32_t n_ctx, char *note, size_t cap);

/* Load with default parameters (TB_WEIGHTS_COPY). */
int  tb_model_load(const char *path, tb_model_t **out);
/* Load with explicit parameters (NULL: defaults). */
int  tb_model_load_ex(const char *path, const tb_model_params_t *p, tb_model_t **out);
void tb_model_free(tb_model_t *m);
int  tb_model_get_info(const tb_model_t *m, tb_model_info_t *out);
int32_t tb_model_n_vocab(const tb_model_t *m);
/* Expected bytes per decoded token; expert share = n_expert_used/n_expert.
 *   weights  = Σ nbytes of every tensor except token_embd and output, with
 *              each *_exps stack counted at nbytes * n_expert_used / n_expert
 *              (norms and the MoE router included, in full)
 *   embd_row = one row of token_embd (n_embd elements in its type)
 *   output   = nbytes of output (of token_embd when the head is tied)
 *   kv       = Σ_layers 2 * n_head_kv * head_dim * sizeof(kv_type) * depth,
 *              depth = min(ctx, n_swa) on sliding layers, ctx on the others
 *              (ctx = positions attended, the new token included)
 *   total    = weights + embd_row + output + kv
 * kv_type must be TB_TYPE_F32 or TB_TYPE_F16. */
int  tb_model_bytes_per_token(const tb_model_t *m, int32_t ctx, tb_type_t kv_type,
                              tb_bytes_per_token_t *out);
const tb_gguf_t *tb_model_gguf(const tb_model_t *m);

/* ===================================================================== */
/* Geometry: what a decoded token reads, from a file or from a preset      */
/* ===================================================================== */

/* A model's tensor table and the hyper-parameters that size its KV cache:
 * enough to count the bytes a decoded token reads and the FLOPs a prompt
 * token costs, without the weights. Built from a loaded model
 * (tb_geometry_from_model) or from a named preset (tb_geometry_preset);
 * both go through tb_geometry_bytes_per_token, the one account of bytes per
 * token (tb_model_bytes_per_token calls it). Tensor roles come from the
 * ggml names: token_embd, output (absent: tied to token_embd), *_exps
 * (expert stacks), everything else read in full. */
typedef struct tb_geom_tensor {
    char name[64];
    uint64_t nbytes;        /* bytes of the whole tensor                     */
    int64_t n_params;
} tb_geom_tensor_t;

typedef enum tb_layer_kind {
    TB_LAYER_FULL = 0,      /* attends to every position                     */
    TB_LAYER_SLIDING = 1,   /* attends to the last n_swa positions           */
    TB_LAYER_RECURRENT = 2, /* linear attention: a fixed state, no KV cache   */
} tb_layer_kind_t;

typedef struct tb_geometry {
    char name[64];          /* preset or general.name                        */
    char weights[48];       /* weight layout label ("tq2_0", "mlx-4bit", ...) */
    int32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_vocab;
    int32_t n_expert, n_expert_used;   /* 0, 0 for dense models              */
    int32_t n_swa;          /* sliding window (0: none)                      */
    uint64_t state_bytes;   /* bytes of one recurrent layer's state, read and
                               written once per token (0: none)              */
    uint8_t *layer_kind;    /* (n_layer) tb_layer_kind_t                     */
    int64_t n_tensors;
    tb_geom_tensor_t *tensors;  /* (n_tensors)                               */
} tb_geometry_t;

/* The head a decode step evaluates. centroids == 0: the exact head (every
 * row of output). Otherwise an approximate, clustered head as FlashHead
 * does: `centroids` centroid rows are scored, then the rows of the `probes`
 * best clusters (each n_vocab / centroids rows, rounded up), all in the
 * head's own type. */
typedef struct tb_head_opts {
    int32_t centroids;
    int32_t probes;
} tb_head_opts_t;

/* Bytes read per decoded token at context `ctx` (see tb_model_bytes_per_token
 * for the terms); head NULL or centroids 0 is the exact head, otherwise the
 * output term counts only the approximate head's rows (out->head_approx = 1).
 * kv_type is any type whose rows of head_dim elements it can hold (f32, f16,
 * bf16, q8_0, q4_0); recurrent layers add 2 * state_bytes (read and write)
 * to the kv term whatever the context. TB_ERR_ARG on negative ctx, bad head
 * options or a KV type that does not fit. */
int tb_geometry_bytes_per_token(const tb_geometry_t *g, int32_t ctx, tb_type_t kv_type,
                                const tb_head_opts_t *head, tb_bytes_per_token_t *out);
/* FLOPs of the forward pass over a prompt of n_prompt tokens (batched
 * prefill): 2 per multiply-add of every weight a token touches (active
 * experts only, the embedding lookup excluded, the head included) plus the
 * attention scores and weighted sums, 4 * n_head * head_dim per attended
 * position per layer (sliding layers capped at n_swa, none on recurrent
 * layers). */
int tb_geometry_prefill_flops(const tb_geometry_t *g, int32_t n_prompt, double *flops);
/* The geometry of a loaded model (its own tensor table); caller frees. */
int tb_geometry_from_model(const tb_model_t *m, tb_geometry_t **out);
/* The geometry of preset `name` with weight layout `weights` (NULL: the
 * preset's default). TB_ERR_NOT_FOUND for an unknown preset, TB_ERR_ARG for
 * an unknown layout. */
int tb_geometry_preset(const char *name, const char *weights, tb_geometry_t **out);
void tb_geometry_free(tb_geometry_t *g);
/* NULL-terminated preset names; and each one's description with its sources. */
const char *const *tb_geometry_presets(void);
const char *tb_geometry_preset_source(const char *name);
/* NULL-terminated weight layout names accepted by tb_geometry_preset. */
const char *const *tb_geometry_layouts(void);
const tb_tokenizer_t *tb_model_tokenizer(const tb_model_t *m);

/* ===================================================================== */
/* Session: KV cache + thread pool + forward pass                          */
/* ===================================================================== */

typedef struct tb_head tb_head_t;   /* the approximate output head (below) */

typedef struct tb_session_params {
    int32_t n_ctx;        /* positions the session can hold (default 2048)    */
    int32_t n_threads;    /* default 1                                        */
    int32_t n_batch;      /* max tokens per forward call (default 512)        */
    tb_type_t kv_type;    /* TB_TYPE_F32 or TB_TYPE_F16 (default F16)         */
    tb_pool_t *pool;      /* NULL (default): the session makes its own pool of
                             n_threads. Else the session runs on this one,
                             borrowed: n_threads must be its thread count, it
                             must outlive the session, and sessions sharing it
                             must not eval at the same time (so sessions that
                             take turns token by token leave no idle pool
                             spinning beside the running one)               */
    const tb_head_t *head;/* NULL (default): the exact output head. Else the
                             approximate head built by tb_head_new for this
                             session's model (it must outlive the session):
                             every logit the session returns is then an
                             approximation (see tb_head_new)                 */
} tb_session_params_t;

typedef struct tb_session tb_session_t;

tb_session_params_t tb_session_default_params(void);
int  tb_session_new(const tb_model_t *m, const tb_session_params_t *p, tb_session_t **out);
void tb_session_free(tb_session_t *s);

/* Run n tokens at positions pos..pos+n-1 (chunked by n_batch), appending
 * to the KV cache. all_logits: keep logits for every token of this call,
 * else only the last. TB_ERR_RANGE when the context would overflow. */
int  tb_session_eval(tb_session_t *s, const int32_t *tokens, int32_t n, bool all_logits);
/* Logits (n_vocab) of token i of the last eval (-1: last). NULL if not kept. */
const float *tb_session_logits(const tb_session_t *s, int32_t i);
int32_t tb_session_pos(const tb_session_t *s);
void tb_session_reset(tb_session_t *s);          /* empty the KV cache       */
/* Forget the oldest n_discard positions of the KV cache (0 <= n_discard <=
 * pos) and move the rest to positions 0..pos - n_discard - 1, evaluating
 * nothing again: the next eval continues at pos - n_discard, so a stream
 * that fills the context can go on at a fraction of a re-prefill's cost.
 * Each kept row keeps what its token computed when it was evaluated (with
 * the discarded tokens in context), as llama.cpp's context shift: values
 * and the keys of layers without positional encoding are moved bit for
 * bit; RoPE keys are rotated by -n_discard positions in f32 and stored
 * back in the KV type (one more rounding of a key: 2^-24 relative for an
 * f32 cache, 2^-11 for f16). Where a layer's rows depend only on its
 * tokens and positions, the next logits are those of a fresh session
 * given the kept tokens: exactly without RoPE, within that rounding with
 * it (tests/model/test_kvshift.c). The last eval's logits stay readable.
 * TB_ERR_ARG on a NULL session or n_discard out of range; TB_ERR_NOMEM
 * (scratch of 2 * min(pos, n_ctx) * head_dim floats), the cache unchanged. */
int  tb_session_kv_shift(tb_session_t *s, int32_t n_discard);
/* Bytes allocated by the session (KV cache, scratch, logits). */
uint64_t tb_session_memory_bytes(const tb_session_t *s);

/* ---- the output head's reads ----
 * Since the session was created (tb_session_reset does not clear them):
 *   positions      positions whose logits the head computed
 *   rows           output-head rows multiplied (exact head: n_vocab per
 *                  position; approximate: the selected clusters' rows)
 *   centroid_rows  centroid rows multiplied (approximate head only: its
 *                  n_centroids per position, f32 rows of n_embd)
 * Bytes the head read = rows * the head's row bytes + centroid_rows *
 * n_embd * 4 (tb_head_info_t has both row sizes). */
typedef struct tb_head_stats {
    uint64_t positions, rows, centroid_rows;
} tb_head_stats_t;
void tb_session_get_head_stats(const tb_session_t *s, tb_head_stats_t *out);

/* Profiling of decode (where a token's time goes, per phase and per split
 * pass) is in ternbench_profile.h: an optimisation's instrument, not what a
 * library user needs to run a model. */

/* ===================================================================== */
/* Approximate output head                                                */
/* ===================================================================== */

/* The FlashHead method (arXiv 2603.14591): the output head's rows are
 * clustered once (seeded k-means, tb_head_new); per token the centroids
 * are scored, then only the rows of the top_c best clusters exactly;
 * every other row gets its cluster's centroid score as its logit. Far
 * fewer rows read per token, at a quality cost (`ternbench quality
 * --head approx:C[:T]` measures it). Its logits are approximate: every
 * output that uses it must say so. */
typedef struct tb_head_params {
    int32_t n_centroids;  /* clusters, 1..n_vocab                               */
    int32_t top_c;        /* clusters scored exactly per token, 1..n_centroids;
                             0: max(1, n_centroids / 16)                        */
    uint64_t seed;        /* k-means seed; 0: 1                                 */
    int32_t iters;        /* Lloyd iterations; 0: 8                             */
} tb_head_params_t;

typedef struct tb_head_info {
    int32_t n_centroids, top_c, n_rows;
    int32_t largest_cluster, empty_clusters;
    uint64_t seed;
    int32_t iters;
    uint64_t centroid_row_bytes;   /* n_embd * 4                          */
    uint64_t row_bytes;            /* one output-head row in its type     */
} tb_head_info_t;

/* "exact" (*approx = false, out zeroed) or "approx:CENTROIDS[:TOPC]"
 * (*approx = true); TB_ERR_ARG with the reason otherwise. */
int  tb_head_parse(const char *spec, bool *approx, tb_head_params_t *out);
/* Cluster m's output head (n_threads for the k-means' multiplies). The
 * result is the same for any thread count. Holds a copy of the head's
 * rows in cluster order and the centroids; m must outlive it. */
int  tb_head_new(const tb_model_t *m, const tb_head_params_t *p, int n_threads, tb_head_t **out);
void tb_head_free(tb_head_t *h);
int  tb_head_get_info(const tb_head_t *h, tb_head_info_t *out);

/* ===================================================================== */
/* Model synthesis and quantization                                       */
/* ===================================================================== */

typedef struct tb_synth_params {
    const char *preset;   /* "maple-preview", "maple-tiny", "llama-tiny", "moe-tiny", "llama-1b" */
    int type;             /* projection/expert tb_type_t, or -1 for the preset's default */
    uint64_t seed;
    const char *vocab_from;  /* GGUF to copy tokenizer.* from, or NULL for the built-in byte-level one */
    /* optional progress callback: done/total bytes of tensor data */
    void (*progress)(void *ud, uint64_t done, uint64_t total);
    void *progress_ud;
} tb_synth_params_t;

/* NULL-terminated list of preset names. */
const char *const *tb_synth_presets(void);
/* Write the model of preset p->preset to out_path. Deterministic: the same
 * params give the same bytes. The file records its provenance in
 * ternbench.synth.* keys (preset, type, seed, a vocabulary digest and a
 * tensor-data digest) for tb_synth_verify. */
int tb_synth_model(const tb_synth_params_t *p, const char *out_path);
/* Check that the file at path is what tb_synth_model(p, ...) writes: its
 * ternbench.synth.* keys name p's preset, projection type, seed and
 * vocabulary (p->vocab_from's tokenizer keys, or the built-in one), its
 * size is the preset's exact size and its tensor data matches the recorded
 * digest (the whole file is read). TB_OK, or TB_ERR_FORMAT naming the file
 * and what differs (also for a file without the keys); a cache must not
 * use the file then. The digests catch mistakes, not forgery. */
int tb_synth_verify(const tb_synth_params_t *p, const char *path);

/* Requantize the 2-D projection/expert tensors of `in` to `type`; norms,
 * router and (unless they fit) embeddings/output keep their type. Tensors
 * whose rows do not fit the block size keep a wider type; for each such
 * tensor `on_keep(ud, name, kept_type)` is called if non-NULL. */
int tb_quantize_model(const char *in_path, const char *out_path, tb_type_t type,
                      void (*on_keep)(void *ud, const char *name, tb_type_t kept),
                      void *ud);
/* As tb_quantize_model, and token_embd / output become embd_type /
 * output_type (TB_TYPE_COUNT: keep their type), e.g. llama.cpp's Q4_K
 * embeddings and Q6_K output head. */
int tb_quantize_model_types(const char *in_path, const char *out_path, tb_type_t type,
                            tb_type_t embd_type, tb_type_t output_type,
                            void (*on_keep)(void *ud, const char *name, tb_type_t kept),
                            void *ud);

/* Post-hoc ternarization before quantizing (tb_quantize_model_ex). */
typedef enum tb_ternarize {
    TB_TERNARIZE_NONE = 0,
    /* BitNet b1.58's absmean rule, per matrix (each expert its own):
     * gamma = mean |W|, W' = gamma * clamp(round(W / (gamma + 1e-8)), -1, 1).
     * Applied to the tensors that take the projection type (not norms,
     * router, token_embd or output); the file gets ternbench.ternarize =
     * "absmean" and ternbench.ternarize.post_hoc = true. */
    TB_TERNARIZE_ABSMEAN = 1,
} tb_ternarize_t;

typedef struct tb_quantize_params {
    tb_type_t type;                  /* projection/expert type                 */
    tb_type_t embd_type, output_type;/* TB_TYPE_COUNT: keep                    */
    tb_ternarize_t ternarize;        /* TB_TERNARIZE_NONE (0) by default       */
    void (*on_keep)(void *ud, const char *name, tb_type_t kept);
    void *ud;
} tb_quantize_params_t;

/* tb_quantize_model_types with every option in one struct, and the
 * post-hoc ternarization (type must then be TQ2_0 or TQ1_0, else
 * TB_ERR_ARG): its values are exactly {-1, 0, 1} * gamma in
 * f32 before they are stored in their type (TQ2_0 and TQ1_0 keep them
 * exactly, as {-1, 0, 1} times an f16 scale; a wider fallback type keeps
 * them as its own rounding of gamma). */
int tb_quantize_model_ex(const char *in_path, const char *out_path, const tb_quantize_params_t *p);

#ifdef __cplusplus
}
#endif
#endif /* TERNBENCH_H */
