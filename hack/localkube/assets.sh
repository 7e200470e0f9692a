#!/usr/bin/env bash
# Builds the node and control-plane binaries localkube runs besides those of
# envtest (hack/envtest-assets.sh: kube-apiserver, kubectl, etcd):
# kubelet, kube-controller-manager, kube-scheduler and kube-proxy from
# k8s.io/kubernetes, and CoreDNS, from the Go module proxy, once per
# version, and prints the directory that holds them.
#
# Cached under ${DISTCACHE_CACHE:-~/.cache/distcache}/localkube/<versions>/bin;
# a complete cache is reused without touching the network. Progress goes to
# stderr, the directory to stdout. About 15-20 minutes cold on 2 cores.
#
# Usage: bin=$(hack/localkube/assets.sh)
set -euo pipefail

k8s_version=${K8S_VERSION:-1.37.1}
coredns_version=${COREDNS_VERSION:-1.15.0}
cache=${DISTCACHE_CACHE:-$HOME/.cache/distcache}
bin=$cache/localkube/k8s-$k8s_version-coredns-$coredns_version/bin
commands=(kubelet kube-controller-manager kube-scheduler kube-proxy)

complete() {
	local c
	for c in "${commands[@]}" coredns; do
		[ -x "$bin/$c" ] || return 1
	done
}
if complete; then
	echo "$bin"
	exit 0
fi
log() { echo "localkube-assets: $*" >&2; }
# shellcheck source-path=SCRIPTDIR source=../lib/k8s-commands.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/k8s-commands.sh"
mkdir -p "$bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

# The Kubernetes commands.
missing=()
for c in "${commands[@]}"; do
	[ -x "$bin/$c" ] || missing+=("$c")
done
if [ "${#missing[@]}" -gt 0 ]; then
	log "building ${missing[*]} v$k8s_version from the Go module proxy (15-20 minutes cold)"
	build_k8s_commands "$work/k8s" "$bin" "$k8s_version" distcache.local/localkube-k8s "${missing[@]}"
fi

# CoreDNS: its root package is the coredns command.
if [ ! -x "$bin/coredns" ]; then
	log "building CoreDNS v$coredns_version from the Go module proxy"
	mkdir -p "$work/coredns"
	cd "$work/coredns"
	go mod init distcache.local/localkube-coredns >/dev/null 2>&1
	go get "github.com/coredns/coredns@v$coredns_version" >/dev/null 2>&1
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/coredns-bin" github.com/coredns/coredns
	mv "$work/coredns-bin" "$bin/coredns"
fi

complete || { log "incomplete: $bin"; exit 1; }
"$bin/kubelet" --version >&2
echo "$bin"
