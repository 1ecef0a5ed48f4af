/*
 * commands.h — the ternbench subcommands. Each lives in its own file and is
 * a thin layer over the engine (ternbench.h), the results store and the
 * report generator. Each returns the process exit status:
 * 0 ok, 1 failure while running, 2 usage or input error.
 */
#ifndef TB_BENCH_COMMANDS_H
#define TB_BENCH_COMMANDS_H

typedef int (*tb_cmd_fn)(int argc, char **argv);   /* argv[0] is the subcommand name */

int cmd_model(int argc, char **argv);        /* model synth|info|quantize   */
int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_detokenize(int argc, char **argv);
int cmd_bandwidth(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_scenario(int argc, char **argv);     /* scenario explain FILE       */
int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_metrics(int argc, char **argv);      /* the metric registry         */
int cmd_count(int argc, char **argv);        /* cmd_count.c: callgrind counts */
int cmd_compare(int argc, char **argv);      /* cmd_compare.c: verdicts       */
int cmd_ab(int argc, char **argv);           /* cmd_ab.c: two builds in turns */
int cmd_devices(int argc, char **argv);     /* devices [show ID]           */
int cmd_claim(int argc, char **argv);       /* claim ..., claim calibrate  */
int cmd_import(int argc, char **argv);       /* import FILE (llama-bench, mlx-lm) */
int cmd_merge(int argc, char **argv);        /* merge A.db ... --into ALL.db  */
int cmd_quality(int argc, char **argv);      /* quality against a reference */

/* Print s to stdout as a JSON string (quoted, escaped); cmd_results.c. */
void cmd_json_str(const char *s);

/* Argument helpers shared by every command (cmd_args.c). */
/* Parse option `opt`'s value v as an integer in [lo, hi] into *out; 0, or 2
 * after printing the usage error (naming cmd, opt and v; v NULL: the option
 * needs a value; v "": an empty value, never taken as 0). */
int cmd_arg_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out);
/* Parse v as a decimal integer in [lo, hi]: digits with an optional leading
 * '-', nothing before or after, not empty. NULL on success (*out set), else
 * what was expected ("an integer", ...). */
const char *cmd_parse_ll(const char *v, long long lo, long long hi, long long *out);
/* An argument the command does not take: print "ternbench CMD: unknown
 * option 'ARG'" (ARG starts with '-') or "unexpected argument 'ARG'", then
 * `usage` (may be NULL: the caller prints it), to stderr. Returns 2. */
int cmd_arg_reject(const char *cmd, const char *arg, const char *usage);
/* An option given last without its value: "option OPT needs a value", then
 * `usage` (may be NULL). Returns 2. */
int cmd_arg_missing(const char *cmd, const char *opt, const char *usage);

/* Shared by the measurement commands (cmd_perf.c). */
/* The read-bandwidth roofline with `threads` threads (tb_bandwidth_probe
 * over 256 MiB, best of 5); 0, or the engine's code after printing it. */
int cmd_probe(int threads, double *gbps);
/* The slowest of `threads` threads' effective core clock in GHz now
 * (tb_cpu_probe) and vector throughput in ops per ns (tb_cpu_probe_vec),
 * best of 3 passes each; 0, or the engine's code after printing it. */
int cmd_cpu_probe(int threads, double *ghz_min, double *vec_min);

/* Run tags from the command line (cmd_tags.c): --tag KEY=VALUE, then the
 * engine's provenance tags (prefetch_bytes, prefetch_l2) unless given. */
#define CMD_MAX_TAGS 64
typedef struct cmd_tags {
    const char *keys[CMD_MAX_TAGS + 2], *vals[CMD_MAX_TAGS + 2];
    char *owned[CMD_MAX_TAGS];
    int n;
    char pf_val[24];
} cmd_tags_t;
/* 0, or the exit status after printing the error (naming cmd). */
int  cmd_tag_add(cmd_tags_t *t, const char *cmd, const char *kv);
void cmd_tags_add_engine(cmd_tags_t *t);
void cmd_tags_free(cmd_tags_t *t);

#endif
