/*
 * report_util.c — text buffers, statistics, a tiny JSON number reader and
 * number formatting for the report.
 */
#include "report_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ===================================================================== */
/* Growable buffer                                                        */
/* ===================================================================== */

/* Append n bytes; on allocation failure the buffer keeps what it had and
 * sets b->oom, which rp_buf_save reports. */
void rp_buf_put(rp_buf_t *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void rp_buf_puts(rp_buf_t *b, const char *s) { rp_buf_put(b, s, strlen(s)); }

void rp_buf_printf(rp_buf_t *b, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = 1; return; }
    if ((size_t)n < sizeof small) { rp_buf_put(b, small, (size_t)n); return; }
    char *big = malloc((size_t)n + 1);
    if (!big) { b->oom = 1; return; }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rp_buf_put(b, big, (size_t)n);
    free(big);
}

void rp_buf_free(rp_buf_t *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* Write the whole buffer to dir/name through dir/name.tmp and a rename, so
 * a failed write (full disk) leaves any earlier dir/name intact and no
 * half file under the final name. */
int rp_buf_save(const rp_buf_t *b, const char *dir, const char *name) {
    if (b->oom) return tb_err(TB_ERR_NOMEM, "report: out of memory building %s", name);
    char path[4096], tmp[4100];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        return tb_err(TB_ERR_ARG, "report: path too long: %s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return tb_err(TB_ERR_IO, "report: cannot create %s: %s", tmp, strerror(errno));
    size_t w = b->len ? fwrite(b->p, 1, b->len, f) : 0;
    int e = w != b->len ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !e) e = errno ? errno : EIO;
    if (!e && rename(tmp, path) != 0) e = errno;
    if (e) {
        unlink(tmp);
        return tb_err(TB_ERR_IO, "report: cannot write %s: %s", path, strerror(e));
    }
    return TB_OK;
}

/* ===================================================================== */
/* Statistics                                                             */
/* ===================================================================== */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void rp_sort_doubles(double *v, int n) {
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_double);
}

double rp_median(const double *v, int n) {
    if (n <= 0) return NAN;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) return NAN;
    memcpy(s, v, (size_t)n * sizeof *s);
    rp_sort_doubles(s, n);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

double rp_stddev(const double *v, int n) {
    if (n <= 0) return NAN;
    if (n == 1) return 0.0;
    double mean = 0;
    for (int i = 0; i < n; i++) mean += v[i];
    mean /= n;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
    return sqrt(ss / (n - 1));
}

/* Linear interpolation between closest ranks (the "R-7" definition). */
double rp_percentile_sorted(const double *s, int n, double q) {
    if (n <= 0) return NAN;
    if (n == 1) return s[0];
    double h = (n - 1) * q / 100.0;
    int lo = (int)floor(h);
    if (lo >= n - 1) return s[n - 1];
    if (lo < 0) return s[0];
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo]);
}

/* ===================================================================== */
/* JSON: read one numeric member of a flat object                         */
/* ===================================================================== */

typedef struct { const char *s, *p; } js_t;

static void js_ws(js_t *j) { while (*j->p && isspace((unsigned char)*j->p)) j->p++; }

/* Skip a string starting at '"'; returns 0 ok, -1 malformed. */
static int js_skip_string(js_t *j) {
    j->p++;
    while (*j->p && *j->p != '"') {
        if (*j->p == '\\' && j->p[1]) j->p++;
        j->p++;
    }
    if (*j->p != '"') return -1;
    j->p++;
    return 0;
}

/* Skip any value (string, number, literal, nested object/array). */
static int js_skip_value(js_t *j) {
    js_ws(j);
    if (*j->p == '"') return js_skip_string(j);
    if (*j->p == '{' || *j->p == '[') {
        int depth = 0;
        do {
            if (*j->p == '"') { if (js_skip_string(j)) return -1; continue; }
            if (*j->p == '{' || *j->p == '[') depth++;
            else if (*j->p == '}' || *j->p == ']') depth--;
            else if (!*j->p) return -1;
            j->p++;
        } while (depth > 0);
        return 0;
    }
    const char *start = j->p;
    while (*j->p && !strchr(",}] \t\r\n", *j->p)) j->p++;
    return j->p > start ? 0 : -1;
}

int rp_json_number(const char *json, const char *key, double *out) {
    if (!json) return tb_err(TB_ERR_NOT_FOUND, "params: no JSON");
    js_t j = {json, json};
    size_t klen = strlen(key);
    js_ws(&j);
    if (*j.p != '{')
        return tb_err(TB_ERR_FORMAT, "params JSON: byte %td: expected '{'", j.p - j.s);
    j.p++;
    for (;;) {
        js_ws(&j);
        if (*j.p == '}') break;
        if (*j.p != '"')
            return tb_err(TB_ERR_FORMAT, "params JSON: byte %td: expected a member name", j.p - j.s);
        const char *name = j.p + 1;
        if (js_skip_string(&j))
            return tb_err(TB_ERR_FORMAT, "params JSON: byte %td: unterminated string", name - 1 - j.s);
        size_t nlen = (size_t)(j.p - 1 - name);
        js_ws(&j);
        if (*j.p != ':')
            return tb_err(TB_ERR_FORMAT, "params JSON: byte %td: expected ':'", j.p - j.s);
        j.p++;
        js_ws(&j);
        if (nlen == klen && !memcmp(name, key, klen)) {
            char *end;
            errno = 0;
            double v = strtod(j.p, &end);
            if (end == j.p || errno)
                return tb_err(TB_ERR_NOT_FOUND, "params JSON: byte %td: \"%s\" is not a number", j.p - j.s, key);
            *out = v;
            return TB_OK;
        }
        if (js_skip_value(&j))
            return tb_err(TB_ERR_FORMAT, "params JSON: byte %td: malformed value", j.p - j.s);
        js_ws(&j);
        if (*j.p == ',') { j.p++; continue; }
        if (*j.p == '}') break;
        return tb_err(TB_ERR_FORMAT, "params JSON: byte %td: expected ',' or '}'", j.p - j.s);
    }
    return tb_err(TB_ERR_NOT_FOUND, "params JSON: no member \"%s\"", key);
}

/* ===================================================================== */
/* Formatting                                                             */
/* ===================================================================== */

const char *rp_fmt(char *buf, size_t n, double v, int prec) {
    if (!isfinite(v)) snprintf(buf, n, "—");
    else snprintf(buf, n, "%.*f", prec, v);
    return buf;
}

const char *rp_fmt_bytes(char *buf, size_t n, double bytes) {
    if (!isfinite(bytes) || bytes < 0) snprintf(buf, n, "—");
    else if (bytes >= 1024.0 * 1024 * 1024) snprintf(buf, n, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
    else if (bytes >= 1024.0 * 1024) snprintf(buf, n, "%.2f MiB", bytes / (1024.0 * 1024));
    else if (bytes >= 1024.0) snprintf(buf, n, "%.2f KiB", bytes / 1024.0);
    else snprintf(buf, n, "%.0f B", bytes);
    return buf;
}

const char *rp_fmt_count(char *buf, size_t n, double c) {
    if (!isfinite(c) || c < 0) snprintf(buf, n, "—");
    else if (c >= 1e9) snprintf(buf, n, "%.2f B", c / 1e9);
    else if (c >= 1e6) snprintf(buf, n, "%.2f M", c / 1e6);
    else if (c >= 1e3) snprintf(buf, n, "%.2f K", c / 1e3);
    else snprintf(buf, n, "%.0f", c);
    return buf;
}
