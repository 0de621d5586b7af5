#!/usr/bin/env bash
# A throwaway Kubernetes API server (etcd + kube-apiserver) for the tests of
# backends/kube.
#
# scripts/test.sh sources this file: it builds kube-apiserver,
# kube-controller-manager and etcd once per pinned version into $TEND_CACHE (from
# the tools modules in scripts/kube-tools; no prebuilt binary is downloaded),
# starts etcd and kube-apiserver on 127.0.0.1 and free ports,
# writes a kubeconfig, exports TEND_KUBECONFIG (with TEND_KUBE_ETCD, the etcd
# client URL the tests use to compact history, and TEND_KUBE_WATCH_TIMEOUT)
# and registers kube_stop in `cleanups`.
#
# Run by hand, it starts the servers and leaves them running for development:
#
#   bash scripts/servers/kube.sh          # prints the export and stop lines
#   eval "$(bash scripts/servers/kube.sh | grep ^export)"
#
# The servers are for tests only: etcd skips fsync, the API server has no
# watch cache (so a watch from a compacted revision fails at once with "410
# Gone"), does not compact etcd on its own schedule, and does not write its
# identity lease every ten seconds, so that only the tests move the revision;
# it ends watches after 5 to 10 s (TEND_KUBE_WATCH_TIMEOUT, in seconds) so
# that the tests see them resumed.

kube_version=v1.37.1
kube_etcd_version=v3.6.16
kube_dir=""
kube_pids=()
# The API server ends each watch after 1 to 2 times this many seconds, so the
# tests see watches resumed.
kube_watch_timeout=5

# kube_build_into builds the given main packages of the tools module in $1
# into the cache directory $2, unless every binary named in $3 is there.
kube_build_into() {
  local module=$1 dest=$2 bins=$3 pkgs=("${@:4}") b tmp out missing=""
  for b in $bins; do [ -x "$dest/$b" ] || missing=1; done
  [ -z "$missing" ] && return 0
  echo "building $bins into $dest (once per version; several minutes)" >&2
  tmp="$dest.tmp.$$"
  rm -rf "$tmp" && mkdir -p "$tmp" || return 1
  # One package is named explicitly: go.etcd.io/etcd/server/v3 would be "server".
  out="$tmp/"
  [ "${#pkgs[@]}" = 1 ] && out="$tmp/$bins"
  (cd "$module" && GOWORK=off GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w" -o "$out" "${pkgs[@]}") ||
    { rm -rf "$tmp"; return 1; }
  mkdir -p "$dest" || return 1
  for b in $bins; do mv "$tmp/$b" "$dest/$b" || return 1; done
  rm -rf "$tmp"
}

kube_build() {
  kube_build_into "$root/scripts/kube-tools" "${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}/kube/$kube_version" \
    "kube-apiserver kube-controller-manager" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager || return 1
  kube_build_into "$root/scripts/kube-tools/etcd" "${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}/etcd/$kube_etcd_version" "etcd" \
    go.etcd.io/etcd/server/v3 || return 1
  kube_apiserver_bin="${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}/kube/$kube_version/kube-apiserver"
  kube_etcd_bin="${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}/etcd/$kube_etcd_version/etcd"
}

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# kube_wait polls command "$@" for up to 180 s (the machine may be loaded)
# while the process $2 runs.
kube_wait() {
  local what=$1 pid=$2 i
  shift 2
  for i in $(seq 1 900); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { echo "$what exited" >&2; return 1; }
    sleep 0.2
  done
  echo "$what did not become ready" >&2
  return 1
}

start_kube() {
  local etcd_port peer_port api_port token
  root=${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
  kube_build || return 1
  kube_dir=$(mktemp -d /tmp/tend-kube.XXXXXX)
  openssl genrsa -out "$kube_dir/sa.key" 2048 2>/dev/null || return 1
  openssl rsa -in "$kube_dir/sa.key" -pubout -out "$kube_dir/sa.pub" 2>/dev/null || return 1
  token=$(openssl rand -hex 24)
  echo "$token,tend-admin,tend-admin,system:masters" >"$kube_dir/tokens.csv"

  etcd_port=$(free_port)
  peer_port=$(free_port)
  "$kube_etcd_bin" --name tend --data-dir "$kube_dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "tend=http://127.0.0.1:$peer_port" --unsafe-no-fsync \
    --log-level warn >"$kube_dir/etcd.log" 2>&1 &
  kube_pids+=($!)
  cleanups+=(kube_stop)
  kube_wait etcd "${kube_pids[-1]}" curl -sf "http://127.0.0.1:$etcd_port/health" || { tail -20 "$kube_dir/etcd.log" >&2; return 1; }

  api_port=$(free_port)
  "$kube_apiserver_bin" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --cert-dir "$kube_dir/certs" --token-auth-file "$kube_dir/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$kube_dir/sa.pub" --service-account-signing-key-file "$kube_dir/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --endpoint-reconciler-type none \
    --watch-cache=false --etcd-compaction-interval 0 --feature-gates APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false \
    --enable-priority-and-fairness=false --min-request-timeout "$kube_watch_timeout" \
    >"$kube_dir/apiserver.log" 2>&1 &
  kube_pids+=($!)
  kube_wait kube-apiserver "${kube_pids[-1]}" kube_ready "$api_port" "$token" || { tail -30 "$kube_dir/apiserver.log" >&2; return 1; }

  cat >"$kube_dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tend
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $kube_dir/certs/apiserver.crt
users:
- name: tend-admin
  user:
    token: $token
contexts:
- name: tend
  context: {cluster: tend, user: tend-admin}
current-context: tend
EOF
  export TEND_KUBECONFIG="$kube_dir/kubeconfig"
  export TEND_KUBE_ETCD="http://127.0.0.1:$etcd_port"
  export TEND_KUBE_WATCH_TIMEOUT="$kube_watch_timeout"
  echo "kube-apiserver $kube_version (etcd $kube_etcd_version) at https://127.0.0.1:$api_port; TEND_KUBECONFIG=$TEND_KUBECONFIG" >&2
}

# kube_ready succeeds once the API server answers /readyz with "ok".
kube_ready() {
  [ "$(curl -sk -H "Authorization: Bearer $2" "https://127.0.0.1:$1/readyz")" = ok ]
}

kube_stop() {
  local p
  for p in "${kube_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${kube_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  kube_pids=()
  [ -n "$kube_dir" ] && rm -rf "$kube_dir"
  kube_dir=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  start_kube
  echo "export TEND_KUBECONFIG='$TEND_KUBECONFIG'"
  echo "export TEND_KUBE_ETCD='$TEND_KUBE_ETCD'"
  echo "export TEND_KUBE_WATCH_TIMEOUT='$TEND_KUBE_WATCH_TIMEOUT'"
  echo "# stop with: kill ${kube_pids[*]} && rm -rf $kube_dir"
  # Run by hand, the servers outlive this script.
  disown -a
else
  start_kube
fi
