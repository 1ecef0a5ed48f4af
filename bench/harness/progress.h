/*
 * progress.h — run progress on stderr: a bar with ETA on a terminal, plain
 * lines when not a TTY, nothing when quiet.
 */
#ifndef TB_HARNESS_PROGRESS_H
#define TB_HARNESS_PROGRESS_H

#include <stdint.h>

typedef struct tb_progress {
    int tty, quiet;
    uint64_t t0_ns;
    int64_t total, done;     /* work units (repetitions, warm-ups included) */
    int bar_shown;
    uint64_t last_draw_ns;
} tb_progress_t;

void tb_progress_init(tb_progress_t *p, int64_t total, int quiet);
/* Advance by n units; `what` names the current test. */
void tb_progress_step(tb_progress_t *p, int64_t n, const char *what);
/* Show progress inside the current unit (frac in [0, 1)); redraws at most
 * every 200 ms. */
void tb_progress_partial(tb_progress_t *p, double frac, const char *what);
/* A plain message line (the bar, if any, is redrawn after it). */
void tb_progress_note(tb_progress_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tb_progress_done(tb_progress_t *p);

#endif
