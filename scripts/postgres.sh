#!/usr/bin/env bash
# Start a PostgreSQL server for probity's tests (or to try the shared
# store) and print the line that points the tests at it:
#
#     eval "$(scripts/postgres.sh)"     # sets PROBITY_TEST_PG
#     cargo test --workspace
#
# As root (CI, containers): starts Debian's cluster (pg_ctlcluster) and
# creates a role `probity` that may create databases, with a fresh random
# password. Otherwise: a throwaway server of your own, initdb'd under
# ${TMPDIR:-/tmp}/probity-pg on port 54329 (stop it with
# `pg_ctl -D ${TMPDIR:-/tmp}/probity-pg/data stop`). Messages go to stderr;
# stdout is only the export line.
set -euo pipefail

say() { echo "postgres.sh: $*" >&2; }

if [ "$(id -u)" = 0 ] && command -v pg_ctlcluster >/dev/null 2>&1; then
  read -r version cluster port _ < <(pg_lsclusters -h | head -n 1)
  if [ -z "${version:-}" ]; then
    say "no PostgreSQL cluster (pg_lsclusters is empty); install postgresql"
    exit 1
  fi
  pg_ctlcluster "$version" "$cluster" start >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do
    runuser -u postgres -- pg_isready -q -p "$port" && break
    sleep 0.2
  done
  password="$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
  runuser -u postgres -- psql -q -p "$port" -v ON_ERROR_STOP=1 -v pw="$password" >/dev/null <<'SQL'
SELECT format('CREATE ROLE probity LOGIN CREATEDB PASSWORD %L', :'pw')
  WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'probity') \gexec
SELECT format('ALTER ROLE probity LOGIN CREATEDB PASSWORD %L', :'pw') \gexec
SQL
  say "cluster $version/$cluster on port $port, role probity"
  echo "export PROBITY_TEST_PG='postgres://probity:${password}@127.0.0.1:${port}/postgres'"
  exit 0
fi

bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
if [ -z "$bin" ] && command -v initdb >/dev/null 2>&1; then
  bin="$(dirname "$(command -v initdb)")"
fi
if [ -z "$bin" ]; then
  say "no PostgreSQL binaries found (install postgresql)"
  exit 1
fi
root="${TMPDIR:-/tmp}/probity-pg"
port=54329
if [ ! -d "$root/data" ]; then
  mkdir -p "$root"
  "$bin/initdb" -D "$root/data" --auth=trust -U postgres >"$root/initdb.log" 2>&1 \
    || { say "initdb failed: see $root/initdb.log"; exit 1; }
fi
if ! "$bin/pg_ctl" -D "$root/data" status >/dev/null 2>&1; then
  "$bin/pg_ctl" -D "$root/data" -l "$root/log" -w \
    -o "-p $port -k $root -c listen_addresses=127.0.0.1" start >/dev/null \
    || { say "the server did not start: see $root/log"; exit 1; }
fi
say "server under $root on port $port"
echo "export PROBITY_TEST_PG='postgres://postgres@127.0.0.1:${port}/postgres'"
