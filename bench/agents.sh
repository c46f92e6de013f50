#!/usr/bin/env bash
# Episodes per second and memory per episode on the agent simulator
# (issue 34, docs/agents.md "Performance"):
#
#   bench/agents.sh             # 1,000 tasks × 10 trials, and 100 × 10
#
# The demo of `probity init --provider agent` (the simulated shop assistant
# and customer, five shop tools, a JSON state per episode, two agent
# checks) with its 12 tasks copied to TASKS tasks (new ids), run with
# `--outputs 10` into a SQLite store. Prints, per size, the wall time,
# episodes per second and peak RSS (/usr/bin/time -v); memory per episode
# is the difference of the two peaks over the difference of episodes.
# The simulators answer at once, so the figures are probity's own
# overhead per episode (its turns, tool calls, state copies, judging and
# storing), not a model's latency.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then
  cargo build --release -q -p probity-cli
  BIN="$PWD/target/release/probity"
fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/probity-agents.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

measure() { # $1 = tasks
  local dir="$WORK/t$1"
  "$BIN" init "$dir" --provider agent >/dev/null 2>&1
  python3 - "$dir/tasks.jsonl" "$1" <<'PY'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
base = [json.loads(l) for l in open(path) if l.strip()]
with open(path, "w") as f:
    for i in range(n):
        t = dict(base[i % len(base)])
        t["id"] = f"{t['id']}-{i}"
        f.write(json.dumps(t) + "\n")
PY
  (cd "$dir" && /usr/bin/time -v "$BIN" run --quiet --outputs 10 --format json \
      --set agent.seed=1 --set user.seed=1 >out.json 2>time.txt) || true
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$dir/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$dir/time.txt")
  python3 - "$1" "$wall" "$rss" "$dir/out.json" <<'PY'
import json, sys
tasks, wall, rss, out = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
parts = [float(p) for p in wall.split(":")]
secs = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
episodes = tasks * 10
calls = json.load(open(out))["run"]["model_calls"]
print(f"{tasks:>5} tasks × 10 = {episodes:>6} episodes: {secs:6.1f} s, "
      f"{episodes / secs:7.0f} episodes/s, {calls} model calls, peak RSS {rss / 1024:6.1f} MiB")
print(f"RESULT {episodes} {secs} {rss}")
PY
}

small=$(measure 100); echo "$small" | grep -v RESULT
large=$(measure 1000); echo "$large" | grep -v RESULT
python3 - "$(echo "$small" | grep RESULT)" "$(echo "$large" | grep RESULT)" <<'PY'
import sys
_, e1, _, r1 = sys.argv[1].split()
_, e2, _, r2 = sys.argv[2].split()
per = (int(r2) - int(r1)) * 1024 / (int(e2) - int(e1))
print(f"memory per episode: {per:.0f} bytes (peak RSS difference over {int(e2) - int(e1)} episodes)")
PY
