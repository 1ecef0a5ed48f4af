#!/bin/sh
# tools/fuzz.sh — fuzz the GGUF reader, the tokenizer and the model loader
# with libFuzzer for a bounded time (see docs/hardening.md).
#
#   tools/fuzz.sh [SECONDS] [RUNS]     defaults: 600 seconds, no run limit
#
# Builds build-fuzz/ (clang, every file instrumented for coverage, ASan +
# UBSan that abort on the first report), writes the seed corpus with
# fuzz_seeds into build-fuzz/fuzz-corpus/ (kept between runs, so a later
# run continues from what earlier ones found), and runs fuzz_gguf until
# SECONDS have passed or RUNS inputs were executed. Exit 0: no crash, leak
# or sanitizer report; otherwise libFuzzer's status, with the crashing
# input saved as build-fuzz/crash-* (replay: build-fuzz/tests/io/fuzz_gguf
# FILE). Environment: TB_FUZZ_BUILD (build directory), TB_FUZZ_JOBS
# (parallel fuzzing processes, default 1).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
runs=${2:--1}
build=${TB_FUZZ_BUILD:-$root/build-fuzz}
jobs=${TB_FUZZ_JOBS:-1}

# clang and its libFuzzer runtime (Debian: clang, libclang-rt-14-dev)
if ! command -v clang >/dev/null 2>&1 || \
   ! ls "$(clang -print-resource-dir 2>/dev/null)"/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
    echo "fuzz.sh: installing clang and libclang-rt-14-dev" >&2
    if [ "$(id -u)" -eq 0 ]; then apt-get install -y clang libclang-rt-14-dev
    else sudo apt-get install -y clang libclang-rt-14-dev; fi
fi

if [ ! -f "$build/build.ninja" ]; then
    CC=clang meson setup "$build" "$root" -Dbuildtype=debugoptimized \
        -Db_sanitize=address,undefined -Db_lundef=false \
        -Dc_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined' >/dev/null
fi
ninja -C "$build" tests/io/fuzz_gguf tests/io/fuzz_seeds >/dev/null

corpus=$build/fuzz-corpus
mkdir -p "$corpus"
"$build/tests/io/fuzz_seeds" "$corpus"

cd "$build"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
set -- -max_total_time="$secs" -runs="$runs" -max_len=65536 -rss_limit_mb=2048 \
       -timeout=20 -print_final_stats=1 "$corpus"
if [ "$jobs" -gt 1 ]; then
    exec ./tests/io/fuzz_gguf -jobs="$jobs" -workers="$jobs" "$@"
fi
exec ./tests/io/fuzz_gguf "$@"
