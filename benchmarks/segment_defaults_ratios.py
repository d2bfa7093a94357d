#!/usr/bin/env python3
"""Compare SegmentDefaults::Find with the global tier's read and a bare map
find, from one run of segment_defaults_benchmark.

    benchmarks/segment_defaults_ratios.py build/bench/benchmarks/segment_defaults_benchmark

Rows, at 1 and 2 threads (ns per call, medians):
    GlobalSnapshot      DefaultFeatures::snapshot(): a lock and a shared_ptr copy
    BareMapFind         absl::flat_hash_map::find by string_view, 100k keys
    SegmentFind         SegmentDefaults::Find of a known segment
    SegmentFindUnknown  the same for a segment not in the set

Targets: Find (known and unknown) <= 1.5x (GlobalSnapshot + BareMapFind) of
the same run and thread count, i.e. the snapshot and the counters add little
to the two things a lookup has to do; no heap allocation per Find. Exits 1
if a target fails, 2 on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import TO_NS, parse_and_load  # noqa: E402  (same directory)

NAME_RE = re.compile(r"^BM_(\w+?)/")
TARGET = 1.5


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to segment_defaults_benchmark")
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
    print("| thr | global ns | map ns | Find ns | unknown ns | Find/(global+map) | unknown/(global+map) | target | allocs | result |")
    print("|-----|-----------|--------|---------|------------|-------------------|----------------------|--------|--------|--------|")
    failed = False
    for threads in sorted({t for (_, t) in med}):
        try:
            glob = med[("GlobalSnapshot", threads)]
            bare = med[("BareMapFind", threads)]
            find = med[("SegmentFind", threads)]
            unknown = med[("SegmentFindUnknown", threads)]
        except KeyError:
            continue
        floor = glob + bare
        a = max(allocs.get(("SegmentFind", threads), float("nan")),
                allocs.get(("SegmentFindUnknown", threads), float("nan")))
        ok = find / floor <= TARGET and unknown / floor <= TARGET and a == 0
        failed |= not ok
        print(f"| {threads} | {glob:.1f} | {bare:.1f} | {find:.1f} | {unknown:.1f} | {find / floor:.2f} | "
              f"{unknown / floor:.2f} | <= {TARGET} | {a:g} | {'PASS' if ok else 'FAIL'} |")
    print("times in ns/call (wall time / calls of all threads), medians; allocs per call, mean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
