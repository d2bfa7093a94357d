#!/usr/bin/env python3
# Copyright 2026 The degrade Authors. SPDX-License-Identifier: Apache-2.0
"""Fails when a header under a detail/ folder declares outside namespace detail.

detail/ is private by contract (ARCHITECTURE.md: "no type a user must name
lives under detail/"). Public types once drifted in there because nothing
said no; this check says no. A declaration counts when it appears at
namespace scope and no enclosing namespace has "detail" in its name
(`detail`, `degrade::detail::etcd`, `degrade::detail::levels` all
qualify). Files named *_inl.hpp or *-inl.hpp are exempt: they define
members of public classes, out of line, on purpose.

The reader is a small tokenizer, not a C++ parser. It drops comments,
string and character literals and preprocessor lines first, so a `struct`
in a comment, a brace in a string or an #include never counts. It knows
DEGRADE_NAMESPACE_BEGIN/END, which open and close `degrade` and its inline
ABI namespace.

  detail_namespace.py [--stamp FILE] DIR_OR_HEADER...
      Checks every .hpp under each DIR (or each header named). Exit 1 and
      one "path:line: ..." line per declaration found; on success, touches
      FILE so a build can depend on it.
  detail_namespace.py --selftest FIXTURE_DIR
      Runs the check on each fixture header. A line whose comment holds
      EXPECT-VIOLATION must be reported, and no other line may be: this is
      what shows the check can fail.
"""

import argparse
import os
import re
import sys

VIOLATION_MARK = "EXPECT-VIOLATION"


def _strip(text):
    """Blanks comments, literals and preprocessor lines; keeps newlines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "/" and nxt == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c == '"':
            # The identifier run just before the quote decides raw or not.
            j = len(out)
            prefix = ""
            while j > 0 and (out[j - 1].isalnum() or out[j - 1] == "_"):
                j -= 1
                prefix = out[j] + prefix
            if prefix in ("R", "u8R", "uR", "UR", "LR"):
                open_paren = text.find("(", i)
                delim = text[i + 1:open_paren]
                end = text.find(")" + delim + '"', open_paren)
                end = n if end < 0 else end + len(delim) + 2
            else:
                end = i + 1
                while end < n and text[end] != '"':
                    end += 2 if text[end] == "\\" else 1
                end = min(end + 1, n)
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + '"')
            i = end
            continue
        if c == "'":
            # 1'000'000 is a number with digit separators, not a literal.
            j = len(out)
            while j > 0 and (out[j - 1].isalnum() or out[j - 1] == "_"):
                j -= 1
            if j < len(out) and out[j].isdigit():
                out.append(c)
                i += 1
                continue
            end = i + 1
            while end < n and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            out.append("'" + " " * max(0, end - i - 1) + "'")
            i = min(end + 1, n)
            continue
        out.append(c)
        i += 1
    lines = "".join(out).split("\n")
    in_directive = False
    for k, line in enumerate(lines):
        if in_directive or line.lstrip().startswith("#"):
            in_directive = line.rstrip().endswith("\\")
            lines[k] = ""
    return lines


_TOKEN = re.compile(r"[A-Za-z_]\w*|::|\S")


def _tokens(lines):
    for number, line in enumerate(lines, start=1):
        for m in _TOKEN.finditer(line):
            yield number, m.group(0)


def violations(path):
    """Lines of `path` that declare at a scope outside every detail namespace."""
    with open(path, encoding="utf-8") as f:
        tokens = list(_tokens(_strip(f.read())))
    scopes = []  # namespace names, or None for a brace that is not one
    found = []
    at_start = True  # at the first token of a namespace-scope declaration
    after_block = False  # just closed a brace back to namespace scope

    def in_detail():
        return any(s is not None and "detail" in s for s in scopes)

    def in_block():
        return any(s is None for s in scopes)

    i = 0
    while i < len(tokens):
        line, tok = tokens[i]
        i += 1
        if in_block():
            if tok == "{":
                scopes.append(None)
            elif tok == "}":
                scopes.pop()
                after_block = True
            continue
        if after_block:
            # After a body, a new declaration begins with a name; after a
            # braced initializer (`std::size_t{1} << 24`) the same one goes on.
            after_block = False
            at_start = tok in ("namespace", "DEGRADE_NAMESPACE_END", "[", "~") or \
                re.match(r"[A-Za-z_]", tok) is not None
        if tok == "DEGRADE_NAMESPACE_BEGIN":
            scopes += ["degrade", "abi"]
            at_start = True
            continue
        if tok == "DEGRADE_NAMESPACE_END":
            if len(scopes) < 2:
                return found + [(line, "DEGRADE_NAMESPACE_END without BEGIN")]
            del scopes[-2:]
            at_start = True
            continue
        if tok == ";":
            at_start = True
            continue
        if tok == "}":
            if not scopes:
                return found + [(line, "unbalanced '}'")]
            scopes.pop()
            at_start = True
            continue
        if at_start and (tok == "namespace" or (
                tok == "inline" and i < len(tokens) and tokens[i][1] == "namespace")):
            if tok == "inline":
                i += 1
            name = []
            while i < len(tokens) and tokens[i][1] not in ("{", "=", ";"):
                name.append(tokens[i][1])
                i += 1
            opener = tokens[i][1] if i < len(tokens) else ""
            if opener == "{":
                i += 1
                scopes.append("".join(name))
                continue
            # A namespace alias (`namespace json = ...;`) is a declaration.
        if at_start and not in_detail() and all(ln != line for ln, _ in found):
            found.append((line, "declares outside namespace detail"))
        at_start = False
        if tok == "{":
            scopes.append(None)
    return found


def exempt(path):
    return re.search(r"[_-]inl\.hpp$", os.path.basename(path)) is not None


def headers(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in sorted(os.walk(p)):
                for name in sorted(files):
                    if name.endswith(".hpp"):
                        yield os.path.join(root, name)
        else:
            yield p


def check(paths):
    failed = False
    for path in headers(paths):
        if exempt(path):
            continue
        with open(path, encoding="utf-8") as f:
            source = f.read().split("\n")
        for line, why in violations(path):
            failed = True
            text = source[line - 1].strip() if line <= len(source) else ""
            print(f"{path}:{line}: {why}: {text}")
    if failed:
        print("detail/ headers are private: move what users must name to a "
              "public header, or put it inside namespace detail.")
    return not failed


def selftest(fixture_dir):
    ok = True
    fixtures = sorted(headers([fixture_dir]))
    if not fixtures:
        print(f"selftest: no fixtures in {fixture_dir}")
        return False
    for path in fixtures:
        with open(path, encoding="utf-8") as f:
            source = f.read().split("\n")
        expected = {k + 1 for k, text in enumerate(source)
                    if VIOLATION_MARK in text}
        got = set() if exempt(path) else {ln for ln, _ in violations(path)}
        name = os.path.basename(path)
        if got != expected:
            ok = False
            print(f"selftest {name}: expected violations on lines "
                  f"{sorted(expected)}, the check reported {sorted(got)}")
        else:
            print(f"selftest {name}: {len(got)} violation(s), as expected")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stamp")
    parser.add_argument("--selftest", metavar="FIXTURE_DIR")
    parser.add_argument("paths", nargs="*")
    args = parser.parse_args()
    if args.selftest:
        return 0 if selftest(args.selftest) else 1
    if not args.paths:
        parser.error("name at least one detail/ directory or header")
    if not check(args.paths):
        return 1
    if args.stamp:
        with open(args.stamp, "w", encoding="utf-8") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
