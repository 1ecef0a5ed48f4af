/*
 * test_quality_scenario.c — the [quality] test kind:
 *   - parsing: defaults, label and case parameter, the text's hash in the
 *     normalized text; every malformed section fails with FILE:LINE (no
 *     text, unreadable or empty text, no reference, both references, a
 *     reference type with a [model] path, an unknown type, a bad head);
 *   - `ternbench run` (the built binary, argv[1]) on the synthesized
 *     llama-tiny with a generated text: one repetition whatever [protocol]
 *     asks, every quality metric, the models' and text's SHA-256 as test
 *     parameters matching the store's model hash; a model against itself
 *     gives KLD 0 and same top-1 100 %, Q4_0 against F32 a KLD above
 *     Q8_0's; a saved reference file gives the same figures as its model;
 *     a reference file that is neither fails the test, not the run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario.h"
#include "ternbench.h"
#include "tmpdir.h"
#include "plan_expect.h"

static const char *bin;

static void write_file(const char *name, const char *text) {
    char p[512];
    tpath(p, sizeof p, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A text of pseudo-random lower-case words (byte-level vocabulary: one
 * token per byte), n bytes. */
static void write_text(const char *name, int n) {
    char p[512];
    tpath(p, sizeof p, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < n; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        fputc(s % 6 == 0 ? ' ' : 'a' + (int)(s % 11), f);
    }
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    if (tmpdir_make("qscen") != 0) return -1;
    write_file("m.gguf", "GGUF");
    write_file("empty.txt", "");
    write_file("junk.bin", "this is neither a model nor a reference");
    write_text("text.txt", 6000);
    return 0;
}

static int parse(const char *text, tb_plan_t *p) { return plan_parse_in("s.ini", text, p); }

static void expect_error(const char *text, int line, const char *what) {
    plan_expect_error_in("s.ini", text, line, what);
}

#define SYNTH "[model]\nsynth = llama-tiny\n"

static void test_parse(void **state) {
    (void)state;
    tb_plan_t p;
    int rc = parse(SYNTH "[quality.ref]\nreference = F32\ntext = text.txt\n", &p);
    if (rc) fail_msg("%s", tb_last_error());
    assert_int_equal(p.n_tests, 1);
    const tb_section_t *s = &p.tests[0];
    assert_int_equal(s->kind, TB_SEC_QUALITY);
    assert_string_equal(s->name, "quality.ref");
    assert_string_equal(s->v[K_QUAL_REFERENCE].s, "f32");
    assert_int_equal(s->v[K_QUAL_CTX].i, 512);
    assert_int_equal(s->v[K_QUAL_CHUNKS].i, 0);
    assert_int_equal(tb_section_n_cases(s), 1);
    assert_int_equal(tb_section_case_param(s, 0), 512);
    char label[64];
    tb_section_case_label(s, 0, label, sizeof label);
    assert_string_equal(label, "quality512");
    assert_non_null(s->text_path);
    assert_null(s->ref_path);
    assert_int_equal(s->text_len, 6000);
    assert_int_equal(strlen(s->text_sha256), 64);
    char line[160];
    snprintf(line, sizeof line, "; text content: 6000 bytes, sha256 %s\n", s->text_sha256);
    assert_non_null(strstr(p.normalized, line));
    tb_plan_free(&p);

    /* another text, another scenario hash */
    write_text("text2.txt", 6001);
    char h1[65];
    assert_int_equal(parse(SYNTH "[quality]\nreference = f32\ntext = text.txt\n", &p), TB_OK);
    memcpy(h1, p.hash, sizeof h1);
    tb_plan_free(&p);
    assert_int_equal(parse(SYNTH "[quality]\nreference = f32\ntext = text2.txt\n", &p), TB_OK);
    assert_string_not_equal(h1, p.hash);
    tb_plan_free(&p);

    /* [engine] ctx does not bound a quality test: it opens its own sessions */
    assert_int_equal(parse(SYNTH "[engine]\nctx = 16\n[quality]\nreference = f32\ntext = text.txt\nctx = 512\n", &p),
                     TB_OK);
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(tb_plan_check(&p, devnull), 0);
    fclose(devnull);
    tb_plan_free(&p);

    rc = parse("[model]\npath = m.gguf\n[quality]\nreference_file = m.gguf\ntext = text.txt\nctx = 64\nchunks = 2\n"
               "head = approx:16:2\n", &p);
    if (rc) fail_msg("%s", tb_last_error());
    assert_non_null(p.tests[0].ref_path);
    assert_int_equal(p.tests[0].v[K_QUAL_CTX].i, 64);
    tb_plan_free(&p);
}

static void test_errors(void **state) {
    (void)state;
    expect_error(SYNTH "[quality]\nreference = f32\n", 3, "[quality] needs text = FILE");
    expect_error(SYNTH "[quality]\nreference = f32\ntext = nope.txt\n", 5, "nope.txt: cannot read text");
    expect_error(SYNTH "[quality]\nreference = f32\ntext = empty.txt\n", 5, "is empty");
    expect_error(SYNTH "[decode]\n[quality.x]\ntext = text.txt\n", 4, "[quality.x] needs a reference");
    expect_error(SYNTH "[quality]\nreference = f32\ntext = text.txt\nreference_file = m.gguf\n", 6,
                 "has both reference (line 4) and reference_file");
    expect_error(SYNTH "[quality]\nreference = q3_k\ntext = text.txt\n", 4, "unknown weight type \"q3_k\"");
    expect_error(SYNTH "[quality]\nreference_file = gone.gguf\ntext = text.txt\n", 4, "reference_file: cannot read");
    expect_error(SYNTH "[quality]\nreference = f32\ntext = text.txt\nhead = approx:zero\n", 6, "[quality] head:");
    expect_error(SYNTH "[quality]\nreference = f32\ntext = text.txt\nctx = 4\n", 6, "out of range");
    expect_error(SYNTH "[quality]\nreference = f32\ntext = text.txt\nprompt_tokens = 4\n", 6, "unknown key");
}

/* ---- through the runner ---- */

static int run_bin(const char *const *args) {
    pid_t pid = fork();
    if (pid == 0) {
        char e[512];
        tpath(e, sizeof e, "err.txt");
        int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0644), fo = open("/dev/null", O_WRONLY);
        if (fe < 0 || fo < 0) _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        char *argv[32];
        int n = 0;
        argv[n++] = (char *)bin;
        for (; args[n - 1] && n < 31; n++) argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static double q_num(sqlite3 *db, const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    double v = NAN;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The value of metric m of the quality test in section sec of run `type`. */
static double qm(sqlite3 *db, const char *type, const char *sec, const char *m) {
    return q_num(db, "SELECT x.value FROM measurements x JOIN tests t ON t.id = x.test_id JOIN runs r ON r.id = t.run_id"
                     " JOIN models o ON o.id = r.model_id WHERE o.main_type = '%s' AND t.section = '%s'"
                     " AND x.metric = '%s'", type, sec, m);
}

static void test_run(void **state) {
    (void)state;
    /* a reference file from the F32 model first (made by the command) */
    write_file("s.ini", "[model]\nsynth = llama-tiny\ntype = q4_0, q8_0, f32\ncache_dir = cache\n"
                        "[engine]\nthreads = 2\n"
                        "[protocol]\nwarmup = 2\nrepetitions = 3\nbandwidth_probe = 0\nthrottle_check = false\n"
                        "interleave = rep\n"
                        "[quality]\nreference = f32\ntext = text.txt\nctx = 64\nchunks = 3\n"
                        "[quality.file]\nreference_file = junk.bin\ntext = text.txt\nctx = 64\nchunks = 3\n");
    char ini[512], db[512];
    tpath(ini, sizeof ini, "s.ini");
    tpath(db, sizeof db, "q.db");
    const char *args[] = {"run", ini, "--db", db, "--quiet", NULL};
    int rc = run_bin(args);
    assert_int_equal(rc, 1);   /* the junk reference fails its test: the runs are recorded as failed */
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM runs"), 3);
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM tests WHERE kind = 'quality'"), 6);
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM tests WHERE section = 'quality' AND status = 'complete'"), 3);
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM tests WHERE section = 'quality.file' AND status = 'failed'"
                                   " AND error LIKE '%%junk.bin: neither a GGUF model nor a ternbench reference file%%'"), 3);
    /* once: one repetition, index 0, whatever [protocol] says; recorded as such */
    assert_int_equal((int)q_num(d, "SELECT count(DISTINCT repetition) FROM measurements x JOIN tests t ON t.id = x.test_id"
                                   " WHERE t.kind = 'quality'"), 1);
    assert_int_equal((int)q_num(d, "SELECT max(repetition) FROM measurements x JOIN tests t ON t.id = x.test_id"
                                   " WHERE t.kind = 'quality'"), 0);
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM test_params p JOIN tests t ON t.id = p.test_id WHERE"
                                   " t.section = 'quality' AND ((p.key = 'repetitions' AND p.value = 1) OR"
                                   " (p.key = 'warmup' AND p.value = 0))"), 6);
    static const char *const metrics[] = {"ppl", "ppl_unc", "ppl_base", "ppl_ratio", "kld_mean", "kld_unc",
                                          "kld_median", "kld_p99", "kld_max", "same_top_pct", "dp_rms",
                                          "head_rows_per_token", "scored_tokens"};
    for (size_t i = 0; i < sizeof metrics / sizeof *metrics; i++)
        for (int k = 0; k < 3; k++) {
            const char *ty = k == 0 ? "q4_0" : k == 1 ? "q8_0" : "f32";
            double v = qm(d, ty, "quality", metrics[i]);
            if (!isfinite(v)) fail_msg("%s: metric %s missing", ty, metrics[i]);
        }
    assert_int_equal((int)qm(d, "q8_0", "quality", "scored_tokens"), 3 * (64 - 1 - 32));
    /* the exact head multiplies every row: the vocabulary */
    assert_true(qm(d, "q8_0", "quality", "head_rows_per_token") > 0);
    assert_true(qm(d, "q8_0", "quality", "head_rows_per_token") == qm(d, "f32", "quality", "head_rows_per_token"));
    /* the reference against itself */
    assert_true(qm(d, "f32", "quality", "kld_mean") == 0.0);
    assert_true(qm(d, "f32", "quality", "kld_max") == 0.0);
    assert_true(qm(d, "f32", "quality", "same_top_pct") == 100.0);
    assert_true(qm(d, "f32", "quality", "ppl_ratio") == 1.0);
    /* coarser weights drift further */
    double k4 = qm(d, "q4_0", "quality", "kld_mean"), k8 = qm(d, "q8_0", "quality", "kld_mean");
    assert_true(k8 > 0);
    assert_true(k4 > k8);
    assert_true(qm(d, "q4_0", "quality", "ppl_base") == qm(d, "q8_0", "quality", "ppl_base"));
    /* the hashes: the test model's is the store's model hash; the reference's the F32 run's model */
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM test_params p JOIN tests t ON t.id = p.test_id JOIN runs r"
                                   " ON r.id = t.run_id JOIN models o ON o.id = r.model_id WHERE t.section = 'quality'"
                                   " AND p.key = 'model_sha256' AND p.value = o.content_hash"), 3);
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM test_params p JOIN tests t ON t.id = p.test_id WHERE"
                                   " t.section = 'quality' AND p.key = 'reference_sha256' AND p.value ="
                                   " (SELECT content_hash FROM models WHERE main_type = 'f32')"), 3);
    assert_int_equal((int)q_num(d, "SELECT count(DISTINCT p.value) FROM test_params p WHERE p.key = 'text_sha256'"), 1);
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM test_params p WHERE p.key = 'reference_kind' AND"
                                   " p.value = 'type'"), 3);
    sqlite3_close(d);
}

/* A reference saved by `ternbench quality --save-ref` gives the figures its model gives. */
static void test_reference_file(void **state) {
    (void)state;
    char ref[512], refg[512], text[512];
    tpath(ref, sizeof ref, "ref.tbq");
    tpath(text, sizeof text, "text.txt");
    /* the F32 model the previous test cached */
    snprintf(refg, sizeof refg, "%s/cache/llama-tiny-f32-seed1.gguf", tmpdir);
    if (access(refg, R_OK) != 0) skip();
    const char *save[] = {"quality", "--ref", refg, "--text", text, "--ctx", "64", "--chunks", "3",
                          "--save-ref", ref, NULL};
    assert_int_equal(run_bin(save), 0);
    char body[1024];
    snprintf(body, sizeof body, "[model]\nsynth = llama-tiny\ntype = q4_0\ncache_dir = cache\n"
             "[protocol]\nbandwidth_probe = 0\nthrottle_check = false\n"
             "[quality.saved]\nreference_file = ref.tbq\ntext = text.txt\nctx = 64\n"
             "[quality.model]\nreference_file = %s\ntext = text.txt\nctx = 64\nchunks = 3\n", refg);
    write_file("f.ini", body);
    char ini[512], db[512];
    tpath(ini, sizeof ini, "f.ini");
    tpath(db, sizeof db, "f.db");
    const char *args[] = {"run", ini, "--db", db, "--quiet", NULL};
    assert_int_equal(run_bin(args), 0);
    sqlite3 *d;
    assert_int_equal(sqlite3_open(db, &d), SQLITE_OK);
    double a = qm(d, "q4_0", "quality.saved", "kld_mean"), b = qm(d, "q4_0", "quality.model", "kld_mean");
    assert_true(a > 0 && a == b);
    assert_true(qm(d, "q4_0", "quality.saved", "ppl") == qm(d, "q4_0", "quality.model", "ppl"));
    assert_true(qm(d, "q4_0", "quality.saved", "same_top_pct") == qm(d, "q4_0", "quality.model", "same_top_pct"));
    assert_int_equal((int)q_num(d, "SELECT count(*) FROM test_params p JOIN tests t ON t.id = p.test_id WHERE"
                                   " t.section = 'quality.saved' AND p.key = 'reference_kind' AND p.value = 'file'"), 1);
    /* a saved reference names the model it was made from */
    assert_int_equal((int)q_num(d, "SELECT count(DISTINCT p.value) FROM test_params p WHERE p.key = 'reference_sha256'"), 1);
    sqlite3_close(d);
}

int main(int argc, char **argv) {
    bin = argc > 1 ? argv[1] : getenv("TB_TERNBENCH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_run),
        cmocka_unit_test(test_reference_file),
    };
    return cmocka_run_group_tests(tests, setup, tmpdir_teardown);
}
