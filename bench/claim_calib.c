/*
 * claim_calib.c — the calibration table: published decode speeds, one CSV
 * row each (columns by header name: device, backend, runtime, model, type,
 * ctx, head, decode_tok_s, source, read, and an optional note), resolved
 * against the device profiles and the model presets into an efficiency:
 * the share of the device's peak bandwidth the published speed implies.
 */
#include "claim.h"
#include "ternbench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef TB_CALIB_SRC
#define TB_CALIB_SRC ""
#endif
#ifndef TB_CALIB_INSTALL
#define TB_CALIB_INSTALL ""
#endif

const char *cl_calib_default(const char *flag) {
    if (flag && *flag) return flag;
    const char *e = getenv("TB_CALIBRATION");
    if (e && *e) return e;
    struct stat st;
    if (*TB_CALIB_SRC && stat(TB_CALIB_SRC, &st) == 0) return TB_CALIB_SRC;
    return TB_CALIB_INSTALL;
}

enum { C_DEVICE, C_BACKEND, C_RUNTIME, C_MODEL, C_TYPE, C_CTX, C_HEAD, C_TOK, C_SOURCE, C_READ, C_NOTE, C_N };
static const char *const col_names[C_N] = {"device", "backend", "runtime", "model", "type", "ctx",
                                           "head", "decode_tok_s", "source", "read", "note"};

/* Split one CSV line into at most `max` fields (double quotes may enclose a
 * field, "" inside is a quote); the line is modified. -1 on an unclosed quote. */
static int split_csv(char *s, char **f, int max) {
    int n = 0;
    for (;;) {
        if (n == max) return max + 1;
        char *w = s;
        f[n++] = s;
        if (*s == '"') {
            s++;
            for (;;) {
                if (!*s) return -1;
                if (*s == '"' && s[1] == '"') { *w++ = '"'; s += 2; continue; }
                if (*s == '"') { s++; break; }
                *w++ = *s++;
            }
            if (*s && *s != ',') return -1;
        } else {
            while (*s && *s != ',') *w++ = *s++;
        }
        char end = *s;
        *w = '\0';
        if (end != ',') return n;
        s++;
    }
}

static void trim(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) s[--n] = '\0';
}

#define CP(dst, src) snprintf(dst, sizeof dst, "%s", src)

int cl_calib_read(const char *path, cl_calib_t *c) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ternbench: calibration %s: %s\n", path && *path ? path : "(none)", strerror(errno));
        return 2;
    }
    char line[4096];
    int map[C_N], lineno = 0, rc = 0;
    bool header = false;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        trim(line);
        if (!line[0] || line[0] == '#') continue;
        char *fl[32];
        int nf = split_csv(line, fl, 32);
        if (nf < 0 || nf > 32) {
            fprintf(stderr, "ternbench: %s:%d: %s\n", path, lineno, nf < 0 ? "unclosed quote" : "too many columns");
            rc = 2;
            break;
        }
        if (!header) {
            for (int k = 0; k < C_N; k++) {
                map[k] = -1;
                for (int j = 0; j < nf; j++)
                    if (!strcmp(fl[j], col_names[k])) map[k] = j;
                if (map[k] < 0 && k != C_NOTE) {
                    fprintf(stderr, "ternbench: %s:%d: header lacks column '%s'\n", path, lineno, col_names[k]);
                    rc = 2;
                }
            }
            if (rc) break;
            header = true;
            continue;
        }
        const char *v[C_N];
        for (int k = 0; k < C_N; k++) v[k] = map[k] >= 0 && map[k] < nf ? fl[map[k]] : "";
        char *end;
        errno = 0;
        long ctx = strtol(v[C_CTX], &end, 10);
        const char *bad = NULL;
        if (!*v[C_CTX] || *end || errno || ctx < 0 || ctx > 10000000) bad = "ctx must be a non-negative integer";
        double tok = 0;
        if (!bad) {
            errno = 0;
            tok = strtod(v[C_TOK], &end);
            if (!*v[C_TOK] || *end || errno || !(tok > 0)) bad = "decode_tok_s must be a positive number";
        }
        if (!bad && strcmp(v[C_BACKEND], "cpu") && strcmp(v[C_BACKEND], "gpu") && strcmp(v[C_BACKEND], "npu"))
            bad = "backend must be cpu, gpu or npu";
        if (!bad && (!*v[C_DEVICE] || !*v[C_RUNTIME] || !*v[C_MODEL] || !*v[C_TYPE]))
            bad = "device, runtime, model and type must not be empty";
        if (!bad && (strncmp(v[C_SOURCE], "http", 4) || !*v[C_READ])) bad = "every row needs a source URL and a read date";
        if (bad) {
            fprintf(stderr, "ternbench: %s:%d: %s\n", path, lineno, bad);
            rc = 2;
            break;
        }
        if (c->n == c->cap) {
            int cap = c->cap ? 2 * c->cap : 64;
            cl_row_t *r = realloc(c->rows, (size_t)cap * sizeof *r);
            if (!r) { rc = 1; break; }
            c->rows = r;
            c->cap = cap;
        }
        cl_row_t *r = &c->rows[c->n++];
        memset(r, 0, sizeof *r);
        CP(r->device, v[C_DEVICE]);
        CP(r->backend, v[C_BACKEND]);
        CP(r->runtime, v[C_RUNTIME]);
        CP(r->model, v[C_MODEL]);
        CP(r->type, v[C_TYPE]);
        CP(r->head, *v[C_HEAD] ? v[C_HEAD] : "exact");
        CP(r->source, v[C_SOURCE]);
        CP(r->read, v[C_READ]);
        CP(r->note, v[C_NOTE]);
        CP(r->file, path);
        r->ctx = (int)ctx;
        r->tok_s = tok;
        r->line = lineno;
    }
    if (!rc && !header) {
        fprintf(stderr, "ternbench: %s: no header line\n", path);
        rc = 2;
    }
    fclose(f);
    return rc;
}

void cl_calib_free(cl_calib_t *c) {
    free(c->rows);
    c->rows = NULL;
    c->n = c->cap = 0;
}

unsigned long long cl_calib_hash(const cl_calib_t *c) {
    unsigned long long h = 1469598103934665603ull;
    for (int i = 0; i < c->n; i++) {
        char buf[1024];
        const cl_row_t *r = &c->rows[i];
        int n = snprintf(buf, sizeof buf, "%s|%s|%s|%s|%s|%d|%s|%.6g|%s\n", r->device, r->backend, r->runtime,
                         r->model, r->type, r->ctx, r->head, r->tok_s, r->source);
        for (int k = 0; k < n && k < (int)sizeof buf; k++) h = (h ^ (unsigned char)buf[k]) * 1099511628211ull;
    }
    return h;
}

double cl_bits_per_weight(const char *preset, const char *type) {
    tb_geometry_t *g;
    if (tb_geometry_preset(preset, type, &g) != TB_OK) return 0;
    double bytes = 0, params = 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const tb_geom_tensor_t *t = &g->tensors[i];
        if (strstr(t->name, "attn_q") == NULL && strstr(t->name, "ffn_") == NULL) continue;
        if (strstr(t->name, "norm") || strstr(t->name, "bias") || strstr(t->name, "gate_inp")) continue;
        bytes += (double)t->nbytes;
        params += (double)t->n_params;
    }
    tb_geometry_free(g);
    return params > 0 ? 8.0 * bytes / params : 0;
}

int cl_calib_resolve(cl_calib_t *c, const char *devices_dir) {
    cl_device_t *dv;
    int nd, rc = cl_devices_load_all(devices_dir, &dv, &nd);
    if (rc) return rc;
    for (int i = 0; i < c->n && !rc; i++) {
        cl_row_t *r = &c->rows[i];
        if (r->resolved) continue;
        const cl_device_t *d = NULL;
        for (int k = 0; k < nd; k++)
            if (!strcmp(dv[k].id, r->device)) d = &dv[k];
        tb_geometry_t *g = NULL;
        tb_head_opts_t h;
        tb_bytes_per_token_t b;
        if (!d) {
            fprintf(stderr, "ternbench: %s:%d: unknown device '%s'\n", r->file, r->line, r->device);
            rc = 2;
        } else if (tb_geometry_preset(r->model, r->type, &g) != TB_OK) {
            fprintf(stderr, "ternbench: %s:%d: %s\n", r->file, r->line, tb_last_error());
            rc = 2;
        } else if (cl_parse_head(r->head, &h) != 0) {
            fprintf(stderr, "ternbench: %s:%d: head must be exact or approx:CENTROIDS[:PROBES], got '%s'\n",
                    r->file, r->line, r->head);
            rc = 2;
        } else if (tb_geometry_bytes_per_token(g, r->ctx, TB_TYPE_F16, &h, &b) != TB_OK) {
            fprintf(stderr, "ternbench: %s:%d: %s\n", r->file, r->line, tb_last_error());
            rc = 2;
        } else {
            r->bw_gbps = d->bw_gbps;
            r->bytes_per_token = (double)b.total;
            r->bpw = cl_bits_per_weight(r->model, r->type);
            r->eff = r->tok_s * r->bytes_per_token / (r->bw_gbps * 1e9);
            CP(r->cls, d->cls);
        }
        tb_geometry_free(g);
    }
    free(dv);
    return rc;
}
