#!/usr/bin/env bash
# The guard (paper §4) on the simulator, whose true rates are known.
#
#   bench/guard.sh               # every figure (release build)
#   PROBITY=target/debug/probity bench/guard.sh   # use another binary
#   N1=200 N64=4000 NS=200 bench/guard.sh         # more requests in Figure 2
#   ONLY=2 bench/guard.sh                         # Figures 2, 4 and 3 only
#   ONLY=3 bench/guard.sh                         # Figure 3 only
#   ONLY=4 bench/guard.sh                         # Figures 2 and 4 only (the overhead)
#
# Figure 1 — predicted vs measured. For several true rates, `probity run`
#   with a [retry] table samples 40 inputs × 25 guarded requests; the
#   single-attempt tensor predicts E[attempts used] and P(success within m)
#   (geometric model at the joint rate, with its interval) and the guarded
#   requests measure them (clustered intervals). They should agree within
#   their intervals ("prediction HELD").
# Figure 2 — what the guard costs a client, side by side in one run:
#   `load` (crates/engine/examples/load.rs, keep-alive clients) straight to
#   `probity sim serve` and through `probity serve` → the same sim, with the
#   two validators of Figure 1, first `[retry] attempts = 1` (no retries),
#   then `attempts = 3`, and (when nginx is installed; Debian:
#   nginx-light) nginx forwarding to the same sim and checking nothing,
#   the floor any proxy pays here, and `forward`
#   (crates/engine/examples/forward.rs): the guard's own HTTP server and
#   client forwarding and checking nothing, the floor of the guard's
#   stack; at concurrency 1 and 64; then streamed
#   (`"stream": true`) at concurrency 64 and 0 ms upstream, and the time
#   to first byte at 1 ms per token at the sim. The
#   sim has its default rates (contractions 0.1, omit_welcome 0.15), so with
#   attempts = 3 some requests are retried; `on_nothing_passed = "last"`
#   keeps every answer a 200. The table gives req/s, p50/p90/p99 latency
#   and the added latency (guarded − direct) per percentile; errors, if
#   any, by HTTP status. The overhead rows use a sim that answers at once;
#   the stream rows one that takes 1 ms per token.
#   Its last lines give, at concurrency 64 and 0 ms upstream, the guard's
#   throughput as a ratio of direct and the added p50, streamed and not.
# Figure 4 — where the guard's CPU goes: CPU time per request of the
#   load generator, the sim and the proxy side by side (the guard, nginx,
#   `forward`; the client streaming and not); with `perf`, a
#   sampled profile of the guard under that load, grouped by component
#   (bench/guard_profile.py).
# Figure 3 — cutting failing answers short: the same requests through a
#   guard that reads the upstream's stream and drops a doomed answer at
#   its first forbidden character (`stream_upstream = true`) and one that
#   waits for whole answers (`false`); latency and tokens the model
#   generated per request (the sim's `generated_tokens`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PROBITY:-}" ]]; then
  cargo build --release -q -p probity-cli
  PROBITY="$PWD/target/release/probity"
fi
if [[ -z "${LOAD:-}" ]]; then
  cargo build --release -q -p probity-engine --example load
  LOAD="$PWD/target/release/examples/load"
fi
if [[ -z "${FORWARD:-}" ]]; then
  cargo build --release -q -p probity-engine --example forward
  FORWARD="$PWD/target/release/examples/forward"
fi
command -v python3 >/dev/null || { echo "bench/guard.sh needs python3" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'kill $(jobs -p) $(cat "$WORK/pids" 2>/dev/null) 2>/dev/null || true; sleep 0.5; rm -rf "$WORK"' EXIT

# start, guard_config; the two validators (bench/guard_checks.toml).
source bench/guard_lib.sh
checks() { cat bench/guard_checks.toml; }
inputs() {
  for i in $(seq 1 40); do
    if (( i % 2 )); then t="Thank you for tip $i on roses!"; else t="How do I water plant $i?"; fi
    printf '[[input]]\ntext = "%s"\n' "$t"
  done
}

if [[ "${ONLY:-1}" == 1 ]]; then
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

fi
[[ "${ONLY:-}" == 1 ]] && exit 0
if [[ "${ONLY:-}" != 3 ]]; then
echo
echo "== Figure 2: the guard's cost to a client (direct to the sim vs through probity serve)"
N1=${N1:-100}; N64=${N64:-1000}; NS=${NS:-100}
# The overhead rows: a sim that answers at once (the guard's own cost is
# then all that differs). The stream rows: a sim that takes 1 ms per
# token, streamed or not, as a model does.
SIM=$(start sim "$PROBITY" sim serve --listen 127.0.0.1:0)
SIMP=$(start simp "$PROBITY" sim serve --listen 127.0.0.1:0 --token-ms 1)
guard_config 1 "$SIM" >"$WORK/guard1.toml"; guard_config 3 "$SIM" >"$WORK/guard3.toml"
guard_config 1 "$SIMP" >"$WORK/guard1p.toml"
G1=$(start guard1 "$PROBITY" serve --config "$WORK/guard1.toml" --listen 127.0.0.1:0 --store "$WORK/g1.db")
G3=$(start guard3 "$PROBITY" serve --config "$WORK/guard3.toml" --listen 127.0.0.1:0 --store "$WORK/g3.db")
G1P=$(start guard1p "$PROBITY" serve --config "$WORK/guard1p.toml" --listen 127.0.0.1:0 --store "$WORK/g1p.db")
FWD=$(start fwd "$FORWARD" --listen 127.0.0.1:0 --upstream "http://$SIM/v1")
# The floor any proxy pays on this machine: nginx (Debian: nginx-light),
# when installed, forwarding to the same sim over kept-alive connections
# and checking nothing. Its row says what share of the guard's cost is the
# second HTTP hop itself, which no guard can avoid.
NGX=""
NGINX=$(command -v nginx || { [[ -x /usr/sbin/nginx ]] && echo /usr/sbin/nginx; } || true)
if [[ -n "$NGINX" ]]; then
  ngx_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$WORK/nginx.conf" <<NGINX
daemon off;
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events { worker_connections 4096; }
http {
  access_log off;
  upstream sim { server $SIM; keepalive 128; }
  server {
    listen 127.0.0.1:$ngx_port;
    location / { proxy_pass http://sim; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
  }
}
NGINX
  "$NGINX" -e "$WORK/nginx.err" -p "$WORK" -c "$WORK/nginx.conf" &
  NGX_PID=$!
  for _ in $(seq 50); do (echo >"/dev/tcp/127.0.0.1/$ngx_port") 2>/dev/null && break; sleep 0.1; done
  NGX="127.0.0.1:$ngx_port"
fi
: >"$WORK/results.jsonl"
measure() {  # scenario target-name addr concurrency requests [--stream]
  local scenario=$1 target=$2 addr=$3 c=$4 n=$5; shift 5
  "$LOAD" --url "http://$addr/v1/chat/completions" --concurrency "$c" --requests "$n" \
    --warmup $(( c * 2 )) "$@" \
    | python3 -c 'import json,sys; r=json.loads(sys.stdin.readline()); r["scenario"]=sys.argv[1]; r["target"]=sys.argv[2]; print(json.dumps(r))' "$scenario" "$target" \
    >>"$WORK/results.jsonl"
}
for c in 1 64; do
  n=$N1; (( c > 1 )) && n=$N64
  measure "concurrency $c" direct "$SIM" "$c" "$n"
  measure "concurrency $c" "guard, attempts=1" "$G1" "$c" "$n"
  measure "concurrency $c" "guard, attempts=3" "$G3" "$c" "$n"
  [[ -n "$NGX" ]] && measure "concurrency $c" "nginx, no checks" "$NGX" "$c" "$n"
  measure "concurrency $c" "forward, no checks" "$FWD" "$c" "$n"
done
# Streamed at 0 ms upstream: the client asks for "stream": true (the guard,
# its lone attempt never cut, asks the upstream for a whole answer and
# sends the client its events once it passed).
measure "stream, concurrency 64" direct "$SIM" 64 "$N64" --stream
measure "stream, concurrency 64" "guard, attempts=1" "$G1" 64 "$N64" --stream
measure "stream, first byte" direct "$SIMP" 1 "$NS" --stream
measure "stream, first byte" "guard, attempts=1" "$G1P" 1 "$NS" --stream
python3 - "$WORK/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
direct = {r["scenario"]: r for r in rows if r["target"] == "direct"}
print(f"  {'scenario':<20} {'target':<18} {'n':>6} {'req/s':>9} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}   added p50/p90/p99 ms         errors")
for r in rows:
    key = "ttfb_ms" if "ttfb_ms" in r else "latency_ms"
    q = r[key]; d = direct[r["scenario"]][key]
    errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "-"
    if r["ok"] == 0:
        print(f"  {r['scenario']:<20} {r['target']:<18} {r['requests']:>6} {'-':>9} {'-':>8} {'-':>8} {'-':>8}   {'-':<27}   {errors}")
        continue
    added = "" if r["target"] == "direct" else "/".join(f"{q[p] - d[p]:+.2f}" for p in ("p50", "p90", "p99"))
    print(f"  {r['scenario']:<20} {r['target']:<18} {r['requests']:>6} {r['rps']:>9.1f} {q['p50']:>8.2f} {q['p90']:>8.2f} {q['p99']:>8.2f}   {added:<27}   {errors}")
print("  (\"stream, first byte\" rows: time to first byte at 1 ms per token; the guard sends nothing before the whole answer has passed;")
print("   \"stream, concurrency 64\" rows: whole streamed answers at 0 ms upstream)")
for scenario in ("concurrency 64", "stream, concurrency 64"):
    d = direct.get(scenario)
    floor = next((r for r in rows if r["scenario"] == scenario and r["target"].startswith("nginx") and r["ok"]), None)
    for r in rows:
        if r["scenario"] == scenario and r["target"] != "direct" and d and r["ok"]:
            versus = f", {r['rps'] / floor['rps']:.2f}x nginx" if floor and r is not floor else ""
            print(f"  {scenario}, 0 ms upstream, {r['target']}: throughput {r['rps'] / d['rps']:.2f}x direct{versus}, "
                  f"added p50 {r['latency_ms']['p50'] - d['latency_ms']['p50']:+.2f} ms")
PY

echo
echo "== Figure 4: where the guard's CPU goes per request (concurrency 64, 0 ms upstream, attempts = 1)"
# CPU time of the guard process (utime + stime from /proc/PID/stat)
# over N4 requests (with `attempts = 1` and `on_nothing_passed = "last"`
# its lone attempt can never be cut, so it asks the upstream for whole
# answers whatever `stream_upstream` says); then, with `perf`
# when it is installed (Debian: linux-perf), a sampled profile of the
# first guard under the same load, its samples grouped by what the
# function belongs to (symbols only: release builds keep their symbol
# table).
N4=${N4:-2000}
pid_of() { sed -n "$1p" "$WORK/pids"; }
# pids: sim, simp, guard1, guard3, guard1p, fwd (in the order started).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# Each row: CPU per request of the load generator, the sim and the guard
# over the same N4 requests (the three share the machine's cores, so the
# guarded/direct throughput is about (load + sim) / (load + sim + guard)).
# load_cpu ARGS...: runs the load generator, prints its CPU seconds.
load_cpu() {
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN); print(r.ru_utime + r.ru_stime)' "$LOAD" "$@"
}
printf '  %-34s %14s %14s %14s\n' "CPU per request (us)" "load generator" "sim" "proxy"
# proxy_cpu LINE: the CPU ticks of the proxy in the middle: a line of
# $WORK/pids, or "ngx" for nginx's worker processes.
proxy_cpu() {
  if [[ "$1" == ngx ]]; then
    local t=0; for w in $(pgrep -P "$NGX_PID"); do t=$(( t + $(cpu_ticks "$w") )); done; echo "$t"
  else
    cpu_ticks "$(pid_of "$1")"
  fi
}
rows=("direct|-|$SIM" "guard, attempts=1|3|$G1")
[[ -n "$NGX" ]] && rows+=("nginx, no checks|ngx|$NGX")
rows+=("forward, no checks|6|$FWD")
rows+=("streamed, direct|-|$SIM" "streamed, guard, attempts=1|3|$G1")
for row in "${rows[@]}"; do
  IFS='|' read -r label line addr <<<"$row"
  flags=(); [[ "$label" == streamed* ]] && flags=(--stream)
  sim_before=$(cpu_ticks "$(pid_of 1)")
  [[ "$line" != - ]] && before=$(proxy_cpu "$line")
  load_s=$(load_cpu --url "http://$addr/v1/chat/completions" --concurrency 64 --requests "$N4" --warmup 0 "${flags[@]}")
  sim_after=$(cpu_ticks "$(pid_of 1)")
  guard_us=-
  if [[ "$line" != - ]]; then
    after=$(proxy_cpu "$line")
    guard_us=$(python3 -c "import sys; b,a,hz,n=map(float,sys.argv[1:5]); print(f'{(a-b)/hz/n*1e6:.0f}')" "$before" "$after" "$hz" "$N4")
  fi
  python3 -c "import sys; l,sb,sa,hz,n=map(float,sys.argv[1:6]); print(f'  {sys.argv[6]:<34} {l/n*1e6:>14.0f} {(sa-sb)/hz/n*1e6:>14.0f} {sys.argv[7]:>14}')" \
    "$load_s" "$sim_before" "$sim_after" "$hz" "$N4" "$label" "$guard_us"
done
if command -v perf >/dev/null 2>&1; then
  pid=$(pid_of 3)
  perf record -e cpu-clock -F 2999 -p "$pid" -o "$WORK/perf.data" >/dev/null 2>"$WORK/perf.err" &
  perfpid=$!
  sleep 0.5
  "$LOAD" --url "http://$G1/v1/chat/completions" --concurrency 64 --requests "$N4" --warmup 0 >/dev/null
  kill -INT "$perfpid"; wait "$perfpid" || true
  perf report -i "$WORK/perf.data" --no-children --sort symbol --stdio 2>/dev/null \
    | python3 "$(dirname "$0")/guard_profile.py"
else
  echo "  (perf not installed: apt-get install linux-perf for the profile)"
fi
fi

[[ "${ONLY:-}" == 4 ]] && exit 0
echo
echo "== Figure 3: cutting failing answers short (stream_upstream on vs off)"
# A sim streaming a token every 5 ms whose answers contain contractions
# half the time; a validator that allows none ("'" must not appear), so a
# failing answer is settled at its first contraction. Same requests, same
# sim: the guard reading the upstream's stream and dropping it at the
# first contraction vs the guard waiting for whole answers.
N3=${N3:-100}
printf '[model]\ncontractions = 0.5\ntoken_ms = 5\n' >"$WORK/sim3.toml"
SIM3=$(start sim3 "$PROBITY" sim serve --listen 127.0.0.1:0 --config "$WORK/sim3.toml")
cut_config() {  # stream_upstream
  printf 'name = "cut-bench"\non_nothing_passed = "last"\ncall_attempts = 1\nstream_upstream = %s\n' "$1"
  printf '[upstream]\nprovider = "openai"\nbase_url = "http://%s/v1"\nmodel = "sim"\n' "$SIM3"
  printf '[retry]\nattempts = 3\n[[validator]]\nname = "no_contractions"\nmessage = "Write without contractions"\nkind = "not-contains"\nvalue = "%s"\n' "'"
}
cut_config true >"$WORK/cut-on.toml"; cut_config false >"$WORK/cut-off.toml"
# Not a thank-you (the sim would answer "You're welcome": never passing).
printf '{"model": "sim", "messages": [{"role": "user", "content": "How do I water roses?"}]}' >"$WORK/cut-body.json"
: >"$WORK/cut.jsonl"
for mode in off on; do
  G=$(start "cut-$mode" "$PROBITY" serve --config "$WORK/cut-$mode.toml" --listen 127.0.0.1:0 --store "$WORK/cut-$mode.db")
  before=$(curl -s "http://$SIM3/stats")
  "$LOAD" --url "http://$G/v1/chat/completions" --concurrency 4 --requests "$N3" --warmup 0 --body "$WORK/cut-body.json" \
    | python3 -c 'import json,sys; r=json.loads(sys.stdin.readline()); r["mode"]=sys.argv[1]; r["before"]=json.loads(sys.argv[2]); print(json.dumps(r))' "$mode" "$before" >>"$WORK/cut.jsonl"
  curl -s "http://$SIM3/stats" >"$WORK/cut-$mode.stats"
done
python3 - "$WORK/cut.jsonl" "$WORK/cut-off.stats" "$WORK/cut-on.stats" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
after = {"off": json.load(open(sys.argv[2])), "on": json.load(open(sys.argv[3]))}
print(f"  {'stream_upstream':<16} {'n':>5} {'req/s':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'tokens/req':>11} {'cancelled':>10}")
per = {}
for r in rows:
    a, b = after[r["mode"]], r["before"]
    tokens = (a.get("generated_tokens", 0) - b.get("generated_tokens", 0)) / max(r["ok"], 1)
    cancelled = a.get("cancelled", 0) - b.get("cancelled", 0)
    q = r["latency_ms"]; per[r["mode"]] = (q, tokens)
    print(f"  {r['mode']:<16} {r['requests']:>5} {r['rps']:>8.1f} {q['p50']:>8.1f} {q['p90']:>8.1f} {q['p99']:>8.1f} {tokens:>11.1f} {cancelled:>10}")
if "on" in per and "off" in per:
    (qon, ton), (qoff, toff) = per["on"], per["off"]
    print(f"  on/off ratio: p50 {qon['p50']/qoff['p50']:.2f}, p90 {qon['p90']/qoff['p90']:.2f}, tokens generated per request {ton/max(toff,1e-9):.2f}")
PY
