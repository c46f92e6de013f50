#!/usr/bin/env bash
# End-to-end throughput of `probity run` against `probity sim serve` over
# HTTP (the OpenAI-compatible provider), every sample stored durably.
#
#   bench/run.sh                          # both scenarios, this tree's build
#   BASELINE=/path/to/old/probity bench/run.sh   # and the same for an older
#                                         # build, side by side, with ratios
#
# Scenario 1: 0 ms model latency, 20,000 samples × 3 validators, concurrency
#   32, REPEAT times (3): samples/s (wall) and CPU per sample for the client
#   and the server.
# Scenario 2: 200 ms model latency, same shape: wall time against the ideal
#   N·latency/concurrency.
# Figures are measured side by side in one invocation; the machine's other
# load shows up in them, so compare ratios, not absolute numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "bench/run.sh needs GNU time (apt-get install time)" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p probity-cli
  BIN="$PWD/target/release/probity"
fi
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

INPUTS=100
CONCURRENCY=32
# Outputs per input: 200 at 0 ms (20,000 samples, so the whole command takes
# seconds, not noise), 20 at 200 ms (2,000 samples, about 12.5 s).
outputs_for() { if [ "$1" = 0 ]; then echo 200; else echo 20; fi; }
REPEAT="${REPEAT:-3}"

for i in $(seq 1 $INPUTS); do
  if (( i % 2 )); then t="Thank you for answer number $i."; else t="Please tell me about topic $i in JSON."; fi
  printf '{"id":"q%03d","text":"%s"}\n' "$i" "$t"
done >"$WORK/inputs.jsonl"

config() { # $1 = server address, $2 = outputs per input
  cat <<TOML
name = "bench"
[system]
provider = "openai"
model = "sim"
base_url = "http://$1/v1"
seed = 1
[experiment]
inputs = "inputs.jsonl"
outputs_per_input = $2
concurrency = $CONCURRENCY
timeout_s = 30
[[validator]]
name = "contractions"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.9
[[validator]]
name = "politeness"
check = '''if input.text.contains("Thank you") { output.contains("You're welcome") } else { true }'''
minimum_success_percentage = 0.8
[[validator]]
name = "short"
kind = "words"
max = 200
minimum_success_percentage = 0.9
TOML
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

scenario() { # $1 = latency ms, $2 = binary, $3 = label
  local latency=$1 BIN=$2 label=$3 dir="$WORK/$3-lat$1-$4"
  mkdir -p "$dir"; cp "$WORK/inputs.jsonl" "$dir/"
  "$BIN" sim serve --listen 127.0.0.1:0 --latency-ms "$latency" >"$dir/server.out" &
  local spid=$!
  for _ in $(seq 100); do grep -q listening "$dir/server.out" 2>/dev/null && break; sleep 0.05; done
  local addr; addr=$(sed -n 's#listening on http://\(.*\)/v1#\1#p' "$dir/server.out")
  config "$addr" "$(outputs_for "$latency")" >"$dir/probity.toml"
  local s0; s0=$(cpu_ticks $spid)
  local t0; t0=$(date +%s.%N)
  ( cd "$dir" && /usr/bin/time -f "%U %S" -o "$dir/time" "$BIN" run --quiet --store "$dir/runs.db" --format json >"$dir/report.json" ) || true
  local t1; t1=$(date +%s.%N)
  local s1; s1=$(cpu_ticks $spid)
  kill $spid; wait $spid 2>/dev/null || true
  local hz; hz=$(getconf CLK_TCK)
  python3 - "$latency" "$t0" "$t1" "$s0" "$s1" "$hz" "$dir" "$label" <<'PY'
import json, sys
lat, t0, t1, s0, s1, hz, d, label = int(sys.argv[1]), *map(float, sys.argv[2:7]), sys.argv[7], sys.argv[8]
user, sys_ = map(float, open(f"{d}/time").read().split()[-2:])
rep = json.load(open(f"{d}/report.json"))
n = rep["shape"]["inputs"] * rep["shape"]["outputs_per_input"]
calls, wall = rep["run"]["model_calls"], t1 - t0
stored = sum(c["rate"]["pass"] + c["rate"]["fail"] + c["rate"]["error"] for c in rep["checks"][:1])
print(f"[{label}] latency {lat} ms: {n} samples × {rep['shape']['checks']} validators, {calls} calls, {stored} stored, wall {wall:.3f} s")
open(f"{d}/../{label}-{lat}.wall", "a").write(f"{wall}\n")
if lat == 0:
    print(f"  throughput        {n / wall:,.0f} samples/s (whole command: start, load, run, store, report)")
    print(f"  client CPU        {(user + sys_) / n * 1e6:.1f} µs/sample")
    print(f"  server CPU        {(s1 - s0) / hz / n * 1e6:.1f} µs/sample")
else:
    ideal = n * lat / 1000 / 32
    print(f"  ideal N·latency/concurrency = {ideal:.2f} s; measured/ideal = {wall / ideal:.3f}")
PY
}

ratio() { # $1 = latency: this build's wall time over the baseline's, per repeat and median
  python3 - "$WORK/this-$1.wall" "$WORK/baseline-$1.wall" "$1" <<'PY'
import statistics, sys
a, b = ([float(x) for x in open(p).read().split()] for p in sys.argv[1:3])
r = [x / y for x, y in zip(a, b)]
print(f"  ratio this/baseline at {sys.argv[3]} ms: wall " + ", ".join(f"{x:.3f}" for x in r)
      + f"; median {statistics.median(r):.3f} (below 1: faster)")
PY
}

for latency in 0 200; do
  repeats=1; [ "$latency" = 0 ] && repeats=$REPEAT
  for k in $(seq "$repeats"); do
    scenario "$latency" "$BIN" this "$k"
    if [ -n "${BASELINE:-}" ]; then scenario "$latency" "$BASELINE" baseline "$k"; fi
  done
  if [ -n "${BASELINE:-}" ]; then ratio "$latency"; fi
done
