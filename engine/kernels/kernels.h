/*
 * kernels.h — the kernel dispatch table.
 *
 * One table per ISA tier (ref, generic, avx2, avx512, neon, dotprod, i8mm), each filled by
 * its own translation unit compiled with its own flags. tb_kernels() returns
 * the active tier's table, chosen once at start-up from libcpuid (capped by
 * TB_ISA / tb_isa_set). A tier may leave an entry NULL: the dispatcher then
 * inherits the entry from the next lower tier, so every entry of the active
 * table is non-NULL.
 *
 * Weights are in file (ggml) layout unless a tier provides `repack`, in
 * which case the model loader calls it once at load time and the tier's
 * matvec/gemm read the repacked layout.
 */
#ifndef TB_KERNELS_H
#define TB_KERNELS_H

#include "quant/quant.h"

/* Rows [r0, r1) of W (row stride w_stride bytes, n columns) times one
 * activation row `a` (already in the type's vec_dot format): y[r] = W[r]·a */
typedef void (*tb_matvec_fn)(const void *W, size_t w_stride, const void *a,
                             float *y, int64_t r0, int64_t r1, int64_t n);
/* Rows [r0, r1) of W times n_tok activation rows A (stride a_stride bytes):
 * Y[t * ldy + r] = W[r]·A[t] */
typedef void (*tb_gemm_fn)(const void *W, size_t w_stride, const void *A,
                           size_t a_stride, int64_t n_tok, float *Y, int64_t ldy,
                           int64_t r0, int64_t r1, int64_t n);

/* Repack `rows` rows of W (file layout, stride ws, n columns) into `out`
 * (tb_repack_bytes(...) bytes, rows padded to the tier's repack_rows). */
typedef void (*tb_repack_fn)(const void *W, size_t ws, int64_t rows, int64_t n, void *out);

typedef struct tb_type_kernels {
    tb_from_float_fn quantize_act;  /* f32 -> vec_dot_type (for F32/F16/BF16: copy) */
    tb_vec_dot_fn vec_dot;
    tb_matvec_fn matvec;
    tb_gemm_fn gemm;
    /* Optional, never inherited: a load-time layout for this tier. When set,
     * matvec/gemm look their W up with tb_repack_lookup and read the
     * repacked copy if one is registered (else the file layout). */
    tb_repack_fn repack;
    int repack_rows;                /* rows per interleaved group (0: none) */
    /* Optional: bytes of the copy of `rows` rows (row stride ws) when the
     * layout is not the file rows padded to repack_rows (tb_repack_bytes). */
    size_t (*repack_bytes)(size_t ws, int64_t rows);
} tb_type_kernels_t;

/* Sum of the n/8 64-bit words at p (n % 64 == 0, p 64-byte aligned): the
 * inner loop of the bandwidth probe, in the widest loads the tier has. */
typedef uint64_t (*tb_read_sum_fn)(const void *p, size_t n);

typedef struct tb_kernels {
    tb_isa_t isa;
    const char *features;                    /* CPU features used */
    tb_type_kernels_t t[TB_TYPE_COUNT];      /* indexed by weight type */
    tb_read_sum_fn read_sum;
} tb_kernels_t;

/* The active table (never NULL, all entries of supported types set). */
const tb_kernels_t *tb_kernels(void);
/* A specific tier's merged table, or NULL when this CPU/build lacks it. */
const tb_kernels_t *tb_kernels_for(tb_isa_t isa);

/* CPU features found by the dispatcher before the tiers' fill functions
 * run (a tier may pick variants from them, e.g. VNNI inside AVX-512). */
typedef struct tb_cpu_features {
    bool avx2, avx512, avx512vnni, avx512bf16, avx512vbmi;   /* x86-64  */
    bool neon, dotprod, i8mm;                    /* aarch64 */
} tb_cpu_features_t;
extern tb_cpu_features_t tb_cpu;

/* Software prefetch distance of the streaming matvecs, in bytes ahead of
 * the block being read (0: none; a multiple of 64, at most
 * TB_PREFETCH_MAX). Chosen at start-up from the CPU (dispatch.c,
 * pf_default), then TB_PREFETCH, then tb_prefetch_set(); a kernel reads
 * it once per 16-row group. The repacked AVX-512 matvecs use it (x86_common.h,
 * tb_pf_block): each block's lines that far ahead are requested before it
 * is read. It changes no result. */
extern uint32_t tb_pf_bytes;
/* The L2 stage (tb_prefetch_l2): each requested line is also requested
 * with prefetcht2 at twice the distance. */
extern bool tb_pf_l2;

/* Fill functions of each tier (only the entries the tier implements). */
void tb_kernels_fill_ref(tb_kernels_t *k);
void tb_kernels_fill_generic(tb_kernels_t *k);
void tb_kernels_fill_avx2(tb_kernels_t *k);    /* defined only on x86-64  */
void tb_kernels_fill_avx512(tb_kernels_t *k);  /* defined only on x86-64  */
void tb_kernels_fill_neon(tb_kernels_t *k);    /* defined only on aarch64 */
void tb_kernels_fill_neon_dotprod(tb_kernels_t *k);   /* aarch64: the SDOT kernels only */
void tb_kernels_fill_i8mm(tb_kernels_t *k);   /* aarch64: the SMMLA gemms only (tier_i8mm.c) */

/* ---- the i8mm tier's choice per format (calib.c) ---------------------
 * Formats with an SMMLA gemm, in this order: Q8_0, Q4_0, TQ2_0. */
#define TB_I8MM_N 3
extern const tb_type_t tb_i8mm_types[TB_I8MM_N];
/* use_mm[i]: keep the SMMLA gemm of format i. mode NULL, "" or "auto":
 * where mm_ns[i] < sdot_ns[i] (both measured, > 0), else SDOT's;
 * "smmla": all; "sdot": none. Any other mode: TB_ERR_ARG (use_mm then
 * as for "auto"). */
int tb_i8mm_choose(const char *mode, const double sdot_ns[TB_I8MM_N], const double mm_ns[TB_I8MM_N],
                   bool use_mm[TB_I8MM_N]);
/* The tier's features string naming the choice, e.g.
 * "neon,dotprod,i8mm(gemm q8_0:smmla q4_0:sdot tq2_0:smmla)", into buf. */
void tb_i8mm_describe(const bool use_mm[TB_I8MM_N], char *buf, size_t size);

/* Generic read_sum (also the ref tier's). */
uint64_t tb_read_sum_generic(const void *p, size_t n);

/* ---- load-time repacking (repack.c) ----------------------------------
 * The model loader registers each weight matrix stack once; the active
 * tier's repack (if any) copies it into its layout. The file data stays
 * valid and untouched, so every other tier (and tb_isa_set at any time)
 * keeps working on the file layout. */
/* Bytes the active tier's repacked copy of the stack of n_mat matrices
 * of `rows` rows of rb bytes each (tb_type_row_bytes(t, n) for n columns)
 * takes; 0 when the tier has no repack for t. */
size_t tb_repack_size(tb_type_t t, size_t rb, int64_t rows, int64_t n_mat);
/* Repack the stack of n_mat matrices (rows x n, row stride ws, matrix
 * stride rows * ws) at W for the active tier, tagged with `owner`. ws may
 * exceed the n columns' bytes (a view of some columns of wider rows): the
 * copy holds the n columns only, and is found under (W, ws). No-op
 * (TB_OK) when the tier has no repack for type t. The copy goes to `dst`
 * (tb_repack_size bytes, 64-byte aligned, owned by the caller) or, when dst
 * is NULL, to memory the registry allocates and frees. *extra: bytes of the
 * copy (0 when nothing was repacked). */
int tb_repack_register(const void *owner, tb_type_t t, const void *W, size_t ws, int64_t rows,
                       int64_t n, int64_t n_mat, void *dst, size_t *extra);
/* The same with matrix m's copy at dst + m * dst_stride (dst required;
 * dst_stride a multiple of 64 and >= one matrix's copy, 0: packed), so two
 * stacks can interleave their matrices (MoE gate and up of one expert as
 * one stream). *extra counts only this stack's copies. */
int tb_repack_register_at(const void *owner, tb_type_t t, const void *W, size_t ws, int64_t rows,
                          int64_t n, int64_t n_mat, void *dst, size_t dst_stride, size_t *extra);
/* Free every registration tagged `owner`. */
void tb_repack_release(const void *owner);
/* The repacked copy of the matrix starting at W (row stride ws) made by
 * tier isa for type t, or NULL. Thread-safe; O(log registrations). */
const void *tb_repack_lookup(const void *W, size_t ws, tb_isa_t isa, tb_type_t t);
/* Bytes of a repacked matrix of `rows` rows of ws bytes in groups of g. */
static inline size_t tb_repack_bytes(size_t ws, int64_t rows, int g) {
    return ws * (size_t)((rows + g - 1) / g * g);
}
/* Bytes of the repacked copy of `rows` rows for kernel entry e. */
static inline size_t tb_repack_entry_bytes(const tb_type_kernels_t *e, size_t ws, int64_t rows) {
    return e->repack_bytes ? e->repack_bytes(ws, rows) : tb_repack_bytes(ws, rows, e->repack_rows);
}

/* Bytes of one activation row of n elements for weight type t. */
size_t tb_act_row_bytes(tb_type_t wtype, int64_t n);

/* tb_matvec / tb_matmul on activations already quantized (api.c; the
 * tb_weights_*_act entry points): the weight pass alone. */
int tb_matvec_act(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
                  const tb_act_t *a, float *y);
int tb_matmul_act(tb_pool_t *pool, tb_type_t wtype, const void *W, int64_t rows, int64_t cols,
                  const tb_act_t *a, float *Y);


/* matvec and gemm of a tier as plain loops over its row dot product
 * DOT(n, s, w, a): one call per (row, token), so gemm == matvec per row.
 * Defines static matvec_NAME and gemm_NAME. */
/* vec_dot / matvec / gemm named VD / MV / GM from one multi-token body
 * DOT(nt, n, s, w, aa): s[0..nt) = row w . activation rows aa[0..nt).
 * gemm runs NT tokens per call and single tokens for the rest, so every
 * (row, token) goes through the same body as matvec: bit-identical.
 * ATTR is the functions' target attribute (may be empty). Used by the x86
 * (TB_X86_KERNELS) and NEON (TB_NEON_KERNELS) tiers. */
#define TB_KERNELS_FROM_NT_DOT(ATTR, VD, MV, GM, NT, DOT)                                  \
    ATTR static void VD(int64_t n, float *s, const void *w, const void *a) {               \
        const void *aa[1] = {a};                                                           \
        DOT(1, n, s, w, aa);                                                               \
    }                                                                                      \
    ATTR static void MV(const void *W, size_t ws, const void *a, float *y, int64_t r0,     \
                        int64_t r1, int64_t n) {                                           \
        const void *aa[1] = {a};                                                           \
        for (int64_t r = r0; r < r1; r++) DOT(1, n, &y[r], (const uint8_t *)W + (size_t)r * ws, aa); \
    }                                                                                      \
    ATTR static void GM(const void *W, size_t ws, const void *A, size_t as, int64_t nt,    \
                        float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {        \
        for (int64_t r = r0; r < r1; r++) {                                                \
            const void *wr = (const uint8_t *)W + (size_t)r * ws;                          \
            int64_t t = 0;                                                                 \
            for (; t + (NT) <= nt; t += (NT)) {                                            \
                const void *aa[NT];                                                        \
                float s[NT];                                                               \
                for (int k = 0; k < (NT); k++) aa[k] = (const uint8_t *)A + (size_t)(t + k) * as; \
                DOT(NT, n, s, wr, aa);                                                     \
                for (int k = 0; k < (NT); k++) Y[(t + k) * ldy + r] = s[k];                \
            }                                                                              \
            for (; t < nt; t++) {                                                          \
                const void *aa[1] = {(const uint8_t *)A + (size_t)t * as};                 \
                DOT(1, n, &Y[t * ldy + r], wr, aa);                                        \
            }                                                                              \
        }                                                                                  \
    }

#define TB_KERNELS_FROM_DOT(name, DOT)                                                    \
    static void matvec_##name(const void *W, size_t ws, const void *a, float *y,         \
                              int64_t r0, int64_t r1, int64_t n) {                       \
        for (int64_t r = r0; r < r1; r++) DOT(n, &y[r], (const uint8_t *)W + (size_t)r * ws, a); \
    }                                                                                    \
    static void gemm_##name(const void *W, size_t ws, const void *A, size_t as, int64_t nt, \
                            float *Y, int64_t ldy, int64_t r0, int64_t r1, int64_t n) {  \
        for (int64_t r = r0; r < r1; r++)                                                \
            for (int64_t t = 0; t < nt; t++)                                             \
                DOT(n, &Y[t * ldy + r], (const uint8_t *)W + (size_t)r * ws,             \
                    (const uint8_t *)A + (size_t)t * as);                                \
    }

#endif
