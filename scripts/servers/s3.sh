#!/usr/bin/env bash
# A throwaway S3-compatible server (versitygw) for the object-store tests of
# the workspace example.
#
# scripts/test.sh sources this file: it builds versitygw once per pinned
# version into $TEND_CACHE/versitygw/ (outside the checkout; a few minutes cold), starts it
# on 127.0.0.1 and a free port over a temporary directory with generated
# keys, exports TEND_S3_ENDPOINT, TEND_S3_ACCESS_KEY, TEND_S3_SECRET_KEY and
# TEND_S3_REGION, and registers s3_stop in `cleanups`.
#
# Run by hand, it starts a server and leaves it running for development:
#
#   bash scripts/servers/s3.sh          # prints the export and stop lines
#   eval "$(bash scripts/servers/s3.sh | grep ^export)"

s3_version=v1.8.0
s3_dir=""
s3_pid=""

# s3_install sets s3_bin to the pinned versitygw, building it when it is not
# in the cache yet.
s3_install() {
  local root cache tmp
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  cache="${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}/versitygw/$s3_version"
  s3_bin="$cache/versitygw"
  [ -x "$s3_bin" ] && return
  echo "building versitygw $s3_version into $cache (a few minutes, once)" >&2
  mkdir -p "$cache" || return 1
  tmp=$(mktemp -d "$cache/build.XXXXXX") || return 1
  if ! (cd "$tmp" && GOWORK=off GOFLAGS=-buildvcs=false GOBIN="$tmp" \
    go install "github.com/versity/versitygw/cmd/versitygw@$s3_version" >&2); then
    rm -rf "$tmp"
    return 1
  fi
  mv "$tmp/versitygw" "$s3_bin" && rm -rf "$tmp"
}

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# s3_ready waits until the server on port answers HTTP, for up to 30 s, and
# fails at once if the process is gone.
s3_ready() {
  local port=$1 i
  for i in $(seq 300); do
    kill -0 "$s3_pid" 2>/dev/null || return 1
    curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
    sleep 0.1
  done
  return 1
}

start_s3() {
  local port attempt access secret
  s3_install || return 1
  s3_dir=$(mktemp -d /tmp/tend-s3.XXXXXX)
  mkdir "$s3_dir/data"
  access="tend$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  secret=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    ROOT_ACCESS_KEY_ID=$access ROOT_SECRET_ACCESS_KEY=$secret \
      "$s3_bin" --port "127.0.0.1:$port" --region us-east-1 --quiet \
      posix "$s3_dir/data" >"$s3_dir/server.log" 2>&1 &
    s3_pid=$!
    s3_ready "$port" && break
    kill "$s3_pid" 2>/dev/null || true
    wait "$s3_pid" 2>/dev/null || true
    s3_pid=""
    [ "$attempt" = 5 ] && { cat "$s3_dir/server.log" >&2; rm -rf "$s3_dir"; return 1; }
  done
  export TEND_S3_ENDPOINT="http://127.0.0.1:$port"
  export TEND_S3_ACCESS_KEY=$access
  export TEND_S3_SECRET_KEY=$secret
  export TEND_S3_REGION=us-east-1
  cleanups+=(s3_stop)
  echo "versitygw $s3_version at $TEND_S3_ENDPOINT" >&2
}

s3_stop() {
  if [ -n "$s3_pid" ]; then
    kill "$s3_pid" 2>/dev/null || true
    wait "$s3_pid" 2>/dev/null || true
    s3_pid=""
  fi
  [ -n "$s3_dir" ] && rm -rf "$s3_dir"
  s3_dir=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  start_s3
  echo "export TEND_S3_ENDPOINT='$TEND_S3_ENDPOINT' TEND_S3_ACCESS_KEY='$TEND_S3_ACCESS_KEY'" \
    "TEND_S3_SECRET_KEY='$TEND_S3_SECRET_KEY' TEND_S3_REGION='$TEND_S3_REGION'"
  echo "# stop with: kill $s3_pid && rm -rf $s3_dir"
  disown "$s3_pid"
else
  start_s3
fi
