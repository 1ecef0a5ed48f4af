/*
 * cmd_metrics.c — `ternbench metrics [--json]`: the metric registry (the
 * results contract, harness/metrics.h) as the manual's Markdown table, or
 * as JSON for scripts.
 */
#include "commands.h"
#include "metrics.h"

#include <stdio.h>
#include <string.h>

int cmd_metrics(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--md")) json = 0;
        else {
            fprintf(stderr, "ternbench metrics: unknown option '%s'\nusage: ternbench metrics [--md | --json]\n",
                    argv[i]);
            return 2;
        }
    }
    if (!json) {
        tb_metrics_markdown(stdout);
        return 0;
    }
    printf("[");
    for (int i = 0; i < TB_M_COUNT; i++) {
        const tb_metric_def_t *d = &tb_metrics[i];
        printf("%s\n  {\"name\": \"%s\", \"unit\": ", i ? "," : "", d->name);
        cmd_json_str(d->unit);
        printf(", \"better\": \"%s\", \"kinds\": %u, \"help\": ",
               d->better == TB_BETTER_HIGHER ? "higher" : d->better == TB_BETTER_LOWER ? "lower" : "none", d->kinds);
        cmd_json_str(d->help);
        printf("}");
    }
    printf("\n]\n");
    return 0;
}
