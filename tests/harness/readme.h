/*
 * readme.h — whether scenarios/README.md carries a generated block
 * verbatim: "<!-- NAME:begin -->\n" + what gen writes + "<!-- NAME:end -->"
 * (the key reference, the metric table). For test_scenario and test_metrics.
 */
#ifndef TB_TESTS_HARNESS_README_H
#define TB_TESTS_HARNESS_README_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -1 when the README cannot be read, else 1 when it holds the block, 0 not. */
static inline int readme_has_block(const char *root, const char *name, void (*gen)(FILE *)) {
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/README.md", root);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    static char readme[1 << 17];
    size_t n = fread(readme, 1, sizeof readme - 1, f);
    fclose(f);
    readme[n] = '\0';
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return -1;
    fprintf(m, "<!-- %s:begin -->\n", name);
    gen(m);
    fprintf(m, "<!-- %s:end -->", name);
    fclose(m);
    int found = strstr(readme, buf) != NULL;
    free(buf);
    return found;
}

#endif
