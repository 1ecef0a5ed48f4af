/*
 * cmd_model.c — `ternbench model synth|info|quantize`.
 *
 *   model synth --preset P --out F.gguf [--type T] [--seed S] [--vocab-from V.gguf] [--quiet]
 *   model info F.gguf [--ctx N] [--kv-type f16|f32]
 *   model quantize IN.gguf OUT.gguf --type T [--embd-type T] [--output-type T]
 *                  [--ternarize absmean]   (post-hoc BitNet b1.58 rounding first)
 *
 * Exit status: 0 ok, 1 the engine failed (its message is printed as
 * "ternbench model <sub>: <message>"), 2 usage error.
 */
#include "commands.h"
#include "ternbench.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char model_usage[] =
    "usage: ternbench model synth --preset P --out F.gguf [--type T] [--seed S] [--vocab-from V.gguf] [--quiet]\n"
    "       ternbench model info F.gguf [--ctx N] [--kv-type f16|f32]\n"
    "       ternbench model quantize IN.gguf OUT.gguf --type T [--embd-type T] [--output-type T]\n"
    "                                [--ternarize absmean]\n";

static int usage_error(const char *sub, const char *fmt, const char *arg) {
    fprintf(stderr, "ternbench model %s: ", sub);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", model_usage);
    return 2;
}

static int engine_error(const char *sub) {
    fprintf(stderr, "ternbench model %s: %s\n", sub, tb_last_error());
    return 1;
}

/* Parse a non-negative integer; false when s is not one. */
static bool parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || *s == '-') return false;
    *out = v;
    return true;
}

/* ===================================================================== */
/* synth                                                                  */
/* ===================================================================== */

static void synth_progress(void *ud, uint64_t done, uint64_t total) {
    int *last = ud;
    int pct = total ? (int)(done * 100 / total) : 100;
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\rwriting tensor data: %3d%% (%.2f / %.2f GB)", pct, (double)done / 1e9,
            (double)total / 1e9);
    if (done == total) fputc('\n', stderr);
}

/* ===================================================================== */
/* Interruption                                                           */
/* ===================================================================== */

static void on_signal(int sig) {
    tb_gguf_writer_remove_inflight();   /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* SIGINT/SIGTERM/SIGHUP while OUT is written remove the writer's private
 * temporary (OUT.XXXXXX.tmp, see tb_gguf_writer_begin), then terminate as
 * the signal would: an interrupted command leaves neither a half file nor
 * litter. */
static void guard_tmp(const char *out) {
    (void)out;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static int model_synth(int argc, char **argv) {
    static const struct option opts[] = {
        {"preset", required_argument, 0, 'P'}, {"out", required_argument, 0, 'o'},
        {"type", required_argument, 0, 'T'},   {"seed", required_argument, 0, 's'},
        {"vocab-from", required_argument, 0, 'v'}, {"quiet", no_argument, 0, 'q'},
        {0, 0, 0, 0},
    };
    tb_synth_params_t p = {.type = -1, .seed = 1};
    const char *out = NULL;
    bool quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
        switch (c) {
        case 'P': p.preset = optarg; break;
        case 'o': out = optarg; break;
        case 'T': {
            tb_type_t t;
            if (tb_type_from_name(optarg, &t) != TB_OK || t == TB_TYPE_Q8_K)
                return usage_error("synth", "--type expects f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, tq1_0 or tq2_0, got '%s'", optarg);
            p.type = (int)t;
            break;
        }
        case 's':
            if (!parse_u64(optarg, &p.seed)) return usage_error("synth", "--seed expects a non-negative integer, got '%s'", optarg);
            break;
        case 'v': p.vocab_from = optarg; break;
        case 'q': quiet = true; break;
        case ':': return usage_error("synth", "option %s needs a value", argv[optind - 1]);
        default: return usage_error("synth", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return usage_error("synth", "unexpected argument '%s'", argv[optind]);
    if (!p.preset) return usage_error("synth", "%s", "--preset is required");
    if (!out) return usage_error("synth", "%s", "--out is required");
    bool known = false;
    for (const char *const *n = tb_synth_presets(); *n; n++) known |= !strcmp(*n, p.preset);
    if (!known) {
        fprintf(stderr, "ternbench model synth: unknown preset '%s'; presets:", p.preset);
        for (const char *const *n = tb_synth_presets(); *n; n++) fprintf(stderr, " %s", *n);
        fprintf(stderr, "\n");
        return 2;
    }
    int last = -1;
    if (!quiet && isatty(STDERR_FILENO)) {
        p.progress = synth_progress;
        p.progress_ud = &last;
    }
    uint64_t t0 = tb_now_ns();
    guard_tmp(out);
    if (tb_synth_model(&p, out) != TB_OK) return engine_error("synth");
    double s = (double)(tb_now_ns() - t0) / 1e9;
    if (!quiet) {
        FILE *f = fopen(out, "rb");
        long size = -1;
        if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
        if (f) fclose(f);
        printf("wrote %s: preset %s, %ld bytes (%.2f GB) in %.1f s\n", out, p.preset, size,
               (double)size / 1e9, s);
    }
    return 0;
}

/* ===================================================================== */
/* info                                                                   */
/* ===================================================================== */

static void fmt_bytes(char *buf, size_t cap, uint64_t b) {
    if (b >= 1000000000ull) snprintf(buf, cap, "%.2f GB", (double)b / 1e9);
    else if (b >= 1000000ull) snprintf(buf, cap, "%.2f MB", (double)b / 1e6);
    else if (b >= 1000ull) snprintf(buf, cap, "%.2f kB", (double)b / 1e3);
    else snprintf(buf, cap, "%" PRIu64 " B", b);
}

static void print_tensors(const tb_gguf_t *g) {
    printf("\ntensors (%" PRId64 "):\n  %-28s %-6s %-22s %14s\n", tb_gguf_n_tensors(g), "name", "type",
           "shape", "bytes");
    for (int64_t i = 0; i < tb_gguf_n_tensors(g); i++) {
        tb_gguf_tensor_t t;
        if (tb_gguf_tensor(g, i, &t) != TB_OK) continue;
        char shape[64];
        int k = snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < t.n_dims && k > 0 && (size_t)k < sizeof shape; d++)
            k += snprintf(shape + k, sizeof shape - (size_t)k, d ? ", %" PRId64 : "%" PRId64, t.ne[d]);
        if (k > 0 && (size_t)k < sizeof shape) snprintf(shape + k, sizeof shape - (size_t)k, "]");
        printf("  %-28s %-6s %-22s %14" PRIu64 "\n", t.name, tb_type_name(t.type), shape, t.nbytes);
    }
}

static int model_info(int argc, char **argv) {
    static const struct option opts[] = {
        {"ctx", required_argument, 0, 'c'}, {"kv-type", required_argument, 0, 'k'}, {0, 0, 0, 0},
    };
    uint64_t ctx = 512;
    tb_type_t kv_type = TB_TYPE_F16;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (!parse_u64(optarg, &ctx) || ctx > INT32_MAX)
                return usage_error("info", "--ctx expects a non-negative integer, got '%s'", optarg);
            break;
        case 'k':
            if (tb_type_from_name(optarg, &kv_type) != TB_OK || (kv_type != TB_TYPE_F16 && kv_type != TB_TYPE_F32))
                return usage_error("info", "--kv-type expects f16 or f32, got '%s'", optarg);
            break;
        case ':': return usage_error("info", "option %s needs a value", argv[optind - 1]);
        default: return usage_error("info", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1) return usage_error("info", "%s", "expected exactly one model file");
    const char *path = argv[optind];
    tb_model_t *m;
    if (tb_model_load(path, &m) != TB_OK) return engine_error("info");
    tb_model_info_t in;
    tb_bytes_per_token_t bpt;
    if (tb_model_get_info(m, &in) != TB_OK ||
        tb_model_bytes_per_token(m, (int32_t)ctx, kv_type, &bpt) != TB_OK) {
        tb_model_free(m);
        return engine_error("info");
    }
    char b1[32], b2[32];
    fmt_bytes(b1, sizeof b1, in.file_bytes);
    fmt_bytes(b2, sizeof b2, in.weight_bytes);
    printf("file:            %s\n", path);
    printf("file size:       %" PRIu64 " bytes (%s), tensor data %s\n", in.file_bytes, b1, b2);
    printf("architecture:    %s\n", in.arch);
    printf("name:            %s\n", in.name);
    printf("main type:       %s\n", tb_type_name(in.main_type));
    char tern[64];
    if (tb_gguf_get_str(tb_model_gguf(m), "ternbench.ternarize", tern, sizeof tern) == TB_OK)
        printf("ternarized:      %s, post hoc (from full-precision weights)\n", tern);
    tb_clear_error();
    printf("layers:          %d\n", in.n_layer);
    printf("embedding:       %d\n", in.n_embd);
    printf("heads:           %d query, %d kv, head dim %d\n", in.n_head, in.n_head_kv, in.head_dim);
    if (in.n_ff) printf("ffn:             %d\n", in.n_ff);
    if (in.n_expert)
        printf("experts:         %d (%d used), width %d\n", in.n_expert, in.n_expert_used, in.n_ff_exp);
    if (in.n_swa)
        printf("sliding window:  %d on %d of %d layers\n", in.n_swa, in.n_swa_layers, in.n_layer);
    printf("rope:            %d dims, base %g", in.rope_dims, in.rope_base);
    if (in.n_swa) printf(" (sliding layers %g)", in.rope_base_swa);
    printf("\n");
    printf("norm eps:        %g\n", in.norm_eps);
    if (in.swiglu_clamp > 0) printf("swiglu clamp:    %g\n", in.swiglu_clamp);
    printf("vocab:           %d\n", in.n_vocab);
    printf("context (train): %d\n", in.n_ctx_train);
    printf("parameters:      %" PRId64 " total (%.3f B), %" PRId64 " active per token (%.3f B)\n",
           in.n_params, (double)in.n_params / 1e9, in.n_params_active, (double)in.n_params_active / 1e9);
    print_tensors(tb_model_gguf(m));
    printf("\nbytes read per decoded token at ctx %" PRIu64 " (KV %s):\n", ctx, tb_type_name(kv_type));
    const struct { const char *what; uint64_t v; } rows[] = {
        {"weights", bpt.weights}, {"embedding row", bpt.embd_row}, {"output head", bpt.output},
        {"kv cache", bpt.kv}, {"total", bpt.total},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fmt_bytes(b1, sizeof b1, rows[i].v);
        printf("  %-14s %14" PRIu64 "  %s\n", rows[i].what, rows[i].v, b1);
    }
    printf("\nisa:             %s (%s)\n", tb_isa_name(tb_isa_active()), tb_isa_features());
    const tb_cpu_topo_t *topo = tb_cpu_topo_host();   /* ARM: the kernel's view (docs/arm.md) */
    if (topo->features_from[0])
        printf("cpu features:    %s (%s)\n", topo->features[0] ? topo->features : "none", topo->features_from);
    if (topo->n_kinds > 0 && topo->kind[0].part >= 0) printf("cpu cores:       %s\n", topo->summary);
    printf("prefetch:        %zu bytes ahead (this CPU's default %zu), L2 stage %s\n", tb_prefetch_bytes(),
           tb_prefetch_default(), tb_prefetch_l2() ? "on" : "off");
    fmt_bytes(b1, sizeof b1, in.repack_bytes);
    printf("load:            %.1f ms, repacked layouts %" PRIu64 " bytes (%s)\n", (double)in.load_ns / 1e6,
           in.repack_bytes, b1);
    fmt_bytes(b1, sizeof b1, in.resident_bytes);
    printf("weights:         %s, %" PRIu64 " bytes (%s) in huge-page memory\n",
           in.weights_mode == TB_WEIGHTS_MMAP ? "mmap" : "copy", in.resident_bytes, b1);
    printf("split decode:    %d of %d layers (at %s threads, Wo%s cut in two column slices)\n", in.split_layers,
           in.n_layer, in.n_expert > 0 ? "2" : "2 or more", in.n_expert > 0 ? "" : " and ffn_down");
    tb_model_free(m);
    return 0;
}

/* ===================================================================== */
/* quantize                                                               */
/* ===================================================================== */

static void report_keep(void *ud, const char *name, tb_type_t kept) {
    const tb_type_t *want = ud;
    printf("keeping %s as %s: its rows do not fit %s blocks\n", name, tb_type_name(kept),
           tb_type_name(*want));
}

static int model_quantize(int argc, char **argv) {
    static const struct option opts[] = {{"type", required_argument, 0, 'T'},
                                         {"embd-type", required_argument, 0, 'E'},
                                         {"output-type", required_argument, 0, 'O'},
                                         {"ternarize", required_argument, 0, 'Z'}, {0, 0, 0, 0}};
    tb_type_t type = TB_TYPE_COUNT, embd_type = TB_TYPE_COUNT, output_type = TB_TYPE_COUNT;
    tb_ternarize_t tern = TB_TERNARIZE_NONE;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case 'T':
            if (tb_type_from_name(optarg, &type) != TB_OK || type == TB_TYPE_Q8_K)
                return usage_error("quantize", "--type expects f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, tq1_0 or tq2_0, got '%s'", optarg);
            break;
        case 'E':
        case 'O': {
            tb_type_t *dst = c == 'E' ? &embd_type : &output_type;
            if (tb_type_from_name(optarg, dst) != TB_OK || *dst == TB_TYPE_Q8_K)
                return usage_error("quantize", c == 'E'
                                   ? "--embd-type expects f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, tq1_0 or tq2_0, got '%s'"
                                   : "--output-type expects f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, tq1_0 or tq2_0, got '%s'",
                                   optarg);
            break;
        }
        case 'Z':
            if (strcmp(optarg, "absmean")) return usage_error("quantize", "--ternarize expects absmean, got '%s'", optarg);
            tern = TB_TERNARIZE_ABSMEAN;
            break;
        case ':': return usage_error("quantize", "option %s needs a value", argv[optind - 1]);
        default: return usage_error("quantize", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 2) return usage_error("quantize", "%s", "expected IN.gguf and OUT.gguf");
    if (type == TB_TYPE_COUNT) return usage_error("quantize", "%s", "--type is required");
    if (tern && type != TB_TYPE_TQ2_0 && type != TB_TYPE_TQ1_0)
        return usage_error("quantize", "--ternarize needs --type tq2_0 or tq1_0, got %s", tb_type_name(type));
    uint64_t t0 = tb_now_ns();
    guard_tmp(argv[optind + 1]);
    const tb_quantize_params_t qp = {.type = type, .embd_type = embd_type, .output_type = output_type,
                                     .ternarize = tern, .on_keep = report_keep, .ud = &type};
    if (tb_quantize_model_ex(argv[optind], argv[optind + 1], &qp) != TB_OK) return engine_error("quantize");
    printf("wrote %s (%s%s) in %.1f s\n", argv[optind + 1], tb_type_name(type),
           tern ? ", ternarized post hoc by absmean" : "", (double)(tb_now_ns() - t0) / 1e9);
    return 0;
}

/* ===================================================================== */
/* Dispatch                                                               */
/* ===================================================================== */

int cmd_model(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "ternbench model: missing subcommand\n%s", model_usage);
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) { printf("%s", model_usage); return 0; }
    if (!strcmp(sub, "synth")) return model_synth(argc - 1, argv + 1);
    if (!strcmp(sub, "info")) return model_info(argc - 1, argv + 1);
    if (!strcmp(sub, "quantize")) return model_quantize(argc - 1, argv + 1);
    fprintf(stderr, "ternbench model: unknown subcommand '%s'\n%s", sub, model_usage);
    return 2;
}
