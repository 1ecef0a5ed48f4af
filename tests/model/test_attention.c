/*
 * test_attention.c — the attention kernels of every tier this CPU has
 * (attention.h) against plain double-precision references, checkasm style:
 *  - scores over the tiled K cache (tiles of (head_dim, TB_KV_TILE)) for
 *    f16 and f32 caches, group sizes 1..16, head_dim 8..128 (odd
 *    multiples included), runs of odd lengths starting anywhere in a ring
 *    (mid-tile included), up to its end;
 *  - every f16 bit pattern converted exactly;
 *  - only the run's columns written, only its K slots used (NaN in every
 *    other slot, the tiles' padding included), each score bit-identical
 *    whatever the run cut and the head batch (the decode == prefill
 *    contract);
 *  - the weighted sum over V rows (cap, head_dim), any group size, head
 *    dims the tier's vector width divides: values, exactly G x head_dim
 *    outputs written, NaN probabilities and V rows outside the run
 *    ignored, accumulation onto o, a run cut in two (second part
 *    accumulated) bit-identical to the whole run;
 *  - softmax with scale against double, every tail length; its e^x
 *    bit-identical to tb_op_exp on every tier;
 *  - the KV store's f32 -> f16 conversion bit-identical to tb_op_f16 on
 *    every tier: random bit patterns (NaN, inf, subnormal, huge), the
 *    rounding ties and edges of binary16, every length 1..67, nothing
 *    written past n.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/attention.h"
#include "model/model.h"
#include "kernels/kernels.h"

/* Deterministic uniform floats in [lo, hi). */
static uint64_t rng = 0x2545f4914f6cdd1dull;
static float urand(float lo, float hi) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) * 0x1p-24);
}
static int irand(int lo, int hi) { return lo + (int)urand(0.0f, (float)(hi - lo + 1) - 0.5f); }

static const tb_isa_t isas[] = {TB_ISA_REF, TB_ISA_GENERIC, TB_ISA_AVX2, TB_ISA_AVX512, TB_ISA_NEON};

/* The tiled K cache of one kv head, cap slots (attention.h): random values
 * in slots [s, s + n), NaN in every other slot and the last tile's
 * padding. */
static void *make_k(bool f16, int hd, int cap, int s, int n, float amp) {
    const int T = TB_KV_TILE, slots = (cap + T - 1) / T * T;
    void *p = malloc((size_t)hd * (size_t)slots * (f16 ? 2 : 4));
    assert_non_null(p);
    for (int c = 0; c < slots; c++)
        for (int d = 0; d < hd; d++) {
            const bool in = c >= s && c < s + n;
            const float v = in ? urand(-amp, amp) : NAN;
            const size_t i = ((size_t)(c / T) * (size_t)hd + (size_t)d) * (size_t)T + (size_t)(c % T);
            if (f16) ((tb_fp16_t *)p)[i] = tb_fp32_to_fp16(v);
            else ((float *)p)[i] = v;
        }
    return p;
}

/* Index of K(d, slot) in make_k's layout. */
static size_t kidx(int hd, int d, int slot) {
    const int T = TB_KV_TILE;
    return ((size_t)(slot / T) * (size_t)hd + (size_t)d) * (size_t)T + (size_t)(slot % T);
}

/* The V cache of one kv head, (cap, hd): random values in rows [s, s + n),
 * NaN in the others. */
static void *make_v(bool f16, int hd, int cap, int s, int n, float amp) {
    void *p = malloc((size_t)hd * (size_t)cap * (f16 ? 2 : 4));
    assert_non_null(p);
    for (int c = 0; c < cap; c++)
        for (int d = 0; d < hd; d++) {
            const bool in = c >= s && c < s + n;
            const float v = in ? urand(-amp, amp) : NAN;
            if (f16) ((tb_fp16_t *)p)[(size_t)c * hd + d] = tb_fp32_to_fp16(v);
            else ((float *)p)[(size_t)c * hd + d] = v;
        }
    return p;
}

static double at(const void *p, bool f16, size_t i) {
    return f16 ? (double)tb_fp16_to_fp32(((const tb_fp16_t *)p)[i]) : (double)((const float *)p)[i];
}

/* One scores case on one tier. */
static void scores_case(const tb_att_kernels_t *ak, const char *name, bool f16, int G, int hd,
                        int cap, int s, int n) {
    const int64_t ld = n + 5;
    void *Kt = make_k(f16, hd, cap, s, n, 2.0f);                    /* (tiles, hd, T) */
    float *q = malloc((size_t)G * hd * sizeof *q);                  /* (G, hd) */
    float *sc = malloc((size_t)(G + 1) * ld * sizeof *sc);          /* (G + 1, ld) */
    float *s2 = malloc((size_t)(G + 1) * ld * sizeof *s2);
    for (int i = 0; i < G * hd; i++) q[i] = urand(-3.0f, 3.0f);
    memset(sc, 0xA5, (size_t)(G + 1) * ld * sizeof *sc);
    memset(s2, 0xA5, (size_t)(G + 1) * ld * sizeof *s2);
    ak->scores(Kt, s, f16, q, G, hd, sc, ld, n);
    for (int h = 0; h < G + 1; h++)
        for (int64_t j = 0; j < ld; j++) {
            const float got = sc[h * ld + j];
            if (h == G || j >= n) {                                 /* untouched */
                uint32_t u;
                memcpy(&u, &got, 4);
                if (u != 0xA5A5A5A5u) fail_msg("%s scores wrote outside (h %d, j %lld)", name, h, (long long)j);
                continue;
            }
            double ref = 0.0, mag = 0.0;
            for (int d = 0; d < hd; d++) {
                const double t = at(Kt, f16, kidx(hd, d, s + (int)j)) * q[h * hd + d];
                ref += t;
                mag += fabs(t);
            }
            if (!(fabs(got - ref) <= 1.2e-7 * hd * mag + 1e-30))
                fail_msg("%s scores %s G %d hd %d cap %d s %d n %d: [%d][%lld] %.9g vs %.9g", name,
                         f16 ? "f16" : "f32", G, hd, cap, s, n, h, (long long)j, got, ref);
        }
    /* the same bits for a cut run and for one head at a time */
    const int a = irand(0, n);
    ak->scores(Kt, s, f16, q, G, hd, s2, ld, a);
    ak->scores(Kt, s + a, f16, q, G, hd, s2 + a, ld, n - a);
    for (int h = 0; h < G; h++)
        if (memcmp(sc + h * ld, s2 + h * ld, (size_t)n * sizeof *sc))
            fail_msg("%s scores not cut-invariant (G %d hd %d n %d cut %d)", name, G, hd, n, a);
    for (int h = 0; h < G; h++) {
        ak->scores(Kt, s, f16, q + h * hd, 1, hd, s2 + h * ld, ld, n);
        if (memcmp(sc + h * ld, s2 + h * ld, (size_t)n * sizeof *sc))
            fail_msg("%s scores of head %d depend on the head batch (G %d hd %d n %d)", name, h, G, hd, n);
    }
    free(Kt); free(q); free(sc); free(s2);
}

static void test_scores(void **st) {
    (void)st;
    static const int Gs[] = {1, 2, 3, 4, 5, 8, 9, 16};
    static const int hds[] = {8, 16, 40, 64, 128};
    static const int caps[] = {16, 33, 100, 577};
    for (size_t ii = 0; ii < TB_ARRAY_LEN(isas); ii++) {
        if (!tb_kernels_for(isas[ii])) continue;
        const tb_att_kernels_t *ak = tb_att_kernels_for(isas[ii]);
        const char *name = tb_isa_name(isas[ii]);
        for (int f = 0; f < 2; f++)
            for (size_t ci = 0; ci < TB_ARRAY_LEN(caps); ci++) {
                const int cap = caps[ci];
                for (int rep = 0; rep < 6; rep++) {
                    const int G = Gs[irand(0, (int)TB_ARRAY_LEN(Gs) - 1)];
                    const int hd = hds[irand(0, (int)TB_ARRAY_LEN(hds) - 1)];
                    const int s = rep == 0 ? 0 : irand(0, cap - 1);
                    const int n = rep < 2 ? cap - s : irand(1, cap - s);  /* to the ring's end */
                    scores_case(ak, name, f == 1, G, hd, cap, s, n);
                }
            }
        /* every tail length of the vector blocks */
        for (int n = 1; n <= 70; n++) scores_case(ak, name, true, 4, 16, 80, 80 - n, n);
    }
}

/* One weighted-sum case on one tier (its wsum must support hd). */
static void wsum_case(const tb_att_kernels_t *ak, const char *name, bool f16, int G, int hd,
                      int cap, int s, int n) {
    const int64_t ld = n + 7;
    void *V = make_v(f16, hd, cap, s, n, 1.5f);                     /* (cap, hd) */
    const size_t el = f16 ? 2 : 4;
    const uint8_t *V0 = (const uint8_t *)V + (size_t)s * (size_t)hd * el;   /* (n, hd) */
    float *p = malloc((size_t)G * ld * sizeof *p);                  /* (G, ld) */
    float *o = malloc((size_t)(G * hd + 16) * sizeof *o);           /* (G, hd) + guard */
    float *o2 = malloc((size_t)(G * hd + 16) * sizeof *o2);
    float *base = malloc((size_t)G * hd * sizeof *base);            /* (G, hd) */
    for (int h = 0; h < G; h++)
        for (int64_t j = 0; j < ld; j++) p[h * ld + j] = j < n ? urand(0.0f, 1.0f) : NAN;
    for (int i = 0; i < G * hd; i++) base[i] = urand(-2.0f, 2.0f);
    for (int pass = 0; pass < 2; pass++) {                          /* 0: o = sum, 1: o += sum */
        for (int i = 0; i < G * hd + 16; i++) o[i] = pass ? (i < G * hd ? base[i] : NAN) : NAN;
        ak->wsum(V0, f16, p, ld, G, hd, o, n, pass == 1);
        for (int h = 0; h < G; h++)
            for (int d = 0; d < hd; d++) {
                double ref = pass ? base[h * hd + d] : 0.0, mag = fabs(ref);
                for (int j = 0; j < n; j++) {
                    const double t = (double)p[h * ld + j] * at(V0, f16, (size_t)j * hd + (size_t)d);
                    ref += t;
                    mag += fabs(t);
                }
                const float got = o[h * hd + d];
                if (!(fabs(got - ref) <= 1.2e-7 * (n + 8) * mag + 1e-30))
                    fail_msg("%s wsum %s G %d hd %d cap %d s %d n %d acc %d: [%d][%d] %.9g vs %.9g",
                             name, f16 ? "f16" : "f32", G, hd, cap, s, n, pass, h, d, got, ref);
            }
        for (int i = G * hd; i < G * hd + 16; i++)
            if (!isnan(o[i])) fail_msg("%s wsum wrote past G x hd", name);
    }
    /* a run cut in two, the second part accumulated: the same bits */
    const int a = irand(0, n);
    for (int i = 0; i < G * hd; i++) o2[i] = NAN;
    ak->wsum(V0, f16, p, ld, G, hd, o, n, false);
    ak->wsum(V0, f16, p, ld, G, hd, o2, a, false);
    ak->wsum(V0 + (size_t)a * (size_t)hd * el, f16, p + a, ld, G, hd, o2, n - a, true);
    if (memcmp(o, o2, (size_t)G * hd * sizeof *o))
        fail_msg("%s wsum not cut-invariant (G %d hd %d n %d cut %d)", name, G, hd, n, a);
    free(V); free(p); free(o); free(o2); free(base);
}

static void test_wsum(void **st) {
    (void)st;
    static const int Gs[] = {1, 2, 3, 4, 5, 8, 16};
    static const int hds[] = {8, 16, 32, 40, 48, 64, 80, 128, 144};
    static const int caps[] = {16, 33, 100, 577};
    for (size_t ii = 0; ii < TB_ARRAY_LEN(isas); ii++) {
        if (!tb_kernels_for(isas[ii])) continue;
        const tb_att_kernels_t *ak = tb_att_kernels_for(isas[ii]);
        const char *name = tb_isa_name(isas[ii]);
        const int L = ak->wsum_lanes;
        for (int f = 0; f < 2; f++)
            for (size_t ci = 0; ci < TB_ARRAY_LEN(caps); ci++) {
                const int cap = caps[ci];
                for (int rep = 0; rep < 8; rep++) {
                    const int G = Gs[irand(0, (int)TB_ARRAY_LEN(Gs) - 1)];
                    int hd;
                    do hd = hds[irand(0, (int)TB_ARRAY_LEN(hds) - 1)]; while (hd % L);
                    const int s = rep == 0 ? 0 : irand(0, cap - 1);
                    const int n = rep < 2 ? cap - s : irand(1, cap - s);
                    wsum_case(ak, name, f == 1, G, hd, cap, s, n);
                }
            }
        for (int n = 1; n <= 40; n++) wsum_case(ak, name, true, 4, L, 48, 48 - n, n);
        /* the decode shapes: llama-1b (G 4, hd 64), maple-preview (G 4, hd 128) */
        if (64 % L == 0) wsum_case(ak, name, true, 4, 64, 1030, 3, 1027);
        if (128 % L == 0) wsum_case(ak, name, true, 4, 128, 512, 1, 511);
    }
}

/* Every f16 bit pattern through scores with q = 1 (hd 1: the tiled layout
 * is then linear): the exact value (+-0 alike, any NaN for NaN), e.g. the
 * C tiers' branch-free conversion on subnormals, infinities and NaNs. */
static void test_scores_f16_exact(void **st) {
    (void)st;
    const int n = 65536;
    tb_fp16_t *Kt = malloc((size_t)n * sizeof *Kt);
    float *sc = malloc((size_t)n * sizeof *sc);
    const float one = 1.0f;
    for (int i = 0; i < n; i++) Kt[i] = (tb_fp16_t)i;
    for (size_t ii = 0; ii < TB_ARRAY_LEN(isas); ii++) {
        if (!tb_kernels_for(isas[ii])) continue;
        tb_att_kernels_for(isas[ii])->scores(Kt, 0, true, &one, 1, 1, sc, n, n);
        for (int i = 0; i < n; i++) {
            const float want = tb_fp16_to_fp32((tb_fp16_t)i);
            if (!(sc[i] == want || (isnan(want) && isnan(sc[i]))))
                fail_msg("%s scores f16 0x%04x: %.9g vs %.9g", tb_isa_name(isas[ii]), i, sc[i], want);
        }
    }
    free(Kt); free(sc);
}

static void test_softmax(void **st) {
    (void)st;
    for (size_t ii = 0; ii < TB_ARRAY_LEN(isas); ii++) {
        if (!tb_kernels_for(isas[ii])) continue;
        const tb_att_kernels_t *ak = tb_att_kernels_for(isas[ii]);
        const char *name = tb_isa_name(isas[ii]);
        for (int n = 1; n <= 600; n += n < 40 ? 1 : 37) {
            static float x[640];
            static double ref[640];
            const float scale = urand(0.05f, 0.5f);
            double mx = -INFINITY, sum = 0.0;
            for (int i = 0; i < n + 8; i++) x[i] = i < n ? urand(-60.0f, 60.0f) : 1234.5f;
            for (int i = 0; i < n; i++) mx = fmax(mx, (double)x[i] * scale);
            for (int i = 0; i < n; i++) sum += ref[i] = exp((double)x[i] * scale - mx);
            ak->softmax(x, n, scale);
            for (int i = 0; i < n; i++)
                if (!(fabs(x[i] - ref[i] / sum) <= 2e-6 * ref[i] / sum + 1e-12))
                    fail_msg("%s softmax n %d [%d] %.9g vs %.9g", name, n, i, x[i], ref[i] / sum);
            for (int i = n; i < n + 8; i++)
                if (x[i] != 1234.5f) fail_msg("%s softmax wrote past n %d", name, n);
        }
    }
}

/* Two-value rows [0, y] (max 0, sum 1 + e^y in every tier's order): the
 * vector e^x gives exactly tb_op_exp's bits, clamps and underflow
 * included. */
static void test_softmax_exp_bits(void **st) {
    (void)st;
    for (size_t ii = 0; ii < TB_ARRAY_LEN(isas); ii++) {
        if (!tb_kernels_for(isas[ii])) continue;
        const tb_att_kernels_t *ak = tb_att_kernels_for(isas[ii]);
        for (int i = 0; i < 20000; i++) {
            const float y = i < 19000 ? urand(-90.0f, 0.0f) : -(float)(i - 19000) * 0.09f;
            float x[2] = {0.0f, y};
            ak->softmax(x, 2, 1.0f);
            const float e = tb_op_exp(y), inv = 1.0f / (1.0f + e);
            if (memcmp(&x[1], &(float){e * inv}, 4) || x[0] != inv)
                fail_msg("%s softmax e^%.9g: %.9g vs %.9g", tb_isa_name(isas[ii]), y, x[1], e * inv);
        }
    }
}

/* f32 bit patterns the conversion must get right: random words, and the
 * binary16 edges (largest finite and the overflow tie, smallest normal and
 * subnormal, their halfway points, ties to even) with neighbours. */
static uint32_t f16_case(int i) {
    static const uint32_t edge[] = {
        0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u,  /* 65504 .. 65520: last finite, tie to inf */
        0x38800000u, 0x387fffffu, 0x387fe000u, 0x387ff000u,  /* 2^-14 and below: normal/subnormal */
        0x33800000u, 0x33000000u, 0x33000001u, 0x32ffffffu,  /* 2^-24, its half (tie to 0), around */
        0x33c00000u, 0x3f801000u, 0x3f803000u, 0x3f800fffu,  /* 1.5 * 2^-24; 1 + half ulp ties */
        0x7f800000u, 0x7fc00000u, 0x7f800001u, 0x7fbfffffu,  /* inf, qNaN, sNaN payloads */
        0x00000001u, 0x00000000u, 0x4b000000u, 0x7f7fffffu,
    };
    const int ne = (int)TB_ARRAY_LEN(edge);
    if (i < 2 * ne) return edge[i % ne] | (i >= ne ? 0x80000000u : 0u);
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    if (i % 2) return (uint32_t)(rng >> 32);                   /* any word */
    /* near binary16's range: exponent 100..150 */
    return (uint32_t)((rng >> 32) & 0x807fffffu) | (uint32_t)(100 + (rng >> 20) % 51) << 23;
}

static void test_to_f16_bits(void **st) {
    (void)st;
    enum { N = 67 };
    for (size_t ii = 0; ii < TB_ARRAY_LEN(isas); ii++) {
        if (!tb_kernels_for(isas[ii])) continue;
        const tb_att_kernels_t *ak = tb_att_kernels_for(isas[ii]);
        int ci = 0;
        for (int rep = 0; rep < 600; rep++) {
            const int n = 1 + rep % N;
            float x[N];
            uint16_t h[N + 4];
            for (int i = 0; i < n; i++) { const uint32_t u = f16_case(ci++); memcpy(&x[i], &u, 4); }
            for (int i = 0; i < N + 4; i++) h[i] = 0xdead;
            ak->to_f16(x, h, n);
            for (int i = 0; i < n; i++) {
                uint32_t u;
                memcpy(&u, &x[i], 4);
                if (h[i] != tb_op_f16(x[i]))
                    fail_msg("%s to_f16(0x%08x) = 0x%04x, tb_op_f16 0x%04x", tb_isa_name(isas[ii]), u, h[i],
                             tb_op_f16(x[i]));
            }
            for (int i = n; i < N + 4; i++)
                if (h[i] != 0xdead) fail_msg("%s to_f16 wrote past n %d", tb_isa_name(isas[ii]), n);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scores),
        cmocka_unit_test(test_scores_f16_exact),
        cmocka_unit_test(test_wsum),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_softmax_exp_bits),
        cmocka_unit_test(test_to_f16_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
