#!/usr/bin/env bash
# tools/main.sh — the main job: install, build, run the default scenario on a
# synthesized model (results into results/ternbench.db), write a report.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
./build/bench/ternbench run scenarios/quick.ini --db results/ternbench.db
./build/bench/ternbench report --db results/ternbench.db --last 1 --out report/out
echo "main: report written to $(pwd)/report/out/report.html"
