/*
 * fixture.h — a results database for the report tests, built with plain
 * SQL inserts against results/schema.sql (independent of the harness).
 *
 * Runs (ids fixed):
 *   1  tiny tq2_0, build A, tags format=tq2_0 suite=fixture, bandwidth 20/19 GB/s
 *      prefill, decode (with roofline_pct), generate (token events, energy),
 *      sustained (window_tok_per_s over 12 windows of 5 s, temperature and
 *      CPU clock samples with a clock dip: throttled)
 *   2  tiny q4_0,  build A, tags format=q4_0, bandwidth 20.5/20 GB/s
 *      prefill, decode, generate (token events), sustained (token events only)
 *   3  tiny f16,   build A, tags format=f16, no bandwidth probe;
 *      prefill/decode stored as summaries only (prefill as _median/_stddev,
 *      decode as the plain metric plus :stddev/:max at repetition -1)
 *   4  tiny tq2_0, build B, tags format=tq2_0 commit=B; prefill, decode
 *   5  a failed run without model or tests
 *
 * Values follow the formulas below so tests can compute expected numbers
 * independently of the report code.
 */
#ifndef TB_TESTS_REPORT_FIXTURE_H
#define TB_TESTS_REPORT_FIXTURE_H

#include <stddef.h>

/* Speed factor of run 1..4 (tq2_0, q4_0, f16, tq2_0@B). */
double fx_factor(int run);
/* prefill tok/s of run, prompt n, repetition rep (0..2). */
double fx_prefill(int run, int n, int rep);
/* decode tok/s of run at depth d, repetition rep (0..2). */
double fx_decode(int run, int depth, int rep);

/* Build the database at path from the schema in $TB_SOURCE_ROOT.
 * Returns 0 on success, -1 with a message on stderr. */
int fx_build(const char *path);

/* mkdtemp under $TMPDIR (or /tmp) into buf; 0 ok. */
int fx_tempdir(char *buf, size_t n);
/* rm -r of a directory tree made by the test (no symlinks followed). */
void fx_rmtree(const char *dir);
/* Whole file into a NUL-terminated malloc'd buffer, NULL if unreadable. */
char *fx_slurp(const char *path, size_t *len);

#endif
