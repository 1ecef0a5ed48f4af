/*
 * scenario.c — parse and validate a scenario file into a plan (scenario.h).
 *
 * libinih does the INI syntax; we feed it lines through our own reader so we
 * know the line number of every key and every [section] header (the Debian
 * build has INI_HANDLER_LINENO off), and so that empty sections exist.
 */
#include "scenario.h"
#include "workload_claim.h"
#include "tbutil.h"
#include <stdarg.h>
#include "ternbench.h"
#include "ternbench.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ===================================================================== */
/* Parse state                                                            */
/* ===================================================================== */

typedef struct parse_ctx {
    tb_plan_t *plan;
    const char *text;
    size_t len, pos;
    int line;               /* number of the line last handed to inih */
    tb_section_t *cur;      /* section of the last header, NULL before any */
    int status;             /* first error, TB_OK if none */
} parse_ctx_t;

/* Record the first error as "FILE:LINE: message". */
__attribute__((format(printf, 3, 4)))
static void perr(parse_ctx_t *c, int line, const char *fmt, ...) {
    if (c->status != TB_OK) return;
    char raw[768], msg[768 * 4];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* values are quoted from the file: its control bytes are shown as \xNN,
     * never sent to the terminal as they are */
    size_t n = 0;
    for (const unsigned char *q = (const unsigned char *)raw; *q; q++)
        n += (size_t)(*q < 0x20 || *q == 0x7f ? snprintf(msg + n, sizeof msg - n, "\\x%02x", *q)
                                              : (msg[n] = (char)*q, 1));
    msg[n] = '\0';
    if (line > 0) tb_err(TB_ERR_FORMAT, "%s:%d: %s", c->plan->path, line, msg);
    else tb_err(TB_ERR_FORMAT, "%s: %s", c->plan->path, msg);
    c->status = TB_ERR_FORMAT;
}

/* ===================================================================== */
/* Values                                                                 */
/* ===================================================================== */

/* Parse one integer with the unit class's suffixes. Returns NULL on success
 * or a description of what was expected. */
static const char *parse_int1(const char *s, tb_unit_t unit, int64_t *out) {
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return "a number";
    errno = 0;
    char *end;
    double num;
    if (unit == TB_UNIT_MS) {
        num = strtod(s, &end);
    } else {
        long long v = strtoll(s, &end, 10);
        num = (double)v;
        if (errno == ERANGE) return "a number that fits in 64 bits";
    }
    if (end == s) {
        switch (unit) {
        case TB_UNIT_COUNT: return "an integer, optionally with k, m or g (x1024)";
        case TB_UNIT_MS: return "a duration such as 250ms, 10s, 5m or 1h";
        default: return "an integer";
        }
    }
    while (isspace((unsigned char)*end)) end++;
    double mul = 1;
    if (unit == TB_UNIT_COUNT && *end) {
        switch (tolower((unsigned char)*end)) {
        case 'k': mul = 1024.0; break;
        case 'm': mul = 1048576.0; break;
        case 'g': mul = 1073741824.0; break;
        default: return "an integer, optionally with k, m or g (x1024)";
        }
        end++;
    } else if (unit == TB_UNIT_MS) {
        if (!strcasecmp(end, "ms")) { mul = 1; end += 2; }
        else if (!strcasecmp(end, "s")) { mul = 1000; end += 1; }
        else if (!strcasecmp(end, "m") || !strcasecmp(end, "min")) { mul = 60000; end += strlen(end); }
        else if (!strcasecmp(end, "h")) { mul = 3600000; end += 1; }
        else if (*end || num != 0) return "a duration with a unit: 250ms, 10s, 5m or 1h";
    }
    while (isspace((unsigned char)*end)) end++;
    if (*end) {
        switch (unit) {
        case TB_UNIT_COUNT: return "an integer, optionally with k, m or g (x1024)";
        case TB_UNIT_MS: return "a duration such as 250ms, 10s, 5m or 1h";
        default: return "an integer";
        }
    }
    double v = num * mul;
    if (unit == TB_UNIT_MS && v != floor(v)) return "a whole number of milliseconds";
    if (fabs(v) > 9.2e18) return "a number that fits in 64 bits";
    *out = (int64_t)v;
    return NULL;
}

/* Describe a key's range for messages ("an integer in [1, 1000]"). */
static void range_text(const tb_key_def_t *d, char *buf, size_t cap) {
    snprintf(buf, cap, "a value in [%.15g, %.15g]", d->min, d->max);
}

/* Parse `value` for key d into v. On failure writes the message into msg. */
static int parse_value(const tb_key_def_t *d, const char *value, tb_value_t *v,
                       char *msg, size_t cap) {
    const char *what;
    char rng[96];
    switch (d->type) {
    case TB_KT_INT: {
        int64_t x;
        if ((what = parse_int1(value, d->unit, &x))) {
            snprintf(msg, cap, "expected %s, got \"%s\"", what, value);
            return -1;
        }
        if ((double)x < d->min || (double)x > d->max) {
            range_text(d, rng, sizeof rng);
            snprintf(msg, cap, "value %lld out of range: expected %s", (long long)x, rng);
            return -1;
        }
        v->i = x;
        return 0;
    }
    case TB_KT_INT_LIST: {
        int n = 1;
        for (const char *p = value; *p; p++) n += *p == ',';
        int64_t *list = calloc((size_t)n, sizeof *list);
        if (!list) { snprintf(msg, cap, "out of memory"); return -1; }
        const char *p = value;
        for (int i = 0; i < n; i++) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char *item = strndup(p, len);   /* the whole item, however long */
            if (!item) { snprintf(msg, cap, "out of memory"); free(list); return -1; }
            what = parse_int1(item, d->unit, &list[i]);
            free(item);
            if (what) {
                snprintf(msg, cap, "item %d: expected %s (a comma-separated list), got \"%s\"",
                         i + 1, what, value);
                free(list);
                return -1;
            }
            if ((double)list[i] < d->min || (double)list[i] > d->max) {
                range_text(d, rng, sizeof rng);
                snprintf(msg, cap, "item %d: value %lld out of range: expected %s", i + 1,
                         (long long)list[i], rng);
                free(list);
                return -1;
            }
            p = comma ? comma + 1 : p + len;
        }
        free(v->list);
        v->list = list;
        v->n_list = n;
        return 0;
    }
    case TB_KT_FLOAT: {
        char *end;
        errno = 0;
        double x = strtod(value, &end);
        while (isspace((unsigned char)*end)) end++;
        if (d->unit == TB_UNIT_PCT && *end == '%') end++;
        if (end == value || *end || errno == ERANGE || !isfinite(x)) {
            snprintf(msg, cap, "expected a number%s, got \"%s\"",
                     d->unit == TB_UNIT_PCT ? " (percent)" : "", value);
            return -1;
        }
        if (x < d->min || x > d->max) {
            range_text(d, rng, sizeof rng);
            snprintf(msg, cap, "value %g out of range: expected %s", x, rng);
            return -1;
        }
        v->f = x;
        return 0;
    }
    case TB_KT_BOOL:
        if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcasecmp(value, "on") ||
            !strcmp(value, "1")) { v->i = 1; return 0; }
        if (!strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcasecmp(value, "off") ||
            !strcmp(value, "0")) { v->i = 0; return 0; }
        snprintf(msg, cap, "expected true or false, got \"%s\"", value);
        return -1;
    case TB_KT_ENUM: {
        const char *p = d->choices;
        for (int idx = 0;; idx++) {
            const char *bar = strchr(p, '|');
            size_t len = bar ? (size_t)(bar - p) : strlen(p);
            if (strlen(value) == len && !strncasecmp(value, p, len)) {
                free(v->s);
                v->s = strndup(p, len);
                v->i = idx;
                if (!v->s) { snprintf(msg, cap, "out of memory"); return -1; }
                return 0;
            }
            if (!bar) break;
            p = bar + 1;
        }
        snprintf(msg, cap, "expected one of %s, got \"%s\"", d->choices, value);
        return -1;
    }
    case TB_KT_STRING:
    case TB_KT_PATH:
        free(v->s);
        v->s = strdup(value);
        if (!v->s) { snprintf(msg, cap, "out of memory"); return -1; }
        return 0;
    }
    snprintf(msg, cap, "internal: unknown key type");
    return -1;
}

/* ===================================================================== */
/* Sections and keys                                                      */
/* ===================================================================== */

static int kind_from_name(const char *name, size_t len) {
    for (int k = 0; k < TB_SEC_COUNT; k++) {
        const char *kn = tb_sec_kind_name((tb_sec_kind_t)k);
        if (strlen(kn) == len && !strncmp(kn, name, len)) return k;
    }
    return -1;
}

/* Find the key `name` of section kind `kind`, or -1. */
static int key_find(tb_sec_kind_t kind, const char *name) {
    for (int k = 0; k < K_COUNT; k++)
        if (tb_scenario_keys[k].sec == kind && !strcmp(tb_scenario_keys[k].name, name)) return k;
    return -1;
}

/* "a, b, c" of a kind's key names, for messages. */
static void key_names(tb_sec_kind_t kind, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < K_COUNT && n < cap; k++)
        if (tb_scenario_keys[k].sec == kind)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", tb_scenario_keys[k].name);
}

/* Open section `name` (header at `line`): find or create its tb_section_t. */
static void section_open(parse_ctx_t *c, const char *name, int line) {
    tb_plan_t *p = c->plan;
    const char *dot = strchr(name, '.');
    size_t klen = dot ? (size_t)(dot - name) : strlen(name);
    int kind = kind_from_name(name, klen);
    if (kind < 0) {
        perr(c, line, "unknown section [%s]: expected [model], [engine], [protocol] or a test "
             "section [prefill], [decode], [ttft], [generate], [sustained], [claim] (optionally "
             "labelled, e.g. [decode.deep])", name);
        return;
    }
    if (strlen(name) >= sizeof p->model.name) {
        perr(c, line, "section name [%s] is too long (max %zu characters)", name,
             sizeof p->model.name - 1);
        return;
    }
    if (dot) {
        const char *lab = dot + 1;
        bool ok = *lab != '\0';
        for (const char *q = lab; *q; q++)
            ok = ok && (isalnum((unsigned char)*q) || *q == '_' || *q == '-');
        if (!ok || kind < TB_SEC_FIRST_TEST) {
            perr(c, line, "bad section name [%s]: %s", name, kind < TB_SEC_FIRST_TEST
                 ? "only test sections take a label" : "a label is letters, digits, '_' or '-'");
            return;
        }
    }
    tb_section_t *s = NULL;
    if (kind < TB_SEC_FIRST_TEST) {
        s = kind == TB_SEC_MODEL ? &p->model : kind == TB_SEC_ENGINE ? &p->engine : &p->protocol;
        if (s->line) {
            perr(c, line, "duplicate section [%s] (first at line %d)", name, s->line);
            return;
        }
    } else {
        for (int i = 0; i < p->n_tests; i++)
            if (!strcmp(p->tests[i].name, name)) {
                perr(c, line, "duplicate section [%s] (first at line %d); give each test "
                     "section its own label, e.g. [%s.two]", name, p->tests[i].line, name);
                return;
            }
        tb_section_t *t = realloc(p->tests, (size_t)(p->n_tests + 1) * sizeof *t);
        if (!t) { perr(c, line, "out of memory"); return; }
        p->tests = t;
        s = &p->tests[p->n_tests++];
        memset(s, 0, sizeof *s);
        s->kind = (tb_sec_kind_t)kind;
    }
    snprintf(s->name, sizeof s->name, "%s", name);
    s->line = line;
    c->cur = s;
}

/* inih reader: hand out one line at a time, counting lines, stripping
 * indentation (so nothing is ever a continuation line) and noting headers. */
static char *reader(char *str, int num, void *stream) {
    parse_ctx_t *c = stream;
    if (c->status != TB_OK || c->pos >= c->len) return NULL;
    const char *start = c->text + c->pos;
    const char *nl = memchr(start, '\n', c->len - c->pos);
    size_t n = nl ? (size_t)(nl - start) : c->len - c->pos;
    c->pos += n + (nl ? 1 : 0);
    c->line++;
    /* a UTF-8 byte order mark (Windows editors) is not part of line 1 */
    if (c->line == 1 && n >= 3 && !memcmp(start, "\xEF\xBB\xBF", 3)) { start += 3; n -= 3; }
    while (n > 0 && (*start == ' ' || *start == '\t')) { start++; n--; }
    if (n > 0 && start[n - 1] == '\r') n--;
    if (memchr(start, '\0', n)) {
        perr(c, c->line, "NUL byte in a text file");
        return NULL;
    }
    if ((int)n > num - 2) {
        perr(c, c->line, "line too long (%zu characters; at most %d)", n, num - 2);
        return NULL;
    }
    memcpy(str, start, n);
    str[n] = '\n';
    str[n + 1] = '\0';
    if (n > 0 && str[0] == '[') {
        char *close = strchr(str, ']');
        if (!close) {
            perr(c, c->line, "expected ']' closing the section name");
            return NULL;
        }
        char name[128];
        size_t k = (size_t)(close - str - 1);
        if (k >= sizeof name) k = sizeof name - 1;
        memcpy(name, str + 1, k);
        name[k] = '\0';
        /* trim, as inih does */
        char *b = name;
        while (isspace((unsigned char)*b)) b++;
        char *e = b + strlen(b);
        while (e > b && isspace((unsigned char)e[-1])) *--e = '\0';
        section_open(c, b, c->line);
        if (c->status != TB_OK) return NULL;
    }
    return str;
}

/* inih handler: one key = value of the current section. */
static int handler(void *user, const char *section, const char *name, const char *value) {
    (void)section;
    parse_ctx_t *c = user;
    if (c->status != TB_OK) return 0;
    if (!c->cur) {
        perr(c, c->line, "key \"%s\" outside a section: put it under [model], [engine], "
             "[protocol] or a test section", name);
        return 0;
    }
    tb_section_t *s = c->cur;
    int k = key_find(s->kind, name);
    if (k < 0) {
        char names[512];
        key_names(s->kind, names, sizeof names);
        perr(c, c->line, "unknown key \"%s\" in [%s]: expected one of %s", name, s->name, names);
        return 0;
    }
    if (s->v[k].line) {
        perr(c, c->line, "duplicate key \"%s\" in [%s] (first set at line %d)", name, s->name,
             s->v[k].line);
        return 0;
    }
    char msg[512];
    if (parse_value(&tb_scenario_keys[k], value, &s->v[k], msg, sizeof msg) != 0) {
        perr(c, c->line, "[%s] %s: %s", s->name, name, msg);
        return 0;
    }
    s->v[k].line = c->line;
    return 1;
}

/* ===================================================================== */
/* Defaults and validation                                                */
/* ===================================================================== */

/* Fill every unset key of section s with its default. */
static int fill_defaults(tb_section_t *s) {
    for (int k = 0; k < K_COUNT; k++) {
        const tb_key_def_t *d = &tb_scenario_keys[k];
        if (d->sec != s->kind || s->v[k].line) continue;
        char msg[256];
        if (d->type == TB_KT_STRING || d->type == TB_KT_PATH) {
            if (!(s->v[k].s = strdup(d->def))) return tb_err(TB_ERR_NOMEM, "out of memory");
        } else if (parse_value(d, d->def, &s->v[k], msg, sizeof msg) != 0) {
            return tb_err(TB_ERR_INTERNAL, "key table: default of %s.%s: %s",
                          tb_sec_kind_name(d->sec), d->name, msg);
        }
    }
    return TB_OK;
}

/* Resolve a path value relative to the scenario's directory (allocated). */
static char *resolve_path(const tb_plan_t *p, const char *v) {
    char *out;
    if (v[0] == '/' || !p->dir[0]) return strdup(v);
    if (asprintf(&out, "%s/%s", p->dir, v) < 0) return NULL;
    return out;
}

/* Validate and canonicalize [model] type: a comma-separated list of
 * "default" or supported type names, rewritten lower-case as "a, b". */
static int canon_types(parse_ctx_t *c, tb_value_t *v) {
    char out[512] = "";
    size_t n = 0;
    int count = 0;
    for (const char *p = v->s; ; ) {
        size_t len = strcspn(p, ",");
        const char *b = p, *e = p + len;
        while (b < e && isspace((unsigned char)*b)) b++;
        while (e > b && isspace((unsigned char)e[-1])) e--;
        char *item = strndup(b, (size_t)(e - b));   /* the whole item, however long */
        if (!item) { perr(c, 0, "out of memory"); return -1; }
        tb_type_t t;
        bool dflt = !strcasecmp(item, "default");
        if (!dflt && (tb_type_from_name(item, &t) != TB_OK || !tb_type_supported((uint32_t)t))) {
            perr(c, v->line, "[model] type: unknown weight type \"%s\": expected default, tq2_0, "
                 "tq1_0, q4_0, q4_k, q6_k, q8_0, f16, bf16 or f32 (comma-separated)", item);
            free(item);
            return -1;
        }
        free(item);
        const char *name = dflt ? "default" : tb_type_name(t);
        n += (size_t)snprintf(out + n, n < sizeof out ? sizeof out - n : 0, "%s%s",
                              count++ ? ", " : "", name);
        if (!p[len]) break;
        p += len + 1;
    }
    char *dup = strdup(out);
    if (!dup) { perr(c, 0, "out of memory"); return -1; }
    free(v->s);
    v->s = dup;
    return 0;
}

/* Number of entries of [model] type (runs of the plan), and entry i. */
/* Check a [quality] section: its text is a readable, non-empty regular
 * file (hashed for the normalized text), and it has exactly one reference:
 * a weight type of the synthesized model, or a readable file. */
static void validate_quality(parse_ctx_t *c, tb_section_t *t) {
    tb_plan_t *p = c->plan;
    const tb_value_t *tx = &t->v[K_QUAL_TEXT], *rt = &t->v[K_QUAL_REFERENCE], *rf = &t->v[K_QUAL_REFERENCE_FILE];
    if (!*tx->s) {
        perr(c, t->line, "[%s] needs text = FILE (the text the models are scored on)", t->name);
        return;
    }
    char *text;
    if (!(t->text_path = resolve_path(p, tx->s))) { perr(c, 0, "out of memory"); return; }
    if (tb_input_read(t->text_path, "text", TB_PROMPT_MAX_BYTES, &text, &t->text_len) != TB_OK) {
        perr(c, tx->line, "[%s] text: %s", t->name, tb_last_error());
        return;
    }
    tb_sha256_hex(text, t->text_len, t->text_sha256);
    free(text);
    if (t->text_len == 0) {
        perr(c, tx->line, "[%s] text: \"%s\" is empty", t->name, t->text_path);
        return;
    }
    if (!*rt->s == !*rf->s) {
        if (*rt->s) perr(c, rf->line, "[%s] has both reference (line %d) and reference_file: choose one",
                         t->name, rt->line);
        else perr(c, t->line, "[%s] needs a reference: reference = TYPE (the synthesized model in "
                  "another weight type, e.g. f32) or reference_file = FILE (a GGUF model or a saved reference)",
                  t->name);
        return;
    }
    if (*rt->s) {
        tb_type_t ty;
        if (strcasecmp(rt->s, "default") &&
            (tb_type_from_name(rt->s, &ty) != TB_OK || !tb_type_supported((uint32_t)ty))) {
            perr(c, rt->line, "[%s] reference: unknown weight type \"%s\": expected default, f32, f16, "
                 "bf16, q8_0, q6_k, q4_k, q4_0, tq2_0 or tq1_0", t->name, rt->s);
            return;
        }
        for (char *q = rt->s; *q; q++) *q = (char)tolower((unsigned char)*q);
    } else {
        struct stat st;
        if (!(t->ref_path = resolve_path(p, rf->s))) { perr(c, 0, "out of memory"); return; }
        if (access(t->ref_path, R_OK) != 0) {
            perr(c, rf->line, "[%s] reference_file: cannot read \"%s\": %s", t->name, t->ref_path, strerror(errno));
            return;
        }
        if (stat(t->ref_path, &st) != 0 || !S_ISREG(st.st_mode)) {
            perr(c, rf->line, "[%s] reference_file: \"%s\" is not a regular file", t->name, t->ref_path);
            return;
        }
    }
    const char *h = t->v[K_QUAL_HEAD].s;
    bool approx;
    tb_head_params_t hp;
    if (*h && tb_head_parse(h, &approx, &hp) != TB_OK) perr(c, t->v[K_QUAL_HEAD].line, "[%s] head: %s", t->name, tb_last_error());
}

int tb_plan_n_variants(const tb_plan_t *p) {
    int n = 1;
    for (const char *s = p->model.v[K_MODEL_TYPE].s; s && *s; s++) n += *s == ',';
    return n;
}

void tb_plan_variant_type(const tb_plan_t *p, int i, char *buf, size_t cap) {
    const char *s = p->model.v[K_MODEL_TYPE].s;
    for (; i > 0 && s; i--) {
        s = strchr(s, ',');
        if (s) s++;
    }
    if (!s) s = "default";
    while (*s == ' ') s++;
    snprintf(buf, cap, "%.*s", (int)strcspn(s, ","), s);
}

/* Number of entries of [engine] kind, and entry i (canonical after parsing). */
int tb_plan_n_engines(const tb_plan_t *p) {
    int n = 1;
    for (const char *s = p->engine.v[K_ENGINE_KIND].s; s && *s; s++) n += *s == ',';
    return n;
}

int tb_plan_engine(const tb_plan_t *p, int i) {
    const char *s = p->engine.v[K_ENGINE_KIND].s;
    for (; i > 0 && s; i--) {
        s = strchr(s, ',');
        if (s) s++;
    }
    while (s && *s == ' ') s++;
    return s && !strncmp(s, "llama.cpp", 9) ? TB_ENGINE_LLAMACPP : TB_ENGINE_TERNBENCH;
}

/* [engine] kind: a list of distinct ternbench / llama.cpp, rewritten as
 * "ternbench, llama.cpp"; with llama.cpp only prefill and decode tests and
 * no token-by-token interleave (llama-bench runs a repetition whole). */
static int check_engines(parse_ctx_t *c) {
    tb_plan_t *p = c->plan;
    tb_value_t *v = &p->engine.v[K_ENGINE_KIND];
    int line = v->line ? v->line : 1, seen[2] = {0, 0}, n = 0;
    char out[64] = "";
    for (const char *s = v->s; s && *s;) {
        while (*s == ' ' || *s == '\t') s++;
        size_t len = strcspn(s, ",");
        size_t e = len;
        while (e > 0 && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
        int k = e == 9 && !strncmp(s, "ternbench", 9) ? 0 : e == 9 && !strncmp(s, "llama.cpp", 9) ? 1 : -1;
        if (k < 0) {
            perr(c, line, "[engine] kind: unknown engine \"%.*s\": expected ternbench, llama.cpp "
                 "or both as a list", (int)e, s);
            return -1;
        }
        if (seen[k]++) {
            perr(c, line, "[engine] kind: %s is listed twice", k ? "llama.cpp" : "ternbench");
            return -1;
        }
        n += snprintf(out + n, sizeof out - (size_t)n, "%s%s", n ? ", " : "", k ? "llama.cpp" : "ternbench");
        s += len;
        if (*s == ',') s++;
    }
    if (!n) { perr(c, line, "[engine] kind: empty: expected ternbench, llama.cpp or both"); return -1; }
    char *dup = strdup(out);
    if (!dup) { perr(c, 0, "out of memory"); return -1; }
    free(v->s);
    v->s = dup;
    if (!seen[1]) {
        if (p->engine.v[K_ENGINE_BINARY].line) {
            perr(c, p->engine.v[K_ENGINE_BINARY].line, "[engine] binary only applies with kind = llama.cpp");
            return -1;
        }
        return 0;
    }
    if (p->protocol.v[K_PROTO_INTERLEAVE].i == 2) {
        perr(c, p->protocol.v[K_PROTO_INTERLEAVE].line, "[protocol] interleave = token: llama.cpp "
             "(kind, line %d) runs a repetition whole; use rep or none", line);
        return -1;
    }
    for (int i = 0; i < p->n_tests; i++)
        if (p->tests[i].kind != TB_SEC_PREFILL && p->tests[i].kind != TB_SEC_DECODE) {
            perr(c, p->tests[i].line, "[%s]: llama.cpp (kind, line %d) runs prefill and decode "
                 "tests only (llama-bench -p / -n -d)", p->tests[i].name, line);
            return -1;
        }
    return 0;
}

/* Check cross-key rules and that every file the scenario names is readable. */
static void validate(parse_ctx_t *c) {
    tb_plan_t *p = c->plan;
    tb_section_t *m = &p->model;
    int mline = m->line ? m->line : 1;
    const char *path = m->v[K_MODEL_PATH].s, *synth = m->v[K_MODEL_SYNTH].s;
    if (!*path && !*synth) {
        perr(c, mline, "no model: set [model] path = FILE.gguf or [model] synth = PRESET");
        return;
    }
    if (*path && *synth) {
        perr(c, m->v[K_MODEL_SYNTH].line, "[model] has both path (line %d) and synth: "
             "choose one", m->v[K_MODEL_PATH].line);
        return;
    }
    if (*path) {
        static const tb_key_t synth_only[] = {K_MODEL_SEED, K_MODEL_VOCAB_FROM};
        for (size_t i = 0; i < TB_ARRAY_LEN(synth_only); i++)
            if (m->v[synth_only[i]].line) {
                perr(c, m->v[synth_only[i]].line, "[model] %s only applies with synth = PRESET",
                     tb_scenario_keys[synth_only[i]].name);
                return;
            }
        if (canon_types(c, &m->v[K_MODEL_TYPE]) != 0) return;
        if (!(p->model_path = resolve_path(p, path))) { perr(c, 0, "out of memory"); return; }
        if (access(p->model_path, R_OK) != 0) {
            perr(c, m->v[K_MODEL_PATH].line, "[model] path: cannot read model \"%s\": %s",
                 p->model_path, strerror(errno));
            return;
        }
        struct stat mst;
        if (stat(p->model_path, &mst) != 0 || !S_ISREG(mst.st_mode)) {
            perr(c, m->v[K_MODEL_PATH].line, "[model] path: \"%s\" is not a regular file "
                 "(expected a GGUF model)", p->model_path);
            return;
        }
    } else {
        bool known = false;
        const char *const *ps = tb_synth_presets();
        char names[256] = "";
        size_t n = 0;
        for (; ps && *ps; ps++) {
            known = known || !strcmp(*ps, synth);
            n += (size_t)snprintf(names + n, n < sizeof names ? sizeof names - n : 0, "%s%s",
                                  n ? ", " : "", *ps);
        }
        if (!known) {
            perr(c, m->v[K_MODEL_SYNTH].line, "[model] synth: unknown preset \"%s\": expected "
                 "one of %s", synth, names);
            return;
        }
        if (canon_types(c, &m->v[K_MODEL_TYPE]) != 0) return;
        const char *vf = m->v[K_MODEL_VOCAB_FROM].s;
        if (*vf) {
            char *r = resolve_path(p, vf);
            struct stat vst;
            int ok = r && access(r, R_OK) == 0;
            int e = ok ? 0 : errno;
            if (ok && (stat(r, &vst) != 0 || !S_ISREG(vst.st_mode))) { ok = 0; e = EINVAL; }
            if (!ok) perr(c, m->v[K_MODEL_VOCAB_FROM].line, "[model] vocab_from: cannot read "
                          "\"%s\": %s", r ? r : vf, e == EINVAL ? "not a regular file" : strerror(e));
            free(r);
            if (!ok) return;
        }
    }
    if (p->n_tests == 0) {
        perr(c, c->line > 0 ? c->line : 1, "no test sections: add at least one of [prefill], "
             "[decode], [ttft], [generate], [sustained], [claim], [quality]");
        return;
    }
    if (check_engines(c) != 0) return;
    for (int i = 0; i < p->n_tests; i++) {
        tb_section_t *t = &p->tests[i];
        if (t->kind == TB_SEC_QUALITY) {
            validate_quality(c, t);
            if (c->status != TB_OK) return;
            continue;
        }
        tb_key_t pf = t->kind == TB_SEC_TTFT ? K_TTFT_PROMPT_FILE
                    : t->kind == TB_SEC_GENERATE ? K_GEN_PROMPT_FILE : K_COUNT;
        tb_key_t pt = t->kind == TB_SEC_TTFT ? K_TTFT_PROMPT_TOKENS : K_GEN_PROMPT_TOKENS;
        if (pf != K_COUNT) {
            const char *f = t->v[pf].s;
            if (*f) {
                if (!(t->prompt_path = resolve_path(p, f))) { perr(c, 0, "out of memory"); return; }
                if (tb_input_read(t->prompt_path, "prompt file", TB_PROMPT_MAX_BYTES, &t->prompt_text,
                                  &t->prompt_len) != TB_OK) {
                    perr(c, t->v[pf].line, "[%s] prompt_file: %s", t->name, tb_last_error());
                    return;
                }
                if (t->prompt_len == 0) {
                    perr(c, t->v[pf].line, "[%s] prompt_file: \"%s\" is empty", t->name,
                         t->prompt_path);
                    return;
                }
            } else {
                for (int j = 0; j < t->v[pt].n_list; j++)
                    if (t->v[pt].list[j] == 0) {
                        perr(c, t->v[pt].line ? t->v[pt].line : t->line, "[%s] prompt_tokens: 0 "
                             "(the whole prompt file) needs prompt_file", t->name);
                        return;
                    }
            }
        }
        if (t->kind == TB_SEC_CLAIM && tb_claim_section_check(p, t) != TB_OK) {
            c->status = TB_ERR_FORMAT;
            return;
        }
        if (t->kind == TB_SEC_SUSTAINED) {
            int64_t n = t->v[K_SUS_TOKENS].i, dur = t->v[K_SUS_DURATION].i;
            if (n == 0 && dur == 0) {
                perr(c, t->line, "[%s] needs tokens > 0 or duration > 0", t->name);
                return;
            }
            if (t->v[K_SUS_PROMPT_TOKENS].i >= t->v[K_SUS_CTX].i) {
                perr(c, t->v[K_SUS_PROMPT_TOKENS].line ? t->v[K_SUS_PROMPT_TOKENS].line : t->line,
                     "[%s] prompt_tokens (%lld) must be below ctx (%lld)", t->name,
                     (long long)t->v[K_SUS_PROMPT_TOKENS].i, (long long)t->v[K_SUS_CTX].i);
                return;
            }
        }
    }
}

/* ===================================================================== */
/* Entry points                                                           */
/* ===================================================================== */

int tb_plan_parse(const char *path, const char *text, size_t len, tb_plan_t *plan) {
    memset(plan, 0, sizeof *plan);
    plan->model.kind = TB_SEC_MODEL;
    plan->engine.kind = TB_SEC_ENGINE;
    plan->protocol.kind = TB_SEC_PROTOCOL;
    snprintf(plan->model.name, sizeof plan->model.name, "model");
    snprintf(plan->engine.name, sizeof plan->engine.name, "engine");
    snprintf(plan->protocol.name, sizeof plan->protocol.name, "protocol");
    if (!(plan->path = strdup(path))) return tb_err(TB_ERR_NOMEM, "out of memory");
    const char *slash = strrchr(path, '/');
    plan->dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup("");
    if (!plan->dir) return tb_err(TB_ERR_NOMEM, "out of memory");
    const char *base = slash ? slash + 1 : path;
    size_t stem = strcspn(base, ".");
    snprintf(plan->name, sizeof plan->name, "%.*s", (int)TB_MIN(stem, sizeof plan->name - 1), base);

    parse_ctx_t c = {.plan = plan, .text = text, .len = len};
    int rc = ini_parse_stream(reader, &c, handler, &c);
    if (c.status != TB_OK) return c.status;
    if (rc > 0) {
        perr(&c, rc, "syntax error: expected [section], key = value, or a comment (; or #)");
        return c.status;
    }
    if (rc < 0) return tb_err(TB_ERR_NOMEM, "%s: out of memory while parsing", path);

    tb_section_t *fixed[3] = {&plan->model, &plan->engine, &plan->protocol};
    for (int i = 0; i < 3; i++)
        if ((rc = fill_defaults(fixed[i]))) return rc;
    for (int i = 0; i < plan->n_tests; i++)
        if ((rc = fill_defaults(&plan->tests[i]))) return rc;

    validate(&c);
    if (c.status != TB_OK) return c.status;

    if (!(plan->normalized = tb_plan_normalize(plan))) return tb_err(TB_ERR_NOMEM, "out of memory");
    tb_sha256_hex(plan->normalized, strlen(plan->normalized), plan->hash);
    return TB_OK;
}

int tb_plan_load(const char *path, tb_plan_t *plan) {
    char *text;
    size_t len;
    memset(plan, 0, sizeof *plan);
    int rc = tb_input_read(path, "scenario", TB_SCENARIO_MAX_BYTES, &text, &len);
    if (rc != TB_OK) return rc;
    rc = tb_plan_parse(path, text, len, plan);
    free(text);
    return rc;
}

static void section_free(tb_section_t *s) {
    for (int k = 0; k < K_COUNT; k++) {
        free(s->v[k].s);
        free(s->v[k].list);
    }
    free(s->prompt_path);
    free(s->prompt_text);
    free(s->text_path);
    free(s->ref_path);
}

void tb_plan_free(tb_plan_t *plan) {
    section_free(&plan->model);
    section_free(&plan->engine);
    section_free(&plan->protocol);
    for (int i = 0; i < plan->n_tests; i++) section_free(&plan->tests[i]);
    free(plan->tests);
    free(plan->path);
    free(plan->dir);
    free(plan->model_path);
    free(plan->normalized);
    memset(plan, 0, sizeof *plan);
}
