/*
 * test_vectors.c — the published llama.cpp tokenizer vectors in
 * $TB_SHARED_DIR/tokenizer: every string of NAME.gguf.inp must encode
 * (no BOS/EOS, no special parsing) to the ids on the same line of
 * NAME.gguf.out, and decode back to itself (tb_token_to_bytes and the
 * streaming detokenizer both).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "ternbench.h"

#define SEP "\n__ggml_vocab_test__\n"

/* Whole file into a NUL-terminated buffer (NULL if absent). */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

static const char *shared_dir(void) {
    const char *d = getenv("TB_SHARED_DIR");
    return d ? d : "../shared";
}

/* Decode ids with tb_token_to_bytes, dropping SPM's first leading space. */
static size_t decode_all(const tb_tokenizer_t *t, const int32_t *ids, int n, bool spm, char *out,
                         size_t cap) {
    size_t w = 0;
    bool first = true;
    for (int i = 0; i < n; i++) {
        char piece[512];
        int k = tb_token_to_bytes(t, ids[i], false, piece, sizeof piece);
        assert_true(k >= 0 && k <= (int)sizeof piece);
        int skip = (spm && first && k > 0 && piece[0] == ' ') ? 1 : 0;
        if (k > 0) first = false;
        assert_true(w + (size_t)(k - skip) <= cap);
        memcpy(out + w, piece + skip, (size_t)(k - skip));
        w += (size_t)(k - skip);
    }
    return w;
}

/* Decode ids through the streaming detokenizer, checking that every chunk
 * it emits is valid UTF-8 on its own. */
static size_t detok_all(const tb_tokenizer_t *t, const int32_t *ids, int n, char *out, size_t cap) {
    tb_detok_t *d;
    assert_int_equal(tb_detok_new(t, &d), TB_OK);
    size_t w = 0;
    for (int i = 0; i <= n; i++) {
        char chunk[1024];
        int k = i < n ? tb_detok_push(d, ids[i], chunk, sizeof chunk)
                      : tb_detok_flush(d, chunk, sizeof chunk);
        assert_true(k >= 0);
        /* a chunk never ends inside a character */
        for (int j = 0; j < k;) {
            unsigned char c = (unsigned char)chunk[j];
            int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
            assert_true(c < 0x80 || c >= 0xC2);
            assert_true(j + len <= k);
            j += len;
        }
        assert_true(w + (size_t)k <= cap);
        memcpy(out + w, chunk, (size_t)k);
        w += (size_t)k;
    }
    tb_detok_free(d);
    return w;
}

static void run_vectors(const char *name, bool spm) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer/%s", shared_dir(), name);
    tb_gguf_t *g;
    if (tb_gguf_open(path, &g) != TB_OK) {
        print_message("%s\n", tb_last_error());
        skip();      /* ../shared genuinely absent */
    }
    tb_tokenizer_t *t;
    int rc = tb_tokenizer_from_gguf(g, &t);
    if (rc != TB_OK) print_message("%s\n", tb_last_error());
    assert_int_equal(rc, TB_OK);

    size_t ilen, olen;
    char inp_path[4200], out_path[4200];
    snprintf(inp_path, sizeof inp_path, "%s.inp", path);
    snprintf(out_path, sizeof out_path, "%s.out", path);
    char *inp = slurp(inp_path, &ilen), *out = slurp(out_path, &olen);
    assert_non_null(inp);
    assert_non_null(out);

    int n_cases = 0, n_tokens = 0;
    char *s = inp, *line = out;
    for (;;) {
        char *sep = strstr(s, SEP);
        if (!sep) break;
        size_t slen = (size_t)(sep - s);
        char *eol = strchr(line, '\n');
        assert_non_null(eol);
        *eol = '\0';

        /* expected ids */
        int32_t want[1024];
        int nw = 0;
        for (char *p = line;;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) break;
            assert_true(nw < 1024);
            want[nw++] = (int32_t)v;
            p = end;
        }

        int32_t got[1024];
        int ng = tb_tokenize(t, s, slen, false, false, got, 1024);
        assert_true(ng >= 0);
        bool same = ng == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0;
        if (!same) {
            print_message("%s case %d \"%.*s\": want %d ids, got %d:", name, n_cases, (int)slen, s,
                          nw, ng);
            for (int i = 0; i < ng && i < 1024; i++) print_message(" %d", got[i]);
            print_message("\n");
        }
        assert_true(same);

        /* a too-small output buffer reports the full count, writes no more */
        if (ng > 1) {
            int32_t small[2] = {-7, -7};
            assert_int_equal(tb_tokenize(t, s, slen, false, false, small, 1), ng);
            assert_int_equal(small[0], want[0]);
            assert_int_equal(small[1], -7);
        }

        /* round trips */
        char dec[8192];
        size_t dn = decode_all(t, got, ng, spm, dec, sizeof dec);
        assert_int_equal(dn, slen);
        assert_memory_equal(dec, s, slen);
        dn = detok_all(t, got, ng, dec, sizeof dec);
        assert_int_equal(dn, slen);
        assert_memory_equal(dec, s, slen);

        n_cases++;
        n_tokens += ng;
        s = sep + strlen(SEP);
        line = eol + 1;
    }
    assert_true(n_cases >= 40);
    print_message("%s: %d cases, %d tokens\n", name, n_cases, n_tokens);
    free(inp);
    free(out);
    tb_tokenizer_free(t);
    tb_gguf_close(g);
}

/* One tokenizer shared by threads: each thread encodes every case many
 * times and must get what the main thread got. */
typedef struct shared_job {
    const tb_tokenizer_t *t;
    const char *inp;
    int32_t *want;            /* (n_cases, 256) main-thread ids */
    int *nwant;
    int n_cases;
    int bad;
} shared_job_t;

static void *encode_all(void *arg) {
    shared_job_t *j = arg;
    for (int rep = 0; rep < 20; rep++) {
        const char *s = j->inp;
        for (int c = 0; c < j->n_cases; c++) {
            const char *sep = strstr(s, SEP);
            int32_t got[256];
            int n = tb_tokenize(j->t, s, (size_t)(sep - s), false, false, got, 256);
            if (n != j->nwant[c] || memcmp(got, j->want + 256 * c, (size_t)n * sizeof *got)) j->bad++;
            s = sep + strlen(SEP);
        }
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    char path[4096], inp_path[4200];
    snprintf(path, sizeof path, "%s/tokenizer/ggml-vocab-gpt-2.gguf", shared_dir());
    snprintf(inp_path, sizeof inp_path, "%s.inp", path);
    tb_gguf_t *g;
    if (tb_gguf_open(path, &g) != TB_OK) skip();
    tb_tokenizer_t *t;
    assert_int_equal(tb_tokenizer_from_gguf(g, &t), TB_OK);
    size_t ilen;
    char *inp = slurp(inp_path, &ilen);
    assert_non_null(inp);
    enum { MAXC = 128 };
    int32_t *want = malloc(sizeof(int32_t) * 256 * MAXC);
    int nwant[MAXC], n_cases = 0;
    assert_non_null(want);
    for (const char *s = inp, *sep; (sep = strstr(s, SEP)) && n_cases < MAXC; s = sep + strlen(SEP)) {
        nwant[n_cases] = tb_tokenize(t, s, (size_t)(sep - s), false, false, want + 256 * n_cases, 256);
        assert_true(nwant[n_cases] >= 0 && nwant[n_cases] <= 256);
        n_cases++;
    }
    shared_job_t jobs[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        jobs[i] = (shared_job_t){t, inp, want, nwant, n_cases, 0};
        assert_int_equal(pthread_create(&th[i], NULL, encode_all, &jobs[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].bad, 0);
    }
    free(want);
    free(inp);
    tb_tokenizer_free(t);
    tb_gguf_close(g);
}

static void test_gpt2(void **state) {
    (void)state;
    run_vectors("ggml-vocab-gpt-2.gguf", false);
}

static void test_llama_spm(void **state) {
    (void)state;
    run_vectors("ggml-vocab-llama-spm.gguf", true);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_llama_spm),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
