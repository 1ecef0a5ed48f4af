/*
 * head.h — the approximate output head's state (head.c; not public): the
 * clustering built once per model and the per-session scratch of its
 * per-token pass.
 */
#ifndef TB_HEAD_H
#define TB_HEAD_H

#include "model/model.h"

struct tb_head {
    const tb_model_t *m;
    int32_t C, T, V, E;              /* centroids, clusters scored, rows, row length */
    tb_type_t type;                  /* the output head's type                       */
    size_t row_bytes;
    uint64_t seed;
    int32_t iters;
    float *cent;                     /* (C, E) centroids                             */
    int32_t *perm;                   /* (V) output row at each permuted position     */
    int32_t *cluster_of;             /* (V) cluster of each output row               */
    int32_t *off;                    /* (C + 1) first permuted position per cluster  */
    void *W;                         /* (V, row_bytes) the rows in cluster order     */
};

/* A session's scratch for tb_head_logits. */
typedef struct tb_head_scratch {
    void *act, *actc;                /* xn in the head type's / f32's activation format */
    float *cs;                       /* (C) centroid scores                             */
    float *yp;                       /* (V) exact logits by permuted position           */
    int32_t *sel;                    /* (T) selected clusters, best first               */
    int64_t *pre;                    /* (T + 1) prefix sums of their sizes              */
} tb_head_scratch_t;

int  tb_head_scratch_init(const tb_head_t *h, tb_head_scratch_t *sc);
void tb_head_scratch_free(tb_head_scratch_t *sc);
/* logits (V) of one token from its normed hidden state xn (E) on pool;
 * *rows_read = output rows scored exactly (the C centroid rows not
 * included). */
int tb_head_logits(const tb_head_t *h, tb_pool_t *pool, const float *xn, tb_head_scratch_t *sc, float *logits,
                   uint64_t *rows_read);

#endif
