/* error.c — the thread-local sticky error message. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[1024];

const char *tb_last_error(void) { return last_error; }
void tb_clear_error(void) { last_error[0] = '\0'; }

int tb_err(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

int tb_err_prefix(int status, const char *fmt, ...) {
    char old[sizeof last_error];
    memcpy(old, last_error, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (k >= 0 && (size_t)k < sizeof last_error)
        snprintf(last_error + k, sizeof last_error - (size_t)k, ": %s", old);
    return status;
}

const char *tb_status_name(int status) {
    switch (status) {
    case TB_OK: return "ok";
    case TB_ERR_IO: return "i/o error";
    case TB_ERR_FORMAT: return "format error";
    case TB_ERR_NOMEM: return "out of memory";
    case TB_ERR_ARG: return "invalid argument";
    case TB_ERR_UNSUPPORTED: return "unsupported";
    case TB_ERR_RANGE: return "out of range";
    case TB_ERR_NOT_FOUND: return "not found";
    case TB_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

void *tb_alloc_aligned(size_t n) {
    void *p = NULL;
    if (n == 0) n = 64;
    if (posix_memalign(&p, 64, (n + 63) & ~(size_t)63) != 0) return NULL;
    memset(p, 0, n);
    return p;
}

void tb_free_aligned(void *p) { free(p); }
