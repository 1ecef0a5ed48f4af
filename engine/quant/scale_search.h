/*
 * scale_search.h — scale searches shared by the K-quant quantizers
 * (internal to quant/). They decide the per-sub-block scale (and min)
 * that Q4_K and Q6_K then round to their stored precision.
 */
#ifndef TB_QUANT_SCALE_SEARCH_H
#define TB_QUANT_SCALE_SEARCH_H

#include <stdint.h>

/* Asymmetric fit x_i ≈ scale * L_i - min with L_i in 0..nmax and min >= 0,
 * minimising sum w_i (scale * L_i - min - x_i)^2.
 * Tries the plain range mapping and then nstep+1 slightly stretched grids
 * (nmax + rmin + rdelta * k) / (max - min); for each one the optimal scale
 * and offset are solved by weighted least squares given the codes.
 * Writes the codes to L (n), the min (a non-negative number) to *min_out,
 * and returns the scale (0 for a constant block, codes then all 0).
 * aux is scratch of n bytes. */
float tb_search_scale_min(int n, int nmax, const float *x, const float *w,
                          uint8_t *L, float *min_out, uint8_t *aux,
                          float rmin, float rdelta, int nstep);

/* Symmetric fit x_i ≈ scale * (L_i - nmax) with L_i - nmax in -nmax..nmax-1,
 * weights x_i^2 (large values matter most). The grid is anchored on the
 * signed value of largest magnitude m (iscale = -(nmax + 0.1 k) / m for
 * k = -9..9); the scale of each grid is refit by least squares and the best
 * kept. Writes biased codes to L (n) and returns the scale, which is signed
 * (negative when m > 0). Returns 0 and zero codes for a (near) zero block. */
float tb_search_scale_sym(int n, int nmax, const float *x, uint8_t *L);

#endif
