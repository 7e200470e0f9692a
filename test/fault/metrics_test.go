package fault

import (
	"fmt"
	"io"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/distcache/distcache/dataplane/metrics"
)

// sumMetric adds up the samples of family in a Prometheus text exposition
// whose labels include labels.
func sumMetric(r io.Reader, family string, labels map[string]string) (float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return 0, fmt.Errorf("cannot parse metrics: %w", err)
	}
	total := 0.0
	for _, m := range families[family].GetMetric() {
		match := 0
		for _, lp := range m.GetLabel() {
			if v, ok := labels[lp.GetName()]; ok && v == lp.GetValue() {
				match++
			}
		}
		if match != len(labels) {
			continue
		}
		total += metrics.Value(m)
	}
	return total, nil
}
