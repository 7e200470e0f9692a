# shellcheck shell=bash
# The functions of localkube.sh. $root is the repository.
# shellcheck disable=SC2154 # root is set by localkube.sh

STATE=${LOCALKUBE_DIR:-/var/lib/distcache-localkube}
CACHE=${DISTCACHE_CACHE:-$HOME/.cache/distcache}
NODE_NAME=localkube
NODE_IP=192.0.2.10
POD_SUBNET=198.18.0.0/24
POD_GATEWAY=198.18.0.1
SERVICE_CIDR=198.19.0.0/16
API_SERVICE_IP=198.19.0.1
DNS_SERVICE_IP=198.19.0.10
BRIDGE=lkcni0
API_PORT=6443
ETCD_PORT=23790
# Host paths the kubelet and containerd create whatever their root
# directories (device plugins, container log links, plugin binaries): down
# removes those that were not there before up.
HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /opt/containerd /run/containerd /var/lib/cni /etc/cni)
# Names of what localkube may create among what others on the host (tests
# running beside it) create too: only these are compared and cleaned up.
OURS_LINKS='^(lkcni0|veth[0-9a-f]{8}|lknodes0|lkn-[0-9]+)$'
OURS_MOUNTS="^($STATE|/run/netns/cni-|/run/netns/lk-node-|/var/lib/kubelet|/run/containerd|/var/lib/cni)"
OURS_NETNS='^(cni-|lk-node-)'
# Routes through localkube's links, or to its pods and Services.
OURS_ROUTES='^198\.1[89]\.|dev (lkcni0|lknodes0|lkn-[0-9]+)( |$)'
# The cgroups the kubelets make at the top of each hierarchy.
OURS_CGROUPS='^/sys/fs/cgroup/[^/]+/(kubepods|lk-node-)'
# The sysctls the kubelet and kube-proxy set, restored by down.
SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward
	net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables)

# shellcheck source-path=SCRIPTDIR source=nodes.sh
. "$(dirname "${BASH_SOURCE[0]}")/nodes.sh"
# shellcheck source-path=SCRIPTDIR source=host.sh
. "$(dirname "${BASH_SOURCE[0]}")/host.sh"
# shellcheck source-path=SCRIPTDIR source=netpol.sh
. "$(dirname "${BASH_SOURCE[0]}")/netpol.sh"

log() { printf 'localkube: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

preflight() {
	[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, cgroups, mounts): run as root"
	[ "$(uname -s)" = Linux ] || die "needs Linux"
	local missing=()
	for c in containerd runc ctr conntrack socat iptables-save openssl ip; do
		command -v "$c" >/dev/null || missing+=("$c")
	done
	[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
	if [ "${#missing[@]}" -gt 0 ]; then
		command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
		log "installing containerd runc containernetworking-plugins conntrack socat iptables openssl"
		local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
		"${apt[@]}" install -y containerd runc containernetworking-plugins conntrack socat iptables openssl >&2 ||
			{ "${apt[@]}" update >&2 && "${apt[@]}" install -y containerd runc containernetworking-plugins conntrack socat iptables openssl >&2; }
	fi
	ENVTEST_BIN=$(cd "$root" && DISTCACHE_CACHE="$CACHE" hack/envtest-assets.sh)
	NODE_BIN=$(cd "$root" && DISTCACHE_CACHE="$CACHE" hack/localkube/assets.sh)
	netpol_preflight
}

# start NAME CMD... runs CMD in the background, its output in
# $STATE/log/NAME.log, its PID in $STATE/pid/NAME.
start() {
	local name=$1
	shift
	mkdir -p "$STATE/log" "$STATE/pid"
	"$@" >"$STATE/log/$name.log" 2>&1 &
	echo $! >"$STATE/pid/$name"
	log "started $name (pid $!)"
}

# wait_until WHAT SECONDS CMD... retries CMD every half second.
wait_until() {
	local what=$1 tries=$(($2 * 2)) try
	shift 2
	for ((try = 0; try < tries; try++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	die "timed out waiting for $what (logs in $STATE/log)"
}

pki() {
	local d=$STATE/pki
	[ -f "$d/admin.crt" ] && return
	mkdir -p "$d"
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 7 -subj /CN=localkube-ca 2>/dev/null
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
		cat >apiserver.ext <<EXT
subjectAltName=IP:$NODE_IP,IP:127.0.0.1,IP:$API_SERVICE_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost
extendedKeyUsage=serverAuth
EXT
		openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 7 -extfile apiserver.ext 2>/dev/null
		# One client identity for every component (system:masters): a test
		# cluster on one host, whose only users are this project's tests.
		openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=localkube-admin" 2>/dev/null
		printf 'extendedKeyUsage=clientAuth\n' >client.ext
		openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 7 -extfile client.ext 2>/dev/null
	)
	cat >"$STATE/admin.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: localkube
  cluster: {server: "https://$NODE_IP:$API_PORT", certificate-authority: "$d/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$d/admin.crt", client-key: "$d/admin.key"}
contexts:
- name: localkube
  context: {cluster: localkube, user: admin}
current-context: localkube
KC
}

kubectl_() { "$ENVTEST_BIN/kubectl" --kubeconfig "$STATE/admin.kubeconfig" "$@"; }

# audit sets AUDIT_ARGS, the API server's audit flags: none, or with
# LOCALKUBE_AUDIT=1 a policy that logs every request at the Metadata level
# (who, from which address, which verb on which object; no bodies) when
# its response starts (a watch) and when it completes, as JSON lines in
# $STATE/log/audit.log (hack/apiaudit counts them). Rotated at 512 MB,
# two old files kept.
audit() {
	AUDIT_ARGS=()
	[ "${LOCALKUBE_AUDIT:-0}" = 1 ] || return 0
	mkdir -p "$STATE/log"
	cat >"$STATE/audit-policy.yaml" <<YAML
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
YAML
	AUDIT_ARGS=(--audit-policy-file "$STATE/audit-policy.yaml" --audit-log-path "$STATE/log/audit.log"
		--audit-log-maxsize 512 --audit-log-maxbackup 2)
	log "auditing every API request into $STATE/log/audit.log"
}

control_plane() {
	start etcd "$ENVTEST_BIN/etcd" --data-dir "$STATE/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
		--initial-cluster "default=http://127.0.0.1:$((ETCD_PORT + 10))" --unsafe-no-fsync
	local p=$STATE/pki
	audit
	start kube-apiserver "$ENVTEST_BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
		--bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
		--tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt" \
		--service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
		--service-account-issuer "https://kubernetes.default.svc.cluster.local" \
		--service-cluster-ip-range "$SERVICE_CIDR" --authorization-mode Node,RBAC \
		--kubelet-client-certificate "$p/admin.crt" --kubelet-client-key "$p/admin.key" --kubelet-preferred-address-types InternalIP \
		--enable-admission-plugins NodeRestriction,OwnerReferencesPermissionEnforcement "${AUDIT_ARGS[@]}"
	wait_until "the API server" 120 kubectl_ get --raw /readyz
	start kube-controller-manager "$NODE_BIN/kube-controller-manager" --kubeconfig "$STATE/admin.kubeconfig" \
		--service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" --use-service-account-credentials \
		--service-cluster-ip-range "$SERVICE_CIDR" --leader-elect=false --bind-address 127.0.0.1 \
		--controllers '*,-node-ipam-controller'
	start kube-scheduler "$NODE_BIN/kube-scheduler" --kubeconfig "$STATE/admin.kubeconfig" \
		--leader-elect=false --bind-address 127.0.0.1
}

# containerd_ ID starts node ID's containerd, in its network namespace,
# with its CNI configuration: a bridge lkcni0 for the node's pod subnet.
# Node 0's pods reach other networks masqueraded as the host; the pods of
# several nodes keep their addresses (the nodes route the pod subnets).
containerd_() {
	local dir subnet masq=true
	dir=$(node_dir "$1")
	subnet=$(node_subnet "$1")
	[ "$1" = 0 ] || masq=false
	in_node "$1"
	mkdir -p "$dir/containerd" "$dir/cni/net.d"
	cat >"$dir/containerd/config.toml" <<TOML
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/containerd/opt"
[grpc]
  address = "$(node_socket "$1")"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  # Root here lacks CAP_SYS_RESOURCE: without this every sandbox fails
  # writing /proc/self/oom_score_adj.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
TOML
	cat >"$dir/cni/net.d/10-localkube.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "localkube",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": $masq, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$dir/cni/ipam", "ranges": [[{"subnet": "$subnet", "gateway": "$(node_gateway "$1")"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CNI
	start "$(proc containerd "$1")" "${IN_NODE[@]}" containerd --config "$dir/containerd/config.toml"
	wait_until "$(proc containerd "$1")" 60 ctr -a "$(node_socket "$1")" version
}

# load imports image archives into the containerd of every node.
load() {
	local a i socket
	for i in $(node_ids); do
		socket=$(node_socket "$i")
		[ -S "$socket" ] || die "localkube is not running (no $socket)"
		for a in "$@"; do
			log "importing $a into $(node_name "$i")"
			ctr -a "$socket" -n k8s.io images import --no-unpack=false "$a" >&2
		done
	done
}

# images builds the pause and Redis images (hack/localkube/images) unless
# cached, and imports them.
images() {
	local dir=$CACHE/localkube/images
	if [ ! -f "$dir/pause.tar" ] || [ ! -f "$dir/redis.tar" ]; then
		log "building the pause and Redis images into $dir"
		(cd "$root" && go run ./hack/localkube/images -out "$dir" -created "$(git log -1 --format=%ct 2>/dev/null || echo 0)") >&2
	fi
	load "$dir/pause.tar" "$dir/redis.tar"
}

# kubelet_ ID starts node ID's kubelet in its network namespace. The
# kubelets of several nodes keep their pods' cgroups under /lk-node-ID
# and carry the zone label of their node.
kubelet_() {
	local dir name ip cgroup_root='' labels=()
	dir=$(node_dir "$1")
	name=$(node_name "$1")
	ip=$(node_ip "$1")
	in_node "$1"
	if [ "$1" != 0 ]; then
		node_cgroups "$1"
		cgroup_root="cgroupRoot: /lk-node-$1"
		labels=(--node-labels "topology.kubernetes.io/zone=$(node_zone "$1")")
	fi
	mkdir -p "$dir/kubelet" "$dir/pod-logs"
	cat >"$dir/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
$cgroup_root
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$STATE/pki/ca.crt"}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
# The machines this runs on have cgroup v1 (hybrid), no systemd.
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$(node_socket "$1")
clusterDomain: cluster.local
clusterDNS: [$DNS_SERVICE_IP]
podLogsDir: $dir/pod-logs
resolvConf: /etc/resolv.conf
protectKernelDefaults: false
makeIPTablesUtilChains: false
enforceNodeAllocatable: []
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
imageGCHighThresholdPercent: 100
YAML
	start "$(proc kubelet "$1")" "${IN_NODE[@]}" "$NODE_BIN/kubelet" --config "$dir/kubelet.yaml" \
		--kubeconfig "$STATE/admin.kubeconfig" --root-dir "$dir/kubelet" --cert-dir "$dir/kubelet/pki" \
		--hostname-override "$name" --node-ip "$ip" "${labels[@]}"
}

# proxy_ ID starts node ID's kube-proxy in its network namespace: the
# Services' rules are the node's own.
proxy_() {
	in_node "$1"
	start "$(proc kube-proxy "$1")" "${IN_NODE[@]}" "$NODE_BIN/kube-proxy" --kubeconfig "$STATE/admin.kubeconfig" \
		--proxy-mode iptables --cluster-cidr 198.18.0.0/16 --hostname-override "$(node_name "$1")" \
		--conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0 \
		--bind-address 127.0.0.1 --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256
}

# dns runs CoreDNS on the node's address and points the kube-dns Service at
# it, so pods resolve cluster names without a DNS image.
dns() {
	cat >"$STATE/Corefile" <<CF
.:53 {
    bind $NODE_IP
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $STATE/admin.kubeconfig localkube
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
CF
	start coredns "$NODE_BIN/coredns-localkube" -conf "$STATE/Corefile"
	kubectl_ apply -f - >&2 <<DNS
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $DNS_SERVICE_IP
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
---
apiVersion: v1
kind: Endpoints
metadata: {name: kube-dns, namespace: kube-system}
subsets:
- addresses: [{ip: $NODE_IP}]
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
DNS
}

# volumes makes a default StorageClass "local" and LOCALKUBE_VOLUMES
# (default 16) hostPath PersistentVolumes of 1Gi under the state directory
# for it, so claims (a StatefulSet's storage.persistence) bind without a
# provisioner.
volumes() {
	local n=${LOCALKUBE_VOLUMES:-16} i docs
	docs="apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
  annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer"
	for ((i = 0; i < n; i++)); do
		# Writable by any user: fsGroup does not apply to hostPath volumes.
		mkdir -p "$STATE/volumes/pv-$i"
		chmod 0777 "$STATE/volumes/pv-$i"
		docs="$docs
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: localkube-pv-$i}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: local
  hostPath: {path: \"$STATE/volumes/pv-$i\", type: Directory}"
	done
	printf '%s\n' "$docs" | kubectl_ apply -f - >/dev/null
}

# nodes_ready says whether every node is Ready.
nodes_ready() {
	local i
	for i in $(node_ids); do
		[ "$(kubectl_ get node "$(node_name "$i")" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] || return 1
	done
}

up() {
	check_nodes
	preflight
	if [ -f "$STATE/pid/kube-apiserver" ] && kill -0 "$(cat "$STATE/pid/kube-apiserver")" 2>/dev/null; then
		[ "$(node_count)" = "${NODES:-1}" ] || die "already running with $(node_count) nodes: down first"
		[ "$(cat "$STATE/netpol" 2>/dev/null || echo 0)" = "${NETPOL:-0}" ] || die "already running with NETPOL=$(cat "$STATE/netpol" 2>/dev/null || echo 0): down first"
		log "already running; KUBECONFIG=$STATE/admin.kubeconfig"
		return
	fi
	mkdir -p "$STATE"
	echo "${NODES:-1}" >"$STATE/node-count"
	echo "${NETPOL:-0}" >"$STATE/netpol"
	# The record is complete or absent: an up that failed while taking it
	# must not leave a partial one that a later up would trust.
	if [ ! -d "$STATE/before" ]; then
		rm -rf "$STATE/before.partial"
		snapshot "$STATE/before.partial"
		mv "$STATE/before.partial" "$STATE/before"
	fi
	ip addr add "$NODE_IP/32" dev lo 2>/dev/null || true
	sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
	pki
	control_plane
	local i ids
	mapfile -t ids < <(node_ids)
	[ "${ids[0]}" = 0 ] || node_network
	for i in "${ids[@]}"; do
		containerd_ "$i"
	done
	images
	for i in "${ids[@]}"; do
		kubelet_ "$i"
		proxy_ "$i"
		netpol_ "$i"
	done
	dns
	wait_until "every Node to be Ready" $((120 + 60 * ${#ids[@]})) nodes_ready
	! netpol_on || wait_until "the NetworkPolicy engines' nftables tables" 120 netpol_ready
	wait_until "the controller manager (the default ServiceAccount)" 120 kubectl_ -n default get serviceaccount default
	volumes
	log "ready: export KUBECONFIG=$STATE/admin.kubeconfig"
}

# stop NAME... stops the processes this script started as NAME..., by
# their PIDs: SIGTERM to each, then SIGKILL to those left after a minute
# (the API server can take that long).
stop() {
	local name pid try alive names=() pids=()
	for name; do
		[ -f "$STATE/pid/$name" ] || continue
		pid=$(cat "$STATE/pid/$name")
		names+=("$name")
		pids+=("$pid")
		kill -TERM "$pid" 2>/dev/null || true
	done
	for ((try = 0; try < 120; try++)); do
		alive=0
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done
		[ "$alive" = 0 ] && break
		sleep 0.5
	done
	for pid in "${pids[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	for name in "${names[@]}"; do
		rm -f "$STATE/pid/$name"
		log "stopped $name"
	done
}

# containers_down SOCKET stops every container of the containerd at
# SOCKET, and the shims it started, which outlive containerd by design.
containers_down() {
	local socket=$1 t try
	[ -S "$socket" ] || return 0
	for t in $(ctr -a "$socket" -n k8s.io tasks ls -q 2>/dev/null); do
		ctr -a "$socket" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1 || true
	done
	for ((try = 0; try < 60; try++)); do
		[ -z "$(ctr -a "$socket" -n k8s.io tasks ls -q 2>/dev/null | head -1)" ] && break
		for t in $(ctr -a "$socket" -n k8s.io tasks ls -q 2>/dev/null); do
			ctr -a "$socket" -n k8s.io tasks delete "$t" >/dev/null 2>&1 || true
		done
		sleep 0.5
	done
	local pid
	for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address $socket" || true); do
		kill -KILL "$pid" 2>/dev/null || true
	done
}

down() {
	[ -d "$STATE" ] || { log "not running"; return 0; }
	local i ids
	mapfile -t ids < <(node_ids)
	stop coredns
	# Each kind of process of every node at once.
	procs kube-network-policies "${ids[@]}"
	stop "${PROCS[@]}"
	netpol_down
	procs kube-proxy "${ids[@]}"
	stop "${PROCS[@]}"
	procs kubelet "${ids[@]}"
	stop "${PROCS[@]}"
	for i in "${ids[@]}"; do
		containers_down "$(node_socket "$i")"
	done
	procs containerd "${ids[@]}"
	stop "${PROCS[@]}"
	for i in "${ids[@]}"; do
		node_sweep "$i"
	done
	stop kube-scheduler
	stop kube-controller-manager
	stop kube-apiserver
	stop etcd
	restore_host
	snapshot "$STATE/after"
	iptables_view "$STATE/before"
	local f diffs=0
	for f in sysctls addresses links mounts iptables nftables netns paths routes cgroups; do
		# A record taken by an older localkube lacks the newer aspects.
		[ -f "$STATE/before/$f" ] || continue
		if ! diff -u "$STATE/before/$f" "$STATE/after/$f" >&2; then
			diffs=1
		fi
	done
	[ "$diffs" -eq 0 ] || die "the host differs from before up (above); state kept in $STATE"
	rm -rf "$STATE"
	log "stopped; the host is as before"
}
