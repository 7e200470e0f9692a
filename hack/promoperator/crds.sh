#!/usr/bin/env bash
# Generates the prometheus-operator CRDs that the chart's tests install into
# the envtest API server (ServiceMonitor, PodMonitor, PrometheusRule: the
# kinds the chart renders), from the monitoring API module this directory's
# go.mod pins, with controller-gen (CONTROLLER_GEN; `make controller-gen`
# installs it). Descriptions are left out (maxDescLen=0) to keep them small;
# the schemas, which the API server validates against, are whole.
#
# Usage: CONTROLLER_GEN=... hack/promoperator/crds.sh OUT_DIR
# `make prometheus-crds` runs it into
# internal/testing/kubetest/testdata/promoperator; the chart's tests run it into a temporary directory and compare.
set -euo pipefail

kinds=(servicemonitors podmonitors prometheusrules)

out=${1:?usage: $0 OUT_DIR}
gen=${CONTROLLER_GEN:?set CONTROLLER_GEN to the controller-gen binary}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$here" && "$gen" crd:maxDescLen=0 \
	paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 \
	output:crd:artifacts:config="$work")
rm -f "$out"/monitoring.coreos.com_*.yaml
for k in "${kinds[@]}"; do
	cp "$work/monitoring.coreos.com_$k.yaml" "$out/"
done
