package layersizing_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/layersizing"
)

// FuzzPlanFromAnswers sizes the layers from arbitrary answers of the
// nodes' GET /mrc, decoded as the control loop's scraper decodes them: a
// node is any process on the network. Whatever the curves say, the plan
// gives every layer at least one entry a node and keeps the budget.
func FuzzPlanFromAnswers(f *testing.F) {
	for _, c := range []metrics.MissRatioCurve{
		uniform(1000, 1000, 0.2),
		uniform(250, 125, 1),
		{Window: 10, Requests: 5000, Hits: 4000, Entries: 256, Points: []metrics.CurvePoint{
			{Entries: 1, MissRatio: 0.99}, {Entries: 16, MissRatio: 0.7}, {Entries: 256, MissRatio: 0.2}, {Entries: 1024, MissRatio: 0.05}}},
	} {
		b, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, b)
	}
	f.Add([]byte(`{"window":1e-300,"requests":18446744073709551615,"points":[{"entries":-5,"missRatio":7},{"entries":9223372036854775807,"missRatio":-1e308}]}`),
		[]byte(`{"window":10,"requests":1,"points":[{"entries":3,"missRatio":0.5},{"entries":2,"missRatio":0.1}]}`))
	m := newMap(f)
	cfg := layersizing.Config{Budget: 2000, Layers: []string{"spine", "leaf"}, Start: map[string]int{"spine": 200, "leaf": 200}}
	f.Fuzz(func(t *testing.T, spine, leaf []byte) {
		r := layersizing.Reports{}
		for layer, raw := range map[string][]byte{"spine": spine, "leaf": leaf} {
			var c metrics.MissRatioCurve
			if json.NewDecoder(bytes.NewReader(raw)).Decode(&c) != nil {
				continue // the scraper leaves the node out
			}
			reportsOf(m, r, layer, c)
		}
		res, err := layersizing.Plan(cfg, m, r)
		if err != nil {
			t.Fatalf("Plan: %v", err)
		}
		used := 0
		for _, l := range m.Layers {
			e := res.Entries[l.Name]
			if e < 1 {
				t.Fatalf("layer %s gets %d entries a node: %v", l.Name, e, res.Entries)
			}
			used += e * len(l.Members)
		}
		if used > cfg.Budget {
			t.Fatalf("split %v uses %d entries of %d", res.Entries, used, cfg.Budget)
		}
	})
}
