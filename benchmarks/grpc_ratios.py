#!/usr/bin/env python3
"""Compare a unary gRPC call through degrade's breaker interceptor with the plain call.

Runs grpc_benchmark (or reads its --benchmark_format=json output) and
prints the median wall-clock time per call of

    plain        a unary call on a plain in-process channel (BM_Grpc_Plain)
    interceptor  the same call through MakeBreakerInterceptor
                 (BM_Grpc_Interceptor)

with the issue's targets (issue 17), from the same run, repetitions
interleaved at random so that a noisy neighbour hits both alike:

    interceptor - plain <= 1000 ns
    interceptor / plain <= 1.10

    benchmarks/grpc_ratios.py build/bench/benchmarks/grpc_benchmark --repetitions 10
    benchmarks/grpc_ratios.py --json results.json

Exits 1 if a target fails, 2 on a usage or input error.
"""

import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratios import by_impl_and_threads, parse_and_load  # noqa: E402  (same directory)
from gate_ratios import table  # noqa: E402

MAX_EXTRA_NS = 1000.0
MAX_RATIO = 1.10

IMPLS = {"Grpc_Plain": "plain", "Grpc_Interceptor": "interceptor"}
NAME_RE = re.compile(r"^BM_(\w+?)/")


def main():
    args, data = parse_and_load(__doc__.splitlines()[0], "path to grpc_benchmark")
    if data is None:
        return 2
    results = by_impl_and_threads(data, NAME_RE, IMPLS)
    p = results.get(("plain", 1))
    i = results.get(("interceptor", 1))
    if not (p and i) or "ns" not in p or "ns" not in i:
        print("no matching benchmarks found", file=sys.stderr)
        return 2
    extra = i["ns"] - p["ns"]
    ratio = i["ns"] / p["ns"] if p["ns"] > 0 else float("nan")
    problems = []
    if not extra <= MAX_EXTRA_NS:
        problems.append("extra ns")
    if not ratio <= MAX_RATIO:
        problems.append("ratio")
    table(("plain ns", "interceptor ns", "extra ns", "target", "ratio", "target", "result"),
          [(f"{p['ns']:.0f}", f"{i['ns']:.0f}", f"{extra:.0f}", f"<= {MAX_EXTRA_NS:g}",
            f"{ratio:.3f}", f"<= {MAX_RATIO:g}",
            "FAIL (" + ", ".join(problems) + ")" if problems else "PASS")])
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
