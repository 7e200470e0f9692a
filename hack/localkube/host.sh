# shellcheck shell=bash
# The host as localkube found it: snapshot records what a node changes on
# the host, restore_host undoes it (docs/localkube.md).
# shellcheck disable=SC2154 # STATE, BRIDGE, ... are set by lib.sh

# iptables_view DIR writes DIR/iptables, the part of DIR's iptables-save
# outputs that a node adds (chains and rules of kube-proxy, the kubelet and
# the CNI plugins, and rules about its address ranges) with counters zeroed
# and empty tables left out: others' rules, and an emptied table, do not
# count.
iptables_view() {
	local dir=$1
	cat "$dir/iptables.full" "$dir/iptables-legacy.full" |
		sed 's/\[[0-9]*:[0-9]*\]/[0:0]/' |
		{ grep -E '^\*|^COMMIT|KUBE|CNI|198\.1[89]\.|lkcni0' || true; } | awk '
			/^\*/ { table = $0; body = ""; next }
			/^COMMIT/ { if (body != "") printf "%s\n%sCOMMIT\n", table, body; next }
			{ body = body $0 "\n" }' >"$dir/iptables"
}

# snapshot DIR records the host state localkube changes: sysctls, the
# addresses of lo and of its own links, its links, routes, mounts and
# network namespaces, iptables, the kubelets' top cgroups, host paths.
snapshot() {
	local dir=$1 s
	mkdir -p "$dir"
	for s in "${SYSCTLS[@]}"; do
		printf '%s=%s\n' "$s" "$(sysctl -n "$s" 2>/dev/null || echo absent)"
	done >"$dir/sysctls"
	ip -o addr show | awk '{print $2, $4}' | { grep -E '^(lo|lkcni0|veth[0-9a-f]{8}|lknodes0|lkn-[0-9]+) ' || true; } | sort >"$dir/addresses"
	ip route show table all | { grep -E "$OURS_ROUTES" || true; } | sort >"$dir/routes"
	find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d 2>/dev/null | { grep -E "$OURS_CGROUPS" || true; } | sort >"$dir/cgroups"
	ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | { grep -E "$OURS_LINKS" || true; } | sort >"$dir/links"
	awk '{print $2}' /proc/mounts | { grep -E "$OURS_MOUNTS" || true; } | sort >"$dir/mounts"
	# Both back ends: kube-proxy and the CNI plugins use `iptables` (nft on
	# Debian 12); other tools here use iptables-legacy.
	iptables-save 2>/dev/null >"$dir/iptables.full"
	iptables-legacy-save 2>/dev/null >"$dir/iptables-legacy.full" || true
	iptables_view "$dir"
	netpol_view "$dir"
	find /run/netns -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | { grep -E "$OURS_NETNS" || true; } | sort >"$dir/netns"
	local p
	for p in "${HOST_PATHS[@]}"; do
		[ -e "$p" ] && echo "$p"
	done >"$dir/paths" || true
}

# with_empty_tables FILE prints an iptables-save FILE with an empty section
# for each table it lacks, so that iptables-restore empties the tables that
# were not there before, too.
with_empty_tables() {
	cat "$1"
	local t
	for t in filter nat mangle raw security; do
		grep -qx "\*$t" "$1" || printf '*%s\nCOMMIT\n' "$t"
	done
}

# restore_host undoes what up changed; each step goes on when one fails, so
# that one leftover does not leave the others (down then reports it).
restore_host() {
	local before=$STATE/before line
	if [ -f "$before/sysctls" ]; then
		while IFS='=' read -r key value; do
			[ "$value" = absent ] || sysctl -qw "$key=$value" || true
		done <"$before/sysctls"
	fi
	# The node network of several nodes: deleting a veth deletes its peer
	# in the node's namespace at once, before the namespace goes.
	for line in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | { grep -E '^lkn-[0-9]+$' || true; }); do
		ip link del "$line" 2>/dev/null || true
	done
	ip link del "$NODES_BRIDGE" 2>/dev/null || true
	# Mounts under the state directory (pod volumes, netns bind mounts).
	awk '{print $2}' /proc/mounts | { grep -E "^($STATE|/run/netns/cni-|/run/netns/lk-node-)" || true; } | sort -r | while read -r line; do
		umount -l "$line" 2>/dev/null || true
	done
	if [ -f "$before/netns" ]; then
		find /run/netns -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | { grep -E "$OURS_NETNS" || true; } | while read -r line; do
			grep -qx "$line" "$before/netns" || rm -f "/run/netns/$line" || log "cannot remove /run/netns/$line"
		done
	fi
	ip link del "$BRIDGE" 2>/dev/null || true
	ip addr del "$NODE_IP/32" dev lo 2>/dev/null || true
	# The chains kube-proxy, the kubelet and the CNI plugins added.
	if [ -f "$before/iptables.full" ]; then
		with_empty_tables "$before/iptables.full" | iptables-restore || log "cannot restore the iptables rules"
	fi
	if [ -f "$before/iptables-legacy.full" ] && command -v iptables-legacy-restore >/dev/null; then
		with_empty_tables "$before/iptables-legacy.full" | iptables-legacy-restore || log "cannot restore the iptables-legacy rules"
	fi
	local cg
	for cg in /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/*/lk-node-*; do
		if [ -d "$cg" ]; then
			find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
		fi
	done
	local p
	for p in "${HOST_PATHS[@]}"; do
		if [ -e "$p" ] && ! grep -qx "$p" "$before/paths"; then
			rm -rf "$p" || log "cannot remove $p"
		fi
	done
}
