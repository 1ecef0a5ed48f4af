/*
 * geometry.h — engine-internal helpers shared by geometry.c (the account)
 * and geometry_presets.c (tensor tables built from published shapes).
 */
#ifndef TB_MODEL_GEOMETRY_H
#define TB_MODEL_GEOMETRY_H

#include "internal.h"
#include "ternbench.h"

/* What a tensor is to the account, from its ggml name. */
typedef enum tb_geom_role {
    TB_GEOM_DENSE = 0,    /* read in full every token (projections, norms, router) */
    TB_GEOM_EXPERT,       /* *_exps stack: n_expert_used / n_expert of it is read  */
    TB_GEOM_EMBD,         /* token_embd: one row read                              */
    TB_GEOM_HEAD,         /* output                                                */
} tb_geom_role_t;

tb_geom_role_t tb_geom_role(const char *name);
/* A zeroed geometry with n_layer layer kinds and room for cap_tensors tensors. */
int tb_geom_alloc(tb_geometry_t **out, int32_t n_layer, int64_t cap_tensors);

#endif
