#!/usr/bin/env bash
# Builds the control-plane binaries envtest runs (kube-apiserver, kubectl and
# etcd) from the Go module proxy, once per version, and prints the directory
# that holds them: use it as KUBEBUILDER_ASSETS. The usual download by
# setup-envtest needs a storage bucket this project's machines cannot reach.
#
# Cached under ${DISTCACHE_CACHE:-~/.cache/distcache}/envtest/<versions>/bin;
# a complete cache is reused without touching the network. Progress goes to
# stderr, the directory to stdout.
#
# Usage: KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)
set -euo pipefail

k8s_version=${K8S_VERSION:-1.37.1}
etcd_version=${ETCD_VERSION:-3.7.0}
cache=${DISTCACHE_CACHE:-$HOME/.cache/distcache}
dir=$cache/envtest/k8s-$k8s_version-etcd-$etcd_version
bin=$dir/bin

if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/etcd" ] && [ -x "$bin/kubectl" ]; then
	echo "$bin"
	exit 0
fi
log() { echo "envtest-assets: $*" >&2; }
mkdir -p "$bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

# kube-apiserver and kubectl: k8s.io/kubernetes refers to its staging
# modules (k8s.io/api, …) by local path, so a module that requires it must
# pin every one of them to the matching v0 release.
if [ ! -x "$bin/kube-apiserver" ] || [ ! -x "$bin/kubectl" ]; then
	log "building kube-apiserver and kubectl v$k8s_version from the Go module proxy (a few minutes)"
	mkdir -p "$work/k8s"
	cd "$work/k8s"
	go mod init distcache.local/envtest-k8s >/dev/null 2>&1
	gomod=$(go mod download -json "k8s.io/kubernetes@v$k8s_version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
	[ -f "$gomod" ] || { log "cannot download k8s.io/kubernetes@v$k8s_version"; exit 1; }
	go mod edit -require "k8s.io/kubernetes@v$k8s_version"
	staging_version=0.${k8s_version#1.}
	# Module paths hold no spaces: one word per module.
	# shellcheck disable=SC2013
	for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod"); do
		go mod edit -replace "$m=$m@v$staging_version"
	done
	minor=${k8s_version#1.}
	minor=${minor%%.*}
	ldflags="-s -w"
	for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags="$ldflags -X $v.gitVersion=v$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
	done
	CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
	CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$work/kubectl" k8s.io/kubernetes/cmd/kubectl
	mv "$work/kube-apiserver" "$work/kubectl" "$bin/"
fi

# etcd: the root package of go.etcd.io/etcd/server/v3 is etcd's main.
if [ ! -x "$bin/etcd" ]; then
	log "building etcd v$etcd_version from the Go module proxy"
	mkdir -p "$work/etcd"
	cd "$work/etcd"
	go mod init distcache.local/envtest-etcd >/dev/null 2>&1
	go mod edit -require "go.etcd.io/etcd/server/v3@v$etcd_version"
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/etcd-bin" go.etcd.io/etcd/server/v3
	mv "$work/etcd-bin" "$bin/etcd"
fi

"$bin/kube-apiserver" --version >&2
"$bin/etcd" --version | head -1 >&2
echo "$bin"
