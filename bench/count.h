/*
 * count.h — what `ternbench count` measures (cmd_count.c) and its baseline
 * file (count_baseline.c).
 */
#ifndef TB_BENCH_COUNT_H
#define TB_BENCH_COUNT_H

#include <stdint.h>

#define NAME_LEN 160

typedef struct count_entry {
    char name[NAME_LEN];     /* "kernel/matvec/tq2_0/2048x2048", "model/llama-tiny/decode8" */
    const char *unit;        /* "instr/call", "instr/token"                                */
    const char *kind;        /* test kind when recorded: "decode" or "prefill"             */
    int units;               /* calls or tokens in the measured region                     */
    uint64_t instr;          /* counted: instructions in the region                        */
    int have;
} count_entry_t;

static inline double count_per_unit(const count_entry_t *e) { return (double)e->instr / (double)e->units; }

/* Write the n entries as a baseline file (header with how to regenerate,
 * the tier and the compiler; one line per entry with threshold_pct);
 * 0, or 1 after printing why not. */
int count_baseline_write(const char *path, const count_entry_t *e, int n, const char *isa, double threshold);

/* Read the baseline file only, to refuse a bad one before counting:
 * 0, or 2 after printing the file, line and what was wrong. */
int count_baseline_validate(const char *path);

/* Compare the n counted entries with the baseline file and print a table
 * (or, json, one object): per entry the baseline and current instructions
 * per unit, the change and the verdict against the entry's threshold (the
 * file's, else `threshold`, a fraction). Returns 0 when nothing regressed,
 * 1 when an entry did, 2 when the file cannot be read or was made at
 * another tier. */
int count_baseline_check(const char *path, const count_entry_t *e, int n, double threshold,
                         const char *isa, int json);

#endif
