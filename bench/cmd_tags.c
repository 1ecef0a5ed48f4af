/*
 * cmd_tags.c — run tags given on the command line (`--tag KEY=VALUE`),
 * shared by the commands that record runs (run, bench).
 */
#include "commands.h"
#include "ternbench.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_tag_add(cmd_tags_t *t, const char *cmd, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        fprintf(stderr, "ternbench %s: --tag %s: expected KEY=VALUE\n", cmd, kv);
        return 2;
    }
    /* keys are names (report --tag K=V selects by them); no control
     * characters anywhere (they would break list/show/export lines) */
    size_t klen = (size_t)(eq - kv);
    size_t at = strspn(kv, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
    for (const char *c = eq + 1; at == klen && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) at = (size_t)(c - kv);
    if (at != klen) {
        fprintf(stderr, "ternbench %s: --tag: byte %zu: expected KEY=VALUE with KEY of letters, "
                        "digits, '_', '.' or '-' and VALUE without control characters\n", cmd, at);
        return 2;
    }
    if (t->n == CMD_MAX_TAGS) {
        fprintf(stderr, "ternbench %s: at most %d --tag options\n", cmd, CMD_MAX_TAGS);
        return 2;
    }
    if (!(t->owned[t->n] = strndup(kv, klen))) {
        fprintf(stderr, "ternbench %s: out of memory\n", cmd);
        return 1;
    }
    t->keys[t->n] = t->owned[t->n];
    t->vals[t->n++] = eq + 1;
    return 0;
}

void cmd_tags_add_engine(cmd_tags_t *t) {
    /* provenance: the engine's software prefetch distance (--prefetch,
     * TB_PREFETCH or the CPU's default) and its L2 stage as the run tags
     * prefetch_bytes and prefetch_l2, unless --tag set those keys */
    snprintf(t->pf_val, sizeof t->pf_val, "%zu", tb_prefetch_bytes());
    const struct { const char *key, *val; } pf[] = {{"prefetch_bytes", t->pf_val},
                                                   {"prefetch_l2", tb_prefetch_l2() ? "1" : "0"}};
    for (size_t j = 0; j < sizeof pf / sizeof pf[0] && t->n < CMD_MAX_TAGS + 2; j++) {
        bool tagged = false;
        for (int i = 0; i < t->n; i++) tagged |= !strcmp(t->keys[i], pf[j].key);
        if (!tagged) {
            t->keys[t->n] = pf[j].key;
            t->vals[t->n++] = pf[j].val;
        }
    }
}

void cmd_tags_free(cmd_tags_t *t) {
    for (int i = 0; i < CMD_MAX_TAGS; i++) free(t->owned[i]);
    memset(t, 0, sizeof *t);
}
