#!/usr/bin/env bash
# A throwaway Docker engine for the tests of examples/workspace/docker.
#
# scripts/test.sh sources this file: it installs Debian's docker.io from apt
# when dockerd is missing, starts dockerd as root with its own data root,
# exec root and unix socket in a temporary directory (no clash with a system
# daemon), without a bridge or iptables rules (containers use the host
# network), exports TEND_DOCKER_HOST and registers docker_stop in `cleanups`.
#
# When the engine cannot start here it says so loudly and exports nothing:
# the Docker tests then fail under CI=true, and skip otherwise.
#
# Run by hand, it starts an engine and leaves it running for development:
#
#   bash scripts/servers/docker.sh          # prints the export and stop lines
#   eval "$(bash scripts/servers/docker.sh | grep ^export)"

docker_dir=""
docker_pid=""

docker_install() {
  command -v dockerd >/dev/null && return
  if [ "$(id -u)" != 0 ]; then
    echo "dockerd is not installed; install it (apt-get install docker.io) or run as root" >&2
    return 1
  fi
  echo "installing docker.io from apt" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >&2 || return 1
  command -v dockerd >/dev/null || { echo "the docker.io install left no dockerd" >&2; return 1; }
}

# docker_ping reports whether the engine answers on socket $1.
docker_ping() {
  if command -v curl >/dev/null; then
    [ "$(curl -fsS --max-time 2 --unix-socket "$1" http://localhost/_ping 2>/dev/null)" = OK ]
  else
    docker -H "unix://$1" version >/dev/null 2>&1
  fi
}

start_docker() {
  local sock i
  if [ "$(id -u)" != 0 ]; then
    echo "dockerd must run as root; this shell is $(id -un)" >&2
    return 1
  fi
  docker_install || return 1
  docker_dir=$(mktemp -d /tmp/tend-docker.XXXXXX)
  sock="$docker_dir/docker.sock"
  dockerd --bridge=none --iptables=false \
    --data-root "$docker_dir/data" --exec-root "$docker_dir/exec" \
    --pidfile "$docker_dir/docker.pid" --host "unix://$sock" \
    >"$docker_dir/dockerd.log" 2>&1 &
  docker_pid=$!
  for i in $(seq 1 300); do
    docker_ping "$sock" && break
    if ! kill -0 "$docker_pid" 2>/dev/null; then
      docker_pid=""
      break
    fi
    sleep 0.2
  done
  if ! docker_ping "$sock"; then
    echo "dockerd did not answer on $sock; its log ends with:" >&2
    tail -n 30 "$docker_dir/dockerd.log" >&2
    docker_stop
    return 1
  fi
  export TEND_DOCKER_HOST="unix://$sock"
  cleanups+=(docker_stop)
  echo "Docker $(dockerd --version | awk '{print $3}' | tr -d ,) at $TEND_DOCKER_HOST" >&2
}

# docker_stop stops the engine (which stops its containers), unmounts what
# it left mounted and removes its directory.
docker_stop() {
  local i
  if [ -n "$docker_pid" ]; then
    kill -TERM "$docker_pid" 2>/dev/null || true
    for i in $(seq 1 100); do
      kill -0 "$docker_pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$docker_pid" 2>/dev/null || true
    wait "$docker_pid" 2>/dev/null || true
    docker_pid=""
  fi
  [ -n "$docker_dir" ] || return 0
  awk -v d="$docker_dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$docker_dir"
  docker_dir=""
}

# docker_unavailable says loudly that the Docker tests have no engine.
docker_unavailable() {
  cat >&2 <<'EOF'

!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!! NO DOCKER ENGINE: dockerd could not be installed or started on this      !!
!! machine (see the messages above). TEND_DOCKER_HOST is not set, so the    !!
!! tests of examples/workspace/docker fail under CI=true and skip otherwise. !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!

EOF
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  start_docker || { docker_unavailable; exit 1; }
  echo "export TEND_DOCKER_HOST='$TEND_DOCKER_HOST'"
  echo "# stop with: kill $docker_pid && rm -rf $docker_dir"
  disown "$docker_pid" 2>/dev/null || true
else
  start_docker || docker_unavailable
fi
