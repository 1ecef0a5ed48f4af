#include "commands.h"
#include <stdio.h>
int cmd_compare(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "todo\n"); return 2; }
