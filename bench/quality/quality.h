/*
 * quality.h — output quality of a test model against a reference: perplexity,
 * KL divergence, same top-1 and Δp, with llama.cpp's `llama-perplexity
 * --kl-divergence` definitions (docs/quality.md gives every formula), and the
 * reference file that stores the reference's side once.
 *
 *   metrics.c   log-softmax, the top-K record of a reference distribution,
 *               per-token comparison, accumulation and the summary
 *   reffile.c   the reference file (format below): write, read, validate
 *   run.c       the pipeline: tokenize the text once, cut it into chunks of
 *               n_ctx tokens (BOS first when the vocabulary adds one), score
 *               the second half of each chunk
 *
 * Uses only the public engine API (ternbench.h) and the harness's SHA-256.
 * Errors: functions return 0 or a negative TB_ERR_* code and leave a message
 * naming the file (and offset) in tb_quality_last_error().
 */
#ifndef TB_QUALITY_H
#define TB_QUALITY_H

#include "ternbench.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Top-K kept per scored token in a reference: 32 log-probabilities keep the
 * reference of a 151,936-token vocabulary at 264 bytes per token. */
#define TB_QUALITY_TOPK 32

/* The last error of this thread's quality calls ("" when none). */
const char *tb_quality_last_error(void);
/* Set that message (printf-style) and return status; for the module's files. */
int tb_quality_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ===================================================================== */
/* Per-token records and metrics (metrics.c)                              */
/* ===================================================================== */

/* The reference's next-token distribution at one scored position, reduced
 * to its top k (k <= TB_QUALITY_TOPK) log-probabilities and the mass of
 * the rest. */
typedef struct tb_quality_rec {
    int32_t id[TB_QUALITY_TOPK];   /* (k) token ids, log-prob descending, ties lowest id first */
    float lp[TB_QUALITY_TOPK];     /* (k) their log-probabilities                              */
    float lp_next;                 /* log-prob of the token that follows in the text           */
    float tail;                    /* Σ p_i over the ids not in id[]: (float) of a double sum  */
} tb_quality_rec_t;

/* lp (n) = log-softmax of logits (n): logits[i] - max - ln Σ_j e^(logits[j] - max),
 * the sum in double, each value rounded to float once. The same function
 * makes the reference's and the test's log-probabilities, so identical
 * logits give identical bits (self-comparison is exactly 0). */
void tb_quality_log_softmax(const float *logits, int32_t n, float *lp);

/* The top-k record of log-probabilities lp (n) for next token `next`.
 * mark (n) is scratch, all zero on entry and on return. */
void tb_quality_rec_make(const float *lp, int32_t n, int32_t k, int32_t next, uint8_t *mark,
                         tb_quality_rec_t *rec);

/* Running sums over scored tokens, and each token's KLD and Δp for the
 * percentiles. Zero-initialize, then tb_quality_acc_add per token. */
typedef struct tb_quality_acc {
    int64_t n, n_same, n_full;
    double nll, nll2, nllb, nllb2, nll_nllb;   /* test and reference -ln p(next)  */
    double kld, kld2, kld_ub, kld_full;        /* KL sums (see tb_quality_acc_add) */
    double dp, dp2, dp4;                       /* Δp sums                          */
    float *kld_v, *dp_v;                       /* (cap) per token                  */
    int64_t cap;
} tb_quality_acc_t;

/* Add one scored token: the reference record rec (k entries), the test's
 * log-probabilities lq (n) and, when non-NULL, the reference's full
 * log-probabilities lp (n) for the exact full-vocabulary KL. mark (n) is
 * scratch as for tb_quality_rec_make. Per token:
 *   nll  = -lq[next],  nllb = -rec.lp_next
 *   KLD  = Σ_{j<k} p_j (lp_j - lq[id_j]) + R ln(R / Q)          (the reported KL)
 *          p_j = e^lp_j, R = rec.tail, Q = Σ_{i∉top} e^lq_i      (0 when R = 0)
 *   KLD_ub = Σ_{j<k} p_j (lp_j - lq[id_j]) + max(R ln(R / Q), R (lp_{k-1} - min_{i∉top} lq_i))
 *          the true KL lies in [KLD, KLD_ub] (docs/quality.md, "top-K bound")
 *   same = argmax lq (lowest id on ties) == rec.id[0]
 *   Δp   = e^-nll - e^-nllb
 * TB_ERR_NOMEM when the per-token arrays cannot grow. */
int tb_quality_acc_add(tb_quality_acc_t *a, const tb_quality_rec_t *rec, int32_t k, const float *lq,
                       const float *lp, int32_t n, int32_t next, uint8_t *mark);
void tb_quality_acc_free(tb_quality_acc_t *a);

/* The summary, as llama-perplexity prints it. Uncertainties are one
 * standard error: for a mean of x, sqrt((E[x²] - E[x]²) / (n - 1)) (0 when
 * n <= 10). NaN where a figure is undefined (no full KL without lp). */
typedef struct tb_quality_stats {
    int64_t n;                       /* scored tokens                                  */
    double ppl, ppl_unc;             /* test: e^mean(nll), e^mean(nll) · se(nll)       */
    double ppl_base, ppl_base_unc;   /* reference                                      */
    double ppl_cor;                  /* Cor(ln PPL, ln PPL_base)                       */
    double ln_ratio, ln_ratio_unc;   /* mean(nll) - mean(nllb), with the covariance    */
    double ppl_ratio, ppl_ratio_unc; /* e^ln_ratio                                     */
    double kld_mean, kld_unc;        /* the reported KL (top-K form)                   */
    double kld_median, kld_p90, kld_p95, kld_p99, kld_max;
    double kld_ub_mean;              /* mean of the per-token upper bound              */
    double kld_full_mean;            /* exact full-vocabulary KL (NaN: not available)  */
    double same_top, same_top_unc;   /* fraction, sqrt(f (1 - f) / (n - 1))            */
    double dp_mean, dp_unc;
    double dp_min, dp_p01, dp_p05, dp_p10, dp_p25, dp_median, dp_p75, dp_p90, dp_p95, dp_p99, dp_max;
    double dp_rms, dp_rms_unc;       /* sqrt(mean Δp²), 0.5 / rms · se(Δp²)            */
} tb_quality_stats_t;

/* Summarize (sorts a's per-token arrays). TB_ERR_ARG when a->n < 2. */
int tb_quality_summarize(tb_quality_acc_t *a, tb_quality_stats_t *st);
/* Linear-interpolated percentile of sorted v (n): v[f (n-1)] between neighbours. */
double tb_quality_percentile(const float *sorted, int64_t n, double f);

/* ===================================================================== */
/* Reference file (reffile.c)                                             */
/* ===================================================================== */

/* Format version 1, little-endian, sizes exact (docs/quality.md):
 *   header (TB_QREF_HEADER_BYTES):
 *      0  magic "TBQUALRF"          8  u32 version (1)     12 u32 header bytes (160)
 *     16  u32 n_vocab              20  u32 n_ctx          24 u32 n_chunk
 *     28  u32 k                    32  u32 scored per chunk (n_ctx - 1 - n_ctx/2)
 *     36  u32 flags (bit 0: each chunk's first token was replaced by BOS)
 *     40  u8[32] model SHA-256    72  u8[32] tokenizer SHA-256   104 u8[32] text SHA-256
 *    136  u64 text bytes         144  u64 text tokens    152 u32 bos id (or -1)   156 u32 0
 *   tokens: i32 (n_chunk, n_ctx), the text's tokens chunk by chunk (before BOS)
 *   records: (n_chunk, scored) of i32 id[k], f32 lp[k], f32 lp_next, f32 tail */
#define TB_QREF_MAGIC "TBQUALRF"
#define TB_QREF_VERSION 1
#define TB_QREF_HEADER_BYTES 160

typedef struct tb_qref {
    uint32_t n_vocab, n_ctx, n_chunk, k, n_scored, flags;
    int32_t bos;
    uint8_t model_hash[32], tok_hash[32], text_hash[32];
    uint64_t text_bytes, n_text_tokens;
    int32_t *tokens;                 /* (n_chunk, n_ctx)          */
    tb_quality_rec_t *recs;          /* (n_chunk, n_scored)       */
} tb_qref_t;

/* Bytes of a file with this header's shape. */
uint64_t tb_qref_file_bytes(const tb_qref_t *r);
/* Write r to path (path.tmp, then renamed). */
int tb_qref_write(const char *path, const tb_qref_t *r);
/* Read and validate path into r (owned: tb_qref_free). Errors name the file
 * and the byte offset: bad magic, unknown version, a size that does not
 * match the header (truncated or trailing bytes), ids outside the
 * vocabulary, log-probabilities that are not finite and <= 0. */
int tb_qref_read(const char *path, tb_qref_t *r);
void tb_qref_free(tb_qref_t *r);

/* ===================================================================== */
/* Fingerprints (run.c)                                                   */
/* ===================================================================== */

/* SHA-256 of the tokenizer: n_vocab, BOS and EOS ids, then every token's
 * bytes (tb_token_to_bytes, special included) with its length. */
void tb_quality_tok_hash(const tb_tokenizer_t *t, uint8_t out[32]);
/* SHA-256 over the file size, its first 4 MiB and 64 evenly spaced 64 KiB
 * samples of the rest (the results store's model content hash). */
int tb_quality_file_hash(const char *path, uint8_t out[32]);
void tb_quality_hex(const uint8_t h[32], char out[65]);

/* ===================================================================== */
/* The pipeline (run.c)                                                   */
/* ===================================================================== */

typedef struct tb_quality_opts {
    const char *model;       /* test model; NULL: only build and save the reference */
    const char *ref_model;   /* reference model, or NULL                            */
    const char *ref_file;    /* reference file to read instead, or NULL             */
    const char *save_ref;    /* write the reference here (needs ref_model), or NULL */
    const char *text;        /* the text (required)                                 */
    int32_t n_ctx;           /* tokens per chunk (>= 8); 0: 512                     */
    int32_t n_chunks;        /* chunks scored; <= 0: all that fit                   */
    int32_t n_threads;       /* 0: 1                                                */
    bool approx_head;        /* the test model runs the approximate head `head`     */
    tb_head_params_t head;
    void (*progress)(void *ud, int32_t chunk, int32_t n_chunk);
    void *progress_ud;
} tb_quality_opts_t;

typedef struct tb_quality_result {
    tb_quality_stats_t st;   /* valid when has_test                      */
    bool has_test;
    int32_t n_ctx, n_chunk, n_vocab, k;
    int64_t n_text_tokens;
    char ref_hash[65], test_hash[65], text_hash[65], tok_hash[65];
    char test_ternarize[64]; /* the test model's post-hoc ternarization ("" none) */
    char ref_ternarize[64];
    bool approx_head;        /* the test model ran the approximate head   */
    tb_head_info_t head;     /* its clustering (when approx_head)         */
    double head_rows_per_token;      /* output rows the test's head multiplied per scored position */
    double head_centroids_per_token; /* centroid rows per scored position (approximate head)        */
} tb_quality_result_t;

/* Run it: reference from ref_model or ref_file, optionally saved; then,
 * when model is set, the test model scored against it. Errors (message
 * naming the file): a text shorter than two chunks, a reference file of
 * another vocabulary, tokenizer or text, a truncated reference file. */
int tb_quality_run(const tb_quality_opts_t *o, tb_quality_result_t *r);

#endif
