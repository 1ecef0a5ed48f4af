/*
 * scenario.h — scenario files: the key table, the parser (libinih), the
 * resolved plan, its normalized text and hash.
 *
 * Every key is declared once in the table (scenario_keys.c): section kind,
 * name, type, default, range, unit suffixes, help. The table drives parsing,
 * validation, `ternbench scenario explain` and `ternbench scenario keys`
 * (scenarios/README.md), and the normalized text stored with every run.
 *
 * Sections: [model], [engine], [protocol] (at most once each, all optional
 * but a model is required), then one or more test sections named by kind,
 * optionally with a label: [decode], [decode.deep], [generate.chat] ...
 *
 * The parser never touches a model: it only checks that files named by the
 * scenario (model path, prompt files, a [quality] text and reference file)
 * are readable. Errors are
 * "FILE:LINE: message" via the sticky error (tb_last_error()), status
 * TB_ERR_FORMAT (bad content) or TB_ERR_IO (unreadable scenario file).
 */
#ifndef TB_HARNESS_SCENARIO_H
#define TB_HARNESS_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the key table ---- */

typedef enum tb_sec_kind {
    TB_SEC_MODEL, TB_SEC_ENGINE, TB_SEC_PROTOCOL,
    TB_SEC_PREFILL, TB_SEC_DECODE, TB_SEC_TTFT, TB_SEC_GENERATE, TB_SEC_SUSTAINED,
    TB_SEC_CLAIM,
    TB_SEC_QUALITY,
    TB_SEC_COUNT
} tb_sec_kind_t;
#define TB_SEC_FIRST_TEST TB_SEC_PREFILL

typedef enum tb_key_type {
    TB_KT_INT,       /* integer, suffixes per unit class            */
    TB_KT_INT_LIST,  /* "0, 512, 4k"                                 */
    TB_KT_FLOAT,
    TB_KT_BOOL,      /* true/false, yes/no, on/off, 1/0              */
    TB_KT_ENUM,      /* one of a '|'-separated list                  */
    TB_KT_STRING,
    TB_KT_PATH,      /* relative to the scenario file's directory    */
} tb_key_type_t;

typedef enum tb_unit {
    TB_UNIT_NONE,    /* plain number                                 */
    TB_UNIT_COUNT,   /* k = 1024, m = 1024^2, g = 1024^3: "2k" = 2048  */
    TB_UNIT_MS,      /* duration stored in ms: "250ms", "10s", "5m", "1h"; bare = ms */
    TB_UNIT_PCT,     /* percent, optional trailing '%'               */
} tb_unit_t;

/* Key ids: index into the key table and into a section's values. */
typedef enum tb_key {
    K_MODEL_PATH, K_MODEL_SYNTH, K_MODEL_TYPE, K_MODEL_SEED, K_MODEL_VOCAB_FROM, K_MODEL_CACHE_DIR,
    K_ENGINE_THREADS, K_ENGINE_ISA, K_ENGINE_KV_TYPE, K_ENGINE_BATCH, K_ENGINE_CTX, K_ENGINE_WEIGHTS,
    K_ENGINE_CPUS, K_ENGINE_HEAD, K_ENGINE_KIND, K_ENGINE_BINARY,
    K_PROTO_WARMUP, K_PROTO_REPETITIONS, K_PROTO_COOLDOWN, K_PROTO_SEED, K_PROTO_HEADLINE,
    K_PROTO_RECORD_TOKENS, K_PROTO_SENSOR_INTERVAL, K_PROTO_THROTTLE_CHECK,
    K_PROTO_THROTTLE_PCT, K_PROTO_BANDWIDTH_PROBE, K_PROTO_INTERLEAVE,
    K_PREFILL_PROMPT_TOKENS,
    K_DECODE_TOKENS, K_DECODE_DEPTHS,
    K_TTFT_PROMPT_TOKENS, K_TTFT_PROMPT_FILE,
    K_GEN_PROMPT_TOKENS, K_GEN_PROMPT_FILE, K_GEN_TOKENS, K_GEN_TEMP, K_GEN_TOP_P, K_GEN_TOP_K,
    K_GEN_MIN_P, K_GEN_STOP_AT_EOS,
    K_SUS_TOKENS, K_SUS_DURATION, K_SUS_WINDOW, K_SUS_ON_FULL, K_SUS_CTX, K_SUS_PROMPT_TOKENS,
    K_SUS_TEMP, K_SUS_TOP_P,
    K_CLAIM_DEVICE, K_CLAIM_PRESET, K_CLAIM_TYPE, K_CLAIM_CTX, K_CLAIM_HEAD, K_CLAIM_CLAIMED,
    K_CLAIM_BACKEND, K_CLAIM_RUNTIME, K_CLAIM_CALIBRATION, K_CLAIM_MEASURE, K_CLAIM_TOKENS,
    K_QUAL_REFERENCE, K_QUAL_REFERENCE_FILE, K_QUAL_TEXT, K_QUAL_CTX, K_QUAL_CHUNKS, K_QUAL_HEAD,
    K_COUNT
} tb_key_t;

typedef struct tb_key_def {
    tb_sec_kind_t sec;
    const char *name;
    tb_key_type_t type;
    tb_unit_t unit;
    const char *def;        /* default, in scenario syntax                    */
    double min, max;        /* range (ints, floats, list elements)            */
    const char *choices;    /* enum: "f16|f32"                                */
    const char *help;
} tb_key_def_t;

extern const tb_key_def_t tb_scenario_keys[K_COUNT];
const char *tb_sec_kind_name(tb_sec_kind_t k);   /* "model", "decode", ... */

/* ---- the plan ---- */

typedef struct tb_value {
    int64_t i;              /* INT, BOOL (0/1), ENUM (index into choices)      */
    double f;               /* FLOAT                                           */
    char *s;                /* STRING, PATH (as written), ENUM (choice text)   */
    int64_t *list;          /* INT_LIST                                        */
    int n_list;
    int line;               /* line it was set at, 0 = default                 */
} tb_value_t;

typedef struct tb_section {
    tb_sec_kind_t kind;
    char name[64];          /* as written: "decode.deep"                       */
    int line;               /* header line, 0 if absent from the file          */
    tb_value_t v[K_COUNT];  /* only this kind's keys are filled                */
    /* resolved from PATH values (absolute or relative to cwd) */
    char *prompt_path;      /* prompt file, NULL if none                       */
    char *prompt_text;      /* its content, NUL-terminated                     */
    size_t prompt_len;
    /* [quality] (resolved at parse time; the text is read once to hash it) */
    char *text_path;        /* text, NULL if none                              */
    char *ref_path;         /* reference_file, NULL if none                    */
    size_t text_len;
    char text_sha256[65];   /* SHA-256 hex of the text, "" if none             */
} tb_section_t;

typedef struct tb_plan {
    char *path;             /* scenario file as given                          */
    char name[64];          /* file stem                                       */
    char *dir;              /* its directory (for relative paths)              */
    tb_section_t model, engine, protocol;
    tb_section_t *tests;
    int n_tests;
    char *model_path;       /* resolved GGUF path ([model] path), NULL if synth */
    char *normalized;       /* canonical text: every key, every default        */
    char hash[65];          /* SHA-256 hex of normalized                       */
} tb_plan_t;

/* Size caps of the files a scenario reads: the scenario itself and each
 * prompt_file (and `tokenize --file`). */
#define TB_SCENARIO_MAX_BYTES ((size_t)4 << 20)
#define TB_PROMPT_MAX_BYTES ((size_t)32 << 20)

/* Read the regular file `path` whole into *out (NUL-terminated, caller
 * frees; *len its size) if it holds at most max_bytes (scenario_file.c).
 * A device, FIFO, socket or directory is refused without reading or
 * blocking. TB_OK, or TB_ERR_IO / TB_ERR_NOMEM with the message "PATH: ..."
 * naming `what` ("scenario", "prompt file"). */
int  tb_input_read(const char *path, const char *what, size_t max_bytes, char **out, size_t *len);

/* Parse and validate a scenario file into *plan (caller frees with
 * tb_plan_free, also on failure). */
int  tb_plan_load(const char *path, tb_plan_t *plan);
/* Same from a text buffer; `path` is only used for messages and relative paths. */
int  tb_plan_parse(const char *path, const char *text, size_t len, tb_plan_t *plan);
void tb_plan_free(tb_plan_t *plan);
/* What a parsed plan asks that cannot run whatever the model (a test
 * needing more context than [engine] ctx): one "FILE:LINE: message" line
 * per problem to out; returns their number (scenario_check.c). */
int  tb_plan_check(const tb_plan_t *plan, FILE *out);

/* [model] type may list several weight types: the plan runs once per
 * entry ("variant"); a plan with path = has one variant. */
int  tb_plan_n_variants(const tb_plan_t *plan);
void tb_plan_variant_type(const tb_plan_t *plan, int i, char *buf, size_t cap);

/* [engine] kind may list ternbench and llama.cpp: every variant then runs
 * as one group of one run per engine, their repetitions taking turns.
 * Engine i of the list (TB_ENGINE_TERNBENCH or TB_ENGINE_LLAMACPP). */
enum { TB_ENGINE_TERNBENCH = 0, TB_ENGINE_LLAMACPP = 1 };
int  tb_plan_n_engines(const tb_plan_t *plan);
int  tb_plan_engine(const tb_plan_t *plan, int i);

/* Section accessors. */
static inline int64_t tb_plan_int(const tb_section_t *s, tb_key_t k) { return s->v[k].i; }
static inline double tb_plan_float(const tb_section_t *s, tb_key_t k) { return s->v[k].f; }
static inline const char *tb_plan_str(const tb_section_t *s, tb_key_t k) { return s->v[k].s; }

/* ---- text forms (scenario_text.c) ---- */

/* Canonical text of one value ("0, 512, 4096", "10s", "true"). */
void tb_value_format(const tb_key_def_t *d, const tb_value_t *v, char *buf, size_t cap);

/* Canonical text of a plan (allocated; every key with its resolved value). */
char *tb_plan_normalize(const tb_plan_t *plan);
/* `scenario explain`: the normalized plan annotated with help, where each
 * value came from, and the list of tests it expands to. */
void tb_plan_explain(const tb_plan_t *plan, FILE *out);
/* `scenario keys`: markdown reference of every key (scenarios/README.md). */
void tb_scenario_keys_markdown(FILE *out);

/* Test cases a section expands to (one per element of its list key:
 * prefill/ttft/generate prompt_tokens, decode depths; sustained and
 * quality: 1), the element itself (quality: its ctx), and a llama-bench
 * style label ("pp512", "tg128@d4096", "quality512"). */
int     tb_section_n_cases(const tb_section_t *s);
int64_t tb_section_case_param(const tb_section_t *s, int i);
void    tb_section_case_label(const tb_section_t *s, int i, char *buf, size_t cap);

/* SHA-256 of data as 64 hex digits + NUL (hash.c). */
void tb_sha256_hex(const void *data, size_t len, char out[65]);

typedef struct tb_sha256 { uint32_t h[8]; uint64_t len; uint8_t buf[64]; size_t fill; } tb_sha256_t;
void tb_sha256_init(tb_sha256_t *c);
void tb_sha256_update(tb_sha256_t *c, const void *data, size_t len);
void tb_sha256_final(tb_sha256_t *c, uint8_t out[32]);

#endif
