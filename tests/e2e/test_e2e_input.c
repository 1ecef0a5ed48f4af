/*
 * test_e2e_input.c — bad input through the real `ternbench` binary:
 *   - malformed scenario files: "FILE:LINE: message", exit 2, and the
 *     results database unchanged (row counts of every table);
 *   - hostile model files (empty, truncated at several offsets, garbage,
 *     wrong version, absurd counts, a directory, a missing path) given to
 *     every command that loads a model and as a scenario's model: the
 *     message names the file (and the byte offset when the bytes are at
 *     fault), the exit status is non-zero, no signal, no sanitizer report;
 *   - wrong command-line types and values: usage error, exit 2;
 *   - endless or oversized inputs (/dev/zero, a FIFO, a file over the cap)
 *     as a scenario, prompt or text file: refused at once, exit 2;
 *   - a test that cannot run ([engine] ctx too small): its reason on stderr
 *     even with -q, a summary row, and `scenario check` flags it;
 *   - empty numeric values (never read as 0) and unknown options (named,
 *     then the usage), exit 2.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "e2e.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ===================================================================== */
/* Fixtures: a tiny model, a database with one complete run               */
/* ===================================================================== */

static const char *GOOD_INI =
    "[model]\npath = m.gguf\n"
    "[engine]\nthreads = 1\n"
    "[protocol]\nwarmup = 0\nrepetitions = 1\nbandwidth_probe = 0\nthrottle_check = false\n"
    "[decode]\ntokens = 2\n";

static char db_path[512];

/* Whether the GGUF writer's temporary BASE.XXXXXX.tmp exists in TMP. */
static int has_temp(const char *base) {
    char p[512];
    e2e_path(p, sizeof p, ".");
    DIR *d = opendir(p);
    int found = 0;
    size_t bl = strlen(base);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        found |= l == bl + 11 && !strncmp(e->d_name, base, bl) && !strcmp(e->d_name + l - 4, ".tmp");
    }
    if (d) closedir(d);
    return found;
}

static int group_setup(void **state) {
    (void)state;
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "model", "synth", "--preset", "llama-tiny", "--out", "m.gguf", "--quiet");
    int ok = r.status == 0;
    if (!ok) fprintf(stderr, "model synth failed (%d): %s\n", r.status, r.err);
    e2e_res_free(&r);
    if (!ok) return -1;
    e2e_write("good.ini", GOOD_INI, (size_t)-1);
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "good.ini", "--db", "base.db", "-q");
    ok = r.status == 0;
    if (!ok) fprintf(stderr, "run good.ini failed (%d): %s\n", r.status, r.err);
    e2e_res_free(&r);
    e2e_path(db_path, sizeof db_path, "base.db");
    return ok ? 0 : -1;
}


/* ===================================================================== */
/* Malformed scenarios                                                    */
/* ===================================================================== */

static const struct {
    const char *name;     /* file written into the temp dir              */
    const char *text;
    int line;             /* the line the message must name               */
    const char *needle;   /* and a word of what was expected              */
} bad_scenarios[] = {
    {"unknown-key.ini", "[model]\npath = m.gguf\nbogus = 1\n[decode]\ntokens = 2\n", 3, "bogus"},
    {"wrong-type.ini", "[model]\npath = m.gguf\n[engine]\nthreads = abc\n[decode]\n", 4, "integer"},
    {"wrong-type-list.ini", "[model]\npath = m.gguf\n[decode]\ndepths = 0, abc\n", 4, "integer"},
    {"wrong-bool.ini", "[model]\npath = m.gguf\n[protocol]\nrecord_tokens = maybe\n[decode]\n", 4, "true or false"},
    {"wrong-choice.ini", "[model]\npath = m.gguf\n[engine]\nkv_type = q4\n[decode]\n", 4, "f16"},
    {"out-of-range.ini", "[model]\npath = m.gguf\n[engine]\nthreads = 5000\n[decode]\n", 4, "range"},
    {"out-of-range-reps.ini", "[model]\npath = m.gguf\n[protocol]\nrepetitions = 0\n[decode]\n", 4, "range"},
    {"missing-model.ini", "[model]\npath = nothere.gguf\n[decode]\ntokens = 2\n", 2, "nothere.gguf"},
    {"no-model.ini", "[engine]\nthreads = 1\n[decode]\ntokens = 2\n", 0, "model"},
    {"dir-model.ini", "[model]\npath = adir\n[decode]\ntokens = 2\n", 2, "adir"},
    {"bad-preset.ini", "[model]\nsynth = nopreset\n[decode]\n", 2, "nopreset"},
    {"missing-prompt.ini", "[model]\npath = m.gguf\n[generate]\nprompt_file = nope.txt\n", 4, "nope.txt"},
    {"dir-prompt.ini", "[model]\npath = m.gguf\n[generate]\nprompt_file = adir\n", 4, "directory"},
    {"empty-prompt.ini", "[model]\npath = m.gguf\n[ttft]\nprompt_file = empty.txt\n", 4, "empty"},
    {"bad-section.ini", "[model]\npath = m.gguf\n[bogus]\nx = 1\n", 3, "bogus"},
    {"unclosed-section.ini", "[model]\npath = m.gguf\n[decode\ntokens = 2\n", 3, "]"},
    {"outside-section.ini", "x = 1\n[model]\npath = m.gguf\n[decode]\n", 1, "outside"},
    {"syntax.ini", "[model]\npath = m.gguf\nno equals sign\n[decode]\n", 3, "expected"},
    {"duplicate.ini", "[model]\npath = m.gguf\n[decode]\ntokens = 1\ntokens = 2\n", 5, "duplicate"},
    {"no-tests.ini", "[model]\npath = m.gguf\n", 0, "test section"},
    /* a list item longer than 63 characters is read whole */
    {"long-item.ini", "[model]\npath = m.gguf\n[prefill]\nprompt_tokens = 8"
     "                                                                      garbage\n", 4, "garbage"},
    /* a byte order mark does not shift the section tracking */
    {"bom.ini", "\xEF\xBB\xBF[model]\npath = m.gguf\nbogus = 1\n[decode]\n", 3, "unknown key"},
};

/* A malformed scenario: `run` and `scenario check` say FILE:LINE: and exit
 * 2; nothing is added to (or changed in) the database. */
static void test_bad_scenarios(void **state) {
    (void)state;
    char p[512];
    e2e_path(p, sizeof p, "adir");
    mkdir(p, 0755);
    e2e_write("empty.txt", "", 0);
    char *before = e2e_db_counts(db_path);
    assert_non_null(strstr(before, "runs=1 "));
    for (size_t i = 0; i < sizeof bad_scenarios / sizeof bad_scenarios[0]; i++) {
        const char *name = bad_scenarios[i].name;
        e2e_write(name, bad_scenarios[i].text, (size_t)-1);
        char prefix[128];
        if (bad_scenarios[i].line > 0) snprintf(prefix, sizeof prefix, "%s:%d: ", name, bad_scenarios[i].line);
        else snprintf(prefix, sizeof prefix, "%s:", name);
        for (int cmd = 0; cmd < 2; cmd++) {
            e2e_res_t r;
            if (cmd == 0) E2E_RUN(&r, E2E_NO_LIMIT, "run", name, "--db", "base.db", "-q");
            else E2E_RUN(&r, E2E_NO_LIMIT, "scenario", "check", name);
            e2e_assert_clean(&r, name);
            if (r.status != 2) fail_msg("%s (%s): exit %d, expected 2; stderr:\n%s", name,
                                        cmd ? "check" : "run", r.status, r.err);
            if (strncmp(r.err, prefix, strlen(prefix)) != 0)
                fail_msg("%s: stderr does not start with \"%s\":\n%s", name, prefix, r.err);
            e2e_assert_err_has(&r, name, bad_scenarios[i].needle, NULL);
            e2e_res_free(&r);
        }
        char *after = e2e_db_counts(db_path);
        if (strcmp(before, after) != 0) fail_msg("%s changed the database:\n%s\n%s", name, before, after);
        free(after);
    }
    /* a good scenario before a bad one: nothing runs, no database appears */
    e2e_res_t r2;
    E2E_RUN(&r2, E2E_NO_LIMIT, "run", "good.ini", "unknown-key.ini", "--db", "fresh.db", "-q");
    e2e_assert_clean(&r2, "good.ini unknown-key.ini");
    assert_int_equal(r2.status, 2);
    e2e_assert_err_has(&r2, "good.ini unknown-key.ini", "unknown-key.ini:3:", NULL);
    assert_int_equal(e2e_size("fresh.db"), -1);
    e2e_res_free(&r2);
    /* a scenario file that does not exist */
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "absent.ini", "--db", "base.db", "-q");
    e2e_assert_clean(&r, "absent.ini");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "absent.ini", "absent.ini", NULL);
    e2e_res_free(&r);
    char *after = e2e_db_counts(db_path);
    assert_string_equal(before, after);
    free(after);
    free(before);
}

/* ===================================================================== */
/* Hostile model files                                                    */
/* ===================================================================== */

/* Deterministic junk (xorshift), first byte never 'G'. */
static void junk(unsigned char *b, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        b[i] = (unsigned char)(seed >> 24);
    }
    if (n && b[0] == 'G') b[0] = 'g';
}

typedef struct bad_model {
    char name[64];
    int offset_named;   /* the bytes are at fault: the message names an offset */
} bad_model_t;

/* Write the hostile files next to m.gguf; returns how many. */
static int make_bad_models(bad_model_t *bm, int cap) {
    size_t n;
    char *good = e2e_slurp("m.gguf", &n);
    assert_non_null(good);
    assert_true(n > 200000);
    int k = 0;
    /* truncations: inside the magic, the header counts, the metadata, the
     * tensor infos, the data section, one byte short */
    const size_t cuts[] = {0, 3, 12, 20, 64, 3000, 12000, 100000, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0] && k < cap; i++, k++) {
        snprintf(bm[k].name, sizeof bm[k].name, "trunc-%zu.gguf", cuts[i]);
        bm[k].offset_named = 1;
        e2e_write(bm[k].name, good, cuts[i]);
    }
    unsigned char *buf = malloc(8192);
    assert_non_null(buf);
    junk(buf, 8192, 12345);
    snprintf(bm[k].name, sizeof bm[k].name, "garbage.gguf");
    bm[k++].offset_named = 1;
    e2e_write("garbage.gguf", buf, 8192);
    /* right magic, then garbage */
    memcpy(buf, "GGUF", 4);
    snprintf(bm[k].name, sizeof bm[k].name, "garbage-header.gguf");
    bm[k++].offset_named = 1;
    e2e_write("garbage-header.gguf", buf, 8192);
    /* version 99 */
    memcpy(buf, good, 8192);
    buf[4] = 99; buf[5] = buf[6] = buf[7] = 0;
    snprintf(bm[k].name, sizeof bm[k].name, "version99.gguf");
    bm[k++].offset_named = 1;
    e2e_write("version99.gguf", buf, 8192);
    /* absurd key/value count */
    memcpy(buf, good, 8192);
    memset(buf + 16, 0xff, 8);
    snprintf(bm[k].name, sizeof bm[k].name, "huge-kv.gguf");
    bm[k++].offset_named = 1;
    e2e_write("huge-kv.gguf", buf, 8192);
    free(buf);
    free(good);
    char p[512];
    e2e_path(p, sizeof p, "dir.gguf");
    mkdir(p, 0755);
    snprintf(bm[k].name, sizeof bm[k].name, "dir.gguf");
    bm[k++].offset_named = 0;
    snprintf(bm[k].name, sizeof bm[k].name, "missing.gguf");
    bm[k++].offset_named = 0;
    return k;
}

/* Every model-loading command fails cleanly on every hostile file. */
static void test_hostile_models(void **state) {
    (void)state;
    bad_model_t bm[24];
    int n = make_bad_models(bm, 24);
    char *before = e2e_db_counts(db_path);
    for (int i = 0; i < n; i++) {
        const char *f = bm[i].name;
        char ini[2048];
        snprintf(ini, sizeof ini, "[model]\npath = %s\n[protocol]\nwarmup = 0\nrepetitions = 1\n"
                 "bandwidth_probe = 0\n[decode]\ntokens = 2\n", f);
        e2e_write("hostile.ini", ini, (size_t)-1);
        const char *const cmds[][12] = {
            {"model", "info", f, NULL},
            {"generate", "-m", f, "-p", "hi", "-n", "2", NULL},
            {"tokenize", "-m", f, "--text", "hi", NULL},
            {"detokenize", "-m", f, "1", NULL},
            {"bench", "-m", f, "-p", "2", "-n", "2", "-r", "1", "-t", "1", NULL},
            {"model", "quantize", f, "q.gguf", "--type", "q8_0", NULL},
            {"run", "hostile.ini", "--db", "base.db", "-q", NULL},
        };
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            char what[2048];
            snprintf(what, sizeof what, "%s %s (%s)", cmds[c][0], cmds[c][1], f);
            e2e_res_t r;
            e2e_run(E2E_NO_LIMIT, cmds[c], &r);
            e2e_assert_clean(&r, what);
            if (r.status == 0) fail_msg("%s: exit 0; stdout:\n%.2000s", what, r.out);
            /* the scenario names it after resolving it against its directory */
            e2e_assert_err_has(&r, what, f, NULL);
            if (bm[i].offset_named) e2e_assert_err_has(&r, what, "offset 0x", NULL);
            e2e_res_free(&r);
        }
        if (e2e_size("q.gguf") >= 0 || has_temp("q.gguf"))
            fail_msg("quantize of %s left q.gguf or q.gguf.XXXXXX.tmp", f);
        char *after = e2e_db_counts(db_path);
        if (strcmp(before, after) != 0) fail_msg("run with %s changed the database:\n%s\n%s", f, before, after);
        free(after);
    }
    free(before);
}

/* ===================================================================== */
/* Wrong command-line types and values                                    */
/* ===================================================================== */

static void test_usage_errors(void **state) {
    (void)state;
    static const char *const cases[][12] = {
        /* the token the message must quote comes first */
        {"abc", "generate", "-m", "m.gguf", "-n", "abc", NULL},
        {"-5", "generate", "-m", "m.gguf", "-n", "-5", NULL},
        {"0", "generate", "-m", "m.gguf", "-t", "0", NULL},
        {"xyz", "generate", "-m", "m.gguf", "--temp", "xyz", NULL},
        {"--bogus", "generate", "-m", "m.gguf", "--bogus", NULL},
        {"-n", "generate", "-m", "m.gguf", "-n", NULL},
        {"-m", "generate", "-n", "2", NULL},
        {"abc", "bench", "-m", "m.gguf", "-n", "abc", NULL},
        {"0", "bench", "-m", "m.gguf", "-t", "0", NULL},
        {"2x", "bench", "-m", "m.gguf", "-t", "2x", NULL},
        {"0", "bench", "-m", "m.gguf", "-r", "0", NULL},
        {"q9_9", "model", "synth", "--preset", "llama-tiny", "--out", "x.gguf", "--type", "q9_9", NULL},
        {"nope", "model", "synth", "--preset", "nope", "--out", "x.gguf", NULL},
        {"abc", "model", "synth", "--preset", "llama-tiny", "--out", "x.gguf", "--seed", "abc", NULL},
        {"--out", "model", "synth", "--preset", "llama-tiny", NULL},
        {"q9_9", "model", "quantize", "m.gguf", "x.gguf", "--type", "q9_9", NULL},
        {"--type", "model", "quantize", "m.gguf", "x.gguf", NULL},
        {"abc", "model", "info", "m.gguf", "--ctx", "abc", NULL},
        {"q4_0", "model", "info", "m.gguf", "--kv-type", "q4_0", NULL},
        {"bogus", "model", "bogus", NULL},
        {"avx9", "kernels", "--isa", "avx9", NULL},
        {"q9_9", "kernels", "--format", "q9_9", NULL},
        {"q8_k", "kernels", "--format", "q8_k", NULL},
        {"0", "kernels", "-t", "0", NULL},
        {"abc", "bandwidth", "-t", "abc", NULL},
        {"--text", "tokenize", "-m", "m.gguf", NULL},
        {"abc", "detokenize", "-m", "m.gguf", "abc", NULL},
        {"xml", "export", "--format", "xml", "--db", "base.db", NULL},
        {"noequals", "run", "good.ini", "--db", "base.db", "--tag", "noequals", NULL},
        {"byte 1", "run", "good.ini", "--db", "base.db", "--tag", "a b=c", NULL},
        {"byte 6", "run", "good.ini", "--db", "base.db", "--tag", "note=x\ny", NULL},
        {"--out", "report", "--db", "base.db", NULL},
        {"unknown option '--bogus'", "report", "--db", "base.db", "--out", "r", "--bogus", NULL},
        {"--db needs a value", "report", "--out", "r", "--db", NULL},
        {"usage", "scenario", "bogus", NULL},
        {"--bogus", "list", "--db", "base.db", "--bogus", NULL},
        {"frobnicate", "frobnicate", NULL},
        {"avx9", "--isa", "avx9", "list", "--db", "base.db", NULL},
        {"usage", "--isa", "ref", NULL},
    };
    char *before = e2e_db_counts(db_path);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[256] = "";
        for (int j = 1; cases[i][j]; j++) {
            strncat(what, cases[i][j], sizeof what - strlen(what) - 2);
            strcat(what, " ");
        }
        e2e_res_t r;
        e2e_run(E2E_NO_LIMIT, &cases[i][1], &r);
        e2e_assert_clean(&r, what);
        if (r.status != 2) fail_msg("%s: exit %d, expected 2 (usage); stderr:\n%s", what, r.status, r.err);
        e2e_assert_err_has(&r, what, cases[i][0], NULL);
        e2e_res_free(&r);
    }
    /* rejected options create nothing */
    assert_int_equal(e2e_size("x.gguf"), -1);
    assert_false(has_temp("x.gguf"));
    char *after = e2e_db_counts(db_path);
    assert_string_equal(before, after);
    free(after);
    free(before);
}

/* ===================================================================== */
/* Endless and oversized inputs                                           */
/* ===================================================================== */

/* A device, a FIFO nobody writes to, or a file over the cap where a
 * scenario, prompt or text file is expected: refused at once (never read
 * into memory, never waited on), exit 2, the file named. */
static void test_endless_inputs(void **state) {
    (void)state;
    char p[512];
    e2e_path(p, sizeof p, "in-fifo");
    assert_int_equal(mkfifo(p, 0644), 0);
    e2e_write("zero-prompt.ini", "[model]\npath = m.gguf\n[generate]\nprompt_file = /dev/zero\n", (size_t)-1);
    e2e_write("fifo-prompt.ini", "[model]\npath = m.gguf\n[ttft]\nprompt_file = in-fifo\n", (size_t)-1);
    e2e_write("big-prompt.ini", "[model]\npath = m.gguf\n[generate]\nprompt_file = big.txt\n", (size_t)-1);
    e2e_write("zero-vocab.ini", "[model]\nsynth = llama-tiny\nvocab_from = /dev/zero\n[decode]\n", (size_t)-1);
    /* sparse files: their size is over the cap, no disk is used */
    e2e_path(p, sizeof p, "big.txt");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), (off_t)40 << 20), 0);
    fclose(f);
    e2e_path(p, sizeof p, "big.ini");
    f = fopen(p, "w");
    assert_non_null(f);
    fputs("[model]\npath = m.gguf\n[decode]\n", f);
    assert_int_equal(ftruncate(fileno(f), (off_t)5 << 20), 0);
    fclose(f);
    static const char *const cases[][8] = {
        /* what the message must name first */
        {"/dev/zero", "scenario", "check", "/dev/zero", NULL},
        {"/dev/zero", "scenario", "explain", "/dev/zero", NULL},
        {"/dev/zero", "run", "/dev/zero", "--db", "base.db", "-q", NULL},
        {"in-fifo", "scenario", "check", "in-fifo", NULL},
        {"in-fifo", "run", "in-fifo", "--db", "base.db", "-q", NULL},
        {"zero-prompt.ini:4: ", "scenario", "check", "zero-prompt.ini", NULL},
        {"zero-prompt.ini:4: ", "run", "zero-prompt.ini", "--db", "base.db", "-q", NULL},
        {"fifo-prompt.ini:4: ", "scenario", "check", "fifo-prompt.ini", NULL},
        {"fifo-prompt.ini:4: ", "run", "fifo-prompt.ini", "--db", "base.db", "-q", NULL},
        {"big-prompt.ini:4: ", "scenario", "check", "big-prompt.ini", NULL},
        {"zero-vocab.ini:3: ", "scenario", "check", "zero-vocab.ini", NULL},
        {"big.ini", "scenario", "check", "big.ini", NULL},
        {"/dev/zero", "tokenize", "-m", "m.gguf", "--file", "/dev/zero", NULL},
        {"in-fifo", "tokenize", "-m", "m.gguf", "--file", "in-fifo", NULL},
        {"big.txt", "tokenize", "-m", "m.gguf", "--file", "big.txt", NULL},
    };
    char *before = e2e_db_counts(db_path);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[256];
        snprintf(what, sizeof what, "%s %s %s", cases[i][1], cases[i][2], cases[i][3]);
        e2e_res_t r;
        e2e_run(E2E_NO_LIMIT, &cases[i][1], &r);
        e2e_assert_clean(&r, what);
        if (r.status != 2) fail_msg("%s: exit %d, expected 2; stderr:\n%s", what, r.status, r.err);
        e2e_assert_err_has(&r, what, cases[i][0], NULL);
        if (!strstr(r.err, "not a regular file") && !strstr(r.err, "over the limit"))
            fail_msg("%s: the message does not say why:\n%s", what, r.err);
        e2e_res_free(&r);
    }
    char *after = e2e_db_counts(db_path);
    assert_string_equal(before, after);
    free(after);
    free(before);
}

/* ===================================================================== */
/* Empty numbers and unknown options                                      */
/* ===================================================================== */

/* An empty numeric value is refused, never read as 0: exit 2, the option
 * named, nothing run. */
static void test_empty_numbers(void **state) {
    (void)state;
    static const char *const cases[][12] = {
        /* the option the message must name comes first */
        {"-p", "bench", "-m", "m.gguf", "-p", "", "-n", "1", "-r", "1", NULL},
        {"-n", "bench", "-m", "m.gguf", "-p", "1", "-n", "", "-r", "1", NULL},
        {"-t", "bench", "-m", "m.gguf", "-t", "", NULL},
        {"-r", "bench", "-m", "m.gguf", "-r", "", NULL},
        {"--ctx", "bench", "-m", "m.gguf", "--ctx", "", NULL},
        {"-t", "bandwidth", "-t", "", NULL},
        {"-r", "bandwidth", "-r", "", NULL},
        {"-t", "kernels", "-t", "", NULL},
        {"--window", "kernels", "--ceiling", "--window", "", NULL},
        {"--last", "list", "--db", "base.db", "--last", "", NULL},
        {"-n", "generate", "-m", "m.gguf", "-n", "", NULL},
        {"--seed", "model", "synth", "--preset", "llama-tiny", "--out", "x.gguf", "--seed", "", NULL},
        {"token id", "detokenize", "-m", "m.gguf", "", NULL},
        {"-t", "bench", "-m", "m.gguf", "-t", " 1", NULL},   /* blanks are not digits */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[256] = "";
        for (int j = 1; cases[i][j]; j++) {
            strncat(what, *cases[i][j] ? cases[i][j] : "''", sizeof what - strlen(what) - 2);
            strcat(what, " ");
        }
        e2e_res_t r;
        e2e_run(E2E_NO_LIMIT, &cases[i][1], &r);
        e2e_assert_clean(&r, what);
        if (r.status != 2) fail_msg("%s: exit %d, expected 2; stdout:\n%.1000s\nstderr:\n%s", what, r.status, r.out, r.err);
        e2e_assert_err_has(&r, what, cases[i][0], NULL);
        if (strstr(r.out, "pp") || strstr(r.out, "tg")) fail_msg("%s: a benchmark ran:\n%s", what, r.out);
        e2e_res_free(&r);
    }
    assert_int_equal(e2e_size("x.gguf"), -1);
    /* empty numbers in a scenario: FILE:LINE: and exit 2 */
    static const struct { const char *text; int line; } inis[] = {
        {"[model]\npath = m.gguf\n[decode]\ntokens =\n", 4},
        {"[model]\npath = m.gguf\n[decode]\ndepths = 0, , 4\n", 4},
        {"[model]\npath = m.gguf\n[protocol]\ncooldown =\n[decode]\n", 4},
        {"[model]\npath = m.gguf\n[protocol]\nthrottle_pct =\n[decode]\n", 4},
        {"[model]\npath = m.gguf\n[generate]\ntemp =\n", 4},
    };
    for (size_t i = 0; i < sizeof inis / sizeof inis[0]; i++) {
        e2e_write("empty-num.ini", inis[i].text, (size_t)-1);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "empty-num.ini:%d: ", inis[i].line);
        e2e_res_t r;
        E2E_RUN(&r, E2E_NO_LIMIT, "scenario", "check", "empty-num.ini");
        e2e_assert_clean(&r, inis[i].text);
        if (r.status != 2 || strncmp(r.err, prefix, strlen(prefix)) != 0)
            fail_msg("%s: exit %d, expected 2 and \"%s\"; stderr:\n%s", inis[i].text, r.status, prefix, r.err);
        e2e_res_free(&r);
    }
}

/* Every command names an option it does not know, then prints its usage,
 * exit 2 (bench's own parser is checked in test_e2e_bench.c). */
static void test_unknown_options(void **state) {
    (void)state;
    static const char *const cases[][10] = {
        {"bandwidth", NULL},
        {"kernels", NULL},
        {"bench", "-m", "m.gguf", NULL},
        {"metrics", NULL},
        {"compare", "--base", "1", "--cand", "2", NULL},
        {"ab", "--base", "x", "--cand", "y", NULL},
        {"count", NULL},
        {"list", "--db", "base.db", NULL},
        {"show", "1", "--db", "base.db", NULL},
        {"export", "--db", "base.db", NULL},
        {"run", "good.ini", "--db", "base.db", "-q", NULL},
        {"scenario", "check", "good.ini", NULL},
        {"scenario", "explain", "good.ini", NULL},
        {"scenario", "normalize", "good.ini", NULL},
        {"generate", "-m", "m.gguf", NULL},
        {"tokenize", "-m", "m.gguf", "--text", "hi", NULL},
        {"detokenize", "-m", "m.gguf", "1", NULL},
        {"model", "info", "m.gguf", NULL},
        {"report", "--db", "base.db", "--out", "rep-unknown", NULL},
    };
    char *before = e2e_db_counts(db_path);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[12];
        int n = 0;
        for (; cases[i][n]; n++) args[n] = cases[i][n];
        args[n++] = "--frobnicate";
        args[n] = NULL;
        char what[128];
        snprintf(what, sizeof what, "%s %s --frobnicate", cases[i][0], cases[i][1] ? cases[i][1] : "");
        e2e_res_t r;
        e2e_run(E2E_NO_LIMIT, args, &r);
        e2e_assert_clean(&r, what);
        if (r.status != 2) fail_msg("%s: exit %d, expected 2; stderr:\n%s", what, r.status, r.err);
        const char *named = strstr(r.err, "unknown option '--frobnicate'");
        if (!named) fail_msg("%s: the option is not named:\n%s", what, r.err);
        if (!strstr(named, "usage")) fail_msg("%s: no usage after the message:\n%s", what, r.err);
        e2e_res_free(&r);
    }
    /* an unknown subcommand of scenario is named too */
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "scenario", "frobnicate", "good.ini");
    assert_int_equal(r.status, 2);
    e2e_assert_err_has(&r, "scenario frobnicate", "unknown subcommand 'frobnicate'", "usage", NULL);
    e2e_res_free(&r);
    char *after = e2e_db_counts(db_path);
    assert_string_equal(before, after);
    free(after);
    free(before);
}

/* ===================================================================== */
/* Tests that cannot run                                                  */
/* ===================================================================== */

static const char *CTX_INI =
    "[model]\npath = m.gguf\n"
    "[engine]\nthreads = 1\nctx = 24\n"
    "[protocol]\nwarmup = 0\nrepetitions = 1\nbandwidth_probe = 0\nthrottle_check = false\n"
    "[decode]\ntokens = 4\ndepths = 0, 32\n"      /* line 13: tg4@d32 needs 37 */
    "[prefill.big]\nprompt_tokens = 16, 64\n";   /* line 15: pp64 needs 64 */

/* A test that fails before its repetitions: its reason reaches stderr even
 * with -q, and it has a row in the summary table; `scenario check` flags
 * it with FILE:LINE: without running anything. */
static void test_cannot_run(void **state) {
    (void)state;
    e2e_write("ctx.ini", CTX_INI, (size_t)-1);
    e2e_res_t r;
    E2E_RUN(&r, E2E_NO_LIMIT, "run", "ctx.ini", "--db", "ctx.db", "-q");
    e2e_assert_clean(&r, "run -q ctx.ini");
    if (r.status != 1) fail_msg("run -q ctx.ini: exit %d, expected 1; stderr:\n%s", r.status, r.err);
    e2e_assert_err_has(&r, "run -q ctx.ini", "tg4@d32", "needs 37 context positions", "pp64",
                       "needs 64 context positions", NULL);
    const char *rows[] = {"| tg4@d32 | decode_tok_per_s | failed |", "| big pp64 | prefill_tok_per_s | failed |",
                          "| tg4@d0 |", "| big pp16 |"};
    for (size_t i = 0; i < 4; i++)
        if (!strstr(r.out, rows[i])) fail_msg("run -q ctx.ini: no summary row \"%s\":\n%s", rows[i], r.out);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "scenario", "check", "ctx.ini");
    e2e_assert_clean(&r, "scenario check ctx.ini");
    if (r.status != 2) fail_msg("scenario check ctx.ini: exit %d, expected 2; stderr:\n%s", r.status, r.err);
    e2e_assert_err_has(&r, "scenario check ctx.ini", "ctx.ini:13: [decode] tg4@d32 needs 37",
                       "ctx.ini:15: [prefill.big] pp64 needs 64", "[engine] ctx is 24 (line 5)", NULL);
    if (strstr(r.err, "pp16") || strstr(r.err, "d0 ")) fail_msg("a test that can run is flagged:\n%s", r.err);
    e2e_res_free(&r);
    E2E_RUN(&r, E2E_NO_LIMIT, "scenario", "check", "good.ini");
    assert_int_equal(r.status, 0);
    e2e_res_free(&r);
}

int main(int argc, char **argv) {
    if (e2e_init(argc, argv, "input") != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_scenarios),
        cmocka_unit_test(test_hostile_models),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_endless_inputs),
        cmocka_unit_test(test_empty_numbers),
        cmocka_unit_test(test_unknown_options),
        cmocka_unit_test(test_cannot_run),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, NULL);
    e2e_cleanup();
    return failed;
}
