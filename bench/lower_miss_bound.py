#!/usr/bin/env python3
"""How much can any interval miss low at the grid's high-p cells?

For each cell of crates/core/STATISTICS.md's coverage grid with p >= 0.97 and
N >= 20 inputs: the largest share of samples in which the lower end of ANY
deterministic interval that contains p-hat can lie above p, while it lies
above p in at most 3 % of samples at every ICC of the grid (0, 0.1, 0.3) in
the same design. Coverage <= 97 % needs (low misses) + (high misses) >= 3 %,
so where this bound is b, it needs the upper end alone to miss in at least
3 % - b of samples: exactly 3 % (b = 0), or more than its 2.5 % share
(b < 0.5 %).

Method. Inputs are exchangeable, so a sample is summed up by its pattern, the
multiset of per-input failure counts (a sufficient statistic; per-input
failures ~ beta-binomial with mean 1 - p and ICC rho, binomial at rho 0).
The interval contains p-hat, so it can lie above p only on patterns with
p-hat > p, i.e. fewer than (1 - p) N M failures: those are enumerated
exactly. Which of them miss low is a 0/1 choice per pattern; the largest
miss share at the target ICC subject to <= 3 % at each ICC is a
multi-dimensional knapsack, solved as an integer program (scipy's HiGHS
milp); the reported bound is the solver's dual bound, valid even if it
stops at its time limit.

The first table allows any interval at all, even one whose lower end rises
when failures clump on one input. The second asks what users and every
clustered interval take for granted: the lower end does not fall when a
failure is removed from an input that fails more than once (fewer failures,
the same failing inputs), nor when one failure moves from an input that
fails more than once to one that passes (the same failures, spread wider:
less sign of clustering). A sample that misses low then makes every sample
reached from it by such steps miss low too: one constraint per step.

    python3 -m venv /tmp/sv && /tmp/sv/bin/pip install scipy numpy
    /tmp/sv/bin/python bench/lower_miss_bound.py
"""
from collections import Counter
from math import lgamma, exp, log

import numpy as np
from scipy import sparse, stats
from scipy.optimize import Bounds, LinearConstraint, milp

RHOS = [0.0, 0.1, 0.3]
CAP = 0.03


def fail_pmf(m, p, rho):
    """P(an input has f failures of m), f = 0..m."""
    if rho == 0:
        return stats.binom.pmf(np.arange(m + 1), m, 1 - p)
    k = (1 - rho) / rho
    return stats.betabinom.pmf(np.arange(m + 1), m, (1 - p) * k, p * k)


def partitions(total, largest, parts):
    """Partitions of `total` into at most `parts` parts, each <= `largest`."""
    if total == 0:
        yield ()
        return
    if parts == 0:
        return
    for first in range(min(total, largest), 0, -1):
        for rest in partitions(total - first, first, parts - 1):
            yield (first,) + rest


def pattern_prob(pattern, n, pmf):
    """P(the N inputs' failure counts form this multiset)."""
    zeros = n - len(pattern)
    lp = lgamma(n + 1) - lgamma(zeros + 1) + zeros * log(pmf[0])
    for v, mult in Counter(pattern).items():
        lp += -lgamma(mult + 1) + mult * log(pmf[v])
    return exp(lp)


def steps(pattern, n):
    """The patterns one step better for the lower end: a failure removed
    from an input failing more than once, or moved from one to an input
    with no failure (if one is left)."""
    out = set()
    for i, v in enumerate(pattern):
        if v >= 2 and (i == 0 or pattern[i - 1] != v):
            less = list(pattern)
            less[i] -= 1
            out.add(tuple(sorted(less, reverse=True)))
            if len(pattern) < n:
                out.add(tuple(sorted(less + [1], reverse=True)))
    return out


def order_constraint(pats, n):
    """Rows z_x - z_y <= 0 for every step x -> y."""
    index = {pt: i for i, pt in enumerate(pats)}
    pairs = [(i, index[b]) for i, pt in enumerate(pats) for b in steps(pt, n)]
    if not pairs:
        return None
    rows = np.repeat(np.arange(len(pairs)), 2)
    cols = np.array(pairs).ravel()
    vals = np.tile([1.0, -1.0], len(pairs))
    a = sparse.csr_array((vals, (rows, cols)), shape=(len(pairs), len(pats)))
    return LinearConstraint(a, -np.inf, 0.0)


def table(ordered):
    what = "that does not fall as failures are removed from or spread out of clumps" if ordered else "at all"
    print(f"largest low-miss share of any interval containing p-hat, {what}, that misses low in <= 3 % at ICC 0, 0.1 and 0.3")
    print(f"{'p':>5} {'N x M':>6} {'patterns':>8} | {'ICC 0':>7} {'ICC 0.1':>7} {'ICC 0.3':>7}")
    for p in (0.97, 0.99):
        for n, m in ((20, 10), (20, 30), (50, 5), (50, 20)):
            below = int(np.ceil((1 - p) * n * m - 1e-9))  # p-hat > p <=> F < (1-p) n m
            pmf = {r: fail_pmf(m, p, r) for r in RHOS}
            pats = [pt for f in range(below) for pt in partitions(f, m, n)]
            prob = np.array([[pattern_prob(pt, n, pmf[r]) for pt in pats] for r in RHOS])
            # The patterns are all the samples with p-hat > p: their
            # probabilities add up to P(F < (1-p) N M) of the N-fold
            # convolution of the per-input law.
            for t, r in enumerate(RHOS):
                total = np.array([1.0])
                for _ in range(n):
                    total = np.convolve(total, pmf[r])
                assert abs(prob[t].sum() - total[:below].sum()) < 1e-9, (p, n, m, r)
            constraints = [LinearConstraint(prob, -np.inf, CAP)]
            if ordered and (order := order_constraint(pats, n)) is not None:
                constraints.append(order)
            bounds = []
            for t in range(len(RHOS)):
                r = milp(
                    -prob[t],
                    constraints=constraints,
                    integrality=np.ones(len(pats)),
                    bounds=Bounds(0, 1),
                    options={"time_limit": 120},
                )
                bound = -r.mip_dual_bound if r.mip_dual_bound is not None else -r.fun
                bounds.append(max(bound, 0.0) + 0.0)  # no "-0.00"
            print(f"{p:>5} {f'{n}x{m}':>6} {len(pats):>8} | " + " ".join(f"{100 * b:>6.2f}%" for b in bounds))


if __name__ == "__main__":
    table(ordered=False)
    print()
    table(ordered=True)
