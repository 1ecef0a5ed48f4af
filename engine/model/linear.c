/*
 * linear.c — fused matrix passes through the kernel dispatch table.
 *
 * A pass is an optional prologue (the activation rows: RMSNorm, SwiGLU,
 * quantization — split over the threads by blocks), a barrier, and a list
 * of jobs (matrices that can run concurrently: Q/K/V, gate/up, the active
 * experts). The rows of all jobs are laid end to end and cut into one
 * contiguous range per thread, balanced by work (rows x tokens x row
 * bytes) and aligned to 16 rows. Every output row is produced by exactly
 * one kernel call on one thread, so results are bit-identical for any
 * thread count; the kernels promise matvec and gemm agree per row. A job
 * may add its rows into an accumulator (the residual stream) right after
 * computing them, on the same thread.
 *
 * So a decode step has no serial work between passes on the caller's
 * thread: both threads stream weights, or both prepare activations.
 */
#include "model/model.h"
#include "kernels/kernels.h"

#include <math.h>
#include <sched.h>
#include <stdatomic.h>

#define ROW_ALIGN 16
#define BARRIER_SPINS 4000

/* ===================================================================== */
/* Barrier                                                                */
/* ===================================================================== */

void tb_lin_barrier_wait(tb_lin_barrier_t *b, int nth) {
    if (nth == 1) return;
    atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel);
    int spins = 0;
    while (atomic_load_explicit(&b->arrived, memory_order_acquire) < nth)
        if (++spins > BARRIER_SPINS) sched_yield();
}

/* ===================================================================== */
/* Prologue                                                               */
/* ===================================================================== */

/* Elements per prologue chunk: whole activation blocks, up to 256. */
static int64_t pro_chunk(const tb_lin_pro_t *p) {
    int64_t ce = p->q ? tb_type_traits(tb_type_traits(p->wtype)->vec_dot_type)->blck : 1;
    while (ce < 256 && p->n_in % (ce * 2) == 0) ce *= 2;
    return ce;
}

void tb_lin_prologue(const tb_lin_pro_t *p, int ith, int nth) {
    if (!p || p->kind == TB_PRO_NONE) return;
    const int64_t ce = pro_chunk(p), nc = p->n_in / ce, items = p->n * nc;
    const int64_t i0 = items * ith / nth, i1 = items * (ith + 1) / nth;
    const tb_from_float_fn quant = p->q ? tb_kernels()->t[p->wtype].quantize_act : NULL;
    const size_t cb = p->q ? tb_act_row_bytes(p->wtype, ce) : 0;   /* bytes per chunk */
    int64_t t_rms = -1;
    float r = 0.0f;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t t = it / nc, c0 = (it % nc) * ce;
        float *x = p->x + t * p->ld + c0;                          /* (ce) */
        const float *src = x;
        if (p->kind == TB_PRO_NORM) {
            if (t != t_rms) { r = tb_op_rms_inv(p->x + t * p->ld, p->n_in, p->eps); t_rms = t; }
            float *xn = p->xn + t * p->ld + c0;                    /* (ce) */
            const float *w = p->w + c0;
            for (int64_t i = 0; i < ce; i++) xn[i] = x[i] * r * w[i];
            src = xn;
        } else if (p->kind == TB_PRO_SWIGLU) {
            const float *u = p->u + t * p->ld + c0;                /* (ce) */
            const float c = p->clamp;
            if (isinf(c))
                for (int64_t i = 0; i < ce; i++) x[i] = tb_op_silu(x[i]) * u[i];
            else
                for (int64_t i = 0; i < ce; i++) {
                    const float g = x[i] < c ? x[i] : c;
                    const float v = u[i] < -c ? -c : (u[i] > c ? c : u[i]);
                    x[i] = tb_op_silu(g) * v;
                }
        }
        if (quant) quant(src, (uint8_t *)p->q + (size_t)t * p->q_stride + (size_t)(c0 / ce) * cb, ce);
    }
}

/* ===================================================================== */
/* Row split                                                              */
/* ===================================================================== */

typedef struct lin_pass {
    const tb_lin_pro_t *pro;
    const tb_lin_job_t *jobs;
    int n_jobs;
    tb_lin_barrier_t bar;
} lin_pass;

static double job_row_cost(const tb_lin_job_t *j) {
    return (double)j->n_tok * (double)j->w->row_bytes + 64.0;
}

void tb_lin_cut(const tb_lin_job_t *jobs, int n_jobs, int k, int nth, int *job, int64_t *row) {
    *job = n_jobs;
    *row = 0;
    if (k >= nth) return;
    double total = 0.0;
    for (int j = 0; j < n_jobs; j++) total += job_row_cost(&jobs[j]) * (double)jobs[j].w->n_out;
    double target = total * k / nth, start = 0.0;
    for (int j = 0; j < n_jobs; j++) {
        const tb_lin_job_t *J = &jobs[j];
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
}

void tb_lin_rows(const tb_lin_job_t *J, int64_t r0, int64_t r1) {
    if (r0 >= r1) return;
    const tb_type_kernels_t *k = &tb_kernels()->t[J->w->type];
    const uint8_t *W = (const uint8_t *)J->w->data + J->mat * J->w->mat_bytes;
    if (J->n_tok == 1)
        k->matvec(W, J->w->row_bytes, J->a, J->y, r0, r1, J->w->n_in);
    else
        k->gemm(W, J->w->row_bytes, J->a, J->a_stride, J->n_tok, J->y, J->ldy, r0, r1,
                J->w->n_in);
    if (J->acc)
        for (int64_t t = 0; t < J->n_tok; t++) {
            float *acc = J->acc + t * J->ldy;      /* (ldy) */
            const float *y = J->y + t * J->ldy;    /* (ldy) */
            for (int64_t r = r0; r < r1; r++) acc[r] += y[r];
        }
}

static void lin_worker(void *arg, int ith, int nth) {
    lin_pass *p = arg;
    if (p->pro) {
        tb_lin_prologue(p->pro, ith, nth);
        tb_lin_barrier_wait(&p->bar, nth);
    }
    int j0, j1;
    int64_t r0, r1;
    tb_lin_cut(p->jobs, p->n_jobs, ith, nth, &j0, &r0);
    tb_lin_cut(p->jobs, p->n_jobs, ith + 1, nth, &j1, &r1);
    for (int j = j0; j <= j1 && j < p->n_jobs; j++) {
        int64_t a = j == j0 ? r0 : 0;
        int64_t b = j == j1 ? r1 : p->jobs[j].w->n_out;
        tb_lin_rows(&p->jobs[j], a, b);
    }
}

void tb_lin_run(tb_pool_t *pool, const tb_lin_pro_t *pro, const tb_lin_job_t *jobs, int n_jobs) {
    lin_pass p = {.pro = pro && pro->kind != TB_PRO_NONE ? pro : NULL, .jobs = jobs,
                  .n_jobs = n_jobs};
    atomic_init(&p.bar.arrived, 0);
    if (n_jobs == 0 && !p.pro) return;
    tb_pool_run(pool, lin_worker, &p);
}

size_t tb_lin_quantize(tb_type_t wtype, const float *x, int64_t x_ld, int64_t n,
                       int64_t n_in, void *out) {
    const size_t stride = tb_act_row_bytes(wtype, n_in);
    const tb_from_float_fn q = tb_kernels()->t[wtype].quantize_act;
    for (int64_t i = 0; i < n; i++) q(x + i * x_ld, (uint8_t *)out + (size_t)i * stride, n_in);
    return stride;
}
