// Package alerts holds DistCache's Prometheus alerting rules
// (distcache.rules.yaml) and their unit tests (distcache.rules.test.yaml,
// run by `promtool test rules`). The rules file is embedded here for
// `distcache up --prometheus`, which loads it into the Prometheus it runs,
// and copied by `make manifests` into the Helm chart, which renders it as
// a PrometheusRule. docs/observability.md says what each alert means,
// docs/runbooks.md what to do when it fires.
package alerts

import _ "embed"

// FileName is the rules file's name.
const FileName = "distcache.rules.yaml"

// Rules is the rules file (Prometheus' rule file format: `groups:`).
//
//go:embed distcache.rules.yaml
var Rules []byte
