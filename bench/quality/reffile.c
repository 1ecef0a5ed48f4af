/*
 * reffile.c — the quality reference file, version 1 (layout in quality.h
 * and docs/quality.md): a 160-byte header, the text's tokens chunk by
 * chunk, then one record per scored token. Every integer and float is
 * little-endian whatever the host; the size is exact, so a truncated file
 * (or one with trailing bytes) is refused before anything is read from it.
 */
#include "quality.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }
static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float bitsf(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t rec_bytes(uint32_t k) { return 8ull * k + 8; }

uint64_t tb_qref_file_bytes(const tb_qref_t *r) {
    return TB_QREF_HEADER_BYTES + 4ull * r->n_chunk * r->n_ctx + (uint64_t)r->n_chunk * r->n_scored * rec_bytes(r->k);
}

static void header_encode(const tb_qref_t *r, uint8_t h[TB_QREF_HEADER_BYTES]) {
    memset(h, 0, TB_QREF_HEADER_BYTES);
    memcpy(h, TB_QREF_MAGIC, 8);
    put32(h + 8, TB_QREF_VERSION);
    put32(h + 12, TB_QREF_HEADER_BYTES);
    put32(h + 16, r->n_vocab);
    put32(h + 20, r->n_ctx);
    put32(h + 24, r->n_chunk);
    put32(h + 28, r->k);
    put32(h + 32, r->n_scored);
    put32(h + 36, r->flags);
    memcpy(h + 40, r->model_hash, 32);
    memcpy(h + 72, r->tok_hash, 32);
    memcpy(h + 104, r->text_hash, 32);
    put64(h + 136, r->text_bytes);
    put64(h + 144, r->n_text_tokens);
    put32(h + 152, (uint32_t)r->bos);
}

int tb_qref_write(const char *path, const tb_qref_t *r) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return tb_quality_fail(TB_ERR_ARG, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return tb_quality_fail(TB_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    uint8_t h[TB_QREF_HEADER_BYTES];
    header_encode(r, h);
    bool ok = fwrite(h, 1, sizeof h, f) == sizeof h;
    const uint64_t nt = (uint64_t)r->n_chunk * r->n_ctx, nr = (uint64_t)r->n_chunk * r->n_scored;
    uint8_t b[8 * TB_QUALITY_TOPK + 8];
    for (uint64_t i = 0; ok && i < nt; i++) {
        put32(b, (uint32_t)r->tokens[i]);
        ok = fwrite(b, 1, 4, f) == 4;
    }
    for (uint64_t i = 0; ok && i < nr; i++) {
        const tb_quality_rec_t *q = &r->recs[i];
        for (uint32_t j = 0; j < r->k; j++) {
            put32(b + 4 * j, (uint32_t)q->id[j]);
            put32(b + 4 * (r->k + j), fbits(q->lp[j]));
        }
        put32(b + 8 * r->k, fbits(q->lp_next));
        put32(b + 8 * r->k + 4, fbits(q->tail));
        ok = fwrite(b, 1, rec_bytes(r->k), f) == rec_bytes(r->k);
    }
    if (fclose(f) != 0) ok = false;
    if (!ok) {
        int e = errno;
        remove(tmp);
        return tb_quality_fail(TB_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return tb_quality_fail(TB_ERR_IO, "%s: cannot rename %s into place: %s", path, tmp, strerror(e));
    }
    return TB_OK;
}

void tb_qref_free(tb_qref_t *r) {
    free(r->tokens);
    free(r->recs);
    r->tokens = NULL;
    r->recs = NULL;
}

static int read_header(const char *path, FILE *f, uint64_t size, tb_qref_t *r) {
    uint8_t h[TB_QREF_HEADER_BYTES];
    if (size < 12 || fread(h, 1, size < sizeof h ? size : sizeof h, f) != (size < sizeof h ? size : sizeof h))
        return tb_quality_fail(TB_ERR_FORMAT, "%s: truncated reference file: %llu bytes, shorter than its %d-byte header",
                               path, (unsigned long long)size, TB_QREF_HEADER_BYTES);
    if (memcmp(h, TB_QREF_MAGIC, 8))
        return tb_quality_fail(TB_ERR_FORMAT, "%s: not a ternbench quality reference (byte 0: magic is not \"%s\")",
                               path, TB_QREF_MAGIC);
    if (get32(h + 8) != TB_QREF_VERSION)
        return tb_quality_fail(TB_ERR_UNSUPPORTED, "%s: reference format version %u at byte 8; this ternbench reads version %d",
                               path, get32(h + 8), TB_QREF_VERSION);
    if (size < sizeof h)
        return tb_quality_fail(TB_ERR_FORMAT, "%s: truncated reference file: %llu bytes, shorter than its %d-byte header",
                               path, (unsigned long long)size, TB_QREF_HEADER_BYTES);
    if (get32(h + 12) != TB_QREF_HEADER_BYTES)
        return tb_quality_fail(TB_ERR_FORMAT, "%s: byte 12: header size %u, expected %d", path, get32(h + 12),
                               TB_QREF_HEADER_BYTES);
    r->n_vocab = get32(h + 16);
    r->n_ctx = get32(h + 20);
    r->n_chunk = get32(h + 24);
    r->k = get32(h + 28);
    r->n_scored = get32(h + 32);
    r->flags = get32(h + 36);
    memcpy(r->model_hash, h + 40, 32);
    memcpy(r->tok_hash, h + 72, 32);
    memcpy(r->text_hash, h + 104, 32);
    r->text_bytes = get64(h + 136);
    r->n_text_tokens = get64(h + 144);
    r->bos = (int32_t)get32(h + 152);
    if (r->n_vocab < 2 || r->n_vocab > (1u << 24))
        return tb_quality_fail(TB_ERR_FORMAT, "%s: byte 16: vocabulary size %u out of range 2..16777216", path, r->n_vocab);
    if (r->n_ctx < 8 || r->n_ctx > (1u << 20))
        return tb_quality_fail(TB_ERR_FORMAT, "%s: byte 20: context %u out of range 8..1048576", path, r->n_ctx);
    if (r->n_chunk < 1 || r->n_chunk > (1u << 20))
        return tb_quality_fail(TB_ERR_FORMAT, "%s: byte 24: chunk count %u out of range 1..1048576", path, r->n_chunk);
    if (r->k < 1 || r->k > TB_QUALITY_TOPK || r->k > r->n_vocab)
        return tb_quality_fail(TB_ERR_FORMAT, "%s: byte 28: top-K %u out of range 1..%d (and <= the vocabulary)",
                               path, r->k, TB_QUALITY_TOPK);
    if (r->n_scored != r->n_ctx - 1 - r->n_ctx / 2)
        return tb_quality_fail(TB_ERR_FORMAT, "%s: byte 32: %u scored tokens per chunk, a context of %u scores %u",
                               path, r->n_scored, r->n_ctx, r->n_ctx - 1 - r->n_ctx / 2);
    const uint64_t want = tb_qref_file_bytes(r);
    if (size != want)
        return tb_quality_fail(TB_ERR_FORMAT,
                               "%s: %s reference file: %llu bytes, its header (%u chunks of %u tokens, k %u) "
                               "makes it %llu", path, size < want ? "truncated" : "oversized",
                               (unsigned long long)size, r->n_chunk, r->n_ctx, r->k, (unsigned long long)want);
    return TB_OK;
}

int tb_qref_read(const char *path, tb_qref_t *r) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "rb");
    if (!f) return tb_quality_fail(TB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    int rc = TB_OK;
    uint8_t *buf = NULL;
    if (fseeko(f, 0, SEEK_END) != 0) { rc = tb_quality_fail(TB_ERR_IO, "%s: cannot seek", path); goto done; }
    const uint64_t size = (uint64_t)ftello(f);
    rewind(f);
    if ((rc = read_header(path, f, size, r))) goto done;
    const uint64_t nt = (uint64_t)r->n_chunk * r->n_ctx, nr = (uint64_t)r->n_chunk * r->n_scored;
    const uint64_t body = size - TB_QREF_HEADER_BYTES;
    r->tokens = malloc(nt * sizeof *r->tokens);
    r->recs = malloc(nr * sizeof *r->recs);
    buf = malloc(body);
    if (!r->tokens || !r->recs || !buf) { rc = tb_quality_fail(TB_ERR_NOMEM, "%s: out of memory for %llu bytes", path, (unsigned long long)body); goto done; }
    if (fread(buf, 1, body, f) != body) {
        rc = tb_quality_fail(TB_ERR_IO, "%s: read failed after byte %d", path, TB_QREF_HEADER_BYTES);
        goto done;
    }
    for (uint64_t i = 0; i < nt; i++) {
        r->tokens[i] = (int32_t)get32(buf + 4 * i);
        if (r->tokens[i] < 0 || (uint32_t)r->tokens[i] >= r->n_vocab) {
            rc = tb_quality_fail(TB_ERR_FORMAT, "%s: byte %llu: token %d outside the vocabulary 0..%u", path,
                                 (unsigned long long)(TB_QREF_HEADER_BYTES + 4 * i), r->tokens[i], r->n_vocab - 1);
            goto done;
        }
    }
    const uint8_t *p = buf + 4 * nt;
    for (uint64_t i = 0; i < nr; i++, p += rec_bytes(r->k)) {
        tb_quality_rec_t *q = &r->recs[i];
        memset(q, 0, sizeof *q);
        const unsigned long long at = (unsigned long long)(TB_QREF_HEADER_BYTES + (uint64_t)(p - buf));
        for (uint32_t j = 0; j < r->k; j++) {
            q->id[j] = (int32_t)get32(p + 4 * j);
            q->lp[j] = bitsf(get32(p + 4 * (r->k + j)));
            if (q->id[j] < 0 || (uint32_t)q->id[j] >= r->n_vocab || !isfinite(q->lp[j]) || q->lp[j] > 0 ||
                (j > 0 && q->lp[j] > q->lp[j - 1])) {
                rc = tb_quality_fail(TB_ERR_FORMAT, "%s: byte %llu: record %llu entry %u (id %d, log-prob %g) "
                                     "is not a sorted top-K entry", path, at, (unsigned long long)i, j, q->id[j],
                                     (double)q->lp[j]);
                goto done;
            }
        }
        q->lp_next = bitsf(get32(p + 8 * r->k));
        q->tail = bitsf(get32(p + 8 * r->k + 4));
        if (!isfinite(q->lp_next) || q->lp_next > 0 || !(q->tail >= 0 && q->tail <= 1.0001f)) {
            rc = tb_quality_fail(TB_ERR_FORMAT, "%s: byte %llu: record %llu has log-prob %g / tail mass %g", path,
                                 at, (unsigned long long)i, (double)q->lp_next, (double)q->tail);
            goto done;
        }
    }
done:
    free(buf);
    fclose(f);
    if (rc) tb_qref_free(r);
    return rc;
}
