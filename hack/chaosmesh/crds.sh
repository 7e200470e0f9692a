#!/usr/bin/env bash
# Generates the Chaos Mesh CRDs that the tests of chaos/ install into the
# envtest API server, from the Chaos Mesh API module this directory's go.mod
# pins, with controller-gen (CONTROLLER_GEN; `make controller-gen` installs
# it). Descriptions are left out (maxDescLen=0), as in Chaos Mesh's Helm
# chart. Only the kinds chaos/ uses are kept: the Workflow and Schedule CRDs
# embed every chaos kind's schema and are large enough already.
#
# Usage: CONTROLLER_GEN=... hack/chaosmesh/crds.sh OUT_DIR
# `make chaos-crds` runs it into internal/testing/kubetest/testdata/chaosmesh;
# the tests of chaos/ run it into a temporary directory and compare.
set -euo pipefail

kinds=(podchaos networkchaos stresschaos schedules workflows)

out=${1:?usage: $0 OUT_DIR}
gen=${CONTROLLER_GEN:?set CONTROLLER_GEN to the controller-gen binary}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$here" && "$gen" crd:maxDescLen=0 paths=github.com/chaos-mesh/chaos-mesh/api/v1alpha1 \
	output:crd:artifacts:config="$work")
rm -f "$out"/chaos-mesh.org_*.yaml
for k in "${kinds[@]}"; do
	cp "$work/chaos-mesh.org_$k.yaml" "$out/"
done
