#!/usr/bin/env python3
"""Report what a Coalescer costs a request, and how late a request that gives up returns.

Runs coalesce_benchmark (or reads its --benchmark_format=json output) and
prints, per thread count, the median wall-clock ns per call of

    direct     the call itself (BM_Direct_Call)
    distinct   Do() inline, each thread on a key of its own: the uncontended
               cost (BM_Coalesce_DistinctKeys)
    one key    Do() inline, all threads on one key (BM_Coalesce_OneKey)
    executor   Do() on a ThreadPool(2), distinct keys (BM_Coalesce_Executor)
    cwt        CallWithTimeout on a ThreadPool(2): the hand-off alone
               (BM_CallWithTimeout)

with the overhead of Do() over the direct call, one key / distinct keys, and
executor / cwt (what coalescing adds to a hand-off to another thread); then,
per budget and thread count, how far past its budget a request whose call
never ends returns (BM_Coalesce_WaiterLateness: p50, p99, max in us; beside
it BM_CallWithTimeout_Lateness, the same wait without coalescing), with
the target of research target B-7: the p99 within 1 ms of the budget (the
max is reported; on a shared machine it includes the scheduler's worst).

    benchmarks/coalesce_ratios.py build/bench/benchmarks/coalesce_benchmark
    benchmarks/coalesce_ratios.py --json results.json

Exits 1 if a target fails, 2 on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gate_ratios import table  # noqa: E402  (same directory)
from ratios import by_impl_and_threads, parse_and_load  # noqa: E402

LATE_P99_MAX_US = 1000
IMPLS = {
    "Direct_Call": "direct",
    "Coalesce_DistinctKeys": "distinct",
    "Coalesce_OneKey": "one",
    "Coalesce_Executor": "executor",
    "CallWithTimeout": "cwt",
}
NAME_RE = re.compile(r"^BM_(\w+?)/")
LATE_RE = re.compile(r"^BM_(Coalesce_WaiterLateness|CallWithTimeout_Lateness)/(\d+)/")
LATE_COUNTERS = ("late_p50_us", "late_p99_us", "late_max_us")


def lateness_rows(data):
    """One row per budget and thread count: the coalescer's lateness and
    CallWithTimeout's on the same pool (p50 / p99 / max, us)."""
    got = {}
    have_aggregates = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        m = LATE_RE.match(b.get("run_name", b["name"]))
        if not m or (have_aggregates and b.get("aggregate_name") != "median"):
            continue
        key = (int(m.group(2)), int(b["threads"]))
        got.setdefault(key, {})[m.group(1)] = [
            b.get(c, float("nan")) for c in LATE_COUNTERS]
    rows = []
    nan = [float("nan")] * 3
    for (budget, threads), v in sorted(got.items()):
        c = v.get("Coalesce_WaiterLateness", nan)
        w = v.get("CallWithTimeout_Lateness", nan)
        rows.append((f"{budget / 1000:g} ms", str(threads),
                     " / ".join(f"{x:.0f}" for x in c),
                     " / ".join(f"{x:.0f}" for x in w),
                     "PASS" if c[1] <= LATE_P99_MAX_US else "FAIL"))
    return rows


def main():
    args, data = parse_and_load(__doc__.splitlines()[0],
                                "path to coalesce_benchmark")
    if data is None:
        return 2
    r = by_impl_and_threads(data, NAME_RE, IMPLS)
    nan = {"ns": float("nan"), "allocs": float("nan")}
    rows = []
    for threads in sorted({t for (_, t) in r}):
        g = {k: r.get((k, threads), nan) for k in IMPLS.values()}
        rows.append((str(threads), f"{g['direct']['ns']:.1f}",
                     f"{g['distinct']['ns']:.0f}", f"{g['one']['ns']:.0f}",
                     f"{g['executor']['ns']:.0f}", f"{g['cwt']['ns']:.0f}",
                     f"{g['distinct']['ns'] - g['direct']['ns']:.0f}",
                     f"{g['one']['ns'] / g['distinct']['ns']:.2f}",
                     f"{g['executor']['ns'] / g['cwt']['ns']:.2f}",
                     f"{g['distinct'].get('allocs', float('nan')):.2f}"))
    late = lateness_rows(data)
    if not rows and not late:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    if rows:
        table(("thr", "direct ns", "distinct ns", "one key ns", "executor ns",
               "cwt ns", "Do overhead ns", "one/distinct", "executor/cwt",
               "allocs/Do"), rows)
        print("median wall ns per call; allocs per uncontended Do(), mean")
    if late:
        if rows:
            print()
        table(("budget", "thr", "coalescer late p50/p99/max us",
               "CallWithTimeout late p50/p99/max us", "result"), late)
        print(f"how far past its budget a request returns; target p99 <= "
              f"{LATE_P99_MAX_US} us")
    return 1 if any(row[-1] == "FAIL" for row in late) else 0


if __name__ == "__main__":
    sys.exit(main())
