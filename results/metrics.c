/*
 * metrics.c — the metric table (see metrics.h). One row per metric; the
 * order is the enum's (checked by a static assertion on the count and by
 * tests/harness/test_metrics.c on every name).
 */
#include "metrics.h"

#include <assert.h>
#include <string.h>

#define PP TB_MK_PREFILL
#define TG TB_MK_DECODE
#define TT TB_MK_TTFT
#define GE TB_MK_GENERATE
#define SU TB_MK_SUSTAINED
#define QU TB_MK_QUALITY
#define HI TB_BETTER_HIGHER
#define LO TB_BETTER_LOWER
#define NO TB_BETTER_NONE
#define BW (PP | TG | GE | SU)   /* kinds that read the weights per token: a roofline */

const tb_metric_def_t tb_metrics[TB_M_COUNT] = {
    [TB_M_PREFILL_TOK_PER_S] = {"prefill_tok_per_s", "tok/s", HI, PP | TT | GE,
        "prompt tokens evaluated per second (batched prefill)"},
    [TB_M_PREFILL_MS] = {"prefill_ms", "ms", LO, PP, "time of the whole prefill"},
    [TB_M_DECODE_TOK_PER_S] = {"decode_tok_per_s", "tok/s", HI, TG | GE | SU,
        "tokens decoded per second, one at a time (generate: tokens after the first over the time after the first)"},
    [TB_M_DECODE_MS] = {"decode_ms", "ms", LO, TG, "time of the timed decode steps"},
    [TB_M_TTFT_MS] = {"ttft_ms", "ms", LO, TT | GE,
        "prompt start to first token sampled: ttft_prefill_ms plus sampling"},
    [TB_M_TTFT_PREFILL_MS] = {"ttft_prefill_ms", "ms", LO, TT | GE, "prompt evaluation alone"},
    [TB_M_TTFT_FIRST_DECODE_MS] = {"ttft_first_decode_ms", "ms", LO, TT,
        "the first decode step: first token to second token"},
    [TB_M_E2E_MS] = {"e2e_ms", "ms", LO, GE, "prompt start to last token"},
    [TB_M_GENERATED_TOKENS] = {"generated_tokens", "tok", NO, GE | SU, "tokens produced"},
    [TB_M_ITL_P50_MS] = {"itl_p50_ms", "ms", LO, TG | GE, "median inter-token latency"},
    [TB_M_ITL_P90_MS] = {"itl_p90_ms", "ms", LO, TG | GE, "90th percentile inter-token latency"},
    [TB_M_ITL_P99_MS] = {"itl_p99_ms", "ms", LO, TG | GE, "99th percentile inter-token latency"},
    [TB_M_ITL_MAX_MS] = {"itl_max_ms", "ms", LO, TG | GE, "slowest token"},
    [TB_M_STALL_PCT] = {"stall_pct", "%", LO, TG | GE,
        "share of the decode time that steps slower than 1.5 x the median spent beyond the median: "
        "interruptions rather than kernel speed"},
    [TB_M_CHARS_PER_TOKEN] = {"chars_per_token", "chars/tok", NO, GE,
        "UTF-8 characters of the detokenized output per token"},
    [TB_M_CHARS_PER_S] = {"chars_per_s", "chars/s", HI, GE, "chars_per_token x decode_tok_per_s"},
    [TB_M_WINDOW_TOK_PER_S] = {"window_tok_per_s", "tok/s", HI, SU,
        "median window, windows that re-filled the context left out"},
    [TB_M_FIRST_WINDOW_TOK_PER_S] = {"first_window_tok_per_s", "tok/s", HI, SU, "the first window"},
    [TB_M_LAST_WINDOW_TOK_PER_S] = {"last_window_tok_per_s", "tok/s", HI, SU,
        "the last full window"},
    [TB_M_STEADY_WINDOW_TOK_PER_S] = {"steady_window_tok_per_s", "tok/s", HI, SU,
        "median of the clean windows without the first and the last"},
    [TB_M_STABILITY_PCT] = {"stability_pct", "%", HI, SU,
        "100 x worst / best clean window (windows that re-filled the context left out); once the "
        "context has filled, among windows of matched mean depth (bins of ctx / 8), the lowest bin"},
    [TB_M_CONTEXT_FULL_EVENTS] = {"context_full_events", "count", NO, SU,
        "times the context filled and was shifted, slid or reset"},
    [TB_M_REFILL_MS] = {"refill_ms", "ms", NO, SU,
        "harness time re-filling the context after it filled (outside every window's rate)"},
    [TB_M_BYTES_PER_TOKEN] = {"bytes_per_token", "B", NO, BW,
        "bytes read per token: decode at the test's mean depth (tb_model_bytes_per_token), prefill "
        "the weights over the prompt"},
    [TB_M_ACHIEVED_GBPS] = {"achieved_gbps", "GB/s", HI, BW, "tok/s x bytes_per_token"},
    [TB_M_BW_BEFORE_GBPS] = {"bw_before_gbps", "GB/s", NO, TB_MK_ALL,
        "read-bandwidth probe just before the repetition"},
    [TB_M_BW_AFTER_GBPS] = {"bw_after_gbps", "GB/s", NO, TB_MK_ALL,
        "read-bandwidth probe just after the repetition"},
    [TB_M_ROOFLINE_GBPS] = {"roofline_gbps", "GB/s", NO, BW,
        "the repetition's roofline: the higher of its two probes"},
    [TB_M_ROOFLINE_PCT] = {"roofline_pct", "%", HI, BW, "achieved_gbps / roofline_gbps"},
    [TB_M_CPU_GHZ_BEFORE] = {"cpu_ghz_before", "GHz", NO, TB_MK_ALL,
        "slowest run thread's effective core clock just before the repetition (tb_cpu_probe)"},
    [TB_M_CPU_GHZ_AFTER] = {"cpu_ghz_after", "GHz", NO, TB_MK_ALL, "the same just after it"},
    [TB_M_VEC_GOPS_BEFORE] = {"vec_gops_before", "op/ns", NO, TB_MK_ALL,
        "slowest run thread's vector throughput just before the repetition (tb_cpu_probe_vec)"},
    [TB_M_VEC_GOPS_AFTER] = {"vec_gops_after", "op/ns", NO, TB_MK_ALL, "the same just after it"},
    [TB_M_STEAL_PCT] = {"steal_pct", "%", LO, TB_MK_ALL,
        "share of the machine's CPU time a hypervisor stole during the repetition (/proc/stat)"},
    [TB_M_PEAK_RSS_BYTES] = {"peak_rss_bytes", "B", LO, TB_MK_ALL, "peak resident set (VmHWM)"},
    [TB_M_SESSION_BYTES] = {"session_bytes", "B", LO, TB_MK_ALL,
        "KV cache and scratch of the session (tb_session_memory_bytes)"},
    [TB_M_ENERGY_J_PER_TOK] = {"energy_j_per_tok", "J/tok", LO, TB_MK_ALL & ~TT,
        "package energy per token where RAPL is readable (else in sensor_absent)"},
    [TB_M_PPL] = {"ppl", "ppl", LO, QU, "perplexity of the test model on the scored tokens: e^mean(-ln p(next))"},
    [TB_M_PPL_UNC] = {"ppl_unc", "ppl", NO, QU, "its uncertainty: ppl x standard error of mean(-ln p)"},
    [TB_M_PPL_BASE] = {"ppl_base", "ppl", NO, QU, "perplexity of the reference on the same tokens"},
    [TB_M_PPL_RATIO] = {"ppl_ratio", "x", LO, QU, "ppl / ppl_base: e^mean(ln p_ref(next) - ln p_test(next))"},
    [TB_M_KLD_MEAN] = {"kld_mean", "nats", LO, QU,
        "mean KL divergence of the test model's next-token distribution from the reference's (top-K form)"},
    [TB_M_KLD_UNC] = {"kld_unc", "nats", NO, QU, "standard error of kld_mean"},
    [TB_M_KLD_MEDIAN] = {"kld_median", "nats", LO, QU, "median per-token KL divergence"},
    [TB_M_KLD_P99] = {"kld_p99", "nats", LO, QU, "99th percentile per-token KL divergence"},
    [TB_M_KLD_MAX] = {"kld_max", "nats", LO, QU, "largest per-token KL divergence"},
    [TB_M_SAME_TOP_PCT] = {"same_top_pct", "%", HI, QU,
        "scored tokens whose most likely next token is the reference's"},
    [TB_M_DP_RMS] = {"dp_rms", "%", LO, QU,
        "RMS of dp = p_test(next) - p_ref(next), in percentage points"},
    [TB_M_HEAD_ROWS_PER_TOKEN] = {"head_rows_per_token", "rows", LO, QU,
        "output-head rows the test model multiplied per scored token (the vocabulary for the exact head)"},
    [TB_M_SCORED_TOKENS] = {"scored_tokens", "tok", NO, QU, "tokens scored: chunks x (ctx - 1 - ctx/2)"},
};

static_assert(sizeof tb_metrics / sizeof tb_metrics[0] == TB_M_COUNT, "one row per metric");

const tb_metric_def_t *tb_metric_find(const char *name) {
    for (int i = 0; i < TB_M_COUNT; i++)
        if (tb_metrics[i].name && !strcmp(tb_metrics[i].name, name)) return &tb_metrics[i];
    return NULL;
}

void tb_metrics_markdown(FILE *out) {
    static const char *const kind[] = {"prefill", "decode", "ttft", "generate", "sustained", "quality"};
    fprintf(out, "| metric | unit | better | kinds | what |\n|---|---|---|---|---|\n");
    for (int i = 0; i < TB_M_COUNT; i++) {
        const tb_metric_def_t *d = &tb_metrics[i];
        fprintf(out, "| `%s` | %s | %s | ", d->name, d->unit,
                d->better == TB_BETTER_HIGHER ? "higher" : d->better == TB_BETTER_LOWER ? "lower" : "-");
        if (d->kinds == TB_MK_ALL) fprintf(out, "all");
        else
            for (int k = 0, first = 1; k < 6; k++)
                if (d->kinds & (1u << k)) { fprintf(out, "%s%s", first ? "" : ", ", kind[k]); first = 0; }
        fprintf(out, " | %s |\n", d->help);
    }
}
