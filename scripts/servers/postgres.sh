#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests of backends/postgres.
#
# scripts/test.sh sources this file: it installs PostgreSQL from apt when it is
# missing, starts a cluster in a temporary directory on 127.0.0.1 and a free
# port, exports TEND_POSTGRES_URL and registers postgres_stop in `cleanups`.
#
# Run by hand, it starts a cluster and leaves it running for development:
#
#   bash scripts/servers/postgres.sh          # prints the export and stop lines
#   eval "$(bash scripts/servers/postgres.sh | grep ^export)"
#
# The cluster trades durability for speed (fsync off): it is for tests only.
# TEND_POSTGRES_DURABLE=1 starts it with durable commits instead (fsync,
# synchronous_commit and full_page_writes on, PostgreSQL's defaults), for
# benchmarks that must pay for each commit's WAL flush:
#
#   eval "$(TEND_POSTGRES_DURABLE=1 bash scripts/servers/postgres.sh | grep ^export)"

postgres_dir=""
postgres_bin=""

# postgres_find_bin sets postgres_bin to the newest installed server's bin
# directory, or leaves it empty.
postgres_find_bin() {
  local d
  postgres_bin=""
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
    postgres_bin=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
    return
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
    [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] && postgres_bin=$d
  done
}

# postgres_as runs a command as the unprivileged postgres user when this shell
# is root (the server refuses to run as root), else as the current user.
postgres_as() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

postgres_install() {
  postgres_find_bin
  [ -n "$postgres_bin" ] && return
  if [ "$(id -u)" != 0 ]; then
    echo "PostgreSQL is not installed; install it (apt-get install postgresql) or run as root" >&2
    return 1
  fi
  echo "installing PostgreSQL from apt" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  postgres_find_bin
  [ -n "$postgres_bin" ] || { echo "PostgreSQL install left no pg_ctl" >&2; return 1; }
}

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

start_postgres() {
  local port attempt
  postgres_install || return 1
  postgres_dir=$(mktemp -d /tmp/tend-postgres.XXXXXX)
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres: "$postgres_dir"
  fi
  postgres_as "$postgres_bin/initdb" -D "$postgres_dir/data" -U postgres --auth=trust \
    --encoding=UTF8 --locale=C >"$postgres_dir/initdb.log" 2>&1 ||
    { cat "$postgres_dir/initdb.log" >&2; return 1; }
  local durability="fsync = off
synchronous_commit = off
full_page_writes = off"
  if [ "${TEND_POSTGRES_DURABLE:-}" = 1 ]; then
    durability="fsync = on
synchronous_commit = on
full_page_writes = on"
  fi
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    postgres_as tee -a "$postgres_dir/data/postgresql.conf" >/dev/null <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$postgres_dir'
max_connections = 300
$durability
EOF
    if postgres_as "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -l "$postgres_dir/server.log" \
      -w -t 60 start >/dev/null; then
      break
    fi
    [ "$attempt" = 5 ] && { cat "$postgres_dir/server.log" >&2; return 1; }
  done
  postgres_as "$postgres_bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
    -c 'CREATE DATABASE tend' || return 1
  export TEND_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/tend?sslmode=disable"
  cleanups+=(postgres_stop)
  echo "PostgreSQL $("$postgres_bin/pg_ctl" --version | awk '{print $3}') at $TEND_POSTGRES_URL${TEND_POSTGRES_DURABLE:+ (durable commits)}" >&2
}

postgres_stop() {
  [ -n "$postgres_dir" ] || return 0
  postgres_as "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$postgres_dir"
  postgres_dir=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  start_postgres
  echo "export TEND_POSTGRES_URL='$TEND_POSTGRES_URL'"
  stop="$postgres_bin/pg_ctl -D $postgres_dir/data -m fast stop && rm -rf $postgres_dir"
  [ "$(id -u)" = 0 ] && stop="runuser -u postgres -- $stop"
  echo "# stop with: $stop"
else
  start_postgres
fi
