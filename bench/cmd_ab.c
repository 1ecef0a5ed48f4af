/*
 * cmd_ab.c — `ternbench ab`: two builds on one benchmark, in turns, then
 * `compare` on what they recorded.
 *
 *   ternbench ab --base BIN_A --cand BIN_B [-m F.gguf ...] [-r PAIRS]
 *                [--db FILE] [--threshold PCT] [--json | --md] -- [bench args]
 *
 * Two builds cannot share a process, so they take turns: pair p runs
 * BIN_A then BIN_B when p is even and BIN_B then BIN_A when it is odd
 * (A B B A A B ...: a drift of the machine's state charges both sides
 * alike). Each invocation is
 *     BIN bench [-m F ...] [bench args] -r 1 --db FILE
 *         --tag ab.side=base|cand --tag ab.pair=P --tag ab.session=ID
 * so each is one repetition, bracketed by bench's own probes, recorded as
 * one run. ID is new per `ab` invocation, so the final
 *     compare --base tag:ab.session=ID --base tag:ab.side=base
 *             --cand tag:ab.session=ID --cand tag:ab.side=cand
 * sees this session's runs only. The exit status is compare's (0 nothing
 * regressed, 1 something did, 2 error); a failed invocation stops the
 * session with its status (2 for bad bench arguments, else 1), keeping
 * what was recorded.
 */
#include "commands.h"
#include "facts.h"
#include "ternbench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 128

static void usage(FILE *f) {
    fprintf(f,
        "usage: ternbench ab --base BIN_A --cand BIN_B [-m F.gguf ...] [-r PAIRS] [--db FILE]\n"
        "                    [--threshold PCT] [--json | --md] -- [bench args]\n"
        "\n"
        "Runs `BIN bench ... -r 1 --db FILE --tag ab.side=base|cand --tag ab.pair=P` for both\n"
        "binaries in ABBA order, PAIRS times (default 6), then `ternbench compare` on the runs.\n"
        "  --db FILE   where both sides record (default " "results/ternbench.db" " or $TB_DB)\n"
        "  bench args  e.g. -t 2 -p 0 -n 64 (not -r, --db, --tag: ab sets them)\n"
        "exit status: compare's (0 nothing regressed, 1 something regressed, 2 error)\n");
}

static int is_exec(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* Run argv (argv[0] a path), wait; its exit status, or 1 after printing why. */
static int run_wait(char *const *argv) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) { fprintf(stderr, "ternbench ab: fork: %s\n", strerror(errno)); return 1; }
    if (pid == 0) {
        /* bench's own output goes to stderr: stdout is the comparison */
        if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) _exit(127);
        execv(argv[0], argv);
        fprintf(stderr, "ternbench ab: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) { fprintf(stderr, "ternbench ab: waitpid: %s\n", strerror(errno)); return 1; }
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "ternbench ab: %s stopped by signal %d\n", argv[0], WTERMSIG(st));
        return 1;
    }
    return WEXITSTATUS(st);
}

int cmd_ab(int argc, char **argv) {
    const char *bin[2] = {NULL, NULL}, *db = NULL, *threshold = NULL, *models[16];
    int n_models = 0, pairs = 6, json = 0, md = 0, dashdash = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) { dashdash = i; break; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--md")) { md = 1; continue; }
        static const char *const valued[] = {"--base", "--cand", "--db", "--threshold", "-r", "-m", NULL};
        int known = 0;
        for (int k = 0; valued[k]; k++) known |= !strcmp(a, valued[k]);
        if (!known) { cmd_arg_reject("ab", a, NULL); usage(stderr); return 2; }
        if (!v) { cmd_arg_missing("ab", a, NULL); usage(stderr); return 2; }
        if (!strcmp(a, "--base")) bin[0] = v;
        else if (!strcmp(a, "--cand")) bin[1] = v;
        else if (!strcmp(a, "--db")) db = v;
        else if (!strcmp(a, "--threshold")) threshold = v;
        else if (!strcmp(a, "-r")) { if (cmd_arg_int("ab", a, v, 1, 1000, &pairs)) return 2; }
        else if (!strcmp(a, "-m")) {
            if (n_models == 16) { fprintf(stderr, "ternbench ab: at most 16 -m files\n"); return 2; }
            models[n_models++] = v;
        }
        i++;
    }
    if (!bin[0] || !bin[1]) { fprintf(stderr, "ternbench ab: --base and --cand are required\n"); usage(stderr); return 2; }
    for (int k = 0; k < 2; k++)
        if (!is_exec(bin[k])) {
            fprintf(stderr, "ternbench ab: --%s %s is not an executable file\n", k ? "cand" : "base", bin[k]);
            return 2;
        }
    int n_extra = dashdash < argc ? argc - dashdash - 1 : 0;
    char **extra = argv + dashdash + 1;
    for (int i = 0; i < n_extra; i++)
        if (!strcmp(extra[i], "-r") || !strcmp(extra[i], "--db") || !strcmp(extra[i], "--tag") ||
            !strcmp(extra[i], "--json")) {
            fprintf(stderr, "ternbench ab: leave %s out of the bench arguments (ab sets -r 1, --db and --tag;"
                            " -r PAIRS goes before --)\n", extra[i]);
            return 2;
        }
    if (n_extra + 2 * n_models + 16 > MAX_ARGS) { fprintf(stderr, "ternbench ab: too many bench arguments\n"); return 2; }
    if (!db) {
        const char *env = getenv("TB_DB");
        db = env && *env ? env : "results/ternbench.db";
    }
    char session[37];
    tb_facts_uuid(session);
    char tag_session[64];
    snprintf(tag_session, sizeof tag_session, "ab.session=%s", session);
    fprintf(stderr, "ab: session %s, %d pair%s, base %s, candidate %s, into %s\n", session, pairs,
            pairs == 1 ? "" : "s", bin[0], bin[1], db);

    for (int p = 0; p < pairs; p++)
        for (int turn = 0; turn < 2; turn++) {
            int k = (p % 2 == 0) ? turn : 1 - turn;   /* even pairs A B, odd pairs B A */
            char pair_tag[32];
            snprintf(pair_tag, sizeof pair_tag, "ab.pair=%d", p);
            char *args[MAX_ARGS];
            int a = 0;
            args[a++] = (char *)bin[k];
            args[a++] = "bench";
            for (int m = 0; m < n_models; m++) { args[a++] = "-m"; args[a++] = (char *)models[m]; }
            for (int i = 0; i < n_extra; i++) args[a++] = extra[i];
            args[a++] = "-r"; args[a++] = "1";
            args[a++] = "--db"; args[a++] = (char *)db;
            args[a++] = "--tag"; args[a++] = k ? "ab.side=cand" : "ab.side=base";
            args[a++] = "--tag"; args[a++] = pair_tag;
            args[a++] = "--tag"; args[a++] = tag_session;
            args[a] = NULL;
            fprintf(stderr, "ab: pair %d/%d, %s\n", p + 1, pairs, k ? "candidate" : "base");
            int st = run_wait(args);
            if (st) {
                fprintf(stderr, "ternbench ab: %s bench (pair %d, %s) exited with status %d; runs recorded so far stay in %s\n",
                        bin[k], p + 1, k ? "candidate" : "base", st, db);
                return st == 2 ? 2 : 1;
            }
        }

    char bs[80], cs[80];
    snprintf(bs, sizeof bs, "tag:%s", tag_session);
    snprintf(cs, sizeof cs, "tag:%s", tag_session);
    char *cargs[16];
    int c = 0;
    cargs[c++] = "compare";
    cargs[c++] = "--db"; cargs[c++] = (char *)db;
    cargs[c++] = "--base"; cargs[c++] = bs;
    cargs[c++] = "--base"; cargs[c++] = "tag:ab.side=base";
    cargs[c++] = "--cand"; cargs[c++] = cs;
    cargs[c++] = "--cand"; cargs[c++] = "tag:ab.side=cand";
    if (threshold) { cargs[c++] = "--threshold"; cargs[c++] = (char *)threshold; }
    if (json) cargs[c++] = "--json";
    if (md) cargs[c++] = "--md";
    cargs[c] = NULL;
    return cmd_compare(c, cargs);
}
