#!/usr/bin/env bash
# Scale: a run of N inputs × M outputs × 10 validators on the built-in
# simulator (in process, every sample stored), then what is done with it.
#
#   bench/scale.sh                     # 1,000 × 1,000 = 1,000,000 samples
#   INPUTS=200 OUTPUTS=500 bench/scale.sh   # smaller
#   BIN=/path/to/probity bench/scale.sh     # another build
#   INPUTS=1000000 OUTPUTS=1 bench/scale.sh # many inputs: memory per input
#
# Prints, per command: wall time, peak memory (max RSS), bytes the process
# wrote to disk (file-system output blocks × 512), and the store's size
# after it. Targets (issue 12): run peak < 300 MB and bytes written ≤ 3×
# the store; revalidate ≥ 1,000,000 checks/s and < 300 MB without copying
# outputs; `probity runs` < 100 ms; `probity report` < 1 s. Figures depend
# on the machine and its load: compare them side by side, not across days.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "bench/scale.sh needs GNU time (apt-get install time)" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p probity-cli
  BIN="$PWD/target/release/probity"
fi
INPUTS="${INPUTS:-1000}"
OUTPUTS="${OUTPUTS:-1000}"
CONCURRENCY="${CONCURRENCY:-32}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/probity-scale.XXXXXX")"
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$WORK"' EXIT; else echo "keeping $WORK"; fi

awk -v n="$INPUTS" 'BEGIN { for (i = 1; i <= n; i++) {
  t = (i % 2) ? "Thank you for answer number " i "." : "Please tell me about topic " i " in JSON."
  printf "{\"id\":\"q%05d\",\"text\":\"%s\"}\n", i, t } }' >"$WORK/inputs.jsonl"

cat >"$WORK/probity.toml" <<TOML
name = "scale"
[system]
provider = "sim"
seed = 1
[experiment]
inputs = "inputs.jsonl"
outputs_per_input = $OUTPUTS
concurrency = $CONCURRENCY
[[validator]]
name = "contractions"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.85
[[validator]]
name = "politeness"
check = '''if input.text.contains("Thank you") { output.contains("You're welcome") } else { true }'''
minimum_success_percentage = 0.8
[[validator]]
name = "short"
kind = "words"
max = 200
[[validator]]
name = "not_empty"
kind = "length"
min = 1
[[validator]]
name = "no_apology"
kind = "not-contains"
value = "I apologize"
case_insensitive = true
[[validator]]
name = "no_markdown_heading"
kind = "regex"
pattern = '^[^#]'
[[validator]]
name = "few_exclamations"
kind = "count"
value = "!"
max = 2
[[validator]]
name = "no_url"
kind = "not-contains"
value = "http://"
[[validator]]
name = "not_too_long"
kind = "length"
max = 4000
[[validator]]
name = "mentions_topic"
check = '''output.len() > 0'''
TOML

# measure LABEL CMD...: one line of figures; the command's stdout is kept.
measure() {
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  ( cd "$WORK" && /usr/bin/time -f "%M %O" -o "$WORK/time" "$@" >"$WORK/$label.out" 2>"$WORK/$label.err" ) || true
  t1=$(date +%s.%N)
  read -r rss blocks <"$WORK/time"
  LAST_RSS_KB=$rss
  local store=0
  for f in "$WORK"/runs.db "$WORK"/runs.db-wal; do [ -f "$f" ] && store=$(( store + $(stat -c %s "$f") )); done
  LAST_WALL=$(echo "$t1 - $t0" | bc -l)
  printf '%-12s %9.2f s %8.1f MB %9.1f MB written %9.1f MB store\n' "$label" "$LAST_WALL" \
    "$(echo "$rss / 1024" | bc -l)" "$(echo "$blocks * 512 / 1048576" | bc -l)" "$(echo "$store / 1048576" | bc -l)"
}

samples=$(( INPUTS * OUTPUTS ))
echo "probity scale: $INPUTS inputs × $OUTPUTS outputs = $samples samples × 10 validators, concurrency $CONCURRENCY"
echo "binary: $BIN"
echo
measure run "$BIN" run --quiet --store runs.db probity.toml
echo "             $(echo "$samples / $LAST_WALL" | bc) samples/s, $(echo "$LAST_RSS_KB * 1024 / $INPUTS" | bc) bytes of peak memory per input"
measure revalidate "$BIN" revalidate 1 --config probity.toml --store runs.db --format json
echo "             $(echo "$samples * 10 / $LAST_WALL" | bc) checks/s"
measure runs "$BIN" runs --store runs.db
measure report "$BIN" report 1 --store runs.db --format text
measure report-json "$BIN" report 1 --store runs.db --format json
measure report-html "$BIN" report 1 --store runs.db --format html
echo "             HTML report: $(( $(stat -c %s "$WORK/report-html.out") / 1024 )) KB"
