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
# 3. The install itself: wall and CPU time of `pip install ./crates/python`
#    from nothing (a fresh CARGO_TARGET_DIR, so every dependency compiles, as
#    on a user's machine), and the wheel's size. The CPU time is the figure
#    to compare across commits on a shared machine; the wall time depends
#    on what else runs.
#
#   bench/python.sh               # builds a release wheel into a fresh venv, timed
#   VENV=/path/to/venv bench/python.sh   # a venv with probity (and pytest) installed
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VENV:-}" ]; then
  VENV="$(mktemp -d)"
  TARGET="$(mktemp -d)"
  trap 'rm -rf "$VENV" "$TARGET"' EXIT
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check maturin pytest numpy
  PATH="$VENV/bin:$PATH" CARGO_TARGET_DIR="$TARGET" /usr/bin/time -f "%e %U %S" -o "$TARGET/time" \
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-build-isolation ./crates/python
  read -r wall user sys < "$TARGET/time"
  awk -v w="$wall" -v u="$user" -v s="$sys" \
    'BEGIN { printf "pip install ./crates/python: %.0f s wall, %.0f s CPU (user %.0f + sys %.0f)\n", w, u + s, u, s }'
  du -b "$TARGET"/wheels/*.whl 2>/dev/null | awk '{ printf "wheel: %.1f MB\n", $1 / 1e6 }' || true
fi
REPEAT="${REPEAT:-5}" "$VENV/bin/python" bench/python_overhead.py
start=$(date +%s.%N)
"$VENV/bin/python" -m pytest -q -p no:cacheprovider crates/python/tests/test_paper.py
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "pytest test_paper.py wall time: %.2f s\n", e - s }'
