#!/usr/bin/env bash
# The Python package's figures (crates/python):
#
# 1. The install: wall and CPU time of `pip install ./crates/python` from
#    nothing (a fresh CARGO_TARGET_DIR, so every dependency compiles, as on
#    a user's machine), and the wheel's size. The CPU time is the figure to
#    compare across commits on a shared machine; the wall time depends on
#    what else runs.
# 2. What Python validators cost per output against built-in checks
#    (bench/python_overhead.py: one check over 20,000 outputs; three
#    checks over 1,000 outputs), in memory on the simulator.
# 3. The wall time of `pytest crates/python/tests/test_paper.py` (the
#    paper's §2.1 and §4.2 examples on the simulator), after install.
#
#   bench/python.sh                      # this checkout, installed into a fresh venv
#   BASELINE=<commit> bench/python.sh    # that commit too, side by side: the two
#                                        # installs back to back, then the overhead
#                                        # figures in alternate rounds
#   VENV=/path/to/venv bench/python.sh   # a venv with probity (and pytest) installed: 2 and 3 only
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# install NAME SOURCE: a fresh venv $WORK/NAME with SOURCE's crates/python
# built from nothing; prints the time it took.
install() {
  local name="$1" source="$2"
  python3 -m venv "$WORK/$name"
  "$WORK/$name/bin/pip" install -q --disable-pip-version-check maturin pytest numpy
  PATH="$WORK/$name/bin:$PATH" CARGO_TARGET_DIR="$WORK/target-$name" /usr/bin/time -f "%e %U %S" -o "$WORK/time-$name" \
    "$WORK/$name/bin/pip" install -q --disable-pip-version-check --no-build-isolation "$source/crates/python"
  read -r wall user sys < "$WORK/time-$name"
  awk -v n="$name" -v w="$wall" -v u="$user" -v s="$sys" \
    'BEGIN { printf "%s: pip install ./crates/python: %.0f s wall, %.0f s CPU (user %.0f + sys %.0f)\n", n, w, u + s, u, s }'
  du -b "$WORK/$name"/lib/python3*/site-packages/probity/_probity*.so | awk -v n="$name" '{ printf "%s: extension module %.1f MB\n", n, $1 / 1e6 }'
  rm -rf "$WORK/target-$name"
}

if [ -n "${VENV:-}" ]; then
  venvs=("$VENV")
else
  venvs=()
  if [ -n "${BASELINE:-}" ]; then
    mkdir "$WORK/baseline-src"
    git archive "$BASELINE" | tar -x -C "$WORK/baseline-src"
    install baseline "$WORK/baseline-src"
    venvs+=("$WORK/baseline")
  fi
  install current "$ROOT"
  venvs+=("$WORK/current")
fi

for round in 1 2; do
  for venv in "${venvs[@]}"; do
    echo "== $(basename "$venv"), round $round"
    REPEAT="${REPEAT:-5}" "$venv/bin/python" bench/python_overhead.py
  done
done

venv="${venvs[-1]}"
start=$(date +%s.%N)
"$venv/bin/python" -m pytest -q -p no:cacheprovider crates/python/tests/test_paper.py
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "pytest test_paper.py wall time: %.2f s\n", e - s }'
