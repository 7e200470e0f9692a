// Package promoperator pins prometheus-operator's monitoring API module, the
// source of the ServiceMonitor, PodMonitor and PrometheusRule CRDs that
// crds.sh generates for the chart's tests. It is a module of its own so that
// the root module does not depend on prometheus-operator.
package promoperator

import (
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1" // the API crds.sh generates CRDs from
)
