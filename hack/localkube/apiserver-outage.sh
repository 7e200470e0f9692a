#!/usr/bin/env bash
# apiserver-outage.sh: a bounded read load on a CacheCluster of a running
# localkube, and its API server stopped under it for a while
# (docs/benchmarks.md, "Hits with the API server stopped").
#
#   hack/localkube/apiserver-outage.sh CLUSTER OUT
#
# 1. Starts a Job, CLUSTER-read-load, that runs `distcache bench` inside the
#    cluster as hack/kind/bench-job.yaml does (the map through the API as
#    the data-plane ServiceAccount, the data-plane key mounted): DistCache's
#    mode only, reads only (after its preload), RATE reads a second of KEYS
#    keys with Zipf SKEW, for the whole run.
# 2. Once its measured window has started, runs hack/apioutage against the
#    metrics endpoints of the cluster's pods (their addresses): BEFORE
#    minutes, the API server stopped for OUTAGE minutes (MODE stop: SIGSTOP
#    and SIGCONT; kill: ended and started again as it was), AFTER minutes.
# 3. Waits for the Job, keeps its log (OUT/load.log; its JSON report is in
#    OUT/report/, a hostPath volume), and adds the load's own per-minute
#    table to OUT/minutes.md.
#
# Settings (environment): MODE=stop BEFORE=3 OUTAGE=10 AFTER=3 (minutes),
# RATE=500 KEYS=1000 SKEW=0.99 WARMUP=30s NAMESPACE=default, LOCALKUBE_DIR.
# Every wait is bounded; the Job has a deadline. Needs root (apioutage
# signals localkube's API server) and a localkube with the image loaded.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -eq 2 ] || {
	echo "usage: $0 CLUSTER OUT" >&2
	exit 2
}
cluster=$1
out=$2
MODE=${MODE:-stop}
BEFORE=${BEFORE:-3}
OUTAGE=${OUTAGE:-10}
AFTER=${AFTER:-3}
RATE=${RATE:-500}
KEYS=${KEYS:-1000}
SKEW=${SKEW:-0.99}
WARMUP=${WARMUP:-30s}
NAMESPACE=${NAMESPACE:-default}
STATE=${LOCALKUBE_DIR:-/var/lib/distcache-localkube}
export KUBECONFIG=$STATE/admin.kubeconfig
ENVTEST_BIN=$(cd "$root" && hack/envtest-assets.sh)
k() { "$ENVTEST_BIN/kubectl" -n "$NAMESPACE" "$@"; }
log() { printf 'apiserver-outage: %s %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

mkdir -p "$out"
(cd "$root" && go build -o "$out/apioutage" ./hack/apioutage)

urls=()
for ip in $(k get pods -l "distcache.io/cluster=$cluster" -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}'); do
	urls+=("http://$ip:9100/metrics")
done
[ "${#urls[@]}" -gt 0 ] || {
	log "no pods of cluster $cluster in namespace $NAMESPACE"
	exit 1
}
k get pods -l "distcache.io/cluster=$cluster" -o wide >"$out/pods-before.txt"

job=$cluster-read-load
# The report is written on this host: the kubelet removes a finished pod's
# emptyDir. The load runs as 65532.
report=$(cd "$out" && pwd)/report
mkdir -p "$report"
chmod 0777 "$report"
window=$((BEFORE + OUTAGE + AFTER + 2)) # minutes: the run, and the readiness checks
k delete job "$job" --ignore-not-found --wait=true >/dev/null
k apply -f - <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $job
  labels: {app.kubernetes.io/name: distcache-bench}
spec:
  backoffLimit: 0
  activeDeadlineSeconds: $(((window + 5) * 60))
  template:
    metadata:
      labels:
        app.kubernetes.io/name: distcache-bench
        distcache.io/client: $cluster
    spec:
      restartPolicy: Never
      serviceAccountName: $cluster-data-plane
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        fsGroup: 65532
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: bench
          image: ghcr.io/distcache/distcache:v0.1.0
          imagePullPolicy: IfNotPresent
          args:
            - bench
            - --map-configmap=$NAMESPACE/$cluster-partition-map
            - --modes=distcache
            - --rate=$RATE
            - --keys=$KEYS
            - --skew=$SKEW
            - --write-ratio=0
            - --duration=${window}m
            - --warmup=$WARMUP
            - --predict=false
            - --data-plane-key-dir=/etc/distcache/data-plane-key
            - --json=/report/report.json
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          volumeMounts:
            - {name: data-plane-key, mountPath: /etc/distcache/data-plane-key, readOnly: true}
            - {name: report, mountPath: /report}
      volumes:
        - name: data-plane-key
          secret: {secretName: $cluster-data-plane-key, defaultMode: 0440}
        - name: report
          hostPath: {path: $report, type: Directory}
YAML
log "waiting for the load's measured window"
for ((i = 0; ; i++)); do
	k logs "job/$job" 2>/dev/null | grep -q '^distcache measure' && break
	if [ "$i" -ge 150 ]; then
		log "the load did not start within 5 minutes"
		k logs "job/$job" >&2 || true
		exit 1
	fi
	sleep 2
done
log "load running; the outage run takes $((BEFORE + OUTAGE + AFTER)) minutes"

rc=0
LOCALKUBE_DIR=$STATE "$out/apioutage" -mode "$MODE" -before "${BEFORE}m" -outage "${OUTAGE}m" -after "${AFTER}m" \
	-out "$out" "${urls[@]}" || rc=$?

log "waiting for the load to end"
for ((i = 0; ; i++)); do
	st=$(k get job "$job" -o jsonpath='{.status.succeeded}/{.status.failed}')
	[ "$st" = 1/ ] && break
	if [ "$st" != / ] || [ "$i" -ge $(((window + 5) * 30)) ]; then
		log "the load did not complete (succeeded/failed: $st)"
		rc=1
		break
	fi
	sleep 2
done
k logs --timestamps "job/$job" >"$out/load.log" || rc=1
k get pods -l "distcache.io/cluster=$cluster" -o wide >"$out/pods-after.txt"
if [ -f "$out/window.env" ]; then
	# shellcheck disable=SC1091 # written by apioutage
	. "$out/window.env"
	"$out/apioutage" -load "$out/load.log" -report "$report/report.json" -stop "$STOP" -back "$BACK" |
		tee -a "$out/minutes.md" || rc=1
fi
exit "$rc"
