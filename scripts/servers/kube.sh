#!/usr/bin/env bash
# A throwaway Kubernetes cluster for the tests of backends/kube and of the
# examples — etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kwok playing the kubelet of fake nodes — and beside it a quiet API server
# for the store's conformance suite.
#
# scripts/test.sh sources this file: it builds kube-apiserver,
# kube-controller-manager and kube-scheduler (one `go build`), etcd and kwok
# once per pinned version into $TEND_CACHE (from the tools modules in
# scripts/kube-tools; no prebuilt binary is downloaded), starts them on
# 127.0.0.1 and free ports, registers kube_stop in `cleanups` and exports:
#
#   TEND_KUBECONFIG             the cluster's kubeconfig (an admin token)
#   TEND_KUBE_ETCD              the cluster's etcd client URL
#   TEND_KUBE_AUDIT_LOG         the cluster's audit log, never rotated: one JSON line
#                               (audit.k8s.io/v1 Event, Metadata level, stage ResponseComplete)
#                               per create, update, patch or delete of any resource, written
#                               before the response, so in the order of changes one client
#                               makes in turn
#   TEND_KUBE_STORE_KUBECONFIG  the quiet API server's kubeconfig
#   TEND_KUBE_STORE_CACHED_KUBECONFIG
#                               the kubeconfig of a second quiet API server, with its watch
#                               cache, on the same etcd under another prefix
#   TEND_KUBE_STORE_ETCD        their etcd client URL, which the tests use to compact history
#   TEND_KUBE_WATCH_TIMEOUT     both API servers end watches after 1 to 2 times this many
#                               seconds, so that the tests see them resumed
#
# Run by hand, it starts them and leaves them running for development:
#
#   bash scripts/servers/kube.sh          # prints the export and stop lines
#   eval "$(bash scripts/servers/kube.sh | grep ^export)"
#
# The cluster is real where the tests look: the controller manager runs the
# garbage collector (it rediscovers resources every 30 s, so custom resources
# installed at run time are collected too) and the namespace, service
# account, deployment, replica set, node lifecycle, pod garbage collector and
# persistent volume binder and protection controllers; the scheduler binds
# pods to $kube_nodes nodes that kwok keeps Ready, and kwok marks the pods on
# them Running and Ready (no container runs) and completes their deletion.
#
# Its controllers write whenever anything changes (a new namespace gets a
# service account, a deleted one is emptied) and kwok renews the nodes' leases,
# so its revision moves on its own. The store's conformance suite checks that
# refused calls do not move the revision, hence the second API server with
# nothing else writing to it. It has no watch cache (so a watch from a
# compacted revision fails at once with "410 Gone"), as the cluster's has
# not; API servers run with one by default, and it answers watches itself,
# so the suite also runs against a third API server, with its watch cache,
# which shares the quiet one's etcd under another key prefix. All are for
# tests only: etcd skips fsync, the API servers do not compact etcd on their
# own schedule and do not write their identity lease, and the components run
# without leader election.

kube_version=v1.37.1
kube_etcd_version=v3.6.16
kube_kwok_version=v0.8.0 # as in scripts/kube-tools/kwok/go.mod
kube_nodes=2
kube_dir=""
kube_pids=()
# The API servers end each watch after 1 to 2 times this many seconds, so the
# tests see watches resumed.
kube_watch_timeout=5
kube_controllers=garbage-collector-controller,namespace-controller,serviceaccount-controller,deployment-controller,replicaset-controller,job-controller,node-lifecycle-controller,pod-garbage-collector-controller,persistentvolume-binder-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller

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

# kube_kwok_stages writes into $1/stages.yaml kwok's own default stages
# for nodes (initialisation, heartbeat with a lease) and Pods (ready,
# delete), from the source of the kwok module that was built, as kwokctl
# configures them; written every time (it takes a moment) so that a change
# of the list reaches a warm cache. Kwok's stage that completes a Job's Pod
# is left out: the workspace tests and demo run storage Jobs on this host
# (examples/workspace/kube.JobHost), which reports how each ended.
kube_kwok_stages() {
  local dest=$1 src f
  src=$(cd "$root/scripts/kube-tools/kwok" && GOWORK=off go mod download -json sigs.k8s.io/kwok | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$src/kustomize/stage" ] || { echo "kwok's stages not found in the module cache ($src)" >&2; return 1; }
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-delete; do
    cat "$src/kustomize/stage/$f.yaml" && echo "---"
  done >"$dest/stages.yaml.tmp" && mv "$dest/stages.yaml.tmp" "$dest/stages.yaml"
}

kube_build() {
  local cache=${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}
  kube_build_into "$root/scripts/kube-tools" "$cache/kube/$kube_version" \
    "kube-apiserver kube-controller-manager kube-scheduler" k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler || return 1
  kube_build_into "$root/scripts/kube-tools/etcd" "$cache/etcd/$kube_etcd_version" etcd go.etcd.io/etcd/server/v3 || return 1
  kube_build_into "$root/scripts/kube-tools/kwok" "$cache/kwok/$kube_kwok_version" kwok sigs.k8s.io/kwok/cmd/kwok || return 1
  kube_kwok_stages "$cache/kwok/$kube_kwok_version" || return 1
  kube_bin="$cache/kube/$kube_version"
  kube_etcd_bin="$cache/etcd/$kube_etcd_version/etcd"
  kube_kwok="$cache/kwok/$kube_kwok_version"
}

# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# kube_wait polls command "$@" for up to 180 s (the machine may be loaded)
# while the process $2 runs; on failure it names the log $3 to read and shows
# its end.
kube_wait() {
  local what=$1 pid=$2 log=$3 i
  shift 3
  for i in $(seq 1 900); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { kube_failed "$what exited" "$log"; return 1; }
    sleep 0.2
  done
  kube_failed "$what did not become ready in 180 s" "$log"
  return 1
}

# kube_failed reports what failed and shows the end of the log $2 to read.
kube_failed() {
  echo "$1; the end of its log $2 follows" >&2
  tail -30 "$2" >&2
}

# kube_start starts command "${@:2}" in the background with its output in
# the log $1.
kube_start() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  kube_pids+=($!)
}

# kube_api calls the API server at port kube_api_port with curl: kube_api
# METHOD PATH [JSON]. The user agent is not curl's, for which the server
# would indent its JSON.
kube_api() {
  curl -sfk -A tend-kube.sh -X "$1" -H "Authorization: Bearer $kube_token" -H "Content-Type: application/json" \
    ${3:+--data "$3"} "https://127.0.0.1:$kube_api_port$2"
}

# kube_control_plane starts etcd and kube-apiserver, without its watch cache,
# with their data, logs and kubeconfig in the directory $1, passing the API
# server the flags "${@:2}"; it sets kube_etcd_url and kube_api_port.
kube_control_plane() {
  local dir=$1 peer_port
  shift
  mkdir -p "$dir" || return 1
  kube_etcd_url="http://127.0.0.1:$(free_port)"
  peer_port=$(free_port)
  kube_start "$dir/etcd.log" "$kube_etcd_bin" --name tend --data-dir "$dir/etcd" \
    --listen-client-urls "$kube_etcd_url" --advertise-client-urls "$kube_etcd_url" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "tend=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn
  kube_wait etcd "${kube_pids[-1]}" "$dir/etcd.log" curl -sf "$kube_etcd_url/health" || return 1
  kube_apiserver "$dir" "$kube_etcd_url" --watch-cache=false "$@"
}

# kube_apiserver starts kube-apiserver on the etcd at $2 with its logs,
# certificates and kubeconfig in the directory $1, passing it the flags
# "${@:3}" (among them --watch-cache); it sets kube_api_port.
kube_apiserver() {
  local dir=$1 etcd_url=$2
  shift 2
  mkdir -p "$dir" || return 1
  kube_api_port=$(free_port)
  kube_start "$dir/apiserver.log" "$kube_bin/kube-apiserver" --etcd-servers "$etcd_url" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$kube_api_port" \
    --cert-dir "$dir/certs" --token-auth-file "$kube_dir/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$kube_dir/sa.pub" --service-account-signing-key-file "$kube_dir/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --endpoint-reconciler-type none \
    --etcd-compaction-interval 0 --feature-gates APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false \
    --enable-priority-and-fairness=false --min-request-timeout "$kube_watch_timeout" "$@"
  kube_wait kube-apiserver "${kube_pids[-1]}" "$dir/apiserver.log" kube_ready || return 1

  cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tend
  cluster:
    server: https://127.0.0.1:$kube_api_port
    certificate-authority: $dir/certs/apiserver.crt
users:
- name: tend-admin
  user:
    token: $kube_token
contexts:
- name: tend
  context: {cluster: tend, user: tend-admin}
current-context: tend
EOF
}

# kube_cluster starts the cluster in the directory $1: a control plane with
# the audit log, the nodes, the controller manager, the scheduler and kwok.
kube_cluster() {
  local dir=$1 port i node
  mkdir -p "$dir" || return 1
  cat >"$dir/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
EOF
  kube_control_plane "$dir" --audit-policy-file "$dir/audit-policy.yaml" --audit-log-path "$dir/audit.log" \
    --audit-log-format json --audit-log-mode blocking --audit-log-maxsize 0 || return 1

  # The nodes first: the node lifecycle controller then finds them at once.
  for i in $(seq 0 $((kube_nodes - 1))); do
    node="{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"kwok-node-$i\","
    node+="\"annotations\":{\"kwok.x-k8s.io/node\":\"fake\"},\"labels\":{\"kubernetes.io/hostname\":\"kwok-node-$i\",\"type\":\"kwok\"}},"
    node+="\"status\":{\"allocatable\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"110\"},"
    node+="\"capacity\":{\"cpu\":\"32\",\"memory\":\"256Gi\",\"pods\":\"110\"}}}"
    kube_api POST /api/v1/nodes "$node" >/dev/null ||
      { echo "creating node kwok-node-$i failed; see $dir/apiserver.log" >&2; return 1; }
  done

  port=$(free_port)
  kube_start "$dir/controller-manager.log" "$kube_bin/kube-controller-manager" --kubeconfig "$dir/kubeconfig" \
    --controllers "$kube_controllers" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$port" --cert-dir "$dir/controller-manager-certs"
  kube_wait kube-controller-manager "${kube_pids[-1]}" "$dir/controller-manager.log" \
    curl -sfk "https://127.0.0.1:$port/healthz" || return 1

  port=$(free_port)
  kube_start "$dir/scheduler.log" "$kube_bin/kube-scheduler" --kubeconfig "$dir/kubeconfig" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$port" --cert-dir "$dir/scheduler-certs"
  kube_wait kube-scheduler "${kube_pids[-1]}" "$dir/scheduler.log" curl -sfk "https://127.0.0.1:$port/healthz" || return 1

  port=$(free_port)
  kube_start "$dir/kwok.log" "$kube_kwok/kwok" --kubeconfig "$dir/kubeconfig" --config "$kube_kwok/stages.yaml" \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --node-lease-duration-seconds 40 \
    --cidr 10.244.0.0/16 --node-ip 127.0.0.1 --server-address "127.0.0.1:$port"
  kube_wait kwok "${kube_pids[-1]}" "$dir/kwok.log" curl -sf "http://127.0.0.1:$port/healthz" || return 1
  # Pods can be scheduled once every node is Ready and the node lifecycle
  # controller has lifted the taint the API server gives a new node.
  kube_wait "the kwok nodes (Ready, untainted)" "${kube_pids[-1]}" "$dir/kwok.log" kube_nodes_ready || return 1
}

start_kube() {
  root=${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
  kube_build || return 1
  kube_dir=$(mktemp -d /tmp/tend-kube.XXXXXX)
  cleanups+=(kube_stop)
  openssl genrsa -out "$kube_dir/sa.key" 2048 2>/dev/null || return 1
  openssl rsa -in "$kube_dir/sa.key" -pubout -out "$kube_dir/sa.pub" 2>/dev/null || return 1
  kube_token=$(openssl rand -hex 24)
  echo "$kube_token,tend-admin,tend-admin,system:masters" >"$kube_dir/tokens.csv"

  kube_control_plane "$kube_dir/store" || return 1
  export TEND_KUBE_STORE_KUBECONFIG="$kube_dir/store/kubeconfig"
  export TEND_KUBE_STORE_ETCD="$kube_etcd_url"
  # Its own key prefix keeps its objects apart; the revision is the etcd's,
  # shared, so the two are not used at the same time.
  kube_apiserver "$kube_dir/store-cached" "$kube_etcd_url" --watch-cache=true --etcd-prefix /registry-cached || return 1
  export TEND_KUBE_STORE_CACHED_KUBECONFIG="$kube_dir/store-cached/kubeconfig"

  kube_cluster "$kube_dir/cluster" || return 1
  export TEND_KUBECONFIG="$kube_dir/cluster/kubeconfig"
  export TEND_KUBE_ETCD="$kube_etcd_url"
  export TEND_KUBE_AUDIT_LOG="$kube_dir/cluster/audit.log"
  export TEND_KUBE_WATCH_TIMEOUT="$kube_watch_timeout"
  echo "Kubernetes $kube_version (etcd $kube_etcd_version, kwok $kube_kwok_version, $kube_nodes nodes) at https://127.0.0.1:$kube_api_port;" \
    "TEND_KUBECONFIG=$TEND_KUBECONFIG, TEND_KUBE_STORE_KUBECONFIG=$TEND_KUBE_STORE_KUBECONFIG, TEND_KUBE_STORE_CACHED_KUBECONFIG=$TEND_KUBE_STORE_CACHED_KUBECONFIG; logs in $kube_dir" >&2
}

# kube_ready succeeds once the API server answers /readyz with "ok".
kube_ready() {
  [ "$(kube_api GET /readyz)" = ok ]
}

# kube_nodes_ready succeeds once $kube_nodes nodes are Ready and none has a
# taint.
kube_nodes_ready() {
  local nodes
  nodes=$(kube_api GET /api/v1/nodes) || return 1
  [ "$(grep -o '"type":"Ready","status":"True"' <<<"$nodes" | wc -l)" -ge "$kube_nodes" ] &&
    ! grep -q '"taints"' <<<"$nodes"
}

# kube_kill stops the processes, the components before the API servers and
# those before etcd.
kube_kill() {
  local p
  for ((p = ${#kube_pids[@]} - 1; p >= 0; p--)); do kill "${kube_pids[p]}" 2>/dev/null || true; done
  for p in "${kube_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  kube_pids=()
}

kube_stop() {
  kube_kill
  [ -n "$kube_dir" ] && rm -rf "$kube_dir"
  kube_dir=""
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  cleanups=()
  start_kube || { kube_kill; echo "the logs are kept in $kube_dir" >&2; exit 1; }
  for v in TEND_KUBECONFIG TEND_KUBE_ETCD TEND_KUBE_AUDIT_LOG TEND_KUBE_STORE_KUBECONFIG TEND_KUBE_STORE_CACHED_KUBECONFIG TEND_KUBE_STORE_ETCD TEND_KUBE_WATCH_TIMEOUT; do
    echo "export $v='${!v}'"
  done
  echo "# stop with: kill ${kube_pids[*]} && rm -rf $kube_dir"
  # Run by hand, the servers outlive this script.
  disown -a
else
  start_kube
fi
