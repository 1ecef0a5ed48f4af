/*
 * attention.c — self-attention over the KV cache (see attention.h for the
 * cache layout: per kv head, K in tiles of TB_KV_TILE slots transposed
 * (head_dim, TB_KV_TILE), V one row of head_dim per slot).
 *
 * Work item = (token t, kv head g): the `group` query heads that share g.
 *   prep    RMSNorm of q/k per head (maple), RoPE (when the layer uses it);
 *   store   K and V columns of g into slot (pos % cap), rounded to the
 *           cache type;
 *   attend  scores = Kt_run^T · q for the group's query heads (one kernel
 *           call per contiguous run of ring slots, Kt read once for the
 *           group), scale, f32 softmax in position order, then
 *           o = p · V_run (one call per run, V read once for the group,
 *           the second run of a wrapped ring accumulated into the first). Kernels: attention.h, the active tier's
 *           (attention_x86.c for AVX2 / AVX-512, else the portable C ones
 *           here, also used for group sizes a tier's wsum does not take).
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
#include "model/attention.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

typedef struct att_ctx {
    tb_session_t *s;
    const tb_layer_t *L;
    const tb_kv_layer_t *kv;
    int32_t n, pos0;
    int32_t t_only;          /* >= 0: the per-token pass of token t_only */
    bool store;              /* pass 1 stores K/V (no ring overwrite)    */
    _Atomic int next;        /* decode: the next kv head to claim        */
    tb_pass_clock_t *clk;    /* NULL unless profiling                    */
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

/* K(g)[:, slot] and V(g)[slot, :] of token t, in the cache type. K's
 * column is converted 64 at a time into kh, then scattered down the tile
 * (tb_op_f16 per element cost ~0.7 us per kv head of llama-1b). */
static void store(const att_ctx *c, int32_t t, int g) {
    tb_session_t *s = c->s;
    const tb_model_info_t *in = &s->m->info;
    const int hd = in->head_dim;
    const int64_t nkv = (int64_t)in->n_head_kv * hd;
    const size_t slot = (size_t)((c->pos0 + t) % c->kv->cap), cap = (size_t)c->kv->cap;
    const size_t T = TB_KV_TILE, ntile = (cap + T - 1) / T;
    const size_t ka = (((size_t)g * ntile + slot / T) * (size_t)hd) * T + slot % T; /* K(g)(0, slot), stride T */
    const size_t va = ((size_t)g * cap + slot) * (size_t)hd;        /* V(g)(slot, 0) */
    const float *k = s->k + t * nkv + g * hd;        /* (head_dim) */
    const float *v = s->v + t * nkv + g * hd;        /* (head_dim) */
    if (s->p.kv_type == TB_TYPE_F16) {
        const tb_att_to_f16_fn to_f16 = tb_att_kernels_for(tb_kernels()->isa)->to_f16;
        tb_fp16_t kh[64], *kd = (tb_fp16_t *)c->kv->k + ka;        /* (64) a chunk of K's column */
        for (int i0 = 0; i0 < hd; i0 += 64) {
            const int nc = TB_MIN(64, hd - i0);
            to_f16(k + i0, kh, nc);
            for (int i = 0; i < nc; i++) kd[(size_t)(i0 + i) * T] = kh[i];
        }
        to_f16(v, (tb_fp16_t *)c->kv->v + va, hd);
    } else {
        float *kd = (float *)c->kv->k + ka, *vd = (float *)c->kv->v + va;
        for (int i = 0; i < hd; i++) kd[(size_t)i * T] = k[i];
        memcpy(vd, v, (size_t)hd * sizeof *vd);
    }
}

/* ===================================================================== */
/* Portable kernels and the per-tier table                                */
/* ===================================================================== */

/* Elements of a V row converted at a time (a stack buffer). */
#define T_CHUNK 64

/* Exact f16 -> f32 (as tb_fp16_to_fp32) without branches, so that the row
 * conversions below vectorise: the 15 magnitude bits shifted into an f32
 * exponent/mantissa and scaled by 2^112 (exact for normals and
 * subnormals), infinities and NaNs (exponent 31) by their bits. aarch64
 * converts natively. */
static inline float h2f(tb_fp16_t h) {
#if defined(__aarch64__)
    __fp16 x;
    memcpy(&x, &h, sizeof x);
    return (float)x;
#else
    union { uint32_t u; float f; } m = {.u = (uint32_t)(h & 0x7fffu) << 13}, r, big;
    r.f = m.f * 0x1p112f;
    big.u = m.u | 0x7f800000u;
    r.f = tb_op_sel((h & 0x7c00u) == 0x7c00u, big.f, r.f);
    r.u |= (uint32_t)(h & 0x8000u) << 16;
    return r.f;
#endif
}

/* kf[j] = T[off + j] as f32, j < nj. */
static inline void row_f32(float *kf, const void *T, size_t off, int nj, bool f16) {
    if (f16)
        for (int j = 0; j < nj; j++) kf[j] = h2f(((const tb_fp16_t *)T)[off + (size_t)j]);
    else
        memcpy(kf, (const float *)T + off, (size_t)nj * sizeof *kf);
}

void tb_att_scores_c(const void *Kt, int32_t s0, bool f16, const float *q, int G, int hd,
                     float *sc, int64_t ld, int32_t n) {
    enum { T = TB_KV_TILE };
    float kf[T];                                                   /* (nj) a tile row, f32 */
    for (int32_t j = 0; j < n;) {                                  /* one tile (or its part) */
        const int32_t s = s0 + j, c0 = s % T, nj = TB_MIN(T - c0, n - j);
        const size_t tile = (size_t)(s / T) * (size_t)hd * T;      /* (hd, T) */
        for (int h = 0; h < G; h++)
            for (int i = 0; i < nj; i++) sc[(size_t)h * (size_t)ld + (size_t)(j + i)] = 0.0f;
        for (int d = 0; d < hd; d++) {
            row_f32(kf, Kt, tile + (size_t)d * T + (size_t)c0, nj, f16);
            for (int h = 0; h < G; h++) {
                const float qd = q[(size_t)h * hd + d];
                float *r = sc + (size_t)h * (size_t)ld + j;        /* (nj) */
                for (int i = 0; i < nj; i++) r[i] += kf[i] * qd;
            }
        }
        j += nj;
    }
}

void tb_att_wsum_c(const void *V, bool f16, const float *p, int64_t ld, int G, int hd, float *o,
                   int32_t n, bool acc) {
    float vf[T_CHUNK];                                             /* (nd) a V row chunk, f32 */
    if (!acc)
        for (int64_t i = 0; i < (int64_t)G * hd; i++) o[i] = 0.0f;
    for (int32_t j = 0; j < n; j++)
        for (int d0 = 0; d0 < hd; d0 += T_CHUNK) {
            const int nd = TB_MIN(T_CHUNK, hd - d0);
            row_f32(vf, V, (size_t)j * (size_t)hd + (size_t)d0, nd, f16);
            for (int h = 0; h < G; h++) {
                const float pj = p[(size_t)h * (size_t)ld + (size_t)j];
                float *r = o + (size_t)h * hd + d0;                /* (nd) */
                for (int d = 0; d < nd; d++) r[d] += pj * vf[d];
            }
        }
}

void tb_att_to_f16_c(const float *x, uint16_t *h, int n) {
    for (int i = 0; i < n; i++) h[i] = tb_op_f16(x[i]);
}

static const tb_att_kernels_t att_c = {.scores = tb_att_scores_c, .wsum = tb_att_wsum_c,
                                       .wsum_lanes = 1, .softmax = tb_op_softmax,
                                       .to_f16 = tb_att_to_f16_c};
#if defined(__x86_64__) && defined(__GNUC__)
static const tb_att_kernels_t att_avx2 = {.scores = tb_att_scores_avx2, .wsum = tb_att_wsum_avx2,
                                          .wsum_lanes = 8, .softmax = tb_att_softmax_avx2,
                                          .to_f16 = tb_att_to_f16_avx2};
static const tb_att_kernels_t att_avx512 = {.scores = tb_att_scores_avx512,
                                            .wsum = tb_att_wsum_avx512, .wsum_lanes = 16,
                                            .softmax = tb_att_softmax_avx512,
                                            .to_f16 = tb_att_to_f16_avx512};
#endif

const tb_att_kernels_t *tb_att_kernels_for(tb_isa_t isa) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa == TB_ISA_AVX512) return &att_avx512;
    if (isa == TB_ISA_AVX2) return &att_avx2;
#endif
    (void)isa;
    return &att_c;
}

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
    const size_t ntile = (cap + TB_KV_TILE - 1) / TB_KV_TILE;
    const bool f16 = s->p.kv_type == TB_TYPE_F16;
    const tb_att_kernels_t *ak = tb_att_kernels_for(tb_kernels()->isa);
    const tb_att_wsum_fn wsum = hd % ak->wsum_lanes == 0 ? ak->wsum : tb_att_wsum_c;
    const float scale = 1.0f / sqrtf((float)hd);
    const int32_t p = c->pos0 + t;
    const int32_t j0 = c->L->sliding ? TB_MAX(0, p - in->n_swa + 1) : 0, len = p - j0 + 1;
    const int64_t ld = s->sc_ld;
    float *sc = s->scores + (size_t)ith * s->sc_per_thread;          /* (group, sc_ld) */
    const float *q = s->q + ((int64_t)t * in->n_head + (int64_t)g * group) * hd;  /* (group, hd) */
    float *o = s->att + ((int64_t)t * in->n_head + (int64_t)g * group) * hd;      /* (group, hd) */
    const uint8_t *Kt = (const uint8_t *)c->kv->k + (size_t)g * ntile * TB_KV_TILE * hd * el; /* (ntile, hd, T) */
    const uint8_t *V = (const uint8_t *)c->kv->v + (size_t)g * cap * hd * el;   /* (cap, hd) */

    /* ---- scores, one kernel call per run of slots ---- */
    for (int32_t j = j0; j <= p;) {
        const int32_t slot = (int32_t)(j % c->kv->cap);
        const int32_t run = (int32_t)TB_MIN((size_t)(p - j + 1), cap - (size_t)slot);
        ak->scores(Kt, slot, f16, q, group, hd, sc + (j - j0), ld, run);
        j += run;
    }
    for (int h = 0; h < group; h++) ak->softmax(sc + (size_t)h * (size_t)ld, len, scale);
    /* ---- o = p · V, one call per run, later runs accumulated ---- */
    for (int32_t j = j0; j <= p;) {
        const size_t slot = (size_t)(j % c->kv->cap);
        const int32_t run = (int32_t)TB_MIN((size_t)(p - j + 1), cap - slot);
        wsum(V + slot * (size_t)hd * el, f16, sc + (j - j0), ld, group, hd, o, run, j > j0);
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

/* One decode token's kv head g: prep, store, attend (thread ith's scores). */
static void decode_head(const att_ctx *c, int g, int ith) {
    prep(c, 0, g);
    store(c, 0, g);
    attend(c, 0, g, ith);
}

/* n == 1: prep + store + attend per kv head, one pass; the threads claim
 * kv heads in turn (each head is one thread's, so any claim order gives
 * the same result), and the caller alone finishes when the worker is late. */
static void fused_worker(void *arg, int ith, int nth) {
    att_ctx *c = arg;
    const int nkv = c->s->m->info.n_head_kv;
    (void)nth;
    tb_pass_clock_enter(c->clk, ith);
    for (int g; (g = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed)) < nkv;) decode_head(c, g, ith);
    tb_pass_clock_mark(c->clk, ith, TB_CLK_DONE);
}

static void prep_worker(void *arg, int ith, int nth) {
    const att_ctx *c = arg;
    const int nkv = c->s->m->info.n_head_kv;
    int64_t i0, i1;
    tb_pass_clock_enter(c->clk, ith);
    split((int64_t)c->n * nkv, ith, nth, &i0, &i1);
    for (int64_t it = i0; it < i1; it++) {
        prep(c, (int32_t)(it / nkv), (int)(it % nkv));
        if (c->store) store(c, (int32_t)(it / nkv), (int)(it % nkv));
    }
    tb_pass_clock_mark(c->clk, ith, TB_CLK_DONE);
}

/* Attention of the chunk's (token, kv head) items. A token attends to
 * every position before it, so contiguous ranges of tokens would give the
 * last thread most of a causal chunk's work (3/4 of it at 2 threads from
 * position 0): the threads take the items in turn instead (with an even
 * number of kv heads, each thread its heads for every token). Each item
 * is one thread's, so the results do not depend on who takes it. */
static void attend_worker(void *arg, int ith, int nth) {
    const att_ctx *c = arg;
    const int nkv = c->s->m->info.n_head_kv;
    int64_t i0, i1;
    tb_pass_clock_enter(c->clk, ith);
    if (c->t_only >= 0) {
        split(nkv, ith, nth, &i0, &i1);
        for (int64_t g = i0; g < i1; g++) {
            store(c, c->t_only, (int)g);
            attend(c, c->t_only, (int)g, ith);
        }
    } else {
        for (int64_t it = ith; it < (int64_t)c->n * nkv; it += nth)
            attend(c, (int32_t)(it / nkv), (int)(it % nkv), ith);
    }
    tb_pass_clock_mark(c->clk, ith, TB_CLK_DONE);
}


void tb_attention(tb_session_t *s, int32_t il, int32_t n) {
    att_ctx c = {.s = s, .L = &s->m->layers[il], .kv = &s->kv[il], .n = n, .pos0 = s->pos,
                 .t_only = -1, .clk = tb_prof_clock(s)};
    if (n == 1) {
        atomic_init(&c.next, 0);
        tb_pass_clock_run(c.clk, s->pool, fused_worker, &c, true);
        return;
    }
    /* Position q = pos0 + t overwrites q - cap, which token t - 1 reads
     * whenever q >= cap: then tokens go one at a time. */
    const bool overwrite = s->pos + n - 1 >= c.kv->cap;
    c.store = !overwrite;
    tb_pass_clock_run(c.clk, s->pool, prep_worker, &c, false);
    if (!overwrite) {
        tb_pass_clock_run(c.clk, s->pool, attend_worker, &c, false);
        return;
    }
    for (int32_t t = 0; t < n; t++) {
        c.t_only = t;
        tb_pass_clock_run(c.clk, s->pool, attend_worker, &c, false);
    }
}

void tb_attention_heads(tb_session_t *s, int32_t il, int g0, int g1, int ith) {
    att_ctx c = {.s = s, .L = &s->m->layers[il], .kv = &s->kv[il], .n = 1, .pos0 = s->pos, .t_only = -1};
    for (int g = g0; g < g1; g++) decode_head(&c, g, ith);
}
