/*
 * ref.h — an independent, naive, double-precision forward pass for F32
 * llama/maple GGUF models. It shares nothing with the engine except the
 * GGUF reader (tb_gguf_*): its own key reading, its own norms, RoPE,
 * attention (full causal recomputation, no KV cache) and MoE routing.
 */
#ifndef TB_TEST_REF_H
#define TB_TEST_REF_H

#include "ternbench.h"

typedef struct ref_model ref_model;

/* Open path; only F32 tensors are accepted. Returns 0 or a message in err. */
int ref_load(const char *path, ref_model **out, char *err, size_t err_cap);
void ref_free(ref_model *m);
int ref_n_vocab(const ref_model *m);
/* logits (n, n_vocab) of tokens at positions 0..n-1. */
void ref_forward(const ref_model *m, const int32_t *tokens, int n, double *logits);

#endif
