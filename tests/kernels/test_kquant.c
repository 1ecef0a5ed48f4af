/*
 * test_kquant.c — Q4_K and Q6_K kernels on blocks the quantizer never
 * writes, in every x86 variant this machine can run.
 *
 * test_kernels.c covers the formats on quantizer output in the active
 * variant of each tier. Here:
 *   - tb_q4_K_unpack_scales (the word-parallel unpack all tiers use) equals
 *     tb_q4_K_scale_min on random and saturated scale bytes;
 *   - blocks of random bytes (every 4/6-bit code, every 6-bit scale and
 *     min, negative Q6_K scales down to -128) against Q8_K activations of
 *     random bytes including -128 and +127 (bsums recomputed), plus the
 *     saturation corners (all codes maximal, all activations -128 or 127):
 *     vec_dot of every tier within budget of _ref, and gemm bit-identical
 *     to matvec per row;
 *   - the same on the AVX-512 tier's non-VNNI variant, which the dispatcher
 *     never picks on a VNNI machine (built here with tb_cpu.avx512vnni
 *     cleared);
 *   - a llama.cpp-style file (Q4_K token_embd, Q6_K output head, made by
 *     tb_quantize_model_types from a synthesized F32 llama-tiny) loads and runs:
 *     at the best tier, prefill logits are bit-identical to token-by-token
 *     decode logits, and agree with the ref tier's (relative L2 budget).
 * Budget: per term |w a| is split into its scale and offset parts, both
 * of which are summed separately by the SIMD tiers (d*sc*q and dmin*m for
 * Q4_K; d*sc*q and 32*d*sc for Q6_K):
 *   |y - y_ref| <= (n_blocks + 64) * FLT_EPSILON * sum_j (|P_j| + |O_j|) |a_j|
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels/kernels.h"
#include "kernels/kquant_scales.h"

/* Logits of the best tier vs the ref tier on the same file: only float
 * summation order differs, but where that changes the rounding of a
 * quantized activation, logits move by whole quantization steps. Measured
 * 4.4e-7 for this file (llama-tiny, F32 projections, Q4_K embeddings, Q6_K
 * head); neighbouring variants reach 1.5e-3 (F32 embeddings, Q6_K or Q4_0
 * head). Budget 1e-2. (Q8_0 projections with a quantized token_embd of
 * any type, Q8_0 included, differ by ~9e-3 across tiers: not a K-kernel
 * effect, a Q6_K head on Q8_0 projections gives 2e-7.) */
#define BUDGET_TIER_REL_L2 1e-2

static uint64_t rng_s = 0x0ddba11cafef00dull;
static uint64_t rnd(void) {
    uint64_t z = (rng_s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)((double)(rnd() >> 11) / 9007199254740992.0); }

static void *xalloc(size_t n) {
    void *p = malloc(n);
    assert_non_null(p);
    return p;
}

/* ---------------------------------------------------------------------- */
/* Random blocks                                                            */
/* ---------------------------------------------------------------------- */

enum { FILL_RANDOM, FILL_MAX };   /* random bytes; every code at its maximum */

/* n/256 blocks of type t with random (or all-ones) code and scale bytes and
 * finite fp16 super-scales. */
static void fill_weights(tb_type_t t, void *w, int64_t n, int mode) {
    const int64_t nb = n / QK_K;
    uint8_t *p = w;
    for (size_t i = 0; i < tb_type_row_bytes(t, n); i++) p[i] = mode == FILL_MAX ? 0xFF : (uint8_t)rnd();
    for (int64_t i = 0; i < nb; i++) {
        if (t == TB_TYPE_Q4_K) {
            block_q4_K *b = (block_q4_K *)w + i;
            b->d = tb_fp32_to_fp16(frand(0.001f, 0.1f));
            b->dmin = tb_fp32_to_fp16(frand(0.001f, 0.1f));
        } else {
            block_q6_K *b = (block_q6_K *)w + i;
            b->d = tb_fp32_to_fp16(frand(-0.05f, 0.05f));
            if (mode == FILL_MAX) memset(b->scales, 0x80, sizeof b->scales);   /* -128 */
        }
    }
}

/* n/256 Q8_K blocks: qs random in [-128, 127] (or all `v`), consistent bsums. */
static void fill_act(void *a, int64_t n, int mode, int v) {
    block_q8_K *y = a;
    for (int64_t i = 0; i < n / QK_K; i++) {
        y[i].d = frand(-0.02f, 0.02f);
        for (int j = 0; j < QK_K; j++) y[i].qs[j] = (int8_t)(mode == FILL_MAX ? v : (int)(rnd() & 0xFF) - 128);
        for (int g = 0; g < QK_K / 16; g++) {
            int s = 0;
            for (int k = 0; k < 16; k++) s += y[i].qs[16 * g + k];
            y[i].bsums[g] = (int16_t)s;
        }
    }
}

/* sum_j (|P_j| + |O_j|) * |a_j|: the magnitudes the kernels add up. */
static double term_sum(tb_type_t t, const void *w, const void *a, int64_t n) {
    const block_q8_K *y = a;
    double s = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        for (int e = 0; e < QK_K; e++) {
            double p, o, av = fabs((double)y[i].d * y[i].qs[e]);
            if (t == TB_TYPE_Q4_K) {
                const block_q4_K *b = (const block_q4_K *)w + i;
                uint8_t sc, m;
                tb_q4_K_scale_min(e / 32, b->scales, &sc, &m);
                const int k = e / 64, l = e % 32;
                const int q = (e % 64 < 32) ? (b->qs[32 * k + l] & 15) : (b->qs[32 * k + l] >> 4);
                p = tb_fp16_to_fp32(b->d) * sc * q;
                o = tb_fp16_to_fp32(b->dmin) * m;
            } else {
                const block_q6_K *b = (const block_q6_K *)w + i;
                p = tb_fp16_to_fp32(b->d) * b->scales[e / 16] * 63.0;   /* |q| <= 63 bound */
                o = tb_fp16_to_fp32(b->d) * b->scales[e / 16] * 32.0;
            }
            s += (fabs(p) + fabs(o)) * av;
        }
    }
    return s;
}

/* ---------------------------------------------------------------------- */
/* Checks                                                                   */
/* ---------------------------------------------------------------------- */

/* One tier table `k` (named `name`) on format t: vec_dot against _ref on
 * `reps` random problems and the saturation corners; gemm == matvec. */
static void check_table(const tb_kernels_t *k, const char *name, tb_type_t t) {
    const tb_type_traits_t *tr = tb_type_traits(t);
    for (int rep = 0; rep < 24; rep++) {
        const int64_t n = QK_K * (1 + rep % 5), rows = 7 + rep % 4, nt = 1 + rep % 6;
        const int mode = rep < 20 ? FILL_RANDOM : FILL_MAX;
        const int v = rep == 20 ? -128 : rep == 21 ? 127 : rep == 22 ? -1 : 1;
        const size_t ws = tb_type_row_bytes(t, n), as = tb_type_row_bytes(TB_TYPE_Q8_K, n);
        uint8_t *W = xalloc(ws * (size_t)rows), *A = xalloc(as * (size_t)nt);   // (rows, n), (nt, n)
        for (int64_t r = 0; r < rows; r++) fill_weights(t, W + ws * (size_t)r, n, mode);
        for (int64_t i = 0; i < nt; i++) fill_act(A + as * (size_t)i, n, mode, v);
        float *Y = xalloc(sizeof(float) * (size_t)(nt * rows)), *y = xalloc(sizeof(float) * (size_t)rows);
        k->t[t].gemm(W, ws, A, as, nt, Y, rows, 0, rows, n);
        for (int64_t i = 0; i < nt; i++) {
            const uint8_t *a = A + as * (size_t)i;
            k->t[t].matvec(W, ws, a, y, 0, rows, n);
            for (int64_t r = 0; r < rows; r++) {
                const uint8_t *w = W + ws * (size_t)r;
                float want = NAN, got = NAN;
                tr->vec_dot_ref(n, &want, w, a);
                k->t[t].vec_dot(n, &got, w, a);
                double tol = (double)(n / QK_K + 64) * FLT_EPSILON * term_sum(t, w, a, n) + 1e-30;
                if (!(fabs((double)got - want) <= tol))
                    fail_msg("%s %s rep %d (n %lld): vec_dot %.9g, _ref %.9g (budget %.3g)", name, tr->name, rep,
                             (long long)n, got, want, tol);
                if (memcmp(&y[r], &Y[i * rows + r], sizeof(float)) != 0 || !(fabs((double)y[r] - want) <= tol))
                    fail_msg("%s %s rep %d token %lld row %lld: matvec %.9g, gemm %.9g, _ref %.9g", name, tr->name,
                             rep, (long long)i, (long long)r, y[r], Y[i * rows + r], want);
            }
        }
        free(W); free(A); free(Y); free(y);
    }
}

static void test_unpack_scales(void **state) {
    (void)state;
    for (int rep = 0; rep < 20000; rep++) {
        uint8_t s[K_SCALE_SIZE], out[16];
        for (int i = 0; i < K_SCALE_SIZE; i++) s[i] = rep == 0 ? 0xFF : rep == 1 ? 0 : (uint8_t)rnd();
        tb_q4_K_unpack_scales(s, out);
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            tb_q4_K_scale_min(j, s, &sc, &m);
            if (out[j] != sc || out[8 + j] != m)
                fail_msg("rep %d sub-block %d: unpack gives (%u, %u), tb_q4_K_scale_min (%u, %u)", rep, j, out[j],
                         out[8 + j], sc, m);
        }
    }
}

static void test_tiers_random_blocks(void **state) {
    (void)state;
    for (int isa = TB_ISA_GENERIC; isa <= TB_ISA_NEON; isa++) {
        const tb_kernels_t *k = tb_kernels_for((tb_isa_t)isa);
        if (!k) continue;
        check_table(k, tb_isa_name(k->isa), TB_TYPE_Q4_K);
        check_table(k, tb_isa_name(k->isa), TB_TYPE_Q6_K);
    }
}

/* The AVX-512 variant the dispatcher did not pick (non-VNNI on a VNNI CPU). */
static void test_avx512_other_variant(void **state) {
    (void)state;
#if defined(__x86_64__)
    const tb_kernels_t *k = tb_kernels_for(TB_ISA_AVX512);
    if (!k) {
        skip();
        return;
    }
    tb_kernels_t other = *k;
    const bool saved = tb_cpu.avx512vnni;
    tb_cpu.avx512vnni = !saved;
    if (tb_cpu.avx512vnni) {   /* never run VNNI code on a CPU without it */
        tb_cpu.avx512vnni = saved;
        skip();
        return;
    }
    tb_kernels_fill_avx512(&other);
    tb_cpu.avx512vnni = saved;
    check_table(&other, "avx512 (no vnni)", TB_TYPE_Q4_K);
    check_table(&other, "avx512 (no vnni)", TB_TYPE_Q6_K);
#else
    skip();
#endif
}

/* Logits (n_tok, n_vocab) of `toks` on model m at tier isa: all at once
 * (prefill) when `batch`, else one token per eval. */
static float *run_logits(const tb_model_t *m, tb_isa_t isa, const int32_t *toks, int n_tok, bool batch) {
    assert_int_equal(tb_isa_set(isa), TB_OK);
    const int32_t nv = tb_model_n_vocab(m);
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = 64;
    sp.n_threads = 2;
    tb_session_t *s;
    assert_int_equal(tb_session_new(m, &sp, &s), TB_OK);
    float *out = xalloc(sizeof(float) * (size_t)(n_tok * nv));   // (n_tok, n_vocab)
    if (batch) {
        assert_int_equal(tb_session_eval(s, toks, n_tok, true), TB_OK);
        for (int i = 0; i < n_tok; i++) memcpy(out + (size_t)i * nv, tb_session_logits(s, i), sizeof(float) * (size_t)nv);
    } else {
        for (int i = 0; i < n_tok; i++) {
            assert_int_equal(tb_session_eval(s, &toks[i], 1, false), TB_OK);
            memcpy(out + (size_t)i * nv, tb_session_logits(s, -1), sizeof(float) * (size_t)nv);
        }
    }
    tb_session_free(s);
    return out;
}

static void test_llama_cpp_layout(void **state) {
    (void)state;
    char dir[] = "/tmp/tb_kquant_XXXXXX", src[64], dst[64];
    assert_non_null(mkdtemp(dir));
    snprintf(src, sizeof src, "%s/f32.gguf", dir);
    snprintf(dst, sizeof dst, "%s/k.gguf", dir);
    tb_synth_params_t sp = {.preset = "llama-tiny", .type = -1, .seed = 7};
    assert_int_equal(tb_synth_model(&sp, src), TB_OK);
    assert_int_equal(tb_quantize_model_types(src, dst, TB_TYPE_F32, TB_TYPE_Q4_K, TB_TYPE_Q6_K, NULL, NULL), TB_OK);
    tb_model_t *m;
    assert_int_equal(tb_model_load(dst, &m), TB_OK);
    const tb_gguf_t *g = tb_model_gguf(m);
    static const struct { const char *name; tb_type_t type; } want[] = {
        {"token_embd.weight", TB_TYPE_Q4_K}, {"output.weight", TB_TYPE_Q6_K},
        {"blk.0.attn_q.weight", TB_TYPE_F32},
    };
    for (size_t i = 0; i < TB_ARRAY_LEN(want); i++) {
        tb_gguf_tensor_t t;
        int64_t at = tb_gguf_find_tensor(g, want[i].name);
        assert_true(at >= 0);
        assert_int_equal(tb_gguf_tensor(g, at, &t), TB_OK);
        if (t.type != want[i].type)
            fail_msg("%s is %s, expected %s", want[i].name, tb_type_name(t.type), tb_type_name(want[i].type));
    }
    enum { N_TOK = 9 };
    const int32_t toks[N_TOK] = {1, 17, 300, 42, 511, 3, 99, 250, 7};
    const int32_t nv = tb_model_n_vocab(m);
    const tb_isa_t start = tb_isa_active();
    float *pre = run_logits(m, tb_isa_best(), toks, N_TOK, true);
    float *dec = run_logits(m, tb_isa_best(), toks, N_TOK, false);
    float *ref = run_logits(m, TB_ISA_REF, toks, N_TOK, false);
    tb_isa_set(start);
    double worst = 0;
    for (int i = 0; i < N_TOK; i++) {
        double d2 = 0, r2 = 0;
        for (int32_t v = 0; v < nv; v++) {
            const size_t k = (size_t)i * nv + v;
            if (memcmp(&pre[k], &dec[k], sizeof(float)) != 0)
                fail_msg("token %d logit %d: prefill %.9g != decode %.9g", i, v, pre[k], dec[k]);
            d2 += ((double)dec[k] - ref[k]) * ((double)dec[k] - ref[k]);
            r2 += (double)ref[k] * ref[k];
        }
        assert_true(r2 > 0);
        worst = fmax(worst, sqrt(d2 / r2));
    }
    print_message("%s vs ref: worst relative L2 over %d positions %.3g (budget %.3g)\n", tb_isa_name(tb_isa_best()),
                  N_TOK, worst, BUDGET_TIER_REL_L2);
    if (!(worst <= BUDGET_TIER_REL_L2)) fail_msg("relative L2 %.3g over budget %.3g", worst, BUDGET_TIER_REL_L2);
    free(pre); free(dec); free(ref);
    tb_model_free(m);
    assert_int_equal(unlink(src), 0);
    assert_int_equal(unlink(dst), 0);
    assert_int_equal(rmdir(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unpack_scales),
        cmocka_unit_test(test_tiers_random_blocks),
        cmocka_unit_test(test_avx512_other_variant),
        cmocka_unit_test(test_llama_cpp_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
