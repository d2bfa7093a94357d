#!/usr/bin/env python3
"""Where a build's time went, from Ninja's own log (HACKING.md, "Where CI's
time goes").

Usage: cmake/build-times.py <build dir> [--top N]

Reads <build dir>/.ninja_log (the last run of each output) and prints the
wall time from the first step's start to the last one's end, the compile
time summed per kind of translation unit (tests, header checks, docs
snippets, examples, the rest), and the N slowest translation units. Each
step's time is wall time with the build's other jobs running beside it, so
compare figures from one machine and one -j.
"""
import argparse
import os
import sys


def kind(output):
    if "header_check" in output:
        return "header checks"
    if "/docs/" in output:
        return "docs snippets"
    if ("_test.dir" in output or "fleet_test_instance" in output
            or (output.startswith("tests/") and "/Unity/" in output)):
        return "tests"
    if output.startswith("examples") or "grpc_recsys" in output:
        return "examples"
    if output.startswith("benchmarks"):
        return "benchmarks"
    return "other"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    path = os.path.join(args.build_dir, ".ninja_log")
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        sys.exit(f"build-times: cannot read {path}: {e.strerror} "
                 "(a Ninja build directory, built at least once?)")
    last = {}
    for line in lines:
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 4:
            continue
        start, end, output = int(fields[0]), int(fields[1]), fields[3]
        last[output] = (start, end)
    if not last:
        sys.exit(f"build-times: {path} records no step")
    span = (max(e for _, e in last.values()) - min(s for s, _ in last.values())) / 1000
    objects = {o: (e - s) / 1000 for o, (s, e) in last.items() if o.endswith(".o")}
    print(f"{args.build_dir}: {len(last)} steps, {len(objects)} translation units, "
          f"{span:.0f} s from first start to last end")
    sums = {}
    for o, t in objects.items():
        n, total = sums.get(kind(o), (0, 0.0))
        sums[kind(o)] = (n + 1, total + t)
    print(f"{'kind':<16}{'units':>6}{'compile s':>11}")
    for k, (n, total) in sorted(sums.items(), key=lambda kv: -kv[1][1]):
        print(f"{k:<16}{n:>6}{total:>11.0f}")
    print(f"\nthe {args.top} slowest translation units:")
    for o, t in sorted(objects.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{t:7.1f} s  {o}")


if __name__ == "__main__":
    main()
