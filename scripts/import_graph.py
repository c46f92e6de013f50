#!/usr/bin/env python3
"""List the imports between the files of each crate and fail on a cycle.

An edge A -> B means file A names an item of file B: `use crate::…`,
`use super::…`, a path such as `crate::facts::errors(…)` or `text::render(…)`
(a child module), or `pub use child::…`. A path is resolved to the deepest
module file it names; an item at the crate root (`crate::Report`) is lib.rs.
`mod x;` declarations are not edges. Comments are ignored; `super::` inside
an inline `mod tests { … }` is the file itself. Usage:

    python3 scripts/import_graph.py [-v] [SRC_DIR ...]

Without a directory, every crates/*/src of the workspace. Prints, per
crate, the cycles (with -v also the modules and edges); exits 1 when there
is a cycle anywhere.

The same is checked one level up: a crate's top-level modules (a folder
such as `run/`, or a file such as `bounds.rs`) must form no cycle either,
so every folder sits on a floor and imports only floors below it (the
crate root, lib.rs, which names every module, is left out).
"""
import os
import re
import sys

VERBOSE = "-v" in sys.argv[1:]
ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
DIRS = [a for a in sys.argv[1:] if a != "-v"] or sorted(
    os.path.join(ROOT, "crates", c, "src")
    for c in os.listdir(os.path.join(ROOT, "crates"))
    if os.path.isdir(os.path.join(ROOT, "crates", c, "src"))
)


def module_of(rel):
    parts = rel[:-3].split(os.sep)
    if parts in (["lib"], ["main"]):
        return ()
    if parts[-1] == "mod":
        parts = parts[:-1]
    return tuple(parts)


def check(SRC):
    files = {}
    for dirpath, _, names in os.walk(SRC):
        for n in names:
            if n.endswith(".rs"):
                rel = os.path.relpath(os.path.join(dirpath, n), SRC)
                files[module_of(rel)] = rel


    def strip_comments(text):
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        out = []
        for line in text.splitlines():
            # Drop // comments (not inside a string: good enough for this code).
            in_str = False
            cut = len(line)
            i = 0
            while i < len(line):
                c = line[i]
                if c == '"' and (i == 0 or line[i - 1] != "\\"):
                    in_str = not in_str
                elif not in_str and line.startswith("//", i):
                    cut = i
                    break
                i += 1
            out.append(line[:cut])
        return "\n".join(out)


    def strip_strings(text):
        text = re.sub(r'r#+".*?"#+', '""', text, flags=re.S)
        return re.sub(r'"(?:\\.|[^"\\])*"', '""', text, flags=re.S)


    def expand_use(tree):
        """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
        tree = re.sub(r"\s+", "", tree)
        depth, start, items = 0, 0, []
        i = tree.find("{")
        if i < 0:
            return [re.sub(r"as\w+$", "", tree)]
        prefix, inner = tree[:i], tree[i + 1 : tree.rindex("}")]
        for j, c in enumerate(inner):
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == "," and depth == 0:
                items.append(inner[start:j])
                start = j + 1
        items.append(inner[start:])
        out = []
        for it in items:
            if it:
                out += [prefix + x for x in expand_use(it)]
        return out


    def resolve(mod, path, children, in_tests):
        segs = [s for s in path.split("::") if s]
        if not segs:
            return None
        if segs[0] == "crate":
            base, segs = (), segs[1:]
        elif segs[0] in ("super", "self"):
            base = mod
            if in_tests and segs[0] == "super":
                segs = segs[1:]
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
        elif segs[0] in children:
            base = mod
        else:
            return None  # another crate, std, or a local item
        target = base
        for s in segs:
            if target + (s,) in files:
                target = target + (s,)
            else:
                break
        return target


    edges = {}
    for mod, rel in files.items():
        raw = open(os.path.join(SRC, rel), encoding="utf-8").read()
        text = strip_strings(strip_comments(raw))
        children = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text, flags=re.M))

        def tests_start(t):
            m = re.search(r"\bmod\s+tests\s*\{", t)
            return m.start() if m else None

        targets = set()
        tests_at = tests_start(text)
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            in_tests = tests_at is not None and m.start() > tests_at
            for p in expand_use(m.group(1)):
                t = resolve(mod, p, children, in_tests)
                if t is not None:
                    targets.add(t)
        no_use = re.sub(r"\buse\s+[^;]+;", "", text)
        tests_at = tests_start(no_use)
        for m in re.finditer(r"(?<![\w:])((?:crate|super|self|[a-z_][a-z0-9_]*)(?:::[A-Za-z_]\w*)+)", no_use):
            in_tests = tests_at is not None and m.start() > tests_at
            t = resolve(mod, m.group(1), children, in_tests)
            if t is not None:
                targets.add(t)
        targets.discard(mod)
        edges[mod] = sorted(targets)


    def name(mod):
        return files[mod]


    if VERBOSE:
        print("modules:")
        for mod in sorted(files, key=name):
            print(f"  {name(mod)}")
        print("edges:")
        for mod in sorted(files, key=name):
            for t in edges[mod]:
                print(f"  {name(mod)} -> {name(t)}")

    # Tarjan's strongly connected components.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]


    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)


    for v in files:
        if v not in index:
            strong(v)
    label = os.path.relpath(SRC, ROOT)
    if sccs:
        print(f"{label}: cycles (files that import each other, directly or through others):")
        for c in sccs:
            print("  " + " <-> ".join(sorted(name(m) for m in c)))
        return False
    # One level up: the top-level modules, each file standing for its folder.
    top = {}
    for mod, targets in edges.items():
        if not mod:
            continue
        top.setdefault(mod[:1], set()).update(t[:1] for t in targets if t and t[:1] != mod[:1])
    files_before, edges_before = files, edges
    files = {m: (m[0] + "/") for m in top}
    edges = {m: sorted(top[m]) for m in top}
    index.clear(), low.clear(), stack.clear(), on.clear()
    counter[0] = 0
    for v in files:
        if v not in index:
            strong(v)
    if sccs:
        print(f"{label}: cycles between top-level modules (folders that import each other):")
        for c in sccs:
            print("  " + " <-> ".join(sorted(m[0] for m in c)))
            for a in sorted(c):
                for b in sorted(c):
                    if a != b:
                        why = [
                            files_before[m] for m, ts in edges_before.items()
                            if m[:1] == a and any(t[:1] == b for t in ts)
                        ]
                        if why:
                            print(f"    {a[0]} -> {b[0]}: " + ", ".join(sorted(why)))
        return False
    print(
        f"{label}: no cycle: {len(files_before)} files, "
        f"{sum(len(e) for e in edges_before.values())} edges, "
        f"{len(top)} top-level modules on floors"
    )
    return True


sys.setrecursionlimit(10000)
ok = all([check(os.path.normpath(d)) for d in DIRS])
sys.exit(0 if ok else 1)
