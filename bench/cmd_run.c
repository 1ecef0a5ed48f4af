/*
 * cmd_run.c — `ternbench run SCENARIO... [--db PATH] [--tag K=V]... [-q]`
 * and `ternbench scenario explain|check|keys`.
 *
 * Every scenario is parsed and validated before anything is recorded: a bad
 * file is "FILE:LINE: message" and exit status 2. Exit status 1 when a test
 * failed, 130 when interrupted (SIGINT/SIGTERM: the repetition in flight is
 * abandoned, what finished is kept, the run is marked interrupted).
 */
#include "commands.h"
#include "runner.h"
#include "scenario.h"
#include "store.h"
#include "ternbench.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop_flag;

/* First signal: stop cleanly (the runner polls the flag between tokens).
 * Second: give up at once; the next open marks the run interrupted. */
static void on_signal(int sig) {
    if (stop_flag) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_flag = 1;
}

static const char run_usage_text[] = "usage: ternbench run SCENARIO.ini... [--db PATH] [--tag KEY=VALUE]... [-q]\n";

static int run_usage(void) {
    fputs(run_usage_text, stderr);
    return 2;
}

int cmd_run(int argc, char **argv) {
    const char *db = tb_store_default_path();
    const char **files = calloc((size_t)argc, sizeof *files);
    cmd_tags_t tags = {0};
    int n_files = 0, quiet = 0, status = 0;
    tb_plan_t *plans = NULL;
    int n_plans = 0;
    tb_store_t *store = NULL;
    if (!files) { fprintf(stderr, "ternbench run: out of memory\n"); status = 1; goto out; }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--db") || !strcmp(a, "--tag")) && i + 1 >= argc) {
            status = cmd_arg_missing("run", a, run_usage_text);
            goto out;
        }
        if (!strcmp(a, "--db")) db = argv[++i];
        else if (!strcmp(a, "--tag")) {
            if ((status = cmd_tag_add(&tags, "run", argv[++i]))) goto out;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { run_usage(); status = 0; goto out; }
        else if (a[0] == '-') { status = cmd_arg_reject("run", a, run_usage_text); goto out; }
        else files[n_files++] = a;
    }
    cmd_tags_add_engine(&tags);   /* prefetch_bytes, prefetch_l2 unless --tag set them */
    if (n_files == 0) { status = run_usage(); goto out; }

    /* parse everything first: a bad scenario records nothing */
    plans = calloc((size_t)n_files, sizeof *plans);
    if (!plans) { status = 1; goto out; }
    for (int i = 0; i < n_files; i++, n_plans++) {
        if (tb_plan_load(files[i], &plans[i]) != TB_OK) {
            fprintf(stderr, "%s\n", tb_last_error());
            n_plans++;
            status = 2;
            goto out;
        }
    }

    int n_rec = 0;
    if (tb_store_open(db, &store, &n_rec) != TB_OK) {
        fprintf(stderr, "ternbench run: %s\n", tb_last_error());
        status = 1;
        goto out;
    }
    if (n_rec > 0 && !quiet)
        fprintf(stderr, "ternbench run: marked %d run(s) left by dead processes as interrupted\n", n_rec);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    for (int i = 0; i < n_plans && !stop_flag; i++) {
        /* [protocol] interleave = rep|token: the types as groups taking turns, else one by one;
         * [engine] kind lists engines: each type is one member per engine of its group */
        const int nv = tb_plan_n_variants(&plans[i]), ne = tb_plan_n_engines(&plans[i]);
        const int il = (int)plans[i].protocol.v[K_PROTO_INTERLEAVE].i;
        const int per = il && nv > 1 ? TB_GROUP_MAX / ne : 1;
        for (int v = 0; v < nv && !stop_flag; v += per) {
            const int nt = nv - v < per ? nv - v : per, n = nt * ne;
            const tb_plan_t *pp[TB_GROUP_MAX];
            int vars[TB_GROUP_MAX], eng[TB_GROUP_MAX];
            for (int k = 0; k < n; k++) {
                pp[k] = &plans[i];
                vars[k] = v + k / ne;
                eng[k] = tb_plan_engine(&plans[i], k % ne);
            }
            tb_run_opts_t o = {.quiet = quiet, .n_tags = tags.n, .tag_keys = tags.keys,
                               .tag_values = tags.vals, .stop = &stop_flag, .summary = stdout,
                               .variant = v, .interleave = il == 2 ? TB_INTERLEAVE_TOKEN : TB_INTERLEAVE_REP,
                               .engines = eng};
            tb_run_result_t res[TB_GROUP_MAX];
            if (tb_runner_run_group(pp, vars, n, store, &o, res) != TB_OK) {
                fprintf(stderr, "ternbench run: %s: %s\n", plans[i].path, tb_last_error());
                status = status ? status : 1;
                continue;
            }
            fflush(stdout);
            for (int k = 0; k < n; k++) {
                if (res[k].interrupted) status = 130;
                else if (res[k].n_failed && status == 0) status = 1;
            }
        }
    }
    if (stop_flag) {
        if (!quiet) fprintf(stderr, "ternbench run: interrupted; completed repetitions are kept in %s\n", db);
        status = 130;
    }
out:
    tb_store_close(store);
    for (int i = 0; i < n_plans; i++) tb_plan_free(&plans[i]);
    free(plans);
    cmd_tags_free(&tags);
    free(files);
    return status;
}

/* ===================================================================== */
/* scenario explain | check | keys                                        */
/* ===================================================================== */

static const char scenario_usage_text[] =
    "usage: ternbench scenario explain FILE   resolved plan, every default shown\n"
    "       ternbench scenario check FILE...  validate, flag tests that cannot run; print the hash\n"
    "       ternbench scenario normalize FILE the normalized text stored with runs\n"
    "       ternbench scenario keys           markdown reference of every key\n";

static int scenario_usage(void) {
    fputs(scenario_usage_text, stderr);
    return 2;
}

int cmd_scenario(int argc, char **argv) {
    if (argc < 2) return scenario_usage();
    const char *sub = argv[1];
    if (!strcmp(sub, "keys")) {
        if (argc > 2) return cmd_arg_reject("scenario keys", argv[2], scenario_usage_text);
        tb_scenario_keys_markdown(stdout);
        return 0;
    }
    bool explain = !strcmp(sub, "explain"), check = !strcmp(sub, "check"),
         norm = !strcmp(sub, "normalize");
    if (!explain && !check && !norm) {
        fprintf(stderr, "ternbench scenario: unknown subcommand '%s'\n", sub);
        return scenario_usage();
    }
    for (int i = 2; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1]) return cmd_arg_reject("scenario", argv[i], scenario_usage_text);
    if (argc < 3) {
        fprintf(stderr, "ternbench scenario %s: no FILE given\n", sub);
        return scenario_usage();
    }
    if ((explain || norm) && argc != 3) return cmd_arg_reject("scenario", argv[3], scenario_usage_text);
    int status = 0;
    for (int i = 2; i < argc; i++) {
        tb_plan_t p;
        if (tb_plan_load(argv[i], &p) != TB_OK) {
            fprintf(stderr, "%s\n", tb_last_error());
            tb_plan_free(&p);
            status = 2;
            continue;
        }
        if (explain) tb_plan_explain(&p, stdout);
        else if (norm) fputs(p.normalized, stdout);
        else if (tb_plan_check(&p, stderr) > 0) status = 2;
        else printf("%s: ok (%d test sections, sha256 %s)\n", argv[i], p.n_tests, p.hash);
        tb_plan_free(&p);
    }
    return status;
}
