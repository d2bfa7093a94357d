#!/usr/bin/env python3
"""Compare LastGoodCache hits and inserts with a mutex LRU, and report its hit ratio.

Runs stale_cache_benchmark (or reads its --benchmark_format=json output) and
prints, per thread count, the median wall-clock ns per call of

    hit        FindStale on a held key, 256 B values, 64 Ki keys (BM_Cache_Hit)
    lru hit    the same through a std::mutex + std::list + std::unordered_map
               LRU (BM_Baseline_LruHit)
    hot        info: both on 1,024 keys, in the CPU's caches (*HitHot)
    insert     Put of a new key into a full cache, every put evicting, the
               value made beforehand (BM_Cache_InsertEvict)
    by value   info: the same with Put(key, V): one allocate_shared and the
               vector's copy (BM_Cache_InsertEvictByValue)
    lru insert info: the LRU's put with eviction (BM_Baseline_LruInsertEvict)

with the targets of issue 34 (B-1..B-3): hit <= 60 ns at 1 thread, hit <=
0.25 x the LRU's at 2 threads, insert <= 300 ns, and no heap allocation per
hit.

Then, unless --no-sim, runs BM_Sim_Zipf once (Zipf(0.9) over 1 M and 10 M
users, capacity 10 %; minutes) and prints the share of requests that found
their value against the oracle holding the hottest keys (target >= 0.9 x;
B-5) and an LRU's, and the hot-set coverage before and after a one-pass
scan of 2 x capacity new keys (target: down by at most 10 %; B-6).

    benchmarks/stale_cache_ratios.py build/bench/benchmarks/stale_cache_benchmark --repetitions 5
    benchmarks/stale_cache_ratios.py --json results.json

Exits 1 if a target fails, 2 on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gate_ratios import table  # noqa: E402  (same directory)
from ratios import by_impl_and_threads, run_benchmark  # noqa: E402

HIT_MAX_NS = 60
HIT_RATIO_2T = 0.25
INSERT_MAX_NS = 300
IMPLS = {
    "Cache_Hit": "hit",
    "Baseline_LruHit": "lru",
    "Cache_HitHot": "hot",
    "Baseline_LruHitHot": "lru_hot",
    "Cache_InsertEvict": "insert",
    "Cache_InsertEvictByValue": "by_value",
    "Baseline_LruInsertEvict": "lru_insert",
}
NAME_RE = re.compile(r"^BM_(\w+?)/")
SIM_RE = re.compile(r"^BM_Sim_Zipf/(\d+)")


def sim_rows(data):
    rows = []
    for b in data.get("benchmarks", []):
        m = SIM_RE.match(b.get("run_name", b["name"]))
        if not m or b.get("run_type") == "aggregate":
            continue
        oracle, hit = b.get("oracle", 0), b.get("hit_ratio", 0)
        before, after = b.get("coverage_before_scan", 0), b.get("coverage_after_scan", 0)
        ok = hit >= 0.9 * oracle and after >= 0.9 * before
        rows.append((m.group(1), f"{oracle:.4f}", f"{hit:.4f}",
                     f"{b.get('lru_hit_ratio', 0):.4f}",
                     f"{before:.4f} -> {after:.4f}",
                     f"{b.get('lru_coverage_before_scan', 0):.4f} -> "
                     f"{b.get('lru_coverage_after_scan', 0):.4f}",
                     "PASS" if ok else "FAIL"))
    return rows


def main():
    import argparse
    import json
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", nargs="?", help="path to stale_cache_benchmark")
    parser.add_argument("--json", help="read this JSON output instead of running")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--min-time", default="0.5")
    parser.add_argument("--no-sim", action="store_true",
                        help="skip the hit-ratio simulation")
    parser.add_argument("--save", help="also write the raw JSON here")
    args = parser.parse_args()
    if args.json:
        with open(args.json) as f:
            data = json.load(f)
    elif args.binary:
        if not os.access(args.binary, os.X_OK):
            print(f"not an executable: {args.binary}", file=sys.stderr)
            return 2
        data = run_benchmark(args.binary, args.repetitions, args.min_time,
                             ["--benchmark_filter=-Sim"])
        if not args.no_sim:
            sim = run_benchmark(args.binary, 1, args.min_time,
                                ["--benchmark_filter=Sim"])
            data["benchmarks"] += sim["benchmarks"]
        if args.save:
            with open(args.save, "w") as f:
                json.dump(data, f, indent=1)
    else:
        parser.print_usage(sys.stderr)
        return 2

    r = by_impl_and_threads(data, NAME_RE, IMPLS)
    nan = {"ns": float("nan"), "allocs": float("nan")}
    header = ("thr", "hit ns", "lru hit ns", "hit/lru", "hot / lru hot ns",
              "insert ns", "by value ns", "lru insert ns", "hit allocs", "result")
    rows = []
    failed = False
    for threads in sorted({t for (_, t) in r}):
        g = {k: r.get((k, threads), nan) for k in IMPLS.values()}
        if "ns" not in g["hit"] or "ns" not in g["lru"]:
            continue
        ratio = g["hit"]["ns"] / g["lru"]["ns"]
        problems = []
        if threads == 1 and not g["hit"]["ns"] <= HIT_MAX_NS:
            problems.append("hit ns")
        if threads == 2 and not ratio <= HIT_RATIO_2T:
            problems.append("hit/lru")
        if threads == 1 and not g["insert"]["ns"] <= INSERT_MAX_NS:
            problems.append("insert ns")
        if g["hit"].get("allocs", 0) != 0 or g["hot"].get("allocs", 0) not in (0, None):
            problems.append("allocs")
        failed |= bool(problems)
        rows.append((str(threads), f"{g['hit']['ns']:.1f}", f"{g['lru']['ns']:.1f}",
                     f"{ratio:.2f}",
                     f"{g['hot']['ns']:.1f} / {g['lru_hot']['ns']:.1f}",
                     f"{g['insert']['ns']:.1f}", f"{g['by_value']['ns']:.1f}",
                     f"{g['lru_insert']['ns']:.1f}",
                     f"{g['hit'].get('allocs', float('nan')):.3g}",
                     "FAIL (" + ", ".join(problems) + ")" if problems else "PASS"))
    sims = sim_rows(data)
    if not rows and not sims:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    if rows:
        table(header, rows)
        print("ns per call (wall time / calls of all threads), median over "
              "repetitions; targets: hit <= 60 ns at 1 thread, hit/lru <= 0.25 "
              "at 2, insert <= 300 ns at 1, 0 allocations per hit")
    if sims:
        if rows:
            print()
        table(("users", "oracle", "hit ratio", "LRU", "coverage, scan",
               "LRU coverage, scan", "result"), sims)
        print("Zipf(0.9), capacity 10 % of users; a scan of 2 x capacity new keys")
        failed |= any(row[-1] == "FAIL" for row in sims)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
