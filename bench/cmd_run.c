/* cmd_run.c — placeholder until implemented. */
#include "commands.h"
#include <stdio.h>
int cmd_run(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
int cmd_scenario(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
