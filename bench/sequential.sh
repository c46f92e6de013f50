#!/usr/bin/env bash
# Sequential testing by simulation with known truth (crates/core/STATISTICS.md,
# "Sequential testing"): the error of established verdicts under optional
# stopping with the true rate exactly at the threshold, for p in
# {0.9, 0.97, 0.99} and intra-class correlation 0 and 0.3; and the cost
# (mean, p10/p50/p90 samples against the budget) and agreement with the
# fixed-size run where the true rate is 3-5 points from the threshold; and
# 3. few inputs (output rounds, scope "these inputs"): N x M in {10,20,50}^2,
# ICC 0/0.1/0.3 -- error at the minimum; at true rates 3 points from the
# minimum (0.98 and 0.92 against 0.95; and a two-point mixture, 90% of
# inputs at 0.99 and 10% at 0.70, against 0.931 and 0.991), the share of runs
# whose verdict is established by the group-sequential design, beside the
# fixed run of the same scope on the same draws (Clopper-Pearson on all N x M
# outputs) with their paired difference, and the savings counted only over
# the sequential runs that established it (issue 35 item 2). `spending`
# compares spending functions exactly; bench/sequential_reference.py
# recomputes the design's boundaries and error with scipy.
#
#   bench/sequential.sh            # 2000 runs per cell, seed 1 (a few minutes on 2 cores)
#   bench/sequential.sh 500 7      # runs, seed
#   bench/sequential.sh 500 1 few  # only section 3 (1000 runs: ~10 min on 2 loaded cores)
#   bench/sequential.sh 1 1 spending  # spending functions, exact
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p probity-core --example sequential -- "${1:-2000}" "${2:-1}" ${3:+"$3"}
