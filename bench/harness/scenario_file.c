/*
 * scenario_file.c — read a whole input file (a scenario, a prompt) into
 * memory, refusing what cannot be read in bounded time and memory: a
 * device (/dev/zero), a FIFO or socket (opened without blocking, so a
 * FIFO nobody writes to is refused rather than waited on), a directory,
 * and a file over the caller's size cap (checked against its size and
 * again while reading, should it grow).
 */
#include "scenario.h"
#include "tbutil.h"
#include "ternbench.h"
#include "ternbench.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What st is, for messages: "a directory", "a FIFO" ... */
static const char *file_kind(const struct stat *st) {
    if (S_ISDIR(st->st_mode)) return "a directory";
    if (S_ISCHR(st->st_mode)) return "a character device";
    if (S_ISBLK(st->st_mode)) return "a block device";
    if (S_ISFIFO(st->st_mode)) return "a FIFO";
    if (S_ISSOCK(st->st_mode)) return "a socket";
    return "not a regular file";
}

/* "4 MiB" / "64 KiB" / "100 bytes" for a cap. */
static void cap_text(size_t cap, char *buf, size_t n) {
    if (cap >= (1u << 20) && cap % (1u << 20) == 0) snprintf(buf, n, "%zu MiB", cap >> 20);
    else if (cap >= 1024 && cap % 1024 == 0) snprintf(buf, n, "%zu KiB", cap >> 10);
    else snprintf(buf, n, "%zu bytes", cap);
}

int tb_input_read(const char *path, const char *what, size_t max_bytes, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    char captxt[32];
    cap_text(max_bytes, captxt, sizeof captxt);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return tb_err(TB_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tb_err(TB_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return tb_err(TB_ERR_IO, "%s: cannot read %s: %s, not a regular file", path, what, file_kind(&st));
    }
    if (st.st_size > (off_t)max_bytes) {
        close(fd);
        return tb_err(TB_ERR_IO, "%s: %s of %lld bytes, over the limit of %s", path, what,
                      (long long)st.st_size, captxt);
    }
    /* a regular file's size may be 0 though it has content (/proc), or it
     * may grow: read until EOF, never past the cap */
    size_t cap = (size_t)st.st_size + 1 < 4096 ? 4096 : (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) { close(fd); return tb_err(TB_ERR_NOMEM, "%s: out of memory reading %s", path, what); }
    for (;;) {
        if (n + 1 >= cap) {
            size_t ncap = cap * 2 > max_bytes + 2 ? max_bytes + 2 : cap * 2;
            char *nb = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!nb) {
                free(buf);
                close(fd);
                if (ncap <= cap) return tb_err(TB_ERR_IO, "%s: %s over the limit of %s", path, what, captxt);
                return tb_err(TB_ERR_NOMEM, "%s: out of memory reading %s", path, what);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return tb_err(TB_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
        if (n > max_bytes) {
            free(buf);
            close(fd);
            return tb_err(TB_ERR_IO, "%s: %s over the limit of %s", path, what, captxt);
        }
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return TB_OK;
}
