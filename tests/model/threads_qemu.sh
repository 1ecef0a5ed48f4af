#!/bin/sh
# threads_qemu.sh SRC_ROOT WORK_DIR TERNBENCH — decode at any thread count
# on the static aarch64 binary under qemu-user (-cpu max: the i8mm
# tier, its SMMLA gemms forced with TB_I8MM=smmla), as a phone would run it with its 6-8 cores: greedy generation of
# 8 tokens after a 9-token prompt at 1, 2 (the split decode), 3, 6 and 8
# threads must give the same ids and, after the last decode step, the
# same logits byte for byte (--logits-out), on maple-tiny Q4_0 (MoE) and
# llama-tiny TQ1_0 (dense, the NEON TQ1_0 kernels), both also at the dotprod
# and neon tiers (--isa: no SMMLA, no SDOT); the i8mm tier's logits must
# equal the dotprod tier's byte for byte (its gemms give SDOT's bits). TERNBENCH (the host's build) synthesizes the
# models; speed is not measured. The cross binary comes from
# tools/build-aarch64.sh --no-install (as e2e_aarch64_qemu; exit 77 only
# when the cross toolchain is not installed).
set -eu
src=$1; work=$2; native=$3
for t in aarch64-linux-gnu-gcc qemu-aarch64; do
  command -v "$t" >/dev/null 2>&1 ||
    { echo "skipped: no $t (tools/build-aarch64.sh installs the cross toolchain)"; exit 77; }
done
qemu=$(command -v qemu-aarch64)
build=${TB_AARCH64_BUILD:-$src/build-aarch64}
rc=0
"$src/tools/build-aarch64.sh" --no-install "$build" >/dev/null || rc=$?
[ $rc -eq 3 ] && { echo "skipped: the arm64 libraries are not installed (run tools/build-aarch64.sh)"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: tools/build-aarch64.sh exited $rc"; exit 1; }
bin=$build/bench/ternbench

mkdir -p "$work"
tmp=$(mktemp -d "$work/threads.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$native" model synth --preset maple-tiny --type q4_0 --out "$tmp/maple.gguf" --quiet
"$native" model synth --preset llama-tiny --type tq1_0 --out "$tmp/llama.gguf" --quiet
fail=0
for m in maple llama; do
  for isa in i8mm dotprod neon; do
    for t in 1 2 3 6 8; do
      TB_I8MM=smmla "$qemu" -cpu max "$bin" --isa $isa generate -m "$tmp/$m.gguf" -p "hello world, a test" -n 8 --temp 0 \
        --ids --ignore-eos -t $t --logits-out "$tmp/$m.$isa.$t.bin" >"$tmp/$m.$isa.$t.ids" 2>"$tmp/err" ||
        { echo "FAIL: $m --isa $isa -t $t exited $?"; cat "$tmp/err"; fail=1; continue; }
      grep -q "$t threads" "$tmp/err" || { echo "FAIL: $m -t $t did not run on $t threads"; cat "$tmp/err"; fail=1; }
      [ "$(wc -l <"$tmp/$m.$isa.$t.ids")" -eq 8 ] || { echo "FAIL: $m -t $t: not 8 ids"; fail=1; }
      if [ $t -gt 1 ]; then
        cmp -s "$tmp/$m.$isa.1.ids" "$tmp/$m.$isa.$t.ids" ||
          { echo "FAIL: $m --isa $isa: ids at $t threads differ from 1 thread"; fail=1; }
        cmp -s "$tmp/$m.$isa.1.bin" "$tmp/$m.$isa.$t.bin" ||
          { echo "FAIL: $m --isa $isa: logits at $t threads differ from 1 thread"; fail=1; }
      fi
    done
  done
  cmp -s "$tmp/$m.i8mm.1.bin" "$tmp/$m.dotprod.1.bin" ||
    { echo "FAIL: $m: logits on the i8mm tier differ from the dotprod tier's"; fail=1; }
done
[ $fail -eq 0 ] || exit 1
echo "ok: maple-tiny Q4_0 and llama-tiny TQ1_0, i8mm, dotprod and neon tiers: ids and logits at 2, 3, 6, 8 threads equal 1 thread's, i8mm's equal dotprod's"
