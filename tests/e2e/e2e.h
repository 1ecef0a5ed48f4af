/*
 * e2e.h — helpers for the end-to-end suite: run the built `ternbench`
 * binary (meson passes its path as argv[1]) in a private mkdtemp()
 * directory, capture its exit status, stdout and stderr, and look at the
 * SQLite files it leaves behind.
 *
 * Every child runs with the working directory set to the temporary
 * directory and TB_DB / TB_CACHE_DIR pointing inside it, so a command that
 * falls back to a default location can never touch the source tree.
 */
#ifndef TB_E2E_H
#define TB_E2E_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Path of the ternbench binary and of the temporary working directory. */
extern const char *e2e_bin;
extern char e2e_dir[256];

/* The result of one child: status is the exit code, or 1000 + signal
 * number when the child was killed by a signal. out/err are NUL-terminated
 * heap copies (the first 256 KiB) of what it printed. */
typedef struct e2e_res {
    int status;
    char *out;
    char *err;
} e2e_res_t;

/* Child options. fsize >= 0 sets RLIMIT_FSIZE (bytes) in the child with
 * SIGXFSZ ignored, so writes past it fail with EFBIG like a full disk. */
typedef struct e2e_opt {
    int64_t fsize;
    int full_stdout;   /* with fsize: stdout is a file already fsize bytes long
                        * (O_APPEND), so every write to it fails */
    int no_dac;        /* permissions bind even as root: the child loses
                        * CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER
                        * (bounding set, before exec) */
} e2e_opt_t;

#define E2E_NO_LIMIT ((e2e_opt_t){.fsize = -1})
#define E2E_FSIZE(n) ((e2e_opt_t){.fsize = (int64_t)(n)})
#define E2E_FULL_STDOUT(n) ((e2e_opt_t){.fsize = (int64_t)(n), .full_stdout = 1})
#define E2E_NO_DAC ((e2e_opt_t){.fsize = -1, .no_dac = 1})

/* Create the temporary directory and read argv[1]; 0 on success. */
int  e2e_init(int argc, char **argv, const char *tag);
/* Remove the temporary directory recursively. */
void e2e_cleanup(void);

/* e2e_dir + "/" + name. */
void e2e_path(char *buf, size_t cap, const char *name);
/* Write n bytes (or a NUL-terminated text when n == (size_t)-1) to TMP/name. */
void e2e_write(const char *name, const void *data, size_t n);
/* Size of TMP/name, -1 if absent. */
int64_t e2e_size(const char *name);
/* Whole file TMP/name into a heap buffer, NUL-terminated (*n its size); NULL if unreadable. */
char *e2e_slurp(const char *name, size_t *n);

/* Start ternbench with args (NULL-terminated, without argv[0]). */
pid_t e2e_spawn(e2e_opt_t opt, const char *const *args);
/* Wait for a child started by e2e_spawn and collect its output. */
void e2e_wait(pid_t pid, e2e_res_t *r);
/* spawn + wait. */
void e2e_run(e2e_opt_t opt, const char *const *args, e2e_res_t *r);
void e2e_res_free(e2e_res_t *r);

/* Fail the test unless the child exited on its own (no signal) and its
 * stderr holds no sanitizer report. `what` labels the failure. */
void e2e_assert_clean(const e2e_res_t *r, const char *what);
/* Fail unless r->err contains every one of the NULL-terminated needles. */
void e2e_assert_err_has(const e2e_res_t *r, const char *what, ...);

/* Convenience: e2e_run with a literal argument list. */
#define E2E_RUN(res, opt, ...) \
    e2e_run((opt), (const char *const[]){__VA_ARGS__, NULL}, (res))

/* ===================================================================== */
/* SQLite checks (read-only connections)                                  */
/* ===================================================================== */

/* "hosts=1 builds=1 ... measurements=52 ..." for every table of the
 * results schema; "" when the database cannot be opened. Heap string. */
char *e2e_db_counts(const char *db_path);
/* Rows of `sql` rendered as text, one line per row, columns joined by '|'.
 * Heap string; NULL (and a test failure) on an SQL error. */
char *e2e_db_query(const char *db_path, const char *sql);

#endif
