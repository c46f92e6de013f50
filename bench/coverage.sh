#!/usr/bin/env bash
# Coverage of the clustered 95% interval over the grid of
# crates/core/STATISTICS.md: p in {0.5, 0.9, 0.97, 0.99}, intra-class
# correlation 0.1 and 0.3, designs 5x10 ... 50x20 and 200x1, for the default
# (beta-binomial restricted-ICC score interval), the former design-effect
# interval and the naive binomial one.
#
#   bench/coverage.sh             # 10000 replicates per cell, seed 1 (~2 min on 2 cores)
#   bench/coverage.sh 2000 7      # replicates, seed
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p probity-core --example coverage -- "${1:-10000}" "${2:-1}"
