#!/usr/bin/env python3
"""Compare degrade with the mutex baseline from one run of breaker_benchmark.

Runs the benchmark binary (or reads its --benchmark_format=json output) and
prints, for each workload and thread count, the median wall-clock ns per call
of degrade, the baseline and the bare call, each breaker's overhead over the
bare call, their ratio, the target, and the heap allocations per call.

    benchmarks/ratios.py build/benchmarks/breaker_benchmark
    benchmarks/ratios.py --json results.json

Targets (degrade overhead / baseline overhead, same run), from the issues
(the 1-thread closed target tightened from 1/3 to 0.12 by the redesign):
    ClosedSuccess                       <= 0.12 at 1 thread, <= 1/5 at 2 threads
    ClosedSuccessInterval60s/TimeWindow <= 1/2 at 1 thread
    ClosedSuccessCountWindowRate        <= 1/3 at 1 thread (a count window of
                                        100 and FailureRate(0.5, 20); the
                                        baseline is its ClosedSuccess: gobreaker
                                        has no count window)
    ClosedSuccessTimeWindow and
    ClosedSuccessCountWindowRate        <= 1/5 at 2 threads (issue 31: windows
                                        that scale)
and degrade makes no heap allocations per call on any of these paths.

A second table compares rows of the same run with each other (issue 14):
    closed / floor      Degrade_ClosedSuccess time / Floor time, <= 3/2 at 1
                        and 2 threads. The floor is the bare call plus one
                        acquire load of a shared word and one relaxed add (a
                        plain load and store) on a line the thread owns, so
                        both sides include the protected call.
    listener / none     the overhead of ClosedSuccessListener (one listener
                        wanting every call, OnCall a relaxed add) over the
                        overhead of ClosedSuccess, <= 3/2 at 1 thread.
    <window> 2 thr / 1 thr
                        wall time per call (all threads) at 2 threads over
                        that at 1 thread, <= 1 for the time window and the
                        count window with a rate rule (issue 31). The
open-state rejection is reported with its ratio as "info": its allocation
count must be zero, but the issue sets its speed no ratio. For OpenReject the
function is not called, so "overhead over the bare call" is the rejection
cost minus the cost of the call it replaces.

Exits 1 if any target fails, 2 on a usage or input error.
"""

import argparse
import json
import os
import re
import subprocess
import sys
from fractions import Fraction

WORKLOADS = [
    "ClosedSuccess",
    "ClosedSuccessInterval60s",
    "ClosedSuccessTimeWindow",
    "ClosedSuccessCountWindowRate",
    "OpenReject",
]

# Workloads degrade runs and the baseline cannot: the baseline row they are
# compared with.
BASELINE_OF = {"ClosedSuccessCountWindowRate": "ClosedSuccess"}

# (workload, threads) -> maximum ratio of degrade's overhead to the baseline's.
TARGETS = {
    ("ClosedSuccess", 1): Fraction(12, 100),
    ("ClosedSuccess", 2): Fraction(1, 5),
    ("ClosedSuccessInterval60s", 1): Fraction(1, 2),
    ("ClosedSuccessTimeWindow", 1): Fraction(1, 2),
    ("ClosedSuccessCountWindowRate", 1): Fraction(1, 3),
    ("ClosedSuccessTimeWindow", 2): Fraction(1, 5),
    ("ClosedSuccessCountWindowRate", 2): Fraction(1, 5),
}

# Workloads whose wall time per call at 2 threads must not exceed that at 1
# thread: a second thread must not slow every call down (issue 31).
SCALING = {"ClosedSuccessTimeWindow": Fraction(1), "ClosedSuccessCountWindowRate": Fraction(1)}

# Rows compared with other rows of the same run: (name, numerator,
# denominator, compare overheads over the bare call?) and their targets by
# thread count. Each side is (impl, workload) as collect() keys them.
RELATIVE = [
    ("closed / floor", ("Degrade", "ClosedSuccess"), ("Floor", None), False,
     {1: Fraction(3, 2), 2: Fraction(3, 2)}),
    ("closed / floor-rmw", ("Degrade", "ClosedSuccess"), ("FloorRmw", None),
     False, {}),
    ("listener / none", ("Degrade", "ClosedSuccessListener"),
     ("Degrade", "ClosedSuccess"), True, {1: Fraction(3, 2)}),
]

NAME_RE = re.compile(r"^BM_(?:(Degrade|Baseline)_(\w+)|(BareCall|Floor|FloorRmw))/")
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def run_benchmark(binary, repetitions, min_time, extra):
    cmd = [
        binary,
        "--benchmark_format=json",
        f"--benchmark_repetitions={repetitions}",
        "--benchmark_report_aggregates_only=true",
        f"--benchmark_min_time={min_time}",
        "--benchmark_enable_random_interleaving=true",
    ] + extra
    print("running:", " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def collect(data):
    """Returns {(impl, workload, threads): (ns_per_call, allocs_per_call)}."""
    results = {}
    have_aggregates = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            sys.exit(f"benchmark {b['name']} failed: {b.get('error_message')}")
        if have_aggregates and b.get("aggregate_name") != "median":
            continue
        m = NAME_RE.match(b.get("run_name", b["name"]))
        if not m:
            continue
        if m.group(1):
            impl, workload = m.group(1), m.group(2)
        else:
            impl = "Bare" if m.group(3) == "BareCall" else m.group(3)
            workload = None
        ns = b["real_time"] * TO_NS[b.get("time_unit", "ns")]
        allocs = b.get("allocs_per_call", float("nan"))
        results[(impl, workload, int(b["threads"]))] = (ns, allocs)
    return results


def medians_and_allocs(data, name_re, value):
    """For the scripts comparing rows of one benchmark: returns ({name:
    median of value(b)}, {name: mean allocs_per_call}), a row's name being
    name_re's first group of its run name (rows it does not match are
    skipped). Without aggregates, each row is its own median and mean."""
    med, allocs = {}, {}
    have_aggregates = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        m = name_re.match(b.get("run_name", b["name"]))
        if not m:
            continue
        agg = b.get("aggregate_name") if have_aggregates else "median"
        if agg == "median":
            med[m.group(1)] = value(b)
        if agg == "mean" or not have_aggregates:
            allocs[m.group(1)] = b.get("allocs_per_call", float("nan"))
    return med, allocs


def by_impl_and_threads(data, name_re, impls, median_counters=()):
    """For the scripts comparing rows at several thread counts: returns
    {(impls[row], threads): {"ns": median wall ns, "allocs": mean
    allocs_per_call, and each of median_counters: its median}}, a row being
    name_re's first group of its run name (rows not in impls are skipped).
    Exits on a benchmark that failed."""
    results = {}
    have_aggregates = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            sys.exit(f"benchmark {b['name']} failed: {b.get('error_message')}")
        m = name_re.match(b.get("run_name", b["name"]))
        if not m or m.group(1) not in impls:
            continue
        agg = b.get("aggregate_name") if have_aggregates else "median"
        r = results.setdefault((impls[m.group(1)], int(b["threads"])), {})
        if agg == "median":
            r["ns"] = b["real_time"] * TO_NS[b.get("time_unit", "ns")]
            for c in median_counters:
                r[c] = b.get(c)
        if agg == "mean" or not have_aggregates:
            r["allocs"] = b.get("allocs_per_call", float("nan"))
    return results


def fmt_fraction(f):
    return f"<= {f.numerator}/{f.denominator}" if f is not None else "-"


def parse_and_load(description, binary_help):
    """Parses the command line shared by the ratio scripts and returns
    (args, data): the benchmark's JSON output, from a run or from --json.
    Returns (args, None) after printing usage when neither was given."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("binary", nargs="?", help=binary_help)
    parser.add_argument("--json", help="read this JSON output instead of running")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--min-time", default="0.5",
                        help="seconds per repetition (benchmark_min_time)")
    parser.add_argument("--save", help="also write the raw JSON here")
    parser.add_argument("extra", nargs="*", help="extra benchmark flags (after --)")
    args = parser.parse_args()

    if args.json:
        with open(args.json) as f:
            return args, json.load(f)
    if args.binary:
        if not os.access(args.binary, os.X_OK):
            print(f"not an executable: {args.binary}", file=sys.stderr)
            return args, None
        data = run_benchmark(args.binary, args.repetitions, args.min_time, args.extra)
        if args.save:
            with open(args.save, "w") as f:
                json.dump(data, f, indent=1)
        return args, data
    parser.print_usage(sys.stderr)
    return args, None


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to breaker_benchmark")
    if data is None:
        return 2

    results = collect(data)
    ctx = data.get("context", {})
    print(f"{ctx.get('host_name', '?')}: {ctx.get('num_cpus', '?')} CPUs @ "
          f"{ctx.get('mhz_per_cpu', '?')} MHz, library built as "
          f"{ctx.get('library_build_type', '?')}; medians of "
          f"{args.repetitions if not args.json else '?'} repetitions, wall time per call")

    header = ("workload", "thr", "bare", "degrade", "baseline", "deg ovh",
              "base ovh", "ratio", "target", "result", "deg allocs", "base allocs")
    rows = []
    failed = False
    threads_seen = sorted({t for (_, _, t) in results})
    for workload in WORKLOADS:
        for threads in threads_seen:
            deg = results.get(("Degrade", workload, threads))
            base = results.get(("Baseline", BASELINE_OF.get(workload, workload),
                                threads))
            bare = results.get(("Bare", None, threads))
            if not (deg and base and bare):
                continue
            deg_ovh = deg[0] - bare[0]
            base_ovh = base[0] - bare[0]
            ratio = deg_ovh / base_ovh if base_ovh > 0 else float("nan")
            target = TARGETS.get((workload, threads))
            result = "info"
            if target is not None:
                ok_time = base_ovh > 0 and ratio <= float(target)
                ok_allocs = deg[1] == 0
                result = "PASS" if ok_time and ok_allocs else "FAIL"
                if not ok_allocs:
                    result += " (allocs)"
                failed |= result != "PASS"
            elif deg[1] != 0:
                result = "FAIL (allocs)"
                failed = True
            rows.append((workload, str(threads), f"{bare[0]:.1f}", f"{deg[0]:.1f}",
                         f"{base[0]:.1f}", f"{deg_ovh:.1f}", f"{base_ovh:.1f}",
                         f"{ratio:.3f}", fmt_fraction(target), result,
                         f"{deg[1]:.3g}", f"{base[1]:.3g}"))

    if not rows:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    print("times in ns/call; ovh = time - bare; ratio = deg ovh / base ovh")

    rel_header = ("comparison", "thr", "numerator", "denominator", "ratio",
                  "target", "result")
    rel_rows = []
    for name, num_key, den_key, overheads, targets in RELATIVE:
        for threads in threads_seen:
            num = results.get(num_key + (threads,))
            den = results.get(den_key + (threads,))
            bare = results.get(("Bare", None, threads))
            if not (num and den and bare):
                continue
            a, b = num[0], den[0]
            if overheads:
                a, b = a - bare[0], b - bare[0]
            ratio = a / b if b > 0 else float("nan")
            target = targets.get(threads)
            result = "info"
            if target is not None:
                result = "PASS" if b > 0 and ratio <= float(target) else "FAIL"
                failed |= result != "PASS"
            rel_rows.append((name, str(threads), f"{a:.2f}", f"{b:.2f}",
                             f"{ratio:.2f}", fmt_fraction(target), result))
    for workload, target in SCALING.items():
        one = results.get(("Degrade", workload, 1))
        two = results.get(("Degrade", workload, 2))
        if not (one and two):
            continue
        ratio = two[0] / one[0] if one[0] > 0 else float("nan")
        result = "PASS" if one[0] > 0 and ratio <= float(target) else "FAIL"
        failed |= result != "PASS"
        rel_rows.append((f"{workload} 2 thr / 1 thr", "2", f"{two[0]:.2f}",
                         f"{one[0]:.2f}", f"{ratio:.2f}", fmt_fraction(target),
                         result))
    if rel_rows:
        print()
        widths = [max(len(r[i]) for r in rel_rows + [rel_header])
                  for i in range(len(rel_header))]
        print(line(rel_header))
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for r in rel_rows:
            print(line(r))
        print("closed / floor, 2 thr / 1 thr: times (both include the call);"
              " listener / none: overheads over the bare call")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
