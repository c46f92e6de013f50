#!/usr/bin/env bash
# The guard (paper §4) on the simulator, whose true rates are known.
#
#   bench/guard.sh               # both figures (release build)
#   PROBITY=target/debug/probity bench/guard.sh   # use another binary
#
# Figure 1 — predicted vs measured. For several true rates, `probity run`
#   with a [retry] table samples 40 inputs × 25 guarded requests; the
#   single-attempt tensor predicts E[attempts used] and P(success within m)
#   (geometric model at the joint rate, with its interval) and the guarded
#   requests measure them (clustered intervals). They should agree within
#   their intervals ("prediction HELD").
# Figure 2 — the guard's added latency per request: sequential requests
#   straight to `probity sim serve` and through `probity serve` (validators
#   only, a model that always passes, so one attempt each), keep-alive HTTP
#   from one client; the difference of the means is the guard's overhead
#   (checks, bookkeeping, the store write, one more HTTP hop).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PROBITY:-}" ]]; then
  cargo build --release -q -p probity-cli
  PROBITY="$PWD/target/release/probity"
fi
command -v python3 >/dev/null || { echo "bench/guard.sh needs python3" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

checks() {
  cat <<'TOML'
[[validator]]
name = "contraction_validator"
message = "Output contains too many contractions"
check = '''count(output, "'") <= 3'''
[[validator]]
name = "politeness_validator"
message = "Say you're welcome when thanked"
check = '''if input.text.contains("Thank you") { output.contains("You're welcome") } else { true }'''
TOML
}
inputs() {
  for i in $(seq 1 40); do
    if (( i % 2 )); then t="Thank you for tip $i on roses!"; else t="How do I water plant $i?"; fi
    printf '[[input]]\ntext = "%s"\n' "$t"
  done
}

echo "== Figure 1: predicted vs measured (40 inputs x 25 requests per setting)"
for setting in "0.1 0.15 3" "0.3 0.4 3" "0.5 0.5 4" "0.3 0.4 2"; do
  read -r c w m <<<"$setting"
  dir="$WORK/f1-$c-$w-$m"; mkdir -p "$dir"
  {
    printf 'name = "guard-bench"\n[system]\nprovider = "sim"\ncontractions = %s\nomit_welcome = %s\n' "$c" "$w"
    printf '[experiment]\noutputs_per_input = 25\n[retry]\nattempts = %s\non = "validators"\n' "$m"
    checks; inputs
  } >"$dir/probity.toml"
  echo "-- sim contractions=$c omit_welcome=$w, m=$m (true P(pass) per attempt: thanked $(python3 -c "print(round((1-$c)*(1-$w),4))"), others $(python3 -c "print(1-$c)"))"
  "$PROBITY" run "$dir/probity.toml" --store "$dir/runs.db" --quiet --color never 2>/dev/null \
    | sed -n '/^Guarded system/,$p' || true
done

echo
echo "== Figure 2: the guard's added latency per request"
N=${N:-400}
"$PROBITY" sim serve --listen 127.0.0.1:0 --latency-ms 0 --config <(printf '[model]\ncontractions = 0\nomit_welcome = 0\n') >"$WORK/sim.out" &
for _ in $(seq 50); do [[ -s "$WORK/sim.out" ]] && break; sleep 0.1; done
SIM=$(sed -n 's#listening on http://\(.*\)/v1#\1#p' "$WORK/sim.out")
{
  printf 'name = "guard-overhead"\n[upstream]\nprovider = "openai"\nbase_url = "http://%s/v1"\nmodel = "sim"\n[retry]\nattempts = 3\n' "$SIM"
  checks
} >"$WORK/guard.toml"
"$PROBITY" serve --config "$WORK/guard.toml" --listen 127.0.0.1:0 --store "$WORK/serve.db" >"$WORK/guard.out" &
for _ in $(seq 50); do [[ -s "$WORK/guard.out" ]] && break; sleep 0.1; done
GUARD=$(sed -n 's#listening on http://\(.*\)/v1#\1#p' "$WORK/guard.out")
python3 - "$SIM" "$GUARD" "$N" <<'PY'
import http.client, json, statistics, sys, time
sim, guard, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def bench(addr):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port))
    times = []
    for i in range(n + 20):
        body = json.dumps({"model": "sim", "messages": [{"role": "user", "content": f"Thank you for tip {i}!"}]})
        t = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        r = conn.getresponse(); r.read()
        assert r.status == 200, r.status
        if i >= 20:  # warm-up excluded
            times.append((time.perf_counter() - t) * 1000)
    return times
d, g = bench(sim), bench(guard)
def show(name, t):
    q = statistics.quantiles(t, n=100)
    print(f"  {name:<22} mean {statistics.mean(t):7.3f} ms  p50 {q[49]:7.3f} ms  p99 {q[98]:7.3f} ms  (n={len(t)})")
show("direct to sim", d); show("through probity serve", g)
diff = statistics.mean(g) - statistics.mean(d)
se = (statistics.variance(g) / len(g) + statistics.variance(d) / len(d)) ** 0.5
print(f"  guard overhead: {diff:.3f} ms per request (95% interval {diff - 1.96*se:.3f} .. {diff + 1.96*se:.3f} ms); p50 difference {statistics.median(g) - statistics.median(d):.3f} ms")
PY
