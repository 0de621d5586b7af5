# Shell helpers for the repository's modules, shared by scripts/release.sh and
# scripts/check-modules.sh, which source this file.

# The modules of the repository in dependency order (each requires only
# modules before it), and the ones a release publishes: bench measures and is
# never published. cmd/tend is the tend command, installed with go install.
tend_modules=(. backends/postgres backends/etcd backends/kube console cmd/tend examples bench)
tend_published=(. backends/postgres backends/etcd backends/kube console cmd/tend examples)
tend_path=github.com/tendhq/tend

# tag_of MODULE VERSION prints the tag the go command looks for when it
# fetches MODULE (a directory of the repository) at VERSION: nested modules'
# tags carry their directory.
tag_of() {
  if [ "$1" = . ]; then echo "$2"; else echo "$1/$2"; fi
}

# require_version DIR VERSION makes every module in DIR require the
# repository's other modules at VERSION, and the go.work in DIR, if any,
# replace them at VERSION with their directories.
require_version() {
  local dir=$1 version=$2 m req
  for m in "${tend_modules[@]}"; do
    [ "$m" = . ] && continue
    for req in $(cd "$dir/$m" && go mod edit -json | sed -n 's/.*"Path": "\('"${tend_path//\//\\/}"'[^"]*\)".*/\1/p' | sort -u); do
      [ "$req" = "$tend_path/$m" ] && continue
      (cd "$dir/$m" && go mod edit -require="$req@$version")
    done
  done
  [ -f "$dir/go.work" ] || return 0
  local old
  for old in $(cd "$dir" && go work edit -json | sed -n '/"Old"/,/}/s/.*"Path": "\('"${tend_path//\//\\/}"'[^"]*\)".*/\1/p'); do
    m=${old#"$tend_path"}; m=.${m}
    (cd "$dir" && go work edit -dropreplace="$old" -replace="$old@$version=./${m#./}")
  done
}

# stage_tree DIR copies the files of the repository that git tracks or would
# track (the tree a commit of the working tree would hold) into DIR.
stage_tree() {
  local dir=$1
  git ls-files -z --cached --others --exclude-standard |
    xargs -0 -I{} sh -c 'test -e "$1" && cp --parents -P "$1" "$2"' _ {} "$dir"
}

# proxy_add PROXY VERSION TREE MODULE... adds the modules MODULE... of the
# tree in TREE to the file-based module proxy in PROXY at VERSION, zipped as
# the go command zips a tagged module (with the tree's LICENSE in the zip of a
# module that has none).
proxy_add() {
  local proxy=$1 version=$2 tree=$3 dirs=() m
  shift 3
  for m in "$@"; do dirs+=("$tree/$m"); done
  (cd "$(dirname "${BASH_SOURCE[0]}")/release" &&
    GOWORK=off GOFLAGS= go run . -version "$version" -out "$proxy" -license "$tree/LICENSE" "${dirs[@]}")
}

# with_proxy PROXY CACHE COMMAND... runs COMMAND as a user outside the
# repository would run the go command, fetching the repository's modules from
# the file-based proxy in PROXY: no workspace, no GOFLAGS (so -mod=readonly),
# and the checksum database not asked about modules it cannot know, with the
# go command's own setting for private modules. CACHE is the module cache to
# use, fresh so that no copy of an earlier build of the same version is
# reused; modules the machine's own cache holds are read from there.
with_proxy() {
  local proxy=$1 cache=$2
  shift 2
  local main
  main=$(go env GOMODCACHE)
  GOWORK=off GOFLAGS= GOMODCACHE="$cache" GONOSUMDB="$tend_path" \
    GOPROXY="file://$proxy,file://$main/cache/download,$(go env GOPROXY)" "$@"
}

# drop_cache CACHE removes a module cache with_proxy used.
drop_cache() {
  chmod -R u+w "$1" 2>/dev/null || true
  rm -rf "$1"
}
