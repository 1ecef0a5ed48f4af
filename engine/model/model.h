/*
 * model.h — the loaded model (hyper-parameters + weight views into the GGUF
 * mapping) and the internal interfaces between the model/ files:
 *
 *   hparams.c    architecture keys  -> tb_model_info_t + per-layer flags
 *   model.c      load, validate tensors, info, bytes per token
 *   ops.c        rmsnorm, rope tables, softmax, exp/silu, f16 rounding
 *                (plain C that vectorises, per row)
 *   linear.c     fused passes: parallel prologue (norm / SwiGLU /
 *                quantization), barrier, matvec/gemm rows through the
 *                kernel table split over the pool, residual-add epilogue
 *   attention.c  KV cache (K tiled transposed, V by slot), q/k norm +
 *                rope, attention of each kv-head group (kernels:
 *                attention_x86.c, portable C in attention.c)
 *   moe.c        router (softmax top-k) and the expert MLPs
 *   forward.c    one chunk of tokens through all layers
 *   session.c    tb_session_*: KV cache, scratch, logits
 *
 * Weights are never copied: a tb_weight_t points into the mapping. Only the
 * small 1-D norm vectors are converted to owned f32 arrays at load.
 */
#ifndef TB_MODEL_H
#define TB_MODEL_H

#include <math.h>
#include "internal.h"

#include <stdatomic.h>

typedef enum tb_arch { TB_ARCH_LLAMA = 0, TB_ARCH_MAPLE = 1 } tb_arch_t;

/* A matrix (or a stack of n_mat matrices) in file layout: n_out rows of
 * n_in elements, row stride row_bytes; matrix e starts at e * mat_bytes.
 * A column slice (the split decode's) is a view: its rows are a part of
 * a wider matrix's rows, so row_bytes is more than its n_in take.
 * half_rows (a split layer's Q, K, V, dense gate and up; model.c): the
 * rows are two halves of half_rows each, placed apart at run time (each
 * next to the other matrices one thread of the split decode reads), so
 * every kernel call covers rows of one half (tb_lin_rows); 0: one piece. */
typedef struct tb_weight {
    const void *data;       /* NULL when the tensor is absent */
    tb_type_t type;
    int64_t n_in, n_out, n_mat;
    size_t row_bytes, mat_bytes;
    int64_t half_rows;
} tb_weight_t;

/* Bytes of one matrix's elements (what one pass over it reads): n_out
 * rows of n_in elements, without the rest of a view's rows. */
static inline size_t tb_weight_bytes(const tb_weight_t *w) {
    return tb_type_row_bytes(w->type, w->n_in) * (size_t)w->n_out;
}

typedef struct tb_layer {
    const float *attn_norm;          /* (n_embd)                          */
    const float *q_norm, *k_norm;    /* (head_dim) or NULL                */
    const float *ffn_norm;           /* (n_embd)                          */
    tb_weight_t wq;                  /* (n_embd -> n_head * head_dim)     */
    tb_weight_t wk, wv;              /* (n_embd -> n_head_kv * head_dim)  */
    tb_weight_t wo;                  /* (n_head * head_dim -> n_embd)     */
    tb_weight_t ffn_gate, ffn_up;    /* dense: (n_embd -> n_ff)           */
    tb_weight_t ffn_down;            /* dense: (n_ff -> n_embd)           */
    tb_weight_t router;              /* (n_embd -> n_expert)              */
    tb_weight_t gate_exps, up_exps;  /* (n_expert, n_embd -> n_ff_exp)    */
    tb_weight_t down_exps;           /* (n_expert, n_ff_exp -> n_embd)    */
    bool sliding;                    /* attends to the last n_swa positions */
    bool rope;                       /* apply RoPE on this layer           */
    float rope_base;
    float clamp;                     /* swiglu clamp c; INFINITY: none     */
    /* Wo and the dense ffn_down as two column slices (model.c): every path
     * computes x = (x + W_0 . a[0:cut]) + W_1 . a[cut:], so that a 2-thread
     * decode can give each thread one slice and the half of the activation
     * it produced itself. Set only on layers whose decode step can split
     * (model.c, split_columns), where a dense layer has both cuts and an
     * MoE layer wo_cut alone (its threads split the experts); 0 means the
     * whole matrix. */
    tb_weight_t wo_sl[2], down_sl[2];
    int64_t wo_cut, down_cut;        /* first column of slice 1            */
} tb_layer_t;

struct tb_model {
    tb_gguf_t *gguf;
    void *arena;                     /* (arena_bytes) weights' run-time copies, huge pages */
    size_t arena_bytes;
    tb_tokenizer_t *tok;             /* NULL when the file has no tokenizer */
    tb_model_info_t info;
    tb_arch_t arch;
    bool rope_neox;                  /* rotate-half pairing (maple) vs adjacent (llama) */
    tb_weight_t tok_embd;            /* (n_embd -> n_vocab), rows are embeddings */
    tb_weight_t output;              /* (n_embd -> n_vocab), == tok_embd when tied */
    bool tied;
    const float *output_norm;        /* (n_embd) */
    tb_layer_t *layers;              /* (n_layer) */
    float *norm_store;               /* owns every f32 norm vector */
};

/* ---- hparams.c --------------------------------------------------------- */

/* Read the architecture's keys into m->info, m->arch, m->rope_neox and the
 * per-layer flags of m->layers (allocated here, n_layer entries). Unknown
 * architecture: TB_ERR_UNSUPPORTED; missing/invalid key: TB_ERR_FORMAT or
 * TB_ERR_NOT_FOUND with a message naming the file and the key. */
int tb_model_read_hparams(tb_model_t *m, const char *path);

/* ---- ops.c ------------------------------------------------------------- */

/* y = x / sqrt(mean(x^2) + eps) * w, n elements (y may alias x). */
void tb_op_rmsnorm(float *y, const float *x, const float *w, int n, float eps);
/* cos/sin of pos * base^(-2i/n_rot) for i < n_rot/2, computed in double. */
void tb_op_rope_table(float *cs, float *sn, int32_t pos, int n_rot, float base);
/* Rotate the first n_rot dims of one head x (head_dim) in place. neox:
 * pairs (i, i + n_rot/2); else adjacent pairs (2i, 2i+1). */
void tb_op_rope(float *x, const float *cs, const float *sn, int n_rot, bool neox);
/* In-place softmax of x * scale over n values (scale > 0; f32,
 * max-subtracted, sum in 8 fixed partial sums). */
void tb_op_softmax(float *x, int n, float scale);
/* 1 / sqrt(mean(x^2) + eps) of n values, the sum of squares in double:
 * element i into partial sum i % TB_RMS_SUMS, the sums combined by
 * tb_rms_finish's fixed tree. The same value on every thread and tier
 * (the AVX-512 twin keeps the order: 4 independent 8-lane chains, where 8
 * partial sums were one chain of n / 8 dependent adds, 0.65 us of every
 * 2048-wide prologue on a Zen 4 core). */
#define TB_RMS_SUMS 32
float tb_op_rms_inv(const float *x, int64_t n, float eps);
static inline float tb_rms_finish(const double *ss, int64_t n, float eps) {
    double t[8];
    for (int k = 0; k < 8; k++) t[k] = (ss[k] + ss[k + 8]) + (ss[k + 16] + ss[k + 24]);
    const double sum = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
    return (float)(1.0 / sqrt(sum / (double)n + (double)eps));
}
/* y = (x * r) * w, n elements (y may alias x): RMSNorm's scaling. */
void tb_op_norm_mul(float *y, const float *x, float r, const float *w, int64_t n);
/* The twins of a kernel tier (ops_x86.c; the same bits); _for picks one. */
typedef float (*tb_rms_inv_fn)(const float *x, int64_t n, float eps);
typedef void (*tb_norm_mul_fn)(float *y, const float *x, float r, const float *w, int64_t n);
float tb_op_rms_inv_avx512(const float *x, int64_t n, float eps);
void tb_op_norm_mul_avx512(float *y, const float *x, float r, const float *w, int64_t n);
tb_rms_inv_fn tb_op_rms_inv_for(tb_isa_t isa);
tb_norm_mul_fn tb_op_norm_mul_for(tb_isa_t isa);

/* Branch-free c ? a : b on float bits (keeps loops vectorisable). */
static inline float tb_op_sel(bool c, float a, float b) {
    union { float f; uint32_t u; } x = {.f = a}, y = {.f = b};
    const uint32_t m = (uint32_t)-(int32_t)c;
    x.u = (x.u & m) | (y.u & ~m);
    return x.f;
}

/* e^x in plain C that compilers vectorise (no libm call, no branch):
 * x = k ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2), e^r by a
 * degree-7 Taylor polynomial, 2^k added into the exponent bits. Relative
 * error <= 1.1e-7 on [-87, 88.5] (tests/model/test_ops.c); x > 88.72: +inf;
 * x < -87.33: 0 (no subnormals); NaN stays NaN. */
/* tb_op_exp's constants, shared with its vector twins (attention_x86.c)
 * so that they stay bit-identical. */
#define TB_EXP_HI 88.72f                  /* above: +inf                    */
#define TB_EXP_LO (-87.33f)               /* below: 0                       */
#define TB_EXP_BIG 12582912.0f            /* 1.5 * 2^23: round to int       */
#define TB_EXP_LOG2E 1.44269504f
#define TB_EXP_LN2_HI 0.693145752f        /* ln2 hi: k * hi exact           */
#define TB_EXP_LN2_LO 1.42860677e-06f     /* ln2 lo                         */
static inline float tb_op_exp(float x) {
    float xc = tb_op_sel(x > TB_EXP_HI, TB_EXP_HI, x);
    xc = tb_op_sel(xc < TB_EXP_LO, TB_EXP_LO, xc);
    const float kf = (xc * TB_EXP_LOG2E + TB_EXP_BIG) - TB_EXP_BIG;   /* round(x / ln2) */
    float r = xc - kf * TB_EXP_LN2_HI;
    r = r - kf * TB_EXP_LN2_LO;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    union { float f; uint32_t u; } e = {.f = p};
    e.u += (uint32_t)(int32_t)kf << 23;
    float v = tb_op_sel(x > TB_EXP_HI, __builtin_inff(), e.f);
    v = tb_op_sel(x < TB_EXP_LO, 0.0f, v);
    return tb_op_sel(x != x, x, v);
}
/* f32 -> f16 bits, round to nearest even, bit-identical to
 * tb_fp32_to_fp16 (NaN quieted with its top payload bits, overflow to
 * inf, subnormals rounded by the FPU's own RNE) but branch-free so that
 * row loops vectorise. */
static inline uint16_t tb_op_f16(float f) {
    union { float f; uint32_t u; } in = {.f = f}, sub;
    const uint32_t u = in.u & 0x7fffffffu, sign = (in.u >> 16) & 0x8000u;
    const uint32_t nrm = ((u + 0xfffu + ((u >> 13) & 1u)) - (112u << 23)) >> 13;
    sub.f = __builtin_fabsf(f) * 0x1p24f + 8388608.0f;   /* RNE of |f| * 2^24 */
    const uint32_t sbn = sub.u - 0x4b000000u;
    const uint32_t nan = 0x7e00u | ((u >> 13) & 0x3ffu);
    uint32_t h = u < 0x38800000u ? sbn : nrm;
    h = u >= 0x477ff000u ? 0x7c00u : h;
    h = u > 0x7f800000u ? nan : h;
    return (uint16_t)(sign | h);
}

static inline float tb_op_silu(float x) { return x / (1.0f + tb_op_exp(-x)); }

/* SwiGLU in place: x[i] = silu(min(x[i], c)) * clamp(u[i], -c, c); c = +inf:
 * silu(x[i]) * u[i] (ops.c, the spec). The x86 tiers' twins (ops_x86.c)
 * give the same bits; tb_op_swiglu_for picks the one of a kernel tier. */
typedef void (*tb_swiglu_fn)(float *x, const float *u, int64_t n, float c);
void tb_op_swiglu(float *x, const float *u, int64_t n, float c);
void tb_op_swiglu_avx512(float *x, const float *u, int64_t n, float c);
void tb_op_swiglu_avx2(float *x, const float *u, int64_t n, float c);
tb_swiglu_fn tb_op_swiglu_for(tb_isa_t isa);

/* ---- linear.c ---------------------------------------------------------- */

/* One matrix of a fused linear pass: Y[t * ldy + r] = W[r] · A[t] for the
 * n_tok activation rows A (already quantized to W's activation format,
 * stride a_stride bytes) and rows r of [0, W->n_out). With acc, the thread
 * that computed rows [a, b) then adds them: acc[t * ldy + r] += Y[...]
 * (the residual add, without a pass of its own). */
typedef struct tb_lin_job {
    const tb_weight_t *w;
    size_t mat;                      /* matrix index within a stack (experts) */
    const void *a;
    size_t a_stride;
    int64_t n_tok;
    float *y;
    int64_t ldy;
    float *acc;                      /* NULL, or (n_tok, ldy) += y */
} tb_lin_job_t;

/* The prologue of a pass: activation rows the pass's threads produce
 * together, split by (row, chunk of quantization blocks), before a barrier
 * and the matrix rows. Every element is computed the same way whatever
 * the split, so the result does not depend on the thread count. */
typedef enum tb_pro_kind {
    TB_PRO_NONE = 0,
    TB_PRO_QUANT,      /* q = quant(x)                                        */
    TB_PRO_NORM,       /* xn = rmsnorm(x) * w (sum of squares in double over
                          the whole row, computed by each thread that needs
                          it, same order); q = quant(xn)                       */
    TB_PRO_SWIGLU,     /* x = silu(min(x, c)) * clamp(u, -c, c) in place;
                          q = quant(x)                                         */
} tb_pro_kind_t;

typedef struct tb_lin_pro {
    tb_pro_kind_t kind;
    float *x;                        /* (n, ld) input rows (SWIGLU: gate, overwritten) */
    const float *u;                  /* SWIGLU: (n, ld) up rows             */
    int64_t ld, n_in, n;             /* row stride in floats, row length, rows */
    const float *w;                  /* NORM: (n_in) weight                 */
    float eps;                       /* NORM                                */
    float clamp;                     /* SWIGLU: c, INFINITY for none        */
    float *xn;                       /* NORM: (n, ld) output rows; NULL when
                                        only q is wanted (q must be set)   */
    tb_type_t wtype;                 /* quantize for this weight type ...   */
    void *q;                         /* ... into q (NULL: no quantization)  */
    size_t q_stride;                 /* = tb_act_row_bytes(wtype, n_in)     */
} tb_lin_pro_t;

/* Prologue items: (row, chunk of whole quantization blocks) pairs, the
 * unit in which threads share a prologue; 0 for none. */
int64_t tb_lin_pro_items(const tb_lin_pro_t *p);
/* Run items [i0, i1) of a prologue (any split gives the same bytes). */
void tb_lin_pro_items_run(const tb_lin_pro_t *p, int64_t i0, int64_t i1);
/* Run the static share `ith` of `nth` of a prologue. */
void tb_lin_prologue(const tb_lin_pro_t *p, int ith, int nth);

/* A prologue shared by claims: each of the pass's threads calls
 * tb_lin_pro_claim_run, takes items in 1/nth shares while any are left,
 * then waits until all are done (zero next and done before the pass).
 * A thread that arrives late finds the work done and goes straight on. */
typedef struct tb_lin_pro_claim { _Atomic int64_t next, done; } tb_lin_pro_claim_t;
void tb_lin_pro_claim_run(tb_lin_pro_claim_t *c, const tb_lin_pro_t *p, int nth);

/* The gemm tiling of prefill passes (linear.c): row tiles of about
 * tile_bytes of weights (at least one 16-row unit) and token slices of
 * tile_tok; 0, 0 restores the defaults (128 KB, 64 tokens). For tests,
 * which shrink the tiles so that small models cross their edges: set it
 * while no pass runs. */
void tb_lin_set_gemm_tile(int64_t tile_bytes, int64_t tile_tok);

/* ---- sched.c: dynamic split of a pass's units -------------------------- */

#define TB_SCHED_MAX_THREADS 512      /* = tb_pool_new's limit */

/* One thread's range of units, front << 32 | back, on its own cache line. */
typedef struct tb_sched { _Alignas(64) _Atomic uint64_t fb; } tb_sched_t;

/* Before the pass: thread k owns units [cut[k], cut[k+1]) (cut: nth + 1
 * non-decreasing values below 2^32). */
void tb_sched_init(tb_sched_t *s, int nth, const int64_t *cut);
/* Next chunk [*u0, *u1) for thread ith: from the front of its own range,
 * else from the back of the fullest other range; max(min_units, 1/4 of
 * what that range holds) units, or all of it when fewer. false when every
 * range is empty. Each unit is returned to exactly one caller. */
bool tb_sched_next(tb_sched_t *s, int ith, int nth, int64_t min_units, int64_t *u0, int64_t *u1);

/* ---- the pass clock (profile.c): where a pool pass's time goes ---------- */

/* Per-thread timestamps of one pool pass, kept only while profiling: each
 * thread that runs the pass writes its own row of t (entry into the pass,
 * start of its rows after the prologue, end of its rows), the caller folds
 * the pass into the sums after the pool returns. A worker whose seat was
 * closed (it came too late) leaves its row at 0 and is not counted. */
typedef struct tb_pass_clock {
    int nth;                         /* pool threads                        */
    uint64_t *t;                     /* (nth, TB_CLK_STRIDE) ns: entry,
                                        rows, done (a cache line a thread) */
    uint64_t t_start;                /* caller, just before the pool run    */
    /* sums since the last tb_prof_end, in ns */
    uint64_t passes, wake_ns, prologue_ns, tail_ns;
} tb_pass_clock_t;

enum { TB_CLK_ENTRY = 0, TB_CLK_ROWS = 1, TB_CLK_DONE = 2, TB_CLK_STRIDE = 8 };

/* Thread ith reached point k (TB_CLK_*) of the pass (c may be NULL:
 * profiling off, then every tb_pass_clock_* is a no-op). */
static inline void tb_pass_clock_mark(tb_pass_clock_t *c, int ith, int k) {
    if (c) c->t[ith * TB_CLK_STRIDE + k] = tb_now_ns();
}
/* Thread ith entered a pass without a prologue: its rows start at once. */
static inline void tb_pass_clock_enter(tb_pass_clock_t *c, int ith) {
    tb_pass_clock_mark(c, ith, TB_CLK_ENTRY);
    tb_pass_clock_mark(c, ith, TB_CLK_ROWS);
}
/* One pool pass of fn(arg) (shared: tb_pool_run_shared, else
 * tb_pool_run) on clock c, folded into its sums: per pass, wake = the last
 * participant's entry - start; prologue = the participants' mean (rows -
 * entry); tail = end - the first participant's done. */
void tb_pass_clock_run(tb_pass_clock_t *c, tb_pool_t *pool, void (*fn)(void *, int, int), void *arg,
                       bool shared);

/* Run all jobs in ONE pool pass, after the prologue `pro` (NULL: none):
 * the rows of all jobs are concatenated as 16-row units, each thread
 * starts on a contiguous range of them balanced by bytes (tb_lin_cut) and
 * then helps the others (tb_sched_next); each row is computed by exactly
 * one kernel call (matvec when n_tok == 1, else gemm), so the result does
 * not depend on the thread count or timing. sched: (pool threads) lines;
 * clk: the profile's pass clock, NULL when not profiling. */
void tb_lin_run(tb_pool_t *pool, tb_sched_t *sched, const tb_lin_pro_t *pro,
                const tb_lin_job_t *jobs, int n_jobs, tb_pass_clock_t *clk);

/* Where thread k of nth starts in a pass over jobs: the (job, row) after
 * cutting the concatenated rows into nth ranges of equal work (rows x
 * tokens x row bytes, + 64 per row), rounded up to 16 rows; k == nth (or
 * an empty tail): (n_jobs, 0). Thread k runs [cut(k), cut(k + 1)). */
void tb_lin_cut(const tb_lin_job_t *jobs, int n_jobs, int k, int nth, int *job, int64_t *row);
/* The same cut as a 16-row unit index of the concatenated jobs. */
int64_t tb_lin_cut_units(const tb_lin_job_t *jobs, int n_jobs, int k, int nth);

/* Rows [r0, r1) of one job on the calling thread (plus its acc epilogue). */
void tb_lin_rows(const tb_lin_job_t *j, int64_t r0, int64_t r1);

/* Quantize n rows of x (row stride x_ld floats, n_in each) to the activation
 * format of weight type wtype; output row stride is the return value
 * (tb_act_row_bytes(wtype, n_in)). */
size_t tb_lin_quantize(tb_type_t wtype, const float *x, int64_t x_ld, int64_t n,
                       int64_t n_in, void *out);

#endif
