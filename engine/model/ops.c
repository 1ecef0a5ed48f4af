/*
 * ops.c — the small per-row operations of the forward pass: RMSNorm, RoPE,
 * softmax. Scalar, deterministic, one row at a time (the cost of a decode
 * step is in the matmuls, not here).
 */
#include "model/model.h"

#include <math.h>

/* y = x * w / sqrt(mean(x^2) + eps); the sum of squares is accumulated in
 * double so the result does not depend on n's magnitude. */
void tb_op_rmsnorm(float *y, const float *x, const float *w, int n, float eps) {
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float r = (float)(1.0 / sqrt(ss / n + (double)eps));
    for (int i = 0; i < n; i++) y[i] = x[i] * r * w[i];
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

void tb_op_softmax(float *x, int n) {
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    const float inv = 1.0f / sum;
    for (int i = 0; i < n; i++) x[i] *= inv;
}
