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
    +deposit   budget.Deposit() then breaker.Execute(f)
               (BM_Degrade_BreakerDeposit)
    retry      Retry(retrier, breaker, deadline, f) with a budget, first
               attempt succeeding (BM_Degrade_RetryFirstTime)
    unbudgeted the same without a budget (BM_Degrade_RetryUnbudgeted)
    throttle   AdaptiveThrottler::Admit() + Record(true) (info)

with the targets, at one thread: withdraw <= 10 ns, and a first-time
call through the retry policy within 1.2x of the breaker-direct call
(unbudgeted/direct); zero heap allocations per call at every thread count.

The budgeted ratios, retry/+deposit and retry/direct, are printed too
(info): they add the budget's Deposit(), a cost of the budget
(retry_budget.hpp) that is already below one shared atomic add. Rows with
more than one thread are information as well: there the threads share the
budget's grant word and the breaker's lines, so the cost is the cache
line's trip between cores (the clock+cas floor shows it). All rows come
from the same run.

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
    "Degrade_BreakerDeposit": "+deposit",
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
        w, d, dd = get("withdraw"), get("direct"), get("+deposit")
        r, u = get("retry"), get("unbudgeted")
        if not all("ns" in x for x in (w, d, dd, r, u)):
            continue
        over = lambda a, b: a["ns"] / b["ns"] if b["ns"] > 0 else nan
        budgeted, unbudgeted, issue = over(r, dd), over(u, d), over(r, d)
        problems = []
        if not (w.get("granted") or 0) >= 0.999:
            problems.append("withdraw not granted")
        if t == 1 and not w["ns"] <= MAX_WITHDRAW_NS:
            problems.append("withdraw ns")
        if t == 1 and not unbudgeted <= MAX_RETRY_OVER_DIRECT:
            problems.append("unbudgeted/direct")
        for impl in IMPLS.values():
            if get(impl) and get(impl).get("allocs") != 0:
                problems.append(f"{impl} allocs")
        failed |= bool(problems)
        info = ", ".join(f"{impl} {get(impl).get('ns', nan):.2f}"
                         for impl in ("deposit", "fetch_add", "clock+cas", "throttle"))
        rows.append((str(t), f"{w['ns']:.2f}", f"{d['ns']:.2f}", f"{dd['ns']:.2f}",
                     f"{r['ns']:.2f}", f"{u['ns']:.2f}", f"{budgeted:.2f}",
                     f"{unbudgeted:.2f}", f"{issue:.2f}", info,
                     "FAIL (" + ", ".join(problems) + ")" if problems else "PASS"))
    if not rows:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    print(f"targets at 1 thread: withdraw <= {MAX_WITHDRAW_NS:g} ns; "
          f"unbudgeted/direct <= {MAX_RETRY_OVER_DIRECT:g}; zero allocations "
          "at every thread count")
    table(("thr", "withdraw ns", "direct ns", "+deposit ns", "retry ns",
           "unbudgeted ns", "retry/+deposit (info)", "unbudgeted/direct",
           "retry/direct (info)", "info ns", "result"), rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
