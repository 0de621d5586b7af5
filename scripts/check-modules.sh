#!/usr/bin/env bash
# Checks the repository's modules from the seat of a user who has never seen
# the repository: they are served, at a pre-release version, by a file-based
# module proxy built from the working tree as its release would publish them,
# and fetched with `go get` into empty modules, with no workspace, no
# GOFLAGS (so the go command's default -mod=readonly) and a fresh module cache.
#
#   bash scripts/check-modules.sh      # scripts/test.sh runs it
#
# It fails when:
#   - a module's go.mod holds a replace directive, which users' builds ignore;
#   - a module's go.mod or go.sum is not tidy (`go mod tidy` would change it),
#     checked against the proxy, since modules require each other by version;
#   - the getting-started guide, followed command by command, does not build,
#     run and print what it shows, or its test does not pass;
#   - a program using a backend module or the console, or a command of the
#     examples module, does not build after `go get` of that module;
#   - the tend command does not install with `go install …@version`, or does
#     not run.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/modules.sh
source scripts/modules.sh
version=${TEND_CHECK_VERSION:-v0.1.0-check}

work=$(mktemp -d)
trap 'drop_cache "$work/cache"; rm -rf "$work"' EXIT
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

echo "--- the tree as release $version, served by a module proxy in $work/proxy"
mkdir -p "$work/tree" "$work/proxy"
stage_tree "$work/tree"
require_version "$work/tree" "$version"
proxy_add "$work/proxy" "$version" "$work/tree" "${tend_published[@]}"
user() { with_proxy "$work/proxy" "$work/cache" "$@"; }

echo "--- modules require each other by version, with no replace directive"
for m in "${tend_modules[@]}"; do
  # A dependent's build ignores replace directives: a tree that builds only
  # through them does not build for users. go.work ties the tree together.
  replaces=$(cd "$m" && go mod edit -json | sed -n '/"Replace"/,$p' | grep '"Path"' || true)
  [ -z "$replaces" ] || fail "$m/go.mod has replace directives (use go.work):
$replaces"
done

echo "--- every go.mod and go.sum is tidy"
for m in "${tend_modules[@]}"; do
  # go.sum lines of the repository's own modules name versions whose
  # checksums change with every commit until they are released: ignored.
  rc=0
  out=$(cd "$work/tree/$m" && user go mod tidy -diff 2>&1) || rc=$?
  diff=$(grep -E '^[-+]' <<<"$out" | grep -vE '^(\+\+\+|---) ' || true)
  [ "$rc" = 0 ] || [ -n "$diff" ] || fail "go mod tidy in $m: $out"
  changes=$(grep -v "^[-+]$tend_path[/ ]" <<<"$diff" || true)
  [ -z "$changes" ] || fail "go mod tidy would change $m/go.mod or go.sum (run it there):
$changes"
done

# block LANG N prints the Nth fenced block of language LANG in the guide.
guide=$root/docs/getting-started.md
block() {
  awk -v lang="$1" -v n="$2" '
    /^```/ { if (inside) { inside = 0; next } if ($0 == "```" lang) { count++; if (count == n) inside = 1 } next }
    inside { print }' "$guide"
}
run_block() {
  local commands
  commands=$(block sh "$1")
  [ -n "$commands" ] || fail "$guide has no shell block $1"
  printf '$ %s\n' "$commands"
  user bash -euo pipefail -c "$commands"
}

echo "--- $guide, as written"
mkdir -p "$work/user"
cd "$work/user"
run_block 1 >/dev/null || fail "$guide: installing failed"
cd hello
block go 1 >main.go
grep -q '^package main' main.go || fail "$guide: its first Go block is not the program"
out=$(run_block 2) || fail "$guide: the program does not build or run:
$out"
want=$(block output 1)
[ "$(sed -n '/^\$/!p' <<<"$out" | tail -n "$(wc -l <<<"$want")")" = "$want" ] ||
  fail "$guide: the program printed
$out
but the guide shows
$want"
block go 2 >main_test.go
run_block 3 >/dev/null || fail "$guide: the program's test fails"
echo "ok"

# A small program per backend module, built after `go get` of that module
# alone.
program() {
  local name=$1 pkg=$2
  echo "--- go get $pkg"
  mkdir -p "$work/user/$name"
  cd "$work/user/$name"
  cat >main.go
  user go mod init "example.com/$name" >/dev/null 2>&1
  user go get "$pkg@$version" 2>&1 | grep -v '^go: \(downloading\|added\|upgraded\)' || true
  user go build -o /dev/null . || fail "a program using $pkg does not build after go get"
  echo "ok"
}

program postgres "$tend_path/backends/postgres" <<'GO'
package main

import (
	"context"
	"log"
	"os"

	"github.com/tendhq/tend/backends/postgres"
	"github.com/tendhq/tend/store"
)

func main() {
	ctx := context.Background()
	backend, err := postgres.New(ctx, postgres.Config{URL: os.Getenv("DATABASE_URL"), Kinds: []string{"Server"}})
	if err != nil {
		log.Fatal(err)
	}
	defer backend.Close()
	var _ store.Backend = backend
}
GO

program etcd "$tend_path/backends/etcd" <<'GO'
package main

import (
	"log"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tendhq/tend/backends/etcd"
	"github.com/tendhq/tend/store"
)

func main() {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	backend, err := etcd.New(etcd.Config{Client: client, Kinds: []string{"Server"}})
	if err != nil {
		log.Fatal(err)
	}
	var _ store.Backend = backend
}
GO

program kube "$tend_path/backends/kube" <<'GO'
package main

import (
	"log"
	"os"

	"k8s.io/client-go/rest"

	"github.com/tendhq/tend/backends/kube"
	"github.com/tendhq/tend/store"
)

func main() {
	backend, err := kube.New(kube.Config{REST: &rest.Config{Host: os.Getenv("KUBE_API")}, Kinds: []string{"Server"}})
	if err != nil {
		log.Fatal(err)
	}
	var _ store.Backend = backend
}
GO

program console "$tend_path/console" <<'GO'
package main

import (
	"log"
	"net/http"

	"github.com/tendhq/tend/backends/memory"
	"github.com/tendhq/tend/console"
	"github.com/tendhq/tend/registry"
)

func main() {
	st, err := memory.New(memory.Config{Kinds: append([]string{"Server"}, registry.Kinds()...)})
	if err != nil {
		log.Fatal(err)
	}
	c, err := console.New(console.Config{Store: st, Prefix: "/console/"})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/console/", c)
}
GO

for cmd in gateway workspace raftcluster; do
  echo "--- go get $tend_path/examples/$cmd"
  mkdir -p "$work/user/examples-$cmd"
  cd "$work/user/examples-$cmd"
  user go mod init "example.com/$cmd" >/dev/null 2>&1
  user go get "$tend_path/examples/$cmd@$version" 2>&1 | grep -v '^go: \(downloading\|added\|upgraded\)' || true
  user go build -o /dev/null "$tend_path/examples/$cmd" || fail "the $cmd example does not build after go get"
  echo "ok"
done

echo "--- go install $tend_path/cmd/tend@$version"
# As the command's README tells users: no module of their own, no go.mod.
cd "$work/user"
user env GOBIN="$work/bin" go install "$tend_path/cmd/tend@$version" 2>&1 |
  grep -v '^go: \(downloading\|added\|upgraded\)' || true
[ -x "$work/bin/tend" ] || fail "the tend command does not install with go install $tend_path/cmd/tend@$version"
"$work/bin/tend" --help >/dev/null || fail "tend --help fails once installed"
rc=0
env -u TEND_STORE "$work/bin/tend" get >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "tend get without a store exits with $rc, want 2 (usage)"
echo "ok"
