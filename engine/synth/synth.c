/*
 * synth.c — tb_synth_model(): execute a plan (plan.c) into a GGUF file.
 *
 * Tensor data is produced in fixed-size chunks of rows; chunk c of tensor
 * i is drawn from its own stream seeded by (seed, i, c), so the bytes do
 * not depend on the thread count or the batch size. A batch of chunks is
 * filled by the thread pool while a writer thread streams the previous
 * batch to disk (double buffering), so generation and I/O overlap.
 */
#include "synth/synth.h"
#include "io/gguf_impl.h"
#include "util/siphash.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (1u << 20)    /* target bytes of one seeded chunk        */
#define BATCH_CHUNKS 16           /* chunks per batch (per buffer)          */

/* ===================================================================== */
/* Batch filling (runs on the pool)                                       */
/* ===================================================================== */

typedef struct fill_job {
    const synth_plan_t *pl;
    int ti;                       /* tensor index in the plan            */
    int64_t rows_per_chunk, n_rows;
    int64_t chunk0;               /* first chunk of this batch           */
    int n_chunks;                 /* chunks in this batch                 */
    uint8_t *buf;                 /* (n_chunks * rows_per_chunk, row)     */
    size_t row_bytes;
    synth_workers_t wk;           /* scratch (ne0) and errors per thread  */
} fill_job_t;

static void fill_worker(void *arg, int ith, int nth) {
    fill_job_t *j = arg;
    const synth_tensor_t *t = &j->pl->tensors[j->ti];
    for (int c = ith; c < j->n_chunks && j->wk.rc[ith] == TB_OK; c += nth) {
        const int64_t chunk = j->chunk0 + c;
        const int64_t r0 = chunk * j->rows_per_chunk;
        const int64_t nr = TB_MIN(j->rows_per_chunk, j->n_rows - r0);
        synth_rng_t rng;
        synth_rng_seed(&rng, j->pl->seed, (uint64_t)j->ti, (uint64_t)chunk);
        int rc = synth_fill_rows(t, &rng, nr, j->buf + (size_t)c * j->rows_per_chunk * j->row_bytes,
                                 j->wk.scratch[ith]);
        if (rc != TB_OK) synth_workers_fail(&j->wk, ith, rc);
    }
}

/* ===================================================================== */
/* Writer thread (double buffering)                                       */
/* ===================================================================== */

typedef struct writer_ctx {
    tb_gguf_writer_t *w;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const uint8_t *data;          /* pending buffer, NULL when idle       */
    size_t len;
    bool quit;
    int rc;
    char msg[512];
    tb_siphash_t digest;          /* of every byte handed to the writer   */
} writer_ctx_t;

static void *writer_main(void *arg) {
    writer_ctx_t *x = arg;
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (!x->data && !x->quit) pthread_cond_wait(&x->cv, &x->mu);
        if (!x->data) break;
        const uint8_t *d = x->data;
        size_t n = x->len;
        pthread_mutex_unlock(&x->mu);
        if (x->rc == TB_OK) tb_siphash_update(&x->digest, d, n);
        int rc = x->rc == TB_OK ? tb_gguf_write_tensor_data(x->w, d, n) : x->rc;
        pthread_mutex_lock(&x->mu);
        if (rc != TB_OK && x->rc == TB_OK) {
            x->rc = rc;
            snprintf(x->msg, sizeof x->msg, "%s", tb_last_error());
        }
        x->data = NULL;
        pthread_cond_broadcast(&x->cv);
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

/* Wait until the writer is idle; returns its status. */
static int writer_wait(writer_ctx_t *x) {
    pthread_mutex_lock(&x->mu);
    while (x->data) pthread_cond_wait(&x->cv, &x->mu);
    int rc = x->rc;
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static void writer_post(writer_ctx_t *x, const uint8_t *d, size_t n) {
    pthread_mutex_lock(&x->mu);
    x->data = d;
    x->len = n;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

/* ===================================================================== */
/* Streaming all tensors                                                  */
/* ===================================================================== */

typedef struct stream_state {
    const tb_synth_params_t *p;
    const synth_plan_t *pl;
    tb_pool_t *pool;
    writer_ctx_t *wx;
    uint8_t *buf[2];              /* 2 x (buf_cap): filled / being written   */
    size_t buf_cap;
    int cur;
    uint64_t done;
    fill_job_t job;
} stream_state_t;

/* Generate tensor ti batch by batch, handing each batch to the writer. */
static int stream_tensor(stream_state_t *s, int ti) {
    const synth_tensor_t *t = &s->pl->tensors[ti];
    fill_job_t *j = &s->job;
    j->pl = s->pl;
    j->ti = ti;
    j->row_bytes = tb_type_row_bytes(t->type, t->ne[0]);
    j->n_rows = t->ne[1] * t->ne[2] * t->ne[3];
    j->rows_per_chunk = TB_MAX((int64_t)1, (int64_t)(CHUNK_BYTES / j->row_bytes));
    const int64_t n_chunks = (j->n_rows + j->rows_per_chunk - 1) / j->rows_per_chunk;
    for (int64_t c0 = 0; c0 < n_chunks; c0 += BATCH_CHUNKS) {
        j->chunk0 = c0;
        j->n_chunks = (int)TB_MIN((int64_t)BATCH_CHUNKS, n_chunks - c0);
        j->buf = s->buf[s->cur];
        tb_pool_run(s->pool, fill_worker, j);
        const int f = synth_workers_failed(&j->wk);
        if (f >= 0) return tb_err(j->wk.rc[f], "%s", j->wk.msg[f]);
        const int64_t rows = TB_MIN(j->n_rows - c0 * j->rows_per_chunk,
                                    (int64_t)j->n_chunks * j->rows_per_chunk);
        const size_t len = (size_t)rows * j->row_bytes;
        int rc = writer_wait(s->wx);            /* the other buffer is free again */
        if (rc != TB_OK) return tb_err(rc, "%s", s->wx->msg);
        writer_post(s->wx, j->buf, len);
        s->cur ^= 1;
        s->done += len;
        if (s->p->progress) s->p->progress(s->p->progress_ud, s->done, s->pl->data_bytes);
    }
    return TB_OK;
}

static int stream_all(stream_state_t *s) {
    for (int ti = 0; ti < s->pl->n_tensors; ti++) {
        int rc = stream_tensor(s, ti);
        if (rc != TB_OK) return rc;
    }
    int rc = writer_wait(s->wx);
    return rc == TB_OK ? TB_OK : tb_err(rc, "%s", s->wx->msg);
}

/* ===================================================================== */
/* Entry point                                                            */
/* ===================================================================== */

int tb_synth_model(const tb_synth_params_t *p, const char *out_path) {
    return synth_model_run(p, out_path, synth_threads());
}

int synth_model_run(const tb_synth_params_t *p, const char *out_path, int n_threads) {
    if (!out_path) return tb_err(TB_ERR_ARG, "synth: output path is NULL");
    if (n_threads < 1 || n_threads > SYNTH_MAX_THREADS)
        return tb_err(TB_ERR_ARG, "synth: %d threads (expected 1..%d)", n_threads, SYNTH_MAX_THREADS);
    synth_plan_t pl;
    tb_gguf_writer_t *w = NULL;
    tb_pool_t *pool = NULL;
    stream_state_t s = {0};
    writer_ctx_t wx = {0};
    bool writer_started = false;
    int rc = synth_plan_build(p, &pl);
    if (rc != TB_OK) goto done;
    if ((rc = tb_gguf_writer_new(&w)) != TB_OK) goto done;
    if ((rc = synth_plan_declare(&pl, w)) != TB_OK) goto done;
    if ((rc = tb_gguf_writer_begin(w, out_path)) != TB_OK) goto done;
    if ((rc = tb_pool_new(n_threads, &pool)) != TB_OK) goto done;

    /* buffers: one batch of the widest chunk; scratch: the longest row */
    size_t cap = 0;
    int64_t max_ne0 = 1;
    for (int i = 0; i < pl.n_tensors; i++) {
        const synth_tensor_t *t = &pl.tensors[i];
        size_t row = tb_type_row_bytes(t->type, t->ne[0]);
        size_t rpc = TB_MAX((size_t)1, CHUNK_BYTES / row);
        cap = TB_MAX(cap, (size_t)BATCH_CHUNKS * rpc * row);
        max_ne0 = TB_MAX(max_ne0, t->ne[0]);
    }
    s.p = p;
    s.pl = &pl;
    s.pool = pool;
    s.wx = &wx;
    s.buf_cap = cap;
    s.buf[0] = tb_alloc_aligned(cap);
    s.buf[1] = tb_alloc_aligned(cap);
    if (!s.buf[0] || !s.buf[1] || !synth_workers_alloc(&s.job.wk, max_ne0)) { rc = tb_err(TB_ERR_NOMEM, "synth: out of memory for %zu-byte buffers", cap); goto done; }

    wx.w = w;
    tb_siphash_init(&wx.digest, SYNTH_DIGEST_KEY);
    pthread_mutex_init(&wx.mu, NULL);
    pthread_cond_init(&wx.cv, NULL);
    writer_started = true;
    pthread_t tid;
    if (pthread_create(&tid, NULL, writer_main, &wx) != 0) {
        rc = tb_err(TB_ERR_INTERNAL, "synth: cannot start the writer thread");
        goto done;
    }
    rc = stream_all(&s);
    pthread_mutex_lock(&wx.mu);
    wx.quit = true;
    pthread_cond_broadcast(&wx.cv);
    pthread_mutex_unlock(&wx.mu);
    pthread_join(tid, NULL);
    if (rc == TB_OK) rc = tb_gguf_writer_patch_u64(w, SYNTH_KEY_DIGEST, tb_siphash_final(&wx.digest));
    if (rc == TB_OK) rc = tb_gguf_writer_finish(w);

done:
    if (writer_started) {
        pthread_mutex_destroy(&wx.mu);
        pthread_cond_destroy(&wx.cv);
    }
    synth_workers_free(&s.job.wk);
    tb_free_aligned(s.buf[0]);
    tb_free_aligned(s.buf[1]);
    if (pool) tb_pool_free(pool);
    if (w) tb_gguf_writer_free(w);
    synth_plan_free(&pl);
    if (rc != TB_OK && strncmp(tb_last_error(), "synth", 5))
        tb_err_prefix(rc, "synth %s", out_path);
    return rc;
}
