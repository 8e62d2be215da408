#!/usr/bin/env python3
"""crossover_table.py: the tables of tools/bench/crossover.sh's directory
(docs/kernels.md, "The crossover"): per model and thread count, the decode
step's time (ms) against its rows, one column per kernel family and weight
precision, with the load average before and after each column's
bench_kernels call, and per column:
  x1 -> 64      M x t(1) / t(M) at the largest M: what running M rows in one
                step saves over M one-row steps (M at most: the weights are
                read once either way, so M x is the most it can be);
  knee          the first M whose step takes more than 1.5 t(1): where the
                step stops being a weight stream and its flops start to show;
  path          t(first many-row M) / t(the M before it): the step across
                the change from the few-row paths (the M = 1 row loop and the
                4-row tile) to the many-row column path (M >= 16 on the
                avx512 families, M >= 8 on avx2; docs/kernels.md, "The
                variants"); below 1: the many-row path at its first M is
                faster than the few-row path at the M before, in absolute
                time;
  overtakes     the first M of the many-row path whose step beats the
                few-row path run in chunks of the M before it (M / Mb x
                t(Mb), Mb the last few-row M: what the step would cost if
                the many-row path started later); "-": not up to the
                largest M measured;
  1 -> T threads  t(1 thread) / t(T threads) at M = 1 and at the largest M.
The machine.txt of the directory gives the header (machine, ISA flags, the
command, dates) and bandwidth_{before,after}.json the read bandwidth.
Standard library only.

Usage: crossover_table.py DIR
"""

import json
import os
import re
import sys

STEP = re.compile(r"^step (\S+) +(\S+) +(\S+) +M=(\d+) threads=(\d+): +([0-9.]+) ms")
LOAD = re.compile(r"^# load (\S+ \S+ \S+) (before (\S+) (\S+) (\S+)|after)")
# the first M of the many-row (column) path, per family (kernels_avx512.c / kernels_avx2.c: COLS_MIN_M)
COLS_MIN_M = {"avx512": 16, "avx512_bf16": 16, "avx2": 8}


def parse(lines):
    """{(model, family, dtype): {"t": {(M, threads): ms}, "load": [before, after]}} in file order."""
    cols, current = {}, None
    for line in lines:
        m = LOAD.match(line)
        if m and m.group(3):
            current = (m.group(3), m.group(4), m.group(5))
            cols.setdefault(current, {"t": {}, "load": [m.group(1), None]})
            continue
        if m and current:
            cols[current]["load"][1] = m.group(1)
            continue
        m = STEP.match(line)
        if m:
            key = (m.group(1), m.group(2), m.group(3))
            col = cols.setdefault(key, {"t": {}, "load": [None, None]})
            col["t"][(int(m.group(4)), int(m.group(5)))] = float(m.group(6))
    return cols


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def column_figures(t, family, threads, rows):
    """The derived figures of one column at one thread count (see the module doc)."""
    t1, last = t.get((1, threads)), rows[-1]
    x_last = ratio(last * t1, t.get((last, threads))) if t1 else None
    knee = next((m for m in rows if t1 and t.get((m, threads)) and t[(m, threads)] > 1.5 * t1), None)
    first = COLS_MIN_M.get(family)
    before = max((m for m in rows if first and m < first), default=None)
    path = ratio(t.get((first, threads)), t.get((before, threads))) if before and first in rows else None
    tb = t.get((before, threads)) if before else None
    overtakes = next((m for m in rows if tb and first and m >= first and t.get((m, threads))
                      and t[(m, threads)] < m / before * tb), None)
    return x_last, knee, (before, first, path), overtakes


def tables(cols):
    lines = []
    models = []
    for (model, _, _) in cols:  # in file order
        if model not in models:
            models.append(model)
    for model in models:
        keys = [k for k in cols if k[0] == model and cols[k]["t"]]  # a call that printed no step: no column
        if not keys:
            continue
        threads = sorted({th for k in keys for (_, th) in cols[k]["t"]})
        rows = sorted({m for k in keys for (m, _) in cols[k]["t"]})
        for th in threads:
            lines += ["", "**%s, %d thread%s**: decode step ms against rows" % (model, th, "s" if th > 1 else ""), ""]
            lines.append("| rows | " + " | ".join("%s %s" % (k[1], k[2]) for k in keys) + " |")
            lines.append("|---:|" + "---:|" * len(keys))
            for m in rows:
                lines.append("| %d | " % m + " | ".join(fmt(cols[k]["t"].get((m, th)), ".2f") for k in keys) + " |")
            figs = [column_figures(cols[k]["t"], k[1], th, rows) for k in keys]
            lines.append("| x1 -> %d | " % rows[-1] + " | ".join(fmt(f[0], ".1f") for f in figs) + " |")
            lines.append("| knee | " + " | ".join("-" if f[1] is None else "%d" % f[1] for f in figs) + " |")
            lines.append("| path | " + " | ".join(
                "-" if f[2][2] is None else "%d->%d: %.2f" % f[2] for f in figs) + " |")
            lines.append("| overtakes | " + " | ".join("-" if f[3] is None else "%d" % f[3] for f in figs) + " |")
            if th > 1:
                lines.append("| 1 -> %d thr, M=1 | " % th + " | ".join(
                    fmt(ratio(cols[k]["t"].get((1, 1)), cols[k]["t"].get((1, th)))) for k in keys) + " |")
                lines.append("| 1 -> %d thr, M=%d | " % (th, rows[-1]) + " | ".join(
                    fmt(ratio(cols[k]["t"].get((rows[-1], 1)), cols[k]["t"].get((rows[-1], th)))) for k in keys) + " |")
            lines.append("| load | " + " | ".join(
                "%s / %s" % (cols[k]["load"][0] or "?", cols[k]["load"][1] or "?") for k in keys) + " |")
    return lines


def bandwidth(path):
    try:
        with open(path) as f:
            res = json.load(f)["results"]
    except (OSError, ValueError, KeyError):
        return None
    return ", ".join("%d thread%s %.1f GB/s" % (r["threads"], "s" if r["threads"] > 1 else "", r["best_gb_per_s"])
                     for r in res)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write(__doc__.split("Usage: ")[1])
        return 2
    d = argv[0]
    with open(os.path.join(d, "step.txt")) as f:
        cols = parse(f.read().splitlines())
    out = []
    try:
        with open(os.path.join(d, "machine.txt")) as f:
            out += ["    " + x for x in f.read().splitlines()]
    except OSError:
        pass
    for when in ("before", "after"):
        bw = bandwidth(os.path.join(d, "bandwidth_%s.json" % when))
        if bw:
            out.append("    read bandwidth %s (best pass): %s" % (when, bw))
    out += tables(cols)
    sys.stdout.write("\n".join(out) + "\n")
    return 0 if any(c["t"] for c in cols.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
