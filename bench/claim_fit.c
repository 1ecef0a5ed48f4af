/*
 * claim_fit.c — the efficiency fit: from the calibration rows comparable to
 * a query (same runtime and backend when enough exist, else the same
 * backend, else all), a similarity weight for each (device class, peak
 * bandwidth and bits per weight, the three things the published
 * efficiencies move with beyond runtime and backend) and the weighted
 * quantiles of their log-efficiency: the interval [lo, hi] a speed on the
 * query's roofline is expected to fall in. Leave-one-out over the table
 * measures how often that interval holds a published figure it did not see.
 */
#include "claim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Widths of the similarity kernel, in natural-log units, and the interval.
 * Chosen by leave-one-out over the shipped table (docs/claims.md). */
static double SIG_BW = 0.45;    /* peak bandwidth                              */
static double SIG_BPW = 0.35;   /* bits per weight                             */
static double SIG_CTX = 0.7;    /* log(1 + ctx / 512)                          */
static double W_CLASS = 0.35;   /* weight factor for another device class      */
static double W_DEVICE = 10.0;  /* weight factor for the same device           */
static double W_MODEL = 1.0;    /* weight factor for the same model and layout */
static double Q_LO = 0.25, Q_HI = 0.75;
static double PAD0 = 0.12;      /* log-units added each side ...               */
static double PAD1 = 0.10;      /* ... plus this over sqrt(effective rows)     */
#define MIN_ROWS 4              /* fewest rows a runtime+backend basis needs   */

static void tune_from_env(void) {
    static int done;
    if (done) return;
    done = 1;
    const char *e = getenv("TB_CLAIM_TUNE");   /* the method's constants, to study it: 10 numbers */
    if (e) sscanf(e, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &SIG_BW, &SIG_BPW, &SIG_CTX, &W_CLASS, &W_DEVICE,
                  &Q_LO, &Q_HI, &PAD0, &PAD1, &W_MODEL);
}

typedef struct wv { double v, w; int i; } wv_t;

static int by_v(const void *a, const void *b) {
    double x = ((const wv_t *)a)->v, y = ((const wv_t *)b)->v;
    return (x > y) - (x < y);
}

/* Weighted quantile q of sorted values (the value where the cumulative
 * weight, centred on each point, crosses q; linear between points). */
static double wquant(const wv_t *s, int n, double q) {
    double tot = 0;
    for (int i = 0; i < n; i++) tot += s[i].w;
    double acc = 0, prev_c = 0, prev_v = s[0].v;
    for (int i = 0; i < n; i++) {
        double c = (acc + s[i].w / 2) / tot;
        acc += s[i].w;
        if (c >= q) {
            if (i == 0) return s[0].v;
            double t = (q - prev_c) / (c - prev_c);
            return prev_v + t * (s[i].v - prev_v);
        }
        prev_c = c;
        prev_v = s[i].v;
    }
    return s[n - 1].v;
}

static bool same(const char *a, const char *b) { return !a || !b || !strcmp(a, b); }

int cl_fit(const cl_calib_t *c, const cl_query_t *q, int skip, cl_fit_t *out) {
    memset(out, 0, sizeof *out);
    tune_from_env();
    wv_t *s = malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof *s);
    if (!s) return -1;
    int n = 0;
    const char *how = "";
    /* runtime and backend when MIN_ROWS share them; else any row of the
     * backend; only when the backend has no row at all, every row */
    for (int level = 0; level < 3 && (level == 0 || (level == 1 ? n < MIN_ROWS : n == 0)); level++) {
        n = 0;
        for (int i = 0; i < c->n; i++) {
            const cl_row_t *r = &c->rows[i];
            if (i == skip || !(r->eff > 0)) continue;
            if (level == 0 && !(same(q->runtime, r->runtime) && same(q->backend, r->backend))) continue;
            if (level == 1 && !same(q->backend, r->backend)) continue;
            double d1 = q->bw_gbps > 0 ? log(r->bw_gbps / q->bw_gbps) / SIG_BW : 0;
            double d2 = q->bpw > 0 && r->bpw > 0 ? log(r->bpw / q->bpw) / SIG_BPW : 0;
            double d3 = q->ctx >= 0 ? (log1p(r->ctx / 512.0) - log1p(q->ctx / 512.0)) / SIG_CTX : 0;
            double w = exp(-0.5 * (d1 * d1 + d2 * d2 + d3 * d3));
            if (q->cls && strcmp(q->cls, r->cls)) w *= W_CLASS;
            if (q->device && !strcmp(q->device, r->device)) w *= W_DEVICE;
            if (q->model && q->type && !strcmp(q->model, r->model) && !strcmp(q->type, r->type)) w *= W_MODEL;
            s[n++] = (wv_t){log(r->eff), w + 1e-6, i};
        }
        how = level == 0 ? (q->runtime || q->backend ? "same runtime and backend" : "any runtime and backend")
            : level == 1 ? "same backend, any runtime" : "every row";
    }
    if (n == 0) {
        free(s);
        return -1;
    }
    qsort(s, (size_t)n, sizeof *s, by_v);
    double lo = wquant(s, n, Q_LO), mid = wquant(s, n, 0.5), hi = wquant(s, n, Q_HI);
    double sw = 0, sw2 = 0;
    for (int i = 0; i < n; i++) { sw += s[i].w; sw2 += s[i].w * s[i].w; }
    double n_eff = sw * sw / sw2, pad = PAD0 + PAD1 / sqrt(n_eff);
    out->lo = exp(lo - pad);
    out->mid = exp(mid);
    out->hi = exp(hi + pad);
    out->best = exp(s[n - 1].v);
    out->n_basis = n;
    /* the most similar rows, for the printed basis */
    double wsum = 0;
    for (int i = 0; i < n; i++) wsum += s[i].w;
    int used = 0;
    for (int i = 0; i < n; i++)
        if (s[i].w / wsum > 0.02) used++;
    snprintf(out->basis, sizeof out->basis, "%d rows (%s), %d carrying >2%% of the weight", n, how, used);
    for (int i = 0; i < n && out->n_idx < 64; i++)
        if (s[i].w / wsum > 0.02) out->idx[out->n_idx++] = s[i].i;
    free(s);
    return 0;
}

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cl_loo(const cl_calib_t *c, cl_loo_t *out, bool verbose) {
    memset(out, 0, sizeof *out);
    double *hw = malloc((size_t)(c->n > 0 ? c->n : 1) * sizeof *hw);
    if (!hw) return 1;
    for (int i = 0; i < c->n; i++) {
        const cl_row_t *r = &c->rows[i];
        cl_query_t q = {r->runtime, r->backend, r->cls, r->device, r->model, r->type, r->bw_gbps, r->bpw, r->ctx};
        cl_fit_t f;
        if (cl_fit(c, &q, i, &f) != 0) {
            if (verbose)
                printf("%s:%d  %-18s %-10s %-20s %8.2f  no comparable row\n", r->file, r->line, r->device,
                       r->runtime, r->model, r->tok_s);
            out->n++;
            hw[out->n - 1] = 1.0;
            continue;
        }
        double roof = r->bw_gbps * 1e9 / r->bytes_per_token;
        double lo = roof * f.lo, hi = roof * f.hi;
        bool in = r->tok_s >= lo && r->tok_s <= hi;
        hw[out->n++] = (hi - lo) / (hi + lo);
        out->covered += in;
        if (verbose)
            printf("%-34s %-18s %-9s %-4s %-18s %-9s %8.2f  [%8.2f, %8.2f]  eff %.3f  %s\n",
                   strrchr(r->file, '/') ? strrchr(r->file, '/') + 1 : r->file, r->device, r->runtime, r->backend,
                   r->model, r->type, r->tok_s, lo, hi, r->eff, in ? "in" : "OUT");
    }
    qsort(hw, (size_t)out->n, sizeof *hw, by_double);
    out->coverage = out->n ? (double)out->covered / out->n : 0;
    out->median_halfwidth = out->n == 0 ? 0 : out->n % 2 ? hw[out->n / 2] : (hw[out->n / 2 - 1] + hw[out->n / 2]) / 2;
    free(hw);
    return 0;
}
