#!/usr/bin/env python3
"""Compare ConcurrencyLimiter acquire + release with a mutex-based limiter.

Runs limiter_benchmark (or reads its --benchmark_format=json output) and
prints, per thread count, the median wall-clock ns per acquire + release of

    degrade    TryAcquire() + Success(latency) (Gradient2, windows of 10)
    ignore     TryAcquire() + Ignore() (no sample: info only)
    baseline   a mutex around the in-flight check and a Gradient2 update per
               sample (BM_Baseline_MutexLimiter)
    cas        info: one CAS on a shared word and a plain store (BM_Floor_Cas)
    cas+sub    info: that CAS and one fetch_sub (BM_Floor_CasFetchSub)
    cas+win    info: the CAS, per-thread plain stores for the release and
               the sample, a mutex and a Gradient2 update every 10 samples
               (BM_Floor_CasWindow)

with the target degrade/baseline <= 1/3 (issue 15) and the heap allocations
per call, which must be zero for degrade. Both come from the same run.

    benchmarks/limiter_ratios.py build/bench/benchmarks/limiter_benchmark --repetitions 5
    benchmarks/limiter_ratios.py --json results.json

Exits 1 if a target fails, 2 on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gate_ratios import table  # noqa: E402  (same directory)
from ratios import by_impl_and_threads, parse_and_load  # noqa: E402

MAX_RATIO = 1 / 3
IMPLS = {
    "Degrade_TryAcquireSuccess": "degrade",
    "Degrade_TryAcquireIgnore": "ignore",
    "Baseline_MutexLimiter": "baseline",
    "Floor_Cas": "cas",
    "Floor_CasFetchSub": "cas+sub",
    "Floor_CasWindow": "cas+win",
}
NAME_RE = re.compile(r"^BM_(\w+?)/")


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to limiter_benchmark")
    if data is None:
        return 2
    results = {k: [v.get("ns"), v.get("allocs")]
               for k, v in by_impl_and_threads(data, NAME_RE, IMPLS).items()}
    header = ("thr", "degrade ns", "ignore ns", "baseline ns", "degrade/baseline",
              "target", "allocs d/i/b", "floors cas, cas+sub, cas+win ns", "result")
    rows = []
    failed = False
    for threads in sorted({t for (_, t) in results}):
        d = results.get(("degrade", threads))
        nan = [float("nan"), float("nan")]
        i = results.get(("ignore", threads), nan)
        floors = [results.get((f, threads), nan)[0] for f in ("cas", "cas+sub", "cas+win")]
        b = results.get(("baseline", threads))
        if not (d and b) or None in (d[0], b[0]):
            continue
        ratio = d[0] / b[0] if b[0] > 0 else float("nan")
        problems = []
        if not ratio <= MAX_RATIO:
            problems.append("ratio")
        if d[1] != 0:
            problems.append("allocs")
        result = "FAIL (" + ", ".join(problems) + ")" if problems else "PASS"
        failed |= bool(problems)
        rows.append((str(threads), f"{d[0]:.2f}", f"{i[0]:.2f}", f"{b[0]:.2f}",
                     f"{ratio:.2f}", "<= 0.33",
                     "/".join(f"{x[1]:.3g}" for x in (d, i, b)),
                     ", ".join(f"{x:.2f}" for x in floors), result))
    if not rows:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    table(header, rows)
    print("ns per acquire + release (wall time / calls of all threads); allocs per "
          "call, mean over repetitions")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
