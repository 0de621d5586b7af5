#!/usr/bin/env bash
# Keeps the exported API of every published module deliberate.
#
#   bash scripts/api.sh          # compare each module with its snapshot
#   bash scripts/api.sh update   # record the current API as the snapshot
#
# api/<module>.apidiff holds the export data of a module's packages, written
# by golang.org/x/exp/cmd/apidiff. The comparison prints every change and
# fails on an incompatible one (a removed or changed identifier, a method
# added to an interface users implement, ...): a break must come with its
# snapshot update in the same change, where review sees it. Compatible
# changes pass; update the snapshot when a release is cut, so it holds the
# API users have. docs/compatibility.md states the policy.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=scripts/modules.sh
source scripts/modules.sh

apidiff_version=v0.0.0-20260410095643-746e56fc9e2f
bin=${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}/apidiff-$apidiff_version
if [ ! -x "$bin/apidiff" ]; then
  GOWORK=off GOFLAGS= GOBIN="$bin" go install "golang.org/x/exp/cmd/apidiff@$apidiff_version"
fi

mkdir -p api
failed=()
for m in "${tend_published[@]}"; do
  # A command's module exports no API: its interface is its command line,
  # which its golden tests hold.
  case $m in cmd/*) continue ;; esac
  path=$tend_path name=tend
  [ "$m" = . ] || { path=$tend_path/$m; name=${m//\//-}; }
  snapshot=$root/api/$name.apidiff
  if [ "${1:-}" = update ]; then
    (cd "$m" && "$bin/apidiff" -m -w "$snapshot" "$path")
    echo "recorded $path in api/$name.apidiff"
    continue
  fi
  [ -f "$snapshot" ] || { echo "$path: no snapshot (run: bash scripts/api.sh update)"; failed+=("$path"); continue; }
  report=$(cd "$m" && "$bin/apidiff" -m "$snapshot" "$path" 2>&1 | { grep -v '^Ignoring internal package' || true; })
  if [ -n "$report" ]; then printf '%s: changes since the snapshot\n%s\n' "$path" "$report"; fi
  ! grep -q '^Incompatible changes:' <<<"$report" || failed+=("$path")
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "incompatible API changes in: ${failed[*]}" >&2
  echo "If the break is deliberate, record it with 'bash scripts/api.sh update' in the same change." >&2
  exit 1
fi
