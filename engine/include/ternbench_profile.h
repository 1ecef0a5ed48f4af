/*
 * ternbench_profile.h — where decode time goes: per-phase and split-pass
 * profiles of a session (off by default), for `ternbench bench --profile`
 * and kernel work. Separate from ternbench.h, whose API is what a library
 * user needs; include both to profile.
 */
#ifndef TERNBENCH_PROFILE_H
#define TERNBENCH_PROFILE_H

#include "ternbench.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- where decode time goes (off by default) ----
 * With profiling on, every forward pass adds the wall time of each phase
 * (two clock reads per phase per layer) and the weight bytes its matrix
 * passes read: phase GB/s against the bandwidth probe says which part of a
 * token is below the roofline. Attention reads the KV cache (its bytes are
 * not counted here: see tb_model_bytes_per_token). Time outside the phases
 * (RoPE tables, routing, residual bookkeeping) is total_ns minus their sum. */
typedef enum tb_phase {
    TB_PHASE_EMBED = 0,   /* token embedding rows                          */
    TB_PHASE_QKV,         /* attention norm + Q, K, V projections          */
    TB_PHASE_ATTENTION,   /* RoPE, QK-norm, KV store, scores, softmax, sum  */
    TB_PHASE_ATTN_OUT,    /* output projection + residual                  */
    TB_PHASE_ROUTER,      /* FFN norm + MoE router (MoE only)              */
    TB_PHASE_FFN_UP,      /* gate and up (dense, or the active experts')   */
    TB_PHASE_FFN_DOWN,    /* SwiGLU + down (+ expert combine) + residual   */
    TB_PHASE_OUTPUT,      /* final norm + output head                      */
    TB_PHASE_COUNT
} tb_phase_t;

typedef struct tb_phase_stats {
    uint64_t ns;          /* wall time on the calling thread               */
    uint64_t bytes;       /* weight bytes the phase's matrix passes read   */
    uint64_t calls;
    /* Where the time of the phase's pool passes goes (every pass of a
     * thread pool: a matrix pass, the decode attention, the MoE decode
     * down pass), summed over passes in ns:
     *   wake_ns      pass start until the last of its threads entered it;
     *   prologue_ns  per thread, entry until its rows start (norm /
     *                SwiGLU / quantization and the wait for all of it),
     *                averaged over the pass's threads;
     *   tail_ns      the first thread done with its rows until the pass
     *                returned (imbalance and hand-back).
     * What is left of ns / passes is the threads streaming their rows. */
    uint64_t passes;
    uint64_t wake_ns, prologue_ns, tail_ns;
} tb_phase_stats_t;

typedef struct tb_profile {
    tb_phase_stats_t phase[TB_PHASE_COUNT];
    uint64_t total_ns;    /* wall time of the forward passes               */
    uint64_t tokens;      /* tokens they processed                         */
} tb_profile_t;

/* Turn per-phase profiling on or off; either way the counters restart. */
void tb_session_set_profile(tb_session_t *s, bool on);
/* The counters since the last tb_session_set_profile (zeros when off). */
void tb_session_get_profile(const tb_session_t *s, tb_profile_t *out);
/* "qkv", "attention", ... ; "?" for an unknown phase. */
const char *tb_phase_name(tb_phase_t p);

/* ---- the split decode's passes (off by default) ----
 * A decode step at 2 threads runs its split layers (see tb_model_info_t
 * split_layers) as a few passes per layer that both threads go through
 * in turn, each waiting before a pass only for the other to finish the
 * one before; the phase profile above turns that off so that its phases
 * can be timed apart. The split profile keeps it on and adds, per pass
 * (at most six clock reads per thread), where each thread's time goes.
 * At more than 2 threads (split_layers, dense models) "thread 0" and
 * "thread 1" are thread 0 and thread ceil(N / 2), the first of each
 * half's threads, and a half's prologue is made by whichever thread
 * needs it first (the others' prologue_ns is their wait for it):
 *   wait_ns      waiting for the other thread to finish the previous pass;
 *   prologue_ns  its prologue: the previous pass's outputs folded into x,
 *                RMSNorm and quantization of its own activation row
 *                (none in an experts pass);
 *   work_ns      the rest: its rows (Q/K/V and attention, gate and up,
 *                router, experts), its output slice and any rows of the
 *                other's it takes, and after a router pass thread 0's
 *                routing;
 *   skew_ns      |thread 1's end - thread 0's end|: what the one that
 *                finished first then waits at the next pass.
 * And work_ns in parts (work = rows + attn + out, plus a dense ffn
 * pass's SwiGLU between its rows and its output slice):
 *   rows_ns      its own rows: Q/K/V (attention), gate and up (ffn), its
 *                router rows (router), its experts whole (experts);
 *   attn_ns      attention passes only (0 in the others): the attention
 *                of its kv heads (scores, softmax, weighted sum over their
 *                K/V; arithmetic that streams no weights);
 *   out_ns       its output slice (its activation half quantized, its Wo
 *                or down rows) and any rows of the other slice it takes;
 *                after a router pass, thread 0's wait for the other's rows
 *                and its routing (0 in experts passes).
 * Passes: attention (A: Q/K/V, attention, Wo), ffn (dense: gate, up,
 * down), router (MoE: router rows, routing), experts (MoE: the selected
 * experts, each thread its half of the ranks). */
typedef enum tb_split_pass {
    TB_SPLIT_ATTN = 0,
    TB_SPLIT_FFN,
    TB_SPLIT_ROUTER,
    TB_SPLIT_EXPERTS,
    TB_SPLIT_PASS_COUNT
} tb_split_pass_t;

typedef struct tb_split_stats {
    uint64_t passes;      /* passes of this kind run                       */
    uint64_t wait_ns[2], prologue_ns[2], work_ns[2];   /* summed, per thread */
    uint64_t skew_ns;     /* summed                                        */
    uint64_t rows_ns[2], attn_ns[2], out_ns[2];        /* summed, per thread: parts of work_ns */
} tb_split_stats_t;

typedef struct tb_split_profile {
    tb_split_stats_t pass[TB_SPLIT_PASS_COUNT];
    uint64_t runs;        /* pool runs of consecutive split layers (one per
                             decode step when every layer splits)       */
} tb_split_profile_t;

/* Turn split-pass profiling on or off; either way the counters restart.
 * It does not change what runs (a 1-thread session, or one whose layers do
 * not split, counts nothing). */
void tb_session_set_split_profile(tb_session_t *s, bool on);
/* The counters since the last tb_session_set_split_profile. */
void tb_session_get_split_profile(const tb_session_t *s, tb_split_profile_t *out);
/* "attention", "ffn", "router", "experts"; "?" for an unknown pass. */
const char *tb_split_pass_name(tb_split_pass_t p);

#endif
