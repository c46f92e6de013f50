#!/usr/bin/env bash
# Production traces (docs/traces.md): how fast probity ingests and checks
# OTLP spans, and what memory it takes, side by side with what the OTLP
# exporter costs the traced application.
#
#   bench/traces.sh                               # release build, 20,000 spans
#   SPANS=100000 bench/traces.sh                  # more spans
#   PROBITY=target/debug/probity PY=python3 bench/traces.sh
#   BASELINE=/tmp/probity-old bench/traces.sh     # side by side with another build
#
# Rows:
#   import   `probity traces import` of an OTLP JSON file (GenAI v1.37 chat
#            spans with content, 100 spans per line), 3 validators
#            (an expression, a regex, a length): spans/s, peak RSS, and
#            spans per CPU-second (user + system, every thread): what the
#            spans cost, whatever else the cores are doing.
#   collect  the same spans POSTed to `probity collect` as OTLP/HTTP JSON
#            by 4 concurrent clients, 100 spans per export, timed until
#            every span is checked (/metrics): spans/s, peak RSS and spans
#            per CPU-second of the collector (not of the clients).
#   exporter the app's side: the Python SDK's OTLP protobuf encoding of the
#            same spans (`encode_spans` + `SerializeToString`, what
#            BatchSpanProcessor's exporter does per batch): spans/s, when
#            the `opentelemetry-exporter-otlp-proto-common` package is
#            importable by $PY.
# With BASELINE (another build of probity), the import and collect rows are
# measured for both builds, alternately in ROUNDS rounds (default 3), each
# figure the median of its rounds, with the ratio this build / baseline.
# Aim: ≥ 20,000 spans/s checked on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
SPANS="${SPANS:-20000}"
PY="${PY:-python3}"
if [[ -z "${PROBITY:-}" ]]; then
  cargo build --release -q -p probity-cli
  PROBITY="$PWD/target/release/probity"
fi
work="$(mktemp -d)"
cleanup() {
  [[ -n "${collect_pid:-}" ]] && kill "$collect_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/traces.toml" <<'TOML'
name = "bench-traces"
[[validator]]
name = "contractions"
check = '''count(output, "'") <= 3'''
[[validator]]
name = "no_email"
kind = "regex"
pattern = '^[^@]*$'
[[validator]]
name = "short"
kind = "length"
max = 2000
TOML

"$PY" - "$work/spans.jsonl" "$SPANS" <<'PY'
import json, random, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
def kv(k, v):
    return {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
with open(path, "w") as f:
    for start in range(0, n, 100):
        spans = []
        for i in range(start, min(n, start + 100)):
            q = f"Question {i}: how do I reset my password?"
            a = "It isn't hard, and you'll get there. I'm sure it's fine." if rnd.random() < 0.1 else "Open settings and choose reset. I hope this helps."
            spans.append({"traceId": f"{i:032x}", "spanId": f"{i:016x}", "name": "chat gpt-x",
                "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000500000000",
                "attributes": [kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "gpt-x"),
                    kv("gen_ai.usage.input_tokens", 12), kv("gen_ai.usage.output_tokens", 20),
                    kv("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": q}]}])),
                    kv("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": a}], "finish_reason": "stop"}]))]})
        f.write(json.dumps({"resourceSpans": [{"resource": {"attributes": [kv("service.name", "bench")]},
            "scopeSpans": [{"spans": spans}]}]}) + "\n")
PY

# import: `import BINARY TAG` prints "spans/s peak-RSS spans-per-CPU-second"
import() {
  rm -f "$work/$2.db"*
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -v "$1" traces import --config "$work/traces.toml" --store "$work/$2.db" "$work/spans.jsonl" \
    > "$work/$2.out" 2> "$work/$2.time"
  t1=$(date +%s.%N)
  grep -q "$SPANS mapped and checked" "$work/$2.out" || { cat "$work/$2.out" "$work/$2.time" >&2; exit 1; }
  printf '%s %s %s\n' "$(awk -v n="$SPANS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')" \
    "$(awk '/Maximum resident/ { printf "%.0f", $6 / 1024 }' "$work/$2.time")" \
    "$(awk -v n="$SPANS" '/User time|System time/ { cpu += $NF } END { printf "%.0f", n / cpu }' "$work/$2.time")"
}

# collect: `collect BINARY TAG` prints "spans/s peak-RSS spans-per-CPU-second"
# (the server's high-water mark, VmHWM, and its CPU time, all threads, read
# before it is stopped)
collect() {
  rm -f "$work/$2.db"*
  "$1" collect --config "$work/traces.toml" --listen 127.0.0.1:0 --store "$work/$2.db" \
    > "$work/$2.out" 2> "$work/$2.err" &
  collect_pid=$!
  for _ in $(seq 100); do grep -q listening "$work/$2.out" 2>/dev/null && break; sleep 0.1; done
  local url rate peak per_cpu
  url=$(sed -n 's/^listening on //p' "$work/$2.out")
  rate=$("$PY" - "$work/spans.jsonl" "$url" "$SPANS" <<'PY'
import concurrent.futures, re, sys, time, urllib.request, urllib.error
path, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l.encode() for l in open(path)]
metrics = url.replace("/v1/traces", "/metrics")
def post(body):
    while True:
        req = urllib.request.Request(url, body, {"content-type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=30).read()
            return
        except urllib.error.HTTPError as e:
            if e.code not in (429, 503):
                raise
            time.sleep(float(e.headers.get("retry-after", "1")))
t0 = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    list(ex.map(post, lines))
while True:
    text = urllib.request.urlopen(metrics, timeout=10).read().decode()
    m = re.search(r"^probity_traces_mapped_total (\S+)", text, re.M)
    if m and float(m.group(1)) >= n:
        break
    time.sleep(0.05)
print(f"{n / (time.monotonic() - t0):.0f}")
PY
)
  peak=$(awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$collect_pid/status")
  # utime and stime: fields 14 and 15 after the command's name.
  per_cpu=$(sed 's/^.*) //' "/proc/$collect_pid/stat" | awk -v n="$SPANS" -v hz="$(getconf CLK_TCK)" \
    '{ printf "%.0f", n / (($12 + $13) / hz) }')
  kill -TERM "$collect_pid"; wait "$collect_pid" || true; collect_pid=""
  printf '%s %s %s\n' "$rate" "$peak" "$per_cpu"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

ROUNDS="${ROUNDS:-3}"
[[ -z "${BASELINE:-}" ]] && ROUNDS=1
: > "$work/rows"
for round in $(seq "$ROUNDS"); do
  for path in import collect; do
    if [[ -n "${BASELINE:-}" ]]; then
      row=$("$path" "$BASELINE" "$path-b")
      echo "$path baseline $row" >> "$work/rows"
    fi
    row=$("$path" "$PROBITY" "$path-t")
    echo "$path this $row" >> "$work/rows"
  done
done
fig() { awk -v p="$1" -v b="$2" -v c="$3" '$1 == p && $2 == b { print $c }' "$work/rows" | median; }

# the exporter's own cost in the app
exporter_rate=$("$PY" - "$SPANS" <<'PY' 2>/dev/null || echo "n/a (opentelemetry-exporter-otlp-proto-common not importable)"
import json, sys, time
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
n = int(sys.argv[1])
done = []
class Keep(SpanExporter):
    def export(self, spans):
        done.extend(spans); return SpanExportResult.SUCCESS
tp = TracerProvider(); tp.add_span_processor(SimpleSpanProcessor(Keep()))
tr = tp.get_tracer("bench")
for i in range(n):
    with tr.start_as_current_span("chat gpt-x") as s:
        s.set_attribute("gen_ai.operation.name", "chat")
        s.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"Question {i}"}]}]))
        s.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Open settings and choose reset."}]}]))
t0 = time.monotonic()
for k in range(0, n, 512):
    encode_spans(done[k:k + 512]).SerializeToString()
print(f"{n / (time.monotonic() - t0):.0f}")
PY
)

load=$(cut -d' ' -f1-3 /proc/loadavg)
printf '\n%-18s %10s %12s %14s   (%s spans, 3 validators, %s cores, load %s)\n' \
  "" "spans/s" "peak RSS" "spans/CPU-s" "$SPANS" "$(nproc)" "$load"
ratio() { awk -v a="$(fig "$1" this "$2")" -v b="$(fig "$1" baseline "$2")" 'BEGIN { printf "%.2f×", a / b }'; }
for path in import collect; do
  if [[ -n "${BASELINE:-}" ]]; then
    printf '%-18s %10s %12s %14s\n' "$path (baseline)" "$(fig $path baseline 3)" "$(fig $path baseline 4) MiB" "$(fig $path baseline 5)"
  fi
  printf '%-18s %10s %12s %14s\n' "$path" "$(fig $path this 3)" "$(fig $path this 4) MiB" "$(fig $path this 5)"
  if [[ -n "${BASELINE:-}" ]]; then
    printf '%-18s %10s %12s %14s\n' "  ratio" "$(ratio $path 3)" "$(ratio $path 4)" "$(ratio $path 5)"
  fi
done
printf '%-18s %10s %12s\n' exporter "$exporter_rate" "(in the app)"
