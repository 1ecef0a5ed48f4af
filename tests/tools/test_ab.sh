#!/usr/bin/env bash
# test_ab.sh — tools/ab_summary.py on a fixture whose every figure is worked
# out by hand below (tests/tools/ab.jsonl), then tools/ab.sh end to end: the
# build's own ternbench as both sides on a tiny synthesized model (the
# order of the runs, the tags, the binaries' identity; no timing), and its
# refusals.
set -euo pipefail
src=${TB_SOURCE_ROOT:?} bld=${TB_BUILD_ROOT:?}
B=$bld/bench/ternbench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(python3 "$src/tools/ab_summary.py" "$src/tests/tools/ab.jsonl" 2> "$tmp/err")
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
# row FILE STATE WANT: the row of FILE tg64 in STATE must read WANT (word by word, after the state)
row() {
  local l w
  l=$(grep -E "^$1 +tg64 +$2 " <<<"$out") || fail "no $1 $2 row"
  read -r -a w <<<"$l"
  [ "${w[*]:3}" = "$3" ] || fail "row $1 $2: ${w[*]:3}"
}
grep -qx "a: /x/a (sha256 aaaaaaaaaaaa)" <<<"$out" || fail "side a's binary"
grep -qx "b: /x/b (sha256 bbbbbbbbbbbb)" <<<"$out" || fail "side b's binary"
# pairs (b/a tok/s; a %, b %): 1 110/100 low (90, 95); 2 90/100 high (80, 72); 3 105/100 high
# (84, 88); 4 a low, b high -> mixed 1.2 (91, 85); 5 100/100 high, a tie (86, 86); 6 has no b.
# low: 1.1, q25 = q75 = 1.1, 1 faster, sign test n 1 k 1 -> 2 * 1/2 = 1
row m low "1 1.100 1.100 1.100 1 1.000 90.0 95.0"
# high: 0.9, 1.05, 1.0 -> median 1.000; q25 0.9 + 0.5 * 0.1 = 0.950, q75 1.0 + 0.5 * 0.05 =
# 1.025; 1 faster; the tie left out: n 2, k 1 -> 2 * 3/4 capped at 1; a % 80 84 86 -> 84, b 72 88 86 -> 86
row m high "3 1.000 0.950 1.025 1 1.000 84.0 86.0"
row m mixed "1 1.200 1.200 1.200 1 1.000 91.0 85.0"
# all: 0.9 1.0 1.05 1.1 1.2 -> 1.050, q25 1.000, q75 1.100; 3 faster of 4 non-ties ->
# 2 * (1 + 4) / 16 = 0.625; a % 90 80 84 91 86 -> 86, b 95 72 88 85 86 -> 86
row m all "5 1.050 1.000 1.100 3 0.625 86.0 86.0"
# the file named twice in pair 1 is m#2: 50 / 100 low
row "m#2" low "1 0.500 0.500 0.500 0 1.000 70.0 35.0"
if grep -qE "^m#2 +tg64 +high" <<<"$out"; then fail "a high row for m#2, which has one low pair"; fi
grep -qx "ab_summary: pair 6: m tg64 has no side b (skipped)" "$tmp/err" || fail "no note for pair 6: $(cat "$tmp/err")"
# --split 29 puts the 30 GB/s runs in the high state: pairs 1 and 4 join it
out=$(python3 "$src/tools/ab_summary.py" --split 29 "$src/tests/tools/ab.jsonl" 2>/dev/null)
row m high "5 1.050 1.000 1.100 3 0.625 86.0 86.0"
if grep -qE "^m +tg64 +(low|mixed) " <<<"$out"; then fail "--split 29 left low or mixed rows"; fi
# bad input names the file and line, exit 1
printf '{"ab": "a", "pair": 1}\nnot json\n' > "$tmp/bad.jsonl"
if msg=$(python3 "$src/tools/ab_summary.py" "$tmp/bad.jsonl" 2>&1); then fail "bad input accepted"; fi
grep -q "$tmp/bad.jsonl:1: no model, test, tokens_per_s, roofline_pct, rep_probe_gbps" <<<"$msg" ||
  fail "missing fields message: $msg"
tail -1 "$tmp/bad.jsonl" > "$tmp/bad2.jsonl"
if msg=$(python3 "$src/tools/ab_summary.py" "$tmp/bad2.jsonl" 2>&1); then fail "a non-JSON line accepted"; fi
grep -q "$tmp/bad2.jsonl:1: not a JSON object" <<<"$msg" || fail "non-JSON message: $msg"
# a file that cannot be read is named, exit 1 (no traceback); undecodable bytes are a bad line
if msg=$(python3 "$src/tools/ab_summary.py" "$tmp/missing.jsonl" 2>&1); then fail "a missing file accepted"; fi
grep -qx "$tmp/missing.jsonl: cannot read: No such file or directory" <<<"$msg" || fail "missing file message: $msg"
printf '\xff\xfe\n' > "$tmp/bin.jsonl"
if msg=$(python3 "$src/tools/ab_summary.py" "$tmp/bin.jsonl" 2>&1); then fail "binary input accepted"; fi
grep -q "$tmp/bin.jsonl:1: not a JSON object" <<<"$msg" || fail "binary input message: $msg"
sed 's/"ab": "b"/"ab": "c"/' "$src/tests/tools/ab.jsonl" > "$tmp/bad3.jsonl"
if msg=$(python3 "$src/tools/ab_summary.py" "$tmp/bad3.jsonl" 2>&1); then fail "side c accepted"; fi
grep -q "bad3.jsonl:3: side \"c\" is neither a nor b" <<<"$msg" || fail "side message: $msg"

# ---- tools/ab.sh end to end ----
"$B" model synth --preset llama-tiny --out "$tmp/t.gguf" --quiet
ab() { bash "$src/tools/ab.sh" "$@"; }
ab "$tmp/ab.jsonl" 2 "$B" "$B" -m "$tmp/t.gguf" -t 1 -p 8 -n 4 -r 2 2> "$tmp/ab.err" || {
  cat "$tmp/ab.err"; fail "ab.sh failed"; }
# 2 pairs x 2 sides x (pp8, tg4), the order A B then B A, each run's two objects together
got=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    print(o["pair"], o["ab"], o["test"], "bin" in o)' "$tmp/ab.jsonl" | tr '\n' ,)
want="1 a pp8 True,1 a tg4 False,1 b pp8 True,1 b tg4 False,2 b pp8 False,2 b tg4 False,2 a pp8 False,2 a tg4 False,"
[ "$got" = "$want" ] || fail "ab.sh objects: $got"
sha=$(sha256sum "$B" | cut -d' ' -f1)
[ "$(grep -c "\"bin_sha256\": \"$sha\"" "$tmp/ab.jsonl")" = 2 ] || fail "the binary's sha256 on both sides' first objects"
out=$(python3 "$src/tools/ab_summary.py" "$tmp/ab.jsonl")
grep -qE "^t +tg4 +all +2 " <<<"$out" || fail "summary of ab.sh's output: no tg4 row over 2 pairs"
grep -qE "^t +pp8 +all +2 " <<<"$out" || fail "summary of ab.sh's output: no pp8 row over 2 pairs"
# refusals: exit 2 before running anything, nothing appended
for bad in "0 $B $B" "x $B $B" "1 $tmp/none $B"; do
  # shellcheck disable=SC2086
  if ab "$tmp/r.jsonl" $bad -m "$tmp/t.gguf" 2>/dev/null; then fail "ab.sh accepted $bad"; fi
done
if ab "$tmp/r.jsonl" 1 "$B" "$B" -m "$tmp/t.gguf" --json 2>/dev/null; then fail "ab.sh accepted --json"; fi
[ ! -e "$tmp/r.jsonl" ] || fail "a refused ab.sh wrote its output"
# a failing run (no such model) stops with the pair and side named, exit 1, keeping what came before
cp "$tmp/ab.jsonl" "$tmp/keep.jsonl"
if ab "$tmp/keep.jsonl" 1 "$B" "$B" -m "$tmp/none.gguf" 2> "$tmp/e"; then fail "a failing bench passed"; fi
grep -q "bench failed in pair 1 (side a)" "$tmp/e" || fail "failure message: $(cat "$tmp/e")"
cmp -s "$tmp/keep.jsonl" "$tmp/ab.jsonl" || fail "a failed run changed the objects before it"
# a run whose output is not all JSON (a stand-in binary) stops likewise, and OUT gains none of it
printf '#!/bin/sh\necho "{\\"test\\": \\"tg4\\"}"\necho garbage\n' > "$tmp/fake"
chmod +x "$tmp/fake"
if ab "$tmp/keep.jsonl" 1 "$tmp/fake" "$B" -m "$tmp/t.gguf" 2> "$tmp/e"; then fail "garbage output passed"; fi
grep -q "line 2 of side a's bench output in pair 1 is not JSON" "$tmp/e" || fail "garbage message: $(cat "$tmp/e")"
cmp -s "$tmp/keep.jsonl" "$tmp/ab.jsonl" || fail "a run with garbage output changed OUT"
echo "ab tools: ok"
