/*
 * e2e.c — child processes, captured output, temporary files and read-only
 * SQLite checks for the end-to-end suite (see e2e.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "e2e.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *e2e_bin;
char e2e_dir[256];

#define OUT_CAP (256 * 1024)

/* ===================================================================== */
/* Temporary directory and files                                          */
/* ===================================================================== */

int e2e_init(int argc, char **argv, const char *tag) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH/TO/ternbench\n", argv[0]);
        return -1;
    }
    /* absolute: children run in the temporary directory */
    static char abs_bin[4096];
    if (!realpath(argv[1], abs_bin) || access(abs_bin, X_OK) != 0) {
        fprintf(stderr, "%s: %s is not executable\n", argv[0], argv[1]);
        return -1;
    }
    e2e_bin = abs_bin;
    snprintf(e2e_dir, sizeof e2e_dir, "/tmp/tb_e2e_%s_XXXXXX", tag);
    if (!mkdtemp(e2e_dir)) {
        perror("mkdtemp");
        return -1;
    }
    /* defaults of the binary land inside the temporary directory */
    char p[512];
    e2e_path(p, sizeof p, "default.db");
    setenv("TB_DB", p, 1);
    e2e_path(p, sizeof p, "default-cache");
    setenv("TB_CACHE_DIR", p, 1);
    return 0;
}

/* nftw callbacks: make directories writable (undo a test's 0555), remove. */
static int open_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)ftw;
    if (flag == FTW_D) chmod(path, 0700);
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

void e2e_cleanup(void) {
    if (!e2e_dir[0]) return;
    nftw(e2e_dir, open_one, 16, FTW_PHYS);
    nftw(e2e_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    e2e_dir[0] = '\0';
}

void e2e_path(char *buf, size_t cap, const char *name) {
    if (name[0] == '/') snprintf(buf, cap, "%s", name);
    else snprintf(buf, cap, "%s/%s", e2e_dir, name);
}

void e2e_write(const char *name, const void *data, size_t n) {
    char p[512];
    e2e_path(p, sizeof p, name);
    if (n == (size_t)-1) n = strlen(data);
    FILE *f = fopen(p, "wb");
    if (!f) fail_msg("cannot create %s: %s", p, strerror(errno));
    if (n && fwrite(data, 1, n, f) != n) fail_msg("cannot write %s", p);
    if (fclose(f) != 0) fail_msg("cannot close %s", p);
}

int64_t e2e_size(const char *name) {
    char p[512];
    struct stat st;
    e2e_path(p, sizeof p, name);
    return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

char *e2e_slurp(const char *name, size_t *n) {
    char p[512];
    e2e_path(p, sizeof p, name);
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (size_t k; buf && (k = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += k;
        if (len == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
        }
    }
    fclose(f);
    if (buf) buf[len] = '\0';   /* len < cap: the loop grows the buffer when it fills */
    if (n) *n = len;
    return buf;
}

/* ===================================================================== */
/* Children                                                               */
/* ===================================================================== */

/* Pipes of the children started and not yet waited for. */
static struct { pid_t pid; int out, err; } kids[4];

pid_t e2e_spawn(e2e_opt_t opt, const char *const *args) {
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) fail_msg("pipe: %s", strerror(errno));
    const char *argv[48];
    int n = 0;
    argv[n++] = e2e_bin;
    for (; args[n - 1] && n < 47; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        /* pipes, not files: RLIMIT_FSIZE must not stop the error message */
        if (dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0 || chdir(e2e_dir) != 0) _exit(126);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        if (opt.full_stdout && opt.fsize >= 0) {
            int fd = open("full-stdout.txt", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
            if (fd < 0 || ftruncate(fd, (off_t)opt.fsize) != 0 || dup2(fd, 1) < 0) _exit(126);
        }
        if (opt.fsize >= 0) {
            signal(SIGXFSZ, SIG_IGN);   /* inherited across exec: writes fail with EFBIG */
            struct rlimit rl = {.rlim_cur = (rlim_t)opt.fsize, .rlim_max = (rlim_t)opt.fsize};
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(126);
        }
        if (opt.no_dac && geteuid() == 0) {   /* a non-root child is bound by permissions anyway */
            static const int caps[] = {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER};
            for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
                if (prctl(PR_CAPBSET_DROP, caps[i], 0, 0, 0) != 0) {
                    fprintf(stderr, "e2e: cannot drop capability %d: %s\n", caps[i], strerror(errno));
                    _exit(126);
                }
        }
        execv(e2e_bin, (char *const *)argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++)
        if (kids[i].pid == 0) {
            kids[i].pid = pid;
            kids[i].out = po[0];
            kids[i].err = pe[0];
            return pid;
        }
    fail_msg("too many children at once");
    return -1;
}

/* A child still running after this long is hung: it is killed (SIGKILL)
 * and the test sees status 1000 + 9. */
#define HANG_S 60

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Drain both pipes until EOF (each into a capped heap buffer). */
static void drain(pid_t pid, int fo, int fe, char **out, char **err) {
    double t0 = now_s();
    int killed = 0;
    char *buf[2] = {calloc(1, OUT_CAP + 1), calloc(1, OUT_CAP + 1)};
    size_t len[2] = {0, 0};
    struct pollfd pf[2] = {{.fd = fo, .events = POLLIN}, {.fd = fe, .events = POLLIN}};
    int open_n = 2;
    if (!buf[0] || !buf[1]) fail_msg("out of memory");
    while (open_n > 0) {
        if (!killed && now_s() - t0 > HANG_S) {
            fprintf(stderr, "e2e: child %d still running after %d s: killed\n", (int)pid, HANG_S);
            kill(pid, SIGKILL);
            killed = 1;
        }
        if (poll(pf, 2, 1000) < 0) {
            if (errno == EINTR) continue;
            fail_msg("poll: %s", strerror(errno));
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char tmp[8192];
            ssize_t k = read(pf[i].fd, tmp, sizeof tmp);
            if (k <= 0) {
                if (k < 0 && errno == EINTR) continue;
                close(pf[i].fd);
                pf[i].fd = -1;
                open_n--;
                continue;
            }
            size_t room = OUT_CAP - len[i], take = (size_t)k < room ? (size_t)k : room;
            memcpy(buf[i] + len[i], tmp, take);
            len[i] += take;
        }
    }
    *out = buf[0];
    *err = buf[1];
}

void e2e_wait(pid_t pid, e2e_res_t *r) {
    memset(r, 0, sizeof *r);
    size_t i = 0;
    while (i < sizeof kids / sizeof kids[0] && kids[i].pid != pid) i++;
    if (i == sizeof kids / sizeof kids[0]) fail_msg("e2e_wait: unknown child %d", (int)pid);
    drain(pid, kids[i].out, kids[i].err, &r->out, &r->err);
    kids[i].pid = 0;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) fail_msg("waitpid: %s", strerror(errno));
    r->status = WIFSIGNALED(st) ? 1000 + WTERMSIG(st) : WEXITSTATUS(st);
}

void e2e_run(e2e_opt_t opt, const char *const *args, e2e_res_t *r) {
    e2e_wait(e2e_spawn(opt, args), r);
}

void e2e_res_free(e2e_res_t *r) {
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

void e2e_assert_clean(const e2e_res_t *r, const char *what) {
    if (r->status >= 1000)
        fail_msg("%s: killed by signal %d; stderr:\n%s", what, r->status - 1000, r->err);
    if (r->status == 126 || r->status == 127)
        fail_msg("%s: could not exec %s (status %d)", what, e2e_bin, r->status);
    static const char *const san[] = {"AddressSanitizer", "LeakSanitizer", "runtime error:",
                                      "UndefinedBehaviorSanitizer"};
    for (size_t i = 0; i < sizeof san / sizeof san[0]; i++)
        if (strstr(r->err, san[i])) fail_msg("%s: sanitizer report:\n%s", what, r->err);
}

void e2e_assert_err_has(const e2e_res_t *r, const char *what, ...) {
    va_list ap;
    va_start(ap, what);
    for (const char *s; (s = va_arg(ap, const char *));)
        if (!strstr(r->err, s)) {
            va_end(ap);
            fail_msg("%s: stderr lacks \"%s\"; stderr was:\n%s", what, s, r->err);
        }
    va_end(ap);
}

/* ===================================================================== */
/* SQLite                                                                 */
/* ===================================================================== */

static sqlite3 *db_open_ro(const char *path) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

/* Append one row's columns to buf as "a|b|c\n". */
static void put_row(sqlite3_stmt *st, char **buf, size_t *len, size_t *cap) {
    int nc = sqlite3_column_count(st);
    for (int c = 0; c < nc; c++) {
        const char *v = (const char *)sqlite3_column_text(st, c);
        size_t k = v ? strlen(v) : 4;
        if (*len + k + 2 >= *cap) {
            while (*len + k + 2 >= *cap) *cap *= 2;
            char *nb = realloc(*buf, *cap);
            if (!nb) fail_msg("out of memory");
            *buf = nb;
        }
        memcpy(*buf + *len, v ? v : "NULL", k);
        *len += k;
        (*buf)[(*len)++] = c + 1 < nc ? '|' : '\n';
    }
    (*buf)[*len] = '\0';
}

char *e2e_db_query(const char *db_path, const char *sql) {
    sqlite3 *db = db_open_ro(db_path);
    if (!db) fail_msg("cannot open %s read-only", db_path);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail_msg("%s: %s: %s", db_path, sql, sqlite3_errmsg(db));
    }
    size_t cap = 1024, len = 0;
    char *buf = calloc(1, cap);
    if (!buf) fail_msg("out of memory");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) put_row(st, &buf, &len, &cap);
    if (rc != SQLITE_DONE) fail_msg("%s: %s: %s", db_path, sql, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return buf;
}

char *e2e_db_counts(const char *db_path) {
    static const char *const tables[] = {"hosts", "builds", "models", "scenarios", "runs", "run_tags",
                                         "tests", "measurements", "token_events", "sensor_samples",
                                         "sensor_absent"};
    char *out = calloc(1, 1024);
    if (!out) fail_msg("out of memory");
    sqlite3 *db = db_open_ro(db_path);
    if (!db) return out;
    size_t len = 0;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", tables[i]);
        sqlite3_stmt *st;
        long long n = -1;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        len += (size_t)snprintf(out + len, 1024 - len, "%s=%lld ", tables[i], n);
    }
    sqlite3_close(db);
    return out;
}
