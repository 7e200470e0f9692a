#!/usr/bin/env bash
# The Kind workflow for workstations with Docker (docs/operator.md, "On
# Kind"): kind.sh up | load | deploy | test | down, run by make kind-up,
# kind-load, kind-deploy, kind-test and kind-down from the repository root.
#
# kind and helm are built from pinned versions into TOOLS_DIR (default
# ~/.cache/distcache) with `go install`; kubectl is the one
# hack/envtest-assets.sh builds for the tests (make envtest), unless KUBECTL
# names another. Nothing here runs on the project's CI machines, which have
# no container runtime or registry: make test renders the chart and
# server-side applies what this flow applies instead.
set -euo pipefail

KIND_VERSION=${KIND_VERSION:-v0.33.0}
# The node image built for that kind release, pinned by digest as its
# release notes require.
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5}
HELM_VERSION=${HELM_VERSION:-v3.22.0}
CLUSTER=${KIND_CLUSTER:-distcache}
NAMESPACE=${NAMESPACE:-distcache-system}
SAMPLE_NAMESPACE=${SAMPLE_NAMESPACE:-default}
SAMPLE=config/samples/distcache_v1alpha1_cachecluster_managed.yaml
SAMPLE_NAME=shop-managed
TOOLS_DIR=${TOOLS_DIR:-$HOME/.cache/distcache}
GO=${GO:-go}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

log() { printf '==> %s\n' "$*" >&2; }

# tool NAME MODULE VERSION installs MODULE@VERSION into TOOLS_DIR/NAME/VERSION.
tool() {
	local name=$1 module=$2 version=$3
	local dir="$TOOLS_DIR/$name/$version"
	if [[ ! -x "$dir/$name" ]]; then
		log "installing $name $version into $dir"
		mkdir -p "$dir"
		GOBIN="$dir" "$GO" install "$module@$version"
	fi
	printf '%s\n' "$dir/$name"
}

kind_bin() { tool kind sigs.k8s.io/kind "$KIND_VERSION"; }
helm_bin() { tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"; }

kubectl_bin() {
	if [[ -n "${KUBECTL:-}" ]]; then
		printf '%s\n' "$KUBECTL"
		return
	fi
	make -s envtest >&2
	local assets
	assets=$(make -s --no-print-directory print-envtest-assets)
	printf '%s\n' "$assets/kubectl"
}

version() { make -s --no-print-directory print-version; }

archive() { printf 'out/image/distcache-%s-linux-%s.tar\n' "$(version)" "$("$GO" env GOARCH)"; }

kctl() {
	local k
	k=$(kubectl_bin)
	"$k" --context "kind-$CLUSTER" "$@"
}

up() {
	local kind
	kind=$(kind_bin)
	if "$kind" get clusters | grep -qx "$CLUSTER"; then
		log "Kind cluster $CLUSTER exists"
		return
	fi
	log "creating Kind cluster $CLUSTER ($KIND_NODE_IMAGE)"
	"$kind" create cluster --name "$CLUSTER" --image "$KIND_NODE_IMAGE" --config "$here/cluster.yaml" --wait 5m
}

load() {
	local kind image
	kind=$(kind_bin)
	image=$(archive)
	log "building $image"
	make image
	log "loading $image into $CLUSTER"
	"$kind" load image-archive "$image" --name "$CLUSTER"
}

deploy() {
	local helm
	helm=$(helm_bin)
	log "installing the chart into $NAMESPACE"
	"$helm" upgrade --install distcache charts/distcache --kube-context "kind-$CLUSTER" \
		--namespace "$NAMESPACE" --create-namespace --wait --timeout 5m
	log "applying $SAMPLE"
	kctl -n "$SAMPLE_NAMESPACE" apply -f "$SAMPLE"
}

# member_state NAME prints the state of cache member NAME in the status.
member_state() {
	kctl -n "$SAMPLE_NAMESPACE" get cachecluster "$SAMPLE_NAME" \
		-o jsonpath="{.status.layers[*].members[?(@.name==\"$1\")].state}"
}

# wait_for WHAT SECONDS COMMAND... retries COMMAND once a second.
wait_for() {
	local what=$1 seconds=$2
	shift 2
	for ((i = 0; i < seconds; i++)); do
		if "$@"; then
			return 0
		fi
		sleep 1
	done
	log "timed out after ${seconds}s waiting for $what"
	return 1
}

state_is() { [[ "$(member_state "$1")" == "$2" ]]; }

# left NAME: member NAME serves no cached value (Fenced) or has lost its
# keys to the others (Failed).
left() {
	local s
	s=$(member_state "$1")
	[[ $s == Fenced || $s == Failed ]]
}

run_test() {
	local cc="cachecluster/$SAMPLE_NAME" victim="$SAMPLE_NAME-spine-1"
	log "waiting for $cc to be Ready"
	kctl -n "$SAMPLE_NAMESPACE" wait --for=condition=Ready "$cc" --timeout=10m

	log "running distcache bench as a Job"
	kctl -n "$SAMPLE_NAMESPACE" delete job "$SAMPLE_NAME-bench" --ignore-not-found
	kctl -n "$SAMPLE_NAMESPACE" apply -f "$here/bench-job.yaml"
	kctl -n "$SAMPLE_NAMESPACE" wait --for=condition=Complete "job/$SAMPLE_NAME-bench" --timeout=5m
	kctl -n "$SAMPLE_NAMESPACE" logs "job/$SAMPLE_NAME-bench"

	log "failing $victim: a short grace period and hold-down, then its pod deleted"
	kctl -n "$SAMPLE_NAMESPACE" patch "$cc" --type merge -p '{"spec":{"failover":{"gracePeriod":"1s","holdDown":"10s"}}}'
	kctl -n "$SAMPLE_NAMESPACE" delete pod "$victim" --wait=false
	wait_for "$victim to be fenced or failed" 120 left "$victim"
	log "$victim is $(member_state "$victim"); the cluster stays Ready through the remap"
	kctl -n "$SAMPLE_NAMESPACE" wait --for=condition=Ready "$cc" --timeout=30s
	wait_for "$victim to be restored" 300 state_is "$victim" Active
	kctl -n "$SAMPLE_NAMESPACE" wait --for=condition=Degraded=false "$cc" --timeout=5m
	kctl -n "$SAMPLE_NAMESPACE" get cacheclusters -o wide
	kctl -n "$SAMPLE_NAMESPACE" events --for "$cc"
	log "kind-test passed"
}

down() {
	local kind
	kind=$(kind_bin)
	log "deleting Kind cluster $CLUSTER"
	"$kind" delete cluster --name "$CLUSTER"
}

case "${1:-}" in
up) up ;;
load) load ;;
deploy) deploy ;;
test) run_test ;;
down) down ;;
*)
	echo "usage: $0 up|load|deploy|test|down" >&2
	exit 2
	;;
esac
