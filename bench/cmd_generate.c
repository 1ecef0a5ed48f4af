/*
 * cmd_generate.c — `ternbench generate`: prefill a prompt, then sample and
 * stream tokens.
 *
 *   generate -m F.gguf [-p TEXT] [-n N] [--temp T] [--top-k K] [--top-p P]
 *            [--min-p P] [--seed S] [-t THREADS] [--ctx N] [--ids]
 *            [--ignore-eos] [--logits-out FILE]
 *
 * Text streams to stdout through the streaming detokenizer as it is
 * produced (--ids: one id per line instead). A timing line goes to stderr.
 * --logits-out writes the logits of the last evaluated position (after the
 * last decode, or of the prompt's last token with -n 0) as n_vocab raw
 * little-endian float32 values, to compare with other engines.
 */
#include "commands.h"
#include "ternbench.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char gen_usage[] =
    "usage: ternbench generate -m F.gguf [-p TEXT] [-n N] [--temp T] [--top-k K] [--top-p P]\n"
    "                          [--min-p P] [--seed S] [-t THREADS] [--ctx N] [--ids] [--ignore-eos]\n"
    "                          [--logits-out FILE]\n";

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "ternbench generate: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", gen_usage);
    return 2;
}

/* Decimal only (cmd_parse_ll): "" is not 0, "010" is not 8. */
static bool parse_long(const char *s, long lo, long hi, long *out) {
    long long v;
    if (cmd_parse_ll(s, lo, hi, &v)) return false;
    *out = (long)v;
    return true;
}

static bool parse_float(const char *s, float *out) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || v != v) return false;
    *out = v;
    return true;
}

/* Options of one generate run. */
typedef struct gen_opts {
    const char *model, *prompt, *logits_out;
    long n_predict, n_threads, n_ctx;
    bool ids, ignore_eos;
    tb_sampler_params_t sp;
} gen_opts_t;

/* Parse argv into o; returns 0 or the exit status of a usage error. */
static int parse_args(int argc, char **argv, gen_opts_t *o) {
    static const struct option opts[] = {
        {"model", required_argument, 0, 'm'},  {"prompt", required_argument, 0, 'p'},
        {"n-predict", required_argument, 0, 'n'}, {"threads", required_argument, 0, 't'},
        {"temp", required_argument, 0, 'T'},   {"top-k", required_argument, 0, 'K'},
        {"top-p", required_argument, 0, 'P'},  {"min-p", required_argument, 0, 'M'},
        {"seed", required_argument, 0, 'S'},   {"ctx", required_argument, 0, 'c'},
        {"ids", no_argument, 0, 'i'},          {"ignore-eos", no_argument, 0, 'e'},
        {"logits-out", required_argument, 0, 'L'}, {0, 0, 0, 0},
    };
    long v;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (gen_opts_t){.prompt = "", .n_predict = 32, .n_threads = cpus > 0 ? cpus : 1,
                      .sp = {.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = 1}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":m:p:n:t:c:", opts, NULL)) != -1) {
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'p': o->prompt = optarg; break;
        case 'n':
            if (!parse_long(optarg, 0, 1 << 24, &o->n_predict)) return usage_error("-n expects a count >= 0, got '%s'", optarg);
            break;
        case 't':
            if (!parse_long(optarg, 1, 512, &o->n_threads)) return usage_error("-t expects 1..512 threads, got '%s'", optarg);
            break;
        case 'c':
            if (!parse_long(optarg, 1, 1 << 24, &o->n_ctx)) return usage_error("--ctx expects a positive size, got '%s'", optarg);
            break;
        case 'T': if (!parse_float(optarg, &o->sp.temp)) return usage_error("--temp expects a number, got '%s'", optarg); break;
        case 'P': if (!parse_float(optarg, &o->sp.top_p)) return usage_error("--top-p expects a number, got '%s'", optarg); break;
        case 'M': if (!parse_float(optarg, &o->sp.min_p)) return usage_error("--min-p expects a number, got '%s'", optarg); break;
        case 'K':
            if (!parse_long(optarg, -1, INT32_MAX, &v)) return usage_error("--top-k expects an integer, got '%s'", optarg);
            o->sp.top_k = (int32_t)v;
            break;
        case 'S':
            if (!parse_long(optarg, 0, LONG_MAX, &v)) return usage_error("--seed expects a non-negative integer, got '%s'", optarg);
            o->sp.seed = (uint64_t)v;
            break;
        case 'i': o->ids = true; break;
        case 'e': o->ignore_eos = true; break;
        case 'L': o->logits_out = optarg; break;
        case ':': return usage_error("option %s needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
    if (!o->model) return usage_error("%s", "-m is required");
    return 0;
}

static int write_logits(const char *path, const float *logits, int32_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "ternbench generate: %s: %s\n", path, strerror(errno));
        return 1;
    }
    bool ok = true;
    for (int32_t i = 0; i < n && ok; i++) {     /* explicit little-endian */
        uint32_t u;
        memcpy(&u, &logits[i], 4);
        unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                              (unsigned char)(u >> 24)};
        ok = fwrite(b, 1, 4, f) == 4;
    }
    ok = (fclose(f) == 0) && ok;
    if (!ok) fprintf(stderr, "ternbench generate: %s: write failed\n", path);
    return ok ? 0 : 1;
}

/* ===================================================================== */
/* The run                                                                */
/* ===================================================================== */

typedef struct gen_state {
    tb_model_t *m;
    tb_session_t *s;
    tb_sampler_t *smp;
    tb_detok_t *d;
    int32_t *ids;
    bool streamed;            /* text already on stdout: errors start a new line */
} gen_state_t;

static void gen_free(gen_state_t *g) {
    if (g->d) tb_detok_free(g->d);
    if (g->smp) tb_sampler_free(g->smp);
    if (g->s) tb_session_free(g->s);
    if (g->m) tb_model_free(g->m);
    free(g->ids);
}

static int engine_error(gen_state_t *g) {
    fprintf(stderr, "%sternbench generate: %s\n", g->streamed ? "\n" : "", tb_last_error());
    gen_free(g);
    return 1;
}

int cmd_generate(int argc, char **argv) {
    gen_opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    gen_state_t g = {0};
    const tb_model_params_t mp = {.weights = TB_WEIGHTS_COPY, .n_threads = (int)o.n_threads};
    if (tb_model_load_ex(o.model, &mp, &g.m) != TB_OK) return engine_error(&g);
    const tb_tokenizer_t *tok = tb_model_tokenizer(g.m);
    if (!tok) {
        fprintf(stderr, "ternbench generate: %s has no tokenizer\n", o.model);
        gen_free(&g);
        return 1;
    }
    const int32_t n_vocab = tb_model_n_vocab(g.m);

    /* prompt → ids (an empty prompt starts from BOS, else EOS) */
    size_t plen = strlen(o.prompt);
    int cap = (int)plen + 8;
    if (!(g.ids = malloc((size_t)cap * sizeof *g.ids))) { fprintf(stderr, "ternbench generate: out of memory\n"); gen_free(&g); return 1; }
    int n_prompt = tb_tokenize(tok, o.prompt, plen, true, false, g.ids, cap);
    if (n_prompt < 0) return engine_error(&g);
    if (n_prompt > cap) {
        free(g.ids);
        cap = n_prompt;
        if (!(g.ids = malloc((size_t)cap * sizeof *g.ids))) { fprintf(stderr, "ternbench generate: out of memory\n"); gen_free(&g); return 1; }
        n_prompt = tb_tokenize(tok, o.prompt, plen, true, false, g.ids, cap);
        if (n_prompt < 0) return engine_error(&g);
    }
    if (n_prompt == 0) {
        int32_t start = tb_tokenizer_bos(tok) >= 0 ? tb_tokenizer_bos(tok) : tb_tokenizer_eos(tok);
        if (start < 0) {
            gen_free(&g);
            return usage_error("%s", "empty prompt and the vocabulary has no BOS/EOS to start from");
        }
        g.ids[n_prompt++] = start;
    }

    tb_session_params_t sp = tb_session_default_params();
    sp.n_threads = (int32_t)o.n_threads;
    sp.n_ctx = (int32_t)(o.n_ctx ? o.n_ctx : n_prompt + o.n_predict + 1);
    if (sp.n_ctx < n_prompt + o.n_predict) {
        gen_free(&g);
        return usage_error("--ctx is smaller than the prompt plus -n (%s)", "raise --ctx or lower -n");
    }
    char note[256];
    if (tb_model_ctx_check(g.m, sp.n_ctx, note, sizeof note)) fprintf(stderr, "ternbench generate: warning: %s\n", note);
    if (tb_session_new(g.m, &sp, &g.s) != TB_OK) return engine_error(&g);
    if (tb_sampler_new(&o.sp, &g.smp) != TB_OK) return engine_error(&g);
    if (tb_detok_new(tok, &g.d) != TB_OK) return engine_error(&g);

    uint64_t t0 = tb_now_ns();
    if (tb_session_eval(g.s, g.ids, n_prompt, false) != TB_OK) return engine_error(&g);
    uint64_t t_prefill = tb_now_ns() - t0;

    char out[1024];
    long n_gen = 0;
    t0 = tb_now_ns();
    for (; n_gen < o.n_predict; n_gen++) {
        const float *logits = tb_session_logits(g.s, -1);
        int32_t t = tb_sampler_sample(g.smp, logits, n_vocab);
        if (t < 0 || t >= n_vocab) { tb_clear_error(); fprintf(stderr, "\nternbench generate: sampler returned %d\n", t); gen_free(&g); return 1; }
        if (!o.ignore_eos && tb_tokenizer_is_eog(tok, t)) break;
        if (o.ids) {
            printf("%d\n", t);
        } else {
            /* a long token drains in several calls */
            for (int k = tb_detok_push(g.d, t, out, sizeof out); k != 0; k = tb_detok_drain(g.d, out, sizeof out)) {
                if (k < 0) return engine_error(&g);
                fwrite(out, 1, (size_t)k, stdout);
            }
        }
        fflush(stdout);
        g.streamed = true;
        if (tb_session_eval(g.s, &t, 1, false) != TB_OK) return engine_error(&g);
    }
    uint64_t t_decode = tb_now_ns() - t0;
    if (!o.ids) {
        int k;
        while ((k = tb_detok_flush(g.d, out, sizeof out)) > 0) fwrite(out, 1, (size_t)k, stdout);
        printf("\n");
    }
    fflush(stdout);
    fprintf(stderr, "prefill: %d tokens in %.1f ms (%.2f tok/s); decode: %ld tokens in %.1f ms (%.2f tok/s); %ld threads\n",
            n_prompt, (double)t_prefill / 1e6, t_prefill ? n_prompt * 1e9 / (double)t_prefill : 0.0,
            n_gen, (double)t_decode / 1e6, t_decode && n_gen ? (double)n_gen * 1e9 / (double)t_decode : 0.0,
            o.n_threads);
    if (o.logits_out) {
        const float *logits = tb_session_logits(g.s, -1);
        rc = logits ? write_logits(o.logits_out, logits, n_vocab) : 1;
    }
    gen_free(&g);
    return rc;
}
