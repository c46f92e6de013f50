#!/usr/bin/env python3
"""The unseen-minority allowance on the mixture grid of issue 35, exactly
and independently of probity (numpy/scipy only).

The default interval's lower end is min(model lower end, (1 - h_G) p-hat),
h_G = 1 - (alpha/2)^(1/G) (crates/core/src/stats/unseen.rs). So the share of
runs in which the default establishes a PASS for a check whose minimum is the
true mean mu (lower end above mu) is at most P((1 - h_G) p-hat > mu) -- a
probability of the pass count alone, computed here exactly: per input the
passes are a mixture h Bin(M, q) + (1 - h) Bin(M, e), and the total is the
N-fold convolution. Cells where this bound exceeds 3% rely on the model's
end too (the hard inputs are then seen); bench/mixture.sh simulates them.

Also printed: the chance that no hard input is sampled, (1 - h)^N, which no
interval can see through, and h_G itself (scipy: binom.pmf(0, G, h_G) =
alpha/2).

    python3 bench/unseen_minority.py            # the grid, confidence 0.95
"""
import itertools
import sys

import numpy as np
from scipy.stats import binom


def allowance_miss(h, q, e, n, m, confidence=0.95):
    half_alpha = (1 - confidence) / 2
    h_g = 1 - half_alpha ** (1 / n)
    mu = h * q + (1 - h) * e
    k = np.arange(m + 1)
    per_input = h * binom.pmf(k, m, q) + (1 - h) * binom.pmf(k, m, e)
    total = np.array([1.0])
    for _ in range(n):
        total = np.convolve(total, per_input)
    x = np.arange(total.size)
    lower = (1 - h_g) * x / (n * m)
    return float(total[lower > mu + 1e-12].sum()), (1 - h) ** n, h_g, mu


def main():
    confidence = float(sys.argv[1]) if len(sys.argv) > 1 else 0.95
    for g in (10, 20, 50):
        h_g = 1 - ((1 - confidence) / 2) ** (1 / g)
        assert abs(binom.pmf(0, g, h_g) - (1 - confidence) / 2) < 1e-12
        print(f"h_G at G = {g}: {h_g:.4f} (binom.pmf(0, {g}, h_G) = {binom.pmf(0, g, h_g):.4f})")
    print()
    print("P((1 - h_G) p-hat > mu): an exact upper bound on wrongly established PASS by the default")
    print(f"{'h':>5} {'q':>4} {'e':>5} {'NxM':>6} {'mu':>7} | {'bound':>7} {'no hard':>8}")
    worst = []
    for h, q, e in itertools.product((0.02, 0.05, 0.10, 0.15), (0.0, 0.3, 0.5, 0.8), (0.97, 0.99, 1.0)):
        for n, m in itertools.product((10, 20, 50), (10, 30)):
            bound, unseen, _, mu = allowance_miss(h, q, e, n, m, confidence)
            flag = "  > 3%: relies on the model's end" if bound > 0.03 else ""
            print(f"{h:>5} {q:>4} {e:>5} {n:>3}x{m:<2} {mu:>7.4f} | {100 * bound:>6.2f}% {100 * unseen:>7.1f}%{flag}")
            worst.append((bound, h, q, e, n, m))
    worst.sort(reverse=True)
    over = sum(1 for w in worst if w[0] > 0.03)
    print()
    print(f"{len(worst)} cells; the bound is at most 3% in {len(worst) - over}; largest: "
          + ", ".join(f"{100 * b:.1f}% ({h}/{q}/{e} {n}x{m})" for b, h, q, e, n, m in worst[:5]))


if __name__ == "__main__":
    main()
