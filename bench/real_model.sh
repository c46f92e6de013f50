#!/usr/bin/env bash
# probity against a real model on this machine (issue 39, item 5):
# SmolLM2-135M-Instruct served by llama-cpp-python with one thread
# (scripts/real_model.sh). One run prints, side by side, the same CALLS
# requests (the same prompts, temperature 0, max_tokens 32):
#
#   bare       the official `openai` client straight to the model, one at a time:
#              the model's own throughput
#   run c=1    `probity run` of those prompts (two validators), concurrency 1
#   serve      the bare client's requests through `probity serve` (the same
#              two validators, [retry] attempts = 1)
#   run c=4    `probity run` at concurrency 4: the server answers one call at
#              a time, so each call's latency is mostly time queued there (the
#              note on standard error says so)
#
# with wall time, seconds per call, tokens (prompt + completion, the bare
# client's count: every path writes the same) per second, and each
# row's time as a ratio to the bare client's: probity's overhead as a share
# of a real model's latency.
#
#   bench/real_model.sh                       # release build; venv in target/real_model_venv
#   CALLS=40 VENV=/tmp/venv bench/real_model.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS="${CALLS:-20}"
VENV="${VENV:-$PWD/target/real_model_venv}"
if [[ -z "${PROBITY:-}" ]]; then
  cargo build --release -q -p probity-cli
  PROBITY="$PWD/target/release/probity"
fi
bash scripts/real_model.sh install "$VENV"
WORK="$(mktemp -d)"
mkfifo "$WORK/model.out"
bash scripts/real_model.sh serve "$VENV" >"$WORK/model.out" 2>"$WORK/model.log" &
MODEL_PID=$!
trap 'kill $MODEL_PID $(cat "$WORK/guard.pid" 2>/dev/null) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$WORK"' EXIT
exec 3<"$WORK/model.out"
read -r line <&3 || { echo "the model server did not start:" >&2; cat "$WORK/model.log" >&2; exit 1; }
URL="${line#listening on }"
echo "model: SmolLM2-135M-Instruct Q4_1 at $URL (1 thread, OMP_WAIT_POLICY=passive); $CALLS calls per row"

PY="$VENV/bin/python"
export URL CALLS WORK PROBITY
"$PY" - <<'PY'
import json, os, re, subprocess, sys, time
import openai

url, calls, work, probity = os.environ["URL"], int(os.environ["CALLS"]), os.environ["WORK"], os.environ["PROBITY"]
PROMPTS = [f"Thank you for tip number {i}!" if i % 2 == 0 else f"How deep is bulb number {i} planted?"
           for i in range(calls)]
SYSTEM = "You are a polite assistant. Never use contractions."
CHECKS = '''
[[validator]]
name = "no_contractions"
check = \'\'\'count(output, "'") <= 3\'\'\'
[[validator]]
name = "short"
kind = "words"
max = 40
'''
rows = []


def bare(base_url, label):
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=600)
    started, tokens = time.monotonic(), 0
    for p in PROMPTS:
        r = client.chat.completions.create(
            model="smollm2", temperature=0, max_tokens=32,
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": p}])
        tokens += (r.usage.total_tokens if r.usage else 0)
    rows.append((label, time.monotonic() - started, [], tokens))


def run(concurrency):
    d = os.path.join(work, f"run{concurrency}")
    os.makedirs(d)
    inputs = "".join(f'[[input]]\nid = "in{i}"\ntext = {json.dumps(p)}\n' for i, p in enumerate(PROMPTS))
    with open(os.path.join(d, "p.toml"), "w") as f:
        f.write(f'''name = "bench-real"
[system]
provider = "openai"
base_url = "{url}"
model = "smollm2"
temperature = 0
max_tokens = 32
[prompt]
system = "{SYSTEM}"
user = "{{{{ input.text }}}}"
[experiment]
outputs_per_input = 1
concurrency = {concurrency}
timeout_s = 600
{inputs}{CHECKS}''')
    started = time.monotonic()
    p = subprocess.run([probity, "run", "p.toml", "-q", "--store", "runs.db", "--format", "json"],
                       cwd=d, capture_output=True, text=True)
    wall = time.monotonic() - started
    assert p.returncode in (0, 1), p.stderr
    report = json.loads(p.stdout)
    notes = [l for l in p.stderr.splitlines() if l.startswith("note:")]
    rows.append((f"probity run c={concurrency}", wall, notes))


def serve():
    d = os.path.join(work, "guard")
    os.makedirs(d)
    with open(os.path.join(d, "guard.toml"), "w") as f:
        f.write(f'''name = "bench-guard"
timeout_s = 600
on_nothing_passed = "last"
[upstream]
provider = "openai"
base_url = "{url}"
model = "smollm2"
[retry]
attempts = 1
{CHECKS}''')
    g = subprocess.Popen([probity, "serve", "--config", "guard.toml", "--listen", "127.0.0.1:0",
                          "--store", "runs.db"], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    open(os.path.join(work, "guard.pid"), "w").write(str(g.pid))
    line = g.stdout.readline()
    base = re.search(r"http://\S+/v1", line).group(0)
    bare(base, "probity serve")
    g.terminate()
    g.wait(timeout=30)


bare(url, "bare client")
run(1)
serve()
run(4)
base_wall, tokens = rows[0][1], rows[0][3]
# Temperature 0 and the same prompts: every path makes the same calls and
# the model writes the same tokens, so tok/s is the bare client's tokens
# over each row's wall time.
print(f"{'path':<18}{'wall s':>9}{'s/call':>9}{'tok/s':>8}{'× bare':>8}")
for label, wall, *_ in rows:
    print(f"{label:<18}{wall:>9.1f}{wall / calls:>9.2f}{tokens / wall:>8.1f}{wall / base_wall:>8.2f}")
for label, _, notes, *_ in rows:
    for n in notes:
        print(f"{label}: {n}")
PY
