#!/usr/bin/env python3
"""tools/ab_summary.py — two builds compared from tools/ab.sh output.

  tools/ab_summary.py [--split GBPS] AB.jsonl...

tools/ab.sh runs build A and build B in turns (pairs, the order alternating),
each `bench ... --json`. Here every (file, test) that both sides measured in a
pair gives that pair's ratio, B's tokens_per_s over A's (each the median over
its run's repetitions): above 1 is B faster.

A run is in the low or the high state when every one of its repetitions was
settled there (both probes either side of it on one side of GBPS, default 42,
and within 15 % of each other: tools/rounds_summary.py's rule); a pair is in
a state when both its runs are, else "mixed". Machines whose bandwidth
changes state (this project's VM: ~36 or ~60 GB/s with 2 threads) give ratios
that mean something only within a state.

Per (file, test) and state (low, high, mixed, all): the pairs, the median
ratio and its quartiles, the pairs in which B was faster, the two-sided sign
test's p (ties left out), and each side's median roofline %. A pair missing a
side (a run that was stopped) is skipped with a note on stderr. Python 3
standard library only.
"""
import collections
import math
import signal
import sys

from tb_summary import args, med, name, objects, rep_state


def quartiles(xs):
    """(q25, q75) by linear interpolation between order statistics; nan when empty."""
    if not xs:
        return float("nan"), float("nan")
    s = sorted(xs)

    def q(p):
        x = p * (len(s) - 1)
        i = int(math.floor(x))
        j = min(i + 1, len(s) - 1)
        return s[i] + (s[j] - s[i]) * (x - i)
    return q(0.25), q(0.75)


def sign_p(k, n):
    """Two-sided sign test: k successes of n fair coin flips."""
    if n == 0:
        return float("nan")
    lo = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(lo + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def run_state(obj, split):
    """The state every repetition of the run was settled in, else 'mixed'."""
    states = {rep_state(b, a, split) for b, a in obj["rep_probe_gbps"]}
    return states.pop() if len(states) == 1 else "mixed"


NEED = ("ab", "pair", "model", "test", "tokens_per_s", "roofline_pct", "rep_probe_gbps")


def load(files):
    """{(pair, side, file, test): object}, {side: (bin, sha256)}; or an error string."""
    runs, bins = {}, {}
    try:
        for f, ln, r in objects(files):
            if "compare" in r:          # bench's own comparisons of several files
                continue
            missing = [k for k in NEED if k not in r]
            if missing:
                return None, None, f"{f}:{ln}: no {', '.join(missing)} in a tools/ab.sh object"
            if r["ab"] not in ("a", "b"):
                return None, None, f"{f}:{ln}: side \"{r['ab']}\" is neither a nor b"
            if "bin" in r:
                bins.setdefault(r["ab"], (r["bin"], r.get("bin_sha256", "?")))
            # a file named twice in one run (bench -m F -m F) is F, then F#2, ...
            base = name(r["model"])
            fn, k = base, 1
            while (r["pair"], r["ab"], fn, r["test"]) in runs:
                k += 1
                fn = f"{base}#{k}"
            runs[(r["pair"], r["ab"], fn, r["test"])] = r
    except ValueError as e:
        return None, None, str(e)
    return runs, bins, None


def main(argv):
    parsed = args(argv, __doc__)
    if parsed is None:
        return 2
    split, files = parsed
    runs, bins, err = load(files)
    if err:
        sys.stderr.write(err + "\n")
        return 1
    for s in ("a", "b"):
        b, sha = bins.get(s, ("?", "?"))
        print(f"{s}: {b} (sha256 {sha[:12]})")
    # (file, test) -> state -> [(ratio, a %, b %)]
    table = collections.defaultdict(lambda: collections.defaultdict(list))
    for p, f, t in sorted({(p, f, t) for p, _, f, t in runs}):
        ra, rb = runs.get((p, "a", f, t)), runs.get((p, "b", f, t))
        if ra is None or rb is None:
            sys.stderr.write(f"ab_summary: pair {p}: {f} {t} has no side {'a' if ra is None else 'b'} (skipped)\n")
            continue
        sa, sb = run_state(ra, split), run_state(rb, split)
        st = sa if sa == sb else "mixed"
        x = (rb["tokens_per_s"] / ra["tokens_per_s"], ra["roofline_pct"], rb["roofline_pct"])
        table[(f, t)][st].append(x)
        table[(f, t)]["all"].append(x)
    print(f"{'file':24} {'test':6} {'state':6} {'pairs':>5} {'b/a':>6} {'q25':>6} {'q75':>6}"
          f" {'b faster':>8} {'sign p':>6} {'a %':>6} {'b %':>6}")
    for (f, t), by in sorted(table.items()):
        for st in ("low", "high", "mixed", "all"):
            v = by.get(st, [])
            if not v:
                continue
            r = [x[0] for x in v]
            q25, q75 = quartiles(r)
            k = sum(1 for x in r if x > 1)
            n = sum(1 for x in r if x != 1)
            print(f"{f:24} {t:6} {st:6} {len(v):5} {med(r):6.3f} {q25:6.3f} {q75:6.3f} {k:8} "
                  f"{sign_p(k, n):6.3f} {med([x[1] for x in v]):6.1f} {med([x[2] for x in v]):6.1f}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
