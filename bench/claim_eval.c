/*
 * claim_eval.c — one condition of a claim check: bytes per token at a
 * context with an output head, the roofline at the device's bandwidth, the
 * projected interval from the calibration fit and, for a claimed speed, the
 * verdict. `ternbench claim`, the scenario kind [claim] and the records in
 * the database all go through cl_eval_cond.
 */
#include "claim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cl_parse_head(const char *s, tb_head_opts_t *h) {
    h->centroids = h->probes = 0;
    if (!strcmp(s, "exact")) return 0;
    if (strncmp(s, "approx", 6)) return -1;
    if (s[6] == '\0') {
        h->centroids = CL_DEFAULT_CENTROIDS;
        h->probes = CL_DEFAULT_PROBES;
        return 0;
    }
    if (s[6] != ':') return -1;
    char *end;
    errno = 0;
    long c = strtol(s + 7, &end, 10), p = CL_DEFAULT_PROBES;
    if (errno || end == s + 7 || c < 1 || c > 10000000) return -1;
    if (*end == ':') {
        char *e2;
        p = strtol(end + 1, &e2, 10);
        if (errno || e2 == end + 1 || *e2 || p < 1) return -1;
    } else if (*end) {
        return -1;
    }
    h->centroids = (int32_t)c;
    h->probes = (int32_t)(p < c ? p : c);
    return 0;
}

void cl_head_label(const tb_head_opts_t *h, char *b, size_t n) {
    if (!h->centroids) snprintf(b, n, "exact");
    else snprintf(b, n, "approx:%d:%d", h->centroids, h->probes);
}

double cl_geom_bpw(const tb_geometry_t *g) {
    double bytes = 0, params = 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const tb_geom_tensor_t *t = &g->tensors[i];
        if (!strstr(t->name, "attn_q") && !strstr(t->name, "ffn_")) continue;
        if (strstr(t->name, "norm") || strstr(t->name, "bias") || strstr(t->name, "gate_inp")) continue;
        bytes += (double)t->nbytes;
        params += (double)t->n_params;
    }
    return params > 0 ? 8 * bytes / params : 0;
}

int cl_load_geometry(const char *model, const char *type, tb_geometry_t **g) {
    size_t n = strlen(model);
    if (n > 5 && !strcmp(model + n - 5, ".gguf")) {
        tb_model_t *m;
        tb_model_params_t mp = {.weights = TB_WEIGHTS_MMAP, .n_threads = 1};
        if (tb_model_load_ex(model, &mp, &m) != TB_OK) return 2;
        int rc = tb_geometry_from_model(m, g);
        tb_model_free(m);
        return rc == TB_OK ? 0 : 1;
    }
    return tb_geometry_preset(model, type, g) == TB_OK ? 0 : 2;
}

/* Verdict of one condition: impossible above the roofline, beyond published
 * efficiency above the best comparable row's fraction, else plausible. */
static void judge(cl_cond_t *k, double bw) {
    double claimed = k->claimed;
    k->need = claimed / k->roof;
    k->implied = claimed * (double)k->b.total / 1e9;
    if (claimed > k->roof) {
        k->verdict = "impossible";
        snprintf(k->why, sizeof k->why, "%.2fx the roofline (needs %.0f GB/s of a %.0f GB/s peak)", k->need,
                 k->implied, bw);
    } else if (k->fitted && k->need > k->fit.best) {
        k->verdict = "beyond published efficiency";
        snprintf(k->why, sizeof k->why, "needs %.0f %% of peak bandwidth; best comparable published row %.0f %%",
                 100 * k->need, 100 * k->fit.best);
    } else {
        k->verdict = "plausible";
        snprintf(k->why, sizeof k->why, "needs %.0f %% of peak bandwidth (%s the projected interval)",
                 100 * k->need, !k->fitted ? "no calibration for" : claimed < k->lo ? "below"
                 : claimed > k->hi ? "above" : "inside");
    }
}

int cl_eval_cond(const tb_geometry_t *g, const cl_device_t *d, const cl_calib_t *c, cl_query_t *q,
                 tb_type_t kv, cl_cond_t *x) {
    if (tb_geometry_bytes_per_token(g, x->ctx, kv, &x->head, &x->b) != TB_OK) return 2;
    x->roof = d->bw_gbps * 1e9 / (double)x->b.total;
    q->ctx = x->ctx;
    x->fitted = cl_fit(c, q, -1, &x->fit) == 0;
    if (x->fitted) { x->lo = x->roof * x->fit.lo; x->hi = x->roof * x->fit.hi; }
    x->verdict = NULL;
    x->why[0] = '\0';
    if (x->claimed > 0) judge(x, d->bw_gbps);
    return 0;
}
