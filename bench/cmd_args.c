/*
 * cmd_args.c — command-line value parsing and rejection shared by every
 * subcommand (declared in commands.h).
 *
 * The rules: a number is digits with an optional leading '-', nothing else
 * (no empty value, no blanks, no trailing text, no value out of range); an
 * argument a command does not know is named in the message ("unknown option
 * '--x'" or "unexpected argument 'x'") before the usage, exit status 2.
 */
#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_arg_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out) {
    long long x = 0;
    const char *why = cmd_parse_ll(v, lo, hi, &x);
    if (why) {
        if (!v) fprintf(stderr, "ternbench %s: option %s needs a value\n", cmd, opt);
        else fprintf(stderr, "ternbench %s: %s expects an integer in %d..%d, got %s%s%s\n", cmd, opt, lo, hi,
                     *v ? "'" : "", *v ? v : "an empty value", *v ? "'" : "");
        return 2;
    }
    *out = (int)x;
    return 0;
}

const char *cmd_parse_ll(const char *v, long long lo, long long hi, long long *out) {
    if (!v) return "a value";
    if (!*v) return "a value, got an empty one";
    const char *d = v + (*v == '-');
    if (*d < '0' || *d > '9') return "an integer";   /* also refuses blanks and '+' */
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end) return "an integer";
    if (errno == ERANGE || x < lo || x > hi) return "an integer in range";
    *out = x;
    return NULL;
}

int cmd_arg_reject(const char *cmd, const char *arg, const char *usage) {
    if (arg[0] == '-' && arg[1]) fprintf(stderr, "ternbench %s: unknown option '%s'\n", cmd, arg);
    else fprintf(stderr, "ternbench %s: unexpected argument '%s'\n", cmd, arg);
    if (usage) fputs(usage, stderr);
    return 2;
}

int cmd_arg_missing(const char *cmd, const char *opt, const char *usage) {
    fprintf(stderr, "ternbench %s: option %s needs a value\n", cmd, opt);
    if (usage) fputs(usage, stderr);
    return 2;
}
