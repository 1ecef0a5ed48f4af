/*
 * metrics.c — the per-token quality metrics and their summary, with
 * llama-perplexity's definitions (docs/quality.md):
 *
 *   nll       = -ln q(next)                the test's negative log-likelihood
 *   nllb      = -ln p(next)                the reference's
 *   PPL       = e^mean(nll)
 *   KLD       = Σ_i p_i ln(p_i / q_i)      reference p, test q; here in its
 *               top-K form (tb_quality_acc_add): exact on the top K, the
 *               rest lumped into one outcome
 *   same top  = argmax q == argmax p
 *   Δp        = q(next) - p(next)
 * and the summary's standard errors, covariance and percentiles as
 * llama-perplexity computes them.
 */
#include "quality.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char q_err[1024];

const char *tb_quality_last_error(void) { return q_err; }

int tb_quality_fail(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(q_err, sizeof q_err, fmt, ap);
    va_end(ap);
    return status;
}

void tb_quality_log_softmax(const float *logits, int32_t n, float *lp) {
    float mx = logits[0];
    for (int32_t i = 1; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    double s = 0;
    for (int32_t i = 0; i < n; i++) s += exp((double)logits[i] - (double)mx);
    const double lse = (double)mx + log(s);
    for (int32_t i = 0; i < n; i++) lp[i] = (float)((double)logits[i] - lse);
}

/* True when (a, ia) ranks above (b, ib): larger, ties the lower id. */
static inline bool above(float a, int32_t ia, float b, int32_t ib) { return a > b || (a == b && ia < ib); }

void tb_quality_rec_make(const float *lp, int32_t n, int32_t k, int32_t next, uint8_t *mark,
                         tb_quality_rec_t *rec) {
    memset(rec, 0, sizeof *rec);
    int32_t m = 0;                       /* insertion into the sorted top k */
    for (int32_t i = 0; i < n; i++) {
        if (m == k && !above(lp[i], i, rec->lp[k - 1], rec->id[k - 1])) continue;
        int32_t j = m < k ? m++ : k - 1;
        while (j > 0 && above(lp[i], i, rec->lp[j - 1], rec->id[j - 1])) {
            rec->lp[j] = rec->lp[j - 1];
            rec->id[j] = rec->id[j - 1];
            j--;
        }
        rec->lp[j] = lp[i];
        rec->id[j] = i;
    }
    for (int32_t j = 0; j < k; j++) mark[rec->id[j]] = 1;
    double tail = 0;
    for (int32_t i = 0; i < n; i++)
        if (!mark[i]) tail += exp((double)lp[i]);
    for (int32_t j = 0; j < k; j++) mark[rec->id[j]] = 0;
    rec->tail = (float)tail;
    rec->lp_next = lp[next];
}

static int grow(tb_quality_acc_t *a) {
    if (a->n < a->cap) return TB_OK;
    const int64_t cap = a->cap ? 2 * a->cap : 1024;
    float *kv = realloc(a->kld_v, (size_t)cap * sizeof *kv);
    if (kv) a->kld_v = kv;
    float *dv = kv ? realloc(a->dp_v, (size_t)cap * sizeof *dv) : NULL;
    if (dv) a->dp_v = dv;
    if (!kv || !dv) return tb_quality_fail(TB_ERR_NOMEM, "out of memory for %lld per-token values", (long long)cap);
    a->cap = cap;
    return TB_OK;
}

int tb_quality_acc_add(tb_quality_acc_t *a, const tb_quality_rec_t *rec, int32_t k, const float *lq,
                       const float *lp, int32_t n, int32_t next, uint8_t *mark) {
    int rc = grow(a);
    if (rc) return rc;
    /* the top-k part: Σ p_j (ln p_j - ln q_j), exact */
    double head = 0;
    for (int32_t j = 0; j < k; j++) {
        const double p = exp((double)rec->lp[j]);
        head += p * ((double)rec->lp[j] - (double)lq[rec->id[j]]);
        mark[rec->id[j]] = 1;
    }
    /* the rest as one outcome: R ln(R / Q); Q summed as the reference's R */
    double qs = 0;
    float lq_min = 0;
    int32_t imax = 0;
    for (int32_t i = 0; i < n; i++) {
        if (lq[i] > lq[imax]) imax = i;
        if (mark[i]) continue;
        qs += exp((double)lq[i]);
        lq_min = lq[i] < lq_min ? lq[i] : lq_min;
    }
    for (int32_t j = 0; j < k; j++) mark[rec->id[j]] = 0;
    const double R = rec->tail, Q = (double)(float)qs;
    double lump = 0, ub_tail = 0;
    if (R > 0) {
        lump = R * (log(R) - log(Q > 0 ? Q : 1e-300));
        /* true tail term Σ_tail p ln(p/q) <= R (ln p_k - ln min q): every tail
         * p_i <= p_k (the k-th largest) and every -ln q_i <= -ln min q */
        ub_tail = R * ((double)rec->lp[k - 1] - (double)lq_min);
    }
    const double kld = head + lump;
    a->kld += kld;
    a->kld2 += kld * kld;
    a->kld_ub += head + (ub_tail > lump ? ub_tail : lump);
    if (lp) {
        double full = 0;
        for (int32_t i = 0; i < n; i++) full += exp((double)lp[i]) * ((double)lp[i] - (double)lq[i]);
        a->kld_full += full;
        a->n_full++;
    }
    const double nll = -(double)lq[next], nllb = -(double)rec->lp_next;
    a->nll += nll;
    a->nll2 += nll * nll;
    a->nllb += nllb;
    a->nllb2 += nllb * nllb;
    a->nll_nllb += nll * nllb;
    const double dp = exp(-nll) - exp(-nllb);
    a->dp += dp;
    a->dp2 += dp * dp;
    a->dp4 += dp * dp * dp * dp;
    a->n_same += imax == rec->id[0];
    a->kld_v[a->n] = (float)kld;
    a->dp_v[a->n] = (float)dp;
    a->n++;
    return TB_OK;
}

void tb_quality_acc_free(tb_quality_acc_t *a) {
    free(a->kld_v);
    free(a->dp_v);
    memset(a, 0, sizeof *a);
}

/* Mean of x from its sum and sum of squares, and its standard error
 * sqrt((E[x²] - E[x]²) / (n - 1)) (0 for n <= 10, as llama-perplexity). */
static void mean_se(double s, double s2, int64_t n, double *mean, double *se) {
    *mean = s / (double)n;
    const double var = s2 / (double)n - *mean * *mean;
    *se = var > 0 && n > 10 ? sqrt(var / (double)(n - 1)) : 0;
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double tb_quality_percentile(const float *v, int64_t n, double f) {
    if (f <= 0) return v[0];
    if (f >= 1) return v[n - 1];
    const double p = f * (double)(n - 1);
    const int64_t i = (int64_t)p;
    const double w = p - (double)i;
    return (1 - w) * v[i] + w * v[i + 1 < n ? i + 1 : n - 1];
}

static double median(const float *v, int64_t n) {
    return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2] + (double)v[n / 2 - 1]);
}

int tb_quality_summarize(tb_quality_acc_t *a, tb_quality_stats_t *st) {
    memset(st, 0, sizeof *st);
    const int64_t n = a->n;
    if (n < 2) return tb_quality_fail(TB_ERR_ARG, "quality: %lld scored tokens, need at least 2", (long long)n);
    st->n = n;
    double m, se, mb, seb;
    mean_se(a->nll, a->nll2, n, &m, &se);
    mean_se(a->nllb, a->nllb2, n, &mb, &seb);
    st->ppl = exp(m);
    st->ppl_unc = st->ppl * se;                  /* d e^x = e^x dx */
    st->ppl_base = exp(mb);
    st->ppl_base_unc = st->ppl_base * seb;
    /* covariance of the two means: (E[xy] - E[x]E[y]) / (n - 1) */
    const double cov = n >= 10 ? (a->nll_nllb / (double)n - m * mb) / (double)(n - 1) : 0;
    st->ppl_cor = se > 0 && seb > 0 ? cov / (se * seb) : NAN;
    st->ln_ratio = m - mb;
    const double v = se * se + seb * seb - 2 * cov;
    st->ln_ratio_unc = v > 0 ? sqrt(v) : 0;
    st->ppl_ratio = exp(st->ln_ratio);
    st->ppl_ratio_unc = st->ppl_ratio * st->ln_ratio_unc;
    mean_se(a->kld, a->kld2, n, &st->kld_mean, &st->kld_unc);
    st->kld_ub_mean = a->kld_ub / (double)n;
    st->kld_full_mean = a->n_full == n ? a->kld_full / (double)n : NAN;
    st->same_top = (double)a->n_same / (double)n;
    st->same_top_unc = sqrt(st->same_top * (1 - st->same_top) / (double)(n - 1));
    mean_se(a->dp, a->dp2, n, &st->dp_mean, &st->dp_unc);
    double mse, mse_se;
    mean_se(a->dp2, a->dp4, n, &mse, &mse_se);
    st->dp_rms = sqrt(mse);
    st->dp_rms_unc = st->dp_rms > 0 ? 0.5 / st->dp_rms * mse_se : 0;
    qsort(a->kld_v, (size_t)n, sizeof(float), cmp_float);
    qsort(a->dp_v, (size_t)n, sizeof(float), cmp_float);
    const float *kv = a->kld_v, *dv = a->dp_v;
    st->kld_median = median(kv, n);
    st->kld_p90 = tb_quality_percentile(kv, n, 0.90);
    st->kld_p95 = tb_quality_percentile(kv, n, 0.95);
    st->kld_p99 = tb_quality_percentile(kv, n, 0.99);
    st->kld_max = kv[n - 1];
    st->dp_min = dv[0];
    st->dp_p01 = tb_quality_percentile(dv, n, 0.01);
    st->dp_p05 = tb_quality_percentile(dv, n, 0.05);
    st->dp_p10 = tb_quality_percentile(dv, n, 0.10);
    st->dp_p25 = tb_quality_percentile(dv, n, 0.25);
    st->dp_median = median(dv, n);
    st->dp_p75 = tb_quality_percentile(dv, n, 0.75);
    st->dp_p90 = tb_quality_percentile(dv, n, 0.90);
    st->dp_p95 = tb_quality_percentile(dv, n, 0.95);
    st->dp_p99 = tb_quality_percentile(dv, n, 0.99);
    st->dp_max = dv[n - 1];
    return TB_OK;
}
