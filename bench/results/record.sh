#!/usr/bin/env bash
# Runs one family of the bench module's benchmarks and records the raw output
# in bench/results/NAME.txt, headed by the exact command and the machine's
# load, for cmd/benchdoc to turn into the tables of docs/benchmarks.md.
#
#   bench/results/record.sh workqueue 'RoundTrip|Drain|AddAfter|Lateness|MemoryPerKey' 5
#
# Then regenerate the tables: cd bench && go generate ./cmd/benchdoc
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 NAME BENCH-REGEXP COUNT" >&2; exit 2; }
name=$1 pattern=$2 count=$3
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cmd="go test -run '^\$' -bench '$pattern' -count $count ."
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
before=$(cut -d' ' -f1 /proc/loadavg)
eval "$cmd" | tee "$tmp"
after=$(cut -d' ' -f1 /proc/loadavg)
{
  echo "# command: cd bench && $cmd"
  echo "# machine: $(nproc) vCPUs shared with other builds, load average $before at start and $after at end, $(go env GOVERSION)"
  cat "$tmp"
} >"results/$name.txt"
