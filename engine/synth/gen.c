/*
 * gen.c — seeded random weights of realistic scale, generated row by row.
 *
 * Float-like types draw from an approximately normal distribution
 * (Irwin–Hall sum of four uniforms, rescaled to unit variance) with
 * std 1/sqrt(fan_in); norms are 1 + N(0, 0.02). Block formats whose
 * quantizer would distort the statistics, or would be slow at 19 B
 * weights, are generated directly as blocks:
 *   TQ2_0 / TQ1_0  iid trits with P(0) = 100/256 ≈ 0.39, P(±1) ≈ 0.305,
 *                  per-block scale so the effective std is 1/sqrt(fan_in)
 *   Q4_K           uniform nibbles, 6-bit scales in [32, 63] with
 *                  min = scale and dmin = 7.5 d (zero-mean weights)
 * Everything else is quantized from the floats with tb_quantize_row.
 */
#include "synth/synth.h"
#include "quant/quant.h"

#include <math.h>

/* ===================================================================== */
/* PRNG: splitmix64 seeding, xoshiro256**                                 */
/* ===================================================================== */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void synth_rng_seed(synth_rng_t *r, uint64_t seed, uint64_t a, uint64_t b) {
    uint64_t x = seed;
    uint64_t h = splitmix64(&x);
    x = h ^ (a * 0xD1B54A32D192ED03ull);
    h = splitmix64(&x);
    x = h ^ (b * 0x8CB92BA72F3D8DD7ull);
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t v, int k) { return (v << k) | (v >> (64 - k)); }

uint64_t synth_rng_next(synth_rng_t *r) {
    uint64_t *s = r->s;
    const uint64_t out = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1). */
static inline float rng_unif(synth_rng_t *r) {
    return (float)(synth_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

/* Approximately N(0, 1): four 16-bit uniforms, centred, unit variance. */
static inline float rng_norm(synth_rng_t *r) {
    uint64_t u = synth_rng_next(r);
    uint32_t s = (uint32_t)(u & 0xFFFF) + (uint32_t)((u >> 16) & 0xFFFF) +
                 (uint32_t)((u >> 32) & 0xFFFF) + (uint32_t)(u >> 48);
    /* sum of 4 U(0,1) has mean 2, variance 1/3 */
    return ((float)s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

/* ===================================================================== */
/* Direct block generators                                                */
/* ===================================================================== */

#define TRIT_ZERO_BELOW 100   /* byte < 100 → trit 0: P = 100/256 ≈ 0.39 */

/* code (trit + 1) for a random byte: 1 when zero, else 0 or 2 by parity */
static inline uint8_t trit_code(uint8_t b) {
    return b < TRIT_ZERO_BELOW ? 1 : (uint8_t)((b & 1) << 1);
}

/* Per-block ternary scale for effective std 1/sqrt(fan_in), jittered ±20 %. */
static float trit_scale(synth_rng_t *r, int64_t fan_in) {
    const float keep = sqrtf(1.0f - TRIT_ZERO_BELOW / 256.0f);
    return (0.8f + 0.4f * rng_unif(r)) / (sqrtf((float)fan_in) * keep);
}

static void gen_tq2_0(synth_rng_t *r, block_tq2_0 *y, int64_t nb, int64_t fan_in) {
    for (int64_t i = 0; i < nb; i++) {
        for (int j = 0; j < QK_K / 4; j += 2) {
            uint64_t u = synth_rng_next(r);            /* 8 random bytes → 2 qs bytes */
            for (int k = 0; k < 2; k++, u >>= 32)
                y[i].qs[j + k] = (uint8_t)(trit_code((uint8_t)u) | trit_code((uint8_t)(u >> 8)) << 2 |
                                           trit_code((uint8_t)(u >> 16)) << 4 |
                                           trit_code((uint8_t)(u >> 24)) << 6);
        }
        y[i].d = tb_fp32_to_fp16(trit_scale(r, fan_in));
    }
}

/* k random trit codes, base-3, most significant first */
static inline unsigned trits_base3(synth_rng_t *r, int k) {
    uint64_t u = synth_rng_next(r);
    unsigned v = 0;
    for (int i = 0; i < k; i++, u >>= 8) v = v * 3 + trit_code((uint8_t)u);
    return v;
}

static void gen_tq1_0(synth_rng_t *r, block_tq1_0 *y, int64_t nb, int64_t fan_in) {
    for (int64_t i = 0; i < nb; i++) {
        for (size_t j = 0; j < sizeof y[i].qs; j++)           /* 5 trits per byte */
            y[i].qs[j] = (uint8_t)((trits_base3(r, 5) * 256 + 242) / 243);
        for (size_t j = 0; j < sizeof y[i].qh; j++)           /* 4 trits, shifted up */
            y[i].qh[j] = (uint8_t)((trits_base3(r, 4) * 3 * 256 + 242) / 243);
        y[i].d = tb_fp32_to_fp16(trit_scale(r, fan_in));
    }
}

static void gen_q4_K(synth_rng_t *r, block_q4_K *y, int64_t nb, int64_t fan_in) {
    const float target = 1.0f / sqrtf((float)fan_in);
    for (int64_t i = 0; i < nb; i++) {
        uint8_t sc[8];
        uint64_t u = synth_rng_next(r);
        for (int j = 0; j < 8; j++, u >>= 8) sc[j] = (uint8_t)(32 + (u & 31));
        /* w = d*sc*q - dmin*m with m = sc, dmin = 7.5 d → d*sc*(q - 7.5) */
        const float d = target * (0.8f + 0.4f * rng_unif(r)) / (47.5f * 4.61f);
        y[i].d = tb_fp32_to_fp16(d);
        y[i].dmin = tb_fp32_to_fp16(7.5f * d);
        for (int j = 0; j < 4; j++) {
            y[i].scales[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
            y[i].scales[j + 4] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);   /* mins = scales */
            y[i].scales[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | (sc[j + 4] & 0xF) << 4);
        }
        for (int j = 0; j < QK_K / 2; j += 8) {
            u = synth_rng_next(r);
            memcpy(&y[i].qs[j], &u, 8);
        }
    }
}

/* ===================================================================== */
/* Rows                                                                   */
/* ===================================================================== */

int synth_fill_rows(const synth_tensor_t *t, synth_rng_t *r, int64_t rows, void *dst,
                    float *scratch) {
    const int64_t n = t->ne[0];
    const size_t row_bytes = tb_type_row_bytes(t->type, n);
    const int64_t nb = n / tb_type_block_elems(t->type);
    uint8_t *out = dst;   // (rows, row_bytes); scratch: (n)
    for (int64_t ir = 0; ir < rows; ir++, out += row_bytes) {
        if (t->init == SYNTH_INIT_WEIGHT) {
            switch (t->type) {
            case TB_TYPE_TQ2_0: gen_tq2_0(r, (block_tq2_0 *)out, nb, n); continue;
            case TB_TYPE_TQ1_0: gen_tq1_0(r, (block_tq1_0 *)out, nb, n); continue;
            case TB_TYPE_Q4_K: gen_q4_K(r, (block_q4_K *)out, nb, n); continue;
            default: break;
            }
        }
        /* row of floats, then store or quantize: (n) */
        if (t->init == SYNTH_INIT_NORM) {
            for (int64_t i = 0; i < n; i++) scratch[i] = 1.0f + 0.02f * rng_norm(r);
        } else {
            const float sd = 1.0f / sqrtf((float)n);
            for (int64_t i = 0; i < n; i++) scratch[i] = sd * rng_norm(r);
        }
        int rc;
        switch (t->type) {
        case TB_TYPE_F32: memcpy(out, scratch, (size_t)n * sizeof(float)); break;
        case TB_TYPE_F16:
            for (int64_t i = 0; i < n; i++) ((tb_fp16_t *)out)[i] = tb_fp32_to_fp16(scratch[i]);
            break;
        case TB_TYPE_BF16:
            for (int64_t i = 0; i < n; i++) ((tb_bf16_t *)out)[i] = tb_fp32_to_bf16(scratch[i]);
            break;
        default:
            if ((rc = tb_quantize_row(t->type, scratch, out, n)) != TB_OK)
                return tb_err_prefix(rc, "synth: tensor %s", t->name);
        }
    }
    return TB_OK;
}
