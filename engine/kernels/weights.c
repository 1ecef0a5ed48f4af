/*
 * weights.c — tb_weights: a weight matrix stack prepared the way
 * tb_model_load prepares the model's, for benchmarks and tools.
 *
 * The file-layout bytes are copied into huge-page memory (hugemem.c); when
 * the active tier has a repacked layout for the type, the registry
 * (repack.c) makes it, keyed by that copy, and the tier's kernels read it.
 * So `ternbench kernels` measures exactly what decode runs.
 */
#include "kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

struct tb_weights {
    tb_type_t type;
    int64_t rows, cols, n_mat;
    size_t ws, mat_bytes;
    uint8_t *data;           /* (n_mat, rows, ws) file layout, huge pages */
    uint8_t *rp;             /* repacked copy (huge pages) or NULL        */
    size_t rp_bytes;
};

int tb_weights_new(tb_type_t type, const void *W, int64_t rows, int64_t cols, int64_t n_mat,
                   tb_weights_t **out) {
    if (!out) return tb_err(TB_ERR_ARG, "tb_weights_new: NULL output");
    *out = NULL;
    const tb_type_traits_t *tr = tb_type_traits(type);
    if (!tr || type == TB_TYPE_Q8_K)
        return tb_err(TB_ERR_UNSUPPORTED, "tb_weights_new: weight type %d is not supported", (int)type);
    if (!W || rows < 1 || cols < 1 || n_mat < 1 || cols % tr->blck)
        return tb_err(TB_ERR_ARG, "tb_weights_new: bad shape %lld x %lld x %lld for %s (block %lld)",
                      (long long)n_mat, (long long)rows, (long long)cols, tr->name, (long long)tr->blck);
    tb_weights_t *w = calloc(1, sizeof *w);
    if (!w) return tb_err(TB_ERR_NOMEM, "tb_weights_new: out of memory");
    *w = (tb_weights_t){.type = type, .rows = rows, .cols = cols, .n_mat = n_mat,
                        .ws = tb_type_row_bytes(type, cols)};
    w->mat_bytes = w->ws * (size_t)rows;
    w->data = tb_huge_alloc(w->mat_bytes * (size_t)n_mat);
    w->rp_bytes = tb_repack_size(type, w->ws, rows, n_mat);
    if (w->rp_bytes) w->rp = tb_huge_alloc(w->rp_bytes);
    if (!w->data || (w->rp_bytes && !w->rp)) {
        tb_weights_free(w);
        return tb_err(TB_ERR_NOMEM, "tb_weights_new: out of memory for %zu bytes",
                      w->mat_bytes * (size_t)n_mat + w->rp_bytes);
    }
    memcpy(w->data, W, w->mat_bytes * (size_t)n_mat);
    int rc = w->rp ? tb_repack_register(w, type, w->data, w->ws, rows, cols, n_mat, w->rp, NULL) : TB_OK;
    if (rc) {
        tb_weights_free(w);
        return rc;
    }
    *out = w;
    return TB_OK;
}

void tb_weights_free(tb_weights_t *w) {
    if (!w) return;
    tb_repack_release(w);
    tb_huge_free(w->rp);
    tb_huge_free(w->data);
    free(w);
}

size_t tb_weights_resident_bytes(const tb_weights_t *w) {
    return w ? w->mat_bytes * (size_t)w->n_mat + w->rp_bytes : 0;
}

static int check_mat(const tb_weights_t *w, int64_t mat) {
    if (!w) return tb_err(TB_ERR_ARG, "tb_weights: NULL weights");
    if (mat < 0 || mat >= w->n_mat)
        return tb_err(TB_ERR_RANGE, "tb_weights: matrix %lld outside 0..%lld", (long long)mat,
                      (long long)w->n_mat - 1);
    return TB_OK;
}

int tb_weights_matvec(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, const float *x, float *y) {
    int rc = check_mat(w, mat);
    return rc ? rc : tb_matvec(pool, w->type, w->data + (size_t)mat * w->mat_bytes, w->rows, w->cols, x, y);
}

int tb_weights_matmul(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, const float *X, int64_t n,
                      float *Y) {
    int rc = check_mat(w, mat);
    return rc ? rc : tb_matmul(pool, w->type, w->data + (size_t)mat * w->mat_bytes, w->rows, w->cols, X, n, Y);
}

int tb_weights_matvec_act(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, const tb_act_t *a, float *y) {
    int rc = check_mat(w, mat);
    return rc ? rc : tb_matvec_act(pool, w->type, w->data + (size_t)mat * w->mat_bytes, w->rows, w->cols, a, y);
}

int tb_weights_matmul_act(tb_pool_t *pool, const tb_weights_t *w, int64_t mat, const tb_act_t *a, float *Y) {
    int rc = check_mat(w, mat);
    return rc ? rc : tb_matmul_act(pool, w->type, w->data + (size_t)mat * w->mat_bytes, w->rows, w->cols, a, Y);
}
