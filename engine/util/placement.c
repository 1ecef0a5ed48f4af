/*
 * placement.c — which logical CPUs the pool threads run on.
 *
 * The placement is a list of CPU numbers; pool thread i (the caller is 0)
 * is pinned to entry i mod n when its pool starts (tb_pool_new pins the
 * caller, each worker pins itself). It comes from tb_cpus_set /
 * tb_cpus_set_str (the CLI's --cpus), else the TB_CPUS environment
 * variable, read once, else the default: on an ARM machine whose cores are
 * of more than one kind (tb_cpu_topo_host with MIDR parts: a phone's
 * prime, performance and efficiency cores), every core fastest kind first,
 * so that n threads run on the n fastest cores; elsewhere none (the
 * kernel places the threads). A CPU the process may not use (an Android cpuset,
 * an offline core) leaves that thread where the kernel put it; which CPU
 * a thread ran on can be read with tb_cpus_current. macOS has no thread
 * pinning: there every pin is refused (-1) and the lists are kept only.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#if !defined(CPU_SETSIZE)   /* macOS: no CPU sets, no thread pinning (QoS classes instead) */
#define CPU_SETSIZE 1024
#endif

static int32_t place[TB_TOPO_MAX_CPUS];   // (n_place) CPU numbers
static int n_place = -1;                  /* -1: not chosen yet */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

int tb_cpus_parse(const char *list, int32_t *cpus, int cap) {
    if (!list || !cpus || cap < 1) return tb_err(TB_ERR_ARG, "tb_cpus_parse: bad arguments");
    int n = 0;
    const char *p = list;
    if (!*p) return tb_err(TB_ERR_ARG, "empty CPU list (expected numbers and ranges: 0-3,6)");
    for (;;) {
        char *end;
        if (*p < '0' || *p > '9') return tb_err(TB_ERR_ARG, "CPU list '%s': expected a CPU number at '%s'", list, p);
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9') return tb_err(TB_ERR_ARG, "CPU list '%s': expected a number after '-'", list);
            b = strtol(p, &end, 10);
            p = end;
        }
        if (a >= CPU_SETSIZE || b >= CPU_SETSIZE || b < a)
            return tb_err(TB_ERR_ARG, "CPU list '%s': range %ld-%ld (CPUs are 0..%d, ranges low-high)", list, a, b,
                          CPU_SETSIZE - 1);
        for (long c = a; c <= b; c++) {
            if (n == cap) return tb_err(TB_ERR_ARG, "CPU list '%s': more than %d CPUs", list, cap);
            cpus[n++] = (int32_t)c;
        }
        if (!*p) return n;
        if (*p != ',') return tb_err(TB_ERR_ARG, "CPU list '%s': unexpected '%c'", list, *p);
        p++;
    }
}

/* The default placement (caller holds mu). */
static void choose_default(void) {
    const char *env = getenv("TB_CPUS");
    if (env && *env) {
        int n = tb_cpus_parse(env, place, TB_TOPO_MAX_CPUS);
        if (n > 0) { n_place = n; return; }   /* as TB_ISA: a bad value is ignored */
    }
    /* ARM kinds only (MIDR parts known): an x86 hybrid's capacities would
     * order SMT siblings next to each other, which this list does not know */
    const tb_cpu_topo_t *t = tb_cpu_topo_host();
    n_place = t->n_kinds > 1 && t->kind[0].part >= 0 ? tb_cpu_topo_pick(t, TB_TOPO_MAX_CPUS, place) : 0;
}

int tb_cpus_set(const int32_t *cpus, int n) {
    if (n < 0 || n > TB_TOPO_MAX_CPUS || (n && !cpus))
        return tb_err(TB_ERR_ARG, "CPU placement of %d CPUs (0..%d)", n, TB_TOPO_MAX_CPUS);
    for (int i = 0; i < n; i++)
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) return tb_err(TB_ERR_ARG, "CPU %d out of range", cpus[i]);
    pthread_mutex_lock(&mu);
    if (n) memcpy(place, cpus, sizeof *cpus * (size_t)n);
    n_place = n;
    if (!n) choose_default();
    pthread_mutex_unlock(&mu);
    return TB_OK;
}

int tb_cpus_set_str(const char *list) {
    int32_t c[TB_TOPO_MAX_CPUS];
    const int n = tb_cpus_parse(list, c, TB_TOPO_MAX_CPUS);
    return n < 0 ? n : tb_cpus_set(c, n);
}

int tb_cpus_get(int32_t *cpus, int cap) {
    pthread_mutex_lock(&mu);
    if (n_place < 0) choose_default();
    const int n = TB_MIN(n_place, cap);
    if (cpus && n > 0) memcpy(cpus, place, sizeof *cpus * (size_t)n);
    pthread_mutex_unlock(&mu);
    return n;
}

int tb_cpus_pin_thread(int ith) {
    int32_t c[TB_TOPO_MAX_CPUS];
    const int n = tb_cpus_get(c, TB_TOPO_MAX_CPUS);
    if (n <= 0 || ith < 0) return -1;
#if defined(__linux__)
    const int32_t cpu = c[ith % n];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? cpu : -1;
#else
    return -1;
#endif
}

int tb_cpus_current(void) {
#if defined(__linux__)
    const int c = sched_getcpu();
    return c >= 0 ? c : -1;
#else
    return -1;
#endif
}
