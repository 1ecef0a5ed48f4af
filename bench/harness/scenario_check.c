/*
 * scenario_check.c — `ternbench scenario check`'s static plan check: what
 * a valid scenario asks that cannot run whatever the model, found without
 * loading it (each problem "FILE:LINE: message"). `run` still runs such a
 * plan and records the impossible tests as failed with the same reason.
 */
#include "scenario.h"
#include "workload.h"

/* The line a case's size comes from: its list key, else the header. */
static int case_line(const tb_section_t *t) {
    tb_key_t k = t->kind == TB_SEC_PREFILL ? K_PREFILL_PROMPT_TOKENS
               : t->kind == TB_SEC_DECODE ? K_DECODE_DEPTHS
               : t->kind == TB_SEC_TTFT ? K_TTFT_PROMPT_TOKENS
               : t->kind == TB_SEC_GENERATE ? K_GEN_PROMPT_TOKENS
               : t->kind == TB_SEC_CLAIM ? K_CLAIM_CTX : K_SUS_CTX;
    if (t->v[k].line) return t->v[k].line;
    if (t->kind == TB_SEC_DECODE && t->v[K_DECODE_TOKENS].line) return t->v[K_DECODE_TOKENS].line;
    if (t->kind == TB_SEC_GENERATE && t->v[K_GEN_TOKENS].line) return t->v[K_GEN_TOKENS].line;
    return t->line > 0 ? t->line : 1;
}

int tb_plan_check(const tb_plan_t *p, FILE *out) {
    int n = 0;
    const int64_t ctx = p->engine.v[K_ENGINE_CTX].i;   /* 0: each test's own need */
    if (ctx <= 0) return 0;
    for (int i = 0; i < p->n_tests; i++) {
        const tb_section_t *t = &p->tests[i];
        for (int j = 0; j < tb_section_n_cases(t); j++) {
            int64_t param = tb_section_case_param(t, j);
            /* a whole prompt file's length in tokens is known only with the model */
            if ((t->kind == TB_SEC_TTFT || t->kind == TB_SEC_GENERATE) && param == 0) continue;
            if (t->kind == TB_SEC_QUALITY) continue;   /* its own sessions of its own ctx */
            int32_t need = tb_work_ctx_needed(t, param, (int)param);
            if (need <= ctx) continue;
            char label[96];
            tb_section_case_label(t, j, label, sizeof label);
            fprintf(out, "%s:%d: [%s] %s needs %d context positions; [engine] ctx is %lld (line %d): "
                    "this test cannot run\n", p->path, case_line(t), t->name, label, (int)need, (long long)ctx,
                    p->engine.v[K_ENGINE_CTX].line);
            n++;
        }
    }
    return n;
}
