#!/usr/bin/env bash
# Builds the NetworkPolicy engine localkube runs with NETPOL=1:
# sigs.k8s.io/kube-network-policies from the Go module proxy, with
# kube-network-policies.patch applied, once per version and patch, and
# prints the directory that holds it (kube-network-policies).
#
# The patch, and why (docs/localkube.md, "NetworkPolicies enforced"):
# - this machine's kernel has no nft queue expression (CONFIG_NFT_QUEUE
#   unset, no loadable modules): a rule with `queue` fails with ENOENT, and
#   upstream's engine then installs no rule at all. The patched engine
#   queues with xtables' NFQUEUE target through nft_compat, as
#   `iptables-nft -j NFQUEUE` does;
# - upstream's command only reads the in-cluster configuration; the patch
#   adds -kubeconfig, for a host process;
# - upstream parses -disable-nri but never passes it on, and without NRI
#   its lookup of a peer that is no pod (the API server) dereferences nil
#   and kills the engine; the patch passes it on and checks.
#
# Cached under ${DISTCACHE_CACHE:-~/.cache/distcache}/localkube/
# kube-network-policies-<version>-<patch hash>/bin; a complete cache is
# reused without touching the network. Progress goes to stderr, the
# directory to stdout. About 2 minutes cold on 2 cores (2026-12-06).
#
# Usage: bin=$(hack/localkube/netpol-assets.sh)
set -euo pipefail

version=${KUBE_NETWORK_POLICIES_VERSION:-0.8.0}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_file=$here/kube-network-policies.patch
patch_hash=$(sha256sum "$patch_file" | cut -c1-12)
cache=${DISTCACHE_CACHE:-$HOME/.cache/distcache}
bin=$cache/localkube/kube-network-policies-$version-$patch_hash/bin

if [ -x "$bin/kube-network-policies" ]; then
	echo "$bin"
	exit 0
fi
log() { echo "netpol-assets: $*" >&2; }
command -v patch >/dev/null || { log "needs patch(1)"; exit 1; }
mkdir -p "$bin"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
log "building kube-network-policies v$version (patched) from the Go module proxy"
dir=$(cd "$work" && go mod download -json "sigs.k8s.io/kube-network-policies@v$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { log "cannot download sigs.k8s.io/kube-network-policies@v$version"; exit 1; }
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
(cd "$work/src" && patch -p1 --quiet <"$patch_file" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/kube-network-policies" ./cmd) >&2
mv "$work/kube-network-policies" "$bin/kube-network-policies"
echo "$bin"
