#!/usr/bin/env bash
# The guard's CPU per request, two builds side by side (issue 36 item 8):
#
#   bench/guard_cpu.sh OLD_PROBITY NEW_PROBITY     # 5 alternating rounds
#   ROUNDS=3 N=10000 bench/guard_cpu.sh A B
#
# Each round starts, for each build in turn, `probity sim serve` (0 ms
# upstream) and `probity serve` in front of it with the two validators of
# bench/guard_checks.toml (`attempts = 1`, so answers are asked for whole),
# warms it with 2,000 requests, then sends N (default 20,000) at
# concurrency 64 with the load generator (crates/engine/examples/load.rs)
# and reads the guard process's CPU time (utime + stime, /proc) over
# them. Prints each round, then the medians and NEW/OLD ratios of CPU per
# request, throughput and p50. Alternating the builds spreads a shared
# machine's drift over both.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# == 2 ]] || { echo "usage: bench/guard_cpu.sh OLD_PROBITY NEW_PROBITY" >&2; exit 2; }
if [[ -z "${LOAD:-}" ]]; then
  cargo build --release -q -p probity-engine --example load
  LOAD="$PWD/target/release/examples/load"
fi
ROUNDS=${ROUNDS:-5}; N=${N:-20000}
WORK="$(mktemp -d)"
trap 'kill $(cat "$WORK/pids" 2>/dev/null) 2>/dev/null || true; sleep 0.3; rm -rf "$WORK"' EXIT
source bench/guard_lib.sh  # start, guard_config

# stop PID...: ends the servers and waits until they are gone.
stop() {
  kill "$@" 2>/dev/null || true
  for pid in "$@"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done; done
}

# one LABEL PROBITY: one measurement, one JSON line.
one() {
  local label=$1 probity=$2
  local sim; sim=$(start sim "$probity" sim serve --listen 127.0.0.1:0)
  local sim_pid; sim_pid=$(tail -1 "$WORK/pids")
  guard_config 1 "$sim" >"$WORK/g.toml"
  rm -f "$WORK/g.db"
  local guard; guard=$(start guard "$probity" serve --config "$WORK/g.toml" --listen 127.0.0.1:0 --store "$WORK/g.db")
  local guard_pid; guard_pid=$(tail -1 "$WORK/pids")
  local url="http://$guard/v1/chat/completions"
  "$LOAD" --url "$url" --concurrency 64 --requests 2000 --warmup 0 >/dev/null
  local before; before=$(awk '{print $14 + $15}' "/proc/$guard_pid/stat")
  "$LOAD" --url "$url" --concurrency 64 --requests "$N" --warmup 0 >"$WORK/load.out"
  head -1 "$WORK/load.out" >"$WORK/load.json"
  local after; after=$(awk '{print $14 + $15}' "/proc/$guard_pid/stat")
  stop "$guard_pid" "$sim_pid"
  python3 - "$label" "$before" "$after" "$(getconf CLK_TCK)" "$N" "$WORK/load.json" <<'PY'
import json, sys
label, before, after, hz, n, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
load = json.load(open(path))
print(json.dumps({"build": label, "cpu_us": (after - before) / hz / n * 1e6,
                  "rps": load["rps"], "p50_ms": load["latency_ms"]["p50"], "errors": load["errors"]}))
PY
}

for round in $(seq "$ROUNDS"); do
  for label in old new; do
    if [[ $label == old ]]; then probity=$1; else probity=$2; fi
    one "$label" "$probity" | tee -a "$WORK/rows.jsonl" \
      | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  round %s %s: %.0f us a request, %.0f req/s, p50 %.2f ms, errors %s" % (sys.argv[1], r["build"], r["cpu_us"], r["rps"], r["p50_ms"], r["errors"] or "none"))' "$round"
  done
done
python3 - "$WORK/rows.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {b: {k: statistics.median(r[k] for r in rows if r["build"] == b) for k in ("cpu_us", "rps", "p50_ms")} for b in ("old", "new")}
for b in ("old", "new"):
    m = med[b]
    print(f"  median {b}: {m['cpu_us']:.0f} us a request, {m['rps']:.0f} req/s, p50 {m['p50_ms']:.2f} ms")
o, n = med["old"], med["new"]
print(f"  new/old: CPU per request {n['cpu_us'] / o['cpu_us']:.2f}x, throughput {n['rps'] / o['rps']:.2f}x, p50 {n['p50_ms'] / o['p50_ms']:.2f}x")
PY
