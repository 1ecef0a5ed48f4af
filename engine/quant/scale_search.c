/*
 * scale_search.c — per-sub-block scale (and min) searches for K-quants.
 * See scale_search.h for the contracts.
 */
#include "quant/scale_search.h"
#include "quant/rounding.h"

#include <math.h>
#include <string.h>

#define TB_GROUP_EPS 1e-15f

/* ===================================================================== */
/* Asymmetric: scale and min                                              */
/* ===================================================================== */

/* Codes of x on the grid (x - lo) * iscale, clamped to 0..nmax. */
static void codes_asym(int n, int nmax, const float *x, float lo, float iscale, uint8_t *L) {
    for (int i = 0; i < n; i++) {
        int l = tb_nearest_int(iscale * (x[i] - lo));
        L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
    }
}

/* Weighted squared error of scale * L + lo against x. */
static float err_asym(int n, const float *x, const float *w, const uint8_t *L,
                      float scale, float lo) {
    float e = 0.0f;
    for (int i = 0; i < n; i++) {
        float diff = scale * L[i] + lo - x[i];
        e += w[i] * diff * diff;
    }
    return e;
}

float tb_search_scale_min(int n, int nmax, const float *x, const float *w,
                          uint8_t *L, float *min_out, uint8_t *aux,
                          float rmin, float rdelta, int nstep) {
    float lo = x[0], hi = x[0], sum_w = 0.0f, sum_x = 0.0f;
    for (int i = 0; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (lo > 0.0f) lo = 0.0f;   /* the offset only ever subtracts */
    if (hi == lo) {
        memset(L, 0, (size_t)n);
        *min_out = -lo;
        return 0.0f;
    }
    /* plain mapping of [lo, hi] onto 0..nmax */
    float iscale = nmax / (hi - lo);
    float scale = 1.0f / iscale;
    codes_asym(n, nmax, x, lo, iscale, L);
    float best = err_asym(n, x, w, L, scale, lo);

    for (int k = 0; k <= nstep; k++) {
        iscale = (rmin + rdelta * k + nmax) / (hi - lo);
        codes_asym(n, nmax, x, lo, iscale, aux);
        /* least squares for (scale, off) in x ≈ scale * l + off */
        float sl = 0.0f, sl2 = 0.0f, sxl = 0.0f;
        for (int i = 0; i < n; i++) {
            float l = aux[i];
            sl += w[i] * l;
            sl2 += w[i] * l * l;
            sxl += w[i] * l * x[i];
        }
        float det = sum_w * sl2 - sl * sl;
        if (det <= 0.0f) continue;
        float s = (sum_w * sxl - sum_x * sl) / det;
        float off = (sl2 * sum_x - sl * sxl) / det;
        if (off > 0.0f) {   /* offset must be <= 0: refit the scale alone */
            off = 0.0f;
            s = sxl / sl2;
        }
        float e = err_asym(n, x, w, aux, s, off);
        if (e < best) {
            memcpy(L, aux, (size_t)n);
            best = e;
            scale = s;
            lo = off;
        }
    }
    *min_out = -lo;
    return scale;
}

/* ===================================================================== */
/* Symmetric: one signed scale                                            */
/* ===================================================================== */

/* Codes of x on grid iscale clamped to -nmax..nmax-1 (biased by nmax into L
 * when L is not NULL), with the sums of the least-squares fit (weights x^2).
 * The sums are in double: candidates are ranked by sumlx^2 / suml2, whose
 * difference from sum w x^2 (the residual) is a small fraction of it. */
static void codes_sym(int n, int nmax, const float *x, float iscale, uint8_t *L,
                      double *sumlx, double *suml2) {
    double slx = 0, sl2 = 0;
    for (int i = 0; i < n; i++) {
        int l = tb_nearest_int(iscale * x[i]);
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        if (L) L[i] = (uint8_t)(l + nmax);
        const double w = (double)x[i] * x[i];
        slx += w * x[i] * l;
        sl2 += w * l * l;
    }
    *sumlx = slx;
    *suml2 = sl2;
}

float tb_search_scale_sym(int n, int nmax, const float *x, uint8_t *L) {
    const float max = tb_absmax_signed(x, n);
    if (fabsf(max) < TB_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    double sumlx, suml2;
    codes_sym(n, nmax, x, -nmax / max, L, &sumlx, &suml2);
    double scale = suml2 > 0 ? sumlx / suml2 : 0;
    double best = scale * sumlx;   /* = sumlx^2 / suml2: the error reduction */
    for (int k = -9; k <= 9; k++) {
        if (k == 0) continue;
        const float iscale = -(nmax + 0.1f * k) / max;
        codes_sym(n, nmax, x, iscale, NULL, &sumlx, &suml2);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            codes_sym(n, nmax, x, iscale, L, &sumlx, &suml2);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return (float)scale;
}
