"""Group a flat `perf report --no-children --sort symbol --stdio` (on
stdin) of `probity serve` by what each function belongs to, and print the
shares, largest first, with the top functions of each group.

Used by bench/guard.sh (Figure 4). The groups are by symbol name (release
builds keep their symbol table, not their debug info); a function that
matches no pattern counts as "other (probity and the rest)"."""

import re
import sys
from collections import defaultdict

#: (group, pattern on the symbol), first match wins.
GROUPS = [
    ("kernel: network, syscalls, scheduling", r"^\[k\]"),
    ("memory (malloc, free, memcpy)",
     r"malloc|free|realloc|memcpy|memmove|memset|_int_|cfree|unlink_chunk|\b_?mi_|__rust_(re|de)?alloc|alloc::alloc::"),
    ("live monitor (confidence sequences)", r"probity_core::(stats|monitor)|log1p|retain_mut"),
    ("JSON (serde_json)", r"serde_json|serde::|ryu|itoa"),
    ("checks (rhai, regex)", r"rhai|regex|aho_corasick|probity_core::validator"),
    ("store (SQLite)", r"sqlite|rusqlite"),
    ("HTTP server (hyper, axum)", r"axum|hyper::server|hyper::proto::h1::role::Server|tower"),
    ("HTTP (hyper, reqwest, h2, httparse)", r"hyper|reqwest|httparse|http::|h2::|bytes::"),
    ("async runtime (tokio)", r"tokio|mio|futures|parking_lot|std::sync|crossbeam"),
    ("metrics (prometheus-client)", r"prometheus"),
    ("probity (guard, serve, provider)", r"probity"),
    ("Rust core library (slice scans, iterators, comparisons)", r"core::"),
]


def main():
    shares = defaultdict(float)
    top = defaultdict(list)
    for line in sys.stdin:
        m = re.match(r"\s*([\d.]+)%\s+(\[[.k]\])\s+(.*)$", line)
        if not m:
            continue
        pct, kind, sym = float(m.group(1)), m.group(2), m.group(3).strip()
        name = f"{kind} {sym}"
        group = next((g for g, p in GROUPS if re.search(p, name)), "other")
        shares[group] += pct
        top[group].append((pct, sym))
    if not shares:
        print("  (no samples: was perf allowed to attach? see perf_event_paranoid)")
        return
    total = sum(shares.values())
    print(f"  {'share of samples':>16}  group (top functions)")
    for group, pct in sorted(shares.items(), key=lambda kv: -kv[1]):
        names = ", ".join(s.strip()[:60] for _, s in sorted(top[group], reverse=True)[:3])
        print(f"  {pct / total * 100:>15.1f}%  {group} ({names})")


if __name__ == "__main__":
    main()
