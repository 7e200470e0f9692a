#!/usr/bin/env bash
# localkube: a real Kubernetes of one node, or of several (NODES=N), on
# this machine, without a container registry (issue 17, docs/localkube.md): containerd and runc from
# Debian, etcd and the control plane from hack/envtest-assets.sh, kubelet,
# kube-proxy, the controller manager, the scheduler and CoreDNS from
# hack/localkube/assets.sh, images imported from archives.
#
#   localkube.sh up     start everything, wait for the Nodes to be Ready
#                       (NODES=N: N nodes, each in a network namespace)
#   localkube.sh down   stop everything it started (by PID) and restore the host
#   localkube.sh load ARCHIVE...   import image archives into every node's containerd
#   localkube.sh env    print KUBECONFIG=... for the running cluster
#   localkube.sh node-stop N   stop node N's kubelet and kube-proxy (its pods run on)
#   localkube.sh node-cut N    cut node N's namespace off the node network
#   localkube.sh node-start N  undo node-stop and node-cut
#
# NETPOL=1 up makes every node enforce NetworkPolicies: a
# kube-network-policies engine per node, in its network namespace
# (netpol.sh, netpol-assets.sh).
#
# LOCALKUBE_AUDIT=1 makes the API server write an audit log of every
# request (Metadata level) into $LOCALKUBE_DIR/log/audit.log.
#
# Addresses: the node is 192.0.2.10 (TEST-NET-1, on lo), pods 198.18.0.0/24
# on the bridge lkcni0, Services 198.19.0.0/16 (the benchmarking range):
# nothing of a private network. With NODES=N the API server stays at
# 192.0.2.10, node I is 198.51.100.(10+I) (TEST-NET-2) with pods in
# 198.18.I.0/24 (nodes.sh). Needs root.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034 # used by lib.sh
root=$(cd "$here/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

case "${1:-}" in
up) up ;;
down) down ;;
load)
	shift
	load "$@"
	;;
env) echo "KUBECONFIG=$STATE/admin.kubeconfig" ;;
node-stop) node_stop "${2:-}" ;;
node-cut) node_cut "${2:-}" ;;
node-start) node_start "${2:-}" ;;
*)
	echo "usage: $0 up|down|load ARCHIVE...|env|node-stop N|node-cut N|node-start N" >&2
	exit 2
	;;
esac
