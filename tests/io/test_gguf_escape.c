/*
 * test_gguf_escape.c — error messages never carry a file's control bytes.
 *
 * A key named with ESC sequences, a C1 control (U+009B, CSI), DEL, a
 * newline and an invalid UTF-8 byte, holding an unknown value type, is
 * refused; the message names the key with each of those bytes as \xNN
 * while valid UTF-8 (é) and printable ASCII pass unchanged. The same
 * holds for a message prefixed by a caller (tb_err_prefix path).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gguf_fixture.h"

static const char KEY[] = "k\x1b[31mred\xC2\x9B" "2J\x7f\n\xFFok caf\xC3\xA9\\x";

static void assert_printable(const char *m) {
    for (const unsigned char *p = (const unsigned char *)m; *p; p++) {
        assert_true(*p >= 0x20 && *p != 0x7f);
        if (*p == 0xC2) assert_true(p[1] >= 0xA0);
    }
}

static void test_control_bytes_escaped(void **state) {
    (void)state;
    bb_t b = {0};
    bb_bytes(&b, "GGUF", 4);
    bb_u32(&b, 3);
    bb_u64(&b, 0);
    bb_u64(&b, 1);
    bb_str(&b, KEY);
    bb_u32(&b, 99);                              /* unknown value type */
    bb_u32(&b, 0);
    char *dir = fx_mkdtemp(), path[512];
    int fd = fx_stage(dir, "esc.gguf", b.p, b.n, path, sizeof path);
    tb_gguf_t *g = NULL;
    assert_int_equal(tb_gguf_open(path, &g), TB_ERR_FORMAT);
    const char *m = tb_last_error();
    print_message("%s\n", m);
    assert_printable(m);
    assert_non_null(strstr(m, "key 'k\\x1B[31mred\\xC2\\x9B2J\\x7F\\x0A\\xFFok caf\xC3\xA9\\x'"));
    assert_non_null(strstr(m, "unknown value type 99"));
    if (fd >= 0) close(fd);
    bb_free(&b);

    /* a vocabulary whose model name carries an escape sequence (tokenizer
     * error, prefixed by the model loader's context) */
    tb_gguf_writer_t *w;
    assert_int_equal(tb_gguf_writer_new(&w), TB_OK);
    assert_int_equal(tb_gguf_set_str(w, "tokenizer.ggml.model", "\x1b]0;title\x07x"), TB_OK);
    const char *tok[] = {"a"};
    assert_int_equal(tb_gguf_set_arr_str(w, "tokenizer.ggml.tokens", tok, NULL, 1), TB_OK);
    char vpath[600];
    snprintf(vpath, sizeof vpath, "%s/v.gguf", dir);
    assert_int_equal(tb_gguf_writer_begin(w, vpath), TB_OK);
    assert_int_equal(tb_gguf_writer_finish(w), TB_OK);
    tb_gguf_writer_free(w);
    assert_int_equal(tb_gguf_open(vpath, &g), TB_OK);
    tb_tokenizer_t *t = NULL;
    assert_int_equal(tb_tokenizer_from_gguf(g, &t), TB_ERR_UNSUPPORTED);
    m = tb_last_error();
    print_message("%s\n", m);
    assert_printable(m);
    assert_non_null(strstr(m, "'\\x1B]0;title\\x07x'"));
    tb_gguf_close(g);
    fx_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_control_bytes_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
