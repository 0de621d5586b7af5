#!/usr/bin/env bash
# Runs one family of benchmarks and records the raw output in
# bench/results/NAME.txt, headed by the exact command and the machine's load,
# for cmd/benchdoc to turn into the tables of docs/benchmarks.md.
#
#   bench/results/record.sh workqueue 'RoundTrip|Drain|AddAfter|Lateness|MemoryPerKey' 5
#
# The benchmarks are those of the bench module, unless PACKAGES names others:
# go test package patterns, run from the repository root (go.work ties the
# modules together):
#
#   bench/results/record.sh cascade 'Cascade' 5 './cascade ./examples/gateway/platform'
#
# Then regenerate the tables: cd bench && go generate ./cmd/benchdoc
set -euo pipefail
[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: $0 NAME BENCH-REGEXP COUNT [PACKAGES]" >&2; exit 2; }
name=$1 pattern=$2 count=$3 packages=${4:-}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out="$root/bench/results/$name.txt"
cmd="go test -run '^\$' -bench '$pattern' -count $count "
if [ -z "$packages" ]; then
  cd "$root/bench"
  cmd+="."
  shown="cd bench && $cmd"
else
  cd "$root"
  cmd+="$packages"
  shown="$cmd"
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
before=$(cut -d' ' -f1 /proc/loadavg)
eval "$cmd" | tee "$tmp"
after=$(cut -d' ' -f1 /proc/loadavg)
{
  echo "# command: $shown"
  echo "# machine: $(nproc) vCPUs shared with other builds, load average $before at start and $after at end, $(go env GOVERSION)"
  cat "$tmp"
} >"$out"
