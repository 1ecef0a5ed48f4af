#!/bin/sh
# aarch64_qemu.sh SRC_ROOT WORK_DIR — the statically linked aarch64
# ternbench end to end under qemu-user, as it would run on a phone: the
# folder tools/build-aarch64.sh leaves to copy (binary + scenarios/) is
# copied to a fresh directory, and from there, with an environment that
# has no PATH to any tool (so no gnuplot) and no HOME,
#   qemu-aarch64 ./ternbench run scenarios/quick.ini --db results.db
# synthesizes maple-tiny beside the scenario and records every test. The
# database must then hold one complete run on the i8mm tier (qemu's
# "max" CPU has SDOT and SMMLA) with its per-format gemm choice in the
# tag isa.features, every test of quick.ini complete with measurements,
# and host facts whose CPU features came from the hwcap words. Speed under
# qemu is not measured.
#
# The cross build is tools/build-aarch64.sh --no-install into
# $TB_AARCH64_BUILD (default SRC_ROOT/build-aarch64; tools/test.sh builds
# it before the suites, so here it is an incremental no-op). Exit 77
# (meson: skipped) only when the cross toolchain (aarch64 gcc, qemu-user
# or the arm64 static libraries) is not installed; any other failure fails.
set -eu
src=$1; work=$2
for t in aarch64-linux-gnu-gcc qemu-aarch64 python3; do
  command -v "$t" >/dev/null 2>&1 ||
    { echo "skipped: no $t (tools/build-aarch64.sh installs the cross toolchain)"; exit 77; }
done
qemu=$(command -v qemu-aarch64)
build=${TB_AARCH64_BUILD:-$src/build-aarch64}
rc=0
"$src/tools/build-aarch64.sh" --no-install "$build" || rc=$?
if [ $rc -eq 3 ]; then
  echo "skipped: the arm64 libraries are not installed (run tools/build-aarch64.sh)"
  exit 77
fi
[ $rc -eq 0 ] || { echo "FAIL: tools/build-aarch64.sh exited $rc"; exit 1; }

mkdir -p "$work"
tmp=$(mktemp -d "$work/aarch64.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -R "$build/dist/ternbench-aarch64" "$tmp/dev"
cd "$tmp/dev"
set +e
env -i PATH=/nonexistent "$qemu" -cpu max ./ternbench run scenarios/quick.ini --db results.db -q \
  >run.out 2>run.err
st=$?
set -e
if [ $st -ne 0 ]; then
  echo "FAIL: ternbench run exited $st under qemu-aarch64"
  tail -n 20 run.err
  exit 1
fi
ls scenarios/.cache/*.gguf >/dev/null 2>&1 || { echo "FAIL: no synthesized model in scenarios/.cache"; exit 1; }

python3 - results.db "$src/scenarios/quick.ini" <<'EOF'
import re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
def one(q, *a):
    return db.execute(q, a).fetchall()
fails = []
runs = one("SELECT id, status, isa, threads FROM runs")
if len(runs) != 1:
    fails.append("expected 1 run, found %d" % len(runs))
else:
    rid, status, isa, threads = runs[0]
    if status != "complete": fails.append("run status %r, expected 'complete'" % status)
    if isa != "i8mm": fails.append("run isa %r, expected 'i8mm' (the best tier on qemu's max CPU)" % isa)
    feat = one("SELECT value FROM run_tags WHERE run_id = ? AND key = 'isa.features'", rid)
    if not feat or not re.fullmatch(r"neon,dotprod,i8mm\(gemm q8_0:(smmla|sdot) q4_0:(smmla|sdot) tq2_0:(smmla|sdot)\)",
                                    feat[0][0]):
        fails.append("run tag isa.features %r, expected the i8mm tier's gemm choice per format" % (feat,))
    if threads < 1: fails.append("run threads %d" % threads)
    want = {"pp64", "pp128", "tg32@d0", "tg32@d128", "ttft64", "pp32+tg48", "sustained600"}
    tests = dict(one("SELECT label, status FROM tests WHERE run_id = ?", rid))
    if set(tests) != want: fails.append("tests %s, expected %s" % (sorted(tests), sorted(want)))
    for label, st in sorted(tests.items()):
        if st != "complete": fails.append("test %s status %r" % (label, st))
        n = one("SELECT count(*) FROM measurements m JOIN tests t ON m.test_id = t.id "
                "WHERE t.run_id = ? AND t.label = ? AND m.value >= 0", rid, label)[0][0]
        if n < 3: fails.append("test %s has %d measurements (3 repetitions at least)" % (label, n))
    h = one("SELECT h.kernel, h.isa_flags FROM hosts h JOIN runs r ON r.host_id = h.id")
    if not h or "aarch64" not in h[0][0]: fails.append("host kernel %r, expected an aarch64 uname" % (h,))
    # the features the emulated CPU's hwcap words give (qemu passes the x86
    # host's /proc/cpuinfo through, so they cannot come from there)
    elif not h[0][1].startswith("asimd dotprod") or not h[0][1].endswith("(hwcap)"):
        fails.append("host isa_flags %r, expected the hwcap features (asimd dotprod ... (hwcap))" % h[0][1])
    m = one("SELECT md.name FROM models md JOIN runs r ON r.model_id = md.id")
    if not m: fails.append("no model recorded for the run")
for f in fails: print("FAIL:", f)
if fails: sys.exit(1)
print("ok: 1 complete run, 7 complete tests with measurements (i8mm tier and its gemm choice, hwcap features, static aarch64, qemu-user)")
EOF
