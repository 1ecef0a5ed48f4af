/*
 * verify.c — provenance of synthesized models: the ternbench.synth.* keys
 * tb_synth_model records, and tb_synth_verify, which checks a file against
 * the parameters it should have been made from before a cache trusts it.
 *
 * Recorded: preset, projection type (its name), seed, a digest of the
 * copied tokenizer keys (0 for the built-in vocabulary) and a digest of
 * the tensor data. A file passes when all five match what tb_synth_model
 * would write for the parameters and its size is the plan's exact size.
 * The digests guard against mistakes (a different model, a damaged or
 * edited file under a cache name), not against forgery: the key is public.
 */
#include "synth/synth.h"
#include "io/gguf_impl.h"
#include "util/siphash.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const uint64_t SYNTH_DIGEST_KEY[2] = {0x636e65626e726574ull, 0x3168746e79732e68ull};  /* "ternbench.synth1" */

/* Digest of the tokenizer.* keys of src: each key and its raw value. */
static uint64_t vocab_digest(const tb_gguf_t *src) {
    tb_siphash_t h;
    tb_siphash_init(&h, SYNTH_DIGEST_KEY);
    for (int64_t i = 0; i < tb_gguf_n_kv(src); i++) {
        const char *k = tb_gguf_kv_key(src, i);
        uint32_t type;
        const uint8_t *bytes;
        uint64_t len;
        if (strncmp(k, "tokenizer.", 10) || tb_gguf_kv_raw(src, i, &type, &bytes, &len) != TB_OK)
            continue;
        uint64_t kl = strlen(k);
        tb_siphash_update(&h, &kl, 8);
        tb_siphash_update(&h, k, (size_t)kl);
        tb_siphash_update(&h, &type, 4);
        tb_siphash_update(&h, &len, 8);
        tb_siphash_update(&h, bytes, (size_t)len);
    }
    return tb_siphash_final(&h);
}

int synth_plan_provenance(synth_plan_t *pl) {
    synth_kv_t *e;
    if (!(e = synth_plan_push_kv(pl, SYNTH_KEY_PRESET, SYNTH_KV_STR))) goto nomem;
    snprintf(e->v.str, sizeof e->v.str, "%s", pl->preset->name);
    if (!(e = synth_plan_push_kv(pl, SYNTH_KEY_TYPE, SYNTH_KV_STR))) goto nomem;
    snprintf(e->v.str, sizeof e->v.str, "%s", tb_type_name(pl->proj_type));
    if (!(e = synth_plan_push_kv(pl, SYNTH_KEY_SEED, SYNTH_KV_U64))) goto nomem;
    e->v.u64 = pl->seed;
    if (!(e = synth_plan_push_kv(pl, SYNTH_KEY_VOCAB, SYNTH_KV_U64))) goto nomem;
    e->v.u64 = pl->vocab_src ? vocab_digest(pl->vocab_src) : 0;
    if (!(e = synth_plan_push_kv(pl, SYNTH_KEY_DIGEST, SYNTH_KV_U64))) goto nomem;
    e->v.u64 = 0;                                   /* patched after the data */
    return TB_OK;
nomem:
    return tb_err(TB_ERR_NOMEM, "out of memory for the metadata plan");
}

/* ===================================================================== */
/* Verification                                                           */
/* ===================================================================== */

/* String key of g into buf ("" with *found false when absent). */
static int get_str(const tb_gguf_t *g, const char *key, char *buf, size_t cap, bool *found) {
    *found = tb_gguf_find_kv(g, key) >= 0;
    buf[0] = '\0';
    return *found ? tb_gguf_get_str(g, key, buf, cap) : TB_OK;
}

static int get_u64(const tb_gguf_t *g, const char *key, uint64_t *v) {
    tb_gguf_value_t x;
    int64_t i = tb_gguf_find_kv(g, key);
    if (i < 0) return tb_err(TB_ERR_FORMAT, "%s: key '%s' missing", tb_gguf_path(g), key);
    int rc = tb_gguf_kv_value(g, i, &x);
    if (rc) return rc;
    if (x.type != TB_GGUF_UINT64)
        return tb_err(TB_ERR_FORMAT, "%s: key '%s' holds a %s (expected uint64)", tb_gguf_path(g), key,
                      tb_gguf_vtype_name(x.type));
    *v = x.v.u64;
    return TB_OK;
}

static int check(const synth_plan_t *pl, const tb_gguf_t *g, const char *path) {
    const char *want_type = tb_type_name(pl->proj_type);
    const synth_kv_t *vk = synth_plan_find_kv(pl, SYNTH_KEY_VOCAB);
    char preset[128], type[64];
    bool found;
    int rc = get_str(g, SYNTH_KEY_PRESET, preset, sizeof preset, &found);
    if (rc) return rc;
    if (!found)
        return tb_err(TB_ERR_FORMAT, "%s: not a model synthesized by ternbench (no '%s' key), expected "
                      "preset %s type %s seed %" PRIu64 "; remove it to synthesize it again",
                      path, SYNTH_KEY_PRESET, pl->preset->name, want_type, pl->seed);
    uint64_t seed, vocab, digest;
    if ((rc = get_str(g, SYNTH_KEY_TYPE, type, sizeof type, &found))) return rc;
    if ((rc = get_u64(g, SYNTH_KEY_SEED, &seed)) || (rc = get_u64(g, SYNTH_KEY_VOCAB, &vocab)) ||
        (rc = get_u64(g, SYNTH_KEY_DIGEST, &digest)))
        return rc;
    if (strcmp(preset, pl->preset->name) || strcmp(type, want_type) || seed != pl->seed ||
        vocab != vk->v.u64)
        return tb_err(TB_ERR_FORMAT, "%s: synthesized as preset %s type %s seed %" PRIu64 " vocabulary "
                      "%016" PRIx64 ", expected preset %s type %s seed %" PRIu64 " vocabulary %016" PRIx64
                      "; remove it to synthesize it again",
                      path, preset, type, seed, vocab, pl->preset->name, want_type, pl->seed, vk->v.u64);
    if (tb_gguf_file_size(g) != pl->file_bytes)
        return tb_err(TB_ERR_FORMAT, "%s: %" PRIu64 " bytes, but preset %s type %s is %" PRIu64
                      " bytes (the file was changed); remove it to synthesize it again",
                      path, tb_gguf_file_size(g), pl->preset->name, want_type, pl->file_bytes);
    tb_siphash_t h;
    tb_siphash_init(&h, SYNTH_DIGEST_KEY);
    for (int64_t i = 0; i < tb_gguf_n_tensors(g); i++) {
        tb_gguf_tensor_t t;
        if ((rc = tb_gguf_tensor(g, i, &t))) return rc;
        tb_siphash_update(&h, t.data, (size_t)t.nbytes);
    }
    uint64_t got = tb_siphash_final(&h);
    if (got != digest)
        return tb_err(TB_ERR_FORMAT, "%s: tensor data digest %016" PRIx64 " differs from the recorded %016"
                      PRIx64 " (the data was changed); remove it to synthesize it again", path, got, digest);
    return TB_OK;
}

int tb_synth_verify(const tb_synth_params_t *p, const char *path) {
    if (!p || !path) return tb_err(TB_ERR_ARG, "tb_synth_verify: NULL argument");
    synth_plan_t pl;
    int rc = synth_plan_build(p, &pl);
    tb_gguf_t *g = NULL;
    if (rc == TB_OK) rc = tb_gguf_open(path, &g);
    if (rc == TB_OK) rc = check(&pl, g, path);
    tb_gguf_close(g);
    synth_plan_free(&pl);
    return rc;
}
