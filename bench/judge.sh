#!/usr/bin/env bash
# Coverage of the judge-corrected 95% interval (crates/core/STATISTICS.md,
# "Judges with known error rates"): judges with known sensitivity and
# specificity, labelled sets of 150-400 pairs, true rates 0.8/0.9/0.97,
# ICC 0/0.1/0.3, designs 20x10 and 50x20; the judge's own (raw) interval
# beside it.
#
#   bench/judge.sh            # 5000 replicates per cell, seed 1 (~1 min on 2 cores)
#   bench/judge.sh 1000 7     # replicates, seed
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release -q -p probity-core --example calibration -- "${1:-5000}" "${2:-1}"
