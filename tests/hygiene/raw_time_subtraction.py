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
`_now`, `_deadline`, ...), or a nanosecond count or stamp (`ns`, `..._ns`,
`stamps[i]`, `mono...`, `...anchor...`), a numbered instant (`t0`), `begin`
/ `end` as bare names, `elapsed`, `enqueued`, `arrived`, `sent`, `started`;
or an operand that reads a clock or turns an instant into a count (`Now()`,
`UnixNanos()`, `MonotonicNanos()`, `ToUnixNanos(...)`,
`steady_clock::now().time_since_epoch().count()`). The operands are whole
postfix expressions (`a.b->c(x)[i]`, casts unwrapped); the `-` may be
unspaced, a `-=`, or lead a wrapped line (its left operand then ends the
line above). Comments and string literals are ignored. It is
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

# Names that read as an instant or an elapsed time beyond _TIME_NAME:
# nanosecond counts (`ns`, `sent_ns`), stamps, monotonic anchors, numbered
# instants (`t0`), the ends of an interval, and the past participles that
# name when something happened.
_MORE_TIME_NAME = re.compile(
    r"^(?:ns|\w*_ns|\w*stamps?\w*|mono\w*|\w*_mono\w*|\w*anchor\w*"
    r"|t\d+|elapsed\w*|\w*_elapsed|begin|end|enqueued\w*|\w*_enqueued"
    r"|arrived\w*|\w*_arrived|sent|\w*_sent|started|\w*_started)_?$",
    re.IGNORECASE)
# Calls and names that read a clock or turn an instant into a count: an
# operand that contains one (outside its arguments) is a time.
_CLOCK_READ = re.compile(
    r"^(?:now|coarsenow|unixnanos|coarseunixnanos|monotonicnanos"
    r"|coarsenanos|tounixnanos|tounixmicros|tounixmillis|tounixseconds"
    r"|time_since_epoch|steady_clock|system_clock|high_resolution_clock)$",
    re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_CAST = re.compile(r"^(?:static_cast|reinterpret_cast)\s*<[^<>]*>\s*")


def _skip_group_back(code, i):
    """Index before the group that ends at code[i] (a ')' or ']')."""
    close = code[i]
    open_ = "(" if close == ")" else "["
    depth = 0
    while i >= 0:
        if code[i] == close:
            depth += 1
        elif code[i] == open_:
            depth -= 1
            if depth == 0:
                return i - 1
        i -= 1
    return -1


def _left_operand(code, i):
    """The postfix expression that ends just before code[i]."""
    j = i - 1
    while j >= 0 and code[j] == " ":
        j -= 1
    end = j + 1
    while j >= 0:
        c = code[j]
        if c in ")]":
            j = _skip_group_back(code, j)
            continue
        if c.isalnum() or c == "_":
            while j >= 0 and (code[j].isalnum() or code[j] == "_"):
                j -= 1
            if j >= 0 and code[j] == ">" and j >= 1 and code[j - 1] == "-":
                j -= 2
                continue
            if j >= 1 and code[j] == ":" and code[j - 1] == ":":
                j -= 2
                continue
            if j >= 0 and code[j] == ".":
                j -= 1
                continue
            break
        if c == ">":
            # The end of a cast's type: static_cast<T>(x).
            depth = 0
            while j >= 0:
                if code[j] == ">":
                    depth += 1
                elif code[j] == "<":
                    depth -= 1
                    if depth == 0:
                        j -= 1
                        break
                j -= 1
            continue
        break
    return code[j + 1:end].strip()


def _right_operand(code, i):
    """The postfix expression that starts just after code[i] (a '-')."""
    n = len(code)
    j = i + 1
    while True:
        while j < n and code[j] in " *&!":
            j += 1
        m = _CAST.match(code[j:])
        if m:
            j += m.end()
            continue
        if j < n and code[j] == "(":
            j += 1
            continue
        break
    start = j
    while j < n:
        if code[j].isalnum() or code[j] == "_":
            j += 1
        elif code.startswith("::", j) or code.startswith("->", j):
            j += 2
        elif code[j] == ".":
            j += 1
        elif code[j] in "([":
            depth = 0
            while j < n:
                if code[j] in "([":
                    depth += 1
                elif code[j] in ")]":
                    depth -= 1
                    if depth == 0:
                        j += 1
                        break
                j += 1
        else:
            break
    return code[start:j].strip()


def _outer(expr):
    """`expr` without what is inside its brackets, and the bracketed parts."""
    outer, inner, depth, cur = [], [], 0, []
    for c in expr:
        if c in "([":
            if depth == 0:
                cur = []
            else:
                cur.append(c)
            depth += 1
            outer.append(" ")
        elif c in ")]":
            depth -= 1
            if depth == 0:
                inner.append("".join(cur))
            else:
                cur.append(c)
            outer.append(" ")
        elif depth > 0:
            cur.append(c)
        else:
            outer.append(c)
    return "".join(outer), inner


def _operand_is_time(expr):
    expr = _CAST.sub("", expr.strip())
    if not expr:
        return False
    outer, inner = _outer(expr)
    names = _IDENT.findall(outer)
    if not names:
        # A cast's or parenthesis' operand: judged by what it holds.
        return any(_operand_is_time(x) for x in inner)
    if any(_CLOCK_READ.match(x) for x in names):
        return True
    last = names[-1]
    if last in ("begin", "end") and (len(names) > 1 or
                                     expr.rstrip().endswith(")")):
        return False  # v.begin(), v.end(): iterators, not instants
    return bool(_TIME_NAME.match(last) or _MORE_TIME_NAME.match(last))


_KEYWORDS = {"return", "case", "throw", "else", "co_return", "co_yield"}


def _minus_signs(code):
    """Offsets of each binary '-' and '-=' in `code`."""
    out = []
    n = len(code)
    for i, c in enumerate(code):
        if c != "-":
            continue
        nxt = code[i + 1] if i + 1 < n else ""
        prv = code[i - 1] if i > 0 else ""
        if nxt in ">-" or prv == "-":
            continue  # '->', '--'
        k = i - 1
        while k >= 0 and code[k] == " ":
            k -= 1
        if k < 0:
            out.append(i)  # a wrapped line's leading '-'
            continue
        p = code[k]
        if not (p.isalnum() or p in "_)]"):
            continue  # unary
        w = k
        while w >= 0 and (code[w].isalnum() or code[w] == "_"):
            w -= 1
        if code[w + 1:k + 1] in _KEYWORDS:
            continue  # `return -x`: unary
        # An exponent (1e-9) is not a subtraction.
        if k == i - 1 and p in "eE":
            w = k
            while w >= 0 and (code[w].isalnum() or code[w] in "._"):
                w -= 1
            if code[w + 1:k + 1][:1].isdigit():
                continue
        out.append(i)
    return out


def _subtracts_times(code, prev_code):
    for i in _minus_signs(code):
        compound = i + 1 < len(code) and code[i + 1] == "="
        if code[:i].strip():
            left = _left_operand(code, i)
        else:
            left = _left_operand(prev_code, len(prev_code))
        right = _right_operand(code, i + 1 if compound else i)
        if _operand_is_time(left) or _operand_is_time(right):
            return True
    return False


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
    prev_code = ""
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
        prev = prev_code
        if code.strip():
            prev_code = code
        allowed = (comment is not None and ALLOW_MARK in comment) or (
            ALLOW_MARK in prev_comment)
        prev_comment = comment if (comment is not None and
                                   not code.strip()) else ""
        if allowed:
            continue
        hit = _subtracts_times(code, prev)
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
