/*
 * progress.c — progress bar with ETA (see progress.h).
 */
#include "progress.h"
#include "ternbench.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void tb_progress_init(tb_progress_t *p, int64_t total, int quiet) {
    p->tty = isatty(STDERR_FILENO);
    p->quiet = quiet;
    p->t0_ns = tb_now_ns();
    p->total = total > 0 ? total : 1;
    p->done = 0;
    p->bar_shown = 0;
    p->last_draw_ns = 0;
}

/* "1m05s" / "12s" */
static void fmt_secs(double s, char *buf, size_t cap) {
    if (s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 60) snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, cap, "%lds", t);
}

/* Draw the bar at `units` done (fractional). */
static void draw(tb_progress_t *p, double units, const char *what) {
    if (p->quiet || !p->tty) return;   /* non-TTY output is one note per test */
    p->last_draw_ns = tb_now_ns();
    double el = (double)(p->last_draw_ns - p->t0_ns) / 1e9;
    double frac = units / (double)p->total;
    if (frac > 1) frac = 1;
    char eta[32] = "?", elapsed[32];
    if (frac > 0) fmt_secs(el / frac - el, eta, sizeof eta);
    fmt_secs(el, elapsed, sizeof elapsed);
    enum { W = 30 };
    char bar[W + 1];
    int fill = (int)(frac * W);
    for (int i = 0; i < W; i++) bar[i] = i < fill ? '#' : '.';
    bar[W] = '\0';
    fprintf(stderr, "\r\033[K[%s] %3d%%  %s  elapsed %s  eta %s", bar, (int)(frac * 100), what,
            elapsed, eta);
    fflush(stderr);
    p->bar_shown = 1;
}

void tb_progress_step(tb_progress_t *p, int64_t n, const char *what) {
    p->done += n;
    if (p->done > p->total) p->done = p->total;
    draw(p, (double)p->done, what);
}

void tb_progress_partial(tb_progress_t *p, double frac, const char *what) {
    if (p->quiet || !p->tty || tb_now_ns() - p->last_draw_ns < 200000000ull) return;
    if (frac < 0) frac = 0;
    if (frac > 0.999) frac = 0.999;
    draw(p, (double)p->done + frac, what);
}

void tb_progress_note(tb_progress_t *p, const char *fmt, ...) {
    if (p->quiet) return;
    if (p->bar_shown) fprintf(stderr, "\r\033[K");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    p->bar_shown = 0;
}

void tb_progress_done(tb_progress_t *p) {
    if (p->bar_shown) fprintf(stderr, "\r\033[K");
    p->bar_shown = 0;
}
