#!/usr/bin/env bash
# tools/ab.sh — two builds of ternbench on the same benchmark, interleaved:
# the A/B half of a kernel change's regression check. bench compares files
# inside one process (bench -m a -m b); two builds cannot share a process,
# so this runs them in turns, PAIRS times, each run `BIN bench ARGS --json`,
# the order alternating A B, B A, A B, ... so that drift charges neither
# side, and appends every object, tagged with its side, pair and start
# time, to OUT. Summarize with tools/ab_summary.py OUT.
#
#   tools/ab.sh OUT.jsonl PAIRS A_BIN B_BIN [BENCH_ARGS...]
#   e.g. tools/ab.sh ab.jsonl 10 ../main/build/bench/ternbench build/bench/ternbench \
#          -m model.gguf -t 2 -p 0 -n 64 -r 3
#
# Each side's first object also records the binary (path, size and sha256),
# so a result names the builds it compared. Keep each run short (-r 3..5)
# and PAIRS high: the machine's state changes between runs, and the
# summary compares only pairs whose runs were in one state. Run nothing
# else meanwhile.
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: tools/ab.sh OUT.jsonl PAIRS A_BIN B_BIN [BENCH_ARGS...]" >&2
  exit 2
fi
out=$(realpath -m "$1") n=$2 a=$(realpath -m "$3") b=$(realpath -m "$4")
shift 4
case $n in ''|*[!0-9]*|0) echo "ab: PAIRS must be a positive number, not '$n'" >&2; exit 2;; esac
for bin in "$a" "$b"; do
  [ -x "$bin" ] || { echo "ab: $bin is not an executable" >&2; exit 2; }
done
for x in "$@"; do
  [ "$x" != --json ] || { echo "ab: leave --json out of BENCH_ARGS (ab adds it)" >&2; exit 2; }
done
# side SIDE BIN PAIR: one run of BIN on the bench arguments, its objects tagged; the binary's
# identity on the first object of the side's first run (pair 1)
args=("$@")
tmp=""
trap 'rm -f "$tmp" "$tmp.err" "$tmp.tag"' EXIT   # a stopped run leaves OUT with whole runs only
side() {
  local s=$1 bin=$2 p=$3 at
  at=$(date -u +%H:%M:%S)
  tmp=$(mktemp)
  if ! "$bin" bench "${args[@]}" --json > "$tmp" 2> "$tmp.err"; then
    echo "ab: $bin bench failed in pair $p (side $s):" >&2
    cat "$tmp.err" >&2
    exit 1
  fi
  local id=()
  [ "$p" != 1 ] || id=("$bin" "$(stat -c %s "$bin")" "$(sha256sum "$bin" | cut -d' ' -f1)")
  # tagged into $tmp.tag first, so that OUT only ever gains whole runs
  python3 - "$tmp" "$s" "$p" "$at" "${id[@]}" > "$tmp.tag" <<'PY' || exit 1
import json, sys
path, side, pair, at, *bin = sys.argv[1:]
for ln, line in enumerate(open(path), 1):
    if not line.strip():
        continue
    try:
        o = json.loads(line)
    except ValueError as e:
        sys.exit(f"ab: line {ln} of side {side}'s bench output in pair {pair} is not JSON: {e}")
    tag = {"ab": side, "pair": int(pair), "at": at}
    if bin:
        tag.update(bin=bin[0], bin_bytes=int(bin[1]), bin_sha256=bin[2])
        bin = []
    print(json.dumps({**tag, **o}))
PY
  cat "$tmp.tag" >> "$out"
  rm -f "$tmp" "$tmp.err" "$tmp.tag"
}
for p in $(seq 1 "$n"); do
  if [ $((p % 2)) -eq 1 ]; then
    side a "$a" "$p"; side b "$b" "$p"
  else
    side b "$b" "$p"; side a "$a" "$p"
  fi
  echo "ab: pair $p of $n done" >&2
done
