/*
 * helpers.h — shared fixtures of the model tests: a temporary directory,
 * synthetic models, a GGUF rewriter that breaks a model on purpose, and
 * comparison helpers.
 */
#ifndef TB_TEST_MODEL_HELPERS_H
#define TB_TEST_MODEL_HELPERS_H

#include "ternbench.h"

#include <stddef.h>

/* mkdtemp() under $TMPDIR (or /tmp) into dir (>= 256 bytes); 0 on success. */
int th_tmpdir(char *dir);
/* Remove every file in dir, then dir itself. */
void th_rmdir(const char *dir);

/* The suite's scratch directory: th_setup makes it (th_tmpdir), th_teardown
 * removes it; pass both to cmocka_run_group_tests. */
extern char th_dir[256];
int th_setup(void **st);
int th_teardown(void **st);

/* dir/<preset>[-type].gguf via tb_synth_model (seed fixed); path out. */
int th_synth(const char *dir, const char *preset, int type, char *path, size_t cap);

/* Copy GGUF src to dst, with edits: drop_tensor (NULL: none) is omitted;
 * transpose_tensor (NULL: none) gets ne[0] and ne[1] swapped; arch (NULL:
 * keep) replaces general.architecture; drop_key (NULL: none) is omitted. */
typedef struct th_edit {
    const char *drop_tensor, *transpose_tensor, *arch, *drop_key;
} th_edit;
int th_rewrite(const char *src, const char *dst, const th_edit *e);

/* ||a - b|| / ||b|| over n values (b the reference). */
double th_rel_l2(const float *a, const float *b, size_t n);
double th_rel_l2_d(const float *a, const double *b, size_t n);
/* Index of the largest value (lowest on ties). */
int th_argmax(const float *x, int n);
int th_argmax_d(const double *x, int n);

/* Greedy continuation: eval prompt (one call, or token by token when
 * one_by_one), then n_gen greedy tokens into gen. Returns TB_OK or status;
 * the last logits are copied to last_logits (n_vocab) when non-NULL. */
int th_greedy(const tb_model_t *m, int n_threads, int n_batch, tb_type_t kv,
              const int32_t *prompt, int n_prompt, bool one_by_one,
              int32_t *gen, int n_gen, float *last_logits);

/* th_dir/<preset>[-type].gguf synthesized and loaded into *m, whose
 * layers must all split at 2 threads (tb_model_info_t.split_layers).
 * Returns 0, or -1 with the reason on stderr. */
int th_load_split(const char *preset, int type, tb_model_t **m);

/* Two sessions on m with the params sp: *s1 on 1 thread, *s2 on 2 (the
 * split decode's pair to compare). Returns the first failing rc. */
int th_sessions_1_2(const tb_model_t *m, tb_session_params_t sp, tb_session_t **s1, tb_session_t **s2);

/* A deterministic pseudo-random prompt of n ids in [0, n_vocab). */
void th_prompt(int32_t *ids, int n, int n_vocab, uint32_t seed);

#endif
