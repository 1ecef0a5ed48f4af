#!/usr/bin/env bash
# tools/build-aarch64.sh [--no-install] [BUILD_DIR] — a statically linked
# aarch64 `ternbench` for Android (adb shell, Termux) and Linux boards
# (Raspberry Pi 5), from Debian's cross toolchain and the arm64 multiarch
# -dev packages (static archives), with tools/cross/aarch64-linux-gnu.ini.
#
# Installs what is missing (the arm64 architecture in dpkg, the cross
# compiler, qemu-user, the :arm64 libraries) unless --no-install, then
# configures BUILD_DIR (default build-aarch64/) once and builds it
# incrementally. Leaves:
#   BUILD_DIR/bench/ternbench                 the binary (with symbols)
#   BUILD_DIR/dist/ternbench-aarch64/         what to copy to the device:
#       ternbench (stripped), scenarios/ (with prompts/), devices/ if any
#   BUILD_DIR/dist/ternbench-aarch64.tar.gz   the same folder as one file
# and, where qemu-aarch64 is present, checks that the binary starts.
# Exit status: 0 built; 1 a step failed; 2 usage; 3 (--no-install) a
# needed package is missing (its names are printed).
set -euo pipefail
cd "$(dirname "$0")/.."

install=1
dir=build-aarch64
for a in "$@"; do
  case "$a" in
    --no-install) install=0 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "build-aarch64: unknown option $a" >&2; exit 2 ;;
    *) dir=$a ;;
  esac
done

# Host tools (amd64) and target libraries (arm64). zlib: libsqlite3.a's
# pkg-config file lists -lz for static links.
host_pkgs=(meson ninja-build pkg-config python3 gcc-aarch64-linux-gnu
           libc6-dev-arm64-cross binutils-aarch64-linux-gnu qemu-user)
arm_pkgs=(libsqlite3-dev:arm64 libinih-dev:arm64 libpcre2-dev:arm64 zlib1g-dev:arm64 libjansson-dev:arm64)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in "${host_pkgs[@]}" "${arm_pkgs[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  if [ $install -eq 0 ]; then
    echo "build-aarch64: missing packages: ${missing[*]} (run tools/build-aarch64.sh to install them)" >&2
    exit 3
  fi
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "build-aarch64: adding the arm64 architecture to dpkg"
    $SUDO dpkg --add-architecture arm64
  fi
  echo "build-aarch64: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for lib in libsqlite3.a libinih.a libpcre2-8.a libz.a libjansson.a; do
  [ -f "/usr/lib/aarch64-linux-gnu/$lib" ] || { echo "build-aarch64: no /usr/lib/aarch64-linux-gnu/$lib" >&2; exit 1; }
done

if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" --cross-file tools/cross/aarch64-linux-gnu.ini \
    -Dbuildtype=release -Dtests=false -Dneon_cross_tests=disabled >/dev/null
fi
# sqlite's unused extension loader links dlopen: ld warns that a static
# binary cannot load shared objects, which ternbench never asks it to.
if ! ninja -C "$dir" bench/ternbench >"$dir/ninja.log" 2>&1; then
  cat "$dir/ninja.log" >&2
  exit 1
fi

bin="$dir/bench/ternbench"
# static: no program interpreter (dynamic loader) named in the ELF headers
if aarch64-linux-gnu-readelf -l "$bin" | grep -q "Requesting program interpreter"; then
  echo "build-aarch64: $bin is not statically linked" >&2
  exit 1
fi

dist="$dir/dist/ternbench-aarch64"
rm -rf "$dist"
mkdir -p "$dist"
aarch64-linux-gnu-strip -o "$dist/ternbench" "$bin"
cp -R scenarios "$dist/scenarios"
rm -rf "$dist/scenarios/.cache"
[ -d devices ] && cp -R devices "$dist/devices"
[ -d calibration ] && cp -R calibration "$dist/calibration"
tar -C "$dir/dist" -czf "$dir/dist/ternbench-aarch64.tar.gz" ternbench-aarch64

if command -v qemu-aarch64 >/dev/null 2>&1; then
  qemu-aarch64 "$dist/ternbench" --version >/dev/null ||
    { echo "build-aarch64: $dist/ternbench does not start under qemu-aarch64" >&2; exit 1; }
fi
echo "build-aarch64: $dist/ (and $dir/dist/ternbench-aarch64.tar.gz)"
