/*
 * test_synth_cache.c — the scenario runner's model cache trusts a file
 * only once tb_synth_verify accepts it (the binary's path is argv[1]).
 *
 * A first run synthesizes llama-tiny into the cache; a different model
 * (another seed, then a requantized copy) placed under that cache name
 * makes the next run fail with the file named and the mismatch stated,
 * instead of benchmarking it as llama-tiny; once the file is removed the
 * run synthesizes it again and succeeds.
 */
#include "synth_test.h"

#include <sys/wait.h>

static char exe[4096];   /* absolute: the commands run inside the test directory */

static int run(const char *args, char *err, size_t cap) {
    char cmd[8192], e[512];
    st_tmp_path(e, sizeof e, "err.txt");
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >/dev/null 2>'%s'", st_dir, exe, args, e);
    int st = system(cmd);
    FILE *f = fopen(e, "rb");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    if (f) fclose(f);
    err[n] = '\0';
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The one cached model file (not a temporary), into path. */
static void cached_model(char *path, size_t cap) {
    char dir[512];
    st_tmp_path(dir, sizeof dir, "cache");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".gguf")) {
            snprintf(path, cap, "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    assert_int_equal(n, 1);
}

static void test_foreign_model_under_cache_name(void **state) {
    (void)state;
    char ini[512], err[8192], model[1024], other[512];
    FILE *f = fopen(st_tmp_path(ini, sizeof ini, "s.ini"), "w");
    assert_non_null(f);
    fputs("[model]\nsynth = llama-tiny\ncache_dir = cache\nseed = 4\n"
          "[engine]\nthreads = 1\n"
          "[protocol]\nwarmup = 0\nrepetitions = 1\nbandwidth_probe = 0\nthrottle_check = false\n"
          "[decode]\ntokens = 2\n", f);
    fclose(f);
    int rc = run("run s.ini --db r.db -q", err, sizeof err);
    if (rc) print_message("%s\n", err);
    assert_int_equal(rc, 0);
    cached_model(model, sizeof model);
    assert_non_null(strstr(model, "llama-tiny"));
    assert_int_equal(run("run s.ini --db r.db -q", err, sizeof err), 0);   /* verified, reused */

    /* another seed's model under the cache name */
    st_tmp_path(other, sizeof other, "other.gguf");
    assert_int_equal(st_synth("llama-tiny", -1, 5, NULL, other), TB_OK);
    assert_int_equal(rename(other, model), 0);
    rc = run("run s.ini --db r.db -q", err, sizeof err);
    assert_true(rc != 0);
    const char *name = strstr(model, "cache/");          /* the scenario names it relative */
    assert_non_null(name);
    if (!strstr(err, name) || !strstr(err, "seed 5")) print_message("stderr: %s\n", err);
    assert_non_null(strstr(err, name));
    assert_non_null(strstr(err, "synthesized as preset llama-tiny type f32 seed 5"));

    /* a foreign file (no provenance) under the cache name */
    assert_int_equal(tb_quantize_model(model, other, TB_TYPE_Q8_0, NULL, NULL), TB_OK);
    assert_int_equal(rename(other, model), 0);
    rc = run("run s.ini --db r.db -q", err, sizeof err);
    assert_true(rc != 0);
    assert_non_null(strstr(err, "not a model synthesized by ternbench"));

    /* removed: synthesized again, verified, run */
    assert_int_equal(unlink(model), 0);
    rc = run("run s.ini --db r.db -q", err, sizeof err);
    if (rc) print_message("%s\n", err);
    assert_int_equal(rc, 0);
    tb_synth_params_t p = {.preset = "llama-tiny", .type = -1, .seed = 4};
    assert_int_equal(tb_synth_verify(&p, model), TB_OK);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s TERNBENCH\n", argv[0]); return 2; }
    if (!realpath(argv[1], exe)) { perror(argv[1]); return 2; }
    st_tmp_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_foreign_model_under_cache_name),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", st_dir);
    if (system(cmd) != 0) rc = 1;
    return rc;
}
