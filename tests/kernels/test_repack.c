/*
 * test_repack.c — load-time repacked layouts (kernels/repack.c), checkasm
 * style, for every weight type whose active tier has a `repack`:
 *
 *   registration  copies exactly the tier's padded size; lookup finds each
 *                 matrix of a stack and nothing else (rows inside a matrix,
 *                 other types, other tiers, released owners);
 *   matvec        on a registered matrix within the format's error budget
 *                 of the _ref with the file bytes overwritten afterwards
 *                 (so the copy is what is read), rows outside [r0, r1)
 *                 untouched (NaN), for row counts that are not multiples of
 *                 the group and ranges that cut groups;
 *   gemm          every (token, row) bit-identical to the repacked matvec
 *                 (prefill == decode) and within budget;
 *   prefetch      matvec bit-identical at software prefetch distances 0,
 *                 64 and TB_PREFETCH_MAX (tb_prefetch_set);
 *   tb_matmul     1 and 2 threads bit-identical on a registered matrix;
 *   Q4_0 shapes   32-element blocks: columns not multiples of QK_K, odd
 *                 block counts, 1/15/17-row matrices, and rows past the
 *                 repacked kernels' length limit (file layout fallback).
 *   Q8_0 shapes   the same for Q8_0, plus hand-made extremes (codes and
 *                 activations at -128/+127, a different scale per row).
 *   TQ1_0         odd block counts (1, 3, 5, 7, 22 blocks: the 5-bit layout
 *                 pairs blocks), 1/15/17/33-row matrices, 64 blocks and
 *                 65 (file-layout fallback); every byte value 0..255 in qs
 *                 and qh (the format decodes bytes >= 243 too), activations
 *                 at -128/+127, 1..9 tokens, ranges that cut groups.
 *   TQ2_0/TQ1_0   on every tier that repacks them (AVX2: 8-row groups,
 *                 x86_ternary_rp8.h): shapes, fallback and arbitrary code
 *                 bytes (TQ2_0 code 3 too) with extreme activations.
 * On a machine whose best tier repacks nothing, registration must be a
 * no-op (0 extra bytes) and the test says so.
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

#include <cmocka.h>

#include "kernels/kernels.h"

static const tb_type_t types[] = {TB_TYPE_TQ2_0, TB_TYPE_TQ1_0, TB_TYPE_Q4_0, TB_TYPE_Q8_0,
                                  TB_TYPE_Q4_K, TB_TYPE_Q6_K, TB_TYPE_F16, TB_TYPE_F32, TB_TYPE_BF16};

#define KERN_RNG_SEED 0x5eed5eed12345678ull
#include "kern_rng.h"

/* Quantize (rows, n) random f32 values into type t (ref quantizer). */
static void *rand_rows(tb_type_t t, int64_t rows, int64_t n) {
    size_t rb = tb_type_row_bytes(t, n);
    float *x = xalloc(sizeof(float) * (size_t)n);   // (n)
    uint8_t *q = xalloc(rb * (size_t)rows);         // (rows, row bytes)
    for (int64_t r = 0; r < rows; r++) {
        float scale = (r % 7 == 3) ? 20.0f : 1.0f;
        for (int64_t j = 0; j < n; j++) x[j] = frand() * scale;
        tb_type_traits(t)->from_float_ref(x, q + rb * (size_t)r, n);
    }
    free(x);
    return q;
}

/* Error budget of one dot (see test_kernels.c): (blocks + 64) eps S. */
static double budget(tb_type_t wt, const void *w, const void *a, int64_t n) {
    const tb_type_traits_t *tr = tb_type_traits(wt);
    float *wf = xalloc(sizeof(float) * (size_t)n), *af = xalloc(sizeof(float) * (size_t)n);
    tr->to_float_ref(w, wf, n);
    tb_type_traits(tr->vec_dot_type)->to_float_ref(a, af, n);
    double S = 0;
    for (int64_t j = 0; j < n; j++) S += fabs((double)wf[j] * af[j]);
    free(wf);
    free(af);
    double terms = tr->is_quant ? (double)(n / tr->blck) + 64 : (double)n + 64;
    return terms * FLT_EPSILON * S + 1e-30;
}

static void fill_nan(float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = NAN;
}

/* NT rows of Q8_K activations (nb blocks each, row stride as): token 0 all
 * -128, token 1 all +127, the rest random; d = 1 for the first `ones`
 * tokens, small random after; bsums consistent. */
static void fill_q8_K_extremes(uint8_t *A, size_t as, int nt, int64_t nb, int ones) {
    for (int t = 0; t < nt; t++)
        for (int64_t i = 0; i < nb; i++) {
            block_q8_K *y = (block_q8_K *)(A + as * (size_t)t) + i;
            y->d = t < ones ? 1.0f : 0.01f * frand();
            for (int j = 0; j < QK_K; j++)
                y->qs[j] = (int8_t)(t == 0 ? -128 : t == 1 ? 127 : (int)(rnd() & 0xFF) - 128);
            for (int g = 0; g < QK_K / 16; g++) {
                int sum = 0;
                for (int j = 0; j < 16; j++) sum += y->qs[16 * g + j];
                y->bsums[g] = (int16_t)sum;
            }
        }
}

/* W (rows x n of type wt, stride ws) against nt activation rows A (stride
 * as) through the active tier's repacked copy, the file bytes poisoned
 * after registering: matvec within budget of the _ref on [r0, r1) and NaN
 * left outside, gemm of 1..nt tokens bit-identical to matvec. Frees W and
 * A. `what` labels failures. */
static void check_registered(tb_type_t wt, uint8_t *W, size_t ws, int64_t rows, int64_t n, uint8_t *A,
                             size_t as, int nt, int64_t r0, int64_t r1, const char *what) {
    const tb_type_kernels_t *e = &tb_kernels()->t[wt];
    const tb_kernels_t *ref = tb_kernels_for(TB_ISA_REF);
    const size_t cells = (size_t)nt * (size_t)rows;
    float *want = xalloc(sizeof(float) * cells), *y = xalloc(sizeof(float) * cells);   // (nt, rows)
    float *Y = xalloc(sizeof(float) * cells);                                          // (nt, rows)
    double *tol = xalloc(sizeof(double) * cells);                                      // (nt, rows)
    for (int t = 0; t < nt; t++)
        for (int64_t r = 0; r < rows; r++) {
            const uint8_t *wr = W + ws * (size_t)r, *ar = A + as * (size_t)t;
            ref->t[wt].vec_dot(n, &want[t * rows + r], wr, ar);
            tol[t * rows + r] = budget(wt, wr, ar, n);
        }
    const int owner = 0;
    assert_int_equal(tb_repack_register(&owner, wt, W, ws, rows, n, 1, NULL, NULL), TB_OK);
    assert_non_null(tb_repack_lookup(W, ws, tb_isa_active(), wt));
    memset(W, 0x5A, ws * (size_t)rows);   /* only the copy may be read from here on */
    for (int t = 0; t < nt; t++) {
        float *yt = y + t * rows;   // (rows)
        fill_nan(yt, (size_t)rows);
        e->matvec(W, ws, A + as * (size_t)t, yt, r0, r1, n);
        for (int64_t r = 0; r < rows; r++) {
            if (r < r0 || r >= r1) {
                if (!isnan(yt[r])) fail_msg("%s: matvec wrote row %lld outside [%lld, %lld)", what, (long long)r,
                                            (long long)r0, (long long)r1);
            } else if (!(fabs((double)yt[r] - want[t * rows + r]) <= tol[t * rows + r])) {
                fail_msg("%s (%lld x %lld, tier %s) token %d row %lld: got %.9g want %.9g (budget %.3g)", what,
                         (long long)rows, (long long)n, tb_isa_name(tb_isa_active()), t, (long long)r, yt[r],
                         want[t * rows + r], tol[t * rows + r]);
            }
        }
    }
    /* the software prefetch distance and its L2 stage change no result:
     * matvec again at 0, one line and the largest distance, each with the
     * L2 stage off and on, bit for bit */
    const size_t pf0 = tb_prefetch_bytes();
    const bool l20 = tb_prefetch_l2();
    static const size_t pfs[] = {0, 64, TB_PREFETCH_MAX};
    for (size_t p = 0; p < 2 * TB_ARRAY_LEN(pfs); p++) {
        assert_int_equal(tb_prefetch_set(pfs[p / 2]), TB_OK);
        tb_prefetch_set_l2(p % 2);
        for (int t = 0; t < nt; t++) {
            fill_nan(Y, (size_t)rows);
            e->matvec(W, ws, A + as * (size_t)t, Y, r0, r1, n);
            for (int64_t r = r0; r < r1; r++)
                if (memcmp(&Y[r], &y[t * rows + r], sizeof *Y) != 0)
                    fail_msg("%s: matvec at prefetch %zu (L2 stage %d) token %d row %lld %.9g != %.9g at %zu", what,
                             pfs[p / 2], (int)(p % 2), t, (long long)r, Y[r], y[t * rows + r], pf0);
        }
    }
    assert_int_equal(tb_prefetch_set(pf0), TB_OK);
    tb_prefetch_set_l2(l20);
    for (int k = 1; k <= nt; k++) {
        fill_nan(Y, cells);
        e->gemm(W, ws, A, as, k, Y, rows, r0, r1, n);
        for (int t = 0; t < k; t++)
            for (int64_t r = 0; r < rows; r++) {
                const float g = Y[t * rows + r], m = y[t * rows + r];
                if (r < r0 || r >= r1) {
                    if (!isnan(g)) fail_msg("%s: gemm wrote row %lld outside the range", what, (long long)r);
                } else if (memcmp(&g, &m, sizeof g) != 0) {
                    fail_msg("%s: gemm (%d tokens) token %d row %lld %.9g != matvec %.9g", what, k, t, (long long)r,
                             g, m);
                }
            }
    }
    tb_repack_release(&owner);
    free(want); free(y); free(Y); free(tol);
    free(A);
    free(W);
}

/* One registered stack of 2 matrices of rows x n checked through the
 * active table; false when the tier has no repack for wt (registration
 * then checked as a no-op). With `poison` the file bytes are overwritten
 * after registering, so only the repacked copy can give right results;
 * without it (rows longer than a tier's repacked kernels take, which then
 * read the file layout) the same checks run on intact file bytes. */
static bool check_shape(tb_type_t wt, int64_t rows, int64_t n, bool poison) {
    const tb_kernels_t *k = tb_kernels();
    const tb_type_kernels_t *e = &k->t[wt];
    static const int64_t tok_counts[] = {1, 3, 8, 9, 17};
    const tb_kernels_t *ref = tb_kernels_for(TB_ISA_REF);
    const int64_t n_mat = 2;
    const size_t ws = tb_type_row_bytes(wt, n), as = tb_act_row_bytes(wt, n);
    uint8_t *W = rand_rows(wt, rows * n_mat, n);   // (n_mat, rows, n)
    const int owner = 0;
    size_t extra = 1;
    assert_int_equal(tb_repack_register(&owner, wt, W, ws, rows, n, n_mat, NULL, &extra), TB_OK);
    if (!e->repack) {
        assert_int_equal(extra, 0);
        free(W);
        return false;
    }
    assert_int_equal(extra, tb_repack_entry_bytes(e, ws, rows) * (size_t)n_mat);
    /* lookup: matrix starts only, this tier and type only */
    assert_non_null(tb_repack_lookup(W, ws, k->isa, wt));
    assert_non_null(tb_repack_lookup(W + ws * (size_t)rows, ws, k->isa, wt));
    if (rows > 1) assert_null(tb_repack_lookup(W + ws, ws, k->isa, wt));
    assert_null(tb_repack_lookup(W + ws * (size_t)(rows * n_mat), ws, k->isa, wt));
    assert_null(tb_repack_lookup(W, ws, TB_ISA_GENERIC, wt));
    assert_null(tb_repack_lookup(W, ws + 1, k->isa, wt));

    const int64_t nt_max = 17;
    uint8_t *A = rand_rows(tb_type_traits(wt)->vec_dot_type, nt_max, n);   // (nt_max, n)
    for (int64_t m = 0; m < n_mat; m++) {
        const uint8_t *Wm = W + (size_t)m * ws * (size_t)rows;
        float *want = xalloc(sizeof(float) * (size_t)(nt_max * rows));   // (nt_max, rows)
        double *tol = xalloc(sizeof(double) * (size_t)(nt_max * rows));  // (nt_max, rows)
        for (int64_t t = 0; t < nt_max; t++)
            for (int64_t r = 0; r < rows; r++) {
                ref->t[wt].vec_dot(n, &want[t * rows + r], Wm + ws * (size_t)r, A + as * (size_t)t);
                tol[t * rows + r] = budget(wt, Wm + ws * (size_t)r, A + as * (size_t)t, n);
            }
        /* from here on only the repacked copy may be read */
        if (poison) memset(W + (size_t)m * ws * (size_t)rows, 0xA5, ws * (size_t)rows);
        const int64_t r0 = irand(0, (int)rows / 3), r1 = rows - irand(0, (int)rows / 3);
        float *y = xalloc(sizeof(float) * (size_t)(nt_max * rows));   // (nt_max, rows)
        for (int64_t t = 0; t < nt_max; t++) {
            fill_nan(y + t * rows, (size_t)rows);
            e->matvec(Wm, ws, A + as * (size_t)t, y + t * rows, r0, r1, n);
            for (int64_t r = 0; r < rows; r++) {
                float v = y[t * rows + r];
                if (r < r0 || r >= r1) {
                    if (!isnan(v)) fail_msg("%s: repacked matvec wrote row %lld outside [%lld, %lld)",
                                            tb_type_name(wt), (long long)r, (long long)r0, (long long)r1);
                } else if (!(fabs((double)v - want[t * rows + r]) <= tol[t * rows + r])) {
                    fail_msg("%s: repacked matvec (%lld x %lld, matrix %lld) row %lld: got %.9g want %.9g",
                             tb_type_name(wt), (long long)rows, (long long)n, (long long)m, (long long)r, v,
                             want[t * rows + r]);
                }
            }
        }
        for (size_t c = 0; c < TB_ARRAY_LEN(tok_counts); c++) {
            const int64_t nt = tok_counts[c], ldy = rows + 5;
            float *Y = xalloc(sizeof(float) * (size_t)(nt * ldy));   // (nt, ldy)
            fill_nan(Y, (size_t)(nt * ldy));
            e->gemm(Wm, ws, A, as, nt, Y, ldy, r0, r1, n);
            for (int64_t t = 0; t < nt; t++)
                for (int64_t r = 0; r < ldy; r++) {
                    float v = Y[t * ldy + r];
                    if (r < r0 || r >= r1) {
                        if (!isnan(v)) fail_msg("%s: repacked gemm wrote token %lld row %lld outside [%lld, %lld)",
                                                tb_type_name(wt), (long long)t, (long long)r, (long long)r0,
                                                (long long)r1);
                    } else if (memcmp(&v, &y[t * rows + r], sizeof v) != 0) {
                        fail_msg("%s: repacked gemm (%lld tokens) token %lld row %lld: %.9g is not "
                                 "bit-identical to matvec's %.9g", tb_type_name(wt), (long long)nt,
                                 (long long)t, (long long)r, v, y[t * rows + r]);
                    }
                }
            free(Y);
        }
        free(y);
        free(want);
        free(tol);
    }
    /* the public API on a registered matrix: 1 and 2 threads agree */
    tb_pool_t *p1, *p2;
    assert_int_equal(tb_pool_new(1, &p1), TB_OK);
    assert_int_equal(tb_pool_new(2, &p2), TB_OK);
    float *X = xalloc(sizeof(float) * (size_t)(5 * n));   // (5, n)
    for (int64_t j = 0; j < 5 * n; j++) X[j] = frand();
    float *Y1 = xalloc(sizeof(float) * (size_t)(5 * rows)), *Y2 = xalloc(sizeof(float) * (size_t)(5 * rows));
    assert_int_equal(tb_matmul(p1, wt, W, rows, n, X, 5, Y1), TB_OK);
    assert_int_equal(tb_matmul(p2, wt, W, rows, n, X, 5, Y2), TB_OK);
    assert_memory_equal(Y1, Y2, sizeof(float) * (size_t)(5 * rows));
    tb_pool_free(p1);
    tb_pool_free(p2);
    free(X); free(Y1); free(Y2);

    tb_repack_release(&owner);
    assert_null(tb_repack_lookup(W, ws, k->isa, wt));
    free(A);
    free(W);
    return true;
}

/* check_shape for several row counts (not all multiples of the group),
 * each with a random multiple of QK_K columns. */
static void check_type(tb_type_t wt) {
    static const int64_t row_counts[] = {1, 16, 37, 53};
    for (size_t rc = 0; rc < TB_ARRAY_LEN(row_counts); rc++)
        if (!check_shape(wt, row_counts[rc], QK_K * irand(1, 5), true)) return;
}

static void test_repacked_kernels(void **state) {
    (void)state;
    int n_repacked = 0;
    for (size_t i = 0; i < TB_ARRAY_LEN(types); i++) {
        if (tb_kernels()->t[types[i]].repack) n_repacked++;
        check_type(types[i]);
    }
    if (!n_repacked) print_message("tier %s repacks no type: registration checked as a no-op\n",
                                   tb_isa_name(tb_isa_active()));
}

/* Q4_0 (32-element blocks), on every tier this CPU runs that repacks it
 * (AVX2: 8-row groups, AVX-512 VNNI: 16-row groups): column counts that
 * are not multiples of QK_K, odd block counts, 1/15/17-row matrices, and
 * rows longer than the repacked kernels' limit (1024 blocks), which must
 * still agree gemm == matvec when they read the file layout. */
static void test_q4_0_shapes(void **state) {
    (void)state;
    static const struct { int64_t rows, n; } shapes[] = {
        {1, 32}, {15, 96}, {17, 416}, {37, 32 * 33}, {53, 32 * 65}, {16, 32 * 7}, {33, 2048 + 32},
    };
    const tb_isa_t active = tb_isa_active();
    int n_tiers = 0;
    for (int isa = TB_ISA_REF; isa <= (int)tb_isa_best(); isa++) {
        if (tb_isa_set((tb_isa_t)isa) != TB_OK) continue;
        if (!tb_kernels()->t[TB_TYPE_Q4_0].repack) {
            assert_false(check_shape(TB_TYPE_Q4_0, 17, 96, true));
            continue;
        }
        n_tiers++;
        for (size_t i = 0; i < TB_ARRAY_LEN(shapes); i++)
            if (!check_shape(TB_TYPE_Q4_0, shapes[i].rows, shapes[i].n, true))
                fail_msg("q4_0: tier %s stopped repacking", tb_isa_name((tb_isa_t)isa));
        assert_true(check_shape(TB_TYPE_Q4_0, 17, 32 * 1025, false));
    }
    assert_int_equal(tb_isa_set(active), TB_OK);
    if (!n_tiers) skip();
}

/* F32, F16 and BF16 (AVX-512: 8 rows interleaved per 16-element step, the
 * n % 16 tail stored per row after the steps): columns 1..15 (tail only),
 * 16, 17, 31, 33, odd lengths past 2048 and 8192, 1/7/9/37-row matrices and
 * ranges that cut groups; the file bytes are poisoned, so a wrong step or
 * tail offset reads 0xA5 garbage. */
static void test_fx_shapes(void **state) {
    (void)state;
    static const tb_type_t fx[] = {TB_TYPE_F32, TB_TYPE_F16, TB_TYPE_BF16};
    static const struct { int64_t rows, n; } shapes[] = {
        {1, 1}, {7, 15}, {9, 16}, {37, 17}, {8, 31}, {17, 33}, {9, 2048 + 5}, {16, 5632}, {3, 100},
        {9, 8192}, {9, 8192 + 17},   /* BF16 with AVX512_BF16: the longest rows its kernel takes, and the F32 path past them */
    };
    int n_rp = 0;
    for (size_t f = 0; f < TB_ARRAY_LEN(fx); f++) {
        if (!tb_kernels()->t[fx[f]].repack) {
            assert_false(check_shape(fx[f], 9, 33, true));
            continue;
        }
        n_rp++;
        for (size_t i = 0; i < TB_ARRAY_LEN(shapes); i++)
            assert_true(check_shape(fx[f], shapes[i].rows, shapes[i].n, true));
    }
    if (!n_rp) skip();
}

/* A K-block format's repacked path (16-row groups of 256-element blocks,
 * up to 64 blocks per row): every shape of the list (repacked, poisoned
 * file bytes) and a 65-block row (file layout, gemm == matvec still);
 * on a tier that does not repack t, registration is a no-op and the test
 * is skipped. */
typedef struct { int64_t rows, n; } kb_shape_t;
static void check_kblock_shapes(tb_type_t t, const kb_shape_t *shapes, size_t n_shapes) {
    if (!tb_kernels()->t[t].repack) {
        assert_false(check_shape(t, 17, QK_K, true));
        skip();
    }
    for (size_t i = 0; i < n_shapes; i++) assert_true(check_shape(t, shapes[i].rows, shapes[i].n, true));
    assert_true(check_shape(t, 17, QK_K * 65, false));
}

/* Q4_K (16-row groups of 256-element blocks on AVX-512): one row,
 * partial groups, odd block counts, rows of 64 blocks (the longest the
 * AVX-512 repacked path takes) and of 65 (file-layout fallback). */
static void test_q4_K_shapes(void **state) {
    (void)state;
    static const kb_shape_t shapes[] = {
        {1, QK_K}, {15, QK_K * 3}, {17, QK_K * 7}, {33, QK_K * 64}, {32, QK_K * 2},
    };
    check_kblock_shapes(TB_TYPE_Q4_K, shapes, TB_ARRAY_LEN(shapes));
}

/* Q4_K on the repacked layout with hand-made extremes: every scale byte
 * (so all 6-bit scales and mins, and the bits 6..7 that top sub-blocks
 * 4..7), codes 0..15, rows at scale 63 / min 63 / code 15 everywhere,
 * activations all -128 or all +127 (the largest integer sums: 16 x sumi
 * must not overflow int32), rows up to 64 blocks, row counts and
 * [r0, r1) that cut 16-row groups, 36 tokens (more than one of the
 * gemm's token chunks at 64 blocks). matvec within budget of the _ref,
 * gemm bit-identical to matvec, rows outside [r0, r1) untouched. */
static void test_q4_K_extremes(void **state) {
    (void)state;
    const tb_type_kernels_t *e = &tb_kernels()->t[TB_TYPE_Q4_K];
    if (!e->repack) skip();
    static const struct { int64_t rows, nb, r0, r1; } cases[] = {{21, 3, 3, 19}, {40, 64, 16, 37}, {16, 1, 0, 16}};
    enum { NT = 36 };
    for (size_t c = 0; c < TB_ARRAY_LEN(cases); c++) {
        const int64_t rows = cases[c].rows, nb = cases[c].nb, n = QK_K * nb, r0 = cases[c].r0, r1 = cases[c].r1;
        const size_t ws = tb_type_row_bytes(TB_TYPE_Q4_K, n), as = tb_act_row_bytes(TB_TYPE_Q4_K, n);
        uint8_t *W = xalloc(ws * (size_t)rows);   // (rows, n) Q4_K
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < nb; i++) {
                block_q4_K *b = (block_q4_K *)(W + ws * (size_t)r) + i;
                const bool max = r % 5 == 2;
                b->d = tb_fp32_to_fp16(max ? 1.0f : 0.75f + 0.25f * frand());
                b->dmin = tb_fp32_to_fp16(max ? 1.0f : 0.75f + 0.25f * frand());
                for (int j = 0; j < K_SCALE_SIZE; j++) b->scales[j] = max ? 0xFF : (uint8_t)rnd();
                for (int j = 0; j < QK_K / 2; j++) b->qs[j] = max ? 0xFF : (uint8_t)rnd();
            }
        uint8_t *A = xalloc(as * NT);   // (NT, n / 256) Q8_K
        fill_q8_K_extremes(A, as, NT, nb, 3);
        check_registered(TB_TYPE_Q4_K, W, ws, rows, n, A, as, NT, r0, r1, "q4_K extremes");
    }
}

/* Q8_0 (32-element blocks, 16-row groups on AVX-512 VNNI), on every tier
 * this CPU runs that repacks it: as test_q4_0_shapes (odd block counts,
 * 1/15/17-row matrices, ranges that cut groups) plus rows of exactly 1024
 * blocks (the longest the repacked path takes) and 1025 (file layout). */
static void test_q8_0_shapes(void **state) {
    (void)state;
    static const struct { int64_t rows, n; } shapes[] = {
        {1, 32}, {15, 96}, {17, 416}, {37, 32 * 33}, {53, 32 * 65}, {16, 32 * 7}, {33, 2048 + 32}, {18, 32 * 1024},
    };
    const tb_isa_t active = tb_isa_active();
    int n_tiers = 0;
    for (int isa = TB_ISA_REF; isa <= (int)tb_isa_best(); isa++) {
        if (tb_isa_set((tb_isa_t)isa) != TB_OK) continue;
        if (!tb_kernels()->t[TB_TYPE_Q8_0].repack) {
            assert_false(check_shape(TB_TYPE_Q8_0, 17, 96, true));
            continue;
        }
        n_tiers++;
        for (size_t i = 0; i < TB_ARRAY_LEN(shapes); i++)
            if (!check_shape(TB_TYPE_Q8_0, shapes[i].rows, shapes[i].n, true))
                fail_msg("q8_0: tier %s stopped repacking", tb_isa_name((tb_isa_t)isa));
        assert_true(check_shape(TB_TYPE_Q8_0, 17, 32 * 1025, false));
    }
    assert_int_equal(tb_isa_set(active), TB_OK);
    if (!n_tiers) skip();
}

/* Q8_0 on the repacked layout with hand-made extremes: codes -128 and +127
 * (AVX-512: every code byte through the xor 0x80 unsigned form; AVX2: |w|
 * = 128 as an unsigned byte), activations all -127 or all +127 (the
 * largest block sums; -127 is the quantizer's floor, see test_kernels), every
 * row its own scale (powers of two 2^-8 .. 2^7 in a pattern that differs
 * between neighbouring rows and from block to block, so a scale read from
 * the wrong lane, row or block is far outside the budget), row counts and
 * [r0, r1) that cut 16-row groups, 20 tokens (full gemm passes of 8 or 4
 * and tails). matvec within budget of the _ref, gemm bit-identical to
 * matvec, rows outside [r0, r1) untouched. */
static void test_q8_0_extremes(void **state) {
    (void)state;
    const tb_type_kernels_t *e = &tb_kernels()->t[TB_TYPE_Q8_0];
    if (!e->repack) skip();
    static const struct { int64_t rows, nb, r0, r1; } cases[] = {
        {21, 3, 3, 19}, {40, 64, 16, 37}, {16, 1, 0, 16}, {35, 9, 1, 34},
    };
    enum { NT = 20 };
    for (size_t c = 0; c < TB_ARRAY_LEN(cases); c++) {
        const int64_t rows = cases[c].rows, nb = cases[c].nb, n = QK8_0 * nb, r0 = cases[c].r0, r1 = cases[c].r1;
        const size_t ws = tb_type_row_bytes(TB_TYPE_Q8_0, n), as = tb_act_row_bytes(TB_TYPE_Q8_0, n);
        uint8_t *W = xalloc(ws * (size_t)rows);   // (rows, n) Q8_0
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < nb; i++) {
                block_q8_0 *b = (block_q8_0 *)(W + ws * (size_t)r) + i;
                b->d = tb_fp32_to_fp16(ldexpf(1.0f + 0.5f * frand(), (int)((r * 7 + i * 3) % 16) - 8));
                for (int j = 0; j < QK8_0; j++)
                    b->qs[j] = (int8_t)(r % 5 == 2 ? -128 : r % 5 == 3 ? 127 : (int)(rnd() & 0xFF) - 128);
            }
        uint8_t *A = xalloc(as * NT);   // (NT, n / 32) Q8_0
        for (int t = 0; t < NT; t++)
            for (int64_t i = 0; i < nb; i++) {
                block_q8_0 *y = (block_q8_0 *)(A + as * (size_t)t) + i;
                y->d = tb_fp32_to_fp16(t < 2 ? 1.0f : 0.01f * (1.5f + frand()));
                for (int j = 0; j < QK8_0; j++)   /* the quantizer's range, -127..127 (test_kernels) */
                    y->qs[j] = (int8_t)(t == 0 ? -127 : t == 1 ? 127 : (int)(rnd() % 255) - 127);
            }
        check_registered(TB_TYPE_Q8_0, W, ws, rows, n, A, as, NT, r0, r1, "q8_0 extremes");
    }
}

/* One TQ2_0 or TQ1_0 matrix of arbitrary code bytes (every byte value:
 * TQ2_0 code 3, TQ1_0 bytes >= 243 and qh bytes the quantizer never
 * writes; one row all 0xFF), d of both signs per block, activations all
 * -128, all +127, then random, through the active tier's repacked copy
 * (file bytes poisoned after registering): matvec within budget of the
 * _ref, gemm (1..9 tokens) bit-identical to matvec, rows outside [r0, r1)
 * untouched. */
static void check_ternary_bytes(tb_type_t wt, int64_t rows, int64_t nb, int64_t r0, int64_t r1) {
    enum { NT = 9 };
    const int64_t n = QK_K * nb;
    const size_t ws = tb_type_row_bytes(wt, n), as = tb_act_row_bytes(wt, n), bs = ws / (size_t)nb;
    uint8_t *W = xalloc(ws * (size_t)rows);   // (rows, nb, bs): codes, then d (fp16) last in each block
    unsigned v = (unsigned)rnd();
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < nb; i++) {
            uint8_t *b = W + ws * (size_t)r + bs * (size_t)i;
            for (size_t j = 0; j + 2 < bs; j++) b[j] = r == 5 ? 0xFF : (uint8_t)(v++ * 7 + (rnd() & 1));
            const tb_fp16_t d = tb_fp32_to_fp16((r % 3 == 1 ? -1.0f : 1.0f) * (0.5f + frand() * frand()));
            memcpy(b + bs - 2, &d, 2);
        }
    uint8_t *A = xalloc(as * NT);   // (NT, nb) Q8_K
    fill_q8_K_extremes(A, as, NT, nb, 2);
    char what[32];
    snprintf(what, sizeof what, "%s bytes", tb_type_name(wt));
    check_registered(wt, W, ws, rows, n, A, as, NT, r0, r1, what);
}

/* TQ2_0 and TQ1_0 on every tier this CPU runs that repacks them (AVX2:
 * 16-row groups in two 8-row halves, x86_ternary_rp8.h; AVX-512: 16-row groups): through
 * check_shape (1/7/9/15/17/23/33 rows, 1..64 blocks, poisoned file bytes,
 * gemm == matvec, 1 vs 2 threads), 65 blocks (file-layout fallback), and
 * arbitrary code bytes with extreme activations on ranges that cut groups. */
static void test_ternary_tiers(void **state) {
    (void)state;
    static const tb_type_t tt[] = {TB_TYPE_TQ2_0, TB_TYPE_TQ1_0};
    static const struct { int64_t rows, nb; } shapes[] = {
        {1, 1}, {7, 3}, {9, 5}, {15, 2}, {17, 22}, {23, 7}, {33, 1}, {8, 64},
    };
    static const struct { int64_t rows, nb, r0, r1; } cases[] = {
        {21, 3, 3, 19}, {40, 22, 9, 37}, {8, 1, 0, 8}, {13, 2, 7, 8},
    };
    const tb_isa_t active = tb_isa_active();
    int n_tiers = 0;
    for (int isa = TB_ISA_REF; isa <= (int)tb_isa_best(); isa++) {
        if (tb_isa_set((tb_isa_t)isa) != TB_OK) continue;
        for (size_t k = 0; k < TB_ARRAY_LEN(tt); k++) {
            if (!tb_kernels()->t[tt[k]].repack) {
                assert_false(check_shape(tt[k], 9, QK_K, true));
                continue;
            }
            n_tiers++;
            for (size_t i = 0; i < TB_ARRAY_LEN(shapes); i++)
                if (!check_shape(tt[k], shapes[i].rows, QK_K * shapes[i].nb, true))
                    fail_msg("%s: tier %s stopped repacking", tb_type_name(tt[k]), tb_isa_name((tb_isa_t)isa));
            assert_true(check_shape(tt[k], 9, QK_K * 65, false));
            for (size_t c = 0; c < TB_ARRAY_LEN(cases); c++)
                check_ternary_bytes(tt[k], cases[c].rows, cases[c].nb, cases[c].r0, cases[c].r1);
        }
    }
    assert_int_equal(tb_isa_set(active), TB_OK);
    if (!n_tiers) skip();
}

/* Two owners: releasing one leaves the other's registrations in place. */
/* TQ1_0 shapes through check_shape (random valid codes, poisoned file
 * bytes): odd and even block counts (the AVX-512 VBMI layout stores
 * blocks in pairs and pads odd counts), partial groups, the longest
 * repacked rows (64 blocks) and the file-layout fallback (65). */
static void test_tq1_0_shapes(void **state) {
    (void)state;
    static const kb_shape_t shapes[] = {
        {1, QK_K}, {15, QK_K * 3}, {17, QK_K * 5}, {33, QK_K * 22}, {16, QK_K * 2}, {32, QK_K * 7}, {17, QK_K * 64},
    };
    check_kblock_shapes(TB_TYPE_TQ1_0, shapes, TB_ARRAY_LEN(shapes));
}

/* Q6_K (AVX-512 VNNI: 16-row groups, blocks in 64-byte aligned pairs):
 * one block (an unpaired last block), odd and even block counts, partial
 * groups, rows of 64 blocks (the repacked path's limit) and of 65 (file
 * layout). */
static void test_q6_K_shapes(void **state) {
    (void)state;
    static const kb_shape_t shapes[] = {
        {1, QK_K}, {15, QK_K * 3}, {17, QK_K * 5}, {33, QK_K * 8}, {16, QK_K * 2}, {32, QK_K * 7}, {17, QK_K * 64},
    };
    check_kblock_shapes(TB_TYPE_Q6_K, shapes, TB_ARRAY_LEN(shapes));
}

/* Q6_K on the repacked layout with arbitrary bytes: ql and qh take every
 * value 0..255 (so every 6-bit code), scales every int8 including -128,
 * one row of 0xFF codes at scale -128 (the largest |S|: 16 sub-blocks of
 * 16 x 32 x 128 x 128 = 2^27), d of both signs; activations all -128, all
 * +127, then random. matvec within budget of the _ref, gemm (1..9 tokens)
 * bit-identical to matvec, rows outside [r0, r1) untouched. */
static void test_q6_K_bytes(void **state) {
    (void)state;
    const tb_type_kernels_t *e = &tb_kernels()->t[TB_TYPE_Q6_K];
    if (!e->repack) skip();
    static const struct { int64_t rows, nb, r0, r1; } cases[] = {{21, 3, 3, 19}, {40, 8, 16, 37}, {16, 1, 0, 16}};
    enum { NT = 9 };
    for (size_t c = 0; c < TB_ARRAY_LEN(cases); c++) {
        const int64_t rows = cases[c].rows, nb = cases[c].nb, n = QK_K * nb, r0 = cases[c].r0, r1 = cases[c].r1;
        const size_t ws = tb_type_row_bytes(TB_TYPE_Q6_K, n), as = tb_act_row_bytes(TB_TYPE_Q6_K, n);
        uint8_t *W = xalloc(ws * (size_t)rows);   // (rows, n) Q6_K
        unsigned v = 0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < nb; i++) {
                block_q6_K *b = (block_q6_K *)(W + ws * (size_t)r) + i;
                const bool ff = r == 5;
                b->d = tb_fp32_to_fp16((r % 3 == 1 ? -1.0f : 1.0f) * (0.5f + frand() * frand()));
                for (size_t j = 0; j < sizeof b->ql; j++) b->ql[j] = ff ? 0xFF : (uint8_t)(v++ * 7 + (rnd() & 1));
                for (size_t j = 0; j < sizeof b->qh; j++) b->qh[j] = ff ? 0xFF : (uint8_t)(v++ * 13);
                for (size_t j = 0; j < sizeof b->scales; j++) b->scales[j] = (int8_t)(ff ? -128 : (int)(v++ * 11 % 256) - 128);
            }
        uint8_t *A = xalloc(as * NT);   // (NT, n / 256) Q8_K
        fill_q8_K_extremes(A, as, NT, nb, 2);
        check_registered(TB_TYPE_Q6_K, W, ws, rows, n, A, as, NT, r0, r1, "q6_K bytes");
    }
}

/* TQ1_0 on the repacked layout with arbitrary bytes: qs and qh take every
 * value 0..255 (bytes >= 243 are not produced by the quantizer but the
 * format decodes them, and the repack must decode them the same way), one
 * row of 0xFF everywhere, scales of both signs; activations all -128, all
 * +127, then random. matvec within budget of the _ref, gemm (1..9 tokens)
 * bit-identical to matvec, rows outside [r0, r1) untouched. */
static void test_tq1_0_bytes(void **state) {
    (void)state;
    const tb_type_kernels_t *e = &tb_kernels()->t[TB_TYPE_TQ1_0];
    if (!e->repack) skip();
    static const struct { int64_t rows, nb, r0, r1; } cases[] = {{21, 3, 3, 19}, {40, 22, 16, 37}, {16, 1, 0, 16}};
    enum { NT = 9 };
    for (size_t c = 0; c < TB_ARRAY_LEN(cases); c++) {
        const int64_t rows = cases[c].rows, nb = cases[c].nb, n = QK_K * nb, r0 = cases[c].r0, r1 = cases[c].r1;
        const size_t ws = tb_type_row_bytes(TB_TYPE_TQ1_0, n), as = tb_act_row_bytes(TB_TYPE_TQ1_0, n);
        uint8_t *W = xalloc(ws * (size_t)rows);   // (rows, n) TQ1_0
        unsigned v = 0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < nb; i++) {
                block_tq1_0 *b = (block_tq1_0 *)(W + ws * (size_t)r) + i;
                const bool ff = r == 5;
                b->d = tb_fp32_to_fp16((r % 3 == 1 ? -1.0f : 1.0f) * (0.5f + frand() * frand()));
                for (size_t j = 0; j < sizeof b->qs; j++) b->qs[j] = ff ? 0xFF : (uint8_t)(v++ * 7 + (rnd() & 1));
                for (size_t j = 0; j < sizeof b->qh; j++) b->qh[j] = ff ? 0xFF : (uint8_t)(v++ * 13);
            }
        uint8_t *A = xalloc(as * NT);   // (NT, n / 256) Q8_K
        fill_q8_K_extremes(A, as, NT, nb, 2);
        check_registered(TB_TYPE_TQ1_0, W, ws, rows, n, A, as, NT, r0, r1, "tq1_0 bytes");
    }
}

static void test_owners(void **state) {
    (void)state;
    const tb_kernels_t *k = tb_kernels();
    if (!k->t[TB_TYPE_TQ2_0].repack) skip();
    const int64_t rows = 20, n = 512;
    const size_t ws = tb_type_row_bytes(TB_TYPE_TQ2_0, n);
    uint8_t *W1 = rand_rows(TB_TYPE_TQ2_0, rows, n), *W2 = rand_rows(TB_TYPE_TQ2_0, rows, n);
    int o1, o2;
    /* W1's copy goes to a buffer of ours: the registry must hand it back
     * from lookups and must not free it on release (ASan checks). */
    const size_t dsz = tb_repack_size(TB_TYPE_TQ2_0, ws, rows, 1);
    assert_int_equal(dsz, tb_repack_bytes(ws, rows, k->t[TB_TYPE_TQ2_0].repack_rows));
    void *dst = tb_alloc_aligned(dsz);
    size_t got = 0;
    assert_int_equal(tb_repack_register(&o1, TB_TYPE_TQ2_0, W1, ws, rows, n, 1, dst, &got), TB_OK);
    assert_int_equal(got, dsz);
    assert_ptr_equal(tb_repack_lookup(W1, ws, k->isa, TB_TYPE_TQ2_0), dst);
    assert_int_equal(tb_repack_register(&o2, TB_TYPE_TQ2_0, W2, ws, rows, n, 1, NULL, NULL), TB_OK);
    tb_repack_release(&o1);
    assert_null(tb_repack_lookup(W1, ws, k->isa, TB_TYPE_TQ2_0));
    tb_free_aligned(dst);
    assert_non_null(tb_repack_lookup(W2, ws, k->isa, TB_TYPE_TQ2_0));
    tb_repack_release(&o2);
    assert_null(tb_repack_lookup(W2, ws, k->isa, TB_TYPE_TQ2_0));
    free(W1);
    free(W2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repacked_kernels),
        cmocka_unit_test(test_q4_0_shapes),
        cmocka_unit_test(test_fx_shapes),
        cmocka_unit_test(test_q4_K_shapes),
        cmocka_unit_test(test_q4_K_extremes),
        cmocka_unit_test(test_q8_0_shapes),
        cmocka_unit_test(test_q8_0_extremes),
        cmocka_unit_test(test_q6_K_shapes),
        cmocka_unit_test(test_q6_K_bytes),
        cmocka_unit_test(test_tq1_0_shapes),
        cmocka_unit_test(test_tq1_0_bytes),
        cmocka_unit_test(test_ternary_tiers),
        cmocka_unit_test(test_owners),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
