/*
 * workload_claim.c — the scenario kind [claim] (see workload_claim.h).
 *
 * Conditions, in this order: every device, every head, every ctx, every
 * claimed speed (one condition when none is claimed). A condition on a
 * profile device is the claim check of `ternbench claim` (claim_eval.c);
 * on `this` with measure = true, the condition whose head is the run's
 * [engine] head also carries the decode speed the runner measured at that
 * ctx. The geometry is the preset's when one is named, else the run's
 * model file's (tb_geometry_from_model), so what is measured and what is
 * projected are the same model.
 */
#include "workload_claim.h"
#include "claim.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Split a comma-separated list into trimmed items (at most max, each
 * < 64 characters). Returns the count, or -1 - index of the bad item. */
static int split(const char *s, char items[][64], int max) {
    const char *p = s;
    while (isspace((unsigned char)*p)) p++;
    if (!*p) return 0;   /* an empty list */
    int n = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *b = p, *e = p + len;
        while (b < e && isspace((unsigned char)*b)) b++;
        while (e > b && isspace((unsigned char)e[-1])) e--;
        if (n == max || b == e || (size_t)(e - b) >= 64) return -1 - n;
        memcpy(items[n], b, (size_t)(e - b));
        items[n][e - b] = '\0';
        n++;
        if (!p[len]) return n;
        p += len + 1;
    }
}

__attribute__((format(printf, 4, 5)))
static int bad(const tb_plan_t *p, const tb_section_t *s, tb_key_t k, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = s->v[k].line ? s->v[k].line : s->line;
    return tb_err(TB_ERR_FORMAT, "%s:%d: [%s] %s: %s", p->path, line > 0 ? line : 1, s->name,
                  tb_scenario_keys[k].name, msg);
}

/* A path value relative to dir (allocated). */
static char *rel_path(const char *dir, const char *v) {
    char *out;
    if (v[0] == '/' || !dir || !dir[0]) return strdup(v);
    return asprintf(&out, "%s/%s", dir, v) < 0 ? NULL : out;
}

int tb_claim_section_check(const tb_plan_t *p, const tb_section_t *s) {
    char it[TB_CLAIM_MAX_DEVICES][64];
    int n = split(s->v[K_CLAIM_DEVICE].s, it, TB_CLAIM_MAX_DEVICES);
    if (n == 0) return bad(p, s, K_CLAIM_DEVICE, "needs at least one device id (`ternbench devices` lists them)");
    if (n < 0) return bad(p, s, K_CLAIM_DEVICE, "item %d: expected a device id (a comma-separated list of at most %d)",
                          -n, TB_CLAIM_MAX_DEVICES);
    bool has_this = false;
    cl_device_t *dv = NULL;
    int nd = 0;
    const char *dir = cl_devices_dir(NULL);
    for (int i = 0; i < n; i++) {
        if (!strcmp(it[i], "this")) { has_this = true; continue; }
        if (!dv && cl_devices_load_all(dir, &dv, &nd))
            return bad(p, s, K_CLAIM_DEVICE, "the device profiles in %s do not load (the reason is above)", dir);
        bool found = false;
        for (int k = 0; k < nd && !found; k++) found = !strcmp(dv[k].id, it[i]);
        if (!found) {
            int rc = bad(p, s, K_CLAIM_DEVICE, "unknown device \"%s\" (`ternbench devices` lists the %d in %s, "
                         "and `this`)", it[i], nd, dir);
            free(dv);
            return rc;
        }
    }
    free(dv);
    const char *preset = s->v[K_CLAIM_PRESET].s, *type = s->v[K_CLAIM_TYPE].s;
    if (!*preset && *type) return bad(p, s, K_CLAIM_TYPE, "applies only with preset = NAME");
    if (*preset) {
        tb_geometry_t *g;
        if (tb_geometry_preset(preset, *type ? type : NULL, &g) != TB_OK)
            return bad(p, s, *type && s->v[K_CLAIM_TYPE].line ? K_CLAIM_TYPE : K_CLAIM_PRESET, "%s", tb_last_error());
        tb_geometry_free(g);
    }
    char hd[TB_CLAIM_MAX_HEADS][64];
    int nh = split(s->v[K_CLAIM_HEAD].s, hd, TB_CLAIM_MAX_HEADS);
    if (nh <= 0) return bad(p, s, K_CLAIM_HEAD, "expected exact or approx[:CENTROIDS[:PROBES]], comma-separated (at most %d)",
                            TB_CLAIM_MAX_HEADS);
    for (int i = 0; i < nh; i++) {
        tb_head_opts_t h;
        if (cl_parse_head(hd[i], &h))
            return bad(p, s, K_CLAIM_HEAD, "item %d: expected exact or approx[:CENTROIDS[:PROBES]], got \"%s\"", i + 1, hd[i]);
    }
    char cl[TB_CLAIM_MAX_CLAIMED][64];
    int nc = split(s->v[K_CLAIM_CLAIMED].s, cl, TB_CLAIM_MAX_CLAIMED);
    if (nc < 0) return bad(p, s, K_CLAIM_CLAIMED, "item %d: expected a speed in tok/s (a comma-separated list of at most %d)",
                           -nc, TB_CLAIM_MAX_CLAIMED);
    for (int i = 0; i < nc; i++) {
        char *end;
        errno = 0;
        double x = strtod(cl[i], &end);
        if (errno || *end || !(x > 0) || !isfinite(x))
            return bad(p, s, K_CLAIM_CLAIMED, "item %d: expected a positive speed in tok/s, got \"%s\"", i + 1, cl[i]);
    }
    if (s->v[K_CLAIM_CTX].n_list > TB_CLAIM_MAX_CTX)
        return bad(p, s, K_CLAIM_CTX, "at most %d contexts", TB_CLAIM_MAX_CTX);
    if (s->v[K_CLAIM_MEASURE].i) {
        if (!has_this) return bad(p, s, K_CLAIM_MEASURE, "measures this machine: device must include `this`");
        if (*preset) return bad(p, s, K_CLAIM_MEASURE, "measures the scenario's model: leave preset empty (line %d)",
                                s->v[K_CLAIM_PRESET].line);
    }
    const char *cf = s->v[K_CLAIM_CALIBRATION].s;
    if (*cf) {
        char *path = rel_path(p->dir, cf);
        int ok = path && access(path, R_OK) == 0;
        int rc = ok ? TB_OK : bad(p, s, K_CLAIM_CALIBRATION, "cannot read \"%s\": %s", path ? path : cf, strerror(errno));
        free(path);
        return rc;
    }
    return TB_OK;
}

int tb_claim_record(tb_store_t *st, int64_t run_id, const tb_section_t *s, const tb_claim_run_t *r,
                    char *note, size_t cap) {
    char dev[TB_CLAIM_MAX_DEVICES][64], hd[TB_CLAIM_MAX_HEADS][64], cl[TB_CLAIM_MAX_CLAIMED][64];
    int nd = split(s->v[K_CLAIM_DEVICE].s, dev, TB_CLAIM_MAX_DEVICES);
    int nh = split(s->v[K_CLAIM_HEAD].s, hd, TB_CLAIM_MAX_HEADS);
    int nc = split(s->v[K_CLAIM_CLAIMED].s, cl, TB_CLAIM_MAX_CLAIMED);
    const tb_value_t *ctx = &s->v[K_CLAIM_CTX];
    if (nd <= 0 || nh <= 0 || nc < 0) return tb_err(TB_ERR_INTERNAL, "[%s]: unchecked section", s->name);
    double claimed[TB_CLAIM_MAX_CLAIMED] = {0};
    for (int i = 0; i < nc; i++) claimed[i] = strtod(cl[i], NULL);
    if (nc == 0) nc = 1;   /* projection only: claimed 0 */
    bool measure = s->v[K_CLAIM_MEASURE].i != 0;
    tb_head_opts_t run_head = {0, 0};
    if (measure && r->head && *r->head && cl_parse_head(r->head, &run_head)) measure = false;

    const char *preset = s->v[K_CLAIM_PRESET].s, *type = s->v[K_CLAIM_TYPE].s;
    const char *cf = s->v[K_CLAIM_CALIBRATION].s;
    char *cpath = *cf ? rel_path(r->plan_dir, cf) : strdup(cl_calib_default(NULL));
    tb_geometry_t *g = NULL;
    cl_calib_t c = {0};
    cl_cond_t *k = NULL;
    int rc = cpath ? TB_OK : tb_err(TB_ERR_NOMEM, "out of memory");
    if (!rc && (cl_calib_read(cpath, &c) || cl_calib_resolve(&c, cl_devices_dir(NULL))))
        rc = tb_err(TB_ERR_FORMAT, "calibration %s does not load (the reason is above)", cpath);
    if (!rc) rc = *preset ? tb_geometry_preset(preset, *type ? type : NULL, &g) : tb_geometry_from_model(r->model, &g);
    int per_dev = nh * ctx->n_list * nc, n = 0, counts[3] = {0};
    if (!rc && !(k = calloc((size_t)(nd * per_dev), sizeof *k))) rc = tb_err(TB_ERR_NOMEM, "out of memory");
    for (int di = 0; di < nd && !rc; di++) {
        cl_device_t d;
        if (cl_device_find(cl_devices_dir(NULL), dev[di], &d)) {
            rc = tb_err(TB_ERR_FORMAT, "device %s: no usable profile (the reason is above)", dev[di]);
            break;
        }
        const char *backend = strcmp(s->v[K_CLAIM_BACKEND].s, "any") ? s->v[K_CLAIM_BACKEND].s : NULL;
        const char *runtime = *s->v[K_CLAIM_RUNTIME].s ? s->v[K_CLAIM_RUNTIME].s : NULL;
        if (d.bw_measured) {   /* `this` runs ternbench's own engine on the CPU */
            if (!backend) backend = "cpu";
            if (!runtime) runtime = "ternbench";
        }
        cl_query_t q = {runtime, backend, d.cls, d.id, g->name, g->weights, d.bw_gbps, cl_geom_bpw(g), -1};
        cl_cond_t *k0 = &k[n];
        for (int hi = 0; hi < nh && !rc; hi++)
            for (int ci = 0; ci < ctx->n_list && !rc; ci++)
                for (int ki = 0; ki < nc && !rc; ki++) {
                    cl_cond_t *x = &k[n];
                    x->ctx = (int)ctx->list[ci];
                    cl_parse_head(hd[hi], &x->head);
                    x->claimed = claimed[ki];
                    x->measured_test_id = -1;
                    if (cl_eval_cond(g, &d, &c, &q, r->kv_type, x)) {
                        rc = tb_err_prefix(TB_ERR_FORMAT, "[%s] %s at ctx %d, head %s", s->name, d.id, x->ctx, hd[hi]);
                        break;
                    }
                    if (measure && d.bw_measured && x->head.centroids == run_head.centroids &&
                        x->head.probes == run_head.probes && ci < r->n_measured && isfinite(r->tok_s[ci])) {
                        x->measured = r->tok_s[ci];
                        x->measured_test_id = r->test_id[ci];
                    }
                    if (x->verdict) counts[!strcmp(x->verdict, "impossible") ? 2 : !strcmp(x->verdict, "plausible") ? 0 : 1]++;
                    n++;
                }
        if (rc) break;
        cl_check_t ck = {.section = s->name, .g = g, .model_path = *preset ? NULL : r->model_path, .d = &d,
                         .backend = backend, .runtime = runtime, .kv = r->kv_type,
                         .ctx_given = ctx->n_list == 1, .head_given = nh == 1, .prompt = -1,
                         .claimed_ttft = NAN, .ttft_min = NAN, .calib_path = cpath, .c = &c};
        rc = cl_record(st, run_id, &ck, k0, (int)(&k[n] - k0), (int)(k0 - k));
    }
    if (!rc)
        snprintf(note, cap, "[%s] %d claim conditions recorded: %d plausible, %d beyond published efficiency, "
                 "%d impossible", s->name, n, counts[0], counts[1], counts[2]);
    free(k);
    free(cpath);
    cl_calib_free(&c);
    tb_geometry_free(g);
    return rc;
}
