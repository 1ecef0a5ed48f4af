/*
 * workers.c — per-thread scratch and error capture for the pool jobs of
 * synth.c and quantize_model.c (see synth.h).
 */
#include "synth/synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int synth_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return (int)TB_MAX(1, TB_MIN(n, SYNTH_MAX_THREADS));
}

bool synth_workers_alloc(synth_workers_t *w, int64_t ne0) {
    bool ok = true;
    for (int i = 0; i < SYNTH_MAX_THREADS && ok; i++)
        ok = (w->scratch[i] = malloc((size_t)ne0 * sizeof(float))) != NULL;
    return ok;
}

void synth_workers_free(synth_workers_t *w) {
    for (int i = 0; i < SYNTH_MAX_THREADS; i++) free(w->scratch[i]);
}

void synth_workers_fail(synth_workers_t *w, int ith, int rc) {
    w->rc[ith] = rc;
    snprintf(w->msg[ith], sizeof w->msg[ith], "%s", tb_last_error());
}

int synth_workers_failed(const synth_workers_t *w) {
    for (int i = 0; i < SYNTH_MAX_THREADS; i++)
        if (w->rc[i] != TB_OK) return i;
    return -1;
}
