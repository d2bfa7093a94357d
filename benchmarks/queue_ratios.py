#!/usr/bin/env python3
"""Compare AdmissionQueue push + PopBatch(32) with a mutex + std::deque, from
one run of queue_benchmark.

    benchmarks/queue_ratios.py build/bench/benchmarks/queue_benchmark --repetitions 5

Target (issue 15): Degrade_QueuePushPopBatch32 time per item <= 1/2 of
Baseline_MutexDeque's, and no heap allocation per item. The FakeClock row
and the clock read are printed for information: the real-clock row pays one
precise clock read per Push(), which on some machines costs more than the
baseline's whole push and pop. So are the baseline with that clock read
(what a hand-written CoDel queue pays) and the floor of any multi-producer
bounded queue (one compare-and-swap per push against its capacity), which
shows how much of the target is left for everything else. Exits 1 if the target fails, 2
on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import medians_and_allocs, parse_and_load  # noqa: E402  (same directory)

NAME_RE = re.compile(r"^BM_(\w+?)/")
TARGET = 0.5
ROWS = ["Degrade_QueuePushPopBatch32", "Degrade_QueuePushPopBatch32FakeClock",
        "Degrade_QueuePushPop1", "ClockRead", "Baseline_MutexDequeTimestamped",
        "Floor_BoundedCasPerPush"]
BASELINE = "Baseline_MutexDeque"


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to queue_benchmark")
    if data is None:
        return 2
    # ns_per_item is an inverted rate: seconds per item.
    med, allocs = medians_and_allocs(data, NAME_RE, lambda b: b["ns_per_item"] * 1e9)
    if BASELINE not in med:
        print("no baseline row in the output", file=sys.stderr)
        return 2
    base = med[BASELINE]
    print("| row | ns/item | / baseline | target | allocs/item | result |")
    print("|-----|---------|------------|--------|-------------|--------|")
    print(f"| {BASELINE} | {base:.1f} | 1.00 | - | {allocs.get(BASELINE, float('nan')):.3g} | - |")
    failed = False
    for row in ROWS:
        if row not in med:
            continue
        ratio = med[row] / base
        a = allocs.get(row, float("nan"))
        if row == ROWS[0]:
            ok = ratio <= TARGET and a == 0
            failed |= not ok
            verdict, target = ("PASS" if ok else "FAIL"), f"<= {TARGET}"
        else:
            verdict, target = "info", "-"
        print(f"| {row} | {med[row]:.1f} | {ratio:.2f} | {target} | {a:.3g} | {verdict} |")
    print("wall time per item, medians; allocations per item, mean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
