/*
 * scenario_keys.c — THE key table: every scenario key, declared once.
 *
 * Parsing, validation, `scenario explain`, `scenario keys` (the README) and
 * the normalized text all read this table; add a key here and an id in
 * scenario.h, nowhere else.
 */
#include "scenario.h"

static const char *const sec_names[TB_SEC_COUNT] = {
    "model", "engine", "protocol", "prefill", "decode", "ttft", "generate", "sustained", "claim",
    "quality",
};

const char *tb_sec_kind_name(tb_sec_kind_t k) {
    return (unsigned)k < TB_SEC_COUNT ? sec_names[k] : "?";
}

#define BIG 1e15

const tb_key_def_t tb_scenario_keys[K_COUNT] = {
    /* ---- [model] ---- */
    [K_MODEL_PATH] = {TB_SEC_MODEL, "path", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "GGUF model file (relative to the scenario file). Exactly one of path and synth."},
    [K_MODEL_SYNTH] = {TB_SEC_MODEL, "synth", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "Preset (maple-preview, maple-tiny, llama-tiny, moe-tiny, llama-1b, ...): synthesize this preset once into the model cache and reuse it afterwards."},
    [K_MODEL_TYPE] = {TB_SEC_MODEL, "type", TB_KT_STRING, TB_UNIT_NONE, "default", 0, 0, NULL,
        "Projection/expert weight type: default (synth: the preset's own; path: the file as it is), "
        "tq2_0, tq1_0, q4_0, q4_k, q8_0, f16, ... With path the file is quantized into the cache "
        "(`model quantize`, once). A comma-separated list runs the scenario once per type "
        "(one run each)."},
    [K_MODEL_SEED] = {TB_SEC_MODEL, "seed", TB_KT_INT, TB_UNIT_NONE, "1", 0, 4294967295.0, NULL,
        "synth: seed of the synthetic weights."},
    [K_MODEL_VOCAB_FROM] = {TB_SEC_MODEL, "vocab_from", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "synth: GGUF whose tokenizer.* keys are copied (default: built-in byte-level vocab)."},
    [K_MODEL_CACHE_DIR] = {TB_SEC_MODEL, "cache_dir", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "Cache of synthesized and quantized models (default: $TB_CACHE_DIR, else "
        "$XDG_CACHE_HOME/ternbench, else .cache/ next to the scenario file)."},

    /* ---- [engine] ---- */
    [K_ENGINE_THREADS] = {TB_SEC_ENGINE, "threads", TB_KT_INT, TB_UNIT_NONE, "0", 0, 1024, NULL,
        "Worker threads (0: one per online CPU)."},
    [K_ENGINE_ISA] = {TB_SEC_ENGINE, "isa", TB_KT_ENUM, TB_UNIT_NONE, "auto", 0, 0,
        "auto|ref|generic|avx2|avx512|neon|dotprod|i8mm",
        "Cap the kernel tier (auto: the best this CPU supports, or $TB_ISA)."},
    [K_ENGINE_KV_TYPE] = {TB_SEC_ENGINE, "kv_type", TB_KT_ENUM, TB_UNIT_NONE, "f16", 0, 0, "f16|f32",
        "KV cache element type."},
    [K_ENGINE_BATCH] = {TB_SEC_ENGINE, "batch", TB_KT_INT, TB_UNIT_COUNT, "512", 1, 65536, NULL,
        "Maximum tokens per forward call during prefill."},
    [K_ENGINE_CTX] = {TB_SEC_ENGINE, "ctx", TB_KT_INT, TB_UNIT_COUNT, "0", 0, 1048576, NULL,
        "Context size of the session (0: the smallest that fits every test)."},
    [K_ENGINE_WEIGHTS] = {TB_SEC_ENGINE, "weights", TB_KT_ENUM, TB_UNIT_NONE, "copy", 0, 0, "copy|mmap",
        "copy: weights copied (or repacked) into huge-page memory at load; mmap: read from the "
        "file mapping where no repacked layout exists (llama.cpp's default; slower decode)."},
    [K_ENGINE_CPUS] = {TB_SEC_ENGINE, "cpus", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "CPUs to pin the threads to, a list such as 0-3,6 (thread i on entry i mod n); empty: "
        "--cpus / TB_CPUS, else on ARM the fastest cores first, else unpinned. Recorded as the run "
        "tag cpus."},
    [K_ENGINE_HEAD] = {TB_SEC_ENGINE, "head", TB_KT_STRING, TB_UNIT_NONE, "exact", 0, 0, NULL,
        "Output head: exact, or approx:CENTROIDS[:TOPC] (clustered at load, FlashHead; approximate "
        "logits, bytes per token from the rows it read). Recorded as the run tag head."},
    [K_ENGINE_KIND] = {TB_SEC_ENGINE, "kind", TB_KT_STRING, TB_UNIT_NONE, "ternbench", 0, 0, NULL,
        "Engine(s) measured: ternbench, llama.cpp, or both as a list (\"ternbench, llama.cpp\"): "
        "then each model runs as a group of one run per engine on the same file, threads, prompt "
        "lengths, depths and repetitions, taking turns repetition by repetition (order reversed on "
        "odd ones). llama.cpp runs through its llama-bench (prefill and decode tests only)."},
    [K_ENGINE_BINARY] = {TB_SEC_ENGINE, "binary", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "kind llama.cpp: its llama-bench executable (relative to the scenario file); empty: "
        "$TB_LLAMA_BENCH, else llama-bench on PATH. Recorded as the run tag peer.binary."},

    /* ---- [protocol] ---- */
    [K_PROTO_WARMUP] = {TB_SEC_PROTOCOL, "warmup", TB_KT_INT, TB_UNIT_NONE, "1", 0, 100, NULL,
        "Untimed runs of each test before the measured repetitions."},
    [K_PROTO_REPETITIONS] = {TB_SEC_PROTOCOL, "repetitions", TB_KT_INT, TB_UNIT_NONE, "3", 1, 1000, NULL,
        "Measured repetitions of each test."},
    [K_PROTO_COOLDOWN] = {TB_SEC_PROTOCOL, "cooldown", TB_KT_INT, TB_UNIT_MS, "0ms", 0, 3600000, NULL,
        "Pause between repetitions (250ms, 10s, 5m)."},
    [K_PROTO_SEED] = {TB_SEC_PROTOCOL, "seed", TB_KT_INT, TB_UNIT_NONE, "42", 0, 4294967295.0, NULL,
        "Seed of synthetic prompts and of sampling (repetition r uses seed + r)."},
    [K_PROTO_HEADLINE] = {TB_SEC_PROTOCOL, "headline", TB_KT_ENUM, TB_UNIT_NONE, "median", 0, 0,
        "median|mean|min|max", "Statistic over repetitions a run's summary line prints (derived, never stored)."},
    [K_PROTO_RECORD_TOKENS] = {TB_SEC_PROTOCOL, "record_tokens", TB_KT_BOOL, TB_UNIT_NONE, "true", 0, 0, NULL,
        "Record every token's timestamp and text (false: only aggregates; for overhead checks)."},
    [K_PROTO_SENSOR_INTERVAL] = {TB_SEC_PROTOCOL, "sensor_interval", TB_KT_INT, TB_UNIT_MS, "100ms",
        10, 60000, NULL, "Period of the thermal/frequency/energy sampler thread."},
    [K_PROTO_THROTTLE_CHECK] = {TB_SEC_PROTOCOL, "throttle_check", TB_KT_BOOL, TB_UNIT_NONE, "true", 0, 0, NULL,
        "Time a fixed reference workload before, between repetitions and after each test."},
    [K_PROTO_THROTTLE_PCT] = {TB_SEC_PROTOCOL, "throttle_pct", TB_KT_FLOAT, TB_UNIT_PCT, "10%", 1, 100, NULL,
        "Slow-down of the reference workload (or frequency drop) judged as throttling."},
    [K_PROTO_BANDWIDTH_PROBE] = {TB_SEC_PROTOCOL, "bandwidth_probe", TB_KT_INT, TB_UNIT_COUNT, "256m",
        0, 4294967296.0, NULL, "Bytes streamed by the roofline probe just before and just after every "
        "repetition, and around the run (k/m = KiB/MiB; larger than the last-level cache; 0: no probe)."},
    [K_PROTO_INTERLEAVE] = {TB_SEC_PROTOCOL, "interleave", TB_KT_ENUM, TB_UNIT_NONE, "none", 0, 0,
        "none|rep|token", "With several [model] types: none runs them one after another; rep runs them "
        "as one group taking turns inside every repetition (order reversed on odd ones); token also "
        "takes turns token by token inside decode repetitions. One run per type either way."},

    /* ---- [prefill] ---- */
    [K_PREFILL_PROMPT_TOKENS] = {TB_SEC_PREFILL, "prompt_tokens", TB_KT_INT_LIST, TB_UNIT_COUNT, "512",
        1, 1048576, NULL, "Prompt lengths; each is one test (\"pp512\") timed over one batched prefill."},

    /* ---- [decode] ---- */
    [K_DECODE_TOKENS] = {TB_SEC_DECODE, "tokens", TB_KT_INT, TB_UNIT_COUNT, "128", 1, 1048576, NULL,
        "Tokens generated (greedy) per repetition."},
    [K_DECODE_DEPTHS] = {TB_SEC_DECODE, "depths", TB_KT_INT_LIST, TB_UNIT_COUNT, "0", 0, 1048576, NULL,
        "KV depths: the cache is prefilled (untimed) to each depth first (\"tg128@d4096\")."},

    /* ---- [ttft] ---- */
    [K_TTFT_PROMPT_TOKENS] = {TB_SEC_TTFT, "prompt_tokens", TB_KT_INT_LIST, TB_UNIT_COUNT, "512",
        0, 1048576, NULL, "Prompt lengths (0: the whole prompt_file)."},
    [K_TTFT_PROMPT_FILE] = {TB_SEC_TTFT, "prompt_file", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "UTF-8 text used as the prompt, repeated or cut to prompt_tokens (default: synthetic tokens)."},

    /* ---- [generate] ---- */
    [K_GEN_PROMPT_TOKENS] = {TB_SEC_GENERATE, "prompt_tokens", TB_KT_INT_LIST, TB_UNIT_COUNT, "512",
        0, 1048576, NULL, "Prompt lengths (0: the whole prompt_file)."},
    [K_GEN_PROMPT_FILE] = {TB_SEC_GENERATE, "prompt_file", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "UTF-8 text used as the prompt, repeated or cut to prompt_tokens (default: synthetic tokens)."},
    [K_GEN_TOKENS] = {TB_SEC_GENERATE, "tokens", TB_KT_INT, TB_UNIT_COUNT, "128", 1, 1048576, NULL,
        "Tokens generated after the prompt."},
    [K_GEN_TEMP] = {TB_SEC_GENERATE, "temp", TB_KT_FLOAT, TB_UNIT_NONE, "1.0", 0, 100, NULL,
        "Sampling temperature (0: greedy)."},
    [K_GEN_TOP_P] = {TB_SEC_GENERATE, "top_p", TB_KT_FLOAT, TB_UNIT_NONE, "1.0", 0, 1, NULL,
        "Nucleus sampling threshold (1: off)."},
    [K_GEN_TOP_K] = {TB_SEC_GENERATE, "top_k", TB_KT_INT, TB_UNIT_NONE, "0", 0, 1000000, NULL,
        "Keep the k most likely tokens (0: off)."},
    [K_GEN_MIN_P] = {TB_SEC_GENERATE, "min_p", TB_KT_FLOAT, TB_UNIT_NONE, "0", 0, 1, NULL,
        "Drop tokens below min_p times the top probability (0: off)."},
    [K_GEN_STOP_AT_EOS] = {TB_SEC_GENERATE, "stop_at_eos", TB_KT_BOOL, TB_UNIT_NONE, "false", 0, 0, NULL,
        "Stop at an end-of-generation token (false: always generate `tokens`, as benchmarks do)."},

    /* ---- [sustained] ---- */
    [K_SUS_TOKENS] = {TB_SEC_SUSTAINED, "tokens", TB_KT_INT, TB_UNIT_COUNT, "5000", 0, 100000000, NULL,
        "Tokens to generate (0: run for `duration`)."},
    [K_SUS_DURATION] = {TB_SEC_SUSTAINED, "duration", TB_KT_INT, TB_UNIT_MS, "0ms", 0, 86400000, NULL,
        "Generate for this long (0: run for `tokens`; both set: whichever ends first)."},
    [K_SUS_WINDOW] = {TB_SEC_SUSTAINED, "window", TB_KT_INT, TB_UNIT_COUNT, "256", 1, 1048576, NULL,
        "Tokens per measurement window."},
    [K_SUS_ON_FULL] = {TB_SEC_SUSTAINED, "on_full", TB_KT_ENUM, TB_UNIT_NONE, "shift", 0, 0, "shift|slide|reset",
        "At the context limit: shift (the engine drops the older half of the KV cache, timed in the window), "
        "slide (re-prefill the last half, timed apart) or reset (empty it)."},
    [K_SUS_CTX] = {TB_SEC_SUSTAINED, "ctx", TB_KT_INT, TB_UNIT_COUNT, "2k", 16, 1048576, NULL,
        "Context limit of the sustained session."},
    [K_SUS_PROMPT_TOKENS] = {TB_SEC_SUSTAINED, "prompt_tokens", TB_KT_INT, TB_UNIT_COUNT, "16", 1,
        1048576, NULL, "Synthetic prompt before generation starts."},
    [K_SUS_TEMP] = {TB_SEC_SUSTAINED, "temp", TB_KT_FLOAT, TB_UNIT_NONE, "1.0", 0, 100, NULL,
        "Sampling temperature (0: greedy)."},
    [K_SUS_TOP_P] = {TB_SEC_SUSTAINED, "top_p", TB_KT_FLOAT, TB_UNIT_NONE, "1.0", 0, 1, NULL,
        "Nucleus sampling threshold (1: off)."},

    /* ---- [claim] (bench/harness/workload_claim.c; docs/claims.md) ---- */
    [K_CLAIM_DEVICE] = {TB_SEC_CLAIM, "device", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "Device profile ids, comma-separated (`ternbench devices`; `this`: the machine running the "
        "scenario). Required."},
    [K_CLAIM_PRESET] = {TB_SEC_CLAIM, "preset", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "Geometry preset the claim is about (maple-preview, llama-3.1-8b, ...; `ternbench claim "
        "--model`); empty: the scenario's model file."},
    [K_CLAIM_TYPE] = {TB_SEC_CLAIM, "type", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "The preset's weight layout (mlx-maple, tq2_0, q4_k, ...); empty: the preset's own."},
    [K_CLAIM_CTX] = {TB_SEC_CLAIM, "ctx", TB_KT_INT_LIST, TB_UNIT_COUNT, "512, 2048, 8192", 0, 1048576, NULL,
        "Contexts (KV positions while decoding) the claim is evaluated at."},
    [K_CLAIM_HEAD] = {TB_SEC_CLAIM, "head", TB_KT_STRING, TB_UNIT_NONE, "exact, approx", 0, 0, NULL,
        "Output heads, comma-separated: exact, approx[:CENTROIDS[:PROBES]] (approx: FlashHead's "
        "8016:256). Approximate conditions are labelled approximate everywhere."},
    [K_CLAIM_CLAIMED] = {TB_SEC_CLAIM, "claimed", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "Claimed decode speeds in tok/s, comma-separated; each gets a verdict per condition. "
        "Empty: projection only."},
    [K_CLAIM_BACKEND] = {TB_SEC_CLAIM, "backend", TB_KT_ENUM, TB_UNIT_NONE, "any", 0, 0, "any|cpu|gpu|npu",
        "Backend of the claim, for the efficiency basis (`this`: cpu)."},
    [K_CLAIM_RUNTIME] = {TB_SEC_CLAIM, "runtime", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "Runtime of the claim (mlx, llama.cpp, ...), for the efficiency basis; empty: any "
        "(`this`: ternbench)."},
    [K_CLAIM_CALIBRATION] = {TB_SEC_CLAIM, "calibration", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "Calibration table (CSV, docs/claims.md) in place of the shipped one."},
    [K_CLAIM_MEASURE] = {TB_SEC_CLAIM, "measure", TB_KT_BOOL, TB_UNIT_NONE, "false", 0, 0, NULL,
        "Decode the scenario's model on this machine at every ctx (a decode test per ctx, with "
        "[protocol]'s warm-ups and repetitions) and record the measured speed beside the projection "
        "for `this`. Needs device = this and no preset; only the [engine] head is measured."},
    [K_CLAIM_TOKENS] = {TB_SEC_CLAIM, "tokens", TB_KT_INT, TB_UNIT_COUNT, "64", 1, 1048576, NULL,
        "measure: tokens decoded per repetition (\"tg64@d512\")."},

    /* ---- [quality] ---- */
    [K_QUAL_REFERENCE] = {TB_SEC_QUALITY, "reference", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "The reference is the same model in this weight type (f32, f16, ...; synthesized or "
        "quantized into the cache like [model] type; default: the preset's own type or the [model] "
        "path file itself). Exactly one of reference and reference_file."},
    [K_QUAL_REFERENCE_FILE] = {TB_SEC_QUALITY, "reference_file", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "Reference: a GGUF model, or a reference file saved by `ternbench quality --save-ref` "
        "(told apart by its first bytes)."},
    [K_QUAL_TEXT] = {TB_SEC_QUALITY, "text", TB_KT_PATH, TB_UNIT_NONE, "", 0, 0, NULL,
        "UTF-8 text scored (required): tokenized once, cut into chunks of ctx tokens, the second "
        "half of each chunk scored (llama-perplexity's procedure)."},
    [K_QUAL_CTX] = {TB_SEC_QUALITY, "ctx", TB_KT_INT, TB_UNIT_COUNT, "512", 8, 1048576, NULL,
        "Tokens per chunk."},
    [K_QUAL_CHUNKS] = {TB_SEC_QUALITY, "chunks", TB_KT_INT, TB_UNIT_NONE, "0", 0, 1048576, NULL,
        "Chunks scored (0: all that fit in the text; at least 2 must fit)."},
    [K_QUAL_HEAD] = {TB_SEC_QUALITY, "head", TB_KT_STRING, TB_UNIT_NONE, "", 0, 0, NULL,
        "Output head of the test model: exact or approx:CENTROIDS[:TOPC] (empty: [engine] head). "
        "The reference always runs the exact head."},
};
