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
# shellcheck source-path=SCRIPTDIR source=lib/k8s-commands.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/k8s-commands.sh"
mkdir -p "$bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

# kube-apiserver and kubectl.
if [ ! -x "$bin/kube-apiserver" ] || [ ! -x "$bin/kubectl" ]; then
	log "building kube-apiserver and kubectl v$k8s_version from the Go module proxy (a few minutes)"
	build_k8s_commands "$work/k8s" "$bin" "$k8s_version" distcache.local/envtest-k8s kube-apiserver kubectl
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
