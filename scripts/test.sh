#!/usr/bin/env bash
# Runs every check and every test of every tend module, as CI does.
#
#   make test          # or: bash scripts/test.sh
#
# It installs and starts the real servers the tests need, and stops them after.
# Heavy tools (kube-apiserver, etcd, versitygw) are built once per pinned version
# into $TEND_CACHE (default ~/.cache/tend), outside the checkout, so every clone
# on a machine reuses them.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
export TEND_CACHE="${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}"

# Modules, in dependency order. Each is tested in its own directory.
modules=(.)
for m in bench backends/postgres backends/etcd backends/kube console cmd/tend examples; do
  [ -f "$m/go.mod" ] && modules+=("$m")
done

step() { printf '\n=== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

step "gofmt"
unformatted=$(find . -name '*.go' -not -path './.cache/*' -print0 | xargs -0 gofmt -l)
[ -z "$unformatted" ] || fail "gofmt would change: $unformatted"

step "core module stays free of heavy dependencies"
heavy='^(k8s\.io/|sigs\.k8s\.io/|go\.etcd\.io/etcd|github\.com/jackc/pgx|github\.com/lib/pq|github\.com/go-sql-driver|github\.com/mattn/go-sqlite3|modernc\.org/sqlite|go\.mongodb\.org/)'
found=$( { GOWORK=off go list -deps -test ./...; GOWORK=off go list -m all; } | grep -E "$heavy" || true)
[ -z "$found" ] || fail "the core module depends on: $found"

step "building blocks import only the standard library, golang.org/x, store and their own internal packages"
for p in workqueue statemachine expectations finalizer informer; do
  extra=$(GOWORK=off go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' "./$p" |
    grep -v -E '^(golang\.org/x/|github\.com/tendhq/tend/(store|internal/wait|'"$p"'|'"$p"'/internal/.+)$)' || true)
  [ -z "$extra" ] || fail "importing $p pulls in: $extra"
done

step "every module, fetched with go get from a user's empty module"
bash scripts/check-modules.sh || fail "the modules as users fetch them"

step "no incompatible API change without its snapshot"
bash scripts/api.sh || fail "the exported API (see docs/compatibility.md)"

step "go vet"
for m in "${modules[@]}"; do (cd "$m" && go vet ./...) || fail "go vet in $m"; done

# Real servers: each start_* function exports what the tests need and registers
# its own cleanup.
cleanups=()
cleanup() { for c in "${cleanups[@]}"; do $c || true; done; }
trap cleanup EXIT
for s in scripts/servers/*.sh; do
  [ -f "$s" ] || continue
  # shellcheck source=/dev/null
  source "$s"
done

step "go test -race"
for m in "${modules[@]}"; do
  (cd "$m" && go test -race -count=1 -timeout 20m ./...) || fail "tests in $m"
done

step "driver harnesses at full length, without the race detector"
# Under -race the gateway's harness runs a fifth of its 1,000 runs (the race
# detector makes each several times slower); here it runs them all.
(cd examples && go test -count=1 -timeout 20m -run '^TestGatewayDriverHarness$' ./gateway/platform) || fail "the gateway driver harness"

step "fuzz targets"
# Budgets are counts of inputs, not durations: with a duration, Go 1.26's fuzzing
# coordinator can report its own deadline as a failure when the time runs out
# (golang/go#75804). Each count is about half a minute on a two-core machine.
# TEND_FUZZTIME overrides every budget (e.g. 10m or 1000000x for a long run).
# module directory, package, target, budget
fuzz_targets=(
  ". ./store FuzzParseSelector 300000x"
  ". ./statemachine FuzzParseDescriptor 40000x"
  ". ./store/backend FuzzDecodeContinue 100000x"
  "examples ./workspace/archive FuzzExtract 10000x"
  "examples ./workspace/archive FuzzRoundTrip 1500x"
)
for f in "${fuzz_targets[@]}"; do
  read -r m pkg target budget <<<"$f"
  (cd "$m" && go test -run '^$' -fuzz "^$target\$" -fuzztime "${TEND_FUZZTIME:-$budget}" -fuzzminimizetime 100x "$pkg") || fail "fuzzing $target"
done

if [ -f bench/go.mod ]; then
  step "benchmarks compile and run once"
  (cd bench && go test -run '^$' -bench . -benchtime 1x ./...) || fail "benchmarks"
fi

step "the README's first command, exactly as written"
demo=$(sed -n 's/^\(go run [^#]*[^ #]\) *#.*main demo.*/\1/p' README.md)
[ -n "$demo" ] || fail "README.md no longer shows the demo command"
echo "$demo"
bash -c "$demo" >/dev/null || fail "the README's demo command failed: $demo"

step "all checks passed"
