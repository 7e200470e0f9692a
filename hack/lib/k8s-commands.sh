# shellcheck shell=bash
# build_k8s_commands WORK BIN VERSION MODULE COMMAND...: builds each
# k8s.io/kubernetes command at VERSION from the Go module proxy into BIN,
# in a module named MODULE under WORK, stamped with the version as the
# release build is. k8s.io/kubernetes refers to its staging modules
# (k8s.io/api, ...) by local path, so the building module pins every one to
# the matching v0 release, and gets each command package so that go.sum
# has what it imports. Used by hack/envtest-assets.sh and
# hack/localkube/assets.sh; the caller sets GOFLAGS=-mod=mod and defines log.
build_k8s_commands() {
	local work=$1 bin=$2 version=$3 module=$4
	shift 4
	mkdir -p "$work"
	(
		cd "$work" || exit 1
		go mod init "$module" >/dev/null 2>&1
		local gomod
		gomod=$(go mod download -json "k8s.io/kubernetes@v$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
		[ -f "$gomod" ] || { log "cannot download k8s.io/kubernetes@v$version"; exit 1; }
		go mod edit -require "k8s.io/kubernetes@v$version"
		local m c
		# Module paths hold no spaces: one word per module.
		# shellcheck disable=SC2013
		for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod"); do
			go mod edit -replace "$m=$m@v0.${version#1.}"
		done
		for c in "$@"; do
			go get "k8s.io/kubernetes/cmd/$c@v$version" >/dev/null 2>&1
		done
		local minor=${version#1.}
		minor=${minor%%.*}
		local ldflags="-s -w" v
		for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			ldflags="$ldflags -X $v.gitVersion=v$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
		done
		# One build for every command: the linker of one runs while the
		# compiler works for the others.
		local pkgs=()
		for c in "$@"; do
			pkgs+=("k8s.io/kubernetes/cmd/$c")
		done
		log "building $*"
		mkdir -p "$work/out"
		CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/out/" "${pkgs[@]}"
		for c in "$@"; do
			mv "$work/out/$c" "$bin/"
		done
	)
}
