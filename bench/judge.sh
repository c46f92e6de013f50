#!/usr/bin/env bash
# One-sided misses of the judge-corrected 95% interval (crates/core/
# STATISTICS.md, "Judges with known error rates"; issue 35 item 4): judges
# from (Se 0.80, Sp 0.80) to (0.99, 0.99), 30-500 labels of each kind, true
# rates 0.90/0.95/0.99, N in {10,20,50} x M in {10,30}, inputs Beta (ICC
# 0.1) or a mixture of a few hard inputs among easy ones (720 cells).
#
#   bench/judge.sh             # 1000 replicates per cell, seed 1
#   bench/judge.sh 2000 7      # replicates, seed
#   bench/judge.sh 1000 1 --cells   # every cell
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p probity-core --example calibration -- "${1:-1000}" "${2:-1}" ${3:+"$3"}
