# shellcheck shell=bash
# Nodes of localkube (docs/localkube.md). Node 0 is the single node of
# `up` without NODES (or NODES=1): the host itself, `localkube` at
# 192.0.2.10. With NODES=N (2..8) there are nodes 1..N instead, each in
# a network namespace lk-node-I with its own containerd, kubelet and
# kube-proxy:
#
#   host bridge lknodes0   198.51.100.1/24 (TEST-NET-2), the API server
#                          stays at 192.0.2.10 on lo
#   node I                 lk-node-I at 198.51.100.(10+I) on eth0, whose
#                          peer lkn-I is a port of lknodes0
#   pods of node I         198.18.I.0/24 on the bridge lkcni0 in lk-node-I
#   zones                  zone-a for odd I, zone-b for even I
#
# Each node routes the others' pod subnets to them over lknodes0, and
# everything else to the host; the host routes each pod subnet to its node
# and the Services (198.19.0.0/16) to the first node not cut off, whose
# kube-proxy leads them on.
# shellcheck disable=SC2154 # STATE, NODE_IP, ... are set by lib.sh
# shellcheck disable=SC2034 # IN_NODE and PROCS are used by lib.sh

NODES_BRIDGE=lknodes0
NODES_HOST_IP=198.51.100.1
NODES_MAX=8

node_count() {
	if [ -f "$STATE/node-count" ]; then
		cat "$STATE/node-count"
	else
		echo "${NODES:-1}"
	fi
}

# node_ids prints the ids of the nodes: 0 alone, or 1..N.
node_ids() {
	local n
	n=$(node_count)
	if [ "$n" -le 1 ]; then echo 0; else seq 1 "$n"; fi
}

node_name() { if [ "$1" = 0 ]; then echo "$NODE_NAME"; else echo "lk-node-$1"; fi; }
node_ip() { if [ "$1" = 0 ]; then echo "$NODE_IP"; else echo "198.51.100.$((10 + $1))"; fi; }
node_subnet() { if [ "$1" = 0 ]; then echo "$POD_SUBNET"; else echo "198.18.$1.0/24"; fi; }
node_gateway() { if [ "$1" = 0 ]; then echo "$POD_GATEWAY"; else echo "198.18.$1.1"; fi; }
node_zone() { if (($1 % 2)); then echo zone-a; else echo zone-b; fi; }
# node_dir is where a node keeps containerd, the kubelet, CNI and logs.
node_dir() { if [ "$1" = 0 ]; then echo "$STATE"; else echo "$STATE/nodes/lk-node-$1"; fi; }
node_socket() { echo "$(node_dir "$1")/containerd/containerd.sock"; }
# proc NAME ID is the name of a node's process in $STATE/pid and log/.
proc() { if [ "$2" = 0 ]; then echo "$1"; else echo "$1-lk-node-$2"; fi; }

# procs NAME ID... sets PROCS, the names of process NAME of nodes ID....
procs() {
	local name=$1 i
	shift
	PROCS=()
	for i; do
		PROCS+=("$(proc "$name" "$i")")
	done
}

# in_node ID sets IN_NODE, the command prefix that runs a program in the
# node's network namespace (nothing for node 0). nsenter joins only the
# network namespace and execs the program, so the PID start records is
# the program's, and the kubelet's mounts are seen by containerd and the
# host.
in_node() {
	IN_NODE=()
	[ "$1" = 0 ] || IN_NODE=(nsenter "--net=/run/netns/lk-node-$1" --)
}

# check_nodes validates NODES, and the length of the containerd sockets'
# paths under the state directory.
check_nodes() {
	local n=${NODES:-1} socket
	if ! [[ $n =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt "$NODES_MAX" ]; then
		die "NODES=$n: want 1 to $NODES_MAX"
	fi
	socket=$(node_socket "$n")
	[ "$n" -gt 1 ] || socket=$(node_socket 0)
	[ "${#socket}" -le 107 ] || die "$socket: longer than a Unix socket's path may be (107 bytes); choose a shorter LOCALKUBE_DIR"
}

# node_network makes the node network: the host bridge, one namespace per
# node with its veth, addresses and routes, forwarding in each.
node_network() {
	local i j ns ids ipt
	mapfile -t ids < <(node_ids)
	! ip link show "$NODES_BRIDGE" >/dev/null 2>&1 || die "$NODES_BRIDGE exists: run down first"
	# What one node sends another crosses the host's FORWARD chains
	# (bridge-nf-call-iptables); localkube adds no rule there.
	for ipt in iptables iptables-legacy; do
		command -v "$ipt" >/dev/null || continue
		"$ipt" -S FORWARD 2>/dev/null | grep -qx -- '-P FORWARD ACCEPT' ||
			log "warning: $ipt's FORWARD policy is not ACCEPT: nodes may not reach each other's pods"
	done
	ip link add "$NODES_BRIDGE" type bridge
	ip addr add "$NODES_HOST_IP/24" dev "$NODES_BRIDGE"
	ip link set "$NODES_BRIDGE" up
	for i in "${ids[@]}"; do
		ns=lk-node-$i
		ip netns add "$ns"
		ip link add "lkn-$i" type veth peer name eth0 netns "$ns"
		ip link set "lkn-$i" master "$NODES_BRIDGE" up
		ip -n "$ns" link set lo up
		ip -n "$ns" addr add "$(node_ip "$i")/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$ns" route add default via "$NODES_HOST_IP"
		for j in "${ids[@]}"; do
			[ "$j" = "$i" ] || ip -n "$ns" route add "$(node_subnet "$j")" via "$(node_ip "$j")"
		done
		# Namespaces start with forwarding off; the bridge netfilter
		# setting is per namespace too.
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
		ip route add "$(node_subnet "$i")" via "$(node_ip "$i")"
	done
	route_services
}

# route_services routes the Service range from the host to the first node
# whose link is up, or nowhere when every node is cut off.
route_services() {
	local i
	for i in $(node_ids); do
		if ip -o link show "lkn-$i" 2>/dev/null | grep -q '[<,]UP[,>]'; then
			ip route replace "$SERVICE_CIDR" via "$(node_ip "$i")"
			return
		fi
	done
	ip route del "$SERVICE_CIDR" 2>/dev/null || true
}

# node_cgroups makes the cgroup the kubelet of node ID puts its pods under
# (cgroupRoot /lk-node-ID), in every hierarchy, cpuset filled in.
node_cgroups() {
	local cg
	for cg in /sys/fs/cgroup/*/; do
		mkdir -p "$cg/lk-node-$1"
		if [ -f "$cg/cpuset.cpus" ]; then
			cat "$cg/cpuset.cpus" >"$cg/lk-node-$1/cpuset.cpus"
			cat "$cg/cpuset.mems" >"$cg/lk-node-$1/cpuset.mems"
		fi
	done
}

# node_number checks that $1 names a running node of several.
node_number() {
	[ "$(node_count)" -gt 1 ] || die "node commands need a localkube of several nodes (NODES=N up)"
	if ! [[ ${1:-} =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ] || [ "$1" -gt "$(node_count)" ]; then
		die "no node ${1:-}: nodes are 1 to $(node_count)"
	fi
}

# node_stop stops the kubelet and kube-proxy of node ID, by PID; its
# containers keep running, as when a kubelet dies.
node_stop() {
	node_number "$1"
	stop "$(proc kube-proxy "$1")"
	stop "$(proc kubelet "$1")"
}

# node_cut takes node ID's link to the host bridge down: the node, its
# kubelet and its pods reach nothing outside it, and nothing reaches them.
node_cut() {
	node_number "$1"
	ip link set "lkn-$1" down
	route_services
	log "cut off lk-node-$1"
}

# node_start undoes node_stop and node_cut.
node_start() {
	node_number "$1"
	ip link set "lkn-$1" up
	route_services
	running "$(proc kubelet "$1")" && running "$(proc kube-proxy "$1")" &&
		{ ! netpol_on || running "$(proc kube-network-policies "$1")"; } && return
	preflight
	running "$(proc kubelet "$1")" || kubelet_ "$1"
	running "$(proc kube-proxy "$1")" || proxy_ "$1"
	! netpol_on || running "$(proc kube-network-policies "$1")" || netpol_ "$1"
}

# running NAME says whether the process started as NAME runs.
running() {
	local pid
	pid=$(cat "$STATE/pid/$1" 2>/dev/null) && kill -0 "$pid" 2>/dev/null
}

# node_sweep ID kills the processes left in node ID's cgroup, containers
# whose shim went first, by their PIDs there: only the node's containerd
# and its runc put processes under /lk-node-ID.
node_sweep() {
	[ "$1" = 0 ] && return 0
	local pids try
	for ((try = 0; try < 50; try++)); do
		pids=$(find /sys/fs/cgroup/*/lk-node-"$1" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
		[ -z "$pids" ] && return 0
		[ "$try" -gt 0 ] || log "killing what is left in lk-node-$1's cgroup: $(echo "$pids" | tr '\n' ' ')"
		# shellcheck disable=SC2086 # one PID a word
		kill -KILL $pids 2>/dev/null || true
		sleep 0.2
	done
	log "processes left in lk-node-$1's cgroup: $pids"
}
