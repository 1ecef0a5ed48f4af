/*
 * fnv_collide.h — names that collide under the unseeded FNV-1a the name
 * tables once used (the hash-flooding attack the flood tests replay).
 *
 * FNV-1a's low k bits depend only on the low k bits of its state (xor a
 * byte, multiply by an odd prime, both mod 2^k), so a table slot (hash &
 * mask, mask < 2^16) is fixed by the low 16 bits. fnv_collide() appends
 * three bytes to a prefix so that those bits equal `target`: the last byte
 * is solved for by inverting the multiply, the two before it searched.
 */
#ifndef TB_TEST_FNV_COLLIDE_H
#define TB_TEST_FNV_COLLIDE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FNV_PRIME 0x100000001b3ull
#define FNV_BASIS_GGUF 1469598103934665603ull   /* the reader's old (short) literal */
#define FNV_BASIS 0xcbf29ce484222325ull         /* the tokenizer's */

static inline uint64_t fnv_step(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV_PRIME;
    return h;
}

/* out = prefix + 3 non-NUL bytes + NUL with fnv_step(basis, out) & 0xffff
 * == target; out needs strlen(prefix) + 4 bytes. Returns 0, or -1 if no
 * suffix was found (does not happen in practice). */
static inline int fnv_collide(uint64_t basis, const char *prefix, uint16_t target, char *out) {
    uint64_t inv = FNV_PRIME;                         /* inverse mod 2^64 (Newton) */
    for (int i = 0; i < 6; i++) inv *= 2 - FNV_PRIME * inv;
    const uint16_t u = (uint16_t)(target * inv);      /* state ^ last byte must be u */
    size_t n = strlen(prefix);
    memcpy(out, prefix, n);
    uint64_t h0 = fnv_step(basis, prefix, n);
    for (int b0 = 1; b0 < 256; b0++) {
        uint64_t h1 = (h0 ^ (uint64_t)b0) * FNV_PRIME;
        for (int b1 = 1; b1 < 256; b1++) {
            uint16_t h2 = (uint16_t)((h1 ^ (uint64_t)b1) * FNV_PRIME);
            if ((h2 >> 8) != (u >> 8) || ((h2 ^ u) & 0xff) == 0) continue;
            out[n] = (char)b0;
            out[n + 1] = (char)b1;
            out[n + 2] = (char)((h2 ^ u) & 0xff);
            out[n + 3] = '\0';
            return 0;
        }
    }
    return -1;
}

#endif
