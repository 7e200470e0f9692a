// Package charts holds the Helm charts of DistCache (charts/distcache: the
// operator, its CRDs, RBAC and monitoring objects) and their tests. It has
// no code: the tests load the chart with Helm's Go SDK as `helm` does, and
//
//   - render it per values set against golden files (testdata/; `go test
//     ./charts -update` rewrites them) and run `helm lint --strict`'s checks;
//   - check that the chart's CRDs are the repository's crds/ and its RBAC
//     rules are config/rbac/role.yaml, which `make manifests` generates from
//     the operator's +kubebuilder:rbac markers and copies into the chart;
//   - check that values.schema.json rejects bad values with a readable error;
//   - install, upgrade and uninstall the chart on a real kube-apiserver
//     (envtest, internal/testing/kubetest) with prometheus-operator's CRDs, so that
//     the API server validates every object the chart renders;
//   - run the operator as the chart's ServiceAccount, authorized by RBAC,
//     through a CacheCluster's creation and deletion in both RBAC modes.
package charts
