/*
 * dispatch.c — choose the kernel tier once, from libcpuid, capped by TB_ISA.
 * (Minimal version: ref and generic only; ISA tiers are added by the kernels work.)
 */
#include "kernels/kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static tb_kernels_t tables[TB_ISA_NEON + 1];
static bool table_ok[TB_ISA_NEON + 1];
static tb_isa_t best = TB_ISA_GENERIC, active = TB_ISA_GENERIC;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void inherit(tb_kernels_t *dst, const tb_kernels_t *lower) {
    for (int t = 0; t < TB_TYPE_COUNT; t++) {
        tb_type_kernels_t *d = &dst->t[t];
        const tb_type_kernels_t *l = &lower->t[t];
        if (!d->quantize_act) d->quantize_act = l->quantize_act;
        if (!d->vec_dot) d->vec_dot = l->vec_dot;
        if (!d->matvec) d->matvec = l->matvec;
        if (!d->gemm) d->gemm = l->gemm;
    }
}

static void init(void) {
    tb_kernels_fill_ref(&tables[TB_ISA_REF]);
    table_ok[TB_ISA_REF] = true;
    tables[TB_ISA_GENERIC].isa = TB_ISA_GENERIC;
    tables[TB_ISA_GENERIC].features = "";
    tb_kernels_fill_generic(&tables[TB_ISA_GENERIC]);
    inherit(&tables[TB_ISA_GENERIC], &tables[TB_ISA_REF]);
    table_ok[TB_ISA_GENERIC] = true;
    best = TB_ISA_GENERIC;
    active = best;
    const char *env = getenv("TB_ISA");
    tb_isa_t cap;
    if (env && *env && tb_isa_from_name(env, &cap) == TB_OK && cap < active) active = cap;
}

const tb_kernels_t *tb_kernels(void) {
    pthread_once(&once, init);
    return &tables[active];
}

const tb_kernels_t *tb_kernels_for(tb_isa_t isa) {
    pthread_once(&once, init);
    if ((unsigned)isa > TB_ISA_NEON || !table_ok[isa]) return NULL;
    return &tables[isa];
}

tb_isa_t tb_isa_best(void) { pthread_once(&once, init); return best; }
tb_isa_t tb_isa_active(void) { pthread_once(&once, init); return active; }

int tb_isa_set(tb_isa_t cap) {
    pthread_once(&once, init);
    if ((unsigned)cap > TB_ISA_NEON || !table_ok[cap])
        return tb_err(TB_ERR_UNSUPPORTED, "ISA tier '%s' is not available on this CPU/build (best: %s)",
                      tb_isa_name(cap), tb_isa_name(best));
    active = cap;
    return TB_OK;
}

static const char *const isa_names[] = {"ref", "generic", "avx2", "avx512", "neon"};

const char *tb_isa_name(tb_isa_t isa) {
    return (unsigned)isa < TB_ARRAY_LEN(isa_names) ? isa_names[isa] : "?";
}

int tb_isa_from_name(const char *name, tb_isa_t *out) {
    for (unsigned i = 0; i < TB_ARRAY_LEN(isa_names); i++)
        if (strcasecmp(name, isa_names[i]) == 0) { *out = (tb_isa_t)i; return TB_OK; }
    return tb_err(TB_ERR_ARG, "unknown ISA tier '%s' (expected ref, generic, avx2, avx512 or neon)", name);
}

const char *tb_isa_features(void) { return tb_kernels()->features; }

size_t tb_act_row_bytes(tb_type_t wtype, int64_t n) {
    const tb_type_traits_t *tr = tb_type_traits(wtype);
    if (!tr) return 0;
    return tb_type_row_bytes(tr->vec_dot_type, n);
}
