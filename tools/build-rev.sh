#!/usr/bin/env bash
# tools/build-rev.sh — build a git revision of this repository into its own
# folder, for `ternbench ab` and `ternbench count` against a base:
#
#   tools/build-rev.sh REV DIR      e.g. tools/build-rev.sh origin/main /tmp/base
#
# checks REV out as a detached git worktree in DIR/src, configures a release
# build (tests off) in DIR/build, builds the ternbench binary and prints its
# path (DIR/build/bench/ternbench) on stdout. Running it again with the same
# REV and DIR rebuilds incrementally; DIR/src holding another revision is an
# error (remove it with `git worktree remove DIR/src`).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: tools/build-rev.sh REV DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(realpath -m "$2")
commit=$(git -C "$root" rev-parse --verify --quiet "$1^{commit}") || {
  echo "build-rev: '$1' is not a revision of $root" >&2; exit 2; }
src=$dir/src
if [ -e "$src" ]; then
  have=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo none)
  if [ "$have" != "$commit" ]; then
    echo "build-rev: $src holds $have, not $commit; remove it: git worktree remove --force $src" >&2
    exit 2
  fi
else
  mkdir -p "$dir"
  git -C "$root" worktree add --detach "$src" "$commit" >/dev/null 2>&1 || {
    echo "build-rev: git worktree add $src $commit failed" >&2; exit 1; }
fi
if [ ! -f "$dir/build/build.ninja" ]; then
  meson setup "$dir/build" "$src" -Dbuildtype=release -Dtests=false >/dev/null
fi
ninja -C "$dir/build" bench/ternbench >/dev/null
echo "$dir/build/bench/ternbench"
