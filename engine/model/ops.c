/*
 * ops.c — the small per-row operations of the forward pass: RMSNorm, RoPE,
 * softmax. Plain C written so compilers vectorise it (fixed partial sums,
 * tb_op_exp instead of libm), deterministic: one row's result never
 * depends on threads or chunking.
 */
#include "model/model.h"

#include <math.h>

float tb_op_rms_inv(const float *x, int64_t n, float eps) {
    double ss[TB_RMS_SUMS] = {0};
    int64_t i = 0;
    for (; i + TB_RMS_SUMS <= n; i += TB_RMS_SUMS)
        for (int k = 0; k < TB_RMS_SUMS; k++) ss[k] += (double)x[i + k] * x[i + k];
    for (; i < n; i++) ss[i % TB_RMS_SUMS] += (double)x[i] * x[i];
    return tb_rms_finish(ss, n, eps);
}

void tb_op_norm_mul(float *y, const float *x, float r, const float *w, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * r * w[i];
}

tb_rms_inv_fn tb_op_rms_inv_for(tb_isa_t isa) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa == TB_ISA_AVX512) return tb_op_rms_inv_avx512;
#endif
    (void)isa;
    return tb_op_rms_inv;
}

tb_norm_mul_fn tb_op_norm_mul_for(tb_isa_t isa) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa == TB_ISA_AVX512) return tb_op_norm_mul_avx512;
#endif
    (void)isa;
    return tb_op_norm_mul;
}

/* y = x * w / sqrt(mean(x^2) + eps), the row's sum of squares as in
 * tb_op_rms_inv. */
void tb_op_rmsnorm(float *y, const float *x, const float *w, int n, float eps) {
    tb_op_norm_mul(y, x, tb_op_rms_inv(x, n, eps), w, n);
}

/* cs[i], sn[i] = cos/sin(pos * base^(-2i/n_rot)), angles in double so long
 * contexts keep full f32 precision. */
void tb_op_rope_table(float *cs, float *sn, int32_t pos, int n_rot, float base) {
    for (int i = 0; i < n_rot / 2; i++) {
        double theta = (double)pos * pow((double)base, -2.0 * i / n_rot);
        cs[i] = (float)cos(theta);
        sn[i] = (float)sin(theta);
    }
}

void tb_op_rope(float *x, const float *cs, const float *sn, int n_rot, bool neox) {
    const int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        const int i0 = neox ? i : 2 * i;
        const int i1 = neox ? i + half : 2 * i + 1;
        const float a = x[i0], b = x[i1];
        x[i0] = a * cs[i] - b * sn[i];
        x[i1] = a * sn[i] + b * cs[i];
    }
}

void tb_op_softmax(float *x, int n, float scale) {
    float m8[8];
    for (int k = 0; k < 8; k++) m8[k] = -INFINITY;
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) m8[k] = tb_op_sel(x[i + k] > m8[k], x[i + k], m8[k]);
    for (; i < n; i++) m8[i % 8] = tb_op_sel(x[i] > m8[i % 8], x[i], m8[i % 8]);
    float mx = m8[0];
    for (int k = 1; k < 8; k++) mx = m8[k] > mx ? m8[k] : mx;
    const float ms = mx * scale;
    for (int i = 0; i < n; i++) x[i] = tb_op_exp(x[i] * scale - ms);
    float sum[8] = {0};
    for (i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) sum[k] += x[i + k];
    for (; i < n; i++) sum[i % 8] += x[i];
    const float inv = 1.0f / (((sum[0] + sum[1]) + (sum[2] + sum[3])) + ((sum[4] + sum[5]) + (sum[6] + sum[7])));
    for (i = 0; i < n; i++) x[i] *= inv;
}

/* x[i] = silu(min(x[i], c)) * clamp(u[i], -c, c), or silu(x[i]) * u[i]
 * when c is +inf: the specification of the SwiGLU prologue. */
void tb_op_swiglu(float *x, const float *u, int64_t n, float c) {
    if (isinf(c)) {
        for (int64_t i = 0; i < n; i++) x[i] = tb_op_silu(x[i]) * u[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        const float g = x[i] < c ? x[i] : c;
        const float v = u[i] < -c ? -c : (u[i] > c ? c : u[i]);
        x[i] = tb_op_silu(g) * v;
    }
}

tb_swiglu_fn tb_op_swiglu_for(tb_isa_t isa) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa == TB_ISA_AVX512) return tb_op_swiglu_avx512;
    if (isa == TB_ISA_AVX2) return tb_op_swiglu_avx2;
#endif
    (void)isa;
    return tb_op_swiglu;
}
