# shellcheck shell=bash
# NetworkPolicies enforced on localkube's nodes (NETPOL=1 up,
# docs/localkube.md): sigs.k8s.io/kube-network-policies, built by
# netpol-assets.sh, runs per node as a host process in the node's network
# namespace, as the kubelet does. It sends the first packet of every
# connection to or from a pod that a NetworkPolicy selects to an nfqueue,
# and lets it through, or drops it, by the policies.
# shellcheck disable=SC2154 # STATE, root, CACHE, ... are set by lib.sh

# NETPOL_QUEUE is the nfqueue the engine reads; queues are per network
# namespace.
NETPOL_QUEUE=100
# NETPOL_TABLE is the nftables table the engine keeps (upstream's name).
NETPOL_TABLE=kube-network-policies

# netpol_on says whether this localkube enforces NetworkPolicies: what up
# wrote down, or NETPOL before up.
netpol_on() {
	if [ -f "$STATE/netpol" ]; then
		[ "$(cat "$STATE/netpol")" = 1 ]
	else
		[ "${NETPOL:-0}" = 1 ]
	fi
}

# netpol_preflight installs nftables (nft, to list and delete the
# engine's table) and builds the engine, setting NETPOL_BIN.
netpol_preflight() {
	netpol_on || return 0
	if ! command -v nft >/dev/null; then
		log "installing nftables"
		local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
		"${apt[@]}" install -y nftables >&2 || { "${apt[@]}" update >&2 && "${apt[@]}" install -y nftables >&2; }
	fi
	NETPOL_BIN=$(cd "$root" && DISTCACHE_CACHE="$CACHE" hack/localkube/netpol-assets.sh)
}

# netpol_ ID starts node ID's policy engine in the node's network
# namespace. Fail closed: while it is not running, the packets it would
# judge are dropped. Its metrics stay on the namespace's loopback.
netpol_() {
	netpol_on || return 0
	in_node "$1"
	start "$(proc kube-network-policies "$1")" "${IN_NODE[@]}" "$NETPOL_BIN/kube-network-policies" \
		-kubeconfig "$STATE/admin.kubeconfig" -hostname-override "$(node_name "$1")" \
		-nfqueue-id "$NETPOL_QUEUE" -disable-nri -metrics-bind-address 127.0.0.1:9080 -v 2
}

# netpol_ready says whether the engine of every node has put its table
# in place.
netpol_ready() {
	local i
	for i in $(node_ids); do
		if [ "$i" = 0 ]; then
			nft list table inet "$NETPOL_TABLE" || return 1
		else
			ip netns exec "lk-node-$i" nft list table inet "$NETPOL_TABLE" || return 1
		fi
	done
}

# netpol_down deletes the engine's table from the host (node 0: the node
# is the host). A node's namespace takes its table with it.
netpol_down() {
	command -v nft >/dev/null || return 0
	if nft list table inet "$NETPOL_TABLE" >/dev/null 2>&1; then
		nft delete table inet "$NETPOL_TABLE" || log "cannot delete the nftables table $NETPOL_TABLE"
	fi
}

# netpol_view DIR writes DIR/nftables: whether the engine's table is on
# the host.
netpol_view() {
	if command -v nft >/dev/null; then
		nft list tables 2>/dev/null | { grep -x "table inet $NETPOL_TABLE" || true; }
	fi >"$1/nftables"
}
