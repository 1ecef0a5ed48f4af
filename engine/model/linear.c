/*
 * linear.c — fused matrix passes through the kernel dispatch table.
 *
 * A pass is a list of jobs (matrices that can run concurrently: Q/K/V,
 * gate/up, the active experts). The rows of all jobs are laid end to end
 * and cut into one contiguous range per thread, balanced by work (rows x
 * tokens x row bytes) and aligned to 16 rows. Every output row is produced
 * by exactly one kernel call on one thread, so results are bit-identical for
 * any thread count; the kernels promise matvec and gemm agree per row.
 */
#include "model/model.h"
#include "kernels/kernels.h"

#define ROW_ALIGN 16

typedef struct lin_pass {
    const tb_lin_job_t *jobs;
    int n_jobs;
    double total;            /* total work units */
} lin_pass;

static double job_row_cost(const tb_lin_job_t *j) {
    return (double)j->n_tok * (double)j->w->row_bytes + 64.0;
}

/* Cut point k of nth: the (job, row) where thread k's range starts. */
static void cut(const lin_pass *p, int k, int nth, int *job, int64_t *row) {
    if (k == nth) { *job = p->n_jobs; *row = 0; return; }
    double target = p->total * k / nth, start = 0.0;
    for (int j = 0; j < p->n_jobs; j++) {
        const tb_lin_job_t *J = &p->jobs[j];
        double c = job_row_cost(J), len = c * (double)J->w->n_out;
        if (target < start + len) {
            int64_t r = (int64_t)((target - start) / c);
            r = (r + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN;
            if (r >= J->w->n_out) { *job = j + 1; *row = 0; }
            else { *job = j; *row = r; }
            return;
        }
        start += len;
    }
    *job = p->n_jobs;
    *row = 0;
}

static void run_rows(const tb_lin_job_t *J, int64_t r0, int64_t r1) {
    if (r0 >= r1) return;
    const tb_type_kernels_t *k = &tb_kernels()->t[J->w->type];
    const uint8_t *W = (const uint8_t *)J->w->data + J->mat * J->w->mat_bytes;
    if (J->n_tok == 1)
        k->matvec(W, J->w->row_bytes, J->a, J->y, r0, r1, J->w->n_in);
    else
        k->gemm(W, J->w->row_bytes, J->a, J->a_stride, J->n_tok, J->y, J->ldy, r0, r1,
                J->w->n_in);
}

static void lin_worker(void *arg, int ith, int nth) {
    const lin_pass *p = arg;
    int j0, j1;
    int64_t r0, r1;
    cut(p, ith, nth, &j0, &r0);
    cut(p, ith + 1, nth, &j1, &r1);
    for (int j = j0; j <= j1 && j < p->n_jobs; j++) {
        int64_t a = j == j0 ? r0 : 0;
        int64_t b = j == j1 ? r1 : p->jobs[j].w->n_out;
        run_rows(&p->jobs[j], a, b);
    }
}

void tb_lin_run(tb_pool_t *pool, const tb_lin_job_t *jobs, int n_jobs) {
    lin_pass p = {.jobs = jobs, .n_jobs = n_jobs, .total = 0.0};
    for (int j = 0; j < n_jobs; j++) p.total += job_row_cost(&jobs[j]) * (double)jobs[j].w->n_out;
    if (n_jobs == 0) return;
    tb_pool_run(pool, lin_worker, &p);
}

size_t tb_lin_quantize(tb_type_t wtype, const float *x, int64_t x_ld, int64_t n,
                       int64_t n_in, void *out) {
    const size_t stride = tb_act_row_bytes(wtype, n_in);
    const tb_from_float_fn q = tb_kernels()->t[wtype].quantize_act;
    for (int64_t i = 0; i < n; i++) q(x + i * x_ld, (uint8_t *)out + (size_t)i * stride, n_in);
    return stride;
}
