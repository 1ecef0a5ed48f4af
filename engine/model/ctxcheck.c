/*
 * ctxcheck.c — tb_model_ctx_check: is a context longer than the model was
 * trained for?
 *
 * Such a context is allowed (a speed benchmark at a long context is still
 * a valid measurement: the work per token does not depend on whether the
 * positions were trained), but positions past the trained length give
 * untrained rotary angles, so generated text there says nothing about the
 * model. The library never prints: callers show the note as a warning.
 */
#include "model/model.h"

#include <stdio.h>

bool tb_model_ctx_check(const tb_model_t *m, int32_t n_ctx, char *note, size_t cap) {
    if (note && cap) note[0] = '\0';
    tb_model_info_t in;
    if (!m || tb_model_get_info(m, &in) != TB_OK) return false;
    if (in.n_ctx_train <= 0 || n_ctx <= in.n_ctx_train) return false;
    if (note && cap)
        snprintf(note, cap, "context of %d positions exceeds the %d the model was trained for: "
                 "speed is measured as usual, but text past position %d is not meaningful",
                 (int)n_ctx, (int)in.n_ctx_train, (int)in.n_ctx_train);
    return true;
}
