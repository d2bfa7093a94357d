#!/usr/bin/env python3
# Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
"""Checks a configured build's test translation units with -fsyntax-only.

The dev preset compiles the suite with clang++ (the fastest route to a
green `./cmake/run.sh test`); this is how g++ still reads every test file,
header check and docs block, with the same warnings and -Werror, at a third
of the cost of compiling them: g++ parses and instantiates every template
under -fsyntax-only, it only skips generating code. What only the optimiser
warns about is left to the g++ Release build of the library, examples and
benchmarks (`./cmake/run.sh plain`).

Usage:
  syntax-check.py BUILD_DIR [--under tests/] [--jobs 2]

BUILD_DIR must have been configured with CMAKE_EXPORT_COMPILE_COMMANDS=ON
(the presets do) and its generated sources built (e.g. the gRPC test
protos). Exits 1 naming each unit that fails, with the compiler's output.
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time


def arguments_of(entry):
    """An entry's argv: its `arguments`, or its `command` split as a shell
    would (the JSON compilation database allows either)."""
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry["command"])


def syntax_only(args):
    """The compile command with its outputs replaced by -fsyntax-only."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    return out + ["-fsyntax-only"]


def output_of(entry):
    args = arguments_of(entry)
    return args[args.index("-o") + 1] if "-o" in args else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--under", default="tests/",
                        help="check the units whose object lies under this "
                             "folder of the build (default: tests/)")
    parser.add_argument("--jobs", type=int, default=2)
    opts = parser.parse_args()

    path = os.path.join(opts.build_dir, "compile_commands.json")
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        print(f"syntax-check: cannot read {path}: {e}", file=sys.stderr)
        return 2
    if opts.jobs < 1:
        parser.error("--jobs must be at least 1")
    if not isinstance(entries, list):
        print(f"syntax-check: {path} is not a list of compile commands",
              file=sys.stderr)
        return 2
    units = [e for e in entries
             if output_of(e).startswith(opts.under)]
    if not units:
        print(f"syntax-check: no unit under {opts.under} in {path}",
              file=sys.stderr)
        return 2

    def check(entry):
        started = time.monotonic()
        try:
            r = subprocess.run(syntax_only(arguments_of(entry)),
                               cwd=entry["directory"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, check=False)
        except OSError as e:
            return entry["file"], 1, f"cannot run the compiler: {e}", 0.0
        return entry["file"], r.returncode, r.stdout, time.monotonic() - started

    failed = []
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        for unit, rc, output, _ in pool.map(check, units):
            if rc != 0:
                failed.append(unit)
                print(f"FAILED: {unit}\n{output}", file=sys.stderr)
    print(f"syntax-check: {len(units) - len(failed)} of {len(units)} units "
          f"clean in {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
