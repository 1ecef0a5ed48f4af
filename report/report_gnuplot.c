/*
 * report_gnuplot.c — find gnuplot and run it on a script, as an external
 * program: fork + chdir + execv with an argument vector, never a shell.
 */
#include "report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* True when path names an executable regular file. */
static int is_exec(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Look prog up: as given when it contains '/', else along $PATH. */
static int search(const char *prog, char *path, size_t n) {
    if (strchr(prog, '/')) {
        if (!is_exec(prog)) return TB_ERR_NOT_FOUND;
        snprintf(path, n, "%s", prog);
        return TB_OK;
    }
    const char *env = getenv("PATH");
    if (!env || !*env) env = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = env; *p;) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 0 && (size_t)snprintf(path, n, "%.*s/%s", (int)len, p, prog) < n && is_exec(path))
            return TB_OK;
        p += len;
        if (*p == ':') p++;
    }
    return TB_ERR_NOT_FOUND;
}

int rp_gnuplot_find(const char *explicit_prog, char *path, size_t n) {
    const char *prog = explicit_prog;
    const char *origin = "given";
    if (!prog || !*prog) { prog = getenv("TB_GNUPLOT"); origin = "TB_GNUPLOT"; }
    if (!prog || !*prog) { prog = "gnuplot"; origin = NULL; }
    if (search(prog, path, n) == TB_OK) return TB_OK;
    path[0] = 0;
    if (origin)
        return tb_err(TB_ERR_NOT_FOUND, "gnuplot program '%s' (%s) does not exist or is not executable",
                      prog, origin);
    return tb_err(TB_ERR_NOT_FOUND, "gnuplot is not on PATH (install gnuplot-nox, or set TB_GNUPLOT)");
}

int rp_gnuplot_run(const char *path, const char *dir, const char *script) {
    char log[4096];
    if ((size_t)snprintf(log, sizeof log, "%s/%s.log", dir, script) >= sizeof log)
        return tb_err(TB_ERR_ARG, "report: path too long: %s/%s", dir, script);
    pid_t pid = fork();
    if (pid < 0) return tb_err(TB_ERR_IO, "report: fork for gnuplot failed: %s", strerror(errno));
    if (pid == 0) {
        /* child: only async-signal-safe calls until exec */
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd >= 0) dup2(fd, 2);
        if (null >= 0) { dup2(null, 1); dup2(null, 0); }
        if (chdir(dir) != 0) _exit(126);
        char *argv[] = {(char *)path, (char *)script, NULL};
        execv(path, argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return tb_err(TB_ERR_IO, "report: waiting for gnuplot: %s", strerror(errno));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        unlink(log);
        return TB_OK;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return tb_err(TB_ERR_IO, "report: could not execute %s", path);
    if (WIFEXITED(status))
        return tb_err(TB_ERR_IO, "report: gnuplot exited with status %d on %s/%s (see %s)",
                      WEXITSTATUS(status), dir, script, log);
    return tb_err(TB_ERR_IO, "report: gnuplot killed by signal %d on %s/%s",
                  WIFSIGNALED(status) ? WTERMSIG(status) : -1, dir, script);
}
