/*
 * calib.c — the i8mm tier's choice, per format, between its SMMLA gemm
 * and dotprod's SDOT one (dispatch.c times both at start-up and calls
 * tb_i8mm_choose; compiled on every host so the choice is tested
 * anywhere with injected timings, tests/kernels/test_isa.c).
 *
 * SMMLA does twice SDOT's multiply-adds per instruction, but not every
 * core runs it at SDOT's rate, and the regrouping its operands need
 * (tier_i8mm.c) costs shuffles: so neither path is assumed. Both give
 * the same bits.
 */
#include "kernels/kernels.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

const tb_type_t tb_i8mm_types[TB_I8MM_N] = {TB_TYPE_Q8_0, TB_TYPE_Q4_0, TB_TYPE_TQ2_0};

int tb_i8mm_choose(const char *mode, const double sdot_ns[TB_I8MM_N], const double mm_ns[TB_I8MM_N],
                   bool use_mm[TB_I8MM_N]) {
    const bool all = mode && strcasecmp(mode, "smmla") == 0, none = mode && strcasecmp(mode, "sdot") == 0;
    for (int i = 0; i < TB_I8MM_N; i++)
        use_mm[i] = all || (!none && sdot_ns[i] > 0 && mm_ns[i] > 0 && mm_ns[i] < sdot_ns[i]);
    if (mode && *mode && !all && !none && strcasecmp(mode, "auto") != 0)
        return tb_err(TB_ERR_ARG, "i8mm gemm choice '%s': expected auto, smmla or sdot", mode);
    return TB_OK;
}

void tb_i8mm_describe(const bool use_mm[TB_I8MM_N], char *buf, size_t size) {
    int o = snprintf(buf, size, "neon,dotprod,i8mm(gemm");
    for (int i = 0; i < TB_I8MM_N && o > 0 && (size_t)o < size; i++)
        o += snprintf(buf + o, size - (size_t)o, " %s:%s", tb_type_name(tb_i8mm_types[i]), use_mm[i] ? "smmla" : "sdot");
    if (o > 0 && (size_t)o < size) snprintf(buf + o, size - (size_t)o, ")");
}
