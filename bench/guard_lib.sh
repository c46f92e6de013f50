# Sourced by bench/guard.sh and bench/guard_cpu.sh, from the repository's
# root, with WORK set to their scratch folder.

# start NAME CMD...: runs CMD in the background (its pid appended to
# $WORK/pids), waits for it to print `listening on http://ADDR/v1` and
# prints ADDR; its stderr when it does not start.
start() {
  local name=$1; shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  echo $! >>"$WORK/pids"
  for _ in $(seq 100); do grep -q '^listening on' "$WORK/$name.out" 2>/dev/null && break; sleep 0.1; done
  sed -n 's#^listening on http://\(.*\)/v1#\1#p' "$WORK/$name.out" | grep . \
    || { echo "$name did not start:" >&2; cat "$WORK/$name.err" >&2; exit 1; }
}

# guard_config ATTEMPTS UPSTREAM_ADDR: a `probity serve` configuration in
# front of the sim at UPSTREAM_ADDR with the two validators of
# bench/guard_checks.toml; every answer a 200 (on_nothing_passed = "last").
guard_config() {
  printf 'name = "guard-bench"\non_nothing_passed = "last"\ncall_attempts = 1\n'
  printf '[upstream]\nprovider = "openai"\nbase_url = "http://%s/v1"\nmodel = "sim"\n' "$2"
  printf '[retry]\nattempts = %s\n' "$1"
  cat bench/guard_checks.toml
}
