#!/usr/bin/env bash
# The shared store against the embedded one, measured side by side in one
# run (issue 19):
#
#   eval "$(scripts/postgres.sh)"       # a PostgreSQL to measure (PROBITY_TEST_PG)
#   bench/store.sh
#   INPUTS=100 OUTPUTS=100 bench/store.sh   # smaller
#
# 1. INPUTS × OUTPUTS samples (default 1,000 × 100 = 100,000) × 3 checks
#    through the in-process simulator into SQLite, then into PostgreSQL:
#    wall time, samples/s, the ratio PostgreSQL/SQLite (goal ≥ 0.5), bytes
#    stored per sample (SQLite: the file and its WAL; PostgreSQL: the
#    database's growth) and WAL bytes the server wrote per sample.
# 2. `probity runs` on a store of 1,000 runs (headers copied in SQL): the
#    median of 5 (goal < 100 ms), both stores.
# 3. One shared run on a latency-bound system (a provider stand-in,
#    `probity sim serve` at 200 ms a call, counting every request;
#    SLOW_INPUTS × SLOW_OUTPUTS = 60 × 5, concurrency 4 per process) on
#    SQLite and on PostgreSQL: 1 process, then 3 and 6 (`run --shared` +
#    `work --wait`, all started at once): wall time, its ratio to one
#    process (goals ≤ 0.45 and ≤ 0.3), calls paid at the stand-in and the
#    server's deadlocks. ONLY=3 runs this part alone.
# 4. A fast system (the in-process simulator, 0 ms a call): FAST_INPUTS ×
#    1 output (default 20,000) as one process's plain run and as a shared
#    run (`run --shared`, the same process claiming its inputs), on SQLite
#    and PostgreSQL: samples/s and the ratio shared/plain (goal ≥ 0.5×),
#    and PostgreSQL/SQLite plain (goal ≥ 0.6×). ONLY=4 runs this part alone.
#
# Figures depend on the machine and its load: compare them within one run.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${PROBITY_TEST_PG:?set PROBITY_TEST_PG (eval \"\$(scripts/postgres.sh)\")}"
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p probity-cli
  BIN="$PWD/target/release/probity"
fi
INPUTS="${INPUTS:-1000}"
OUTPUTS="${OUTPUTS:-100}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/probity-store.XXXXXX")"
DB="probity_bench_$$"
base="${PROBITY_TEST_PG%/*}"
query="${PROBITY_TEST_PG#*\?}"; [ "$query" = "$PROBITY_TEST_PG" ] && query="" || query="?$query"
PG="$base/$DB$query"
psql_admin() { psql "$PROBITY_TEST_PG" -qtAX -v ON_ERROR_STOP=1 -c "$1"; }
psql_db() { psql "$PG" -qtAX -v ON_ERROR_STOP=1 -c "$1"; }
cleanup() { psql_admin "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
psql_admin "CREATE DATABASE $DB"

now_ms() { date +%s%3N; }

for i in $(seq 1 "$INPUTS"); do
  printf '{"id":"q%05d","text":"Thank you for answer number %d."}\n' "$i" "$i"
done >"$WORK/inputs.jsonl"
cat >"$WORK/probity.toml" <<TOML
name = "store-bench"
[system]
provider = "sim"
seed = 1
[experiment]
inputs = "inputs.jsonl"
outputs_per_input = $OUTPUTS
concurrency = 32
[[validator]]
name = "contractions"
check = '''count(output, "'") <= 3'''
minimum_success_percentage = 0.85
[[validator]]
name = "politeness"
kind = "contains"
value = "You're welcome"
minimum_success_percentage = 0.8
[[validator]]
name = "not_empty"
kind = "length"
min = 1
TOML
samples=$((INPUTS * OUTPUTS))

if [ -z "${ONLY:-}" ]; then
echo "== 1. $INPUTS × $OUTPUTS = $samples samples × 3 checks"
t0=$(now_ms); "$BIN" run "$WORK/probity.toml" --store "$WORK/runs.db" -q >/dev/null || [ $? = 1 ]; t1=$(now_ms)
lite_ms=$((t1 - t0))
lite_bytes=$(( $(stat -c %s "$WORK/runs.db") + $( [ -f "$WORK/runs.db-wal" ] && stat -c %s "$WORK/runs.db-wal" || echo 0) ))
"$BIN" runs --store "$PG" >/dev/null   # the tables, made before measuring
size0=$(psql_db "SELECT pg_database_size(current_database())")
wal0=$(psql_db "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")
t0=$(now_ms); "$BIN" run "$WORK/probity.toml" --store "$PG" -q >/dev/null || [ $? = 1 ]; t1=$(now_ms)
pg_ms=$((t1 - t0))
size1=$(psql_db "SELECT pg_database_size(current_database())")
wal1=$(psql_db "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn")
stored=$(psql_db "SELECT COUNT(*) FROM samples")
[ "$stored" = "$samples" ] || { echo "PostgreSQL holds $stored samples, not $samples" >&2; exit 1; }
awk -v s="$samples" -v l="$lite_ms" -v p="$pg_ms" -v lb="$lite_bytes" -v pb=$((size1 - size0)) -v w=$((wal1 - wal0)) 'BEGIN {
  printf "SQLite:     %6.2f s  %8.0f samples/s  %5.0f bytes stored/sample\n", l/1000, s/(l/1000), lb/s
  printf "PostgreSQL: %6.2f s  %8.0f samples/s  %5.0f bytes stored/sample  %5.0f WAL bytes/sample\n", p/1000, s/(p/1000), pb/s, w/s
  printf "throughput PostgreSQL/SQLite: %.2f× (goal ≥ 0.5×)\n", l/p
}'

echo "== 2. probity runs on a store of 1,000 runs"
python3 - "$WORK/runs.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in db.execute("PRAGMA table_info(runs)") if r[1] != "id"]
while db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] < 1000:
    n = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    db.execute(f"INSERT INTO runs ({','.join(cols)}) SELECT {','.join(cols)} FROM runs LIMIT {min(n, 1000 - n)}")
db.commit()
PY
psql_db "INSERT INTO runs (name, created_at, finished_at, status, config_hash, config, system, inputs, outputs_per_input, checks, settings, model_calls, cached, duration_s, judge_calls, tokens, judge_calls_by_check, verdicts)
  SELECT name, created_at, finished_at, status, config_hash, config, system, inputs, outputs_per_input, checks, settings, model_calls, cached, duration_s, judge_calls, tokens, judge_calls_by_check, verdicts
  FROM runs, generate_series(1, 999)" >/dev/null
for store in "$WORK/runs.db" "$PG"; do
  times=()
  for _ in 1 2 3 4 5; do
    t0=$(now_ms); "$BIN" runs --store "$store" >/dev/null; t1=$(now_ms)
    times+=($((t1 - t0)))
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
  case "$store" in postgres*) name=PostgreSQL ;; *) name=SQLite ;; esac
  listed=$(( $("$BIN" runs --store "$store" | wc -l) - 1 ))
  echo "$name: probity runs over $listed runs: median ${median} ms of 5 (goal < 100 ms)"
done

fi

if [ -z "${ONLY:-}" ] || [ "${ONLY:-}" = 4 ]; then
echo "== 4. a fast system (0 ms): one process, plain against shared"
FAST_INPUTS="${FAST_INPUTS:-20000}"
for i in $(seq 1 "$FAST_INPUTS"); do
  printf '{"id":"f%06d","text":"Thank you for answer number %d."}\n' "$i" "$i"
done >"$WORK/fast.jsonl"
fast() { # $1 store, $2 tag, $3 extra flag → wall ms
  sed -e "s/^name = \"store-bench\"/name = \"store-bench-fast-$2\"/" \
    -e 's/^inputs = "inputs.jsonl"/inputs = "fast.jsonl"/' -e 's/^outputs_per_input = .*/outputs_per_input = 1/' \
    "$WORK/probity.toml" >"$WORK/fast-$2.toml"
  local t0 t1; t0=$(now_ms)
  "$BIN" run "$WORK/fast-$2.toml" --store "$1" $3 -q >/dev/null || [ $? = 1 ]
  t1=$(now_ms); echo $((t1 - t0))
}
lite_plain=$(fast "$WORK/fast-plain.db" lite-plain "")
lite_shared=$(fast "$WORK/fast-shared.db" lite-shared --shared)
pg_plain=$(fast "$PG" pg-plain "")
pg_shared=$(fast "$PG" pg-shared --shared)
awk -v s="$FAST_INPUTS" -v lp="$lite_plain" -v ls="$lite_shared" -v pp="$pg_plain" -v ps="$pg_shared" 'BEGIN {
  printf "SQLite:     plain %8.0f samples/s  shared %8.0f samples/s  shared/plain %.2f× (goal ≥ 0.5×)\n", s/(lp/1000), s/(ls/1000), lp/ls
  printf "PostgreSQL: plain %8.0f samples/s  shared %8.0f samples/s  shared/plain %.2f× (goal ≥ 0.5×)\n", s/(pp/1000), s/(ps/1000), pp/ps
  printf "plain PostgreSQL/SQLite: %.2f× (goal ≥ 0.6×)\n", lp/pp
}'
fi

[ -n "${ONLY:-}" ] && [ "${ONLY:-}" != 3 ] && exit 0
echo "== 3. one shared run on a latency-bound system: 1 / 3 / 6 workers"
# The system is a provider stand-in (`probity sim serve`, 200 ms a call)
# that counts every request: the calls paid, never probity's own count.
# Every worker is started at once (`work --wait`: no start order).
SLOW_INPUTS="${SLOW_INPUTS:-60}"; SLOW_OUTPUTS="${SLOW_OUTPUTS:-5}"
"$BIN" sim serve --listen 127.0.0.1:0 --latency-ms 200 >"$WORK/sim.out" 2>/dev/null &
sim=$!
trap 'kill $sim 2>/dev/null || true; cleanup' EXIT
until grep -q "listening on" "$WORK/sim.out" 2>/dev/null; do sleep 0.05; done
sim_addr=$(sed -n 's#^listening on http://\([^/]*\)/v1#\1#p' "$WORK/sim.out")
paid() { curl -s "http://$sim_addr/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])'; }
head -n "$SLOW_INPUTS" "$WORK/inputs.jsonl" >"$WORK/slow.jsonl"
slow_samples=$((SLOW_INPUTS * SLOW_OUTPUTS))
deadlocks() { psql_db "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"; }
shared() { # $1 store, $2 workers, $3 tag → "wall_ms paid deadlocks stored"
  local store="$1" n="$2" tag="$3"
  sed -e "s/^name = \"store-bench\"/name = \"store-bench-$tag\"/" \
    -e "s#^provider = \"sim\"#provider = \"openai\"\nbase_url = \"http://$sim_addr/v1\"\nmodel = \"probity-sim\"\napi_key_env = \"BENCH_KEY\"#" \
    -e '/^seed = 1$/d' -e 's/^inputs = "inputs.jsonl"/inputs = "slow.jsonl"/' \
    -e "s/^outputs_per_input = .*/outputs_per_input = $SLOW_OUTPUTS/" -e 's/^concurrency = 32/concurrency = 4/' \
    "$WORK/probity.toml" >"$WORK/$tag.toml"
  local p0 d0 t0 pids=()
  p0=$(paid); d0=$(deadlocks); t0=$(now_ms)
  if [ "$n" = 1 ]; then
    BENCH_KEY=k "$BIN" run "$WORK/$tag.toml" --store "$store" -q >/dev/null || [ $? = 1 ]
  else
    BENCH_KEY=k "$BIN" run "$WORK/$tag.toml" --store "$store" --shared -q >/dev/null &
    pids+=($!)
    for _ in $(seq 2 "$n"); do
      BENCH_KEY=k "$BIN" work "$WORK/$tag.toml" --store "$store" --wait=60s -q >/dev/null &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || [ $? = 1 ]; done
  fi
  local t1; t1=$(now_ms)
  echo "$((t1 - t0)) $(( $(paid) - p0 )) $(( $(deadlocks) - d0 ))"
}
for kind in SQLite PostgreSQL; do
  for n in 1 3 6; do
    case $kind in
      SQLite) store="$WORK/shared-$n.db" ;;
      PostgreSQL) store="$PG" ;;
    esac
    read -r ms calls dl <<<"$(shared "$store" "$n" "$kind-$n")"
    [ "$kind" = SQLite ] && dl="-"
    eval "ms_${kind}_$n=$ms"
    one=$(eval echo "\$ms_${kind}_1")
    awk -v k="$kind" -v n="$n" -v ms="$ms" -v one="$one" -v c="$calls" -v s="$slow_samples" -v d="$dl" 'BEGIN {
      printf "%-10s %d worker%s: %6.2f s  %.2f× one process  %d calls paid for %d samples  deadlocks %s\n",
        k, n, (n > 1 ? "s" : " "), ms/1000, ms/one, c, s, d
    }'
  done
done
echo "(goals: 3 workers ≤ 0.45×, 6 ≤ 0.3×; calls paid = samples; 0 deadlocks)"
