#!/bin/sh
# neon_cross.sh SRC_ROOT WORK_DIR CC QEMU — cross-compile the NEON tier with the
# ref quant sources and tests/kernels/neon_main.c for aarch64 (static), then
# run it under qemu-user, twice: on a Cortex-A53 (ARMv8.0, no dotprod: the
# baseline variant, and proof that no SDOT leaks into it) and on qemu's
# "max" CPU (baseline, SDOT and SMMLA variants; tier_i8mm.c compiled on its
# own with +i8mm, as kernels/meson.build does). Exit 77 (meson: skipped) when a
# tool is missing.
# -ffp-contract=off as in the project arguments (meson.build): aarch64 gcc would
# otherwise fuse the ref quantizers' x * id + 1.5 * 2^23 into one fmadd and
# change their rounding (the ref must be the same function on every host).
# UBSan in trap mode (no runtime library needed for a static binary): any
# undefined behaviour (overflow, bad shift, misaligned access) stops the run.
set -eu
src=$1; work=$2; cc=$3; qemu=$4
command -v "$cc" >/dev/null 2>&1 || { echo "no $cc: skipped"; exit 77; }
command -v "$qemu" >/dev/null 2>&1 || { echo "no $qemu: skipped"; exit 77; }
mkdir -p "$work"
tmp=$(mktemp -d "$work/neon.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
flags="-std=gnu11 -O2 -static -D_GNU_SOURCE -fno-strict-aliasing -ffp-contract=off -fsanitize=undefined -fsanitize-undefined-trap-on-error -Wall -Wextra -I $src/engine -I $src/engine/include"
# shellcheck disable=SC2086
"$cc" $flags -march=armv8.2-a+dotprod+i8mm -c "$src/engine/kernels/tier_i8mm.c" -o "$tmp/tier_i8mm.o"
# shellcheck disable=SC2086
"$cc" $flags \
    "$src"/engine/quant/*.c "$src/engine/util/error.c" \
    "$src/engine/kernels/tier_ref.c" "$src/engine/kernels/tier_neon.c" "$tmp/tier_i8mm.o" \
    "$src/tests/kernels/neon_main.c" -lm -o "$tmp/neon_test"
"$qemu" -cpu cortex-a53 "$tmp/neon_test"
"$qemu" -cpu max "$tmp/neon_test"
