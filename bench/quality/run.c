/*
 * run.c — tb_quality_run: the llama-perplexity procedure on ternbench
 * sessions, and the fingerprints that tie a reference to its model,
 * tokenizer and text.
 *
 *   tokens  = tokenize(text) once, BOS first when the vocabulary adds it
 *   chunks  = floor(tokens / n_ctx) (at least 2; at most n_chunks when given)
 *   chunk c = tokens[c n_ctx, (c+1) n_ctx), its first token replaced by BOS
 *             when the vocabulary adds BOS; the KV cache starts empty
 *   scored  = positions j in [n_ctx/2, n_ctx - 1): the distribution after
 *             token j, against token j + 1 (n_ctx - 1 - n_ctx/2 per chunk)
 * Each chunk runs as two evals: the first n_ctx/2 tokens without logits,
 * then tokens n_ctx/2 .. n_ctx - 2 with every position's logits (the last
 * token of a chunk is never an input to a scored position).
 */
#include "quality.h"
#include "scenario.h"      /* tb_sha256_* (bench/harness/hash.c) */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Fingerprints                                                           */
/* ===================================================================== */

void tb_quality_hex(const uint8_t h[32], char out[65]) {
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", h[i]);
}

void tb_quality_tok_hash(const tb_tokenizer_t *t, uint8_t out[32]) {
    tb_sha256_t c;
    tb_sha256_init(&c);
    const int32_t hdr[3] = {tb_tokenizer_n_vocab(t), tb_tokenizer_bos(t), tb_tokenizer_eos(t)};
    tb_sha256_update(&c, hdr, sizeof hdr);
    char buf[512];
    for (int32_t id = 0; id < hdr[0]; id++) {
        int n = tb_token_to_bytes(t, id, true, buf, sizeof buf);
        const int32_t len = n;
        tb_sha256_update(&c, &len, sizeof len);
        if (n > 0) tb_sha256_update(&c, buf, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf));
    }
    tb_sha256_final(&c, out);
}

int tb_quality_file_hash(const char *path, uint8_t out[32]) {
    FILE *f = fopen(path, "rb");
    if (!f) return tb_quality_fail(TB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseeko(f, 0, SEEK_END) != 0) { fclose(f); return tb_quality_fail(TB_ERR_IO, "%s: cannot seek", path); }
    const off_t size = ftello(f);
    tb_sha256_t c;
    tb_sha256_init(&c);
    const uint64_t sz = (uint64_t)size;
    tb_sha256_update(&c, &sz, sizeof sz);
    enum { HEAD = 4 << 20, CHUNK = 64 << 10, SAMPLES = 64 };
    char *buf = malloc(CHUNK);
    if (!buf) { fclose(f); return tb_quality_fail(TB_ERR_NOMEM, "out of memory"); }
    int rc = TB_OK;
    for (off_t at = 0; at < size && at < HEAD && rc == TB_OK; at += CHUNK) {
        size_t n;
        if (fseeko(f, at, SEEK_SET) != 0 || (n = fread(buf, 1, CHUNK, f)) == 0)
            rc = tb_quality_fail(TB_ERR_IO, "%s: read failed at byte %lld", path, (long long)at);
        else
            tb_sha256_update(&c, buf, n);
    }
    for (int i = 0; size > HEAD && i < SAMPLES && rc == TB_OK; i++) {
        const off_t at = HEAD + (off_t)((double)(size - HEAD) * i / SAMPLES);
        size_t n;
        if (fseeko(f, at, SEEK_SET) != 0 || (n = fread(buf, 1, CHUNK, f)) == 0)
            rc = tb_quality_fail(TB_ERR_IO, "%s: read failed at byte %lld", path, (long long)at);
        else
            tb_sha256_update(&c, buf, n);
    }
    free(buf);
    fclose(f);
    if (rc == TB_OK) tb_sha256_final(&c, out);
    return rc;
}

/* ===================================================================== */
/* Pieces of the run                                                      */
/* ===================================================================== */

static int read_text(const char *path, char **out, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return tb_quality_fail(TB_ERR_IO, "%s: cannot open the text: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    while (b) {
        if (len == cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) { free(b); b = NULL; break; }
            b = nb;
            cap *= 2;
        }
        const size_t r = fread(b + len, 1, cap - len, f);
        len += r;
        if (r == 0) break;
    }
    const bool bad = !b || ferror(f);
    fclose(f);
    if (bad) { free(b); return tb_quality_fail(TB_ERR_IO, "%s: cannot read the text", path); }
    *out = b;
    *n = len;
    return TB_OK;
}

/* A loaded model with its session and fingerprints. */
typedef struct qmodel {
    tb_model_t *m;
    tb_session_t *s;
    tb_head_t *head;         /* the approximate head, or NULL */
    const tb_tokenizer_t *tok;
    uint8_t hash[32], tok_hash[32];
    char ternarize[64];
} qmodel_t;

static int engine_fail(const char *path, const char *what) {
    return tb_quality_fail(TB_ERR_IO, "%s: %s: %s", path, what, tb_last_error());
}

static int qmodel_open(const char *path, int32_t n_ctx, int32_t n_threads, const tb_head_params_t *hp,
                       qmodel_t *q) {
    memset(q, 0, sizeof *q);
    int rc = tb_model_load(path, &q->m);
    if (rc) return engine_fail(path, "cannot load the model"), rc;
    q->tok = tb_model_tokenizer(q->m);
    if (!q->tok) return tb_quality_fail(TB_ERR_FORMAT, "%s: the model has no tokenizer", path);
    if ((rc = tb_quality_file_hash(path, q->hash))) return rc;
    tb_quality_tok_hash(q->tok, q->tok_hash);
    if (tb_gguf_get_str(tb_model_gguf(q->m), "ternbench.ternarize", q->ternarize, sizeof q->ternarize) != TB_OK)
        q->ternarize[0] = '\0';
    tb_clear_error();
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = n_ctx;
    sp.n_threads = n_threads;
    if (hp && (rc = tb_head_new(q->m, hp, n_threads, &q->head)))
        return engine_fail(path, "cannot build the approximate head"), rc;
    sp.head = q->head;
    if ((rc = tb_session_new(q->m, &sp, &q->s))) return engine_fail(path, "cannot create a session"), rc;
    return TB_OK;
}

static void qmodel_close(qmodel_t *q) {
    tb_session_free(q->s);
    tb_head_free(q->head);
    tb_model_free(q->m);
    memset(q, 0, sizeof *q);
}

/* Eval one chunk (BOS already in place): its scored positions' logits are
 * then tb_session_logits(s, 0 .. n_scored - 1). hs (may be NULL) adds the
 * head's reads of the scored positions. */
static int eval_chunk(const char *path, tb_session_t *s, const int32_t *chunk, int32_t n_ctx, tb_head_stats_t *hs) {
    const int32_t first = n_ctx / 2;
    tb_session_reset(s);
    tb_head_stats_t a, b;
    int rc = tb_session_eval(s, chunk, first, false);
    tb_session_get_head_stats(s, &a);
    if (rc == TB_OK) rc = tb_session_eval(s, chunk + first, n_ctx - 1 - first, true);
    if (rc) return engine_fail(path, "eval failed");
    tb_session_get_head_stats(s, &b);
    if (hs) {
        hs->positions += b.positions - a.positions;
        hs->rows += b.rows - a.rows;
        hs->centroid_rows += b.centroid_rows - a.centroid_rows;
    }
    return TB_OK;
}

/* Build the reference's header and tokens from its model and the text. */
static int ref_from_model(const tb_quality_opts_t *o, const qmodel_t *rm, const char *text, size_t text_len,
                          int32_t n_ctx, tb_qref_t *ref) {
    int32_t cap = (int32_t)(text_len + 16 < (size_t)INT32_MAX ? text_len + 16 : INT32_MAX);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) return tb_quality_fail(TB_ERR_NOMEM, "out of memory for the tokens of %s", o->text);
    int n = tb_tokenize(rm->tok, text, text_len, true, false, ids, cap);
    if (n > cap) {            /* more ids than bytes + 16: retry at the size asked */
        free(ids);
        cap = n;
        if (!(ids = malloc((size_t)cap * sizeof *ids))) return tb_quality_fail(TB_ERR_NOMEM, "out of memory");
        n = tb_tokenize(rm->tok, text, text_len, true, false, ids, cap);
    }
    if (n < 0) {
        free(ids);
        return tb_quality_fail(n, "%s: cannot tokenize: %s", o->text, tb_last_error());
    }
    if (n < 2 * n_ctx) {
        free(ids);
        return tb_quality_fail(TB_ERR_ARG, "%s: the text is %d tokens, shorter than two chunks of --ctx %d "
                               "(%d tokens needed)", o->text, n, n_ctx, 2 * n_ctx);
    }
    int32_t n_chunk = n / n_ctx;
    if (o->n_chunks > 0 && o->n_chunks < n_chunk) n_chunk = o->n_chunks;
    const int32_t bos = tb_tokenizer_bos(rm->tok);
    *ref = (tb_qref_t){.n_vocab = (uint32_t)tb_model_n_vocab(rm->m), .n_ctx = (uint32_t)n_ctx,
                       .n_chunk = (uint32_t)n_chunk, .n_scored = (uint32_t)(n_ctx - 1 - n_ctx / 2),
                       .flags = bos >= 0 && ids[0] == bos, .bos = bos,
                       .text_bytes = text_len, .n_text_tokens = (uint64_t)n};
    ref->k = ref->n_vocab < TB_QUALITY_TOPK ? ref->n_vocab : TB_QUALITY_TOPK;
    memcpy(ref->model_hash, rm->hash, 32);
    memcpy(ref->tok_hash, rm->tok_hash, 32);
    ref->tokens = realloc(ids, (size_t)n_chunk * (size_t)n_ctx * sizeof *ids);
    if (!ref->tokens) { free(ids); return tb_quality_fail(TB_ERR_NOMEM, "out of memory"); }
    ref->recs = calloc((size_t)n_chunk * ref->n_scored, sizeof *ref->recs);
    if (!ref->recs) return tb_quality_fail(TB_ERR_NOMEM, "out of memory for %d chunks of records", n_chunk);
    return TB_OK;
}

/* A reference file must match the test model and the text it is run with. */
static int ref_check(const tb_quality_opts_t *o, const tb_qref_t *ref, const uint8_t text_hash[32],
                     const qmodel_t *tm) {
    char a[65], b[65];
    if (memcmp(ref->text_hash, text_hash, 32)) {
        tb_quality_hex(ref->text_hash, a);
        tb_quality_hex(text_hash, b);
        return tb_quality_fail(TB_ERR_ARG, "%s: the reference was made from another text (SHA-256 %.16s...), "
                               "%s has %.16s...", o->ref_file, a, o->text, b);
    }
    if (o->n_ctx > 0 && (uint32_t)o->n_ctx != ref->n_ctx)
        return tb_quality_fail(TB_ERR_ARG, "%s: the reference has a context of %u tokens, --ctx asks %d",
                               o->ref_file, ref->n_ctx, o->n_ctx);
    if (!tm) return TB_OK;
    if ((uint32_t)tb_model_n_vocab(tm->m) != ref->n_vocab)
        return tb_quality_fail(TB_ERR_ARG, "%s: the reference has a vocabulary of %u tokens, %s has %d",
                               o->ref_file, ref->n_vocab, o->model, tb_model_n_vocab(tm->m));
    if (memcmp(ref->tok_hash, tm->tok_hash, 32)) {
        tb_quality_hex(ref->tok_hash, a);
        tb_quality_hex(tm->tok_hash, b);
        return tb_quality_fail(TB_ERR_ARG, "%s: the reference was made with another tokenizer (SHA-256 %.16s...), "
                               "%s has %.16s...", o->ref_file, a, o->model, b);
    }
    return TB_OK;
}

/* ===================================================================== */
/* The run                                                                */
/* ===================================================================== */

static int check_opts(const tb_quality_opts_t *o) {
    if (!o->text) return tb_quality_fail(TB_ERR_ARG, "quality: a text file is required");
    if (!o->ref_model == !o->ref_file)
        return tb_quality_fail(TB_ERR_ARG, "quality: give exactly one reference: a model or a reference file");
    if (o->save_ref && !o->ref_model)
        return tb_quality_fail(TB_ERR_ARG, "quality: saving a reference needs the reference model");
    if (!o->model && !o->save_ref)
        return tb_quality_fail(TB_ERR_ARG, "quality: nothing to do: give a test model or a file to save the reference to");
    if (o->n_ctx != 0 && (o->n_ctx < 8 || o->n_ctx > (1 << 20)))
        return tb_quality_fail(TB_ERR_ARG, "quality: context %d out of range 8..1048576", o->n_ctx);
    return TB_OK;
}

int tb_quality_run(const tb_quality_opts_t *o, tb_quality_result_t *r) {
    memset(r, 0, sizeof *r);
    int rc = check_opts(o);
    if (rc) return rc;
    const int32_t threads = o->n_threads > 0 ? o->n_threads : 1;
    char *text = NULL;
    size_t text_len = 0;
    uint8_t text_hash[32];
    qmodel_t rm = {0}, tm = {0};
    tb_qref_t ref = {0};
    tb_quality_acc_t acc = {0};
    float *lp = NULL, *lq = NULL;
    uint8_t *mark = NULL;
    int32_t *chunk = NULL;
    tb_head_stats_t hs = {0};
    if ((rc = read_text(o->text, &text, &text_len))) goto done;
    tb_sha256_t c;
    tb_sha256_init(&c);
    tb_sha256_update(&c, text, text_len);
    tb_sha256_final(&c, text_hash);

    int32_t n_ctx = o->n_ctx ? o->n_ctx : 512;
    if (o->ref_file) {
        if ((rc = tb_qref_read(o->ref_file, &ref))) goto done;
        n_ctx = (int32_t)ref.n_ctx;
        if ((rc = ref_check(o, &ref, text_hash, NULL))) goto done;
        if (o->n_chunks > 0 && (uint32_t)o->n_chunks < ref.n_chunk) ref.n_chunk = (uint32_t)o->n_chunks;
    } else {
        if ((rc = qmodel_open(o->ref_model, n_ctx, threads, NULL, &rm))) goto done;
        if ((rc = ref_from_model(o, &rm, text, text_len, n_ctx, &ref))) goto done;
        memcpy(ref.text_hash, text_hash, 32);
    }
    if (o->model) {
        if ((rc = qmodel_open(o->model, n_ctx, threads, o->approx_head ? &o->head : NULL, &tm))) goto done;
        if (o->ref_file && (rc = ref_check(o, &ref, text_hash, &tm))) goto done;
        if (o->ref_model) {
            const tb_quality_opts_t o2 = {.ref_file = o->ref_model, .model = o->model, .text = o->text};
            if ((rc = ref_check(&o2, &ref, text_hash, &tm))) goto done;
        }
    }
    const int32_t V = (int32_t)ref.n_vocab, ns = (int32_t)ref.n_scored;
    lp = malloc((size_t)V * sizeof *lp);
    lq = malloc((size_t)V * sizeof *lq);
    mark = calloc((size_t)V, 1);
    chunk = malloc((size_t)n_ctx * sizeof *chunk);
    if (!lp || !lq || !mark || !chunk) { rc = tb_quality_fail(TB_ERR_NOMEM, "out of memory"); goto done; }

    for (uint32_t ci = 0; ci < ref.n_chunk; ci++) {
        memcpy(chunk, ref.tokens + (size_t)ci * ref.n_ctx, (size_t)n_ctx * sizeof *chunk);
        if (ref.flags & 1) chunk[0] = ref.bos;
        if (rm.s && (rc = eval_chunk(o->ref_model, rm.s, chunk, n_ctx, NULL))) goto done;
        if (tm.s && (rc = eval_chunk(o->model, tm.s, chunk, n_ctx, &hs))) goto done;
        for (int32_t j = 0; j < ns; j++) {
            tb_quality_rec_t *rec = &ref.recs[(size_t)ci * (size_t)ns + (size_t)j];
            const int32_t next = chunk[n_ctx / 2 + j + 1];
            if (rm.s) {
                tb_quality_log_softmax(tb_session_logits(rm.s, j), V, lp);
                tb_quality_rec_make(lp, V, (int32_t)ref.k, next, mark, rec);
            }
            if (!tm.s) continue;
            tb_quality_log_softmax(tb_session_logits(tm.s, j), V, lq);
            if ((rc = tb_quality_acc_add(&acc, rec, (int32_t)ref.k, lq, rm.s ? lp : NULL, V, next, mark))) goto done;
        }
        if (o->progress) o->progress(o->progress_ud, (int32_t)ci + 1, (int32_t)ref.n_chunk);
    }
    if (o->save_ref && (rc = tb_qref_write(o->save_ref, &ref))) goto done;
    if (tm.s) {
        if ((rc = tb_quality_summarize(&acc, &r->st))) goto done;
        r->has_test = true;
        tb_quality_hex(tm.hash, r->test_hash);
        snprintf(r->test_ternarize, sizeof r->test_ternarize, "%s", tm.ternarize);
        r->approx_head = tm.head != NULL;
        if (tm.head) tb_head_get_info(tm.head, &r->head);
        r->head_rows_per_token = hs.positions ? (double)hs.rows / (double)hs.positions : 0;
        r->head_centroids_per_token = hs.positions ? (double)hs.centroid_rows / (double)hs.positions : 0;
    }
    r->n_ctx = n_ctx;
    r->n_chunk = (int32_t)ref.n_chunk;
    r->n_vocab = V;
    r->k = (int32_t)ref.k;
    r->n_text_tokens = (int64_t)ref.n_text_tokens;
    tb_quality_hex(ref.model_hash, r->ref_hash);
    tb_quality_hex(text_hash, r->text_hash);
    tb_quality_hex(ref.tok_hash, r->tok_hash);
    snprintf(r->ref_ternarize, sizeof r->ref_ternarize, "%s", rm.ternarize);
done:
    free(text);
    free(lp);
    free(lq);
    free(mark);
    free(chunk);
    tb_qref_free(&ref);
    tb_quality_acc_free(&acc);
    qmodel_close(&rm);
    qmodel_close(&tm);
    return rc;
}
