/*
 * kquant_scales.h — portable helpers shared by the Q4_K / Q6_K kernels of
 * every tier (generic, x86, NEON): the 12-byte Q4_K scale/min packing
 * unpacked in four 32-bit word operations instead of eight branches.
 */
#ifndef TB_KQUANT_SCALES_H
#define TB_KQUANT_SCALES_H

#include "quant/quant.h"

/* Unpack the 8 six-bit scales and 8 six-bit mins of a Q4_K block (the
 * `scales` field, 12 bytes) into out[0..7] = sc_0..7 and out[8..15] =
 * m_0..7, the values tb_q4_K_scale_min returns. With u0, u1, u2 the three
 * little-endian words of the field (byte b of a word is sub-block b):
 *   sc_0..3 = u0 & 63            m_0..3 = u1 & 63
 *   sc_4..7 = (u2 & 15) | (u0 >> 6) << 4
 *   m_4..7  = (u2 >> 4) | (u1 >> 6) << 4                                 */
static inline void tb_q4_K_unpack_scales(const uint8_t *scales, uint8_t out[16]) {
    uint32_t u[3], v[4];
    memcpy(u, scales, sizeof u);
    v[0] = u[0] & 0x3f3f3f3fu;
    v[1] = (u[2] & 0x0f0f0f0fu) | ((u[0] >> 2) & 0x30303030u);
    v[2] = u[1] & 0x3f3f3f3fu;
    v[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | ((u[1] >> 2) & 0x30303030u);
    memcpy(out, v, sizeof v);
}

#endif
