/*
 * ref.c — the naive double-precision reference forward pass (see ref.h).
 * Written from the architecture description, deliberately simple: every
 * position recomputes attention over the whole causal prefix, every
 * product accumulates in double.
 */
#include "ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_layer {
    const float *attn_norm, *q_norm, *k_norm, *ffn_norm;
    const float *wq, *wk, *wv, *wo;          /* row r = output r */
    const float *gate, *up, *down;           /* dense            */
    const float *router, *gate_x, *up_x, *down_x;
    bool sliding, rope;
    double clamp, base;
} ref_layer;

struct ref_model {
    tb_gguf_t *g;
    bool maple;
    int L, E, H, HKV, HD, V, FF, X, K, FFX, SWA, ROT;
    double eps;
    const float *embd, *out_norm, *output;
    ref_layer *layers;
};

/* ---- reading ---------------------------------------------------------- */

static int key_u32(ref_model *m, const char *arch, const char *k, int def, int *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    uint32_t v;
    if (tb_gguf_get_u32(m->g, key, &v) != TB_OK) { *out = def; return def < 0 ? -1 : 0; }
    *out = (int)v;
    return 0;
}

static double key_f32(ref_model *m, const char *arch, const char *k, double def) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    float v;
    return tb_gguf_get_f32(m->g, key, &v) == TB_OK ? v : def;
}

/* Index of tensor `name` or `name`.weight (llama.cpp's form); -1. */
static int64_t find_named(const tb_gguf_t *g, const char *name) {
    int64_t i = tb_gguf_find_tensor(g, name);
    if (i >= 0) return i;
    char full[128];
    snprintf(full, sizeof full, "%s.weight", name);
    return tb_gguf_find_tensor(g, full);
}

static const float *tensor(ref_model *m, const char *name, int64_t n_elems, char *err, size_t cap) {
    int64_t i = find_named(m->g, name);
    tb_gguf_tensor_t t;
    if (i < 0 || tb_gguf_tensor(m->g, i, &t) != TB_OK) {
        snprintf(err, cap, "ref: tensor %s missing", name);
        return NULL;
    }
    if (t.type != TB_TYPE_F32 || t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3] != n_elems) {
        snprintf(err, cap, "ref: tensor %s must be F32 with %lld elements", name, (long long)n_elems);
        return NULL;
    }
    return t.data;
}

int ref_load(const char *path, ref_model **out, char *err, size_t cap) {
    ref_model *m = calloc(1, sizeof *m);
    char arch[32];
    if (!m || tb_gguf_open(path, &m->g) != TB_OK ||
        tb_gguf_get_str(m->g, "general.architecture", arch, sizeof arch) != TB_OK) {
        snprintf(err, cap, "ref: cannot open %s: %s", path, tb_last_error());
        ref_free(m);
        return -1;
    }
    m->maple = strcmp(arch, "maple") == 0;
    int rc = 0;
    rc |= key_u32(m, arch, "block_count", -1, &m->L);
    rc |= key_u32(m, arch, "embedding_length", -1, &m->E);
    rc |= key_u32(m, arch, "attention.head_count", -1, &m->H);
    key_u32(m, arch, "attention.head_count_kv", m->H, &m->HKV);
    key_u32(m, arch, "attention.key_length", m->E / m->H, &m->HD);
    key_u32(m, arch, "rope.dimension_count", m->HD, &m->ROT);
    key_u32(m, arch, "expert_count", 0, &m->X);
    key_u32(m, arch, "expert_used_count", 0, &m->K);
    key_u32(m, arch, "attention.sliding_window", 0, &m->SWA);
    if (m->maple) rc |= key_u32(m, arch, "expert_feed_forward_length", -1, &m->FFX);
    else if (m->X) rc |= key_u32(m, arch, "feed_forward_length", -1, &m->FFX);
    else rc |= key_u32(m, arch, "feed_forward_length", -1, &m->FF);
    m->eps = key_f32(m, arch, "attention.layer_norm_rms_epsilon", 1e-5);
    double base = key_f32(m, arch, "rope.freq_base", 10000.0);
    double base_swa = key_f32(m, arch, "rope.freq_base_swa", base);
    if (rc) {
        snprintf(err, cap, "ref: %s lacks a required key", path);
        ref_free(m);
        return -1;
    }
    int64_t ie = find_named(m->g, "token_embd");
    tb_gguf_tensor_t te;
    if (ie < 0 || tb_gguf_tensor(m->g, ie, &te) != TB_OK) {
        snprintf(err, cap, "ref: no token_embd");
        ref_free(m);
        return -1;
    }
    m->V = (int)te.ne[1];
    const int64_t E = m->E, QD = (int64_t)m->H * m->HD, KD = (int64_t)m->HKV * m->HD;
    m->layers = calloc((size_t)m->L, sizeof *m->layers);
    /* per-layer maple arrays */
    tb_gguf_value_t pat = {0}, clamp = {0};
    if (m->maple) {
        tb_gguf_kv_value(m->g, tb_gguf_find_kv(m->g, "maple.attention.sliding_window_pattern"), &pat);
        tb_gguf_kv_value(m->g, tb_gguf_find_kv(m->g, "maple.swiglu_clamp_exp"), &clamp);
    }
    bool ok = (m->embd = tensor(m, "token_embd", E * m->V, err, cap)) &&
              (m->out_norm = tensor(m, "output_norm", E, err, cap));
    if (ok) {
        m->output = find_named(m->g, "output") >= 0 ? tensor(m, "output", E * m->V, err, cap)
                                                               : m->embd;
        ok = m->output != NULL;
    }
    for (int l = 0; ok && l < m->L; l++) {
        ref_layer *R = &m->layers[l];
        char nm[64];
#define T(field, s, n) \
    (snprintf(nm, sizeof nm, "blk.%d.%s", l, s), (R->field = tensor(m, nm, n, err, cap)) != NULL)
        ok = T(attn_norm, "attn_norm", E) && T(wq, "attn_q", E * QD) && T(wk, "attn_k", E * KD) &&
             T(wv, "attn_v", E * KD) && T(wo, "attn_output", QD * E) && T(ffn_norm, "ffn_norm", E);
        if (ok && m->maple) ok = T(q_norm, "attn_q_norm", m->HD) && T(k_norm, "attn_k_norm", m->HD);
        if (ok && m->X)
            ok = T(router, "ffn_gate_inp", E * m->X) && T(gate_x, "ffn_gate_exps", E * m->FFX * m->X) &&
                 T(up_x, "ffn_up_exps", E * m->FFX * m->X) && T(down_x, "ffn_down_exps", E * m->FFX * m->X);
        else if (ok)
            ok = T(gate, "ffn_gate", E * m->FF) && T(up, "ffn_up", E * m->FF) && T(down, "ffn_down", E * m->FF);
#undef T
        R->clamp = INFINITY;
        R->rope = true;
        R->base = base;
        if (m->maple) {
            tb_gguf_value_t v;
            tb_gguf_arr_get(m->g, &pat, (uint64_t)l, &v);
            R->sliding = v.v.u64 != 0;
            R->rope = R->sliding;
            R->base = base_swa;
            tb_gguf_arr_get(m->g, &clamp, (uint64_t)l, &v);
            R->clamp = v.v.f64;
        }
    }
    if (!ok) {
        ref_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void ref_free(ref_model *m) {
    if (!m) return;
    tb_gguf_close(m->g);
    free(m->layers);
    free(m);
}

int ref_n_vocab(const ref_model *m) { return m->V; }

/* ---- math ------------------------------------------------------------- */

/* y (rows) = W (rows, cols) x */
static void mv(double *y, const float *W, const double *x, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t c = 0; c < cols; c++) s += (double)W[r * cols + c] * x[c];
        y[r] = s;
    }
}

static void rmsnorm(double *y, const double *x, const float *w, int n, double eps) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) y[i] = x[i] * r * w[i];
}

static void rope(double *x, int pos, int rot, double base, bool neox) {
    for (int i = 0; i < rot / 2; i++) {
        double th = pos * pow(base, -2.0 * i / rot);
        int a = neox ? i : 2 * i, b = neox ? i + rot / 2 : 2 * i + 1;
        double x0 = x[a], x1 = x[b];
        x[a] = x0 * cos(th) - x1 * sin(th);
        x[b] = x0 * sin(th) + x1 * cos(th);
    }
}

static double silu(double x) { return x / (1.0 + exp(-x)); }

/* ---- forward ---------------------------------------------------------- */

void ref_forward(const ref_model *m, const int32_t *tok, int n, double *logits) {
    const int E = m->E, HD = m->HD, QD = m->H * HD, KD = m->HKV * HD;
    const int FW = m->X ? m->FFX : m->FF;
    double *x = calloc((size_t)n * E, sizeof *x);    /* (n, E) */
    double *xn = calloc((size_t)E, sizeof *xn);
    double *q = calloc((size_t)n * QD, sizeof *q);   /* (n, QD) */
    double *k = calloc((size_t)n * KD, sizeof *k);   /* (n, KD) */
    double *v = calloc((size_t)n * KD, sizeof *v);
    double *att = calloc((size_t)QD, sizeof *att);
    double *sc = calloc((size_t)n, sizeof *sc);
    double *tmp = calloc((size_t)E, sizeof *tmp);
    double *g = calloc((size_t)FW, sizeof *g), *u = calloc((size_t)FW, sizeof *u);
    double *pr = calloc((size_t)(m->X ? m->X : 1), sizeof *pr);
    for (int t = 0; t < n; t++)
        for (int i = 0; i < E; i++) x[(size_t)t * E + i] = m->embd[(size_t)tok[t] * E + i];
    for (int l = 0; l < m->L; l++) {
        const ref_layer *R = &m->layers[l];
        for (int t = 0; t < n; t++) {
            rmsnorm(xn, x + (size_t)t * E, R->attn_norm, E, m->eps);
            mv(q + (size_t)t * QD, R->wq, xn, QD, E);
            mv(k + (size_t)t * KD, R->wk, xn, KD, E);
            mv(v + (size_t)t * KD, R->wv, xn, KD, E);
            for (int h = 0; h < m->H; h++) {
                double *qh = q + (size_t)t * QD + h * HD;
                if (R->q_norm) rmsnorm(qh, qh, R->q_norm, HD, m->eps);
                if (R->rope) rope(qh, t, m->ROT, R->base, m->maple);
            }
            for (int h = 0; h < m->HKV; h++) {
                double *kh = k + (size_t)t * KD + h * HD;
                if (R->k_norm) rmsnorm(kh, kh, R->k_norm, HD, m->eps);
                if (R->rope) rope(kh, t, m->ROT, R->base, m->maple);
            }
        }
        for (int t = 0; t < n; t++) {
            int j0 = R->sliding && t - m->SWA + 1 > 0 ? t - m->SWA + 1 : 0;
            for (int h = 0; h < m->H; h++) {
                int kh = h / (m->H / m->HKV);
                double mx = -INFINITY, sum = 0;
                for (int j = j0; j <= t; j++) {
                    double s = 0;
                    for (int i = 0; i < HD; i++) s += q[(size_t)t * QD + h * HD + i] * k[(size_t)j * KD + kh * HD + i];
                    sc[j] = s / sqrt((double)HD);
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = j0; j <= t; j++) sum += (sc[j] = exp(sc[j] - mx));
                for (int i = 0; i < HD; i++) {
                    double o = 0;
                    for (int j = j0; j <= t; j++) o += sc[j] / sum * v[(size_t)j * KD + kh * HD + i];
                    att[h * HD + i] = o;
                }
            }
            mv(tmp, R->wo, att, E, QD);
            for (int i = 0; i < E; i++) x[(size_t)t * E + i] += tmp[i];
        }
        for (int t = 0; t < n; t++) {
            double *xt = x + (size_t)t * E;
            rmsnorm(xn, xt, R->ffn_norm, E, m->eps);
            if (!m->X) {
                mv(g, R->gate, xn, FW, E);
                mv(u, R->up, xn, FW, E);
                for (int i = 0; i < FW; i++) g[i] = silu(g[i]) * u[i];
                mv(tmp, R->down, g, E, FW);
                for (int i = 0; i < E; i++) xt[i] += tmp[i];
                continue;
            }
            mv(pr, R->router, xn, m->X, E);
            double mx = -INFINITY, sum = 0;
            for (int e = 0; e < m->X; e++) mx = pr[e] > mx ? pr[e] : mx;
            for (int e = 0; e < m->X; e++) sum += (pr[e] = exp(pr[e] - mx));
            for (int e = 0; e < m->X; e++) pr[e] /= sum;
            int sel[64];
            double wsum = 0;
            for (int s = 0; s < m->K; s++) {
                int best = -1;
                for (int e = 0; e < m->X; e++) {
                    bool used = false;
                    for (int j = 0; j < s; j++) used |= sel[j] == e;
                    if (!used && (best < 0 || pr[e] > pr[best])) best = e;
                }
                sel[s] = best;
                wsum += pr[best];
            }
            for (int s = 0; s < m->K; s++) {
                const size_t off = (size_t)sel[s] * FW * E;
                mv(g, R->gate_x + off, xn, FW, E);
                mv(u, R->up_x + off, xn, FW, E);
                for (int i = 0; i < FW; i++) {
                    double gi = fmin(g[i], R->clamp), ui = fmax(fmin(u[i], R->clamp), -R->clamp);
                    g[i] = silu(gi) * ui;
                }
                mv(tmp, R->down_x + off, g, E, FW);
                for (int i = 0; i < E; i++) xt[i] += pr[sel[s]] / wsum * tmp[i];
            }
        }
    }
    for (int t = 0; t < n; t++) {
        rmsnorm(xn, x + (size_t)t * E, m->out_norm, E, m->eps);
        mv(logits + (size_t)t * m->V, m->output, xn, m->V, E);
    }
    free(x); free(xn); free(q); free(k); free(v); free(att); free(sc); free(tmp);
    free(g); free(u); free(pr);
}
