/* cmd_results.c — placeholder until implemented. */
#include "commands.h"
#include <stdio.h>
int cmd_list(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
int cmd_show(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
int cmd_export(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
