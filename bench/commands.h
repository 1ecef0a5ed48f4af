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
int cmd_quality(int argc, char **argv);      /* quality against a reference */

/* Print s to stdout as a JSON string (quoted, escaped); cmd_results.c. */
void cmd_json_str(const char *s);

/* Shared by the measurement commands (cmd_perf.c). */
/* Parse option `opt`'s value v as an integer in [lo, hi] into *out; 0, or 2
 * after printing the usage error (naming cmd, opt and v). */
int cmd_arg_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out);
/* The read-bandwidth roofline with `threads` threads (tb_bandwidth_probe
 * over 256 MiB, best of 5); 0, or the engine's code after printing it. */
int cmd_probe(int threads, double *gbps);
/* The slowest of `threads` threads' effective core clock in GHz now
 * (tb_cpu_probe) and vector throughput in ops per ns (tb_cpu_probe_vec),
 * best of 3 passes each; 0, or the engine's code after printing it. */
int cmd_cpu_probe(int threads, double *ghz_min, double *vec_min);

#endif
