#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster for the store tests and print its URL.
#
#   url=$(scripts/start_test_postgres.sh /tmp/tobe-pg 55432)
#   TOBE_TEST_PG_URL=$url TOBE_REQUIRE_PG=1 pytest tests/store
#
# Stop it (and remove it) with:
#
#   pg_ctl stop -D /tmp/tobe-pg/data -m fast     # as the `postgres` user when run as root:
#   runuser -u postgres -- "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl" \
#       stop -D /tmp/tobe-pg/data -m fast && rm -rf /tmp/tobe-pg
#
# The cluster lives in <dir>/data, logs to <dir>/postgres.log, listens on 127.0.0.1:<port> only
# (socket directory <dir>), and trusts local connections: it is for tests, never for data.
# Running it again on the same directory reuses the cluster (starting it if it is stopped).
# PostgreSQL refuses to run as root, so when invoked as root the server runs as `postgres`.
# The binaries come from the Debian `postgresql` package (/usr/lib/postgresql/<version>/bin).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <dir> <port>" >&2
  exit 2
fi
dir=$(realpath -m "$1")
port=$2

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [[ -z "$bindir" ]]; then
  bindir=$(dirname "$(command -v pg_ctl || true)")
fi
if [[ ! -x "$bindir/pg_ctl" ]]; then
  echo "PostgreSQL server binaries not found (install the Debian 'postgresql' package)" >&2
  exit 1
fi

as_server_user() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

mkdir -p "$dir"
if [[ $(id -u) -eq 0 ]]; then
  chown postgres: "$dir"
fi

if [[ ! -f "$dir/data/PG_VERSION" ]]; then
  as_server_user "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust \
    --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
fi

if ! as_server_user "$bindir/pg_ctl" status -D "$dir/data" >/dev/null 2>&1; then
  as_server_user "$bindir/pg_ctl" start -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" \
    >/dev/null || {
    cat "$dir/postgres.log" >&2
    exit 1
  }
fi

exists=$("$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = 'tobe_test'")
if [[ "$exists" != "1" ]]; then
  "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres tobe_test
fi

echo "postgresql://postgres@127.0.0.1:$port/tobe_test"
