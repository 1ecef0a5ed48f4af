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
/* Build: git describe (vcs_tag at build time), compiler, flags, build type,
 * tb_isa_best(). */
void tb_facts_build(tb_build_facts_t *b);
/* Model: info, weight types, content hash (header + sampled data),
 * bytes per token at depth 0 with kv_type. */
int  tb_facts_model(const tb_model_t *m, const char *path, tb_type_t kv_type,
                    tb_model_facts_t *out);
/* Peak resident set size of this process in bytes (VmHWM), -1 if unknown. */
int64_t tb_facts_peak_rss(void);
/* Random RFC 4122 version-4 UUID text (getrandom; time/pid fallback). */
void tb_facts_uuid(char out[37]);

#endif
