#!/usr/bin/env bash
# localkube: a real single-node Kubernetes on this machine, without a
# container registry (issue 17, docs/localkube.md): containerd and runc from
# Debian, etcd and the control plane from hack/envtest-assets.sh, kubelet,
# kube-proxy, the controller manager, the scheduler and CoreDNS from
# hack/localkube/assets.sh, images imported from archives.
#
#   localkube.sh up     start everything, wait for the Node to be Ready
#   localkube.sh down   stop everything it started (by PID) and restore the host
#   localkube.sh load ARCHIVE...   import image archives into its containerd
#   localkube.sh env    print KUBECONFIG=... for the running cluster
#
# LOCALKUBE_AUDIT=1 makes the API server write an audit log of every
# request (Metadata level) into $LOCALKUBE_DIR/log/audit.log.
#
# Addresses: the node is 192.0.2.10 (TEST-NET-1, on lo), pods 198.18.0.0/24
# on the bridge lkcni0, Services 198.19.0.0/16 (the benchmarking range):
# nothing of a private network. Needs root.
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
*)
	echo "usage: $0 up|down|load ARCHIVE...|env" >&2
	exit 2
	;;
esac
