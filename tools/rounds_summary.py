#!/usr/bin/env python3
"""tools/rounds_summary.py — the README "Measured here" tables from rounds of
`ternbench bench --json` output (tools/rounds.sh writes them).

  tools/rounds_summary.py [--split GBPS] ROUNDS.jsonl...

Per (file, test): the number of rounds; the median over rounds of
roofline_pct, with its range; the same over the rounds whose probe
(bandwidth_gbps, the test's median probe) is under GBPS (low state,
default 42) and over it (high state), with their counts; for decode tests
the medians of p50_roofline_pct (low / high) and stall_pct; tokens_per_s in
each state. Then every paired comparison as bench states it (model /
baseline) and inverted (baseline / model): the median over rounds of each
round's median per-repetition ratio, its range, and the repetitions in which
the numerator was faster.

Objects that list their repetitions (bench --json: rep_tokens_per_s,
rep_probe_gbps) get a second table over repetitions instead of rounds: each
repetition is charged, as bench charges it, against the higher of the two
probes either side of it, and is "settled" in the low or high state when
both probes are on the same side of GBPS and within 15 % of each other;
the rest ran while the state changed ("mixed"). A repetition whose object
lists CPU probes (rep_cpu_ghz) and whose slower probe is under 85 % of that
object's best ran with a core slowed (bench's full-speed rule) and counts
as "slowed" whatever its bandwidth state. Per (file, test): medians of the
settled repetitions' roofline % and tok/s in each state, and of the mixed
and slowed ones' roofline %, with counts.

Objects from runs that took turns token by token (bench --interleave token:
"interleave": "token") stay out of the tables above, which keep the rounds'
rep-by-rep method; their comparisons get a table of their own: per pair,
each repetition's median token ratio (rep_token_ratio) split by that
repetition's probes (the baseline's rep_probe_gbps of the same round and
run; low / high / mixed as above), medians and counts, and the median over
rounds of token_ratio_median; then the same inverted (baseline / model).

`ternbench kernels --ceiling --json` objects (tools/rounds.sh adds them
after each round's benches) give a last table: per format, its highest
tier's arithmetic ceiling at the most threads measured, split by that
object's probe at as many threads (low / high as above): medians of the
ceiling GB/s, the probe and ceiling_pct, with counts, and the median
1-thread ceiling. Python 3 standard library only.
"""
import collections
import signal
import sys

from tb_summary import CPU_FULL, args, med, name, objects, rep_state


def rep_table(tests, split):
    """The per-repetition table, for the (file, test) pairs whose objects list repetitions."""
    rows = []
    for (f, t), v in sorted(tests.items()):
        by = collections.defaultdict(list)   # state -> [(pct, tok/s)]
        for x in v:
            if "rep_tokens_per_s" not in x or "rep_probe_gbps" not in x or "bytes_per_token" not in x:
                continue
            cpu = x.get("rep_cpu_ghz") or []
            best = max((g for pair in cpu for g in pair), default=0.0)
            for i, (tps, (b, a)) in enumerate(zip(x["rep_tokens_per_s"], x["rep_probe_gbps"])):
                pct = 100.0 * tps * x["bytes_per_token"] / 1e9 / max(b, a)
                slowed = i < len(cpu) and min(cpu[i]) < CPU_FULL * best
                by["slowed" if slowed else rep_state(b, a, split)].append((pct, tps))
        if by:
            rows.append((f, t, by))
    if not rows:
        return
    print(f"\nper repetition: {'file':24} {'test':6} {'n':>4} {'low %':>6} {'n':>4} {'high %':>6} {'n':>4}"
          f" {'mixed %':>7} {'n':>4} {'slowed %':>8} {'n':>4} {'tok/s low':>9} {'tok/s high':>10}")
    for f, t, by in rows:
        n = sum(len(x) for x in by.values())
        g = lambda s, i: med([x[i] for x in by[s]])
        print(f"per repetition: {f:24} {t:6} {n:4} {g('low', 0):6.1f} {len(by['low']):4} "
              f"{g('high', 0):6.1f} {len(by['high']):4} {g('mixed', 0):7.1f} {len(by['mixed']):4} "
              f"{g('slowed', 0):8.1f} {len(by['slowed']):4} {g('low', 1):9.1f} {g('high', 1):10.1f}")


TIERS = ("ref", "generic", "avx2", "avx512", "neon")   # dispatch order: the last present is the best


def ceiling_table(ceil, split):
    """The kernels --ceiling table: per format, its best tier's ceilings."""
    if not ceil:
        return
    print(f"\nceiling: {'format':6} {'isa':8} {'thr':>3} {'low GB/s':>8} {'probe':>6} {'%':>6} {'n':>3}"
          f" {'high GB/s':>9} {'probe':>6} {'%':>6} {'n':>3} {'1 thr GB/s':>10}")
    for fmt, v in sorted(ceil.items()):
        isa = max((x["isa"] for x in v), key=lambda i: TIERS.index(i) if i in TIERS else -1)
        v = [x for x in v if x["isa"] == isa]
        n = max(x["threads"] for x in v)
        top = [x for x in v if x["threads"] == n]
        lo = [x for x in top if x["bandwidth_gbps"] < split]
        hi = [x for x in top if x["bandwidth_gbps"] >= split]
        g = lambda xs, k: med([x[k] for x in xs])
        one = med([x["gbps"] for x in v if x["threads"] == 1])
        print(f"ceiling: {fmt:6} {isa:8} {n:3} {g(lo, 'gbps'):8.1f} {g(lo, 'bandwidth_gbps'):6.1f} "
              f"{g(lo, 'ceiling_pct'):6.1f} {len(lo):3} {g(hi, 'gbps'):9.1f} {g(hi, 'bandwidth_gbps'):6.1f} "
              f"{g(hi, 'ceiling_pct'):6.1f} {len(hi):3} {one:10.1f}")


def token_table(tok_tests, tok_cmps, split):
    """Comparisons paired token by token, each repetition's median ratio split by state."""
    if not tok_cmps:
        return
    print(f"\ntoken pairs: {'model / baseline':44} {'test':6} {'low':>6} {'n':>3} {'high':>6} {'n':>3}"
          f" {'mixed':>6} {'n':>3} {'all':>6} {'rounds':>6}")
    for (m, b, t), v in sorted(tok_cmps.items()):
        by = collections.defaultdict(list)
        for c in v:
            base = tok_tests.get((c["round"], c["at"], b, t))
            if base is None or "rep_probe_gbps" not in base:
                continue
            for r, (pb, pa) in zip(c["rep_token_ratio"], base["rep_probe_gbps"]):
                by[rep_state(pb, pa, split)].append(r)
        allm = med([c["token_ratio_median"] for c in v])
        for pair, f in ((m + " / " + b, lambda x: x), (b + " / " + m, lambda x: 1.0 / x)):
            print(f"token pairs: {pair:44} {t:6} {f(med(by['low'])):6.3f} {len(by['low']):3} "
                  f"{f(med(by['high'])):6.3f} {len(by['high']):3} {f(med(by['mixed'])):6.3f} "
                  f"{len(by['mixed']):3} {f(allm):6.3f} {len(v):6}")


def main(argv):
    parsed = args(argv, __doc__)
    if parsed is None:
        return 2
    split, files = parsed
    tests = collections.defaultdict(list)
    cmps = collections.defaultdict(list)
    tok_tests = {}                            # (round, at, file, test) -> object, token turns
    tok_cmps = collections.defaultdict(list)  # (model, baseline, test) -> compare objects
    ceil = collections.defaultdict(list)
    try:
        rows = list(objects(files))
    except ValueError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    for f, ln, r in rows:
        is_ceil = r.get("kind") == "ceiling"
        tok = r.get("interleave") == "token"   # bench --interleave token
        need = (("model", "roofline_pct", "bandwidth_gbps", "tokens_per_s") if "test" in r
                else ("model", "baseline", "ratio_median", "faster_reps", "reps") if "compare" in r
                else ("format", "isa", "threads", "gbps", "bandwidth_gbps", "ceiling_pct") if is_ceil
                else ())
        if tok and "compare" in r:
            need = need + ("token_ratio_median", "rep_token_ratio", "round", "at")
        missing = [k for k in need if k not in r]
        if missing:
            what = "kernels --ceiling" if is_ceil else "bench"
            sys.stderr.write(f"{f}:{ln}: no {', '.join(missing)} in a {what} --json object\n")
            return 1
        if "test" in r and tok:
            tok_tests[(r.get("round"), r.get("at"), name(r["model"]), r["test"])] = r
        elif "test" in r:
            tests[(name(r["model"]), r["test"])].append(r)
        elif "compare" in r and tok:
            tok_cmps[(name(r["model"]), name(r["baseline"]), r["compare"])].append(r)
        elif "compare" in r:
            cmps[(name(r["model"]), name(r["baseline"]), r["compare"])].append(r)
        elif is_ceil:
            ceil[r["format"]].append(r)
    print(f"{'file':24} {'test':6} {'n':>3} {'all %':>6} {'range':>12} {'low %':>6} {'n':>3} {'high %':>6} {'n':>3}"
          f" {'p50 low':>7} {'p50 high':>8} {'stall %':>7} {'tok/s low':>9} {'tok/s high':>10}")
    for (f, t), v in sorted(tests.items()):
        lo = [x for x in v if x["bandwidth_gbps"] < split]
        hi = [x for x in v if x["bandwidth_gbps"] >= split]
        pct = [x["roofline_pct"] for x in v]
        g = lambda xs, k: med([x[k] for x in xs if k in x])
        rng = f"{min(pct):.1f}-{max(pct):.1f}"
        print(f"{f:24} {t:6} {len(v):3} {med(pct):6.1f} {rng:>12} "
              f"{g(lo, 'roofline_pct'):6.1f} {len(lo):3} {g(hi, 'roofline_pct'):6.1f} {len(hi):3} "
              f"{g(lo, 'p50_roofline_pct'):7.1f} {g(hi, 'p50_roofline_pct'):8.1f} {g(v, 'stall_pct'):7.1f} "
              f"{g(lo, 'tokens_per_s'):9.1f} {g(hi, 'tokens_per_s'):10.1f}")
    rep_table(tests, split)
    for (m, b, t), v in sorted(cmps.items()):
        r = [x["ratio_median"] for x in v]
        reps = sum(x["reps"] for x in v)
        faster = sum(x["faster_reps"] for x in v)
        inv = [1.0 / x for x in r if x > 0]
        print(f"{t} {m} / {b}: {med(r):.3f} ({min(r):.3f}-{max(r):.3f}, {len(v)} rounds), "
              f"{m} faster in {faster} of {reps} repetitions")
        print(f"{t} {b} / {m}: {med(inv):.3f} ({min(inv):.3f}-{max(inv):.3f}, {len(v)} rounds), "
              f"{b} faster in {reps - faster} of {reps} repetitions")
    token_table(tok_tests, tok_cmps, split)
    ceiling_table(ceil, split)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet when piped into head
    sys.exit(main(sys.argv[1:]))
