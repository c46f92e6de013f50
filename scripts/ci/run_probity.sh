#!/usr/bin/env bash
# The run step of the composite action (action.yml): run a probity
# configuration against its baseline, append the Markdown report to the
# job summary, and decide the step's exit status by the mode.
#
# Environment (set by action.yml from its inputs):
#   PROBITY_CONFIG     the configuration file
#   PROBITY_BASELINE   baseline run name or id (empty: none)
#   PROBITY_MODE       advisory | gate
#   PROBITY_ARGS       more arguments for `probity run` (word-split)
#   PROBITY_OUT        directory for report.md, junit.xml, report.html
#   GITHUB_STEP_SUMMARY, GITHUB_OUTPUT  (GitHub's files; optional here)
#
# `probity run` exits 0 (all pass, nothing regressed), 1 (a verdict fails
# or a check regressed), 2 (usage or configuration error), 3 (the run
# could not complete). gate: the step exits as the run did. advisory: the
# step exits 0 on 0, 1 and 3 with a warning (stochastic checks inform,
# they do not block), and still fails on 2 — a broken configuration is
# not noise.
set -uo pipefail

config="${PROBITY_CONFIG:-probity.toml}"
mode="${PROBITY_MODE:-advisory}"
out="${PROBITY_OUT:-${RUNNER_TEMP:-/tmp}/probity}"
case "$mode" in
  advisory|gate) ;;
  *) echo "::error title=probity::mode must be advisory or gate, not '$mode'"; exit 2 ;;
esac
mkdir -p "$out"
md="$out/report.md"
: > "$md"

args=(run "$config" --quiet --markdown "$md" --junit "$out/junit.xml")
if [ -n "${PROBITY_BASELINE:-}" ]; then
  args+=(--baseline "$PROBITY_BASELINE")
fi
# shellcheck disable=SC2206 # word splitting of extra arguments is intended
extra=(${PROBITY_ARGS:-})
args+=("${extra[@]}")

probity "${args[@]}"
code=$?

if [ ! -s "$md" ]; then
  echo "probity run exited $code without a report (see the log above)." > "$md"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$md" >> "$GITHUB_STEP_SUMMARY"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "exit-code=$code"
    echo "report=$md"
    echo "junit=$out/junit.xml"
  } >> "$GITHUB_OUTPUT"
fi

case "$code" in
  0) exit 0 ;;
  2) echo "::error title=probity::probity run exited 2: bad usage or configuration"; exit 2 ;;
esac
what="a verdict failed or a check regressed"
[ "$code" = 3 ] && what="the run could not complete"
if [ "$mode" = gate ]; then
  echo "::error title=probity::probity run exited $code: $what"
  exit "$code"
fi
echo "::warning title=probity::probity run exited $code: $what (advisory mode: not failing the job)"
exit 0
