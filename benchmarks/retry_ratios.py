#!/usr/bin/env python3
"""Check the retry components' costs (issue 16) from one run of retry_benchmark.

Runs retry_benchmark (or reads its --benchmark_format=json output) and
prints, per thread count, the median wall-clock ns of

    withdraw   RetryBudget::TryWithdraw(), granted (BM_Budget_Withdraw)
    deposit    RetryBudget::Deposit() (info)
    fetch_add  one relaxed fetch_add on a shared word (the floor, info)
    clock+cas  a coarse clock read and one compare-and-swap on a shared
               word: the floor of an exact withdrawal (info)
    direct     breaker.Execute(f) (BM_Degrade_BreakerDirect)
    retry      Retry(retrier, breaker, deadline, f) with a budget, first
               attempt succeeding (BM_Degrade_RetryFirstTime)
    unbudgeted the same without a budget (info)
    throttle   AdaptiveThrottler::Admit() + Record(true) (info)

with the targets withdraw <= 10 ns, retry/direct <= 1.2, and zero heap
allocations per call everywhere. All rows come from the same run.

    benchmarks/retry_ratios.py build/bench/benchmarks/retry_benchmark --repetitions 5
    benchmarks/retry_ratios.py --json results.json

Exits 1 if a target fails, 2 on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gate_ratios import table  # noqa: E402  (same directory)
from ratios import by_impl_and_threads, parse_and_load  # noqa: E402

MAX_WITHDRAW_NS = 10.0
MAX_RETRY_OVER_DIRECT = 1.2
IMPLS = {
    "Budget_Withdraw": "withdraw",
    "Budget_Deposit": "deposit",
    "Baseline_RelaxedFetchAdd": "fetch_add",
    "Baseline_CoarseClockCas": "clock+cas",
    "Degrade_BreakerDirect": "direct",
    "Degrade_RetryFirstTime": "retry",
    "Degrade_RetryUnbudgeted": "unbudgeted",
    "Throttle_Admit": "throttle",
}
NAME_RE = re.compile(r"^BM_(\w+?)/")


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to retry_benchmark")
    if data is None:
        return 2
    results = by_impl_and_threads(data, NAME_RE, IMPLS, median_counters=("granted",))
    nan = float("nan")
    rows = []
    failed = False
    for t in sorted({t for (_, t) in results}):
        get = lambda impl: results.get((impl, t), {})
        w, d, r = get("withdraw"), get("direct"), get("retry")
        if not ("ns" in w and "ns" in d and "ns" in r):
            continue
        ratio = r["ns"] / d["ns"] if d["ns"] > 0 else nan
        problems = []
        if not w["ns"] <= MAX_WITHDRAW_NS:
            problems.append("withdraw ns")
        if not (w.get("granted") or 0) >= 0.999:
            problems.append("withdraw not granted")
        if not ratio <= MAX_RETRY_OVER_DIRECT:
            problems.append("ratio")
        for impl in IMPLS.values():
            if get(impl) and get(impl).get("allocs") != 0:
                problems.append(f"{impl} allocs")
        failed |= bool(problems)
        info = ", ".join(f"{impl} {get(impl).get('ns', nan):.2f}"
                         for impl in ("deposit", "fetch_add", "clock+cas", "unbudgeted",
                                      "throttle"))
        rows.append((str(t), f"{w['ns']:.2f}", f"<= {MAX_WITHDRAW_NS:g}",
                     f"{d['ns']:.2f}", f"{r['ns']:.2f}", f"{ratio:.2f}",
                     f"<= {MAX_RETRY_OVER_DIRECT:g}", info,
                     "FAIL (" + ", ".join(problems) + ")" if problems else "PASS"))
    if not rows:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    table(("thr", "withdraw ns", "target", "direct ns", "retry ns", "retry/direct",
           "target", "info ns", "result"), rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
