"""tools/tb_summary.py — what tools/rounds_summary.py and tools/ab_summary.py share:
the arguments ([--split GBPS] FILE...), medians, file names, and the rule
that settles a repetition in a machine state. Python 3 standard library only."""
import json
import os
import statistics
import sys

AGREE = 0.15   # bench's PROBE_AGREE: a repetition's probes within this share
CPU_FULL = 0.85   # bench's CPU_FULL: a repetition ran at full speed when both its CPU
                  # probes reach this share of its test's best


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def name(path):
    """A model file's name without its directory and .gguf."""
    base = os.path.basename(path)
    return base[:-5] if base.endswith(".gguf") else base


def rep_state(before, after, split):
    """'low' / 'high' when both probes agree and sit on one side of split, else 'mixed'."""
    if abs(before - after) > AGREE * max(before, after):
        return "mixed"
    if before < split and after < split:
        return "low"
    if before >= split and after >= split:
        return "high"
    return "mixed"


def args(argv, doc):
    """(split, files) from [--split GBPS] FILE...; None after printing doc when they are not that."""
    split, files, i = 42.0, [], 0
    while i < len(argv):
        if argv[i] == "--split" and i + 1 < len(argv):
            split = float(argv[i + 1])
            i += 2
        elif argv[i].startswith("-"):
            files = []
            break
        else:
            files.append(argv[i])
            i += 1
    if not files:
        sys.stderr.write(doc)
        return None
    return split, files


def objects(files):
    """(file, line number, object) for every non-blank line of files, in order; a
    line that is not a JSON object, or a file that cannot be read, raises ValueError
    naming its file (and line)."""
    for f in files:
        try:
            fh = open(f, errors="replace")   # undecodable bytes: "not a JSON object" at their line
        except OSError as e:
            raise ValueError(f"{f}: cannot read: {e.strerror}") from None
        with fh:
            for ln, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    raise ValueError(f"{f}:{ln}: not a JSON object: {e}") from None
                if not isinstance(r, dict):
                    raise ValueError(f"{f}:{ln}: not a JSON object")
                yield f, ln, r
