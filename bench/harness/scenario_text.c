/*
 * scenario_text.c — text forms of a plan: canonical values, the normalized
 * text (hashed and stored with every run), `scenario explain`, the markdown
 * key reference, and the expansion of test sections into labelled cases.
 */
#include "scenario.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* Canonical values                                                       */
/* ===================================================================== */

/* Canonical integer with its unit class: durations in the largest exact
 * unit ("90s", "5m", "250ms"); counts and plain numbers in decimal. */
static int fmt_int(tb_unit_t unit, int64_t x, char *buf, size_t cap) {
    if (unit == TB_UNIT_MS) {
        if (x != 0 && x % 3600000 == 0) return snprintf(buf, cap, "%lldh", (long long)(x / 3600000));
        if (x != 0 && x % 60000 == 0) return snprintf(buf, cap, "%lldm", (long long)(x / 60000));
        if (x != 0 && x % 1000 == 0) return snprintf(buf, cap, "%llds", (long long)(x / 1000));
        return snprintf(buf, cap, "%lldms", (long long)x);
    }
    return snprintf(buf, cap, "%lld", (long long)x);
}

void tb_value_format(const tb_key_def_t *d, const tb_value_t *v, char *buf, size_t cap) {
    buf[0] = '\0';
    switch (d->type) {
    case TB_KT_INT: fmt_int(d->unit, v->i, buf, cap); break;
    case TB_KT_INT_LIST: {
        size_t n = 0;
        for (int i = 0; i < v->n_list && n + 1 < cap; i++) {
            if (i) n += (size_t)snprintf(buf + n, cap - n, ", ");
            if (n + 1 < cap) n += (size_t)fmt_int(d->unit, v->list[i], buf + n, cap - n);
        }
        break;
    }
    case TB_KT_FLOAT:
        snprintf(buf, cap, d->unit == TB_UNIT_PCT ? "%g%%" : "%g", v->f);
        break;
    case TB_KT_BOOL: snprintf(buf, cap, "%s", v->i ? "true" : "false"); break;
    case TB_KT_ENUM: case TB_KT_STRING: case TB_KT_PATH:
        snprintf(buf, cap, "%s", v->s ? v->s : "");
        break;
    }
}

/* ===================================================================== */
/* Normalized text                                                        */
/* ===================================================================== */

typedef struct sbuf { char *p; size_t n, cap; int oom; } sbuf_t;

__attribute__((format(printf, 2, 3)))
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = 1; return; }
        if (b->p && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        size_t nc = (b->cap ? b->cap * 2 : 1024) + (size_t)k;
        char *np = realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = nc;
    }
}

/* Emit one section: header, then every key of its kind in table order. */
static void emit_section(sbuf_t *b, const tb_section_t *s, bool explain) {
    sb_printf(b, "[%s]\n", s->name);
    for (int k = 0; k < K_COUNT; k++) {
        const tb_key_def_t *d = &tb_scenario_keys[k];
        if (d->sec != s->kind) continue;
        char val[1024];
        tb_value_format(d, &s->v[k], val, sizeof val);
        if (!explain) {
            sb_printf(b, "%s = %s\n", d->name, val);
            continue;
        }
        char where[32];
        if (s->v[k].line) snprintf(where, sizeof where, "line %d", s->v[k].line);
        else snprintf(where, sizeof where, "default");
        sb_printf(b, "%-16s = %-20s ; %s: %s\n", d->name, val, where, d->help);
    }
    if (s->prompt_text) {
        char h[65];
        tb_sha256_hex(s->prompt_text, s->prompt_len, h);
        sb_printf(b, "; prompt_file content: %zu bytes, sha256 %s\n", s->prompt_len, h);
    }
    if (s->text_sha256[0]) sb_printf(b, "; text content: %zu bytes, sha256 %s\n", s->text_len, s->text_sha256);
}

/* Build the canonical (or, with explain, the annotated) text. */
static char *plan_text(const tb_plan_t *p, bool explain) {
    sbuf_t b = {0};
    sb_printf(&b, "; ternbench scenario \"%s\" (normalized: every key, every default)\n", p->name);
    emit_section(&b, &p->model, explain);
    sb_printf(&b, "\n");
    emit_section(&b, &p->engine, explain);
    sb_printf(&b, "\n");
    emit_section(&b, &p->protocol, explain);
    for (int i = 0; i < p->n_tests; i++) {
        sb_printf(&b, "\n");
        emit_section(&b, &p->tests[i], explain);
    }
    if (b.oom) { free(b.p); return NULL; }
    return b.p;
}

char *tb_plan_normalize(const tb_plan_t *plan) { return plan_text(plan, false); }

/* ===================================================================== */
/* Test cases                                                             */
/* ===================================================================== */

/* The list key a section expands over (one case per element), or K_COUNT. */
static tb_key_t case_key(const tb_section_t *s) {
    switch (s->kind) {
    case TB_SEC_PREFILL: return K_PREFILL_PROMPT_TOKENS;
    case TB_SEC_DECODE: return K_DECODE_DEPTHS;
    case TB_SEC_TTFT: return K_TTFT_PROMPT_TOKENS;
    case TB_SEC_GENERATE: return K_GEN_PROMPT_TOKENS;
    case TB_SEC_CLAIM: return K_CLAIM_CTX;
    default: return K_COUNT;
    }
}

int tb_section_n_cases(const tb_section_t *s) {
    tb_key_t k = case_key(s);
    if (s->kind == TB_SEC_CLAIM && !s->v[K_CLAIM_MEASURE].i) return 0;   /* nothing to run */
    return k == K_COUNT ? 1 : s->v[k].n_list;
}

int64_t tb_section_case_param(const tb_section_t *s, int i) {
    if (s->kind == TB_SEC_QUALITY) return s->v[K_QUAL_CTX].i;
    tb_key_t k = case_key(s);
    return k == K_COUNT ? 0 : s->v[k].list[i];
}

void tb_section_case_label(const tb_section_t *s, int i, char *buf, size_t cap) {
    int64_t x = tb_section_case_param(s, i);
    switch (s->kind) {
    case TB_SEC_PREFILL: snprintf(buf, cap, "pp%lld", (long long)x); break;
    case TB_SEC_DECODE:
        snprintf(buf, cap, "tg%lld@d%lld", (long long)s->v[K_DECODE_TOKENS].i, (long long)x);
        break;
    case TB_SEC_CLAIM:
        snprintf(buf, cap, "tg%lld@d%lld", (long long)s->v[K_CLAIM_TOKENS].i, (long long)x);
        break;
    case TB_SEC_TTFT:
        if (x) snprintf(buf, cap, "ttft%lld", (long long)x);
        else snprintf(buf, cap, "ttft@file");
        break;
    case TB_SEC_GENERATE:
        if (x) snprintf(buf, cap, "pp%lld+tg%lld", (long long)x, (long long)s->v[K_GEN_TOKENS].i);
        else snprintf(buf, cap, "file+tg%lld", (long long)s->v[K_GEN_TOKENS].i);
        break;
    case TB_SEC_SUSTAINED:
        if (s->v[K_SUS_TOKENS].i) snprintf(buf, cap, "sustained%lld", (long long)s->v[K_SUS_TOKENS].i);
        else snprintf(buf, cap, "sustained%llds", (long long)(s->v[K_SUS_DURATION].i / 1000));
        break;
    case TB_SEC_QUALITY: snprintf(buf, cap, "quality%lld", (long long)x); break;
    default: snprintf(buf, cap, "?"); break;
    }
}

/* ===================================================================== */
/* explain and keys                                                       */
/* ===================================================================== */

void tb_plan_explain(const tb_plan_t *p, FILE *out) {
    char *t = plan_text(p, true);
    fprintf(out, "%s", t ? t : "(out of memory)\n");
    free(t);
    const tb_section_t *pr = &p->protocol;
    fprintf(out, "\n; plan: %lld warm-up + %lld measured repetitions of each test, headline = %s\n",
            (long long)pr->v[K_PROTO_WARMUP].i, (long long)pr->v[K_PROTO_REPETITIONS].i,
            pr->v[K_PROTO_HEADLINE].s);
    int n = 0;
    for (int i = 0; i < p->n_tests; i++) {
        for (int j = 0; j < tb_section_n_cases(&p->tests[i]); j++) {
            char label[96];
            tb_section_case_label(&p->tests[i], j, label, sizeof label);
            fprintf(out, ";   test %d: [%s] %s\n", ++n, p->tests[i].name, label);
        }
    }
    for (int i = 0; i < p->n_tests; i++) {   /* what a [claim] section records besides its tests */
        const tb_section_t *t = &p->tests[i];
        if (t->kind != TB_SEC_CLAIM) continue;
        int n[3] = {1, 1, 0};
        const tb_key_t lists[3] = {K_CLAIM_DEVICE, K_CLAIM_HEAD, K_CLAIM_CLAIMED};
        for (int k = 0; k < 3; k++)
            for (const char *c = t->v[lists[k]].s; c && *c; c++) n[k] += *c == ',';
        if (t->v[K_CLAIM_CLAIMED].s && strspn(t->v[K_CLAIM_CLAIMED].s, " \t") < strlen(t->v[K_CLAIM_CLAIMED].s)) n[2]++;
        fprintf(out, ";   claims: [%s] %d conditions (%d devices x %d heads x %d ctx x %d claimed) into the claims table\n",
                t->name, n[0] * n[1] * t->v[K_CLAIM_CTX].n_list * (n[2] ? n[2] : 1), n[0], n[1],
                t->v[K_CLAIM_CTX].n_list, n[2]);
    }
    int nv = tb_plan_n_variants(p);
    if (nv > 1) fprintf(out, "; runs: %d, one per [model] type: %s\n", nv, p->model.v[K_MODEL_TYPE].s);
    fprintf(out, "; normalized text sha256: %s\n", p->hash);
}

/* Markdown-escape '|' in table cells. */
static void md_cell(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", out);
        else fputc(*s, out);
    }
}

void tb_scenario_keys_markdown(FILE *out) {
    static const char *const type_names[] = {
        [TB_KT_INT] = "integer", [TB_KT_INT_LIST] = "integer list", [TB_KT_FLOAT] = "number",
        [TB_KT_BOOL] = "boolean", [TB_KT_ENUM] = "choice", [TB_KT_STRING] = "string",
        [TB_KT_PATH] = "path",
    };
    static const char *const unit_notes[] = {
        [TB_UNIT_NONE] = "", [TB_UNIT_COUNT] = "; k/m/g = x1024",
        [TB_UNIT_MS] = "; ms, s, m, h", [TB_UNIT_PCT] = "; percent",
    };
    for (int sec = 0; sec < TB_SEC_COUNT; sec++) {
        fprintf(out, "### [%s]%s\n\n", tb_sec_kind_name((tb_sec_kind_t)sec),
                sec >= TB_SEC_FIRST_TEST ? " (test section; may repeat with a label, e.g. "
                                           "[name.label])" : "");
        fprintf(out, "| key | type | default | range / choices | meaning |\n");
        fprintf(out, "|---|---|---|---|---|\n");
        for (int k = 0; k < K_COUNT; k++) {
            const tb_key_def_t *d = &tb_scenario_keys[k];
            if ((int)d->sec != sec) continue;
            fprintf(out, "| `%s` | %s%s | `", d->name, type_names[d->type], unit_notes[d->unit]);
            md_cell(out, d->def[0] ? d->def : "\"\"");
            fputs("` | ", out);
            if (d->type == TB_KT_ENUM) md_cell(out, d->choices);
            else if (d->unit == TB_UNIT_MS) {
                char lo[32], hi[32];
                fmt_int(d->unit, (int64_t)d->min, lo, sizeof lo);
                fmt_int(d->unit, (int64_t)d->max, hi, sizeof hi);
                fprintf(out, "%s .. %s", lo, hi);
            } else if (d->type == TB_KT_INT || d->type == TB_KT_INT_LIST || d->type == TB_KT_FLOAT)
                fprintf(out, "%.15g .. %.15g", d->min, d->max);
            fputs(" | ", out);
            md_cell(out, d->help);
            fputs(" |\n", out);
        }
        fputs("\n", out);
    }
}
