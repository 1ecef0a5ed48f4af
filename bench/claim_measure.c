/*
 * claim_measure.c — `claim --measure`: decode on this machine with the
 * engine, so the measured speed stands beside the projection for `this`.
 * The KV cache is first filled to the condition's context with a fixed
 * token pattern (batched prefill, untimed), one token is decoded untimed to
 * warm the caches, then n tokens are decoded one by one and timed.
 */
#include "claim.h"
#include "ternbench.h"

#include <stdio.h>
#include <stdlib.h>

int cl_measure(const char *gguf, int ctx, int n_tokens, int threads, int kv, double *tok_s) {
    *tok_s = 0;
    tb_model_t *m;
    if (tb_model_load_ex(gguf, &(tb_model_params_t){.weights = TB_WEIGHTS_COPY, .n_threads = threads}, &m) != TB_OK) {
        fprintf(stderr, "ternbench claim --measure: %s\n", tb_last_error());
        return 2;
    }
    tb_session_params_t sp = tb_session_default_params();
    sp.n_ctx = ctx + n_tokens + 2;
    sp.n_threads = threads;
    sp.kv_type = (tb_type_t)kv;
    tb_session_t *s = NULL;
    int rc = 0;
    int32_t nv = tb_model_n_vocab(m);
    int32_t *ids = malloc(sizeof *ids * (size_t)(ctx > 0 ? ctx : 1));
    if (!ids || tb_session_new(m, &sp, &s) != TB_OK) {
        fprintf(stderr, "ternbench claim --measure: %s\n", ids ? tb_last_error() : "out of memory");
        rc = 1;
        goto done;
    }
    for (int i = 0; i < ctx; i++) ids[i] = 1 + (int32_t)(((int64_t)i * 7919) % (nv > 1 ? nv - 1 : 1));
    int32_t t = 1 % nv;
    if ((ctx > 0 && tb_session_eval(s, ids, ctx, false) != TB_OK) || tb_session_eval(s, &t, 1, false) != TB_OK) {
        fprintf(stderr, "ternbench claim --measure: %s\n", tb_last_error());
        rc = 1;
        goto done;
    }
    uint64_t t0 = tb_now_ns();
    for (int i = 0; i < n_tokens; i++) {
        t = (int32_t)((i * 31 + 5) % nv);
        if (tb_session_eval(s, &t, 1, false) != TB_OK) {
            fprintf(stderr, "ternbench claim --measure: %s\n", tb_last_error());
            rc = 1;
            goto done;
        }
    }
    uint64_t dt = tb_now_ns() - t0;
    *tok_s = dt > 0 ? (double)n_tokens * 1e9 / (double)dt : 0;
done:
    tb_session_free(s);
    free(ids);
    tb_model_free(m);
    return rc;
}
