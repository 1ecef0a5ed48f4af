#include "commands.h"
#include <stdio.h>
int cmd_ab(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "todo\n"); return 2; }
