#!/usr/bin/env python3
"""Compare FeatureGate::enabled() with its floor and the mutex approach.

Runs gate_benchmark (or reads its --benchmark_format=json output) and
prints, per reader-thread count, the median wall-clock ns per read of

    gate     degrade::FeatureGate::enabled()
    atomic   a relaxed std::atomic<bool> load (the floor)
    mutex    std::mutex lock + read an int + unlock (the article's
             `with lock: return self.level` ported directly)

read while one writer thread changes all three every 100 us, with

    gate/atomic   target <= 1.1 (issue 12; it was 1.5)
    mutex/gate    target >= 10

and the heap allocations per read, which must be zero for the gate. Both
ratios come from the same run. A second table reports the When() wrapper
against a direct call of the wrapped function: no speed target ("info"),
but it fails if the wrapper allocates.

    benchmarks/gate_ratios.py build/bench/benchmarks/gate_benchmark
    benchmarks/gate_ratios.py --json results.json

Allocations: the gate passes only if the MEAN over the repetitions is zero,
i.e. no repetition allocated. `on` is the fraction of gate reads that saw the
feature on; strictly between 0 and 1 shows the writer flipped the gate while
it was read (the run is marked INVALID otherwise). `writer/s` is the writer's
measured changes per second during the gate, atomic and mutex runs.

Exits 1 if any target fails, 2 on a usage or input error.
"""

import argparse
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import by_impl_and_threads, parse_and_load  # noqa: E402  (same directory)

MAX_GATE_OVER_ATOMIC = 1.1
MIN_MUTEX_OVER_GATE = 10.0

IMPLS = {
    "Gate_Enabled": "gate",
    "RelaxedAtomicLoad": "atomic",
    "MutexLevelRead": "mutex",
    "When": "when",
    "DirectCall": "direct",
}
NAME_RE = re.compile(r"^BM_(\w+?)/")


class Result:
    def __init__(self):
        self.ns = None          # median (or the single run's) ns per read
        self.allocs = None      # mean over repetitions (or the single run's)
        self.on = None          # median fraction of reads that saw "on"
        self.writer = None      # median writer changes per second


def collect(data):
    """Returns {(impl, threads): Result}."""
    results = {}
    for key, r in by_impl_and_threads(
            data, NAME_RE, IMPLS, ("on_fraction", "writer_changes_per_s")).items():
        x = results[key] = Result()
        x.ns, x.allocs = r.get("ns"), r.get("allocs")
        x.on, x.writer = r.get("on_fraction"), r.get("writer_changes_per_s")
    return results


def table(header, rows):
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))


def kilo(x):
    return "?" if x is None else f"{x / 1000:.1f}k"


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to gate_benchmark")
    if data is None:
        return 2

    results = collect(data)
    ctx = data.get("context", {})
    print(f"{ctx.get('host_name', '?')}: {ctx.get('num_cpus', '?')} CPUs @ "
          f"{ctx.get('mhz_per_cpu', '?')} MHz, load avg "
          f"{', '.join(f'{x:.2f}' for x in ctx.get('load_avg', [])) or '?'}; "
          f"medians of {args.repetitions if not args.json else '?'} "
          f"repetitions, wall time per read")

    header = ("thr", "gate ns", "atomic ns", "mutex ns", "gate/atomic", "target",
              "mutex/gate", "target", "allocs g/a/m", "on", "writer/s g/a/m",
              "result")
    rows = []
    failed = False
    for threads in sorted({t for (_, t) in results}):
        g = results.get(("gate", threads))
        a = results.get(("atomic", threads))
        m = results.get(("mutex", threads))
        if not (g and a and m) or None in (g.ns, a.ns, m.ns):
            continue
        gate_over_atomic = g.ns / a.ns if a.ns > 0 else float("nan")
        mutex_over_gate = m.ns / g.ns if g.ns > 0 else float("nan")
        problems = []
        if not gate_over_atomic <= MAX_GATE_OVER_ATOMIC:
            problems.append("gate/atomic")
        if not mutex_over_gate >= MIN_MUTEX_OVER_GATE:
            problems.append("mutex/gate")
        if g.allocs != 0:
            problems.append("allocs")
        invalid = any(r.on is None or not 0 < r.on < 1 for r in (g, a, m))
        if invalid:
            result = "INVALID (no flips)"
        elif problems:
            result = "FAIL (" + ", ".join(problems) + ")"
        else:
            result = "PASS"
        failed |= result != "PASS"
        rows.append((str(threads), f"{g.ns:.3f}", f"{a.ns:.3f}", f"{m.ns:.2f}",
                     f"{gate_over_atomic:.2f}", f"<= {MAX_GATE_OVER_ATOMIC:g}",
                     f"{mutex_over_gate:.1f}", f">= {MIN_MUTEX_OVER_GATE:g}",
                     "/".join(f"{r.allocs:.3g}" for r in (g, a, m)),
                     "?" if g.on is None else f"{g.on:.2f}",
                     "/".join(kilo(r.writer) for r in (g, a, m)), result))

    if not rows:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    table(header, rows)
    print("times in ns/read (wall time / reads of all threads); allocs per read, "
          "mean over repetitions")

    info = []
    for threads in sorted({t for (_, t) in results}):
        w = results.get(("when", threads))
        d = results.get(("direct", threads))
        if not (w and d) or None in (w.ns, d.ns):
            continue
        # No speed target, but like the gate it must not allocate.
        result = "info" if w.allocs == 0 else "FAIL (allocs)"
        failed |= result != "info"
        info.append((str(threads), f"{w.ns:.3f}", f"{d.ns:.3f}", f"{w.allocs:.3g}",
                     "?" if w.on is None else f"{w.on:.2f}", result))
    if info:
        print()
        table(("thr", "When ns", "direct call ns", "When allocs", "f ran", "result"),
              info)
        print("When(manager, 1, f, fallback) while the writer flips the level; "
              "f ran = fraction of calls that ran f (the fallback is cheaper, "
              "so it is below the fraction of time at level 0)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
