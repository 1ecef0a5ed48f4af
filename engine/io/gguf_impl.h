/*
 * gguf_impl.h — what the GGUF reader and writer share (private to engine/io).
 *
 * GGUF v3 layout, all integers little-endian:
 *
 *   "GGUF"  uint32 version  uint64 n_tensors  uint64 n_kv
 *   n_kv x     { string key; uint32 vtype; value }
 *   n_tensors x { string name; uint32 n_dims; uint64 ne[n_dims]; uint32 type; uint64 offset }
 *   zero padding to the alignment
 *   data section: tensor data at `offset` (a multiple of the alignment)
 *
 *   string = uint64 len + len bytes (no NUL)
 *   array  = uint32 elem vtype + uint64 n + n elements (elements may be
 *            strings or arrays)
 */
#ifndef TB_GGUF_IMPL_H
#define TB_GGUF_IMPL_H

#include "internal.h"

#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ternbench's GGUF code assumes a little-endian host"
#endif

#define TB_GGUF_MAGIC "GGUF"
#define TB_GGUF_VERSION 3u
#define TB_GGUF_DEFAULT_ALIGNMENT 32u
#define TB_GGUF_KEY_ALIGNMENT "general.alignment"
/* llama.cpp's GGML_MAX_NAME: tensor names must be shorter than this. */
#define TB_GGUF_MAX_NAME 64
/* Deepest array nesting the reader accepts (an array of arrays is depth 2). */
#define TB_GGUF_MAX_DEPTH 8

/* Bytes of one value of a fixed-size vtype; 0 for STRING, ARRAY and unknown. */
size_t tb_gguf_vtype_size(uint32_t t);

/* The raw encoding of key/value i of a reader: its vtype and the bytes of
 * the value exactly as stored in the file (borrowed from the mapping). */
int tb_gguf_kv_raw(const tb_gguf_t *g, int64_t i, uint32_t *type,
                   const uint8_t **bytes, uint64_t *len);

/* Overwrite the value of uint64 key `key` of a writer between begin() and
 * finish() (for a digest of data streamed after the header). */
int tb_gguf_writer_patch_u64(tb_gguf_writer_t *w, const char *key, uint64_t v);

/* Slots inspected while the key index and the tensor-name index were
 * built at open (about 1.5 per name for any names; tests bound it). */
void tb_gguf_index_probes(const tb_gguf_t *g, uint64_t *kv, uint64_t *tensors);

static inline uint64_t tb_gguf_align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

#endif
