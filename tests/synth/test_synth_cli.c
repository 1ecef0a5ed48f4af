/*
 * test_synth_cli.c — the engine commands of the ternbench binary (its path
 * is argv[1], passed by meson): model synth/info/quantize, tokenize →
 * detokenize round trip, generate --ids/--logits-out, and exit statuses
 * (2 for usage errors, 1 for engine errors with the library's message).
 */
#include "synth_test.h"

#include <sys/stat.h>
#include <sys/wait.h>

static const char *exe;
static char model[512];

/* Run "exe ARGS" with stdout/stderr captured to files; returns exit status. */
static int run(const char *args, const char *out_name, const char *err_name) {
    char cmd[4096], o[512], e[512];
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", exe, args,
             st_tmp_path(o, sizeof o, out_name ? out_name : "out.txt"),
             st_tmp_path(e, sizeof e, err_name ? err_name : "err.txt"));
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Contents of a captured file (static buffer). */
static const char *slurp(const char *name) {
    static char buf[1 << 16];
    char p[512];
    FILE *f = fopen(st_tmp_path(p, sizeof p, name), "rb");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    return buf;
}

static int setup(void **state) {
    (void)state;
    char args[1024];
    st_tmp_path(model, sizeof model, "cli.gguf");
    snprintf(args, sizeof args, "model synth --preset llama-tiny --out '%s' --seed 3", model);
    return run(args, NULL, NULL) == 0 ? 0 : -1;
}

static void test_synth_output(void **state) {
    (void)state;
    struct stat sb;
    assert_int_equal(stat(model, &sb), 0);
    assert_true(sb.st_size > 1000000);
    assert_non_null(strstr(slurp("out.txt"), "llama-tiny"));
}

static void test_tokenize_detokenize_roundtrip(void **state) {
    (void)state;
    const char *text = "Hello there, the fox said: caf\xC3\xA9 42!";
    char args[2048], ids[4096];
    snprintf(args, sizeof args, "tokenize -m '%s' --text '%s' --ids-only --no-special", model, text);
    assert_int_equal(run(args, NULL, NULL), 0);
    assert_true(snprintf(ids, sizeof ids, "%s", slurp("out.txt")) < (int)sizeof ids);
    char *nl = strchr(ids, '\n');
    assert_non_null(nl);
    *nl = 0;
    assert_true(strlen(ids) > 0);
    assert_true(snprintf(args, sizeof args, "detokenize -m '%s' %s", model, ids) < (int)sizeof args);
    assert_int_equal(run(args, NULL, NULL), 0);
    assert_string_equal(slurp("out.txt"), text);
    /* the table form has one line per id */
    snprintf(args, sizeof args, "tokenize -m '%s' --text '%s' --no-special", model, text);
    assert_int_equal(run(args, NULL, NULL), 0);
    int lines = 0, n_ids = 1;
    for (const char *p = slurp("out.txt"); *p; p++) lines += *p == '\n';
    for (const char *p = ids; *p; p++) n_ids += *p == ' ';
    assert_int_equal(lines, n_ids);
    /* --file gives the same ids as --text */
    char fpath[512];
    FILE *f = fopen(st_tmp_path(fpath, sizeof fpath, "text.txt"), "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    snprintf(args, sizeof args, "tokenize -m '%s' --file '%s' --ids-only --no-special", model, fpath);
    assert_int_equal(run(args, NULL, NULL), 0);
    const char *again = slurp("out.txt");
    assert_int_equal(strncmp(again, ids, strlen(ids)), 0);
}

static void test_model_info_fields(void **state) {
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "model info '%s' --ctx 256", model);
    assert_int_equal(run(args, NULL, NULL), 0);
    const char *out = slurp("out.txt");
    const char *want[] = {"architecture:", "llama", "layers:", "parameters:", "blk.0.attn_q",
                          "blk.1.ffn_down", "token_embd", "f32", "bytes read per decoded token at ctx 256",
                          "weights", "kv cache", "total", "file size:", "isa:", "prefetch:"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!strstr(out, want[i])) fprintf(stderr, "missing '%s' in:\n%s\n", want[i], out);
        assert_non_null(strstr(out, want[i]));
    }
    /* the prefetch distance printed is the engine's (same CPU, same TB_PREFETCH) */
    char pf[128];
    snprintf(pf, sizeof pf, "prefetch:        %zu bytes ahead (this CPU's default %zu), L2 stage %s",
             tb_prefetch_bytes(), tb_prefetch_default(), tb_prefetch_l2() ? "on" : "off");
    if (!strstr(out, pf)) fprintf(stderr, "missing '%s' in:\n%s\n", pf, out);
    assert_non_null(strstr(out, pf));
    /* the printed file size is the real one */
    struct stat sb;
    assert_int_equal(stat(model, &sb), 0);
    char size[64];
    snprintf(size, sizeof size, "%lld bytes", (long long)sb.st_size);
    assert_non_null(strstr(out, size));
}

static void test_generate_ids_and_logits(void **state) {
    (void)state;
    char args[2048], lpath[512];
    st_tmp_path(lpath, sizeof lpath, "logits.bin");
    snprintf(args, sizeof args, "generate -m '%s' -p 'The fox' -n 5 --temp 0 --ids --ignore-eos -t 2 "
             "--logits-out '%s'", model, lpath);
    assert_int_equal(run(args, NULL, NULL), 0);
    int lines = 0;
    for (const char *p = slurp("out.txt"); *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 5);
    assert_non_null(strstr(slurp("err.txt"), "tok/s"));
    struct stat sb;
    assert_int_equal(stat(lpath, &sb), 0);
    assert_int_equal(sb.st_size, 512 * 4);       /* llama-tiny: 512-token vocabulary */
    /* greedy is deterministic: same ids again */
    char first[4096];
    assert_true(snprintf(first, sizeof first, "%s", slurp("out.txt")) < (int)sizeof first);
    assert_int_equal(run(args, NULL, NULL), 0);
    assert_string_equal(slurp("out.txt"), first);
    /* text mode streams something and ends with a newline */
    snprintf(args, sizeof args, "generate -m '%s' -p 'Hello' -n 3 --seed 5", model);
    assert_int_equal(run(args, NULL, NULL), 0);
    const char *txt = slurp("out.txt");
    assert_true(strlen(txt) >= 1 && txt[strlen(txt) - 1] == '\n');
}

static void test_quantize_cli(void **state) {
    (void)state;
    char args[2048], out[512];
    st_tmp_path(out, sizeof out, "cli_q.gguf");
    snprintf(args, sizeof args, "model quantize '%s' '%s' --type q4_0", model, out);
    assert_int_equal(run(args, NULL, NULL), 0);
    snprintf(args, sizeof args, "model info '%s'", out);
    assert_int_equal(run(args, NULL, NULL), 0);
    assert_non_null(strstr(slurp("out.txt"), "q4_0"));
    unlink(out);
}

static void test_usage_errors_exit_2(void **state) {
    (void)state;
    char args[2048];
    const char *bad[] = {
        "model", "model frobnicate", "model synth", "model synth --preset llama-tiny",
        "model synth --preset nope --out x.gguf", "model synth --preset llama-tiny --out x.gguf --type q9_9",
        "model synth --preset llama-tiny --out x.gguf --type q8_k",
        "model synth --preset llama-tiny --out x.gguf --seed -4", "model info",
        "model info a.gguf b.gguf", "model info a.gguf --ctx many", "model quantize a.gguf",
        "model quantize a.gguf b.gguf", "model quantize a.gguf b.gguf --type zz",
        "generate", "generate -m x.gguf -n lots", "generate -m x.gguf --bogus",
        "tokenize", "tokenize -m x.gguf", "tokenize -m x.gguf --text a --file b",
        "detokenize -m x.gguf", "detokenize x.gguf 1 2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = run(bad[i], NULL, NULL);
        if (st != 2) fprintf(stderr, "'%s' exited %d\n", bad[i], st);
        assert_int_equal(st, 2);
        assert_true(strlen(slurp("err.txt")) > 0);
    }
    snprintf(args, sizeof args, "detokenize -m '%s' 1 abc", model);
    assert_int_equal(run(args, NULL, NULL), 2);
}

static void test_engine_errors_exit_1(void **state) {
    (void)state;
    assert_int_equal(run("model info /nonexistent/m.gguf", NULL, NULL), 1);
    const char *err = slurp("err.txt");
    assert_int_equal(strncmp(err, "ternbench model info: ", 22), 0);
    assert_non_null(strstr(err, "/nonexistent/m.gguf"));
    assert_int_equal(run("generate -m /nonexistent/m.gguf", NULL, NULL), 1);
    assert_int_equal(strncmp(slurp("err.txt"), "ternbench generate: ", 20), 0);
    assert_int_equal(run("tokenize -m /nonexistent/m.gguf --text hi", NULL, NULL), 1);
    char args[1024];
    snprintf(args, sizeof args, "detokenize -m '%s' 99999", model);   /* id out of range */
    assert_int_equal(run(args, NULL, NULL), 1);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s PATH-TO-ternbench\n", argv[0]); return 1; }
    exe = argv[1];
    st_tmp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synth_output),
        cmocka_unit_test(test_tokenize_detokenize_roundtrip),
        cmocka_unit_test(test_model_info_fields),
        cmocka_unit_test(test_generate_ids_and_logits),
        cmocka_unit_test(test_quantize_cli),
        cmocka_unit_test(test_usage_errors_exit_2),
        cmocka_unit_test(test_engine_errors_exit_1),
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    st_tmp_cleanup();
    return rc;
}
