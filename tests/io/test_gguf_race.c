/*
 * test_gguf_race.c — two processes writing one output path at once.
 *
 * Each writer streams its own recognizable file (a key naming it, 4 MiB
 * of its own byte) to the same PATH; both have begun before either writes
 * data (pipe barrier), and they yield between chunks so their writes
 * interleave. Both must succeed, and PATH must then be exactly one
 * writer's complete bytes, with no temporary left. A third case checks
 * that tb_gguf_writer_remove_inflight (called from a SIGTERM handler)
 * removes a writer's temporary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gguf_fixture.h"

#define ROWS 1024
#define COLS 1024                      /* f32: 4 MiB per file */
#define CHUNK (64 * 1024)

static uint8_t fill_of(int id) { return (uint8_t)(0x11 * (id + 1)); }

/* Child: write PATH as writer `id`; waits on `go` after begin(). */
static int child_write(const char *path, int id, int ready, int go) {
    tb_gguf_writer_t *w;
    int64_t ne[2] = {COLS, ROWS};
    if (tb_gguf_writer_new(&w) || tb_gguf_set_u32(w, "race.writer", (uint32_t)id) ||
        tb_gguf_add_tensor(w, "t", TB_TYPE_F32, 2, ne) || tb_gguf_writer_begin(w, path))
        return 10;
    char c = 'r';
    if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1) return 11;
    static uint8_t buf[CHUNK];
    memset(buf, fill_of(id), sizeof buf);
    for (size_t done = 0; done < (size_t)ROWS * COLS * 4; done += CHUNK) {
        if (tb_gguf_write_tensor_data(w, buf, CHUNK)) return 12;
        sched_yield();
    }
    int rc = tb_gguf_writer_finish(w);
    tb_gguf_writer_free(w);
    return rc ? 13 : 0;
}

static int count_temps(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strstr(e->d_name, ".tmp")) n++;
    if (d) closedir(d);
    return n;
}

static void test_two_writers_one_path(void **state) {
    (void)state;
    char *dir = fx_mkdtemp();
    char path[4096];
    snprintf(path, sizeof path, "%s/race.gguf", dir);
    for (int round = 0; round < 3; round++) {
        int ready[2], go[2];
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(go), 0);
        pid_t pid[2];
        fflush(NULL);
        for (int k = 0; k < 2; k++) {
            pid[k] = fork();
            assert_true(pid[k] >= 0);
            if (pid[k] == 0) _exit(child_write(path, k, ready[1], go[0]));
        }
        char c[2];
        assert_int_equal(read(ready[0], c, 1), 1);
        assert_int_equal(read(ready[0], c + 1, 1), 1);
        assert_int_equal(write(go[1], "gg", 2), 2);
        for (int k = 0; k < 2; k++) {
            int st = 0;
            assert_int_equal(waitpid(pid[k], &st, 0), pid[k]);
            assert_true(WIFEXITED(st));
            assert_int_equal(WEXITSTATUS(st), 0);     /* both report success */
        }
        close(ready[0]); close(ready[1]); close(go[0]); close(go[1]);

        /* the published file is one writer's, complete and unmixed */
        tb_gguf_t *g;
        int rc = tb_gguf_open(path, &g);
        if (rc) print_message("%s\n", tb_last_error());
        assert_int_equal(rc, TB_OK);
        uint32_t id;
        assert_int_equal(tb_gguf_get_u32(g, "race.writer", &id), TB_OK);
        assert_true(id < 2);
        tb_gguf_tensor_t t;
        assert_int_equal(tb_gguf_tensor(g, 0, &t), TB_OK);
        assert_int_equal(t.nbytes, (uint64_t)ROWS * COLS * 4);
        const uint8_t *p = t.data;
        size_t bad = 0;
        for (uint64_t i = 0; i < t.nbytes; i++) bad += p[i] != fill_of((int)id);
        assert_int_equal(bad, 0);
        assert_int_equal(tb_gguf_file_size(g), tb_gguf_data_offset(g) + t.nbytes);
        tb_gguf_close(g);
        assert_int_equal(count_temps(dir), 0);
    }
    fx_rmtree(dir);
}

static void on_term(int sig) {
    (void)sig;
    tb_gguf_writer_remove_inflight();
    _exit(0);
}

static void test_signal_removes_temporary(void **state) {
    (void)state;
    char *dir = fx_mkdtemp();
    char path[4096];
    snprintf(path, sizeof path, "%s/sig.gguf", dir);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGTERM, on_term);
        tb_gguf_writer_t *w;
        int64_t ne[1] = {32};
        if (tb_gguf_writer_new(&w) || tb_gguf_add_tensor(w, "t", TB_TYPE_F32, 1, ne) ||
            tb_gguf_writer_begin(w, path))
            _exit(10);
        if (write(ready[1], "r", 1) != 1) _exit(11);
        for (;;) pause();
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(count_temps(dir), 1);
    kill(pid, SIGTERM);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(count_temps(dir), 0);
    close(ready[0]);
    close(ready[1]);
    fx_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_writers_one_path),
        cmocka_unit_test(test_signal_removes_temporary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
