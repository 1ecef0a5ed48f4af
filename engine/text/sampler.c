/*
 * sampler.c — token sampling: greedy, top-k, temperature, top-p, min-p.
 *
 * Pipeline (each stage optional, in this order):
 *   top-k        keep the k largest logits
 *   softmax      p_i = exp((l_i - max) / temp), normalised
 *   top-p        keep the smallest most-probable prefix whose mass >= top_p
 *   min-p        keep p_i >= min_p * max_i p_i
 *   draw         u uniform in [0, sum of kept p), first candidate whose
 *                running sum exceeds u
 * temp <= 0 is greedy: the argmax, lowest id on ties (also what top_k = 1
 * gives). "Larger" always means larger value, then lower id, so every
 * stage is deterministic. NaN logits count as -inf.
 *
 * Randomness: xoshiro256** (Blackman & Vigna) seeded by four splitmix64
 * outputs of `seed`; each draw consumes one 64-bit output (53 bits used).
 * Sampling runs on the caller's thread only, so the result depends on the
 * seed and the call sequence, never on the engine's thread count.
 *
 * Cost per call: O(n) for temperature/min-p alone, O(n log k) with top-k,
 * expected O(n) for top-p without top-k (quickselect on mass; the nucleus
 * is then drawn from in the deterministic order the selection leaves).
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand { float v; int32_t id; } cand_t;

struct tb_sampler {
    tb_sampler_params_t p;
    uint64_t rng[4];         /* xoshiro256** state            */
    cand_t *c, *tmp;         /* (cap) candidates and scratch  */
    size_t cap;
};

/* ===================================================================== */
/* PRNG                                                                   */
/* ===================================================================== */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* Uniform double in [0, 1). */
static double uniform(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

/* ===================================================================== */
/* Ordering and selection                                                 */
/* ===================================================================== */

static inline float val(float x) { return isnan(x) ? -INFINITY : x; }

/* a ranks before b: larger value, then lower id. */
static inline bool better(cand_t a, cand_t b) { return a.v > b.v || (a.v == b.v && a.id < b.id); }

static int32_t argmax(const float *l, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (val(l[i]) > val(l[best])) best = i;
    return best;
}

/* Min-heap (worst at the root) sift-down over h[0..n). */
static void sift_down(cand_t *h, size_t n, size_t i) {
    cand_t x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && better(h[c], h[c + 1])) c++;   /* the worse child */
        if (!better(x, h[c])) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* The k best of src[0..n) into dst[0..k), best first. O(n log k). */
static void select_top(const cand_t *src, size_t n, size_t k, cand_t *dst) {
    for (size_t i = 0; i < k; i++) dst[i] = src[i];
    for (size_t i = k / 2; i-- > 0;) sift_down(dst, k, i);
    for (size_t i = k; i < n; i++) {
        if (better(src[i], dst[0])) {
            dst[0] = src[i];
            sift_down(dst, k, 0);
        }
    }
    for (size_t m = k; m > 1; m--) {             /* heap-sort: worst goes last */
        cand_t w = dst[0];
        dst[0] = dst[m - 1];
        dst[m - 1] = w;
        sift_down(dst, m - 1, 0);
    }
}

/* ===================================================================== */
/* Stages                                                                 */
/* ===================================================================== */

/* Softmax of c[0..m) at temperature temp, in place. */
static void softmax(cand_t *c, size_t m, float temp) {
    float mx = -INFINITY;
    for (size_t i = 0; i < m; i++) mx = c[i].v > mx ? c[i].v : mx;
    double sum = 0;
    for (size_t i = 0; i < m; i++) {
        float e = c[i].v == -INFINITY ? 0.0f : expf((c[i].v - mx) / temp);
        c[i].v = e;
        sum += e;
    }
    for (size_t i = 0; i < m; i++) c[i].v = (float)(c[i].v / sum);
}

/* Length of the shortest prefix of sorted c[0..m) with mass >= p (>= 1). */
static size_t nucleus_len(const cand_t *c, size_t m, float p) {
    double cum = 0;
    for (size_t i = 0; i < m; i++) {
        cum += c[i].v;
        if (cum >= p) return i + 1;
    }
    return m;
}

static inline void swap(cand_t *a, cand_t *b) { cand_t t = *a; *a = *b; *b = t; }

static int cmp_better(const void *a, const void *b) {
    return better(*(const cand_t *)a, *(const cand_t *)b) ? -1 : 1;
}

/* Top-p over unsorted c[0..m): quickselect on mass. [0, lo) is known to
 * be in the nucleus (better than all of [lo, m)) with mass `in`; [lo, hi)
 * is unresolved; [hi, m) is out. A pivot (median of three) splits
 * [lo, hi) into better | pivot | worse; the side holding the cut is kept.
 * Expected O(m). Leaves the nucleus in c[0..return), not in sorted order
 * (only its last, small segment is sorted). */
static size_t top_p_unsorted(cand_t *c, size_t m, float p) {
    size_t lo = 0, hi = m;
    double in = 0;
    while (hi - lo > 32) {
        size_t mid = lo + (hi - lo) / 2;                  /* median of three to hi-1 */
        if (better(c[mid], c[lo])) swap(&c[mid], &c[lo]);
        if (better(c[hi - 1], c[lo])) swap(&c[hi - 1], &c[lo]);
        if (better(c[mid], c[hi - 1])) swap(&c[mid], &c[hi - 1]);
        cand_t piv = c[hi - 1];
        size_t i = lo;
        double mass = 0;
        for (size_t j = lo; j < hi - 1; j++) {
            if (better(c[j], piv)) {
                mass += c[j].v;
                swap(&c[i++], &c[j]);
            }
        }
        swap(&c[i], &c[hi - 1]);                           /* pivot at i */
        if (in + mass >= p) {
            hi = i;                                        /* cut among the better */
        } else {
            in += mass + piv.v;
            lo = i + 1;
            if (in >= p) return lo;                        /* the pivot completes it */
        }
    }
    qsort(c + lo, hi - lo, sizeof *c, cmp_better);
    for (size_t i = lo; i < hi; i++) {
        in += c[i].v;
        if (in >= p) return i + 1;
    }
    return hi > 0 ? hi : 1;
}

/* ===================================================================== */
/* Public API                                                             */
/* ===================================================================== */

int tb_sampler_new(const tb_sampler_params_t *p, tb_sampler_t **out) {
    if (!p || !out) return tb_err(TB_ERR_ARG, "tb_sampler_new: NULL argument");
    *out = NULL;
    if (isnan(p->temp) || isnan(p->top_p) || isnan(p->min_p))
        return tb_err(TB_ERR_ARG, "tb_sampler_new: NaN parameter (temp %g, top_p %g, min_p %g)",
                      (double)p->temp, (double)p->top_p, (double)p->min_p);
    tb_sampler_t *s = calloc(1, sizeof *s);
    if (!s) return tb_err(TB_ERR_NOMEM, "tb_sampler_new: allocation failed");
    s->p = *p;
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    *out = s;
    return TB_OK;
}

void tb_sampler_free(tb_sampler_t *s) {
    if (!s) return;
    free(s->c);
    free(s->tmp);
    free(s);
}

int32_t tb_sampler_sample(tb_sampler_t *s, const float *logits, int32_t n_vocab) {
    if (!s || !logits || n_vocab <= 0)
        return tb_err(TB_ERR_ARG, "tb_sampler_sample: invalid argument (n_vocab %d)", n_vocab);
    const tb_sampler_params_t *p = &s->p;
    if (p->temp <= 0) return argmax(logits, n_vocab);
    size_t n = (size_t)n_vocab;
    if (n > s->cap) {
        cand_t *c = realloc(s->c, n * sizeof *c);
        if (c) s->c = c;
        cand_t *t = realloc(s->tmp, n * sizeof *t);
        if (t) s->tmp = t;
        if (!c || !t) return tb_err(TB_ERR_NOMEM, "tb_sampler_sample: %zu candidates", n);
        s->cap = n;
    }

    /* top-k: c[0..m) sorted best first when `sorted` */
    size_t m = n;
    bool sorted = false;
    for (size_t i = 0; i < n; i++) s->c[i] = (cand_t){val(logits[i]), (int32_t)i};
    if (p->top_k > 0 && (size_t)p->top_k < n) {
        m = (size_t)p->top_k;
        select_top(s->c, n, m, s->tmp);
        memcpy(s->c, s->tmp, m * sizeof *s->c);
        sorted = true;
    }
    float mx = -INFINITY;
    for (size_t i = 0; i < m; i++) mx = s->c[i].v > mx ? s->c[i].v : mx;
    if (mx == -INFINITY) return argmax(logits, n_vocab);   /* nothing finite to weigh */

    softmax(s->c, m, p->temp);

    if (p->top_p < 1.0f) {
        if (sorted) m = nucleus_len(s->c, m, p->top_p);
        else m = top_p_unsorted(s->c, m, p->top_p);
    }
    if (p->min_p > 0.0f) {
        float pmax = 0;
        for (size_t i = 0; i < m; i++) pmax = s->c[i].v > pmax ? s->c[i].v : pmax;
        float thr = p->min_p >= 1.0f ? pmax : p->min_p * pmax;
        size_t w = 0;
        for (size_t i = 0; i < m; i++)
            if (s->c[i].v >= thr) s->c[w++] = s->c[i];
        m = w;                                       /* >= 1: the max passes */
    }

    double total = 0;
    for (size_t i = 0; i < m; i++) total += s->c[i].v;
    double u = uniform(s->rng) * total, acc = 0;
    for (size_t i = 0; i < m; i++) {
        acc += s->c[i].v;
        if (u < acc) return s->c[i].id;
    }
    return s->c[m - 1].id;
}
