/* cmd_perf.c — placeholder until implemented. */
#include "commands.h"
#include <stdio.h>
int cmd_bandwidth(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
int cmd_kernels(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
int cmd_bench(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
