/*
 * linear.c — fused matrix passes through the kernel dispatch table.
 *
 * A pass is an optional prologue (the activation rows: RMSNorm, SwiGLU,
 * quantization — cut into items of whole quantization blocks that the
 * threads claim), a wait until every item is done, and a list of jobs
 * (matrices that can run concurrently: Q/K/V, gate/up, the active
 * experts). The rows of all jobs are laid end to end as 16-row units;
 * each thread starts on its own contiguous range of them, balanced by
 * work (rows x tokens x row bytes), and a thread that runs out takes the
 * tail of another's (sched.c). Every output row is produced by exactly
 * one kernel call on one thread, and the kernels promise that a row's
 * result does not depend on the range it was computed in, so results are
 * bit-identical for any thread count and any timing. A job may add its
 * rows into an accumulator (the residual stream) right after computing
 * them, on the same thread.
 *
 * So a decode step has no serial work between passes on the caller's
 * thread, and a thread that starts late does not hold the pass up: the
 * other one runs the prologue items and rows it has not reached.
 */
#include "model/model.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdatomic.h>

#define ROW_ALIGN 16
#define CHUNK_MIN_BYTES 32768     /* smallest claim of a pass's rows */

/* ===================================================================== */
/* Prologue                                                               */
/* ===================================================================== */

/* Elements per prologue chunk: whole activation blocks, up to 256. */
static int64_t pro_chunk(const tb_lin_pro_t *p) {
    int64_t ce = p->q ? tb_type_traits(tb_type_traits(p->wtype)->vec_dot_type)->blck : 1;
    while (ce < 256 && p->n_in % (ce * 2) == 0) ce *= 2;
    return ce;
}

int64_t tb_lin_pro_items(const tb_lin_pro_t *p) {
    if (!p || p->kind == TB_PRO_NONE) return 0;
    return p->n * (p->n_in / pro_chunk(p));
}

void tb_lin_prologue(const tb_lin_pro_t *p, int ith, int nth) {
    const int64_t items = tb_lin_pro_items(p);
    tb_lin_pro_items_run(p, items * ith / nth, items * (ith + 1) / nth);
}

/* NORM: ask for the weight lines of items [i0, i1) all at once before the
 * row's sum of squares: a layer's norm weight comes from memory (the
 * weight stream evicts it between tokens), one latency per line when the
 * loop asks for them in turn. (Prefetching x and u as well, which the
 * previous pass wrote on both cores, measured no gain.) */
static void pro_prefetch(const tb_lin_pro_t *p, int64_t i0, int64_t i1, int64_t ce, int64_t nc) {
    if (p->kind != TB_PRO_NORM) return;
    for (int64_t it = i0; it < i1; it++)
        for (int64_t i = 0; i < ce; i += 16) __builtin_prefetch(p->w + (it % nc) * ce + i);
}

void tb_lin_pro_items_run(const tb_lin_pro_t *p, int64_t i0, int64_t i1) {
    if (!p || p->kind == TB_PRO_NONE || i0 >= i1) return;
    const int64_t ce = pro_chunk(p), nc = p->n_in / ce;
    const tb_from_float_fn quant = p->q ? tb_kernels()->t[p->wtype].quantize_act : NULL;
    const tb_swiglu_fn swiglu = tb_op_swiglu_for(tb_kernels()->isa);
    const tb_rms_inv_fn rms_inv = tb_op_rms_inv_for(tb_kernels()->isa);
    const tb_norm_mul_fn norm_mul = tb_op_norm_mul_for(tb_kernels()->isa);
    const size_t cb = p->q ? tb_act_row_bytes(p->wtype, ce) : 0;   /* bytes per chunk */
    assert(ce <= 256 && (p->kind != TB_PRO_NORM || p->xn || p->q));
    pro_prefetch(p, i0, i1, ce, nc);
    float nbuf[256];                 /* NORM without xn: one chunk's normalized values */
    int64_t t_rms = -1;
    float r = 0.0f;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t t = it / nc, c0 = (it % nc) * ce;
        float *x = p->x + t * p->ld + c0;                          /* (ce) */
        const float *src = x;
        if (p->kind == TB_PRO_NORM) {
            if (t != t_rms) { r = rms_inv(p->x + t * p->ld, p->n_in, p->eps); t_rms = t; }
            float *xn = p->xn ? p->xn + t * p->ld + c0 : nbuf;     /* (ce) */
            norm_mul(xn, x, r, p->w + c0, ce);
            src = xn;
        } else if (p->kind == TB_PRO_SWIGLU) {
            swiglu(x, p->u + t * p->ld + c0, ce, p->clamp);
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
    tb_sched_t *sched;               /* (nth) ranges of 16-row units */
    int64_t min_units;               /* smallest claim               */
    tb_lin_pro_claim_t claim;
    tb_pass_clock_t *clk;            /* NULL unless profiling        */
} lin_pass;

static double job_row_cost(const tb_lin_job_t *j) {
    return (double)j->n_tok * (double)j->w->row_bytes + 64.0;
}

static int64_t job_units(const tb_lin_job_t *j) { return (j->w->n_out + ROW_ALIGN - 1) / ROW_ALIGN; }

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

int64_t tb_lin_cut_units(const tb_lin_job_t *jobs, int n_jobs, int k, int nth) {
    int j;
    int64_t r, u = 0;
    tb_lin_cut(jobs, n_jobs, k, nth, &j, &r);
    for (int i = 0; i < j; i++) u += job_units(&jobs[i]);
    return u + r / ROW_ALIGN;
}

/* A gemm over rows [r0, r1) of W, tiled: rows in tiles of about
 * GEMM_TILE_BYTES (whole 16-row units, on the matrix's own 16-row grid)
 * and, in each, the tokens in slices of GEMM_TILE_TOK. A kernel's gemm
 * passes over all its rows for every few tokens (4 to 8), so untiled, a
 * claim of a prefill pass (up to a quarter of a thread's rows, megabytes)
 * streams from the L3 or memory once per few tokens; tiled, a tile's
 * weights and a slice's activations stay in the L2 while the slice's
 * tokens pass over them. The kernels promise that a row's result depends
 * neither on the rows nor on the tokens computed with it (gemm == matvec
 * per row and token), so the tiling changes no result. */
#define GEMM_TILE_BYTES 131072
#define GEMM_TILE_TOK 64
static int64_t gemm_tile_bytes = GEMM_TILE_BYTES, gemm_tile_tok = GEMM_TILE_TOK;

void tb_lin_set_gemm_tile(int64_t tile_bytes, int64_t tile_tok) {
    gemm_tile_bytes = tile_bytes > 0 ? tile_bytes : GEMM_TILE_BYTES;
    gemm_tile_tok = tile_tok > 0 ? tile_tok : GEMM_TILE_TOK;
}

static void lin_gemm_tiled(const tb_type_kernels_t *k, const uint8_t *W, size_t rb, const tb_lin_job_t *J,
                           float *Y, int64_t r0, int64_t r1) {
    const int64_t tile = TB_MAX(ROW_ALIGN, (int64_t)(gemm_tile_bytes / (int64_t)rb) / ROW_ALIGN * ROW_ALIGN);
    for (int64_t a = r0; a < r1;) {
        const int64_t b = TB_MIN(r1, (a / tile + 1) * tile);   /* (b - a) rows */
        for (int64_t t = 0; t < J->n_tok; t += gemm_tile_tok) {
            const int64_t nt = TB_MIN(gemm_tile_tok, J->n_tok - t);
            k->gemm(W, rb, (const uint8_t *)J->a + (size_t)t * J->a_stride, J->a_stride, nt, Y + t * J->ldy,
                    J->ldy, a, b, J->w->n_in);
        }
        a = b;
    }
}

/* Rows [r0, r1) of J's matrix, all in one half when it has two (the
 * second half is matrix 1 of a two-matrix stack of half_rows each, both
 * in the file and in a repacked copy, model.c). */
static void lin_piece(const tb_lin_job_t *J, int64_t r0, int64_t r1) {
    const tb_type_kernels_t *k = &tb_kernels()->t[J->w->type];
    const uint8_t *W = (const uint8_t *)J->w->data + J->mat * J->w->mat_bytes;
    const int64_t h = J->w->half_rows && r0 >= J->w->half_rows ? J->w->half_rows : 0;
    assert(!J->w->half_rows || (J->w->n_mat == 1 && (r1 <= J->w->half_rows || h)));
    W += (size_t)h * J->w->row_bytes;
    if (J->n_tok == 1)
        k->matvec(W, J->w->row_bytes, J->a, J->y + h, r0 - h, r1 - h, J->w->n_in);
    else
        lin_gemm_tiled(k, W, J->w->row_bytes, J, J->y + h, r0 - h, r1 - h);
}

void tb_lin_rows(const tb_lin_job_t *J, int64_t r0, int64_t r1) {
    if (r0 >= r1) return;
    const int64_t h = J->w->half_rows;
    if (h && r0 < h && h < r1) {
        lin_piece(J, r0, h);
        lin_piece(J, h, r1);
    } else {
        lin_piece(J, r0, r1);
    }
    if (J->acc)
        for (int64_t t = 0; t < J->n_tok; t++) {
            float *acc = J->acc + t * J->ldy;      /* (ldy) */
            const float *y = J->y + t * J->ldy;    /* (ldy) */
            for (int64_t r = r0; r < r1; r++) acc[r] += y[r];
        }
}

/* Rows of units [u0, u1) of the concatenated jobs, job by job. */
static void lin_units(const tb_lin_job_t *jobs, int n_jobs, int64_t u0, int64_t u1) {
    int64_t base = 0;                          /* first unit of job j */
    for (int j = 0; j < n_jobs && base < u1; j++) {
        const int64_t nu = job_units(&jobs[j]);
        if (u0 < base + nu) {
            const int64_t a = TB_MAX(u0, base) - base, b = TB_MIN(u1, base + nu) - base;
            tb_lin_rows(&jobs[j], a * ROW_ALIGN, TB_MIN(b * ROW_ALIGN, jobs[j].w->n_out));
        }
        base += nu;
    }
}

void tb_lin_pro_claim_run(tb_lin_pro_claim_t *c, const tb_lin_pro_t *p, int nth) {
    const int64_t items = tb_lin_pro_items(p), per = (items + nth - 1) / nth;
    if (items == 0) return;
    int64_t i;
    while ((i = atomic_fetch_add_explicit(&c->next, per, memory_order_relaxed)) < items) {
        const int64_t e = TB_MIN(items, i + per);
        tb_lin_pro_items_run(p, i, e);
        atomic_fetch_add_explicit(&c->done, e - i, memory_order_release);
    }
    int spins = 0;
    while (atomic_load_explicit(&c->done, memory_order_acquire) < items) tb_spin_wait(&spins);
}

static void lin_worker(void *arg, int ith, int nth) {
    lin_pass *p = arg;
    tb_pass_clock_mark(p->clk, ith, TB_CLK_ENTRY);
    if (p->pro) tb_lin_pro_claim_run(&p->claim, p->pro, nth);
    tb_pass_clock_mark(p->clk, ith, TB_CLK_ROWS);
    int64_t u0, u1;
    while (tb_sched_next(p->sched, ith, nth, p->min_units, &u0, &u1))
        lin_units(p->jobs, p->n_jobs, u0, u1);
    tb_pass_clock_mark(p->clk, ith, TB_CLK_DONE);
}

void tb_lin_run(tb_pool_t *pool, tb_sched_t *sched, const tb_lin_pro_t *pro,
                const tb_lin_job_t *jobs, int n_jobs, tb_pass_clock_t *clk) {
    lin_pass p = {.pro = pro && pro->kind != TB_PRO_NONE ? pro : NULL, .jobs = jobs,
                  .n_jobs = n_jobs, .sched = sched, .clk = clk};
    atomic_init(&p.claim.next, 0);
    atomic_init(&p.claim.done, 0);
    if (n_jobs == 0 && !p.pro) return;
    const int nth = tb_pool_n_threads(pool);
    int64_t cut[TB_SCHED_MAX_THREADS + 1];
    assert(nth <= TB_SCHED_MAX_THREADS);
    double cost = 0.0;
    int64_t units = 0;
    for (int j = 0; j < n_jobs; j++) {
        cost += job_row_cost(&jobs[j]) * (double)jobs[j].w->n_out;
        units += job_units(&jobs[j]);
    }
    for (int k = 0; k <= nth; k++) cut[k] = tb_lin_cut_units(jobs, n_jobs, k, nth);
    tb_sched_init(sched, nth, cut);
    /* claims of >= CHUNK_MIN_BYTES on average rows */
    const double unit_cost = units ? cost / (double)units * ROW_ALIGN : 1.0;
    p.min_units = TB_MAX(1, (int64_t)(CHUNK_MIN_BYTES / unit_cost));
    tb_pass_clock_run(clk, pool, lin_worker, &p, true);   /* claimed prologue and rows: thread 0 can do it all */
}

size_t tb_lin_quantize(tb_type_t wtype, const float *x, int64_t x_ld, int64_t n,
                       int64_t n_in, void *out) {
    const size_t stride = tb_act_row_bytes(wtype, n_in);
    const tb_from_float_fn q = tb_kernels()->t[wtype].quantize_act;
    for (int64_t i = 0; i < n; i++) q(x + i * x_ld, (uint8_t *)out + (size_t)i * stride, n_in);
    return stride;
}
