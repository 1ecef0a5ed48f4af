/*
 * synth.h — model synthesis internals (not public): presets, the "plan" of a
 * synthetic GGUF (metadata + tensor list, computed without writing a byte),
 * the built-in byte-level BPE vocabulary and the seeded random generators.
 *
 * Data flow of tb_synth_model():
 *
 *   preset ──plan_build──▶ plan (kv list, vocab, tensor list, exact file size)
 *                              │
 *                              ▼
 *   writer ◀── declare ── plan ──▶ fill chunks in parallel (seeded per chunk)
 *                                     │
 *                                     ▼  in order
 *                              tb_gguf_write_tensor_data
 *
 * The plan is what tests inspect for the 5.9 GB maple-preview preset.
 */
#ifndef TB_SYNTH_H
#define TB_SYNTH_H

#include "internal.h"

#include <stdint.h>

/* ===================================================================== */
/* Presets                                                                */
/* ===================================================================== */

typedef enum synth_arch { SYNTH_ARCH_LLAMA, SYNTH_ARCH_MAPLE } synth_arch_t;

typedef struct synth_preset {
    const char *name;
    synth_arch_t arch;
    int32_t n_layer, n_embd, n_head, n_head_kv, head_dim;
    int32_t n_ff;                       /* dense FFN width (0: MoE)        */
    int32_t n_expert, n_expert_used, n_ff_exp;
    int32_t n_swa;                      /* sliding window (0: none)        */
    int32_t global_every;               /* layer il is global iff il % k == k-1 */
    int32_t rope_dims;
    int32_t n_vocab;                    /* built-in vocabulary size        */
    int32_t n_ctx_train;
    float rope_base, rope_base_swa, norm_eps, swiglu_clamp;
    tb_type_t proj_type;                /* default projection/expert type  */
    tb_type_t embd_type, output_type;   /* token_embd, output              */
    const char *pre;                    /* tokenizer.ggml.pre (built-in)   */
} synth_preset_t;

/* The preset called `name`, or NULL. */
const synth_preset_t *synth_preset_find(const char *name);

/* ===================================================================== */
/* Plan                                                                   */
/* ===================================================================== */

/* How a tensor's values are drawn. */
typedef enum synth_init {
    SYNTH_INIT_WEIGHT,   /* ~N(0, 1/sqrt(ne[0])) or its quantized equivalent */
    SYNTH_INIT_NORM,     /* 1 + small noise                                   */
} synth_init_t;

typedef struct synth_tensor {
    char name[64];
    tb_type_t type;
    int n_dims;
    int64_t ne[4];          /* ne[0] = input dim (row length); unused = 1 */
    uint64_t nbytes;
    synth_init_t init;
} synth_tensor_t;

typedef enum synth_kv_kind {
    SYNTH_KV_U32, SYNTH_KV_F32, SYNTH_KV_BOOL, SYNTH_KV_STR, SYNTH_KV_U64,
    SYNTH_KV_ARR,        /* fixed-size elements (arr_type), owned copy */
} synth_kv_kind_t;

typedef struct synth_kv {
    char key[96];
    synth_kv_kind_t kind;
    union { uint32_t u32; float f32; bool b; char str[128]; uint64_t u64; } v;
    tb_gguf_vtype_t arr_type;
    void *arr;
    uint64_t arr_n;
} synth_kv_t;

/* A byte-level BPE vocabulary ("gpt2" model). */
typedef struct synth_vocab {
    int32_t n_tokens;
    char **tokens;          /* (n_tokens) NUL-terminated UTF-8          */
    int32_t *types;         /* (n_tokens) 1 normal, 3 control, 5 unused */
    int32_t n_merges;
    char **merges;          /* (n_merges) "A B"                          */
    int32_t bos, eos;
} synth_vocab_t;

typedef struct synth_plan {
    const synth_preset_t *preset;
    tb_type_t proj_type;
    int32_t n_vocab;
    uint64_t seed;
    synth_kv_t *kv;         /* model keys (tokenizer keys not included) */
    int n_kv, cap_kv;
    synth_vocab_t vocab;    /* built-in vocabulary (empty with vocab_src) */
    tb_gguf_t *vocab_src;   /* --vocab-from source, or NULL              */
    synth_tensor_t *tensors;
    int n_tensors, cap_tensors;
    uint64_t data_bytes;    /* tensor data incl. alignment padding       */
    uint64_t file_bytes;    /* exact size of the GGUF file               */
    int64_t n_params;
} synth_plan_t;

/* Build the complete plan for `p` (no tensor data is generated). The plan
 * owns everything it points to; free with synth_plan_free even on failure. */
int  synth_plan_build(const tb_synth_params_t *p, synth_plan_t *out);
void synth_plan_free(synth_plan_t *pl);
const synth_kv_t *synth_plan_find_kv(const synth_plan_t *pl, const char *key);
/* The named tensor (exact, or bare "blk.0.attn_q" for "blk.0.attn_q.weight"); NULL. */
const synth_tensor_t *synth_plan_find_tensor(const synth_plan_t *pl, const char *name);
/* Append a key to the plan's metadata (zeroed value); NULL when out of memory. */
synth_kv_t *synth_plan_push_kv(synth_plan_t *pl, const char *key, synth_kv_kind_t kind);
/* Declare the plan's metadata and tensors on a fresh writer. */
int  synth_plan_declare(const synth_plan_t *pl, tb_gguf_writer_t *w);

/* Provenance of a synthesized file (verify.c): what it was made from and
 * a digest of its tensor data, checked by tb_synth_verify before a cached
 * file is trusted. The digest is SipHash-2-4 under SYNTH_DIGEST_KEY of
 * every tensor's bytes in file order (padding excluded); it is written as
 * 0 with the header and patched once the data is out. */
#define SYNTH_KEY_PRESET "ternbench.synth.preset"
#define SYNTH_KEY_TYPE   "ternbench.synth.type"
#define SYNTH_KEY_SEED   "ternbench.synth.seed"
#define SYNTH_KEY_VOCAB  "ternbench.synth.vocab_digest"
#define SYNTH_KEY_DIGEST "ternbench.synth.data_digest"
#define SYNTH_KEY_PREFIX "ternbench.synth."
extern const uint64_t SYNTH_DIGEST_KEY[2];
/* Append the provenance keys to a plan (after its vocabulary is known). */
int  synth_plan_provenance(synth_plan_t *pl);

/* general.file_type (llama.cpp's LLAMA_FTYPE) for a main weight type. */
uint32_t synth_ftype_of(tb_type_t t);

/* tb_synth_model with an explicit generator thread count (1..8); the
 * bytes written do not depend on it. */
int  synth_model_run(const tb_synth_params_t *p, const char *out_path, int n_threads);

/* ===================================================================== */
/* Built-in vocabulary                                                    */
/* ===================================================================== */

/* Byte alphabet (256 tokens, id = byte), merges learned from a built-in
 * English text, the three specials, then unused fillers up to n_vocab
 * (which must be >= 259 + 1). Deterministic. */
int  synth_vocab_build(int32_t n_vocab, synth_vocab_t *out);
void synth_vocab_free(synth_vocab_t *v);

/* ===================================================================== */
/* Random generation                                                      */
/* ===================================================================== */

typedef struct synth_rng { uint64_t s[4]; } synth_rng_t;

/* Seed a xoshiro256** stream from (seed, a, b) via splitmix64. */
void synth_rng_seed(synth_rng_t *r, uint64_t seed, uint64_t a, uint64_t b);
uint64_t synth_rng_next(synth_rng_t *r);

/* Fill `rows` rows of tensor t (each ne[0] elements) into dst, drawing
 * from r. scratch holds at least ne[0] floats. Ternary and Q4_K blocks are
 * generated directly (realistic statistics, P(0) ≈ 0.39 for trits); other
 * types from N(0, 1/sqrt(ne[0])) floats. */
int synth_fill_rows(const synth_tensor_t *t, synth_rng_t *r, int64_t rows,
                    void *dst, float *scratch);

/* ===================================================================== */
/* Pool workers (generation in synth.c, conversion in quantize_model.c)   */
/* ===================================================================== */

#define SYNTH_MAX_THREADS 8

/* Per-thread scratch and first error of a job run on the pool. tb_err's
 * message is thread-local, so a failing worker copies it here for the
 * calling thread to raise. */
typedef struct synth_workers {
    float *scratch[SYNTH_MAX_THREADS];   /* (ne0) per thread */
    int rc[SYNTH_MAX_THREADS];
    char msg[SYNTH_MAX_THREADS][256];
} synth_workers_t;

/* Threads to use: the online CPUs, clamped to 1..SYNTH_MAX_THREADS. */
int  synth_threads(void);
/* Give every thread a scratch of ne0 floats; false when out of memory
 * (the caller says what it was allocating). Free with synth_workers_free
 * either way. */
bool synth_workers_alloc(synth_workers_t *w, int64_t ne0);
void synth_workers_free(synth_workers_t *w);
/* In worker ith: record rc and this thread's tb_last_error(). */
void synth_workers_fail(synth_workers_t *w, int ith, int rc);
/* After the job: the first thread that failed, or -1. */
int  synth_workers_failed(const synth_workers_t *w);

#endif
