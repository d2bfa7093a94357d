#!/usr/bin/env python3
"""Compare TrustPolicy::Apply with decoding the claim, from one run of
trust_policy_benchmark.

    benchmarks/trust_policy_ratios.py build/bench/benchmarks/trust_policy_benchmark

Rows, at 1 and 2 threads (ns per call, medians):
    DecodeClaim        DecodeRequestClass("CRITICAL_PLUS:9"): what a call that
                       claims a class already pays
    ApplyDefault       the default policy (no peer read)
    ApplyByName        100 name rules, a peer of two names
    ApplyByAddressV4   100 address rules, an IPv4 peer (canonicalised per call)
    ApplyByAddressV6   the same, a long-form IPv6 peer

Targets, against DecodeClaim of the same run and thread count: ApplyDefault
<= 0.5x, ApplyByName <= 2x, ApplyByAddress* <= 5x (parsing the peer's
address text, which a name rule does not need: about 100 ns, under 1% of a
gRPC unary call's tens of microseconds); no heap allocation per Apply.
Exits 1 if a target fails, 2 on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import TO_NS, medians_and_allocs, parse_and_load  # noqa: E402  (same directory)

# A row and its thread count: "BM_ApplyByName/real_time/threads:2".
NAME_RE = re.compile(r"^BM_(\w+/\S*threads:\d+)$")
TARGETS = {"ApplyDefault": 0.5, "ApplyByName": 2.0, "ApplyByAddressV4": 5.0,
           "ApplyByAddressV6": 5.0}


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to trust_policy_benchmark")
    if data is None:
        return 2
    med, allocs = {}, {}
    by_run = medians_and_allocs(data, NAME_RE,
                                lambda b: b["real_time"] * TO_NS[b.get("time_unit", "ns")])
    for out, values in zip((med, allocs), by_run):
        for run, v in values.items():
            out[(run.split("/")[0], int(run.rsplit(":", 1)[1]))] = v
    print("| thr | row | ns | / DecodeClaim | target | allocs | result |")
    print("|-----|-----|----|---------------|--------|--------|--------|")
    failed = False
    for threads in sorted({t for (_, t) in med}):
        base = med.get(("DecodeClaim", threads))
        if base is None:
            continue
        print(f"| {threads} | DecodeClaim | {base:.1f} | 1.00 | - | "
              f"{allocs.get(('DecodeClaim', threads), float('nan')):g} | - |")
        for row, target in TARGETS.items():
            ns = med.get((row, threads))
            if ns is None:
                continue
            a = allocs.get((row, threads), float("nan"))
            ok = ns / base <= target and a == 0
            failed |= not ok
            print(f"| {threads} | {row} | {ns:.1f} | {ns / base:.2f} | <= {target} | {a:g} | "
                  f"{'PASS' if ok else 'FAIL'} |")
    print("times in ns/call (wall time / calls of all threads), medians; allocs per call, mean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
