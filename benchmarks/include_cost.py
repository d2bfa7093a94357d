#!/usr/bin/env python3
"""Include cost of degrade's headers: preprocessed lines and compile time.

For each header, a translation unit that includes only that header is
preprocessed (lines of `g++ -E` output, and how many of them come from
degrade's own headers and from nlohmann/json) and compiled with -fsyntax-only
(median wall time of --runs runs, so a noisy machine matters less).

  python3 benchmarks/include_cost.py [--compiler g++] [--runs 5] [header ...]

Default headers: degrade/circuit_breaker.hpp, degrade/deadline.hpp,
degrade/degrade.hpp. Run from the repository root.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

DEFAULT = ["degrade/circuit_breaker.hpp", "degrade/deadline.hpp", "degrade/degrade.hpp"]


def preprocess(cxx, include, tu):
    out = subprocess.run([cxx, "-std=c++17", "-E", "-I", include, tu],
                         check=True, capture_output=True, text=True).stdout
    total = ours = nlohmann = 0
    current = ""
    for line in out.splitlines():
        if line.startswith("# "):
            parts = line.split('"')
            if len(parts) >= 2:
                current = parts[1]
            continue
        total += 1
        if "/degrade/" in current:
            ours += 1
        elif "nlohmann" in current:
            nlohmann += 1
    return total, ours, nlohmann


def compile_time(cxx, include, tu, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-I", include, tu], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--compiler", default="g++")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("headers", nargs="*", default=DEFAULT)
    a = p.parse_args()
    include = os.path.join(os.getcwd(), "include")
    if not os.path.isdir(os.path.join(include, "degrade")):
        sys.exit("run from the repository root")
    print(f"| header | preprocessed lines | from degrade | from nlohmann | compile time (-fsyntax-only, median of {a.runs}) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for h in a.headers:
            tu = os.path.join(d, "tu.cpp")
            with open(tu, "w") as f:
                f.write(f"#include <{h}>\nint main() {{ return 0; }}\n")
            total, ours, nl = preprocess(a.compiler, include, tu)
            t = compile_time(a.compiler, include, tu, a.runs)
            print(f"| `{h}` | {total:,} | {ours:,} | {nl:,} | {t:.2f} s |")


if __name__ == "__main__":
    main()
