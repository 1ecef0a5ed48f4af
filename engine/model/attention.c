/*
 * attention.c — self-attention over the KV cache (see session.h for the
 * cache layout: K rows per slot, V transposed per kv head).
 *
 * Work item = (token t, kv head g): the `group` query heads that share g.
 *   prep    RMSNorm of q/k per head (maple), RoPE (when the layer uses it);
 *   store   K row part and V column of g into slot (pos % cap), rounded to
 *           the cache type;
 *   attend  scores = K_run · q for the group's query heads (one kernel gemm
 *           per contiguous run of ring slots, K read once for the group),
 *           scale, f32 softmax in position order, then o = Vt_run · p (one
 *           gemm per run, Vt read once for the group), runs summed in order.
 * The runs of a window are cut only where the ring wraps (slot 0), so they
 * depend on the positions alone: a token gives bit-identical results alone
 * (decode) or inside a prefill chunk, on any thread count.
 *
 * Passes per layer:
 *   n == 1         one pass: prep + store + attend per kv head;
 *   no overwrite   pass 1 prep + store for all (t, g), pass 2 attend;
 *   ring overwrite (a chunk of >= 2 tokens reaching slot reuse: token t
 *                  would overwrite a position token t-1 still reads)
 *                  pass 1 prep; then per token one pass store + attend.
 */
#include "model/session.h"
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

typedef struct att_ctx {
    tb_session_t *s;
    const tb_layer_t *L;
    const tb_kv_layer_t *kv;
    int32_t n, pos0;
    int32_t t_only;          /* >= 0: the per-token pass of token t_only */
    bool store;              /* pass 1 stores K/V (no ring overwrite)    */
} att_ctx;

/* ===================================================================== */
/* Prep and store                                                         */
/* ===================================================================== */

/* q/k norm and rope of token t, kv head g and its query heads. */
static void prep(const att_ctx *c, int32_t t, int g) {
    tb_session_t *s = c->s;
    const tb_model_t *m = s->m;
    const tb_model_info_t *in = &m->info;
    const int hd = in->head_dim, half = in->rope_dims / 2, group = in->n_head / in->n_head_kv;
    const int64_t nq = (int64_t)in->n_head * hd, nkv = (int64_t)in->n_head_kv * hd;
    const int tab = c->L->sliding ? 1 : 0;
    const float *cs = s->rope_cs + ((size_t)tab * s->p.n_batch + (size_t)t) * (size_t)half;
    const float *sn = s->rope_sn + ((size_t)tab * s->p.n_batch + (size_t)t) * (size_t)half;
    for (int h = g * group; h < (g + 1) * group; h++) {
        float *q = s->q + t * nq + h * hd;           /* (head_dim) */
        if (c->L->q_norm) tb_op_rmsnorm(q, q, c->L->q_norm, hd, in->norm_eps);
        if (c->L->rope) tb_op_rope(q, cs, sn, in->rope_dims, m->rope_neox);
    }
    float *k = s->k + t * nkv + g * hd;              /* (head_dim) */
    if (c->L->k_norm) tb_op_rmsnorm(k, k, c->L->k_norm, hd, in->norm_eps);
    if (c->L->rope) tb_op_rope(k, cs, sn, in->rope_dims, m->rope_neox);
}

/* K[slot] part g and Vt[g][:, slot] of token t, in the cache type. */
static void store(const att_ctx *c, int32_t t, int g) {
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int hd = in->head_dim;
    const int64_t nkv = (int64_t)in->n_head_kv * hd;
    const size_t slot = (size_t)((c->pos0 + t) % c->kv->cap), cap = (size_t)c->kv->cap;
    const float *k = s->k + t * nkv + g * hd;        /* (head_dim) */
    const float *v = s->v + t * nkv + g * hd;        /* (head_dim) */
    if (s->p.kv_type == TB_TYPE_F16) {
        tb_fp16_t *kd = (tb_fp16_t *)c->kv->k + slot * (size_t)nkv + (size_t)g * hd;
        tb_fp16_t *vd = (tb_fp16_t *)c->kv->v + (size_t)g * hd * cap + slot;   /* stride cap */
        for (int i = 0; i < hd; i++) kd[i] = tb_op_f16(k[i]);
        for (int i = 0; i < hd; i++) vd[(size_t)i * cap] = tb_op_f16(v[i]);
    } else {
        float *kd = (float *)c->kv->k + slot * (size_t)nkv + (size_t)g * hd;
        float *vd = (float *)c->kv->v + (size_t)g * hd * cap + slot;
        memcpy(kd, k, (size_t)hd * sizeof *kd);
        for (int i = 0; i < hd; i++) vd[(size_t)i * cap] = v[i];
    }
}

/* ===================================================================== */
/* Scores kernel (AVX-512)                                                */
/* ===================================================================== */

/* The generic gemm reduces every K row (head_dim 64/128: 4-8 vector steps)
 * with a horizontal sum per query, which dominates at depth. Here 16 K rows
 * are done at once: one accumulator per row, then a fixed transpose-add
 * tree turns the 16 accumulators into one vector of 16 scores. Each row's
 * summation order depends on nothing but the row (tails are zero rows), so
 * results are independent of run cuts, chunking and threads. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TB_ATT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

/* Lane i of the result = horizontal sum of v[i], i = 0..15. */
TB_ATT_AVX512 static inline __m512 reduce16(__m512 v[16]) {
    __m512 w[8], x[4], y[2];
    for (int i = 0; i < 8; i++)      /* per 128-bit lane: rows 2i, 2i+1 at 0,2 / 1,3 */
        w[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                             _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 4; i++) {    /* per 128-bit lane: rows 4i..4i+3 */
        __m512d a = _mm512_castps_pd(w[2 * i]), b = _mm512_castps_pd(w[2 * i + 1]);
        x[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    for (int i = 0; i < 2; i++)      /* lane pairs summed: rows 8i..8i+7 */
        y[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(y[0], y[1], 0x88),
                         _mm512_shuffle_f32x4(y[0], y[1], 0xDD));
}

/* 16 elements of a K row at column d (f16 or f32). */
TB_ATT_AVX512 static inline __m512 kload(const uint8_t *row, int d, bool f16) {
    if (f16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + d)));
    return _mm512_loadu_ps((const float *)row + d);
}

/* sc[h * ld + r] = K[r] · q[h] for rows r in [0, rows), h in [0, group):
 * K rows `krow` bytes apart (f16 when f16, else f32), q (group, hd) f32,
 * hd % 16 == 0. */
TB_ATT_AVX512 static void scores_avx512(const uint8_t *K, size_t krow, bool f16, const float *q,
                                        int group, int hd, float *sc, int64_t ld, int32_t rows) {
    for (int32_t r0 = 0; r0 < rows; r0 += 16) {
        const int nr = (int)TB_MIN(16, rows - r0);
        const __mmask16 m = (__mmask16)(nr == 16 ? 0xFFFF : (1u << nr) - 1);
        for (int h = 0; h < group; h++) {
            const float *qh = q + (size_t)h * hd;                  /* (hd) */
            __m512 acc[16];                                        /* (16 rows, 16 lanes) */
            for (int r = 0; r < 16; r++) acc[r] = _mm512_setzero_ps();
            for (int d = 0; d < hd; d += 16) {
                const __m512 qv = _mm512_loadu_ps(qh + d);
                for (int r = 0; r < nr; r++)
                    acc[r] = _mm512_fmadd_ps(kload(K + (size_t)(r0 + r) * krow, d, f16), qv, acc[r]);
            }
            _mm512_mask_storeu_ps(sc + (size_t)h * (size_t)ld + r0, m, reduce16(acc));
        }
    }
}

/* o[h * hd + d] = sum_j p[h * ld + j] * Vt[d][j], j in [0, n), d in
 * [0, hd), h in [0, G): Vt rows vs bytes apart (f16 or f32), G divides 16.
 * A step takes R = 16 / G rows of Vt, each 16-position chunk of them loaded
 * once for all G queries; accumulator h * R + r holds (query h, row r).
 * Each output's order depends only on n, so decode and prefill agree. */
TB_ATT_AVX512 static inline __attribute__((always_inline)) void
wsum_g(const uint8_t *Vt, size_t vs, bool f16, const float *p, int64_t ld, const int G, int hd,
       float *o, int32_t n) {
    const int R = 16 / G;
    for (int d0 = 0; d0 < hd; d0 += R) {
        __m512 acc[16];                                            /* (G * R, 16 lanes) */
        for (int a = 0; a < 16; a++) acc[a] = _mm512_setzero_ps();
        for (int32_t j = 0; j < n; j += 16) {
            const __mmask16 m = (__mmask16)(n - j >= 16 ? 0xFFFF : (1u << (n - j)) - 1);
            __m512 vv[16];                                         /* (R, 16 lanes) */
            for (int r = 0; r < R; r++) {
                const uint8_t *row = Vt + (size_t)(d0 + r) * vs;
                vv[r] = f16 ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + j))
                            : _mm512_maskz_loadu_ps(m, (const float *)row + j);
            }
            for (int h = 0; h < G; h++) {
                const __m512 pv = _mm512_maskz_loadu_ps(m, p + (size_t)h * (size_t)ld + j);
                for (int r = 0; r < R; r++) acc[h * R + r] = _mm512_fmadd_ps(vv[r], pv, acc[h * R + r]);
            }
        }
        const __m512 ov = reduce16(acc);                           /* (G, R) */
        for (int h = 0; h < G; h++)
            _mm512_mask_storeu_ps(o + (size_t)h * hd + d0 - h * R, (__mmask16)(((1u << R) - 1) << (h * R)), ov);
    }
}

TB_ATT_AVX512 static void wsum_avx512(const uint8_t *Vt, size_t vs, bool f16, const float *p,
                                      int64_t ld, int group, int hd, float *o, int32_t n) {
    switch (group) {
    case 1: wsum_g(Vt, vs, f16, p, ld, 1, hd, o, n); break;
    case 2: wsum_g(Vt, vs, f16, p, ld, 2, hd, o, n); break;
    case 4: wsum_g(Vt, vs, f16, p, ld, 4, hd, o, n); break;
    case 8: wsum_g(Vt, vs, f16, p, ld, 8, hd, o, n); break;
    default: wsum_g(Vt, vs, f16, p, ld, 16, hd, o, n); break;
    }
}
#endif

/* ===================================================================== */
/* Attend                                                                 */
/* ===================================================================== */

/* Attention of token t's query heads of kv head g over its window, all of
 * whose K/V are in the cache. Scratch: this thread's scores. */
static void attend(const att_ctx *c, int32_t t, int g, int ith) {
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int hd = in->head_dim, group = in->n_head / in->n_head_kv;
    const size_t el = s->kv_elem, cap = (size_t)c->kv->cap;
    const size_t krow = (size_t)in->n_head_kv * (size_t)hd * el;
    const tb_type_kernels_t *kk = &tb_kernels()->t[s->p.kv_type];
    const float scale = 1.0f / sqrtf((float)hd);
    const int32_t p = c->pos0 + t;
    const int32_t j0 = c->L->sliding ? TB_MAX(0, p - in->n_swa + 1) : 0, len = p - j0 + 1;
    const int64_t ld = s->sc_ld;
    float *sc = s->scores + (size_t)ith * s->sc_per_thread;          /* (group, sc_ld) */
    float *tmp = sc + (size_t)group * (size_t)ld;                     /* (group, head_dim) */
    const float *q = s->q + ((int64_t)t * in->n_head + (int64_t)g * group) * hd;  /* (group, hd) */
    float *o = s->att + ((int64_t)t * in->n_head + (int64_t)g * group) * hd;      /* (group, hd) */
    const uint8_t *K = (const uint8_t *)c->kv->k + (size_t)g * hd * el;          /* rows krow */
    const uint8_t *Vt = (const uint8_t *)c->kv->v + (size_t)g * hd * cap * el;   /* (hd, cap) */

    /* ---- scores, one gemm per run of slots ---- */
#if defined(TB_ATT_AVX512)
    const bool fast = tb_kernels()->isa == TB_ISA_AVX512 && hd % 16 == 0 &&
                      (s->p.kv_type == TB_TYPE_F16 || s->p.kv_type == TB_TYPE_F32);
#endif
    for (int32_t j = j0; j <= p;) {
        const size_t slot = (size_t)(j % c->kv->cap);
        const int32_t run = (int32_t)TB_MIN((size_t)(p - j + 1), cap - slot);
#if defined(TB_ATT_AVX512)
        if (fast)
            scores_avx512(K + slot * krow, krow, s->p.kv_type == TB_TYPE_F16, q, group, hd,
                          sc + (j - j0), ld, run);
        else
#endif
            kk->gemm(K + slot * krow, krow, q, (size_t)hd * sizeof(float), group, sc + (j - j0),
                     ld, 0, run, hd);
        j += run;
    }
    for (int h = 0; h < group; h++) {
        float *r = sc + (size_t)h * (size_t)ld;                         /* (len) */
        tb_op_softmax(r, len, scale);
    }
    /* ---- o = Vt · p, one gemm per run, runs summed in position order ---- */
    bool first = true;
    for (int32_t j = j0; j <= p;) {
        const size_t slot = (size_t)(j % c->kv->cap);
        const int32_t run = (int32_t)TB_MIN((size_t)(p - j + 1), cap - slot);
#if defined(TB_ATT_AVX512)
        if (fast && 16 % group == 0)
            wsum_avx512(Vt + slot * el, cap * el, s->p.kv_type == TB_TYPE_F16, sc + (j - j0), ld,
                        group, hd, first ? o : tmp, run);
        else
#endif
            kk->gemm(Vt + slot * el, cap * el, sc + (j - j0), (size_t)ld * sizeof(float), group,
                     first ? o : tmp, hd, 0, hd, run);
        if (!first)
            for (int64_t i = 0; i < (int64_t)group * hd; i++) o[i] += tmp[i];
        first = false;
        j += run;
    }
}

/* ===================================================================== */
/* Passes                                                                 */
/* ===================================================================== */

/* Items [i0, i1) of this thread out of `items`, contiguous. */
static void split(int64_t items, int ith, int nth, int64_t *i0, int64_t *i1) {
    *i0 = items * ith / nth;
    *i1 = items * (ith + 1) / nth;
}

/* n == 1: prep + store + attend per kv head, one pass. */
static void fused_worker(void *arg, int ith, int nth) {
    const att_ctx *c = arg;
    const int nkv = c->s->m->info.n_head_kv;
    int64_t i0, i1;
    split(nkv, ith, nth, &i0, &i1);
    for (int64_t g = i0; g < i1; g++) {
        prep(c, 0, (int)g);
        store(c, 0, (int)g);
        attend(c, 0, (int)g, ith);
    }
}

static void prep_worker(void *arg, int ith, int nth) {
    const att_ctx *c = arg;
    const int nkv = c->s->m->info.n_head_kv;
    int64_t i0, i1;
    split((int64_t)c->n * nkv, ith, nth, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) {
        prep(c, (int32_t)(it / nkv), (int)(it % nkv));
        if (c->store) store(c, (int32_t)(it / nkv), (int)(it % nkv));
    }
}

static void attend_worker(void *arg, int ith, int nth) {
    const att_ctx *c = arg;
    const int nkv = c->s->m->info.n_head_kv;
    int64_t i0, i1;
    if (c->t_only >= 0) {
        split(nkv, ith, nth, &i0, &i1);
        for (int64_t g = i0; g < i1; g++) {
            store(c, c->t_only, (int)g);
            attend(c, c->t_only, (int)g, ith);
        }
        return;
    }
    split((int64_t)c->n * nkv, ith, nth, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) attend(c, (int32_t)(it / nkv), (int)(it % nkv), ith);
}

void tb_attention(tb_session_t *s, int32_t il, int32_t n) {
    att_ctx c = {.s = s, .L = &s->m->layers[il], .kv = &s->kv[il], .n = n, .pos0 = s->pos,
                 .t_only = -1};
    if (n == 1) {
        tb_pool_run(s->pool, fused_worker, &c);
        return;
    }
    /* Position q = pos0 + t overwrites q - cap, which token t - 1 reads
     * whenever q >= cap: then tokens go one at a time. */
    const bool overwrite = s->pos + n - 1 >= c.kv->cap;
    c.store = !overwrite;
    tb_pool_run(s->pool, prep_worker, &c);
    if (!overwrite) {
        tb_pool_run(s->pool, attend_worker, &c);
        return;
    }
    for (int32_t t = 0; t < n; t++) {
        c.t_only = t;
        tb_pool_run(s->pool, attend_worker, &c);
    }
}
