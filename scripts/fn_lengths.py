#!/usr/bin/env python3
"""Fail when a function in crates/*/src is longer than 150 lines (issue 33
item 1: functions a reader can hold in mind).

A function starts at a line whose code begins with `fn` (after `pub`,
`pub(crate)`, `async`, `const`, `unsafe`, `extern "C"` in any order) and
ends at the first later line that is its own indentation followed by `}`
— rustfmt puts a body's closing brace there (`cargo fmt --check` runs
first in CI). Its length is from the `fn` line to that brace, both
counted. Prints each one over the limit, longest first, and exits 1.
Usage:

    python3 scripts/fn_lengths.py [LIMIT]
"""
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 150
START = re.compile(
    r'^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|extern\s+"[^"]*")\s+)*fn\s+(\w+)'
)


def lengths(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = START.match(line)
        if not m:
            continue
        indent = m.group(1)
        # A declaration without a body (a trait's method) ends in `;`
        # before any `{`.
        for j in range(i, len(lines)):
            code = lines[j].split("//")[0]
            if "{" in code or code.rstrip().endswith(";"):
                break
        if lines[j].split("//")[0].rstrip().endswith(";"):
            continue
        if lines[j].split("//")[0].rstrip().endswith("}"):
            continue  # a body on one line
        for k in range(j + 1, len(lines)):
            if lines[k].startswith(indent + "}") and not lines[k].startswith(indent + "} else"):
                yield m.group(2), i + 1, k - i + 1
                break


def main():
    over = []
    for path in sorted(glob.glob(os.path.join(ROOT, "crates", "*", "src", "**", "*.rs"), recursive=True)):
        for name, line, n in lengths(path):
            if n > LIMIT:
                over.append((n, os.path.relpath(path, ROOT), line, name))
    for n, path, line, name in sorted(over, reverse=True):
        print(f"{path}:{line}: fn {name} is {n} lines (the limit is {LIMIT})")
    if over:
        sys.exit(1)
    print(f"fn_lengths: no function in crates/*/src over {LIMIT} lines")


if __name__ == "__main__":
    main()
