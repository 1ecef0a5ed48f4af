/*
 * head.c — the approximate output head (tb_head_*): the FlashHead method
 * (arXiv 2603.14591) of clustering the output matrix's rows and, per
 * token, scoring the cluster centroids first and only the rows of the
 * best clusters exactly.
 *
 * Build (tb_head_new, once per model):
 *   rows     = the output head's V rows, dequantized to f32 (E each)
 *   k-means  = Lloyd's algorithm on a strided sample of max(16,384,
 *              4 C) rows (all when V is smaller), squared Euclidean
 *              distance, `iters` rounds, seeded:
 *              the initial centroids are distinct sample rows drawn by a
 *              splitmix64 stream from `seed`; an empty cluster is
 *              re-seeded with a drawn sample row
 *   assign   = every row to its nearest centroid (argmax c·w - |c|²/2),
 *              the centroids then the means of their rows
 *   layout   = the rows copied in cluster order (file layout, the
 *              model's type), so a cluster is one contiguous stream
 * Per token (tb_head_logits): cs = C · xn (f32 centroids, C rows), the
 * top_c clusters by cs (ties: lower cluster), their rows' exact logits
 * W[i] · xn; every other row's logit is its cluster's centroid score
 * cs[k(i)] (a finite estimate, so that probabilities and KL stay defined).
 * Rows read per token: C centroid rows (f32) + the selected clusters' rows.
 */
#include "model/head.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_MIN 16384     /* sample rows, at least (4 per centroid above 4,096) */
#define BATCH 2048

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int tb_head_parse(const char *spec, bool *approx, tb_head_params_t *out) {
    if (!spec || !approx || !out) return tb_err(TB_ERR_ARG, "tb_head_parse: NULL argument");
    *out = (tb_head_params_t){0};
    *approx = false;
    if (!strcmp(spec, "exact")) return TB_OK;
    if (strncmp(spec, "approx:", 7))
        return tb_err(TB_ERR_ARG, "head '%s': expected exact or approx:CENTROIDS[:TOPC]", spec);
    char *end;
    long c = strtol(spec + 7, &end, 10), t = 0;
    if (end == spec + 7 || c < 1 || c > (1 << 24) || (*end && *end != ':'))
        return tb_err(TB_ERR_ARG, "head '%s': CENTROIDS must be a positive integer", spec);
    if (*end == ':') {
        const char *ts = end + 1;
        t = strtol(ts, &end, 10);
        if (end == ts || *end || t < 1 || t > c)
            return tb_err(TB_ERR_ARG, "head '%s': TOPC must be an integer in 1..CENTROIDS", spec);
    }
    out->n_centroids = (int32_t)c;
    out->top_c = (int32_t)t;
    *approx = true;
    return TB_OK;
}

/* ===================================================================== */
/* k-means                                                                */
/* ===================================================================== */

typedef struct km {
    tb_pool_t *pool;
    int32_t C, E;
    float *cent;        /* (C, E) */
    float *half_n2;     /* (C) |c|² / 2 */
    float *Y;           /* (BATCH, C) scores of a batch */
} km_t;

/* Nearest centroid of each of the n rows X (n, E) into lab. */
static int km_assign(km_t *k, const float *X, int64_t n, int32_t *lab) {
    for (int32_t c = 0; c < k->C; c++) {
        double s = 0;
        for (int32_t e = 0; e < k->E; e++) s += (double)k->cent[(size_t)c * k->E + e] * k->cent[(size_t)c * k->E + e];
        k->half_n2[c] = (float)(0.5 * s);
    }
    for (int64_t b = 0; b < n; b += BATCH) {
        const int64_t nb = TB_MIN((int64_t)BATCH, n - b);
        int rc = tb_matmul(k->pool, TB_TYPE_F32, k->cent, k->C, k->E, X + b * k->E, nb, k->Y);
        if (rc) return rc;
        for (int64_t i = 0; i < nb; i++) {
            const float *y = k->Y + i * k->C;
            int32_t best = 0;
            float bv = y[0] - k->half_n2[0];
            for (int32_t c = 1; c < k->C; c++) {
                const float v = y[c] - k->half_n2[c];
                if (v > bv) { bv = v; best = c; }
            }
            lab[b + i] = best;
        }
    }
    return TB_OK;
}

/* Centroids = means of their rows; an empty one takes a drawn row. */
static int km_update(km_t *k, const float *X, int64_t n, const int32_t *lab, int64_t *cnt, uint64_t *rng) {
    double *acc = calloc((size_t)k->C * k->E, sizeof *acc);
    if (!acc) return tb_err(TB_ERR_NOMEM, "approximate head: out of memory for %d centroid sums", k->C);
    memset(cnt, 0, (size_t)k->C * sizeof *cnt);
    for (int64_t i = 0; i < n; i++) {
        cnt[lab[i]]++;
        for (int32_t e = 0; e < k->E; e++) acc[(size_t)lab[i] * k->E + e] += X[i * k->E + e];
    }
    for (int32_t c = 0; c < k->C; c++) {
        float *dst = k->cent + (size_t)c * k->E;
        if (cnt[c] == 0) {
            memcpy(dst, X + (int64_t)(splitmix(rng) % (uint64_t)n) * k->E, (size_t)k->E * sizeof(float));
            continue;
        }
        for (int32_t e = 0; e < k->E; e++) dst[e] = (float)(acc[(size_t)c * k->E + e] / (double)cnt[c]);
    }
    free(acc);
    return TB_OK;
}

/* Dequantize rows [r0, r0 + n) of the output head into X (n, E). */
static void head_rows(const tb_model_t *m, int64_t r0, int64_t n, float *X) {
    const tb_weight_t *w = &m->output;
    for (int64_t i = 0; i < n; i++)
        tb_dequantize_row(w->type, (const uint8_t *)w->data + (size_t)(r0 + i) * w->row_bytes, X + i * w->n_in,
                          w->n_in);
}

int tb_head_new(const tb_model_t *m, const tb_head_params_t *p, int n_threads, tb_head_t **out) {
    if (!m || !p || !out) return tb_err(TB_ERR_ARG, "tb_head_new: NULL argument");
    *out = NULL;
    const int32_t V = (int32_t)m->output.n_out, E = (int32_t)m->output.n_in;
    if (p->n_centroids < 1 || p->n_centroids > V)
        return tb_err(TB_ERR_ARG, "approximate head: %d centroids for %d output rows (1..%d)", p->n_centroids, V, V);
    const int32_t C = p->n_centroids;
    const int32_t T = p->top_c ? p->top_c : TB_MAX(1, C / 16);
    if (T < 1 || T > C) return tb_err(TB_ERR_ARG, "approximate head: top %d of %d clusters", T, C);
    if (!m->output.data || !tb_type_traits(m->output.type))
        return tb_err(TB_ERR_UNSUPPORTED, "approximate head: the output head's type cannot be dequantized");
    tb_head_t *h = calloc(1, sizeof *h);
    if (!h) return tb_err(TB_ERR_NOMEM, "approximate head: out of memory");
    *h = (tb_head_t){.m = m, .C = C, .T = T, .V = V, .E = E, .type = m->output.type,
                     .row_bytes = m->output.row_bytes, .seed = p->seed ? p->seed : 1,
                     .iters = p->iters > 0 ? p->iters : 8};
    const int64_t S = TB_MIN((int64_t)V, TB_MAX((int64_t)SAMPLE_MIN, 4 * (int64_t)C)), stride = (V + S - 1) / S;
    const int64_t Sn = (V + stride - 1) / stride;        /* rows 0, stride, 2 stride, ... */
    km_t k = {.C = C, .E = E};
    float *X = malloc((size_t)TB_MAX(Sn, (int64_t)BATCH) * E * sizeof *X);
    int32_t *lab = malloc((size_t)TB_MAX(Sn, (int64_t)V) * sizeof *lab);
    int64_t *cnt = calloc((size_t)C, sizeof *cnt);
    h->cent = tb_alloc_aligned((size_t)C * E * sizeof(float));
    h->perm = malloc((size_t)V * sizeof *h->perm);
    h->cluster_of = malloc((size_t)V * sizeof *h->cluster_of);
    h->off = calloc((size_t)C + 1, sizeof *h->off);
    h->W = tb_alloc_aligned((size_t)V * h->row_bytes);
    k.cent = h->cent;
    k.half_n2 = malloc((size_t)C * sizeof *k.half_n2);
    k.Y = malloc((size_t)BATCH * C * sizeof *k.Y);
    int rc = TB_OK;
    if (!X || !lab || !cnt || !h->cent || !h->perm || !h->cluster_of || !h->off || !h->W || !k.half_n2 || !k.Y) {
        rc = tb_err(TB_ERR_NOMEM, "approximate head: out of memory for %d centroids of %d", C, E);
        goto done;
    }
    if ((rc = tb_pool_new(TB_MAX(1, n_threads), &k.pool))) goto done;
    for (int64_t i = 0; i < Sn; i++) head_rows(m, i * stride, 1, X + i * E);
    /* initial centroids: C distinct sample rows (partial Fisher-Yates) */
    uint64_t rng = h->seed;
    int32_t *pick = lab;
    for (int64_t i = 0; i < Sn; i++) pick[i] = (int32_t)i;
    for (int32_t c = 0; c < C; c++) {
        const int64_t j = c + (int64_t)(splitmix(&rng) % (uint64_t)(Sn - c));
        const int32_t t = pick[c];
        pick[c] = pick[j];
        pick[j] = t;
        memcpy(h->cent + (size_t)c * E, X + (int64_t)pick[c] * E, (size_t)E * sizeof(float));
    }
    for (int32_t it = 0; it < h->iters && rc == TB_OK; it++) {
        if ((rc = km_assign(&k, X, Sn, lab))) break;
        rc = km_update(&k, X, Sn, lab, cnt, &rng);
    }
    /* every row to its nearest centroid, in batches */
    for (int64_t b = 0; b < V && rc == TB_OK; b += BATCH) {
        const int64_t nb = TB_MIN((int64_t)BATCH, V - b);
        head_rows(m, b, nb, X);
        rc = km_assign(&k, X, nb, lab + b);
    }
    if (rc) goto done;
    /* cluster order: counting sort by label (stable: ids ascending) */
    for (int32_t i = 0; i < V; i++) { h->cluster_of[i] = lab[i]; h->off[lab[i] + 1]++; }
    for (int32_t c = 0; c < C; c++) h->off[c + 1] += h->off[c];
    memset(cnt, 0, (size_t)C * sizeof *cnt);
    for (int32_t i = 0; i < V; i++) h->perm[h->off[lab[i]] + cnt[lab[i]]++] = i;
    /* final centroids: the means of all their rows (an empty cluster keeps its own) */
    double *acc = calloc((size_t)E, sizeof *acc);
    if (!acc) { rc = tb_err(TB_ERR_NOMEM, "approximate head: out of memory"); goto done; }
    for (int32_t c = 0; c < C; c++) {
        const int32_t n = h->off[c + 1] - h->off[c];
        if (!n) continue;
        memset(acc, 0, (size_t)E * sizeof *acc);
        for (int32_t j = h->off[c]; j < h->off[c + 1]; j++) {
            head_rows(m, h->perm[j], 1, X);
            for (int32_t e = 0; e < E; e++) acc[e] += X[e];
        }
        for (int32_t e = 0; e < E; e++) h->cent[(size_t)c * E + e] = (float)(acc[e] / n);
    }
    free(acc);
    for (int32_t j = 0; j < V; j++)
        memcpy((uint8_t *)h->W + (size_t)j * h->row_bytes,
               (const uint8_t *)m->output.data + (size_t)h->perm[j] * h->row_bytes, h->row_bytes);
done:
    if (k.pool) tb_pool_free(k.pool);
    free(k.half_n2);
    free(k.Y);
    free(X);
    free(lab);
    free(cnt);
    if (rc) { tb_head_free(h); return rc; }
    *out = h;
    return TB_OK;
}

void tb_head_free(tb_head_t *h) {
    if (!h) return;
    tb_free_aligned(h->cent);
    tb_free_aligned(h->W);
    free(h->perm);
    free(h->cluster_of);
    free(h->off);
    free(h);
}

int tb_head_get_info(const tb_head_t *h, tb_head_info_t *out) {
    if (!h || !out) return tb_err(TB_ERR_ARG, "tb_head_get_info: NULL argument");
    int32_t mx = 0, empty = 0;
    for (int32_t c = 0; c < h->C; c++) {
        const int32_t n = h->off[c + 1] - h->off[c];
        mx = TB_MAX(mx, n);
        empty += n == 0;
    }
    *out = (tb_head_info_t){.n_centroids = h->C, .top_c = h->T, .n_rows = h->V, .largest_cluster = mx,
                            .empty_clusters = empty, .seed = h->seed, .iters = h->iters,
                            .centroid_row_bytes = (uint64_t)h->E * sizeof(float), .row_bytes = h->row_bytes};
    return TB_OK;
}

/* ===================================================================== */
/* Per token                                                              */
/* ===================================================================== */

typedef struct head_job {
    const tb_head_t *h;
    const tb_type_kernels_t *kw, *kc;   /* the head type's and f32's kernels */
    const void *a, *ac;                 /* xn in the head's / f32's activation format */
    float *cs;                          /* (C) centroid scores                */
    const int32_t *sel;                 /* (T) selected clusters              */
    const int64_t *pre;                 /* (T + 1) prefix sums of their sizes */
    float *yp;                          /* (V) logits by permuted position    */
    int phase;                          /* 0: centroids, 1: selected rows     */
} head_job_t;

static void head_worker(void *arg, int ith, int nth) {
    const head_job_t *j = arg;
    const tb_head_t *h = j->h;
    if (j->phase == 0) {
        const int64_t r0 = (int64_t)h->C * ith / nth, r1 = (int64_t)h->C * (ith + 1) / nth;
        if (r1 > r0) j->kc->matvec(h->cent, (size_t)h->E * sizeof(float), j->ac, j->cs, r0, r1, h->E);
        return;
    }
    const int64_t R = j->pre[h->T], g0 = R * ith / nth, g1 = R * (ith + 1) / nth;
    for (int32_t s = 0; s < h->T && g0 < g1; s++) {      /* the parts of [g0, g1) in each cluster */
        const int64_t a = TB_MAX(g0, j->pre[s]), b = TB_MIN(g1, j->pre[s + 1]);
        if (b <= a) continue;
        const int64_t base = h->off[j->sel[s]] - j->pre[s];   /* permuted row of global index */
        j->kw->matvec(h->W, h->row_bytes, j->a, j->yp, base + a, base + b, h->E);
    }
}

int tb_head_logits(const tb_head_t *h, tb_pool_t *pool, const float *xn, tb_head_scratch_t *sc, float *logits,
                   uint64_t *rows_read) {
    const tb_kernels_t *K = tb_kernels();
    head_job_t j = {.h = h, .kw = &K->t[h->type], .kc = &K->t[TB_TYPE_F32], .a = sc->act, .ac = sc->actc,
                    .cs = sc->cs, .sel = sc->sel, .pre = sc->pre, .yp = sc->yp};
    j.kw->quantize_act(xn, sc->act, h->E);
    j.kc->quantize_act(xn, sc->actc, h->E);
    tb_pool_run(pool, head_worker, &j);
    /* the top T clusters by centroid score, ties to the lower cluster */
    int32_t n = 0;
    for (int32_t c = 0; c < h->C; c++) {
        const float v = sc->cs[c];
        if (n == h->T && !(v > sc->cs[sc->sel[n - 1]])) continue;
        int32_t i = n < h->T ? n++ : h->T - 1;
        while (i > 0 && v > sc->cs[sc->sel[i - 1]]) { sc->sel[i] = sc->sel[i - 1]; i--; }
        sc->sel[i] = c;
    }
    sc->pre[0] = 0;
    for (int32_t s = 0; s < h->T; s++) sc->pre[s + 1] = sc->pre[s] + (h->off[sc->sel[s] + 1] - h->off[sc->sel[s]]);
    j.phase = 1;
    tb_pool_run(pool, head_worker, &j);
    for (int32_t i = 0; i < h->V; i++) logits[i] = sc->cs[h->cluster_of[i]];
    for (int32_t s = 0; s < h->T; s++)
        for (int32_t p = h->off[sc->sel[s]]; p < h->off[sc->sel[s] + 1]; p++) logits[h->perm[p]] = sc->yp[p];
    if (rows_read) *rows_read = (uint64_t)sc->pre[h->T];
    return TB_OK;
}

int tb_head_scratch_init(const tb_head_t *h, tb_head_scratch_t *sc) {
    memset(sc, 0, sizeof *sc);
    sc->act = tb_alloc_aligned(tb_act_row_bytes(h->type, h->E));
    sc->actc = tb_alloc_aligned(tb_act_row_bytes(TB_TYPE_F32, h->E));
    sc->cs = tb_alloc_aligned((size_t)h->C * sizeof(float));
    sc->yp = tb_alloc_aligned((size_t)h->V * sizeof(float));
    sc->sel = malloc((size_t)h->T * sizeof *sc->sel);
    sc->pre = malloc(((size_t)h->T + 1) * sizeof *sc->pre);
    if (!sc->act || !sc->actc || !sc->cs || !sc->yp || !sc->sel || !sc->pre) {
        tb_head_scratch_free(sc);
        return tb_err(TB_ERR_NOMEM, "approximate head: out of memory for its scratch");
    }
    return TB_OK;
}

void tb_head_scratch_free(tb_head_scratch_t *sc) {
    tb_free_aligned(sc->act);
    tb_free_aligned(sc->actc);
    tb_free_aligned(sc->cs);
    tb_free_aligned(sc->yp);
    free(sc->sel);
    free(sc->pre);
    memset(sc, 0, sizeof *sc);
}
