/*
 * api.c — tb_matvec / tb_matmul: the public raw-kernel entry points (used by
 * `ternbench kernels` and tools). The forward pass calls the table directly.
 *
 * Work split: contiguous row ranges per thread, so each thread streams one
 * contiguous slice of W. Activations are quantized once (matvec: by the
 * caller's thread; matmul: token rows split over the pool) before the
 * weight pass, or beforehand into a tb_act_t (tb_matvec_act / tb_matmul_act:
 * the weight pass alone).
 */
#include "kernels/kernels.h"

#include <stdlib.h>

typedef struct {
    const tb_type_kernels_t *k;
    const void *W;           /* (rows, cols) in wtype, row stride ws bytes */
    size_t ws;
    const float *X;          /* (n, cols) f32                              */
    void *A;                 /* (n, cols) in the activation format         */
    size_t as;               /* activation row bytes                       */
    float *Y;                /* (n, rows)                                  */
    int64_t rows, cols, n;
} job_t;

static void split(int64_t total, int ith, int nth, int64_t *b, int64_t *e) {
    *b = total * ith / nth;
    *e = total * (ith + 1) / nth;
}

static void run_quant(void *arg, int ith, int nth) {
    job_t *j = arg;
    int64_t t0, t1;
    split(j->n, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++)
        j->k->quantize_act(j->X + t * j->cols, (uint8_t *)j->A + (size_t)t * j->as, j->cols);
}

static void run_matvec(void *arg, int ith, int nth) {
    job_t *j = arg;
    int64_t r0, r1;
    split(j->rows, ith, nth, &r0, &r1);
    if (r1 > r0) j->k->matvec(j->W, j->ws, j->A, j->Y, r0, r1, j->cols);
}

static void run_gemm(void *arg, int ith, int nth) {
    job_t *j = arg;
    int64_t r0, r1;
    split(j->rows, ith, nth, &r0, &r1);
    if (r1 > r0) j->k->gemm(j->W, j->ws, j->A, j->as, j->n, j->Y, j->rows, r0, r1, j->cols);
}

/* Validate the call (in: the activations, as floats or already
 * quantized) and fill everything of the job but X and A. */
static int prepare(job_t *j, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
                   const void *in, int64_t n, float *Y) {
    const tb_type_traits_t *tr = tb_type_traits(wtype);
    if (!tr || wtype == TB_TYPE_Q8_K)
        return tb_err(TB_ERR_UNSUPPORTED, "tb_matvec: weight type %d is not supported", (int)wtype);
    if (!W || !in || !Y || rows < 1 || cols < 1 || n < 1)
        return tb_err(TB_ERR_ARG, "tb_matvec: NULL buffer or empty shape (rows %lld, cols %lld, n %lld)",
                      (long long)rows, (long long)cols, (long long)n);
    if (cols % tr->blck)
        return tb_err(TB_ERR_ARG, "tb_matvec: %lld columns is not a multiple of %s's block of %lld",
                      (long long)cols, tr->name, (long long)tr->blck);
    *j = (job_t){.k = &tb_kernels()->t[wtype], .W = W, .ws = tb_type_row_bytes(wtype, cols),
                 .as = tb_act_row_bytes(wtype, cols), .Y = Y,
                 .rows = rows, .cols = cols, .n = n};
    return TB_OK;
}

int tb_matvec(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
              const float *x, float *y) {
    job_t j;
    int rc = prepare(&j, wtype, W, rows, cols, x, 1, y);
    if (rc) return rc;
    j.X = x;
    j.A = tb_alloc_aligned(j.as);
    if (!j.A) return tb_err(TB_ERR_NOMEM, "tb_matvec: out of memory for %zu activation bytes", j.as);
    j.k->quantize_act(x, j.A, cols);
    tb_pool_run(pool, run_matvec, &j);
    tb_free_aligned(j.A);
    return TB_OK;
}

int tb_matmul(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
              const float *X, int64_t n, float *Y) {
    job_t j;
    int rc = prepare(&j, wtype, W, rows, cols, X, n, Y);
    if (rc) return rc;
    j.X = X;
    j.A = tb_alloc_aligned(j.as * (size_t)n);
    if (!j.A) return tb_err(TB_ERR_NOMEM, "tb_matmul: out of memory for %lld activation rows", (long long)n);
    tb_pool_run(pool, run_quant, &j);
    tb_pool_run(pool, run_gemm, &j);
    tb_free_aligned(j.A);
    return TB_OK;
}

/* ---------------------------------------------------------------------- */
/* Prepared activations                                                   */
/* ---------------------------------------------------------------------- */

struct tb_act {
    tb_type_t wtype;
    int64_t cols, n;
    size_t as;               /* bytes per activation row */
    void *A;                 /* (n, as)                  */
};

int tb_act_new(tb_type_t wtype, int64_t cols, int64_t n, tb_act_t **out) {
    if (!out) return tb_err(TB_ERR_ARG, "tb_act_new: NULL output");
    *out = NULL;
    const tb_type_traits_t *tr = tb_type_traits(wtype);
    if (!tr || wtype == TB_TYPE_Q8_K)
        return tb_err(TB_ERR_UNSUPPORTED, "tb_act_new: weight type %d is not supported", (int)wtype);
    if (cols < 1 || n < 1 || cols % tr->blck)
        return tb_err(TB_ERR_ARG, "tb_act_new: bad shape %lld x %lld for %s (block %lld)", (long long)n,
                      (long long)cols, tr->name, (long long)tr->blck);
    tb_act_t *a = calloc(1, sizeof *a);
    if (!a) return tb_err(TB_ERR_NOMEM, "tb_act_new: out of memory");
    *a = (tb_act_t){.wtype = wtype, .cols = cols, .n = n, .as = tb_act_row_bytes(wtype, cols)};
    a->A = tb_alloc_aligned(a->as * (size_t)n);
    if (!a->A) {
        free(a);
        return tb_err(TB_ERR_NOMEM, "tb_act_new: out of memory for %lld activation rows", (long long)n);
    }
    *out = a;
    return TB_OK;
}

int tb_act_set(tb_act_t *a, const float *X) {
    if (!a || !X) return tb_err(TB_ERR_ARG, "tb_act_set: NULL argument");
    const tb_from_float_fn q = tb_kernels()->t[a->wtype].quantize_act;
    for (int64_t t = 0; t < a->n; t++) q(X + t * a->cols, (uint8_t *)a->A + (size_t)t * a->as, a->cols);
    return TB_OK;
}

void tb_act_free(tb_act_t *a) {
    if (!a) return;
    tb_free_aligned(a->A);
    free(a);
}

/* The job of W (rows, cols) in wtype times the prepared activations a. */
static int prepare_act(job_t *j, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
                       const tb_act_t *a, float *Y) {
    if (!a) return tb_err(TB_ERR_ARG, "tb_matvec: NULL activations");
    if (a->wtype != wtype || a->cols != cols)
        return tb_err(TB_ERR_ARG, "tb_matvec: activations for %s x %lld, weights %s x %lld",
                      tb_type_traits(a->wtype)->name, (long long)a->cols, tb_type_name(wtype), (long long)cols);
    int rc = prepare(j, wtype, W, rows, cols, a->A, a->n, Y);
    j->A = a->A;
    return rc;
}

/* The weight pass of tb_matvec_act (gemm false: one activation row) or
 * tb_matmul_act (every row of a). */
static int run_act(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
                   const tb_act_t *a, float *Y, bool gemm) {
    job_t j;
    int rc = prepare_act(&j, wtype, W, rows, cols, a, Y);
    if (rc) return rc;
    if (!gemm && a->n != 1) return tb_err(TB_ERR_ARG, "tb_matvec: %lld activation rows, want 1", (long long)a->n);
    tb_pool_run(pool, gemm ? run_gemm : run_matvec, &j);
    return TB_OK;
}

int tb_matvec_act(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
                  const tb_act_t *a, float *y) {
    return run_act(pool, wtype, W, rows, cols, a, y, false);
}

int tb_matmul_act(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
                  const tb_act_t *a, float *Y) {
    return run_act(pool, wtype, W, rows, cols, a, Y, true);
}
