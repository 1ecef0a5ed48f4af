/*
 * test_text_flood.c — hash flooding of the tokenizer's token map and
 * merge map.
 *
 * A vocabulary of 2000 token texts and 2000 merges that all fall in one
 * slot of the old unseeded FNV-1a maps (tests/io/fnv_collide.h) must
 * load, map every text to its id and every pair to its rank, and build
 * both maps in a linear number of probes (the old maps needed n^2/2 for
 * these texts). The bound counts slots, never time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ternbench.h"
#include "text/text.h"
#include "../io/fnv_collide.h"

#define N 2000

static char g_tok[N][32], g_mb[N][32], g_merge[N][40];

static void test_colliding_vocab_loads_linearly(void **state) {
    (void)state;
    const char *toks[N], *merges[N];
    /* the old merge hash: FNV(a), then FNV of b from that state ^ a constant */
    uint64_t mbasis = fnv_step(FNV_BASIS, "x", 1) ^ 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < N; i++) {
        char pre[24];
        snprintf(pre, sizeof pre, "w%d.", i);
        assert_int_equal(fnv_collide(FNV_BASIS, pre, 0x1234, g_tok[i]), 0);
        assert_int_equal(fnv_step(FNV_BASIS, g_tok[i], strlen(g_tok[i])) & 0xffff, 0x1234);
        snprintf(pre, sizeof pre, "m%d.", i);
        assert_int_equal(fnv_collide(mbasis, pre, 0x4321, g_mb[i]), 0);
        assert_int_equal(fnv_step(mbasis, g_mb[i], strlen(g_mb[i])) & 0xffff, 0x4321);
        snprintf(g_merge[i], sizeof g_merge[i], "x %s", g_mb[i]);
        toks[i] = g_tok[i];
        merges[i] = g_merge[i];
    }
    char dir[] = "/tmp/tb_text_flood_XXXXXX", path[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/v.gguf", dir);
    tb_gguf_writer_t *w;
    assert_int_equal(tb_gguf_writer_new(&w), TB_OK);
    assert_int_equal(tb_gguf_set_str(w, "general.architecture", "llama"), TB_OK);
    assert_int_equal(tb_gguf_set_str(w, "tokenizer.ggml.model", "gpt2"), TB_OK);
    assert_int_equal(tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, N), TB_OK);
    assert_int_equal(tb_gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, NULL, N), TB_OK);
    assert_int_equal(tb_gguf_writer_begin(w, path), TB_OK);
    assert_int_equal(tb_gguf_writer_finish(w), TB_OK);
    tb_gguf_writer_free(w);

    tb_gguf_t *g;
    assert_int_equal(tb_gguf_open(path, &g), TB_OK);
    tb_tokenizer_t *t;
    int rc = tb_tokenizer_from_gguf(g, &t);
    if (rc) print_message("%s\n", tb_last_error());
    assert_int_equal(rc, TB_OK);
    for (int i = 0; i < N; i++) {
        assert_int_equal(tb_vocab_find(t, g_tok[i], strlen(g_tok[i])), i);
        assert_int_equal(tb_vocab_merge_rank(t, "x", 1, g_mb[i], strlen(g_mb[i])), i);
    }
    char miss[32];
    assert_int_equal(fnv_collide(FNV_BASIS, "absent.", 0x1234, miss), 0);
    assert_int_equal(tb_vocab_find(t, miss, strlen(miss)), -1);
    assert_int_equal(tb_vocab_merge_rank(t, "x", 1, miss, strlen(miss)), -1);
    /* linear: about 1.5 probes per entry at load <= 1/2; the old maps
     * needed N * (N + 1) / 2 each for these texts */
    print_message("probes: %llu for %d tokens and %d merges\n",
                  (unsigned long long)t->map_probes, N, N);
    assert_true(t->map_probes >= 2 * N && t->map_probes <= 8 * N);
    tb_tokenizer_free(t);
    tb_gguf_close(g);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colliding_vocab_loads_linearly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
