#!/usr/bin/env bash
# under-check.sh: a planned disruption of a localkube CacheCluster under
# `distcache check` (docs/reliability.md, "Planned disruptions").
#
#   hack/localkube/under-check.sh NAMESPACE/CLUSTER OUT COMMAND [ARG...]
#
# 1. Copies the cluster's data-plane key Secret into OUT/key.
# 2. Starts `distcache check` on this host against the cluster (the map
#    ConfigMap through the API server, the pods at their addresses),
#    bounded by DURATION and RATE operations a second.
# 3. Once its timed workload runs, waits SETTLE seconds, runs COMMAND
#    (a `kubectl drain`, a `helm upgrade`, ...), logging it to
#    OUT/command.log, then waits (at most WAIT seconds) for the cluster to
#    be Ready and no longer Progressing (every pod on its template), with
#    every member Ready and every Ready pod on the published map.
# 4. Waits for the check and prints its verdict (OUT/check/verdict.txt).
#
# Settings (environment): DURATION=180s RATE=300 SETTLE=10 WAIT=300,
# DISTCACHE=bin/distcache, KUBECONFIG (default: localkube's). Exits with
# the check's status, or 1 if the command failed.
set -euo pipefail

[ $# -ge 3 ] || {
	echo "usage: $0 NAMESPACE/CLUSTER OUT COMMAND [ARG...]" >&2
	exit 2
}
ref=$1 out=$2
shift 2
ns=${ref%%/*} name=${ref#*/}
[ "$ns" != "$ref" ] || {
	echo "under-check: want NAMESPACE/CLUSTER, got $ref" >&2
	exit 2
}
DURATION=${DURATION:-180s}
RATE=${RATE:-300}
SETTLE=${SETTLE:-10}
WAIT=${WAIT:-300}
DISTCACHE=${DISTCACHE:-bin/distcache}
export KUBECONFIG=${KUBECONFIG:-${LOCALKUBE_DIR:-/var/lib/distcache-localkube}/admin.kubeconfig}

mkdir -p "$out/key" "$out/check"
chmod 700 "$out/key"
for k in current previous; do
	v=$(kubectl get secret -n "$ns" "$name-data-plane-key" -o go-template="{{index .data \"$k\"}}" 2>/dev/null || true)
	if [ -n "$v" ] && [ "$v" != "<no value>" ]; then
		printf '%s' "$v" | base64 -d >"$out/key/$k"
	fi
done
[ -s "$out/key/current" ] || {
	echo "under-check: no data-plane key in Secret $ns/$name-data-plane-key" >&2
	exit 1
}

ready="$out/check/ready"
rm -f "$ready"
"$DISTCACHE" check --map-configmap "$ns/$name-partition-map" --kubeconfig "$KUBECONFIG" \
	--data-plane-key-dir "$out/key" --duration "$DURATION" --rate "$RATE" \
	--out "$out/check" --ready-file "$ready" >"$out/check.log" 2>&1 &
check=$!
for _ in $(seq 600); do
	[ -e "$ready" ] && break
	kill -0 "$check" 2>/dev/null || break
	sleep 0.1
done
[ -e "$ready" ] || {
	echo "under-check: the check did not start (see $out/check.log)" >&2
	kill "$check" 2>/dev/null || true
	exit 1
}
sleep "$SETTLE"
status=0
echo "under-check: $(date -u +%T) running: $*"
start=$(date +%s)
"$@" >"$out/command.log" 2>&1 || status=$?
echo "under-check: $(date -u +%T) command ended (status $status) after $(($(date +%s) - start)) s"
kubectl wait -n "$ns" --for=condition=Ready "cachecluster/$name" --timeout="${WAIT}s" >/dev/null || status=1
# A rollout or remap in progress (pods off their template or the map).
kubectl wait -n "$ns" --for=condition=Progressing=False "cachecluster/$name" --timeout="${WAIT}s" >/dev/null || status=1
for _ in $(seq "$WAIT"); do
	# Every member Ready, and every Ready pod on the published map.
	state=$(kubectl get -n "$ns" "cachecluster/$name" -o go-template='{{.status.readyMembers}} {{.status.members}} {{.status.mapApplied}} {{.status.readyPods}}')
	read -r ready members applied pods <<<"$state"
	[ "$ready" = "$members" ] && [ "$applied" = "$pods" ] && break
	sleep 1
done
echo "under-check: $(date -u +%T) healed: $ready of $members members Ready, $applied of $pods Ready pods on the published map, $(($(date +%s) - start)) s after the command started"
rc=0
wait "$check" || rc=$?
cat "$out/check/verdict.txt" 2>/dev/null || tail -5 "$out/check.log"
[ "$status" = 0 ] || exit 1
exit "$rc"
