/*
 * claim.h — what `ternbench devices` and `ternbench claim` share: device
 * profiles (one ini file per device in devices/, claim_devices.c), the calibration table of
 * published decode speeds (claim_calib.c) and the efficiency fit that turns a
 * roofline into a projected interval (claim_fit.c).
 */
#ifndef TB_BENCH_CLAIM_H
#define TB_BENCH_CLAIM_H

#include <stdbool.h>
#include <stddef.h>

/* ---- device profiles --------------------------------------------------- */

typedef struct cl_device {
    char id[48], name[96], cls[16], soc[64], cpu[96], gpu[96], memory[64];
    double ram_gb;                       /* largest configuration, 0 unknown */
    double bw_gbps;                      /* nominal peak read bandwidth      */
    char bw_source[320], bw_read[20], bw_note[320];
    bool bw_estimate, bw_measured;       /* measured: `this`, by the probe   */
    double fp16_tflops;                  /* 0: no sourced figure             */
    char fp16_source[256], fp16_note[160];
    bool fp16_estimate;
    double npu_tops;                     /* 0: no sourced figure             */
    char npu_source[256];
    bool npu_estimate;
    bool has_app_memory;                 /* an [app_memory] section (iOS)    */
    double app_limit_gb;                 /* 0: none documented               */
    char app_source[256], app_note[256];
    char path[512];
} cl_device_t;

/* The devices folder: `flag` if set, else $TB_DEVICES_DIR, else the source
 * tree's devices/ (compiled in) if it exists, else the installed one. */
const char *cl_devices_dir(const char *flag);
/* Parse one profile; on error prints "FILE:LINE: what" and returns 2. */
int cl_device_load(const char *path, cl_device_t *d);
/* Every *.ini of dir, sorted by id; *out is malloc'd. 2 on a bad file. */
int cl_devices_load_all(const char *dir, cl_device_t **out, int *n);
/* Profile `id` from dir, or `this` (the running machine, cl_device_this).
 * 0, 2 for an unknown id or a bad file (message printed), 1 if the probe
 * failed. */
int cl_device_find(const char *dir, const char *id, cl_device_t *d);
/* `this`: $TB_THIS_GBPS if set; else (unless probe) the bandwidth an earlier
 * probe stored for this host in $TB_CACHE_DIR (or $XDG_CACHE_HOME/ternbench,
 * ~/.cache/ternbench)/this-bandwidth.ini; else probed now and stored there.
 * 0, 2 on a bad TB_THIS_GBPS, 1 if the probe failed. */
int cl_device_this(cl_device_t *d, bool probe);

/* ---- calibration table ------------------------------------------------- */

typedef struct cl_row {
    char device[48], backend[8], runtime[32], model[48], type[16], head[32];
    int ctx;
    double tok_s;
    char source[256], read[16], note[160];
    char file[256];
    int line;
    /* filled by cl_calib_resolve */
    double bw_gbps, bytes_per_token, bpw, eff;
    char cls[16];
} cl_row_t;

typedef struct cl_calib {
    cl_row_t *rows;
    int n, cap;
} cl_calib_t;

/* The shipped table's path: `flag` if set, else $TB_CALIBRATION, else the
 * source tree's calibration/published.csv if it exists, else the installed one. */
const char *cl_calib_default(const char *flag);
/* Append the rows of a CSV (header line required, columns by name). On a
 * malformed row prints "FILE:LINE: what" and returns 2. */
int cl_calib_read(const char *path, cl_calib_t *c);
/* Bytes per token, bandwidth, bits per weight and efficiency of every row
 * (its device from devices_dir, its model from the presets); 2 naming the
 * row's FILE:LINE when it names an unknown device, preset or type. */
int cl_calib_resolve(cl_calib_t *c, const char *devices_dir);
void cl_calib_free(cl_calib_t *c);
/* FNV-1a of every row's fields, for provenance. */
unsigned long long cl_calib_hash(const cl_calib_t *c);

/* ---- efficiency fit ------------------------------------------------------ */

typedef struct cl_query {
    const char *runtime, *backend, *cls;   /* NULL: unknown (matches any)   */
    const char *device;                    /* rows of this device weigh more */
    const char *model, *type;              /* ... and rows of this preset and layout */
    double bw_gbps, bpw;
    int ctx;                               /* -1: unknown                   */
} cl_query_t;

typedef struct cl_fit {
    double lo, mid, hi;      /* efficiency interval and its centre            */
    double best;             /* highest efficiency among the basis rows       */
    int n_basis;             /* rows the interval is drawn from               */
    char basis[160];         /* how they were chosen                          */
    int idx[64];             /* up to 64 of those rows (indices into c->rows) */
    int n_idx;
} cl_fit_t;

/* Fit the efficiency interval for q from c's resolved rows, leaving out row
 * `skip` (-1: none). 0, or -1 when no row is comparable at all. */
int cl_fit(const cl_calib_t *c, const cl_query_t *q, int skip, cl_fit_t *out);

/* Leave-one-out over c: share of rows whose tok/s falls inside the interval
 * fitted without them, and the median relative half-width (hi-lo)/(hi+lo). */
typedef struct cl_loo {
    int n, covered;
    double coverage, median_halfwidth;
} cl_loo_t;
int cl_loo(const cl_calib_t *c, cl_loo_t *out, bool verbose);

/* "exact", "approx", "approx:C" or "approx:C:P" into h (centroids 0 for
 * exact; probes default 256, capped at C); 0, or -1 if malformed. cmd_claim.c */
struct tb_head_opts;
int cl_parse_head(const char *s, struct tb_head_opts *h);

/* Decode n_tokens on this machine after filling the KV cache of `gguf` to
 * ctx positions, with `threads` threads; *tok_s the timed rate. 0, 2 when
 * the file does not load, 1 on a failure while running. claim_measure.c */
int cl_measure(const char *gguf, int ctx, int n_tokens, int threads, int kv_type, double *tok_s);

/* Bits per stored weight of a preset in a layout (its projections). */
double cl_bits_per_weight(const char *preset, const char *type);

#endif
