/*
 * cmd_quality.c — `ternbench quality`: perplexity, KL divergence, same top-1
 * and Δp of a test model against a reference model or a stored reference,
 * with llama-perplexity --kl-divergence's definitions (bench/quality/,
 * docs/quality.md).
 *
 *   quality -m TEST.gguf (--ref REF.gguf | --ref-logits FILE) --text FILE
 *           [--ctx C] [--chunks N] [-t N] [--json] [--save-ref FILE]
 *           [--head exact|approx:CENTROIDS[:TOPC]]
 *   quality --ref REF.gguf --text FILE --save-ref FILE [--ctx C] [--chunks N]
 *
 * Exit status: 0, 2 for usage and input errors (a short text, a reference
 * of another vocabulary, tokenizer or text, a malformed or truncated
 * reference file), 1 for failures while running.
 */
#include "commands.h"
#include "quality.h"
#include "ternbench.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char q_usage[] =
    "usage: ternbench quality -m TEST.gguf (--ref REF.gguf | --ref-logits FILE) --text FILE\n"
    "                         [--ctx C] [--chunks N] [-t N] [--json] [--save-ref FILE]\n"
    "                         [--head exact|approx:CENTROIDS[:TOPC]]\n"
    "       ternbench quality --ref REF.gguf --text FILE --save-ref FILE [--ctx C] [--chunks N] [-t N]\n";

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "ternbench quality: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", q_usage);
    return 2;
}

static void progress(void *ud, int32_t chunk, int32_t n_chunk) {
    (void)ud;
    fprintf(stderr, "\rquality: chunk %d/%d", chunk, n_chunk);
    if (chunk == n_chunk) fputc('\n', stderr);
}

/* JSON number or null for NaN / inf. */
static void jnum(const char *key, double v, bool comma) {
    if (isfinite(v)) printf("  \"%s\": %.9g%s\n", key, v, comma ? "," : "");
    else printf("  \"%s\": null%s\n", key, comma ? "," : "");
}

static void print_json(const tb_quality_opts_t *o, const tb_quality_result_t *r) {
    const tb_quality_stats_t *s = &r->st;
    printf("{\n  \"model\": ");
    cmd_json_str(o->model ? o->model : "");
    printf(",\n  \"model_sha256\": ");
    cmd_json_str(r->test_hash);
    printf(",\n  \"reference\": ");
    cmd_json_str(o->ref_model ? o->ref_model : o->ref_file);
    printf(",\n  \"reference_kind\": \"%s\",\n  \"reference_sha256\": ", o->ref_model ? "model" : "file");
    cmd_json_str(r->ref_hash);
    printf(",\n  \"text\": ");
    cmd_json_str(o->text);
    printf(",\n  \"text_sha256\": ");
    cmd_json_str(r->text_hash);
    printf(",\n  \"tokenizer_sha256\": ");
    cmd_json_str(r->tok_hash);
    printf(",\n  \"ternarize\": ");
    if (r->test_ternarize[0]) cmd_json_str(r->test_ternarize);
    else printf("null");
    printf(",\n  \"post_hoc\": %s,\n", r->test_ternarize[0] ? "true" : "false");
    printf("  \"head\": \"%s\",\n  \"approximate\": %s,\n", r->approx_head ? "approx" : "exact",
           r->approx_head ? "true" : "false");
    printf("  \"head_rows_per_token\": %.6g,\n  \"head_centroid_rows_per_token\": %.6g,\n",
           r->head_rows_per_token, r->head_centroids_per_token);
    if (r->approx_head)
        printf("  \"head_centroids\": %d,\n  \"head_top_c\": %d,\n  \"head_seed\": %llu,\n", r->head.n_centroids,
               r->head.top_c, (unsigned long long)r->head.seed);
    printf("  \"n_ctx\": %d,\n  \"n_chunk\": %d,\n  \"n_vocab\": %d,\n  \"top_k\": %d,\n"
           "  \"text_tokens\": %lld,\n  \"scored_tokens\": %lld,\n",
           r->n_ctx, r->n_chunk, r->n_vocab, r->k, (long long)r->n_text_tokens, (long long)s->n);
    jnum("ppl", s->ppl, true);
    jnum("ppl_unc", s->ppl_unc, true);
    jnum("ppl_base", s->ppl_base, true);
    jnum("ppl_base_unc", s->ppl_base_unc, true);
    jnum("ppl_cor", s->ppl_cor, true);
    jnum("ln_ppl_ratio", s->ln_ratio, true);
    jnum("ln_ppl_ratio_unc", s->ln_ratio_unc, true);
    jnum("ppl_ratio", s->ppl_ratio, true);
    jnum("ppl_ratio_unc", s->ppl_ratio_unc, true);
    jnum("kld_mean", s->kld_mean, true);
    jnum("kld_unc", s->kld_unc, true);
    jnum("kld_median", s->kld_median, true);
    jnum("kld_p90", s->kld_p90, true);
    jnum("kld_p95", s->kld_p95, true);
    jnum("kld_p99", s->kld_p99, true);
    jnum("kld_max", s->kld_max, true);
    jnum("kld_upper_bound_mean", s->kld_ub_mean, true);
    jnum("kld_full_mean", s->kld_full_mean, true);
    jnum("same_top", s->same_top, true);
    jnum("same_top_unc", s->same_top_unc, true);
    jnum("dp_mean", s->dp_mean, true);
    jnum("dp_unc", s->dp_unc, true);
    jnum("dp_min", s->dp_min, true);
    jnum("dp_p01", s->dp_p01, true);
    jnum("dp_p05", s->dp_p05, true);
    jnum("dp_p10", s->dp_p10, true);
    jnum("dp_p25", s->dp_p25, true);
    jnum("dp_median", s->dp_median, true);
    jnum("dp_p75", s->dp_p75, true);
    jnum("dp_p90", s->dp_p90, true);
    jnum("dp_p95", s->dp_p95, true);
    jnum("dp_p99", s->dp_p99, true);
    jnum("dp_max", s->dp_max, true);
    jnum("dp_rms", s->dp_rms, true);
    jnum("dp_rms_unc", s->dp_rms_unc, false);
    printf("}\n");
}

static void print_text(const tb_quality_opts_t *o, const tb_quality_result_t *r) {
    const tb_quality_stats_t *s = &r->st;
    printf("test        %s%s\n", o->model, r->test_ternarize[0] ? "  [post-hoc ternarized]" : "");
    if (r->test_ternarize[0]) printf("            ternarization: %s (post-hoc)\n", r->test_ternarize);
    if (r->approx_head)
        printf("head        APPROXIMATE: %d centroids, top %d clusters scored (seed %llu, %d k-means rounds); "
               "%.1f of %d rows + %.0f centroids per token\n", r->head.n_centroids, r->head.top_c,
               (unsigned long long)r->head.seed, r->head.iters, r->head_rows_per_token, r->n_vocab,
               r->head_centroids_per_token);
    else
        printf("head        exact (%.0f rows per token)\n", r->head_rows_per_token);
    printf("reference   %s (%s)\n", o->ref_model ? o->ref_model : o->ref_file, o->ref_model ? "model" : "file");
    printf("text        %s: %lld tokens, %d chunks of %d, %lld scored, top-K %d\n\n", o->text,
           (long long)r->n_text_tokens, r->n_chunk, r->n_ctx, (long long)s->n, r->k);
    printf("====== Perplexity statistics ======\n");
    printf("Mean PPL(Q)                   : %10.6f ± %10.6f\n", s->ppl, s->ppl_unc);
    printf("Mean PPL(base)                : %10.6f ± %10.6f\n", s->ppl_base, s->ppl_base_unc);
    printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100 * s->ppl_cor);
    printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", s->ln_ratio, s->ln_ratio_unc);
    printf("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n\n", s->ppl_ratio, s->ppl_ratio_unc);
    printf("====== KL divergence statistics (top-%d form) ======\n", r->k);
    printf("Mean    KLD: %10.6f ± %10.6f\n", s->kld_mean, s->kld_unc);
    printf("Maximum KLD: %10.6f\n", s->kld_max);
    printf("99.0%%   KLD: %10.6f\n", s->kld_p99);
    printf("95.0%%   KLD: %10.6f\n", s->kld_p95);
    printf("90.0%%   KLD: %10.6f\n", s->kld_p90);
    printf("Median  KLD: %10.6f\n", s->kld_median);
    printf("Bound   KLD: %10.6f  (mean upper bound of the full-vocabulary KL)\n", s->kld_ub_mean);
    if (isfinite(s->kld_full_mean)) printf("Full    KLD: %10.6f  (exact, all %d tokens)\n", s->kld_full_mean, r->n_vocab);
    printf("\n====== Token probability statistics ======\n");
    printf("Mean    Δp: %6.3f ± %5.3f %%\n", 100 * s->dp_mean, 100 * s->dp_unc);
    printf("Maximum Δp: %6.3f%%\n", 100 * s->dp_max);
    printf("99.0%%   Δp: %6.3f%%\n", 100 * s->dp_p99);
    printf("95.0%%   Δp: %6.3f%%\n", 100 * s->dp_p95);
    printf("90.0%%   Δp: %6.3f%%\n", 100 * s->dp_p90);
    printf("75.0%%   Δp: %6.3f%%\n", 100 * s->dp_p75);
    printf("Median  Δp: %6.3f%%\n", 100 * s->dp_median);
    printf("25.0%%   Δp: %6.3f%%\n", 100 * s->dp_p25);
    printf("10.0%%   Δp: %6.3f%%\n", 100 * s->dp_p10);
    printf(" 5.0%%   Δp: %6.3f%%\n", 100 * s->dp_p05);
    printf(" 1.0%%   Δp: %6.3f%%\n", 100 * s->dp_p01);
    printf("Minimum Δp: %6.3f%%\n", 100 * s->dp_min);
    printf("RMS Δp    : %6.3f ± %5.3f %%\n", 100 * s->dp_rms, 100 * s->dp_rms_unc);
    printf("Same top p: %6.3f ± %5.3f %%\n", 100 * s->same_top, 100 * s->same_top_unc);
}

static bool parse_int(const char *s, long lo, long hi, int32_t *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = (int32_t)v;
    return true;
}

int cmd_quality(int argc, char **argv) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},    {"ref", required_argument, 0, 'r'},
        {"ref-logits", required_argument, 0, 'R'}, {"text", required_argument, 0, 'x'},
        {"ctx", required_argument, 0, 'c'},      {"chunks", required_argument, 0, 'C'},
        {"threads", required_argument, 0, 't'},  {"json", no_argument, 0, 'j'},
        {"save-ref", required_argument, 0, 'S'}, {"help", no_argument, 0, 'h'},
        {"head", required_argument, 0, 'H'},
        {0, 0, 0, 0},
    };
    tb_quality_opts_t o = {0};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o.n_threads = cpus > 0 ? (int32_t)(cpus < 512 ? cpus : 512) : 1;
    bool json = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":m:t:c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': o.model = optarg; break;
        case 'r': o.ref_model = optarg; break;
        case 'R': o.ref_file = optarg; break;
        case 'x': o.text = optarg; break;
        case 'S': o.save_ref = optarg; break;
        case 'j': json = true; break;
        case 'H':
            if (tb_head_parse(optarg, &o.approx_head, &o.head) != TB_OK) return usage_error("--head: %s", tb_last_error());
            break;
        case 'c':
            if (!parse_int(optarg, 8, 1 << 20, &o.n_ctx)) return usage_error("--ctx expects 8..1048576 tokens, got '%s'", optarg);
            break;
        case 'C':
            if (!parse_int(optarg, 1, 1 << 20, &o.n_chunks)) return usage_error("--chunks expects a positive count, got '%s'", optarg);
            break;
        case 't':
            if (!parse_int(optarg, 1, 512, &o.n_threads)) return usage_error("-t expects 1..512 threads, got '%s'", optarg);
            break;
        case 'h': fputs(q_usage, stdout); return 0;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
    if (!o.text) return usage_error("%s", "--text is required");
    if (!o.ref_model == !o.ref_file) return usage_error("%s", "give exactly one of --ref and --ref-logits");
    if (o.save_ref && !o.ref_model) return usage_error("%s", "--save-ref needs --ref (a reference model)");
    if (!o.model && !o.save_ref) return usage_error("%s", "-m is required (or --save-ref to only store a reference)");
    if (!json) o.progress = progress;
    tb_quality_result_t r;
    int rc = tb_quality_run(&o, &r);
    if (rc) {
        fprintf(stderr, "ternbench quality: %s\n", tb_quality_last_error());
        return rc == TB_ERR_NOMEM || rc == TB_ERR_INTERNAL || rc == TB_ERR_RANGE ? 1 : 2;
    }
    if (o.save_ref)
        fprintf(stderr, "quality: reference saved to %s (%d chunks of %d tokens, top-%d)\n", o.save_ref,
                r.n_chunk, r.n_ctx, r.k);
    if (!r.has_test) return 0;
    if (json) print_json(&o, &r);
    else print_text(&o, &r);
    return 0;
}
