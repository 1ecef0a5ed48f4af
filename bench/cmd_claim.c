/*
 * cmd_claim.c — `ternbench claim`: from a model (preset or GGUF) and a
 * device to bytes per token, the roofline, a projected tok/s interval from
 * the calibration table and, with --claimed, a verdict; conditions left
 * unknown (context, head) are evaluated across in one table.
 * `ternbench claim calibrate --loo` prints the leave-one-out accuracy.
 */
#include "claim.h"
#include "commands.h"
#include "ternbench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COND 16
#define DEFAULT_CENTROIDS 8016   /* FlashHead's published configuration */
#define DEFAULT_PROBES 256

int cl_parse_head(const char *s, tb_head_opts_t *h) {
    h->centroids = h->probes = 0;
    if (!strcmp(s, "exact")) return 0;
    if (strncmp(s, "approx", 6)) return -1;
    if (s[6] == '\0') {
        h->centroids = DEFAULT_CENTROIDS;
        h->probes = DEFAULT_PROBES;
        return 0;
    }
    if (s[6] != ':') return -1;
    char *end;
    errno = 0;
    long c = strtol(s + 7, &end, 10), p = DEFAULT_PROBES;
    if (errno || end == s + 7 || c < 1 || c > 10000000) return -1;
    if (*end == ':') {
        char *e2;
        p = strtol(end + 1, &e2, 10);
        if (errno || e2 == end + 1 || *e2 || p < 1) return -1;
    } else if (*end) {
        return -1;
    }
    h->centroids = (int32_t)c;
    h->probes = (int32_t)(p < c ? p : c);
    return 0;
}

static void head_label(const tb_head_opts_t *h, char *b, size_t n) {
    if (!h->centroids) snprintf(b, n, "exact");
    else snprintf(b, n, "approx:%d:%d", h->centroids, h->probes);
}

typedef struct cond {
    int ctx;
    tb_head_opts_t head;
    tb_bytes_per_token_t b;
    double roof, lo, hi, need, implied, measured;
    cl_fit_t fit;
    bool fitted;
    const char *verdict;
    char why[256];
} cond_t;

typedef struct opts {
    const char *model, *type, *device, *backend, *runtime, *kv, *calib, *devdir;
    const char *ctx_s, *head_s;
    const char *add[8];
    int n_add;
    double claimed, claimed_ttft;
    int prompt, measure_tokens, threads;
    bool json, measure;
} opts_t;

static int usage(const char *msg) {
    if (msg) fprintf(stderr, "ternbench claim: %s\n", msg);
    fprintf(stderr,
            "usage: ternbench claim --model PRESET|FILE.gguf [--type T] --device ID|this [--backend cpu|gpu|npu]\n"
            "         [--runtime R] [--ctx C] [--head exact|approx[:CENTROIDS[:PROBES]]] [--kv-type T]\n"
            "         [--claimed TOK_S] [--prompt N --claimed-ttft MS] [--calibration FILE] [--add FILE]\n"
            "         [--devices DIR] [--json] [--measure [--measure-tokens N] [-t N]]\n"
            "       ternbench claim calibrate --loo [--calibration FILE] [--add FILE] [--devices DIR] [-v]\n"
            "  --ctx or --head left out: evaluated at ctx 512, 2048, 8192 and with the exact and the\n"
            "  approximate (FlashHead, approx:%d:%d) head, in one table\n"
            "  --measure (--device this, a GGUF model): decode N tokens (default 32) at each exact-head\n"
            "  condition with the engine and print the measured speed beside the projection\n",
            DEFAULT_CENTROIDS, DEFAULT_PROBES);
    return 2;
}

static int positive(const char *opt, const char *v, double *out) {
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || errno || *end || !(x > 0)) {
        fprintf(stderr, "ternbench claim: %s expects a positive number, got '%s'\n", opt, v ? v : "");
        return 2;
    }
    *out = x;
    return 0;
}

static int load_calib(const opts_t *o, cl_calib_t *c) {
    int rc = cl_calib_read(cl_calib_default(o->calib), c);
    for (int i = 0; !rc && i < o->n_add; i++) rc = cl_calib_read(o->add[i], c);
    if (!rc) rc = cl_calib_resolve(c, cl_devices_dir(o->devdir));
    return rc;
}

static int calibrate(int argc, char **argv) {
    opts_t o = {0};
    bool loo = false, verbose = false;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--loo")) loo = true;
        else if (!strcmp(argv[i], "-v")) verbose = true;
        else if (!strcmp(argv[i], "--calibration") && v) o.calib = argv[++i];
        else if (!strcmp(argv[i], "--devices") && v) o.devdir = argv[++i];
        else if (!strcmp(argv[i], "--add") && v && o.n_add < 8) o.add[o.n_add++] = argv[++i];
        else return usage("calibrate: unexpected argument");
    }
    if (!loo) return usage("calibrate needs --loo");
    cl_calib_t c = {0};
    int rc = load_calib(&o, &c);
    if (rc) { cl_calib_free(&c); return rc; }
    cl_loo_t l;
    if (cl_loo(&c, &l, verbose)) { cl_calib_free(&c); return 1; }
    printf("leave-one-out over %d rows (%s", l.n, cl_calib_default(o.calib));
    for (int i = 0; i < o.n_add; i++) printf(" + %s", o.add[i]);
    printf("): coverage %.1f %% (%d of %d inside), median half-width %.1f %%\n", 100 * l.coverage, l.covered,
           l.n, 100 * l.median_halfwidth);
    printf("calibration hash %016llx\n", cl_calib_hash(&c));
    cl_calib_free(&c);
    return 0;
}

static int load_geometry(const char *model, const char *type, tb_geometry_t **g) {
    size_t n = strlen(model);
    if (n > 5 && !strcmp(model + n - 5, ".gguf")) {
        if (type) fprintf(stderr, "ternbench claim: --type is ignored for a GGUF file (its own types count)\n");
        tb_model_t *m;
        tb_model_params_t mp = {.weights = TB_WEIGHTS_MMAP, .n_threads = 1};
        if (tb_model_load_ex(model, &mp, &m) != TB_OK) {
            fprintf(stderr, "ternbench claim: %s\n", tb_last_error());
            return 2;
        }
        int rc = tb_geometry_from_model(m, g);
        tb_model_free(m);
        if (rc != TB_OK) { fprintf(stderr, "ternbench claim: %s\n", tb_last_error()); return 1; }
        return 0;
    }
    if (tb_geometry_preset(model, type, g) != TB_OK) {
        fprintf(stderr, "ternbench claim: %s\n", tb_last_error());
        return 2;
    }
    return 0;
}

static double geom_bpw(const tb_geometry_t *g) {
    double bytes = 0, params = 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const tb_geom_tensor_t *t = &g->tensors[i];
        if (!strstr(t->name, "attn_q") && !strstr(t->name, "ffn_")) continue;
        if (strstr(t->name, "norm") || strstr(t->name, "bias") || strstr(t->name, "gate_inp")) continue;
        bytes += (double)t->nbytes;
        params += (double)t->n_params;
    }
    return params > 0 ? 8 * bytes / params : 0;
}

/* Verdict of one condition: impossible above the roofline, beyond published
 * efficiency above the best comparable row's fraction, else plausible. */
static void judge(cond_t *k, double claimed, double bw) {
    k->need = claimed / k->roof;
    k->implied = claimed * (double)k->b.total / 1e9;
    if (claimed > k->roof) {
        k->verdict = "impossible";
        snprintf(k->why, sizeof k->why, "%.2fx the roofline (needs %.0f GB/s of a %.0f GB/s peak)", k->need,
                 k->implied, bw);
    } else if (k->fitted && k->need > k->fit.best) {
        k->verdict = "beyond published efficiency";
        snprintf(k->why, sizeof k->why, "needs %.0f %% of peak bandwidth; best comparable published row %.0f %%",
                 100 * k->need, 100 * k->fit.best);
    } else {
        k->verdict = "plausible";
        snprintf(k->why, sizeof k->why, "needs %.0f %% of peak bandwidth (%s the projected interval)",
                 100 * k->need, !k->fitted ? "no calibration for" : k->need * k->roof < k->lo ? "below" : k->need * k->roof > k->hi ? "above" : "inside");
    }
}

static const char *verdict_rank[] = {"plausible", "beyond published efficiency", "impossible"};
static int rank_of(const char *v) {
    for (int i = 0; i < 3; i++)
        if (v && !strcmp(v, verdict_rank[i])) return i;
    return -1;
}

int cmd_claim(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "calibrate")) return calibrate(argc - 1, argv + 1);
    opts_t o = {.kv = "f16", .prompt = -1, .measure_tokens = 32, .threads = 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) { o.json = true; continue; }
        if (!strcmp(a, "--measure")) { o.measure = true; continue; }
        if (!v) return usage("option needs a value");
        if (!strcmp(a, "--model")) o.model = v;
        else if (!strcmp(a, "--type")) o.type = v;
        else if (!strcmp(a, "--device")) o.device = v;
        else if (!strcmp(a, "--backend")) o.backend = v;
        else if (!strcmp(a, "--runtime")) o.runtime = v;
        else if (!strcmp(a, "--ctx")) o.ctx_s = v;
        else if (!strcmp(a, "--head")) o.head_s = v;
        else if (!strcmp(a, "--kv-type")) o.kv = v;
        else if (!strcmp(a, "--calibration")) o.calib = v;
        else if (!strcmp(a, "--devices")) o.devdir = v;
        else if (!strcmp(a, "--add")) { if (o.n_add == 8) return usage("at most 8 --add"); o.add[o.n_add++] = v; }
        else if (!strcmp(a, "--claimed")) { if (positive(a, v, &o.claimed)) return 2; }
        else if (!strcmp(a, "--claimed-ttft")) { if (positive(a, v, &o.claimed_ttft)) return 2; }
        else if (!strcmp(a, "--measure-tokens")) { if (cmd_arg_int("claim", a, v, 1, 100000, &o.measure_tokens)) return 2; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { if (cmd_arg_int("claim", a, v, 1, 64, &o.threads)) return 2; }
        else if (!strcmp(a, "--prompt")) {
            double p;
            if (positive(a, v, &p) || p > 1e7) return 2;
            o.prompt = (int)p;
        } else return usage("unknown option");
        i++;
    }
    if (!o.model || !o.device) return usage("--model and --device are required");
    if (o.backend && strcmp(o.backend, "cpu") && strcmp(o.backend, "gpu") && strcmp(o.backend, "npu"))
        return usage("--backend is cpu, gpu or npu");
    if ((o.claimed_ttft > 0) != (o.prompt > 0)) return usage("--claimed-ttft and --prompt go together");
    int ctxs[3] = {512, 2048, 8192}, n_ctx = 3;
    if (o.ctx_s) {
        char *end;
        errno = 0;
        long c = strtol(o.ctx_s, &end, 10);
        if (errno || *end || !*o.ctx_s || c < 0 || c > 100000000) {
            fprintf(stderr, "ternbench claim: --ctx expects a non-negative integer, got '%s'\n", o.ctx_s);
            return 2;
        }
        ctxs[0] = (int)c;
        n_ctx = 1;
    }
    tb_head_opts_t heads[2] = {{0, 0}, {DEFAULT_CENTROIDS, DEFAULT_PROBES}};
    int n_head = 2;
    if (o.head_s) {
        if (cl_parse_head(o.head_s, &heads[0])) return usage("--head is exact or approx[:CENTROIDS[:PROBES]]");
        n_head = 1;
    }
    tb_type_t kv;
    if (tb_type_from_name(o.kv, &kv) != TB_OK) return usage("--kv-type: unknown type");
    size_t ml = strlen(o.model);
    if (o.measure && (strcmp(o.device, "this") || ml < 6 || strcmp(o.model + ml - 5, ".gguf")))
        return usage("--measure runs on --device this with a GGUF file (`ternbench model synth` writes one)");
    if (o.measure && kv != TB_TYPE_F16 && kv != TB_TYPE_F32) return usage("--measure needs --kv-type f16 or f32");

    tb_geometry_t *g;
    int rc = load_geometry(o.model, o.type, &g);
    if (rc) return rc;
    cl_device_t d;
    if ((rc = cl_device_find(cl_devices_dir(o.devdir), o.device, &d))) { tb_geometry_free(g); return rc; }
    if (d.bw_measured) {   /* `this` runs ternbench's own engine on the CPU */
        if (!o.backend) o.backend = "cpu";
        if (!o.runtime) o.runtime = "ternbench";
    }
    cl_calib_t c = {0};
    if ((rc = load_calib(&o, &c))) { cl_calib_free(&c); tb_geometry_free(g); return rc; }

    cond_t k[MAX_COND];
    int nk = 0;
    double bpw = geom_bpw(g);
    cl_query_t q = {o.runtime, o.backend, d.cls, d.id, g->name, g->weights, d.bw_gbps, bpw, -1};
    for (int hi = 0; hi < n_head; hi++)
        for (int ci = 0; ci < n_ctx; ci++) {
            cond_t *x = &k[nk];
            memset(x, 0, sizeof *x);
            x->ctx = ctxs[ci];
            x->head = heads[hi];
            if (tb_geometry_bytes_per_token(g, x->ctx, kv, &x->head, &x->b) != TB_OK) {
                fprintf(stderr, "ternbench claim: %s\n", tb_last_error());
                cl_calib_free(&c);
                tb_geometry_free(g);
                return 2;
            }
            x->roof = d.bw_gbps * 1e9 / (double)x->b.total;
            q.ctx = x->ctx;
            x->fitted = cl_fit(&c, &q, -1, &x->fit) == 0;
            if (x->fitted) { x->lo = x->roof * x->fit.lo; x->hi = x->roof * x->fit.hi; }
            if (o.claimed > 0) judge(x, o.claimed, d.bw_gbps);
            if (o.measure && !x->head.centroids &&
                (rc = cl_measure(o.model, x->ctx, o.measure_tokens, o.threads, (int)kv, &x->measured))) {
                cl_calib_free(&c);
                tb_geometry_free(g);
                return rc;
            }
            nk++;
        }
    /* time to first token: compute bound (sourced FP16 rate) and one pass over the weights */
    double ttft_min = 0, ttft_flops = 0, ttft_compute = 0, ttft_bw = 0;
    const char *ttft_verdict = NULL;
    if (o.prompt > 0) {
        tb_geometry_prefill_flops(g, o.prompt, &ttft_flops);
        if (d.fp16_tflops > 0) ttft_compute = ttft_flops / (d.fp16_tflops * 1e12) * 1e3;
        ttft_bw = (double)k[0].b.weights / (d.bw_gbps * 1e9) * 1e3;
        ttft_min = ttft_compute > ttft_bw ? ttft_compute : ttft_bw;
        ttft_verdict = o.claimed_ttft < ttft_min ? "impossible" : "plausible";
    }
    char assume[8][200];
    int na = 0;
    snprintf(assume[na++], 200, "model %s, weights %s (%.2f bits per projection weight)", g->name, g->weights, bpw);
    snprintf(assume[na++], 200, "KV cache %s; context %s", tb_type_name(kv), o.ctx_s ? "as given" : "unknown: 512 / 2048 / 8192");
    snprintf(assume[na++], 200, "head %s", o.head_s ? (heads[0].centroids ? "approximate, as given (APPROXIMATE)" : "exact, as given")
                                                     : "unknown: exact and approximate (FlashHead approx:8016:256)");
    snprintf(assume[na++], 200, "bandwidth %g GB/s, %s%s", d.bw_gbps, d.bw_measured ? "measured" : "nominal peak",
             d.bw_estimate ? " (ESTIMATE)" : "");
    snprintf(assume[na++], 200, "efficiency basis: runtime %s, backend %s, class %s", o.runtime ? o.runtime : "any",
             o.backend ? o.backend : "any", d.cls);
    snprintf(assume[na++], 200, "calibration %s, %d rows, hash %016llx", cl_calib_default(o.calib), c.n, cl_calib_hash(&c));
    int best = -1, worst = -1;
    for (int i = 0; i < nk; i++) {
        int r = rank_of(k[i].verdict);
        if (r >= 0 && (best < 0 || r < best)) best = r;
        if (r > worst) worst = r;
    }
    if (o.json) {
        printf("{\"model\": ");
        cmd_json_str(g->name);
        printf(", \"weights\": ");
        cmd_json_str(g->weights);
        printf(", \"device\": ");
        cmd_json_str(d.id);
        printf(", \"bandwidth_gbps\": %g, \"bandwidth_source\": ", d.bw_gbps);
        cmd_json_str(d.bw_source);
        printf(", \"bandwidth_estimate\": %s", d.bw_estimate ? "true" : "false");
        printf(", \"bytes_per_token\": %llu, \"roofline_tok_s\": %.3f", (unsigned long long)k[0].b.total, k[0].roof);
        if (k[0].fitted) printf(", \"projected_tok_s\": [%.3f, %.3f]", k[0].lo, k[0].hi);
        else printf(", \"projected_tok_s\": null");
        printf(", \"basis_rows\": %d", k[0].fitted ? k[0].fit.n_basis : 0);
        if (o.claimed > 0) {
            printf(", \"claimed_tok_s\": %g, \"verdict\": \"%s\", \"verdict_worst\": \"%s\"", o.claimed,
                   verdict_rank[best], verdict_rank[worst]);
        }
        if (o.prompt > 0)
            printf(", \"prompt\": %d, \"claimed_ttft_ms\": %g, \"ttft_min_ms\": %.3f, \"ttft_compute_ms\": %.3f, "
                   "\"ttft_bandwidth_ms\": %.3f, \"ttft_verdict\": \"%s\"", o.prompt, o.claimed_ttft, ttft_min,
                   ttft_compute, ttft_bw, ttft_verdict);
        printf(", \"assumptions\": [");
        for (int i = 0; i < na; i++) { if (i) printf(", "); cmd_json_str(assume[i]); }
        printf("], \"conditions\": [");
        for (int i = 0; i < nk; i++) {
            char hl[48];
            head_label(&k[i].head, hl, sizeof hl);
            printf("%s{\"ctx\": %d, \"head\": \"%s\", \"head_approximate\": %s, \"bytes_per_token\": %llu, "
                   "\"weights\": %llu, \"head_bytes\": %llu, \"kv\": %llu, \"roofline_tok_s\": %.3f",
                   i ? ", " : "", k[i].ctx, hl, k[i].b.head_approx ? "true" : "false",
                   (unsigned long long)k[i].b.total, (unsigned long long)k[i].b.weights,
                   (unsigned long long)k[i].b.output, (unsigned long long)k[i].b.kv, k[i].roof);
            if (k[i].fitted) printf(", \"projected_tok_s\": [%.3f, %.3f], \"basis_rows\": %d, \"best_efficiency\": %.4f",
                                    k[i].lo, k[i].hi, k[i].fit.n_basis, k[i].fit.best);
            if (k[i].verdict)
                printf(", \"verdict\": \"%s\", \"needed_fraction\": %.4f, \"implied_gbps\": %.3f, \"implied_pct_peak\": %.2f",
                       k[i].verdict, k[i].need, k[i].implied, 100 * k[i].need);
            if (k[i].measured > 0)
                printf(", \"measured_tok_s\": %.3f, \"measured_efficiency\": %.4f", k[i].measured,
                       k[i].measured / k[i].roof);
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("model:      %s, weights %s\n", g->name, g->weights);
        printf("device:     %s (%s), %g GB/s %s%s\n", d.id, d.name, d.bw_gbps,
               d.bw_measured ? "measured" : "nominal peak", d.bw_estimate ? " (ESTIMATE)" : "");
        printf("  source:   %s%s%s\n", d.bw_source, d.bw_read[0] ? ", read " : "", d.bw_read);
        if (k[0].fitted) printf("basis:      %s\n", k[0].fit.basis);
        else printf("basis:      no comparable calibration row: roofline only\n");
        for (int i = 0; k[0].fitted && i < k[0].fit.n_idx && i < 6; i++) {
            const cl_row_t *r = &c.rows[k[0].fit.idx[i]];
            printf("  %-20s %-10s %-4s %-18s %-9s %8.2f tok/s  eff %.3f  (%s:%d)\n", r->device, r->runtime, r->backend,
                   r->model, r->type, r->tok_s, r->eff, strrchr(r->file, '/') ? strrchr(r->file, '/') + 1 : r->file, r->line);
        }
        printf("\n%-6s %-26s %10s %10s %22s", "ctx", "head", "MB/token", "roofline", "projected tok/s");
        if (o.claimed > 0) printf("  %-7s %-28s", "% peak", "verdict");
        printf("\n");
        for (int i = 0; i < nk; i++) {
            char hl[48], pj[48];
            head_label(&k[i].head, hl, sizeof hl);
            if (k[i].b.head_approx) strncat(hl, " (APPROX)", sizeof hl - strlen(hl) - 1);
            if (k[i].fitted) snprintf(pj, sizeof pj, "[%.1f, %.1f]", k[i].lo, k[i].hi);
            else snprintf(pj, sizeof pj, "-");
            printf("%-6d %-26s %10.2f %10.1f %22s", k[i].ctx, hl, (double)k[i].b.total / 1e6, k[i].roof, pj);
            if (k[i].verdict) printf("  %6.1f  %s: %s", 100 * k[i].need, k[i].verdict, k[i].why);
            if (k[i].measured > 0)
                printf("  measured %.2f tok/s (%.0f %% of the roofline, %s the projection)", k[i].measured,
                       100 * k[i].measured / k[i].roof, !k[i].fitted ? "no" : k[i].measured < k[i].lo ? "below"
                       : k[i].measured > k[i].hi ? "above" : "inside");
            else if (o.measure)
                printf("  not measured (the engine runs the exact head)");
            printf("\n");
        }
        if (o.claimed > 0)
            printf("\nclaim %g tok/s: %s%s%s\n", o.claimed, verdict_rank[best], best != worst ? " at best, " : "",
                   best != worst ? verdict_rank[worst] : "");
        if (o.prompt > 0) {
            printf("ttft %g ms for %d prompt tokens: %s (lower bound %.2f ms: %.3g FLOPs", o.claimed_ttft, o.prompt,
                   ttft_verdict, ttft_min, ttft_flops);
            if (ttft_compute > 0) printf(" at %g TFLOP/s = %.2f ms", d.fp16_tflops, ttft_compute);
            else printf(", no sourced FP16 rate for this device");
            printf("; one read of the weights %.2f ms)\n", ttft_bw);
        }
        printf("\nassumptions:\n");
        for (int i = 0; i < na; i++) printf("  - %s\n", assume[i]);
    }
    cl_calib_free(&c);
    tb_geometry_free(g);
    return 0;
}
