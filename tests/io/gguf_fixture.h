/*
 * gguf_fixture.h — hand-built GGUF files for the io tests.
 *
 * The fixture encodes GGUF byte by byte from the specification (not with
 * the library's writer), so the reader is tested against an independent
 * encoder, and records the offset of every field the hostile tests patch.
 */
#ifndef TB_TEST_GGUF_FIXTURE_H
#define TB_TEST_GGUF_FIXTURE_H

#include "ternbench.h"

#include <stddef.h>
#include <stdint.h>

/* ---- growing byte buffer ------------------------------------------- */

typedef struct bb {
    uint8_t *p;
    size_t n, cap;
} bb_t;

void bb_bytes(bb_t *b, const void *data, size_t n);
void bb_u8(bb_t *b, uint8_t v);
void bb_u16(bb_t *b, uint16_t v);
void bb_u32(bb_t *b, uint32_t v);
void bb_u64(bb_t *b, uint64_t v);
void bb_str(bb_t *b, const char *s);                  /* uint64 len + bytes */
void bb_pad(bb_t *b, uint64_t align);                /* zeros to a multiple */
void bb_patch_u32(bb_t *b, size_t at, uint32_t v);
void bb_patch_u64(bb_t *b, size_t at, uint64_t v);
void bb_free(bb_t *b);

/* ---- the base file -------------------------------------------------- */

#define FX_N_TENSORS 3

typedef struct fx_opts {
    uint32_t version;        /* 3 unless set                              */
    uint32_t alignment;      /* value of general.alignment (0: key absent) */
    int dup_key;             /* repeat general.name                        */
    int dup_tensor;          /* name the third tensor like the first       */
    int page_end;            /* grow the last tensor so the file ends on a 4096 boundary */
} fx_opts_t;

/* Offsets (in the file) of the fields the hostile tests patch. */
typedef struct fx_map {
    size_t n_tensors, n_kv;              /* header counts                         */
    size_t first_key_len;                /* length of the first key               */
    size_t align_type, align_val;        /* general.alignment's vtype and value    */
    size_t u32_type;                     /* vtype field of the "fx.u32" kv         */
    size_t str_len;                      /* length of general.name's value         */
    size_t arr_count;                    /* element count of "fx.arr_str"          */
    size_t nested_elem;                  /* element type of "fx.nested"            */
    size_t kv_end;                       /* end of the metadata                    */
    size_t t_info[FX_N_TENSORS];         /* start of each tensor info              */
    size_t t_ndims[FX_N_TENSORS], t_ne[FX_N_TENSORS], t_type[FX_N_TENSORS], t_off[FX_N_TENSORS];
    uint64_t t_offset[FX_N_TENSORS];     /* data offsets written                   */
    uint64_t t_nbytes[FX_N_TENSORS];
    size_t info_end, data_off, size;
    uint64_t alignment;                  /* effective                              */
} fx_map_t;

/* Build the base file: general.architecture, general.name, general.alignment
 * (if opts->alignment), every scalar vtype as "fx.<type>", a string array,
 * a nested array of uint16 arrays, a nested array of string arrays, and three
 * tensors (f32 [8,4], q8_0 [64,2], f32 [n] that ends the file) whose data
 * bytes are fx_data_byte(i). */
void fx_build(const fx_opts_t *opts, bb_t *out, fx_map_t *map);
uint8_t fx_data_byte(uint64_t i);

/* ---- files ---------------------------------------------------------- */

/* mkdtemp under $TMPDIR (or /tmp); the test removes it with fx_rmdir. */
char *fx_mkdtemp(void);
void fx_rmtree(char *dir);   /* removes the files in dir, dir, and frees it */
/* Write n bytes to dir/name; returns a malloc'd path. */
char *fx_write(const char *dir, const char *name, const void *data, size_t n);
void fx_rewrite(const char *path, const void *data, size_t n);

/* Put n bytes where tb_gguf_open can map them without touching the disk: a
 * memfd named through /proc/self/fd (or, where that is unavailable,
 * dir/name). Writes the path to path[cap]; returns the fd to close after
 * use, or -1 when a file was used. */
int fx_stage(const char *dir, const char *name, const void *data, size_t n, char *path, size_t cap);

/* Deep equality of two values of (possibly) different files. */
int fx_value_equal(const tb_gguf_t *ga, const tb_gguf_value_t *a,
                   const tb_gguf_t *gb, const tb_gguf_value_t *b);

#endif
