/* cmd_generate.c — placeholder until implemented. */
#include "commands.h"
#include <stdio.h>
int cmd_generate(int argc, char **argv) { (void)argc; fprintf(stderr, "ternbench %s: not implemented yet\n", argv[0]); return 2; }
