#!/usr/bin/env bash
# The Python package's figures (crates/python):
#
# 1. Overhead per output of a trivial Python validator: the same in-memory
#    run on the simulator (100 inputs × 200 outputs = 20,000 outputs, one
#    check) with `lambda o: o.count("'") <= 3` and with the equivalent
#    built-in `{"kind": "count", "value": "'", "max": 3}`; the difference
#    of the best of REPEAT wall times, per output.
# 2. The wall time of `pytest crates/python/tests/test_paper.py` (the
#    paper's §2.1 and §4.2 examples on the simulator), after install.
#
#   bench/python.sh               # builds a release wheel into a fresh venv
#   VENV=/path/to/venv bench/python.sh   # a venv with probity (and pytest) installed
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VENV:-}" ]; then
  VENV="$(mktemp -d)"
  trap 'rm -rf "$VENV"' EXIT
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check maturin pytest numpy
  PATH="$VENV/bin:$PATH" "$VENV/bin/pip" install -q --disable-pip-version-check --no-build-isolation ./crates/python
fi
REPEAT="${REPEAT:-5}" "$VENV/bin/python" bench/python_overhead.py
start=$(date +%s.%N)
"$VENV/bin/python" -m pytest -q -p no:cacheprovider crates/python/tests/test_paper.py
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "pytest test_paper.py wall time: %.2f s\n", e - s }'
