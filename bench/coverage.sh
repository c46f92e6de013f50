#!/usr/bin/env bash
# Coverage of the clustered 95% interval over the grid of
# crates/core/STATISTICS.md: p in {0.5, 0.9, 0.97, 0.99}, intra-class
# correlation 0, 0.1 and 0.3, designs 5x10 ... 50x20 and 200x1, for the
# default (beta-binomial profile likelihood, lower end extended to the ICC
# bound's), the default before (restricted-ICC score interval), the ICC
# bound and the design-effect interval: coverage, one-sided misses, width
# where failures are spread, and the cells outside issue 23's targets.
#
#   bench/coverage.sh             # 10000 replicates per cell, seed 1 (~10 min on 2 cores)
#   bench/coverage.sh 4000 1      # the table in STATISTICS.md
#   bench/coverage.sh 2000 7      # replicates, seed
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p probity-core --example coverage -- "${1:-10000}" "${2:-1}"
