/*
 * hugemem.c — big read-mostly buffers backed by transparent huge pages.
 *
 * Decode streams hundreds of megabytes per token. From 4 KiB pages the
 * hardware prefetchers stop at every page boundary and every 4 KiB costs a
 * TLB walk; on the reference VM (THP in "madvise" mode) a 2-thread read
 * stream ran at 25-30 GB/s from 4 KiB pages and 30-48 GB/s from 2 MiB pages
 * of the same buffer. So weights, KV caches and the bandwidth probe live in
 * anonymous mappings aligned to 2 MiB and marked MADV_HUGEPAGE.
 *
 * Layout of one allocation (sizes rounded up to pages):
 *
 *   map ... [header page: {map, map_len}] | data (2 MiB aligned) ... end
 *
 * The header sits in the page just below the data so tb_huge_free needs
 * only the data pointer.
 */
#include "internal.h"

#include <sys/mman.h>
#include <unistd.h>

#define HUGE_ALIGN ((size_t)2 << 20)

typedef struct {
    void *map;
    size_t map_len;
} huge_hdr;

void *tb_huge_alloc(size_t n) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (n == 0) n = 1;
    if (n > SIZE_MAX / 2 - 2 * HUGE_ALIGN) return NULL;
    n = (n + page - 1) & ~(page - 1);
    size_t len = n + HUGE_ALIGN + page;          /* room to align + header page */
    uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return NULL;
    uintptr_t d = ((uintptr_t)map + page + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1);
    uint8_t *data = (uint8_t *)d;
    assert(data - page >= map && data + n <= map + len);
#ifdef MADV_HUGEPAGE
    /* Advisory: where THP is off or "never", this fails and 4 KiB pages
     * serve; results stay identical, only slower. */
    (void)madvise(data, n, MADV_HUGEPAGE);
#endif
    huge_hdr *h = (huge_hdr *)(data - sizeof(huge_hdr));
    h->map = map;
    h->map_len = len;
    return data;
}

void tb_huge_free(void *p) {
    if (!p) return;
    const huge_hdr *h = (const huge_hdr *)((uint8_t *)p - sizeof(huge_hdr));
    munmap(h->map, h->map_len);
}

/* Map [p, p+n) of a file mapping in one call (MADV_POPULATE_READ, Linux
 * 5.14+) instead of one page fault per 64 KiB while it is copied. */
void tb_mapping_populate(const void *p, size_t n) {
#ifdef MADV_POPULATE_READ
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t b = (uintptr_t)p & ~(page - 1);
    uintptr_t e = ((uintptr_t)p + n + page - 1) & ~(page - 1);
    if (e > b) (void)madvise((void *)b, e - b, MADV_POPULATE_READ);
#else
    (void)p;
    (void)n;
#endif
}

/* Drop [p, p+n) of a read-only file mapping from this process's resident
 * set (whole pages inside the range only); the page cache keeps the data and
 * a later access faults it back in. */
void tb_mapping_release(const void *p, size_t n) {
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t b = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t e = ((uintptr_t)p + n) & ~(page - 1);
    if (e > b) (void)madvise((void *)b, e - b, MADV_DONTNEED);
}
