#!/usr/bin/env bash
# tools/rounds.sh — the decode/prefill target measurements of README "Measured
# here", as rounds: each round runs the four bench commands below (files
# interleaved rep by rep inside each command), a fifth that takes turns token
# by token (bench --interleave token), then the arithmetic ceilings
# of the files' formats (kernels --ceiling: what a compute-bound format can
# reach against the same moment's probe), and appends their --json lines,
# tagged with the round and its UTC start time, to OUT. Summarize with
# tools/rounds_summary.py OUT.
#
#   tools/rounds.sh OUT.jsonl ROUNDS [THREADS] [MODELS_DIR]
#
# OUT and MODELS_DIR are taken from the caller's directory; MODELS_DIR
# (default: the repository's models/) holds the files the README names:
#   llama-1b-{tq2_0,tq1_0,q4_0,q8_0,f16}.gguf  ternbench model synth --preset llama-1b --type T --seed 1
#   llama-1b-{tq2_0,q4_0}-lcpp.gguf            ternbench model quantize llama-1b-f16.gguf OUT --type T
#                                              --embd-type q4_k --output-type q6_k
#   maple-preview.gguf                         ternbench model synth --preset maple-preview --seed 1
# Run nothing else meanwhile: the rounds measure the machine too.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: tools/rounds.sh OUT.jsonl ROUNDS [THREADS] [MODELS_DIR]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "$1") n=$2 t=${3:-2} m=$(realpath -m "${4:-$root/models}")
cd "$root"
B=${TERNBENCH:-build/bench/ternbench}
for f in llama-1b-tq2_0 llama-1b-q4_0 llama-1b-tq2_0-lcpp llama-1b-q4_0-lcpp llama-1b-tq1_0 llama-1b-q8_0 \
         llama-1b-f16 maple-preview; do
  [ -f "$m/$f.gguf" ] || { echo "rounds: $m/$f.gguf is missing (see the header of $0)" >&2; exit 1; }
done
case $n in ''|*[!0-9]*) echo "rounds: ROUNDS must be a positive number, not '$n'" >&2; exit 2;; esac
tag() { sed "s/^{/{\"round\": $1, \"at\": \"$2\", /" >> "$out"; }
for r in $(seq 1 "$n"); do
  at=$(date -u +%H:%M:%S)
  "$B" bench -m "$m/llama-1b-tq2_0.gguf" -m "$m/llama-1b-q4_0.gguf" -t "$t" -p 512 -n 64 -r 5 --json | tag "$r" "$at"
  "$B" bench -m "$m/llama-1b-tq2_0-lcpp.gguf" -m "$m/llama-1b-q4_0-lcpp.gguf" -t "$t" -p 0 -n 64 -r 5 --json | tag "$r" "$at"
  "$B" bench -m "$m/llama-1b-tq1_0.gguf" -m "$m/llama-1b-q8_0.gguf" -m "$m/llama-1b-f16.gguf" -t "$t" -p 0 -n 64 -r 5 \
       --json | tag "$r" "$at"
  "$B" bench -m "$m/maple-preview.gguf" -t "$t" --ctx 512 -p 0 -n 64 -r 5 --json | tag "$r" "$at"
  # the llama.cpp-layout pair again, taking turns token by token: its TQ2_0 / Q4_0 ratio per
  # machine state (the summary keeps these objects out of its per-file tables)
  "$B" bench -m "$m/llama-1b-tq2_0-lcpp.gguf" -m "$m/llama-1b-q4_0-lcpp.gguf" -t "$t" -p 0 -n 64 -r 5 \
       --interleave token --json | tag "$r" "$at"
  for f in tq2_0 tq1_0 q4_0 q8_0 f16; do
    "$B" kernels --ceiling --format "$f" -t "$t" -r 3 --json | tag "$r" "$at"
  done
  echo "rounds: round $r of $n done ($at UTC start)" >&2
done
