#!/usr/bin/env python3
"""Fail when an item of the engine's public surface has two public paths.

The engine (crates/engine/src) names each item its users need by one path
(issue 33 item 5): either where it is defined, in a `pub mod` chain, or
where a `pub use` re-exports it from a private module — never both. This
finds every `pub use a::b::Item` in a public module whose source module
`a::b` is public as well (so `Item` is reachable as `…::a::b::Item` and as
the re-export), prints them and exits 1. Usage:

    python3 scripts/one_path.py [SRC_DIR]

`pub use super::…` is skipped (a child re-exporting its parent's item is
not a second door from outside). Comments are not stripped: a `pub use` in
a comment line is not at the start of a line's code, which the pattern
requires.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "crates", "engine", "src")


def module_of(rel):
    """`run/runner/mod.rs` -> `run::runner`; `lib.rs` -> ``."""
    rel = rel[:-3]
    if rel == "lib":
        return ""
    if rel.endswith("/mod"):
        rel = rel[: -len("/mod")]
    return rel.replace(os.sep, "::")


def expand(tree):
    """`a::{b, c::{d, e as f}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    m = re.match(r"(.*?)::\{(.*)\}$", tree)
    if not m:
        return [tree.split(" as ")[0]]
    prefix, body = m.groups()
    parts, depth, current = [], 0, ""
    for ch in body:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [prefix + "::" + item for part in parts if part.strip() for item in expand(part.strip())]


def main():
    files, public_mods = {}, set()
    for dirpath, _, names in os.walk(SRC):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(dirpath, name)
                module = module_of(os.path.relpath(path, SRC))
                files[module] = path
                for line in open(path, encoding="utf-8"):
                    m = re.match(r"\s*pub mod ([a-z_0-9]+)\s*[;{]", line)
                    if m:
                        public_mods.add(f"{module}::{m.group(1)}" if module else m.group(1))

    def public(module):
        parts = module.split("::")
        return all("::".join(parts[: i + 1]) in public_mods for i in range(len(parts)))

    twice = []
    for module, path in sorted(files.items()):
        if module and not public(module):
            continue
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"^\s*pub use ([^;]+);", text, re.M):
            tree = re.sub(r"\s*([{},]|::)\s*", r"\1", re.sub(r"\s+", " ", m.group(1).strip()))
            for item in expand(tree):
                source = item.rsplit("::", 1)[0]
                if source.startswith(("super", "self::super")) or "::" not in item:
                    continue
                if source.startswith("crate::"):
                    source = source[len("crate::"):]
                else:
                    source = source.removeprefix("self::")
                    source = f"{module}::{source}" if module else source
                if public(source):
                    twice.append((path, item, source))
    for path, item, source in twice:
        name = item.rsplit("::", 1)[1]
        print(f"{os.path.relpath(path, ROOT)}: `pub use {item}` re-exports `{name}`, "
              f"also public as `{source}::{name}`: make `{source}` pub(crate) or drop the re-export")
    print(f"{os.path.relpath(SRC, ROOT)}: {len(twice)} item(s) with two public paths")
    return 1 if twice else 0


if __name__ == "__main__":
    sys.exit(main())
