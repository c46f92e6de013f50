#!/usr/bin/env bash
# Attempts per class of request against one global m (issue 20, §4.2.5),
# measured side by side in one run on the simulator:
#
#   bench/classes.sh            # 400 requests, half of them "hard"
#
# 1. A tested run: 40 inputs (half "hard": their check is stricter, so
#    their first attempts pass less often) × 20 outputs, then
#    `probity plan 1 --by kind --out classes.toml`.
# 2. `probity serve` (the simulator upstream at 50 ms a call) with the
#    classes file, then with the one global m the hardest class needs (what
#    an operator without classes would set to reach the same published
#    rate): REQUESTS requests each (16 at a time), the class in the
#    x-probity-class header. Prints per setup: the published share, upstream
#    calls per request, and latency p50/p99 as the client saw it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p probity-cli
  BIN="$PWD/target/release/probity"
fi
REQUESTS="${REQUESTS:-400}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/probity-classes.XXXXXX")"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
cd "$WORK"

CHECK='if input.text.contains("HARD") { count(output, "'"'"'") == 0 } else { count(output, "'"'"'") <= 3 }'
for i in $(seq 1 40); do
  if (( i % 2 )); then printf '{"id":"e%02d","kind":"easy","text":"Tell me about topic %d."}\n' "$i" "$i"
  else printf '{"id":"h%02d","kind":"hard","text":"HARD: tell me about topic %d."}\n' "$i" "$i"; fi
done >inputs.jsonl
cat >tested.toml <<TOML
name = "classes-bench"
[system]
provider = "sim"
seed = 3
contractions = 0.3
[experiment]
inputs = "inputs.jsonl"
outputs_per_input = 20
[[validator]]
name = "contractions"
check = '''$CHECK'''
minimum_success_percentage = 0.5
TOML
"$BIN" run tested.toml --store runs.db -q >/dev/null || true
"$BIN" plan 1 --by kind --out classes.toml --store runs.db
global=$(python3 -c "import tomllib; print(max(tomllib.load(open('classes.toml','rb'))['attempts'].values()))")

serve_config() { # $1: extra top-level lines, $2: attempts
  cat <<TOML
name = "classes-serve"
$1
[upstream]
provider = "sim"
seed = 5
contractions = 0.3
latency_ms = 50
[retry]
attempts = $2
[[validator]]
name = "contractions"
check = '''$CHECK'''
TOML
}

measure() { # $1: label, $2: config file
  "$BIN" serve --config "$2" --listen 127.0.0.1:0 --store "serve-$1.db" >"serve-$1.out" 2>"serve-$1.err" &
  local pid=$!
  for _ in $(seq 1 100); do grep -q 'listening on' "serve-$1.out" 2>/dev/null && break; sleep 0.1; done
  local addr; addr=$(sed -n 's#listening on http://\(.*\)/v1#\1#p' "serve-$1.out")
  python3 - "$addr" "$REQUESTS" "$1" <<'PY'
import json, sys, time, urllib.request, concurrent.futures as cf
addr, n, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def one(i):
    kind = "hard" if i % 2 else "easy"
    text = ("HARD: " if kind == "hard" else "") + f"tell me about request {i}."
    req = urllib.request.Request(f"http://{addr}/v1/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode(),
        headers={"content-type": "application/json", "x-probity-class": kind})
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req) as r:
            ok = r.status == 200
    except urllib.error.HTTPError as e:
        ok = False
    return ok, time.perf_counter() - t
with cf.ThreadPoolExecutor(16) as ex:
    res = list(ex.map(one, range(n)))
lat = sorted(l for _, l in res)
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
metrics = urllib.request.urlopen(f"http://{addr}/metrics").read().decode()
attempts = sum(float(l.split()[-1]) for l in metrics.splitlines() if l.startswith("probity_attempts_total"))
print(f"{label:>8}: published {sum(ok for ok, _ in res)/n:6.1%}, {attempts/n:.2f} upstream calls per request, "
      f"latency p50 {q(0.5)*1000:.0f} ms, p99 {q(0.99)*1000:.0f} ms")
PY
  kill -TERM "$pid"; wait "$pid" || true
}

serve_config 'classes = "classes.toml"' "$global" >with-classes.toml
serve_config '' "$global" >global.toml
echo "== $REQUESTS requests, half hard; the global m is the hard class's: $global"
measure classes with-classes.toml
measure global global.toml
