/*
 * test_weights.c — tb_weights, the prepared weight stacks `ternbench
 * kernels` measures with (kernels/weights.c):
 *
 *   resident   file-layout copy + exactly the active tier's repacked size;
 *   matvec     each matrix of a stack (picked by index) within 1e-5
 *              relative L2 of the ref tier's tb_matvec on the original
 *              bytes (the quantized activation is the same; only float
 *              summation order may differ), for every weight type;
 *   matmul     every token row bit-identical to matvec (prefill == decode);
 *   *_act      on activations quantized beforehand (tb_act_t): bit-identical
 *              to matvec / matmul on the floats;
 *   errors     matrix index out of range, bad shapes, activations of
 *              another type, length or token count, NULL.
 * The original buffer is poisoned after creation: the copy is what is read.
 */
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

#define KERN_RNG_SEED 0x77e1947u
#include "kern_rng.h"

static const tb_type_t types[] = {TB_TYPE_F32, TB_TYPE_F16, TB_TYPE_BF16, TB_TYPE_Q8_0, TB_TYPE_Q4_0,
                                  TB_TYPE_Q4_K, TB_TYPE_Q6_K, TB_TYPE_TQ1_0, TB_TYPE_TQ2_0};

static double rel_l2(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

static void one_type(tb_type_t t, tb_pool_t *pool) {
    const tb_isa_t best = tb_isa_active();
    const int64_t blk = tb_type_block_elems(t);
    const int64_t cols = (blk > 32 ? blk : 64) * irand(1, 3), rows = irand(17, 53), n_mat = 3, nt = 5;
    const size_t ws = tb_type_row_bytes(t, cols), mb = ws * (size_t)rows;
    float *row = xalloc(sizeof(float) * (size_t)cols);           // (cols)
    uint8_t *W = xalloc(mb * (size_t)n_mat);                      // (n_mat, rows, ws)
    for (int64_t r = 0; r < rows * n_mat; r++) {
        for (int64_t j = 0; j < cols; j++) row[j] = frand();
        assert_int_equal(tb_quantize_row(t, row, W + (size_t)r * ws, cols), TB_OK);
    }
    float *X = xalloc(sizeof(float) * (size_t)(cols * nt));        // (nt, cols)
    for (int64_t j = 0; j < cols * nt; j++) X[j] = frand();
    /* reference on the original bytes, ref tier */
    float *yref = xalloc(sizeof(float) * (size_t)(rows * n_mat));  // (n_mat, rows)
    assert_int_equal(tb_isa_set(TB_ISA_REF), TB_OK);
    for (int64_t m = 0; m < n_mat; m++)
        assert_int_equal(tb_matvec(NULL, t, W + (size_t)m * mb, rows, cols, X, yref + m * rows), TB_OK);
    assert_int_equal(tb_isa_set(best), TB_OK);

    tb_weights_t *pw = NULL;
    assert_int_equal(tb_weights_new(t, W, rows, cols, n_mat, &pw), TB_OK);
    assert_int_equal(tb_weights_resident_bytes(pw), mb * (size_t)n_mat + tb_repack_size(t, ws, rows, n_mat));
    memset(W, 0xff, mb * (size_t)n_mat);   /* NaN/garbage: the prepared copy must be what is read */

    float *y = xalloc(sizeof(float) * (size_t)rows), *Y = xalloc(sizeof(float) * (size_t)(rows * nt));
    for (int64_t m = 0; m < n_mat; m++) {
        for (int64_t i = 0; i < rows; i++) y[i] = NAN;
        assert_int_equal(tb_weights_matvec(pool, pw, m, X, y), TB_OK);
        double e = rel_l2(y, yref + m * rows, rows);
        if (!(e <= 1e-5))
            fail_msg("%s matrix %lld (%lld x %lld): relative L2 %.3g vs ref", tb_type_name(t), (long long)m,
                     (long long)rows, (long long)cols, e);
        assert_int_equal(tb_weights_matmul(pool, pw, m, X, nt, Y), TB_OK);
        if (memcmp(Y, y, sizeof(float) * (size_t)rows) != 0)
            fail_msg("%s matrix %lld: matmul token 0 differs from matvec", tb_type_name(t), (long long)m);
        for (int64_t k = 1; k < nt; k++) {       /* other tokens: their own matvec */
            assert_int_equal(tb_weights_matvec(pool, pw, m, X + k * cols, y), TB_OK);
            if (memcmp(Y + k * rows, y, sizeof(float) * (size_t)rows) != 0)
                fail_msg("%s matrix %lld: matmul token %lld differs from matvec", tb_type_name(t),
                         (long long)m, (long long)k);
        }
    }
    /* prepared activations: the weight pass alone, the same bits */
    tb_act_t *a1 = NULL, *an = NULL;
    assert_int_equal(tb_act_new(t, cols, 1, &a1), TB_OK);
    assert_int_equal(tb_act_new(t, cols, nt, &an), TB_OK);
    assert_int_equal(tb_act_set(a1, X + cols), TB_OK);
    assert_int_equal(tb_act_set(an, X), TB_OK);
    float *ya = xalloc(sizeof(float) * (size_t)rows), *Ya = xalloc(sizeof(float) * (size_t)(rows * nt));
    for (int64_t m = 0; m < n_mat; m++) {
        for (int64_t i = 0; i < rows; i++) ya[i] = NAN;
        assert_int_equal(tb_weights_matvec(pool, pw, m, X + cols, y), TB_OK);
        assert_int_equal(tb_weights_matvec_act(pool, pw, m, a1, ya), TB_OK);
        if (memcmp(ya, y, sizeof(float) * (size_t)rows) != 0)
            fail_msg("%s matrix %lld: matvec on prepared activations differs", tb_type_name(t), (long long)m);
        for (int64_t i = 0; i < rows * nt; i++) Ya[i] = NAN;
        assert_int_equal(tb_weights_matmul(pool, pw, m, X, nt, Y), TB_OK);
        assert_int_equal(tb_weights_matmul_act(pool, pw, m, an, Ya), TB_OK);
        if (memcmp(Ya, Y, sizeof(float) * (size_t)(rows * nt)) != 0)
            fail_msg("%s matrix %lld: matmul on prepared activations differs", tb_type_name(t), (long long)m);
    }
    assert_int_equal(tb_weights_matvec_act(pool, pw, 0, an, ya), TB_ERR_ARG);      /* 5 rows for a matvec */
    assert_int_equal(tb_weights_matvec_act(pool, pw, n_mat, a1, ya), TB_ERR_RANGE);
    assert_int_equal(tb_weights_matvec_act(pool, pw, 0, NULL, ya), TB_ERR_ARG);
    tb_act_t *other = NULL;
    assert_int_equal(tb_act_new(t, cols + blk * (blk > 32 ? 1 : 2), 1, &other), TB_OK);   /* longer rows */
    assert_int_equal(tb_weights_matvec_act(pool, pw, 0, other, ya), TB_ERR_ARG);
    tb_act_free(other);
    const tb_type_t t2 = t == TB_TYPE_Q8_0 ? TB_TYPE_Q4_0 : TB_TYPE_Q8_0;   /* another type, same length */
    if (cols % tb_type_block_elems(t2) == 0) {
        assert_int_equal(tb_act_new(t2, cols, 1, &other), TB_OK);
        assert_int_equal(tb_weights_matvec_act(pool, pw, 0, other, ya), TB_ERR_ARG);
        tb_act_free(other);
    }
    tb_act_free(a1);
    tb_act_free(an);
    free(ya); free(Ya);

    assert_int_equal(tb_weights_matvec(pool, pw, n_mat, X, y), TB_ERR_RANGE);
    assert_int_equal(tb_weights_matvec(pool, pw, -1, X, y), TB_ERR_RANGE);
    tb_weights_free(pw);
    free(row); free(W); free(X); free(yref); free(y); free(Y);
}

static void test_every_type(void **state) {
    (void)state;
    tb_pool_t *pool;
    assert_int_equal(tb_pool_new(2, &pool), TB_OK);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (int rep = 0; rep < 3; rep++) one_type(types[i], pool);
    tb_pool_free(pool);
}

static void test_errors(void **state) {
    (void)state;
    tb_weights_t *pw = (tb_weights_t *)1;
    uint8_t W[64] = {0};
    assert_int_equal(tb_weights_new(TB_TYPE_Q8_0, W, 1, 33, 1, &pw), TB_ERR_ARG);   /* not a block multiple */
    assert_null(pw);
    assert_int_equal(tb_weights_new(TB_TYPE_Q8_0, NULL, 1, 32, 1, &pw), TB_ERR_ARG);
    assert_int_equal(tb_weights_new(TB_TYPE_Q8_K, W, 1, 256, 1, &pw), TB_ERR_UNSUPPORTED);
    assert_int_equal(tb_weights_new(TB_TYPE_Q8_0, W, 1, 32, 0, &pw), TB_ERR_ARG);
    assert_int_equal(tb_weights_matvec(NULL, NULL, 0, NULL, NULL), TB_ERR_ARG);
    tb_act_t *a = (tb_act_t *)1;
    assert_int_equal(tb_act_new(TB_TYPE_Q8_0, 33, 1, &a), TB_ERR_ARG);
    assert_null(a);
    assert_int_equal(tb_act_new(TB_TYPE_Q8_0, 32, 0, &a), TB_ERR_ARG);
    assert_int_equal(tb_act_new(TB_TYPE_Q8_K, 256, 1, &a), TB_ERR_UNSUPPORTED);
    assert_int_equal(tb_act_new(TB_TYPE_Q8_0, 32, 1, NULL), TB_ERR_ARG);
    assert_int_equal(tb_act_set(NULL, NULL), TB_ERR_ARG);
    assert_int_equal(tb_weights_matvec_act(NULL, NULL, 0, NULL, NULL), TB_ERR_ARG);
    tb_act_free(NULL);
    tb_weights_free(NULL);
    assert_int_equal(tb_weights_resident_bytes(NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
