#!/usr/bin/env python3
"""Compare the success path through WithFallback with the breaker called
directly and with the bare call, from one run of fallback_benchmark.

    benchmarks/fallback_ratios.py build/bench/benchmarks/fallback_benchmark

Target: WithFallback time <= 1.2x the breaker-direct time, at 1 and 2
threads, and no heap allocation per call. Exits 1 if a target fails, 2 on a
usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import TO_NS, parse_and_load  # noqa: E402  (same directory)

NAME_RE = re.compile(r"^BM_(\w+?)/")
TARGET = 1.2


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to fallback_benchmark")
    if data is None:
        return 2
    med, allocs = {}, {}
    have_aggregates = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        m = NAME_RE.match(b.get("run_name", b["name"]))
        if not m:
            continue
        key = (m.group(1), int(b["threads"]))
        agg = b.get("aggregate_name") if have_aggregates else "median"
        if agg == "median":
            med[key] = b["real_time"] * TO_NS[b.get("time_unit", "ns")]
        if agg == "mean" or not have_aggregates:
            allocs[key] = b.get("allocs_per_call", float("nan"))
    print("| thr | bare ns | breaker ns | WithFallback ns | fallback/breaker | target | allocs | result |")
    print("|-----|---------|------------|-----------------|------------------|--------|--------|--------|")
    failed = False
    for threads in sorted({t for (_, t) in med}):
        try:
            bare = med[("BareCall", threads)]
            direct = med[("BreakerDirect", threads)]
            wf = med[("WithFallback", threads)]
        except KeyError:
            continue
        ratio = wf / direct
        a = allocs.get(("WithFallback", threads), float("nan"))
        ok = ratio <= TARGET and a == 0
        failed |= not ok
        print(f"| {threads} | {bare:.1f} | {direct:.1f} | {wf:.1f} | {ratio:.2f} | <= {TARGET} | {a:g} | "
              f"{'PASS' if ok else 'FAIL'} |")
    print("times in ns/call (wall time / calls of all threads), medians; allocs per call, mean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
