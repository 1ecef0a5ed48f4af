/*
 * siphash.c — SipHash-2-4 and the per-process hash key (see siphash.h).
 *
 * Written from the algorithm's description in the SipHash paper: 2
 * compression rounds per 8-byte word, 4 finalization rounds, the last word
 * carrying the message length mod 256 in its top byte. The test vector of
 * the paper's appendix (key 00..0f, message 00..0e) is checked in
 * tests/util/test_siphash.c.
 */
#include "util/siphash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static inline void sipround(tb_siphash_t *s) {
    s->v0 += s->v1; s->v1 = rotl(s->v1, 13); s->v1 ^= s->v0; s->v0 = rotl(s->v0, 32);
    s->v2 += s->v3; s->v3 = rotl(s->v3, 16); s->v3 ^= s->v2;
    s->v0 += s->v3; s->v3 = rotl(s->v3, 21); s->v3 ^= s->v0;
    s->v2 += s->v1; s->v1 = rotl(s->v1, 17); s->v1 ^= s->v2; s->v2 = rotl(s->v2, 32);
}

static inline void compress(tb_siphash_t *s, uint64_t m) {
    s->v3 ^= m;
    sipround(s);
    sipround(s);
    s->v0 ^= m;
}

void tb_siphash_init(tb_siphash_t *s, const uint64_t k[2]) {
    s->v0 = k[0] ^ 0x736f6d6570736575ull;   /* "somepseudorandomlygeneratedbytes" */
    s->v1 = k[1] ^ 0x646f72616e646f6dull;
    s->v2 = k[0] ^ 0x6c7967656e657261ull;
    s->v3 = k[1] ^ 0x7465646279746573ull;
    s->tail = 0;
    s->total = 0;
}

void tb_siphash_update(tb_siphash_t *s, const void *p, size_t n) {
    const uint8_t *b = p;
    unsigned have = (unsigned)(s->total & 7);
    s->total += n;
    while (n && have) {                       /* complete a pending word */
        s->tail |= (uint64_t)*b++ << (8 * have);
        n--;
        if (++have == 8) {
            compress(s, s->tail);
            s->tail = 0;
            have = 0;
        }
    }
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t m;
        memcpy(&m, b, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        m = __builtin_bswap64(m);
#endif
        compress(s, m);
    }
    for (unsigned i = 0; i < n; i++) s->tail |= (uint64_t)b[i] << (8 * (have + i));
}

uint64_t tb_siphash_final(tb_siphash_t *s) {
    compress(s, s->tail | (s->total << 56));
    s->v2 ^= 0xff;
    for (int i = 0; i < 4; i++) sipround(s);
    return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

uint64_t tb_siphash(const uint64_t k[2], const void *p, size_t n) {
    tb_siphash_t s;
    tb_siphash_init(&s, k);
    tb_siphash_update(&s, p, n);
    return tb_siphash_final(&s);
}

/* ===================================================================== */
/* Per-process key                                                        */
/* ===================================================================== */

static uint64_t g_key[2];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* 16 bytes from getrandom; if the kernel refuses (very old kernels,
 * seccomp), /dev/urandom; failing both, clock and address bits, which
 * still differ between processes. */
static void draw_key(void) {
    uint8_t k[16];
    size_t got = 0;
    while (got < sizeof k) {
        ssize_t r = getrandom(k + got, sizeof k - got, 0);
        if (r > 0) got += (size_t)r;
        else if (r < 0 && errno == EINTR) continue;
        else break;
    }
    if (got < sizeof k) {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            while (got < sizeof k) {
                ssize_t r = read(fd, k + got, sizeof k - got);
                if (r > 0) got += (size_t)r;
                else if (r < 0 && errno == EINTR) continue;
                else break;
            }
            close(fd);
        }
    }
    if (got < sizeof k) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)getpid() << 48;
        uint64_t b = (uint64_t)(uintptr_t)&got ^ (uint64_t)(uintptr_t)draw_key;
        memcpy(k, &a, 8);
        memcpy(k + 8, &b, 8);
    }
    memcpy(g_key, k, sizeof g_key);
}

const uint64_t *tb_hash_key(void) {
    pthread_once(&g_once, draw_key);
    return g_key;
}
