/*
 * claim.h — what `ternbench devices` and `ternbench claim` share: device
 * profiles (one ini file per device in devices/, claim_devices.c), the calibration table of
 * published decode speeds (claim_calib.c) and the efficiency fit that turns a
 * roofline into a projected interval (claim_fit.c).
 */
#ifndef TB_BENCH_CLAIM_H
#define TB_BENCH_CLAIM_H

#include "ternbench.h"

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
    bool resolved;          /* read resolved (cl_calib_read_db): resolve skips it */
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
/* Append the claims ternbench measured itself, from the claims table of the
 * results database `db` (rows with measured_tok_s; claim_calib_db.c), as
 * resolved rows: device (`this`), backend, runtime, model, layout, ctx and
 * head as recorded, efficiency = measured tok/s x bytes per token / the
 * bandwidth recorded with it; file the database, line the claim's id. A row
 * above its roofline (efficiency > 1: the model fits in a cache) says
 * nothing about memory-bound decode and is left out, counted in
 * *n_skipped. 0, or 2 with the reason printed. */
int cl_calib_read_db(const char *db, cl_calib_t *c, int *n_skipped);
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

/* ---- one condition of a claim check (claim_eval.c) --------------------- */

#define CL_DEFAULT_CENTROIDS 8016   /* FlashHead's published configuration */
#define CL_DEFAULT_PROBES 256

/* "exact", "approx", "approx:C" or "approx:C:P" into h (centroids 0 for
 * exact; probes default 256, capped at C); 0, or -1 if malformed. */
int cl_parse_head(const char *s, tb_head_opts_t *h);
/* "exact" or "approx:C:P". */
void cl_head_label(const tb_head_opts_t *h, char *buf, size_t cap);

typedef struct cl_cond {
    int ctx;
    tb_head_opts_t head;
    tb_bytes_per_token_t b;
    double roof, lo, hi;            /* roofline, projected interval (tok/s)  */
    double claimed;                 /* 0: none                               */
    double need, implied;           /* share of peak, GB/s the claim needs   */
    double measured;                /* 0: not measured                       */
    int64_t measured_test_id;       /* < 0: none (the command's own decode)  */
    cl_fit_t fit;
    bool fitted;
    const char *verdict;            /* NULL without a claim                  */
    char why[256];
} cl_cond_t;

/* Evaluate x (its ctx, head and claimed set by the caller): bytes per token
 * of g at x->ctx with kv, the roofline at d's bandwidth, the interval fitted
 * from c for q (q->ctx is set to x->ctx) and, with a claim, the verdict.
 * 0, or 2 with the reason in tb_last_error() (a context or head that does
 * not fit the geometry). */
int cl_eval_cond(const tb_geometry_t *g, const cl_device_t *d, const cl_calib_t *c, cl_query_t *q,
                 tb_type_t kv, cl_cond_t *x);
/* Bits per stored projection weight of a geometry (what the fit compares). */
double cl_geom_bpw(const tb_geometry_t *g);
/* A preset (with layout `type`, NULL: its default) or a GGUF file's
 * geometry. 0, 2 (unknown preset or layout, a file that does not load) or 1,
 * the reason in tb_last_error(). */
int cl_load_geometry(const char *model, const char *type, tb_geometry_t **g);

/* ---- claims into the results database (claim_record.c) ----------------- */

struct tb_store;
/* What one claim check was asked and evaluated against. */
typedef struct cl_check {
    const char *section;            /* "claim" for the command               */
    const tb_geometry_t *g;
    const char *model_path;         /* the GGUF, NULL for a preset           */
    const cl_device_t *d;
    const char *backend, *runtime;  /* NULL: any                             */
    tb_type_t kv;
    bool ctx_given, head_given;     /* false: evaluated across (assumed)     */
    int prompt;                     /* > 0: a time-to-first-token claim      */
    double claimed_ttft, ttft_min;
    const char *ttft_verdict;
    const char *calib_path;
    const cl_calib_t *c;
} cl_check_t;
/* Insert conditions k[0..n) of check ck under run_id in one transaction,
 * numbered from idx0. TB_OK or a store error (tb_last_error()). */
int cl_record(struct tb_store *s, int64_t run_id, const cl_check_t *ck, const cl_cond_t *k, int n, int idx0);

/* Decode n_tokens on this machine after filling the KV cache of `gguf` to
 * ctx positions, with `threads` threads; *tok_s the timed rate. 0, 2 when
 * the file does not load, 1 on a failure while running. claim_measure.c */
int cl_measure(const char *gguf, int ctx, int n_tokens, int threads, int kv_type, double *tok_s);

/* Bits per stored weight of a preset in a layout (its projections). */
double cl_bits_per_weight(const char *preset, const char *type);

#endif
