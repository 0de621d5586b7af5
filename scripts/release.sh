#!/usr/bin/env bash
# Releases every published module of the repository at one version.
#
#   bash scripts/release.sh [--dry-run] vX.Y.Z
#
# 1. Checks the tree as users will fetch it (scripts/check-modules.sh): every
#    go.mod tidy, the getting-started guide and a program per module building
#    from a module proxy.
# 2. Makes every module require the repository's other modules at vX.Y.Z,
#    and go.work replace them at vX.Y.Z with their directories.
# 3. Tidies the modules in dependency order against a module proxy holding
#    the modules before them at vX.Y.Z, so each go.sum records the checksums
#    the public proxy will serve once the tags are pushed.
#    Before that, records the API snapshot (scripts/api.sh update), so that
#    it holds the API users of this release have.
# 4. Commits, and tags each module as the go command expects for modules in
#    subdirectories: vX.Y.Z, backends/postgres/vX.Y.Z, backends/etcd/vX.Y.Z,
#    backends/kube/vX.Y.Z, console/vX.Y.Z, examples/vX.Y.Z.
# 5. Checks that the tags zip, as the go command will zip them, to the
#    checksums the go.sum files record; if not, removes the tags and the
#    commit.
#
# With --dry-run it does steps 1 to 3 in a copy of the tree, prints the API
# changes since the last snapshot, what it would commit and the tags it would
# create, and changes nothing. Pushing is left to the person releasing; the
# last line prints the command.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/modules.sh
source scripts/modules.sh

dry=false
if [ "${1:-}" = --dry-run ]; then dry=true; shift; fi
version=${1:-}
fail() { printf 'release: %s\n' "$*" >&2; exit 1; }
[[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
  fail "usage: scripts/release.sh [--dry-run] vX.Y.Z (got '${version}')"
[ "${BASH_REMATCH[1]}" = 0 ] || [ "${BASH_REMATCH[1]}" = 1 ] ||
  fail "$version needs a /v${BASH_REMATCH[1]} module path: not supported by this script"
tags=()
for m in "${tend_published[@]}"; do tags+=("$(tag_of "$m" "$version")"); done
for t in "${tags[@]}"; do
  ! git rev-parse -q --verify "refs/tags/$t" >/dev/null || fail "tag $t exists"
done
if ! $dry; then
  [ -z "$(git status --porcelain)" ] || fail "the working tree has changes: commit or stash them first"
fi

echo "=== checking the tree as users will fetch it"
bash scripts/check-modules.sh

echo "=== requiring $version between modules"
work=$(mktemp -d)
trap 'drop_cache "$work/cache"; rm -rf "$work"' EXIT
mkdir -p "$work/tree" "$work/proxy"
stage_tree "$work/tree"
require_version "$work/tree" "$version"
# The snapshot is part of the core module's zip, so it is recorded before
# the checksums are.
bash "$work/tree/scripts/api.sh"
bash "$work/tree/scripts/api.sh" update >/dev/null
for m in "${tend_modules[@]}"; do
  (cd "$work/tree/$m" && with_proxy "$work/proxy" "$work/cache" go mod tidy) ||
    fail "go mod tidy in $m"
  if [[ " ${tend_published[*]} " == *" $m "* ]]; then
    proxy_add "$work/proxy" "$version" "$work/tree" "$m"
  fi
done

changed=(go.work)
for m in "${tend_modules[@]}"; do changed+=("$m/go.mod" "$m/go.sum"); done
changed=("${changed[@]#./}")
if $dry; then
  for f in "${changed[@]}"; do diff -u "$f" "$work/tree/$f" || true; done
  echo "=== dry run: would commit the changes above with the API snapshot, and create the tags ${tags[*]}"
  exit 0
fi
for f in "${changed[@]}" api/*.apidiff; do cp "$work/tree/$f" "$f"; done
git add -- "${changed[@]}" api
git commit -q -m "Release $version"
for t in "${tags[@]}"; do git tag -a -m "tend $version" "$t"; done

echo "=== the tags zip to the checksums the go.sum files record"
if ! (cd scripts/release && GOWORK=off GOFLAGS= go run . -verify "$root" -version "$version" -out "$work/proxy" "${tend_published[@]}"); then
  git tag -d "${tags[@]}" >/dev/null
  git reset -q --keep HEAD~1
  fail "the tags would not serve the modules the go.sum files record: release undone"
fi
echo "=== released $version at $(git rev-parse --short HEAD); publish it with:"
echo "git push origin HEAD ${tags[*]}"
