#!/usr/bin/env bash
# A longer run of the property tests of crates/engine/tests/fuzz_props.rs
# (the configuration loader, the dataset readers, expressions, templates,
# the serve request parser): CASES cases per property (default 2000).
# Every case must end without a panic within 5 s (the per-case limit the
# tests assert) and, here, under a memory cap of MEM_MB (default 4096) on
# the whole test process (ulimit -v).
#
#   bench/fuzz.sh            # 5 properties × 2000 cases
#   CASES=20000 bench/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CASES="${CASES:-2000}"
MEM_MB="${MEM_MB:-4096}"
cargo test -p probity-engine --test fuzz_props --no-run >/dev/null 2>&1
bin=$(ls -t target/debug/deps/fuzz_props-* | grep -v '\.d$' | head -1)
start=$(date +%s)
set +e
out=$( (ulimit -v $((MEM_MB * 1024)); PROPTEST_CASES="$CASES" "$bin" --test-threads 1) 2>&1)
rc=$?
set -e
passed=$(grep -c '^test .* ok$' <<<"$out" || true)
failed=$(grep -c '^test .* FAILED$' <<<"$out" || true)
hangs=$(grep -c 'a case took' <<<"$out" || true)
echo "properties: $((passed + failed)) (passed $passed, failed $failed)"
echo "cases tried: $((CASES * (passed + failed)))"
echo "panics or over-limit cases: $((failed - hangs)); hangs (> 5 s): $hangs"
echo "memory cap: ${MEM_MB} MiB; wall time: $(( $(date +%s) - start )) s; exit $rc"
[ "$rc" -eq 0 ] || { echo "$out" | tail -40; exit 1; }
