/*
 * facts.h — provenance: what machine, what build, what model a run used.
 */
#ifndef TB_HARNESS_FACTS_H
#define TB_HARNESS_FACTS_H

#include "store.h"
#include "ternbench.h"

/* Host: libcpuid (x86) or /proc/cpuinfo, /proc/meminfo, /etc/os-release,
 * uname. Never fails: unknown facts are "" or -1. */
void tb_facts_host(tb_host_facts_t *h);
/* On ARM (t from tb_cpu_topo_host: hwcap features or MIDR parts found),
 * overwrite h's CPU facts: cpu_vendor from the fastest kind's MIDR
 * implementer, cpu_model its part number, cpu_brand the kinds' summary
 * ("1x Cortex-X4 (cap 1024, 3.30 GHz) + 3x ..."), isa_flags the features
 * with their source ("asimd dotprod i8mm (hwcap)"), cores the CPUs found.
 * Leaves h alone on other hosts. tb_facts_host applies it. */
void tb_facts_host_arm(const tb_cpu_topo_t *t, tb_host_facts_t *h);
/* Build: git describe (vcs_tag at build time), compiler, flags, build type,
 * tb_isa_best(). */
void tb_facts_build(tb_build_facts_t *b);
/* Model: info, weight types, content hash (header + sampled data),
 * bytes per token at depth 0 with kv_type. */
int  tb_facts_model(const tb_model_t *m, const char *path, tb_type_t kv_type,
                    tb_model_facts_t *out);
/* Peak resident set size of this process in bytes (VmHWM), -1 if unknown. */
int64_t tb_facts_peak_rss(void);
/* Random RFC 4122 version-4 UUID text (getrandom, macOS getentropy; time/pid fallback). */
void tb_facts_uuid(char out[37]);

#endif
