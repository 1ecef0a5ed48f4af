/*
 * siphash.h — SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast
 * short-input PRF", 2012), incremental, and the per-process key the
 * engine's hash tables use (private to the engine).
 *
 * Tables indexed by names read from files (GGUF keys and tensor names,
 * tokenizer texts and merges) hash with tb_hash_key(): a 128-bit key drawn
 * from the kernel's random source once per process, so a file cannot be
 * crafted to put many names in one slot (hash flooding). Content digests
 * that must be stable across processes use a fixed key instead.
 */
#ifndef TB_SIPHASH_H
#define TB_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct tb_siphash {
    uint64_t v0, v1, v2, v3;
    uint64_t tail;      /* pending bytes, little-endian, low first */
    uint64_t total;     /* bytes absorbed so far                    */
} tb_siphash_t;

/* Start a hash under the 128-bit key k[0], k[1]. */
void tb_siphash_init(tb_siphash_t *s, const uint64_t k[2]);
/* Absorb n bytes. */
void tb_siphash_update(tb_siphash_t *s, const void *p, size_t n);
/* The 64-bit result (the state is consumed). */
uint64_t tb_siphash_final(tb_siphash_t *s);
/* One-shot SipHash-2-4 of p[0..n) under k. */
uint64_t tb_siphash(const uint64_t k[2], const void *p, size_t n);

/* The per-process random key (thread-safe; drawn on first use). */
const uint64_t *tb_hash_key(void);
/* tb_siphash under the per-process key. */
static inline uint64_t tb_hash_bytes(const void *p, size_t n) {
    return tb_siphash(tb_hash_key(), p, n);
}

#endif
