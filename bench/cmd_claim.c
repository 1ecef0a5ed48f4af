/*
 * cmd_claim.c — `ternbench claim`: from a model (preset or GGUF) and a
 * device to bytes per token, the roofline, a projected tok/s interval from
 * the calibration table and, with --claimed, a verdict; conditions left
 * unknown (context, head) are evaluated across in one table.
 * `ternbench claim calibrate --loo` prints the leave-one-out accuracy.
 */
#include "claim.h"
#include "commands.h"
#include "facts.h"
#include "scenario.h"
#include "store.h"
#include "ternbench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COND 16
typedef struct opts {
    const char *model, *type, *device, *backend, *runtime, *kv, *calib, *devdir;
    const char *ctx_s, *head_s;
    const char *add[8], *add_db[8];
    int n_add, n_add_db;
    double claimed, claimed_ttft;
    int prompt, measure_tokens, threads;
    bool json, measure;
    const char *db;          /* record into this database (NULL: do not record) */
    bool record, no_db;
} opts_t;

static int usage(const char *msg) {
    if (msg) fprintf(stderr, "ternbench claim: %s\n", msg);
    fprintf(stderr,
            "usage: ternbench claim --model PRESET|FILE.gguf [--type T] --device ID|this [--backend cpu|gpu|npu]\n"
            "         [--runtime R] [--ctx C] [--head exact|approx[:CENTROIDS[:PROBES]]] [--kv-type T]\n"
            "         [--claimed TOK_S] [--prompt N --claimed-ttft MS] [--calibration FILE] [--add FILE] [--add-db DB]\n"
            "         [--devices DIR] [--json] [--measure [--measure-tokens N] [-t N]]\n"
            "         [--db FILE | --record | --no-db]\n"
            "       ternbench claim calibrate --loo [--calibration FILE] [--add FILE] [--add-db DB] [--devices DIR] [-v]\n"
            "  --ctx or --head left out: evaluated at ctx 512, 2048, 8192 and with the exact and the\n"
            "  approximate (FlashHead, approx:%d:%d) head, in one table\n"
            "  --measure (--device this, a GGUF model): decode N tokens (default 32) at each exact-head\n"
            "  condition with the engine and print the measured speed beside the projection\n"
            "  --db FILE / --record (the default database): record every condition, under a run of its\n"
            "  own, into the claims table; --measure records by default, --no-db does not\n",
            CL_DEFAULT_CENTROIDS, CL_DEFAULT_PROBES);
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
    for (int i = 0; !rc && i < o->n_add_db; i++) {
        int skipped, n0 = c->n;
        rc = cl_calib_read_db(o->add_db[i], c, &skipped);
        if (!rc)
            fprintf(stderr, "ternbench claim: %s: %d measured claim rows added%s", o->add_db[i], c->n - n0,
                    skipped ? "" : "\n");
        if (!rc && skipped)
            fprintf(stderr, ", %d above their roofline (a model that fits in cache) left out\n", skipped);
    }
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
        else if (!strcmp(argv[i], "--add-db") && v && o.n_add_db < 8) o.add_db[o.n_add_db++] = argv[++i];
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
    for (int i = 0; i < o.n_add_db; i++) printf(" + %s (measured claims)", o.add_db[i]);
    printf("): coverage %.1f %% (%d of %d inside), median half-width %.1f %%\n", 100 * l.coverage, l.covered,
           l.n, 100 * l.median_halfwidth);
    printf("calibration hash %016llx\n", cl_calib_hash(&c));
    cl_calib_free(&c);
    return 0;
}

static int load_geometry(const char *model, const char *type, tb_geometry_t **g) {
    size_t n = strlen(model);
    if (type && n > 5 && !strcmp(model + n - 5, ".gguf"))
        fprintf(stderr, "ternbench claim: --type is ignored for a GGUF file (its own types count)\n");
    int rc = cl_load_geometry(model, type, g);
    if (rc) fprintf(stderr, "ternbench claim: %s\n", tb_last_error());
    return rc;
}

/* Record the conditions under a run of their own: host and build facts,
 * the command line as the run's scenario text (its hash the key), tag
 * command=claim, then the conditions in one transaction. 0, or 1 with the
 * message printed. */
static int record_command(const opts_t *o, int argc, char **argv, const cl_check_t *ck, const cl_cond_t *k, int nk) {
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof text, "; ternbench claim (command line)\nternbench");
    for (int i = 0; i < argc && n < sizeof text; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, " %s", argv[i]);
    if (n < sizeof text) snprintf(text + n, sizeof text - n, "\n");
    char hash[65];
    tb_sha256_hex(text, strlen(text), hash);
    tb_store_t *s = NULL;
    tb_host_facts_t host;
    tb_build_facts_t build;
    int64_t host_id, build_id, scen_id, run_id = -1;
    tb_facts_host(&host);
    tb_facts_build(&build);
    const char *keys[] = {"command"}, *vals[] = {"claim"};
    tb_run_facts_t rf = {.model_id = -1, .threads = o->measure ? o->threads : 1,
                         .bandwidth_gbps_before = ck->d->bw_measured ? ck->d->bw_gbps : -1,
                         .record_tokens = 0, .n_tags = 1, .tag_keys = keys, .tag_values = vals};
    tb_facts_uuid(rf.uuid);
    snprintf(rf.isa, sizeof rf.isa, "%s", tb_isa_name(tb_isa_active()));
    snprintf(rf.kv_type, sizeof rf.kv_type, "%s", tb_type_name(ck->kv));
    int rc = tb_store_open(o->db, &s, NULL);
    if (!rc) rc = tb_store_put_host(s, &host, &host_id);
    if (!rc) rc = tb_store_put_build(s, &build, &build_id);
    if (!rc) rc = tb_store_put_scenario(s, hash, "claim", "(command line)", text, &scen_id);
    if (!rc) {
        rf.host_id = host_id;
        rf.build_id = build_id;
        rf.scenario_id = scen_id;
        rc = tb_store_run_begin(s, &rf, &run_id);
    }
    if (!rc) {
        rc = cl_record(s, run_id, ck, k, nk, 0);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", rc ? tb_last_error() : "");
        int erc = tb_store_run_end(s, run_id, rc ? "failed" : "complete", rc ? msg : NULL, -1);
        if (rc) tb_err(rc, "%s", msg);
        else rc = erc;
    }
    if (rc) fprintf(stderr, "ternbench claim: %s\n", tb_last_error());
    else fprintf(stderr, "ternbench claim: recorded %d conditions as run %lld (%s) in %s\n", nk,
                 (long long)run_id, rf.uuid, o->db);
    tb_store_close(s);
    return rc ? 1 : 0;
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
        if (!strcmp(a, "--record")) { o.record = true; continue; }
        if (!strcmp(a, "--no-db")) { o.no_db = true; continue; }
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
        else if (!strcmp(a, "--db")) o.db = v;
        else if (!strcmp(a, "--add-db")) { if (o.n_add_db == 8) return usage("at most 8 --add-db"); o.add_db[o.n_add_db++] = v; }
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
    if (o.no_db && (o.db || o.record)) return usage("--no-db goes with neither --db nor --record");
    if (!o.no_db && !o.db && (o.record || o.measure)) o.db = tb_store_default_path();
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
    tb_head_opts_t heads[2] = {{0, 0}, {CL_DEFAULT_CENTROIDS, CL_DEFAULT_PROBES}};
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

    cl_cond_t k[MAX_COND];
    int nk = 0;
    double bpw = cl_geom_bpw(g);
    cl_query_t q = {o.runtime, o.backend, d.cls, d.id, g->name, g->weights, d.bw_gbps, bpw, -1};
    for (int hi = 0; hi < n_head; hi++)
        for (int ci = 0; ci < n_ctx; ci++) {
            cl_cond_t *x = &k[nk];
            memset(x, 0, sizeof *x);
            x->ctx = ctxs[ci];
            x->head = heads[hi];
            x->claimed = o.claimed;
            x->measured_test_id = -1;
            if (cl_eval_cond(g, &d, &c, &q, kv, x)) {
                fprintf(stderr, "ternbench claim: %s\n", tb_last_error());
                cl_calib_free(&c);
                tb_geometry_free(g);
                return 2;
            }
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
            cl_head_label(&k[i].head, hl, sizeof hl);
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
            cl_head_label(&k[i].head, hl, sizeof hl);
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
    if (o.db) {
        cl_check_t ck = {.section = "claim", .g = g, .model_path = ml > 5 && !strcmp(o.model + ml - 5, ".gguf") ? o.model : NULL,
                         .d = &d, .backend = o.backend, .runtime = o.runtime, .kv = kv,
                         .ctx_given = o.ctx_s != NULL, .head_given = o.head_s != NULL, .prompt = o.prompt,
                         .claimed_ttft = o.claimed_ttft, .ttft_min = ttft_min, .ttft_verdict = ttft_verdict,
                         .calib_path = cl_calib_default(o.calib), .c = &c};
        rc = record_command(&o, argc, argv, &ck, k, nk);
    }
    cl_calib_free(&c);
    tb_geometry_free(g);
    return rc;
}
