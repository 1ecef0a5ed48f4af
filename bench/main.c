/*
 * main.c — the ternbench driver: a table of git-style subcommands.
 */
#include "commands.h"
#include "ternbench.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    tb_cmd_fn fn;
    const char *help;
} commands[] = {
    {"model",      cmd_model,      "synth|info|quantize  synthesize, inspect or requantize a GGUF model"},
    {"generate",   cmd_generate,   "-m F.gguf [-p TEXT] [-n N] ...  stream generated text or ids"},
    {"tokenize",   cmd_tokenize,   "-m F.gguf (--text T | --file F) [--ids-only]"},
    {"detokenize", cmd_detokenize, "-m F.gguf IDS...  ids back to text"},
    {"bandwidth",  cmd_bandwidth,  "[-t N] [-r R] [--json]  this machine's read bandwidth (the roofline)"},
    {"kernels",    cmd_kernels,    "[--format F] [--isa I] [-t N] [--shape RxC] [--hot] [--json]  per-format kernel throughput"},
    {"bench",      cmd_bench,      "-m F.gguf [-t N] [-p P] [-n N] [-r R] [--json]  quick prefill/decode benchmark"},
    {"run",        cmd_run,        "SCENARIO... [--db PATH] [--tag K=V]  run scenario files into SQLite"},
    {"scenario",   cmd_scenario,   "explain FILE  show the resolved plan of a scenario"},
    {"list",       cmd_list,       "[--db PATH]  list recorded runs"},
    {"show",       cmd_show,       "RUN [--db PATH]  one run in detail"},
    {"export",     cmd_export,     "[--format csv|json|md] [--run ID...]  export measurements"},
    {"metrics",    cmd_metrics,    "[--md|--json]  every metric a repetition records: unit, better direction, kinds"},
    {"count",      cmd_count,      "[-m F.gguf | --kernels] [--baseline FILE] [--json]  instructions per token and kernel (callgrind)"},
    {"compare",    cmd_compare,    "--base SEL --cand SEL [--db FILE] [--threshold PCT] [--md]  verdicts between recorded runs"},
    {"ab",         cmd_ab,         "--base BIN_A --cand BIN_B [-r R] [--db FILE] -- [bench args]  A/B two builds, then compare"},
    {"devices",    cmd_devices,    "[--json] | show ID|this  device profiles (bandwidth, compute, sources)"},
    {"claim",      cmd_claim,      "--model M --device D [--claimed TOK_S] ...  roofline, projection, verdict"},
    {"import",     cmd_import,     "FILE [--format F] [--db PATH]  import llama-bench / mlx-lm results as runs"},
    {"merge",      cmd_merge,      "A.db B.db ... --into ALL.db  merge results databases (runs keyed by uuid)"},
    {"quality",    cmd_quality,    "-m T.gguf (--ref R.gguf | --ref-logits F) --text F  perplexity, KL divergence, top-1"},
    {"report",     cmd_report,     "[--db PATH] [--run ID...|--tag K=V|--last N] --out DIR  plots and tables"},
};

static void usage(FILE *f) {
    fprintf(f, "ternbench %s — benchmark and reproduce on-device LLM speed claims\n\n"
               "usage: ternbench [--isa I] [--prefetch BYTES] [--cpus LIST] COMMAND [ARGS]\n\ncommands:\n", TB_VERSION_STRING);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\n--isa ref|generic|avx2|avx512|neon|dotprod|i8mm caps the kernel tier for the command (as TB_ISA=I does)\n"
               "--prefetch BYTES  software prefetch distance of the streaming matvecs: 0 (none) or a\n"
               "                  multiple of 64 up to %d (as TB_PREFETCH=BYTES does; default %zu on this CPU)\n"
               "--cpus LIST       pin thread i to the i-th CPU of LIST (0-3,6; as TB_CPUS=LIST does; default:\n"
               "                  on ARM the fastest cores first where they are of several kinds, else unpinned)\n",
            TB_PREFETCH_MAX, tb_prefetch_default());
}

/* A command's status, made a failure when its standard output could not be
 * written (full disk, closed file): output lost is never a silent success. */
static int finish_stdout(const char *cmd, int status) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return status;
    fprintf(stderr, "ternbench %s: cannot write standard output: %s\n", cmd,
            errno ? strerror(errno) : "write error");
    return status ? status : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) { printf("ternbench %s\n", TB_VERSION_STRING); return 0; }
    /* the global options, in any order, before the command */
    while (argc >= 2 && (!strcmp(argv[1], "--isa") || !strcmp(argv[1], "--prefetch") || !strcmp(argv[1], "--cpus"))) {
        if (argc < 4) { usage(stderr); return 2; }
        if (!strcmp(argv[1], "--isa")) {
            tb_isa_t isa;
            if (tb_isa_from_name(argv[2], &isa) != TB_OK || tb_isa_set(isa) != TB_OK) {
                fprintf(stderr, "ternbench: --isa %s: %s\n", argv[2], tb_last_error());
                return 2;
            }
        } else if (!strcmp(argv[1], "--cpus")) {
            if (tb_cpus_set_str(argv[2]) != TB_OK) {
                fprintf(stderr, "ternbench: --cpus %s: %s\n", argv[2], tb_last_error());
                return 2;
            }
        } else if (tb_prefetch_set_str(argv[2]) != TB_OK) {
            fprintf(stderr, "ternbench: --prefetch %s: %s\n", argv[2], tb_last_error());
            return 2;
        }
        argc -= 2;
        argv += 2;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return finish_stdout(argv[1], commands[i].fn(argc - 1, argv + 1));
    fprintf(stderr, "ternbench: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
