#!/usr/bin/env bash
# tools/test.sh — install, build, and run the whole test suite twice: in the
# release build and under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --asan
echo "== tests: release build =="
meson test -C build --print-errorlogs --num-processes 2
echo "== instruction counts against tests/gate/count-baseline.txt (callgrind, 10-20 s) =="
build/bench/ternbench count --baseline tests/gate/count-baseline.txt
echo "== tests: ASan + UBSan build =="
meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 4
