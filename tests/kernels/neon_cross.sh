#!/bin/sh
# neon_cross.sh SRC_ROOT WORK_DIR CC QEMU — cross-compile the NEON tier with the
# ref quant sources and tests/kernels/neon_main.c for aarch64 (static), then
# run it under qemu-user. Exit 77 (meson: skipped) when a tool is missing.
set -eu
src=$1; work=$2; cc=$3; qemu=$4
command -v "$cc" >/dev/null 2>&1 || { echo "no $cc: skipped"; exit 77; }
command -v "$qemu" >/dev/null 2>&1 || { echo "no $qemu: skipped"; exit 77; }
mkdir -p "$work"
tmp=$(mktemp -d "$work/neon.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$cc" -std=gnu11 -O2 -static -D_GNU_SOURCE -fno-strict-aliasing -Wall -Wextra \
    -I "$src/engine" -I "$src/engine/include" \
    "$src"/engine/quant/*.c "$src/engine/util/error.c" \
    "$src/engine/kernels/tier_ref.c" "$src/engine/kernels/tier_neon.c" \
    "$src/tests/kernels/neon_main.c" -lm -o "$tmp/neon_test"
"$qemu" -cpu max "$tmp/neon_test"
