#!/usr/bin/env bash
# test_rounds_summary.sh — tools/rounds_summary.py on a fixture of three
# rounds (two under the 42 GB/s split, one over), bench (rep by rep and token
# by token) and kernels --ceiling objects: every figure below is worked out by hand from tests/tools/rounds.jsonl.
set -euo pipefail
src=${TB_SOURCE_ROOT:?}
out=$(python3 "$src/tools/rounds_summary.py" "$src/tests/tools/rounds.jsonl")
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
line() { grep -E "^$1 +tg64 " <<<"$out" || fail "no row for $1"; }
# row PATTERN PREFIX WANT: the line of $out matching ^PATTERN, PREFIX cut off, must read WANT
# (word by word)
row() {
  local l w
  l=$(grep -E "^$1" <<<"$out") || fail "no row matching $1"
  read -r -a w <<<"${l#"$2"}"
  [ "${w[*]}" = "$3" ] || fail "row $1: ${w[*]}"
}
# a: all 90/94/70 -> median 90.0, range 70.0-94.0; low 90,94 -> 92.0 (2); high 70.0 (1);
#    p50 low 95,97 -> 96.0, high 72.0; stall 2,4,9 -> 4.0; tok/s low 102.0, high 130.0
read -r -a a <<<"$(line a)"
[ "${a[*]}" = "a tg64 3 90.0 70.0-94.0 92.0 2 70.0 1 96.0 72.0 4.0 102.0 130.0" ] || fail "row a: ${a[*]}"
read -r -a b <<<"$(line b)"
[ "${b[*]}" = "b tg64 3 80.0 60.0-82.0 81.0 2 60.0 1 85.5 61.0 3.0 51.0 70.0" ] || fail "row b: ${b[*]}"
# b / a: ratios 0.5, 0.25, 1.0 -> median 0.500, range 0.250-1.000, b faster in 3 of 15;
# a / b: 2, 4, 1 -> 2.000 (1.000-4.000), a faster in 12 of 15
grep -qx "tg64 b / a: 0.500 (0.250-1.000, 3 rounds), b faster in 3 of 15 repetitions" <<<"$out" || fail "b / a"
grep -qx "tg64 a / b: 2.000 (1.000-4.000, 3 rounds), a faster in 12 of 15 repetitions" <<<"$out" || fail "a / b"
# per repetition (a only lists them; bytes 3e8, so pct = 100 * tok/s * 0.3 / max(probes)):
#   round 1: 100 @ 30/30 low 100 %; 110 @ 30/60 mixed 55 %; 120 @ 60/60 high 60 %
#   round 3: 200 @ 60/60 high 100 %; 190 @ 60/58 (3 % apart) 95 %, but its CPU probes 2.4/1.5 GHz
#   put its slower one under 85 % of the object's best 2.5: slowed (2.4 >= 2.125 keeps rep 1)
#   -> low 100.0 (1), high 60,100 -> 80.0 (2), mixed 55.0 (1), slowed 95.0 (1);
#   tok/s low 100.0, high 120,200 -> 160.0
row "per repetition: a +tg64 " "per repetition: " "a tg64 5 100.0 1 80.0 2 55.0 1 95.0 1 100.0 160.0"
if grep -qE "^per repetition: b " <<<"$out"; then fail "a per-repetition row for b, which lists no repetitions"; fi
# token turns (interleave "token", rounds 1 and 3): their tests stay out of rows a and b above
# (roofline 1 % would move them); b / a per repetition by the baseline a's probes of the same
# round: round 1 0.5 low, 0.6 mixed, 0.55 high; round 3 0.52, 0.58 high -> low 0.500 (1),
# high 0.52, 0.55, 0.58 -> 0.550 (3), mixed 0.600 (1); all: median of 0.55, 0.56 -> 0.555 (2)
row "token pairs: b / a +tg64 " "token pairs: " "b / a tg64 0.500 1 0.550 3 0.600 1 0.555 2"
# and inverted: 1 / 0.5, 1 / 0.55, 1 / 0.6, 1 / 0.555
row "token pairs: a / b +tg64 " "token pairs: " "a / b tg64 2.000 1 1.818 3 1.667 1 1.802 2"
if grep -qE "^tg64 .*9\.000" <<<"$out"; then fail "a token-turns comparison among the rep-paired ones"; fi
# kernels --ceiling objects (format x1): the best tier only (avx512; generic's 999 GB/s must not
# count), at 2 threads: low rounds 1, 2 -> GB/s 56, 54 -> 55.0, probe 35, 36 -> 35.5, % 160, 150 ->
# 155.0 (2); high round 3 -> 54.0, 60.0, 90.0 (1); 1 thread 29, 30, 28 -> 29.0
row "ceiling: x1 " "ceiling: " "x1 avx512 2 55.0 35.5 155.0 2 54.0 60.0 90.0 1 29.0"
# --split 35.5 moves round 2 (36 GB/s) to the high state: a low 90.0 (1), high 82.0 (2); the
# ceiling's low 56.0 35.0 160.0 (1), high 54.0, probes 36, 60 -> 48.0, % 150, 90 -> 120.0 (2)
out=$(python3 "$src/tools/rounds_summary.py" --split 35.5 "$src/tests/tools/rounds.jsonl")
read -r -a a <<<"$(line a)"
[ "${a[5]} ${a[6]} ${a[7]} ${a[8]}" = "90.0 1 82.0 2" ] || fail "--split: ${a[*]}"
row "ceiling: x1 " "ceiling: " "x1 avx512 2 56.0 35.0 160.0 1 54.0 48.0 120.0 2 29.0"
# a line that is not JSON names the file and line, exit 1
bad=$(mktemp)
trap 'rm -f "$bad"' EXIT
head -1 "$src/tests/tools/rounds.jsonl" > "$bad"
printf 'not json\n' >> "$bad"
if msg=$(python3 "$src/tools/rounds_summary.py" "$bad" 2>&1); then fail "bad input accepted"; fi
grep -q "$bad:2: not a JSON object" <<<"$msg" || fail "bad input message: $msg"
# a file that cannot be read is named, exit 1 (no traceback)
if msg=$(python3 "$src/tools/rounds_summary.py" "$bad.missing" 2>&1); then fail "a missing file accepted"; fi
grep -qx "$bad.missing: cannot read: No such file or directory" <<<"$msg" || fail "missing file message: $msg"
# an object without the figures it needs, likewise
printf '{"test": "tg64", "model": "x"}\n' > "$bad"
if msg=$(python3 "$src/tools/rounds_summary.py" "$bad" 2>&1); then fail "incomplete object accepted"; fi
grep -q "$bad:1: no roofline_pct, bandwidth_gbps, tokens_per_s" <<<"$msg" || fail "incomplete object message: $msg"
printf '{"compare": "tg64", "model": "b", "baseline": "a", "ratio_median": 1, "faster_reps": 1, "reps": 1, "interleave": "token"}\n' > "$bad"
if msg=$(python3 "$src/tools/rounds_summary.py" "$bad" 2>&1); then fail "incomplete token comparison accepted"; fi
grep -q "$bad:1: no token_ratio_median, rep_token_ratio, round, at in a bench --json object" <<<"$msg" ||
  fail "incomplete token comparison message: $msg"
printf '{"kind": "ceiling", "format": "x1", "isa": "avx512", "threads": 2}\n' > "$bad"
if msg=$(python3 "$src/tools/rounds_summary.py" "$bad" 2>&1); then fail "incomplete ceiling object accepted"; fi
grep -q "$bad:1: no gbps, bandwidth_gbps, ceiling_pct in a kernels --ceiling --json object" <<<"$msg" ||
  fail "incomplete ceiling object message: $msg"
echo "rounds_summary: ok"
