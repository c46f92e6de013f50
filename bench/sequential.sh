#!/usr/bin/env bash
# Sequential testing by simulation with known truth (crates/core/STATISTICS.md,
# "Sequential testing"): the error of established verdicts under optional
# stopping with the true rate exactly at the threshold, for p in
# {0.9, 0.97, 0.99} and intra-class correlation 0 and 0.3; and the cost
# (mean, p10/p50/p90 samples against the budget) and agreement with the
# fixed-size run where the true rate is 3-5 points from the threshold.
#
#   bench/sequential.sh            # 2000 runs per cell, seed 1 (a few minutes on 2 cores)
#   bench/sequential.sh 500 7      # runs, seed
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p probity-core --example sequential -- "${1:-2000}" "${2:-1}"
