#!/usr/bin/env bash
# Builds the node and control-plane binaries localkube runs besides those of
# envtest (hack/envtest-assets.sh: kube-apiserver, kubectl, etcd):
# kubelet, kube-controller-manager, kube-scheduler and kube-proxy from
# k8s.io/kubernetes, and CoreDNS with the plugins localkube's Corefile uses
# (coredns-localkube), from the Go module proxy, once per version, and
# prints the directory that holds them.
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
	for c in "${commands[@]}" coredns-localkube; do
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

# CoreDNS with the plugins of localkube's Corefile (hack/localkube/lib.sh)
# only, in their order of CoreDNS's plugin.cfg: its own command links every
# plugin, the cloud providers' SDKs among them, and took a third longer to
# build from an empty build cache (1m45s against 2m46s on 2 cores).
if [ ! -x "$bin/coredns-localkube" ]; then
	log "building CoreDNS v$coredns_version (bind, errors, cache, kubernetes) from the Go module proxy"
	mkdir -p "$work/coredns"
	cd "$work/coredns"
	go mod init distcache.local/localkube-coredns >/dev/null 2>&1
	cat >main.go <<'GO'
// Command coredns-localkube is CoreDNS with the plugins of localkube's Corefile.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

func init() { dnsserver.Directives = []string{"bind", "errors", "cache", "kubernetes"} }

func main() { coremain.Run() }
GO
	go get "github.com/coredns/coredns/coremain@v$coredns_version" "github.com/coredns/coredns/plugin/kubernetes@v$coredns_version" >/dev/null 2>&1
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/coredns-bin" .
	mv "$work/coredns-bin" "$bin/coredns-localkube"
fi

complete || { log "incomplete: $bin"; exit 1; }
"$bin/kubelet" --version >&2
echo "$bin"
