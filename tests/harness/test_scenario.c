/*
 * test_scenario.c — scenario parser: every error path with its
 * "FILE:LINE: message", suffixes and lists, defaults, normalized text and
 * hash, labels, and that scenarios/README.md matches the key table.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "readme.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenario.h"
#include "ternbench.h"
#include "tmpdir.h"
#include "plan_expect.h"

static int setup(void **state) {
    (void)state;
    if (tmpdir_make("scenario") != 0) return -1;
    char p[512];
    snprintf(p, sizeof p, "%s/m.gguf", tmpdir);     /* a readable "model" file */
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    fputs("GGUF", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/prompt.txt", tmpdir);
    f = fopen(p, "w");
    if (!f) return -1;
    fputs("Hello, world. Grüße!\n", f);
    fclose(f);
    return 0;
}

static int parse(const char *text, tb_plan_t *p) { return plan_parse_in("s.ini", text, p); }

static void expect_error(const char *text, int line, const char *what) {
    plan_expect_error_in("s.ini", text, line, what);
}

#define MODEL "[model]\nsynth = maple-tiny\n"

static void test_errors(void **state) {
    (void)state;
    expect_error(MODEL "[decode]\ntokenz = 5\n", 4, "unknown key \"tokenz\" in [decode]: expected one of tokens, depths");
    expect_error(MODEL "[foo]\n", 3, "unknown section [foo]");
    expect_error(MODEL "[decode]\ntokens = abc\n", 4, "[decode] tokens: expected an integer");
    expect_error(MODEL "[decode]\ntokens = 12x\n", 4, "expected an integer");
    expect_error(MODEL "[protocol]\nrepetitions = 0\n[decode]\n", 4, "value 0 out of range: expected a value in [1, 1000]");
    expect_error(MODEL "[protocol]\nwarmup = 1\nwarmup = 2\n[decode]\n", 5, "duplicate key \"warmup\" in [protocol] (first set at line 4)");
    expect_error(MODEL "[decode]\n[decode]\n", 4, "duplicate section [decode] (first at line 3)");
    expect_error(MODEL "[engine]\n[engine]\n[decode]\n", 4, "duplicate section [engine]");
    expect_error("threads = 2\n" MODEL "[decode]\n", 1, "key \"threads\" outside a section");
    expect_error("[engine]\nthreads = 1\n[decode]\n", 1, "no model: set [model] path = FILE.gguf or [model] synth = PRESET");
    expect_error("[model]\npath = m.gguf\nsynth = maple-tiny\n[decode]\n", 3, "has both path (line 2) and synth");
    expect_error("\n[model]\npath = missing.gguf\n[decode]\n", 3, "cannot read model");
    expect_error("[model]\nsynth = maple-huge\n[decode]\n", 2, "unknown preset \"maple-huge\"");
    expect_error("[model]\npath = m.gguf\nseed = 3\n[decode]\n", 3, "seed only applies with synth");
    expect_error("[model]\nsynth = maple-tiny\ntype = q3_k\n[decode]\n", 3, "unknown weight type \"q3_k\"");
    expect_error(MODEL "[generate]\nprompt_file = nope.txt\n", 4, "nope.txt: cannot read prompt file");
    expect_error(MODEL "[ttft]\nprompt_tokens = 0\n", 4, "0 (the whole prompt file) needs prompt_file");
    expect_error(MODEL "[protocol]\nwarmup = 0\n", 4, "no test sections");
    expect_error(MODEL "[protocol]\nrecord_tokens = maybe\n[decode]\n", 4, "expected true or false, got \"maybe\"");
    expect_error(MODEL "[protocol]\nheadline = mode\n[decode]\n", 4, "expected one of median|mean|min|max, got \"mode\"");
    expect_error(MODEL "[protocol]\ncooldown = 10\n[decode]\n", 4, "a duration with a unit");
    expect_error(MODEL "[protocol]\ncooldown = 2d\n[decode]\n", 4, "a duration");
    expect_error(MODEL "[decode]\ndepths = 0, x, 5\n", 4, "item 2: expected an integer");
    expect_error(MODEL "[decode]\ndepths = 0, -1\n", 4, "item 2: value -1 out of range");
    expect_error(MODEL "[protocol]\nthrottle_pct = 500%\n[decode]\n", 4, "out of range");
    expect_error(MODEL "[decode]\nthis line has no equals sign\n", 4, "syntax error");
    expect_error(MODEL "[model.x]\n", 3, "only test sections take a label");
    expect_error(MODEL "[decode.a b]\n", 3, "a label is letters, digits");
    expect_error(MODEL "[decode\n", 3, "expected ']'");
    expect_error(MODEL "[sustained]\ntokens = 0\n", 3, "[sustained] needs tokens > 0 or duration > 0");
    expect_error(MODEL "[sustained]\nctx = 64\nprompt_tokens = 64\n", 5, "prompt_tokens (64) must be below ctx (64)");
    char longline[400];
    snprintf(longline, sizeof longline, MODEL "[decode]\n; %0300d\n", 0);
    expect_error(longline, 4, "line too long");
}

/* List items and type names longer than any fixed buffer are read whole:
 * a tail after 63 characters is not dropped, a long run of leading zeros
 * keeps its value, and control bytes quoted from the file are escaped. */
static void test_long_items(void **state) {
    (void)state;
    char text[1024], pad[80], zeros[80];
    memset(pad, ' ', 70);
    pad[70] = '\0';
    memset(zeros, '0', 70);
    zeros[70] = '\0';
    snprintf(text, sizeof text, MODEL "[prefill]\nprompt_tokens = 8%sgarbage\n", pad);
    expect_error(text, 4, "garbage");
    snprintf(text, sizeof text, MODEL "[decode]\ndepths = 0, 4%sx\n", pad);
    expect_error(text, 4, "item 2");
    snprintf(text, sizeof text, MODEL "[decode]\ndepths = %s99999999999\n", zeros);
    expect_error(text, 4, "99999999999 out of range");
    snprintf(text, sizeof text, MODEL "type = q8_0%sgarbage\n[decode]\n", pad);
    expect_error(text, 3, "garbage");
    tb_plan_t p;
    snprintf(text, sizeof text, MODEL "[prefill]\nprompt_tokens = %s8, %s16\n", zeros, zeros);
    if (parse(text, &p) != TB_OK) fail_msg("%s", tb_last_error());
    assert_int_equal(p.tests[0].v[K_PREFILL_PROMPT_TOKENS].n_list, 2);
    assert_int_equal(p.tests[0].v[K_PREFILL_PROMPT_TOKENS].list[0], 8);
    assert_int_equal(p.tests[0].v[K_PREFILL_PROMPT_TOKENS].list[1], 16);
    tb_plan_free(&p);
    expect_error(MODEL "[decode]\ntokens = 4\x1b[31m\n", 4, "4\\x1b[31m");
}

static void test_values_and_defaults(void **state) {
    (void)state;
    tb_plan_t p;
    const char *text =
        "; comment\n# another\n"
        "[model]\n  synth = maple-tiny   ; inline comment\ntype = TQ2_0, default\n"
        "[protocol]\ncooldown = 5m\nsensor_interval = 250ms\nrecord_tokens = off\nthrottle_pct = 12.5%\n"
        "[decode.deep]\ndepths = 0, 2k, 1m\ntokens = 64\n"
        "[sustained]\nduration = 10s\ntokens = 0\n"
        "[generate]\nprompt_file = prompt.txt\nprompt_tokens = 0, 8\n";
    int rc = parse(text, &p);
    if (rc) fail_msg("%s", tb_last_error());
    assert_int_equal(p.n_tests, 3);
    assert_string_equal(p.name, "s");
    assert_int_equal(p.protocol.v[K_PROTO_COOLDOWN].i, 300000);
    assert_int_equal(p.protocol.v[K_PROTO_SENSOR_INTERVAL].i, 250);
    assert_int_equal(p.protocol.v[K_PROTO_RECORD_TOKENS].i, 0);
    assert_float_equal(p.protocol.v[K_PROTO_THROTTLE_PCT].f, 12.5, 1e-12);
    assert_int_equal(p.protocol.v[K_PROTO_REPETITIONS].i, 3);          /* default */
    assert_int_equal(p.protocol.v[K_PROTO_REPETITIONS].line, 0);
    assert_string_equal(p.protocol.v[K_PROTO_HEADLINE].s, "median");
    assert_string_equal(p.model.v[K_MODEL_TYPE].s, "tq2_0, default");   /* canonical */
    assert_int_equal(tb_plan_n_variants(&p), 2);
    char t[32];
    tb_plan_variant_type(&p, 1, t, sizeof t);
    assert_string_equal(t, "default");
    const tb_section_t *d = &p.tests[0];
    assert_int_equal(d->kind, TB_SEC_DECODE);
    assert_string_equal(d->name, "decode.deep");
    assert_int_equal(d->v[K_DECODE_DEPTHS].n_list, 3);
    assert_int_equal(d->v[K_DECODE_DEPTHS].list[1], 2048);
    assert_int_equal(d->v[K_DECODE_DEPTHS].list[2], 1048576);
    assert_int_equal(d->v[K_DECODE_DEPTHS].line, 12);
    assert_int_equal(tb_section_n_cases(d), 3);
    char label[64];
    tb_section_case_label(d, 1, label, sizeof label);
    assert_string_equal(label, "tg64@d2048");
    assert_int_equal(p.tests[1].v[K_SUS_DURATION].i, 10000);
    assert_int_equal(p.tests[1].v[K_SUS_WINDOW].i, 256);               /* default */
    tb_section_case_label(&p.tests[1], 0, label, sizeof label);
    assert_string_equal(label, "sustained10s");
    const tb_section_t *g = &p.tests[2];
    assert_non_null(g->prompt_text);
    assert_string_equal(g->prompt_text, "Hello, world. Grüße!\n");
    tb_section_case_label(g, 1, label, sizeof label);
    assert_string_equal(label, "pp8+tg128");

    /* normalized text: every key (defaults too), canonical values, comments gone */
    assert_non_null(strstr(p.normalized, "[decode.deep]\ntokens = 64\ndepths = 0, 2048, 1048576\n"));
    assert_non_null(strstr(p.normalized, "cooldown = 5m\n"));
    assert_non_null(strstr(p.normalized, "repetitions = 3\n"));
    assert_non_null(strstr(p.normalized, "throttle_pct = 12.5%\n"));
    assert_non_null(strstr(p.normalized, "record_tokens = false\n"));
    assert_non_null(strstr(p.normalized, "; prompt_file content: 23 bytes, sha256 "));
    assert_null(strstr(p.normalized, "inline comment"));
    int n_keys = 0;
    for (const char *q = p.normalized; (q = strstr(q, " = ")); q++) n_keys++;
    int expect = 0;
    for (int k = 0; k < K_COUNT; k++) {
        tb_sec_kind_t s = tb_scenario_keys[k].sec;
        expect += s == TB_SEC_MODEL || s == TB_SEC_ENGINE || s == TB_SEC_PROTOCOL ||
                  s == TB_SEC_DECODE || s == TB_SEC_SUSTAINED || s == TB_SEC_GENERATE;
    }
    assert_int_equal(n_keys, expect);
    char h[65];
    tb_sha256_hex(p.normalized, strlen(p.normalized), h);
    assert_string_equal(h, p.hash);

    /* the same plan written differently normalizes to the same text */
    tb_plan_t q;
    const char *text2 =
        "[generate]\nprompt_tokens = 0,8\nprompt_file = prompt.txt\n"
        "[model]\nsynth=maple-tiny\ntype=tq2_0,DEFAULT\n"
        "[protocol]\nthrottle_pct = 12.5\nrecord_tokens = no\nsensor_interval = 250ms\ncooldown = 300s\n"
        "[decode.deep]\ntokens = 64\ndepths = 0, 2048, 1024k\n"
        "[sustained]\ntokens = 0\nduration = 10000ms\n";
    rc = parse(text2, &q);
    if (rc) fail_msg("%s", tb_last_error());
    /* test sections keep file order, so only compare the fixed sections + per-section text */
    assert_non_null(strstr(q.normalized, "[decode.deep]\ntokens = 64\ndepths = 0, 2048, 1048576\n"));
    assert_non_null(strstr(q.normalized, "cooldown = 5m\n"));
    assert_non_null(strstr(q.normalized, "record_tokens = false\n"));
    tb_plan_free(&q);

    /* one value changed: a different hash */
    const char *text3 = "[model]\nsynth = maple-tiny\n[decode]\ntokens = 64\n";
    const char *text4 = "[model]\nsynth = maple-tiny\n[decode]\ntokens = 65\n";
    tb_plan_t a, b;
    assert_int_equal(parse(text3, &a), TB_OK);
    assert_int_equal(parse(text4, &b), TB_OK);
    assert_string_not_equal(a.hash, b.hash);
    tb_plan_free(&a);
    tb_plan_free(&b);
    tb_plan_free(&p);
}

static void test_explain(void **state) {
    (void)state;
    tb_plan_t p;
    assert_int_equal(parse(MODEL "[decode]\ndepths = 0, 512\n", &p), TB_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    tb_plan_explain(&p, f);
    fclose(f);
    assert_non_null(strstr(buf, "depths           = 0, 512"));
    assert_non_null(strstr(buf, "; line 4:"));
    assert_non_null(strstr(buf, "; default:"));
    assert_non_null(strstr(buf, "test 2: [decode] tg128@d512"));
    assert_non_null(strstr(buf, p.hash));
    free(buf);
    tb_plan_free(&p);
}

/* scenarios/README.md carries the generated key reference verbatim. */
static void test_readme_matches_keys(void **state) {
    (void)state;
    const char *root = getenv("TB_SOURCE_ROOT");
    if (!root) skip();
    int has = readme_has_block(root, "keys", tb_scenario_keys_markdown);
    assert_true(has >= 0);
    if (!has)
        fail_msg("scenarios/README.md key reference is stale: regenerate it with "
                 "`ternbench scenario keys` between the keys:begin/end markers");
}

/* Every shipped scenario parses (models are synthesized presets). */
static void test_shipped_scenarios(void **state) {
    (void)state;
    const char *root = getenv("TB_SOURCE_ROOT");
    if (!root) skip();
    const char *names[] = {"quick", "maple-deepgrove-protocol", "maple-depth-sweep", "sustained",
                           "quant-compare", "chars", "maple-claims", "peer-llamacpp",
                           "sustained-tiny"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/scenarios/%s.ini", root, names[i]);
        tb_plan_t p;
        int rc = tb_plan_load(path, &p);
        if (rc) fail_msg("%s", tb_last_error());
        assert_true(p.n_tests >= 1);
        tb_plan_free(&p);
    }
    tb_plan_t p;
    assert_int_equal(tb_plan_load("/nonexistent/x.ini", &p), TB_ERR_IO);
    assert_non_null(strstr(tb_last_error(), "/nonexistent/x.ini: cannot read scenario"));
    tb_plan_free(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_long_items),
        cmocka_unit_test(test_values_and_defaults),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_readme_matches_keys),
        cmocka_unit_test(test_shipped_scenarios),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
