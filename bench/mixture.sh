#!/usr/bin/env bash
# The default interval when input difficulty is not Beta (issue 35,
# crates/core/STATISTICS.md, "Inputs the sample has not seen"): two-point
# mixtures (a hard share h in {2, 5, 10, 15}% of inputs at pass rate q in
# {0, 0.3, 0.5, 0.8}, the rest at e in {0.97, 0.99, 1}) and the Beta grid
# (p in {0.5, 0.9, 0.97, 0.99}, ICC 0/0.1/0.3), N in {10, 20, 50},
# M in {10, 30}: coverage, wrongly established PASS (lower end above the
# true mean) and FAIL, and width, for the default and the default before.
#
#   bench/mixture.sh            # 1000 replicates per cell, seed 1
#   bench/mixture.sh 400 1      # the figures in STATISTICS.md (one core: RAYON_NUM_THREADS=1)
#   bench/mixture.sh 4000 7     # replicates, seed
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p probity-core --example mixture -- "${1:-1000}" "${2:-1}"
