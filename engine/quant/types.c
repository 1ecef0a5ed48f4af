/*
 * types.c — the type table: names, block geometry, activation pairing and
 * the reference functions of every supported format.
 */
#include "quant/quant.h"

#include <strings.h>

static const tb_type_traits_t traits[TB_TYPE_COUNT] = {
    [TB_TYPE_F32] = {"f32", 1, 4, false, TB_TYPE_F32,
                     tb_quantize_row_f32_ref, tb_dequantize_row_f32_ref, tb_vec_dot_f32_ref},
    [TB_TYPE_F16] = {"f16", 1, 2, false, TB_TYPE_F32,
                     tb_quantize_row_f16_ref, tb_dequantize_row_f16_ref, tb_vec_dot_f16_ref},
    [TB_TYPE_BF16] = {"bf16", 1, 2, false, TB_TYPE_F32,
                      tb_quantize_row_bf16_ref, tb_dequantize_row_bf16_ref, tb_vec_dot_bf16_ref},
    [TB_TYPE_Q8_0] = {"q8_0", QK8_0, sizeof(block_q8_0), true, TB_TYPE_Q8_0,
                      tb_quantize_row_q8_0_ref, tb_dequantize_row_q8_0_ref, tb_vec_dot_q8_0_q8_0_ref},
    [TB_TYPE_Q4_0] = {"q4_0", QK4_0, sizeof(block_q4_0), true, TB_TYPE_Q8_0,
                      tb_quantize_row_q4_0_ref, tb_dequantize_row_q4_0_ref, tb_vec_dot_q4_0_q8_0_ref},
    [TB_TYPE_Q4_K] = {"q4_k", QK_K, sizeof(block_q4_K), true, TB_TYPE_Q8_K,
                      tb_quantize_row_q4_K_ref, tb_dequantize_row_q4_K_ref, tb_vec_dot_q4_K_q8_K_ref},
    [TB_TYPE_Q6_K] = {"q6_k", QK_K, sizeof(block_q6_K), true, TB_TYPE_Q8_K,
                      tb_quantize_row_q6_K_ref, tb_dequantize_row_q6_K_ref, tb_vec_dot_q6_K_q8_K_ref},
    [TB_TYPE_Q8_K] = {"q8_k", QK_K, sizeof(block_q8_K), true, TB_TYPE_Q8_K,
                      tb_quantize_row_q8_K_ref, tb_dequantize_row_q8_K_ref, NULL},
    [TB_TYPE_TQ1_0] = {"tq1_0", QK_K, sizeof(block_tq1_0), true, TB_TYPE_Q8_K,
                       tb_quantize_row_tq1_0_ref, tb_dequantize_row_tq1_0_ref, tb_vec_dot_tq1_0_q8_K_ref},
    [TB_TYPE_TQ2_0] = {"tq2_0", QK_K, sizeof(block_tq2_0), true, TB_TYPE_Q8_K,
                       tb_quantize_row_tq2_0_ref, tb_dequantize_row_tq2_0_ref, tb_vec_dot_tq2_0_q8_K_ref},
};

const tb_type_traits_t *tb_type_traits(tb_type_t t) {
    if ((unsigned)t >= TB_TYPE_COUNT || !traits[t].name) return NULL;
    return &traits[t];
}

bool tb_type_supported(uint32_t t) { return t < TB_TYPE_COUNT && traits[t].name; }

const char *tb_type_name(tb_type_t t) {
    const tb_type_traits_t *tr = tb_type_traits(t);
    return tr ? tr->name : "?";
}

int tb_type_from_name(const char *name, tb_type_t *out) {
    for (int t = 0; t < TB_TYPE_COUNT; t++)
        if (traits[t].name && strcasecmp(name, traits[t].name) == 0) { *out = (tb_type_t)t; return TB_OK; }
    return tb_err(TB_ERR_ARG, "unknown tensor type '%s' (expected f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, tq1_0 or tq2_0)", name);
}

int64_t tb_type_block_elems(tb_type_t t) {
    const tb_type_traits_t *tr = tb_type_traits(t);
    return tr ? tr->blck : 0;
}

size_t tb_type_block_bytes(tb_type_t t) {
    const tb_type_traits_t *tr = tb_type_traits(t);
    return tr ? tr->bytes : 0;
}

size_t tb_type_row_bytes(tb_type_t t, int64_t n) {
    const tb_type_traits_t *tr = tb_type_traits(t);
    if (!tr || n < 0 || n % tr->blck) return 0;
    return (size_t)(n / tr->blck) * tr->bytes;
}

int tb_quantize_row(tb_type_t t, const float *src, void *dst, int64_t n) {
    const tb_type_traits_t *tr = tb_type_traits(t);
    if (!tr) return tb_err(TB_ERR_UNSUPPORTED, "unsupported type %d", (int)t);
    if (n < 0 || n % tr->blck)
        return tb_err(TB_ERR_ARG, "row of %lld elements is not a multiple of %s's block of %lld",
                      (long long)n, tr->name, (long long)tr->blck);
    tr->from_float_ref(src, dst, n);
    return TB_OK;
}

int tb_dequantize_row(tb_type_t t, const void *src, float *dst, int64_t n) {
    const tb_type_traits_t *tr = tb_type_traits(t);
    if (!tr) return tb_err(TB_ERR_UNSUPPORTED, "unsupported type %d", (int)t);
    if (n < 0 || n % tr->blck)
        return tb_err(TB_ERR_ARG, "row of %lld elements is not a multiple of %s's block of %lld",
                      (long long)n, tr->name, (long long)tr->blck);
    tr->to_float_ref(src, dst, n);
    return TB_OK;
}
