#!/usr/bin/env python3
"""Compare AdmissionController::Admitted() with a relaxed atomic load.

Runs admission_benchmark (or reads its --benchmark_format=json output) and
prints, per thread count, the median wall-clock ns per call of

    admitted   degrade::AdmissionController::Admitted(rc) (not adaptive)
    relaxed    a relaxed std::atomic<int> load and a compare with the rank

with the issue's targets (issue 15), both from the same run:

    admitted <= 5 ns
    admitted / relaxed <= 2

and the heap allocations per call, which must be zero. A second table
reports the adaptive mode and Admit() on its OK path ("info": no speed
target, but they fail if they allocate).

    benchmarks/admission_ratios.py build/bench/benchmarks/admission_benchmark
    benchmarks/admission_ratios.py --json results.json

Exits 1 if any target fails, 2 on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import by_impl_and_threads, parse_and_load  # noqa: E402  (same directory)
from gate_ratios import table  # noqa: E402

MAX_ADMITTED_NS = 5.0
MAX_ADMITTED_OVER_RELAXED = 2.0

IMPLS = {
    "Admission_Admitted": "admitted",
    "Baseline_RelaxedLoad": "relaxed",
    "Admission_AdmittedAdaptive": "adaptive",
    "Admission_AdmitOk": "admit",
}
NAME_RE = re.compile(r"^BM_(\w+?)/")


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to admission_benchmark")
    if data is None:
        return 2
    results = by_impl_and_threads(data, NAME_RE, IMPLS)
    ctx = data.get("context", {})
    print(f"{ctx.get('host_name', '?')}: {ctx.get('num_cpus', '?')} CPUs, load avg "
          f"{', '.join(f'{x:.2f}' for x in ctx.get('load_avg', [])) or '?'}; "
          f"medians of {args.repetitions if not args.json else '?'} repetitions, "
          "wall time per call")
    failed = False
    rows = []
    threads_seen = sorted({t for (_, t) in results})
    for t in threads_seen:
        a = results.get(("admitted", t))
        r = results.get(("relaxed", t))
        if not (a and r) or "ns" not in a or "ns" not in r:
            continue
        ratio = a["ns"] / r["ns"] if r["ns"] > 0 else float("nan")
        problems = []
        if not a["ns"] <= MAX_ADMITTED_NS:
            problems.append("ns")
        if not ratio <= MAX_ADMITTED_OVER_RELAXED:
            problems.append("ratio")
        if a.get("allocs") != 0:
            problems.append("allocs")
        result = "FAIL (" + ", ".join(problems) + ")" if problems else "PASS"
        failed |= bool(problems)
        rows.append((str(t), f"{a['ns']:.3f}", f"<= {MAX_ADMITTED_NS:g}",
                     f"{r['ns']:.3f}", f"{ratio:.2f}",
                     f"<= {MAX_ADMITTED_OVER_RELAXED:g}",
                     f"{a.get('allocs', float('nan')):.3g}", result))
    if not rows:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    table(("thr", "Admitted ns", "target", "relaxed ns", "ratio", "target",
           "allocs", "result"), rows)
    info = []
    for t in threads_seen:
        for impl, label in (("adaptive", "Admitted, adaptive"), ("admit", "Admit() OK")):
            x = results.get((impl, t))
            base = results.get(("relaxed", t))
            if not x or "ns" not in x:
                continue
            result = "info" if x.get("allocs") == 0 else "FAIL (allocs)"
            failed |= result != "info"
            ratio = x["ns"] / base["ns"] if base and base.get("ns") else float("nan")
            info.append((str(t), label, f"{x['ns']:.3f}", f"{ratio:.2f}",
                         f"{x.get('allocs', float('nan')):.3g}", result))
    if info:
        print()
        table(("thr", "row", "ns", "/ relaxed", "allocs", "result"), info)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
