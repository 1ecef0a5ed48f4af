/*
 * peer_llamacpp.h — llama.cpp as a peer engine in a scenario: one
 * repetition of a prefill or decode case is one `llama-bench` invocation
 *
 *     BINARY -m MODEL -t THREADS -p P -n N -d DEPTH -r 1 -b B -ub B
 *            -ctk KV -ctv KV -o jsonl
 *
 * (prefill: -p P -n 0 -d 0; decode: -p 0 -n N -d DEPTH), its stdout parsed
 * with the import parser (peers.h, llama-bench-jsonl) into the same metrics
 * ternbench's own repetitions carry: {prefill,decode}_tok_per_s and _ms from
 * its one sample, bytes_per_token and achieved_gbps from ternbench's account
 * of the same file (so the runner's probes give the same roofline). What
 * llama-bench does not report (per-token timestamps, inter-token latency,
 * memory, energy) is left absent; the runner records it as absent.
 *
 * Errors name the binary and the scenario line that chose it:
 * "FILE:LINE: llama.cpp binary /x/llama-bench: ...".
 */
#ifndef TB_HARNESS_PEER_LLAMACPP_H
#define TB_HARNESS_PEER_LLAMACPP_H

#include "scenario.h"
#include "workload.h"

#include <signal.h>

typedef struct tb_peer_lc {
    char binary[4096];      /* resolved executable                                */
    char where[1200];       /* "FILE:LINE" of [engine] binary (or kind)           */
    char version[160];      /* "b<build_number> (<build_commit>)", "" until a run */
    char backend[64];       /* llama-bench's "backends" ("CPU"), "" until a run   */
    char cpu_info[128];
} tb_peer_lc_t;

/* One case as llama-bench is asked for it. */
typedef struct tb_peer_lc_case {
    const char *model;      /* GGUF path                                         */
    const tb_model_t *tb;   /* the same file loaded by ternbench (bytes/token)   */
    int threads;
    int64_t n_prompt, n_gen, depth;
    int n_batch;
    tb_type_t kv_type;      /* TB_TYPE_F16 or TB_TYPE_F32                        */
} tb_peer_lc_case_t;

/* Resolve the executable: [engine] binary (relative to the scenario file),
 * else $TB_LLAMA_BENCH, else llama-bench on PATH. TB_ERR_NOT_FOUND when it
 * is not an executable regular file. */
int tb_peer_lc_resolve(const tb_plan_t *plan, tb_peer_lc_t *lc);

/* The case of section sec, element ci, in llama-bench's terms. */
void tb_peer_lc_case_of(const tb_section_t *sec, int ci, tb_peer_lc_case_t *c);

/* Run one repetition into *rep (reset first): TB_OK, TB_INTERRUPTED when the
 * stop flag rose (the child is killed), or < 0 (non-zero exit, a signal,
 * output that is not exactly one llama-bench row for the case asked). The
 * first successful run fills lc->version, backend and cpu_info. */
int tb_peer_lc_run(tb_peer_lc_t *lc, const tb_peer_lc_case_t *c, tb_rep_t *rep,
                   const volatile sig_atomic_t *stop);

/* Parse llama-bench jsonl output (text, len) as the result of case c into
 * *rep; the part of tb_peer_lc_run after the child exited. */
int tb_peer_lc_parse(tb_peer_lc_t *lc, const tb_peer_lc_case_t *c, const char *text, size_t len,
                     tb_rep_t *rep);

#endif
