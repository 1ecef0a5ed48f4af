/*
 * error.c — the thread-local sticky error message.
 *
 * Messages quote names and strings read from files (keys, tensor names,
 * token texts), so a hostile file could put terminal control sequences in
 * them. Every message is made printable once formatted: C0 control bytes,
 * DEL, C1 controls (U+0080..U+009F) and bytes that are not part of valid
 * UTF-8 become \xNN; valid UTF-8 text, backslashes included, is kept.
 * Escaping is idempotent, so a message built from another stays as it was.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[1024];

/* Length of the valid UTF-8 sequence at p[0..n) (1..4), or 0 if invalid. */
static size_t utf8_valid(const unsigned char *p, size_t n) {
    unsigned char c = p[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return 0;
    if (need >= n) return 0;
    for (size_t k = 1; k <= need; k++) {
        unsigned char x = p[k];
        if (k == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF)) return 0;
    }
    return need + 1;
}

/* Rewrite last_error with unprintable bytes as \xNN (truncating to fit). */
static void escape_message(void) {
    const unsigned char *s = (const unsigned char *)last_error;
    size_t n = strlen(last_error), i = 0, w = 0;
    char out[sizeof last_error];
    for (; i < n; i++)
        if (s[i] < 0x20 || s[i] >= 0x7f) break;
    if (i == n) return;                                   /* plain ASCII: as it is */
    memcpy(out, s, i);
    w = i;
    while (i < n) {
        size_t k = s[i] >= 0x80 ? utf8_valid(s + i, n - i) : (s[i] >= 0x20 && s[i] != 0x7f);
        if (k == 2 && s[i] == 0xC2 && s[i + 1] < 0xA0) k = 0;     /* C1 control */
        if (k > 0) {
            if (w + k >= sizeof out) break;
            memcpy(out + w, s + i, k);
            w += k;
            i += k;
        } else {
            if (w + 4 >= sizeof out) break;
            snprintf(out + w, 5, "\\x%02X", s[i]);
            w += 4;
            i++;
        }
    }
    out[w] = '\0';
    memcpy(last_error, out, w + 1);
}

const char *tb_last_error(void) { return last_error; }
void tb_clear_error(void) { last_error[0] = '\0'; }

int tb_err(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    escape_message();
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
    escape_message();
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
