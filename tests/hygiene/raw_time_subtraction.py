#!/usr/bin/env python3
# Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
"""Fails when a header subtracts times with a raw `-`.

The library's rule (include/degrade/detail/saturating.hpp): every
elapsed-time computation saturates and treats a clock going backwards as no
time passing, so it goes through ElapsedSince / ElapsedNanosSince /
RemainingUntil, never `now - then`. A raw subtraction once overflowed at
InfinitePast, stretched holds when the clock stepped back, and expired an
infinite hold at InfiniteFuture; this check keeps them out.

A line counts when a binary ` - ` has an operand whose name reads as a time:
`now`, `Now()`, `since`, `start`, `at`, `when`, `deadline`, `until`,
`expires...`, `last_...`, `..._time`, `then`, `origin`, `opened`, `taken`,
`UnixEpoch()` (or a name ending `_since`, `_start`, `_at`, `_until`,
`_now`, `_deadline`, ...). Comments and string literals are ignored. It is
a reader of names, not of types: a reviewed subtraction that is safe (a
guarded one, ticks that wrap on purpose, a conversion to seconds since the
epoch) carries a comment with `raw-time-ok:` and the reason, on the line
or on the comment line just above it.

  raw_time_subtraction.py DIR_OR_HEADER...
      Checks every .hpp under each DIR (or each header named). Exit 1 and
      one "path:line: ..." line per raw subtraction found.
  raw_time_subtraction.py --selftest FIXTURE_DIR
      Runs the check on each fixture header. A line whose comment holds
      EXPECT-VIOLATION must be reported, and no other line may be: this is
      what shows the check can fail.
"""

import argparse
import os
import re
import sys

ALLOW_MARK = "raw-time-ok:"
VIOLATION_MARK = "EXPECT-VIOLATION"

_TIME_NAME = re.compile(
    r"^(?:now|now_\w*|\w*_now|since|since_\w*|\w*_since|start|start_\w*"
    r"|\w*_start|at|\w*_at|when|when_|deadline\w*|\w*_deadline|until"
    r"|\w*_until|expires\w*|last_\w+|\w*_time|time_\w*|then|origin\w*"
    r"|opened|taken|unixepoch)_?$",
    re.IGNORECASE)

_LEFT = re.compile(r"([A-Za-z_]\w*)(\(\))?[)\]]*\s+-\s")
_RIGHT = re.compile(
    r"\s-\s+(?:[(*&]|static_cast<[\w:]+>\()*"
    r"([A-Za-z_][\w.:]*(?:->[\w.:]+)*)(\(\))?")


def _strip_literals(line):
    """The code of `line` with string and char literals blanked, and its
    comment (or None)."""
    out = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if line.startswith("//", i):
            return "".join(out), line[i:]
        if c in "\"'":
            q = c
            out.append(" ")
            i += 1
            while i < n and line[i] != q:
                i += 2 if line[i] == "\\" else 1
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out), None


def _last_component(expr):
    parts = re.split(r"\.|::|->", expr)
    return parts[-1] if parts else expr


def _is_time(name):
    return bool(_TIME_NAME.match(name))


def check_text(text):
    """(line number, code) of each raw subtraction of times in `text`."""
    found = []
    in_block = False
    prev_comment = ""
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw
        if in_block:
            end = line.find("*/")
            if end < 0:
                continue
            line = " " * (end + 2) + line[end + 2:]
            in_block = False
        while "/*" in line and "//" not in line[:line.find("/*")]:
            start = line.find("/*")
            end = line.find("*/", start + 2)
            if end < 0:
                line = line[:start]
                in_block = True
                break
            line = line[:start] + " " * (end + 2 - start) + line[end + 2:]
        if line.lstrip().startswith("#"):
            prev_comment = ""
            continue
        code, comment = _strip_literals(line)
        allowed = (comment is not None and ALLOW_MARK in comment) or (
            ALLOW_MARK in prev_comment)
        prev_comment = comment if (comment is not None and
                                   not code.strip()) else ""
        if allowed:
            continue
        hit = False
        for m in _LEFT.finditer(code):
            if _is_time(m.group(1)):
                hit = True
        for m in _RIGHT.finditer(code):
            if _is_time(_last_component(m.group(1))):
                hit = True
        if hit:
            found.append((number, raw.strip()))
    return found


def _headers(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    if f.endswith(".hpp"):
                        yield os.path.join(root, f)
        else:
            yield p


def run_check(paths):
    bad = 0
    for path in sorted(_headers(paths)):
        with open(path, encoding="utf-8") as f:
            for number, code in check_text(f.read()):
                print(f"{path}:{number}: raw subtraction of times "
                      f"(use ElapsedSince / ElapsedNanosSince / "
                      f"RemainingUntil, or mark it '{ALLOW_MARK} why'): "
                      f"{code}")
                bad += 1
    return 1 if bad else 0


def run_selftest(fixture_dir):
    failures = 0
    checked = 0
    for path in sorted(_headers([fixture_dir])):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        want = {i for i, l in enumerate(text.split("\n"), start=1)
                if VIOLATION_MARK in l}
        got = {n for n, _ in check_text(text)}
        checked += 1
        for n in sorted(want - got):
            print(f"{path}:{n}: expected a violation, none reported")
            failures += 1
        for n in sorted(got - want):
            print(f"{path}:{n}: reported, but not marked {VIOLATION_MARK}")
            failures += 1
    if checked == 0:
        print(f"{fixture_dir}: no fixtures")
        return 1
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--selftest", metavar="FIXTURE_DIR")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()
    if args.selftest:
        return run_selftest(args.selftest)
    if not args.paths:
        parser.error("no paths")
    return run_check(args.paths)


if __name__ == "__main__":
    sys.exit(main())
