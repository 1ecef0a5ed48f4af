#!/usr/bin/env bash
# tools/setup.sh — install the Debian packages ternbench needs (only those
# missing) and configure+build into build/ (release) — and, with --asan,
# build-asan/ (AddressSanitizer + UndefinedBehaviorSanitizer).
# Sourced by tools/main.sh and tools/test.sh; safe to run on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential meson ninja-build pkg-config libcpuid-dev libsqlite3-dev
      libcmocka-dev libinih-dev libpcre2-dev gnuplot-nox sqlite3 libxml2-utils
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user python3 valgrind)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_one() {  # dir, extra meson args...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir" >/dev/null
}

build_one build
if [ "${1:-}" = "--asan" ]; then
  build_one build-asan -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false
fi
echo "setup: built build/bench/ternbench"
