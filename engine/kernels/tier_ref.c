/* tier_ref.c — the reference tier: matvec/gemm as loops over the scalar
 * vec_dot of quant/ (the specification every other tier is tested against). */
#include "kernels/kernels.h"

#define REF_MATVEC(fmt, wt)                                                             \
    static void matvec_##fmt(const void *W, size_t ws, const void *a, float *y,          \
                             int64_t r0, int64_t r1, int64_t n) {                       \
        const tb_type_traits_t *tr = tb_type_traits(wt);                                 \
        for (int64_t r = r0; r < r1; r++)                                               \
            tr->vec_dot_ref(n, &y[r], (const uint8_t *)W + (size_t)r * ws, a);          \
    }                                                                                   \
    static void gemm_##fmt(const void *W, size_t ws, const void *A, size_t as,           \
                           int64_t nt, float *Y, int64_t ldy, int64_t r0, int64_t r1,   \
                           int64_t n) {                                                 \
        const tb_type_traits_t *tr = tb_type_traits(wt);                                 \
        for (int64_t t = 0; t < nt; t++)                                                \
            for (int64_t r = r0; r < r1; r++)                                           \
                tr->vec_dot_ref(n, &Y[t * ldy + r], (const uint8_t *)W + (size_t)r * ws, \
                                (const uint8_t *)A + (size_t)t * as);                   \
    }

REF_MATVEC(f32, TB_TYPE_F32)
REF_MATVEC(f16, TB_TYPE_F16)
REF_MATVEC(bf16, TB_TYPE_BF16)
REF_MATVEC(q8_0, TB_TYPE_Q8_0)
REF_MATVEC(q4_0, TB_TYPE_Q4_0)
REF_MATVEC(q4_K, TB_TYPE_Q4_K)
REF_MATVEC(q6_K, TB_TYPE_Q6_K)
REF_MATVEC(tq1_0, TB_TYPE_TQ1_0)
REF_MATVEC(tq2_0, TB_TYPE_TQ2_0)

#define SET(fmt, wt)                                                              \
    do {                                                                         \
        const tb_type_traits_t *tr = tb_type_traits(wt);                          \
        k->t[wt].quantize_act = tb_type_traits(tr->vec_dot_type)->from_float_ref; \
        k->t[wt].vec_dot = tr->vec_dot_ref;                                       \
        k->t[wt].matvec = matvec_##fmt;                                           \
        k->t[wt].gemm = gemm_##fmt;                                               \
    } while (0)

void tb_kernels_fill_ref(tb_kernels_t *k) {
    k->isa = TB_ISA_REF;
    k->features = "";
    SET(f32, TB_TYPE_F32);
    SET(f16, TB_TYPE_F16);
    SET(bf16, TB_TYPE_BF16);
    SET(q8_0, TB_TYPE_Q8_0);
    SET(q4_0, TB_TYPE_Q4_0);
    SET(q4_K, TB_TYPE_Q4_K);
    SET(q6_K, TB_TYPE_Q6_K);
    SET(tq1_0, TB_TYPE_TQ1_0);
    SET(tq2_0, TB_TYPE_TQ2_0);
}
