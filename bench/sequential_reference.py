#!/usr/bin/env python3
"""The group-sequential design of sequential runs with output rounds
(crates/core/src/stats/sequential_group.rs), computed independently of
probity with scipy: exact binomial boundaries with linear alpha spending,
A(t) = (alpha/2) t per side, t_k = k/K (K rounds of N outputs); the chance
of an established verdict when every output passes with probability p
(the error at the minimum m is the sum of both sides at p = m), and the
fixed run's chance on N x M outputs (Clopper-Pearson: pass iff
P_m(X >= x) <= alpha/2, fail iff P_m(X <= x) <= alpha/2).

Upper boundary at look k: the least u with
  spent_up + P_m(S_k >= u, not crossed before) <= A(t_k)
(spent_up: what earlier looks actually spent); lower likewise.

The figures printed are the reference values of
crates/core/tests/sequential.rs (`group_sequential_matches_scipy`).

    python3 bench/sequential_reference.py
"""
import numpy as np
from scipy.stats import binom

ALPHA = 0.05


def design(n, k, m):
    """[(outputs, upper, lower)] for K = k looks of n outputs at minimum m."""
    a = ALPHA / 2
    f = np.array([1.0])
    up_spent = down_spent = 0.0
    out = []
    for look in range(1, k + 1):
        f = np.convolve(f, binom.pmf(np.arange(n + 1), n, m))
        total = look * n
        allowed = a * look / k
        tails = np.cumsum(f[::-1])[::-1]  # tails[s] = P(S >= s)
        heads = np.cumsum(f)  # heads[s] = P(S <= s)
        ok_up = [s for s in range(total + 1) if up_spent + tails[s] <= allowed * (1 + 1e-12)]
        u = min(ok_up) if ok_up else total + 1
        ok_down = [s for s in range(u) if down_spent + heads[s] <= allowed * (1 + 1e-12)]
        l = max(ok_down) if ok_down else -1
        up_spent += tails[u] if u <= total else 0.0
        down_spent += heads[l] if l >= 0 else 0.0
        g = f.copy()
        if u <= total:
            g[u:] = 0
        if l >= 0:
            g[: l + 1] = 0
        f = g
        out.append((total, u, l))
    return out


def crossing(bounds, n, p):
    f = np.array([1.0])
    up = down = 0.0
    for total, u, l in bounds:
        f = np.convolve(f, binom.pmf(np.arange(n + 1), n, p))
        if u <= total:
            up += f[u:].sum()
            f[u:] = 0
        if l >= 0:
            down += f[: l + 1].sum()
            f[: l + 1] = 0
    return up, down


def fixed(n, m, p):
    xs = np.arange(n + 1)
    u = min(x for x in xs if binom.sf(x - 1, n, m) <= ALPHA / 2) if any(binom.sf(xs - 1, n, m) <= ALPHA / 2) else n + 1
    ls = [x for x in xs if binom.cdf(x, n, m) <= ALPHA / 2]
    l = max(ls) if ls else -1
    return binom.sf(u - 1, n, p), (binom.cdf(l, n, p) if l >= 0 else 0.0)


for n, m_fixed, k in [(10, 10, 10), (20, 20, 24), (50, 10, 11)]:
    b = design(n, k, 0.95)
    err = sum(crossing(b, n, 0.95))
    pu, _ = crossing(b, n, 0.98)
    _, pd = crossing(b, n, 0.92)
    fu, _ = fixed(n * m_fixed, 0.95, 0.98)
    _, fd = fixed(n * m_fixed, 0.95, 0.92)
    print(f"N={n} M={m_fixed} K={k}: error at 0.95 {err:.6f}; pass at 0.98 {pu:.6f} (fixed {fu:.6f}); fail at 0.92 {pd:.6f} (fixed {fd:.6f})")
    print("  upper", [u for _, u, _ in b])
    print("  lower", [l for _, _, l in b])
