package shim

import (
	"reflect"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/wire"
)

// metricValue returns the value of the counter, gauge or histogram count
// called name whose labels include labels.
func metricValue(t *testing.T, e *env, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				switch {
				case m.Counter != nil:
					return m.GetCounter().GetValue()
				case m.Gauge != nil:
					return m.GetGauge().GetValue()
				case m.Histogram != nil:
					return float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

func TestMetrics(t *testing.T) {
	e := newEnv(t, withShards(2))
	key := e.key(0, "measured")
	put := e.mustStatus(wire.OpPut, key, []byte("v"), wire.StatusOK)
	for _, n := range e.owners(key) {
		n.waitFor(t, wire.OpUpdate, key, put.ValueVersion)
	}
	e.mustStatus(wire.OpGet, key, nil, wire.StatusOK)
	e.mustStatus(wire.OpGet, e.key(0, "absent"), nil, wire.StatusNotFound)
	e.mustStatus(wire.OpGet, e.key(1, "foreign"), nil, wire.StatusNotOwner)
	eventually(t, "phase 2 observed", func() bool {
		return metricValue(t, e, "distcache_coherence_phase_duration_seconds", map[string]string{"phase": "update"}) == 1
	})
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"distcache_requests_total", map[string]string{"op": "PUT", "result": "ok"}, 1},
		{"distcache_requests_total", map[string]string{"op": "GET", "result": "miss"}, 1},
		{"distcache_requests_total", map[string]string{"op": "GET", "result": "not_found"}, 1},
		{"distcache_requests_total", map[string]string{"op": "GET", "result": "not_owner"}, 1},
		{"distcache_coherence_invalidations_total", map[string]string{"result": "ok"}, 2},
		{"distcache_coherence_invalidations_total", map[string]string{"result": "failed"}, 0},
		{"distcache_coherence_updates_total", map[string]string{"result": "ok"}, 2},
		{"distcache_coherence_phase_duration_seconds", map[string]string{"phase": "invalidate"}, 1},
		{"distcache_coherence_phase_duration_seconds", map[string]string{"phase": "write"}, 1},
		{"distcache_coherence_failures_total", nil, 0},
		{"distcache_redis_errors_total", nil, 0},
		{"distcache_map_version", nil, float64(e.place.Version())},
		{"distcache_malformed_packets_total", nil, 0},
	}
	for _, tt := range tests {
		if got := metricValue(t, e, tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if got := metricValue(t, e, "distcache_datagrams_total", map[string]string{"direction": "in"}); got < 4 {
		t.Errorf("datagrams in = %v, want at least the 4 requests", got)
	}
	// GET /work (what `distcache bench` reads) agrees with the metrics.
	want := metrics.Work{
		Units:    uint64(metricValue(t, e, "distcache_work_units_total", nil)),
		Capacity: metricValue(t, e, "distcache_work_capacity", nil),
		Coherence: uint64(metricValue(t, e, "distcache_coherence_invalidations_total", map[string]string{"result": "ok"}) +
			metricValue(t, e, "distcache_coherence_updates_total", map[string]string{"result": "ok"})),
	}
	if got := e.shim.Work(); got != want || got.Coherence != 4 {
		t.Errorf("Work() = %+v, want %+v from the metrics (4 coherence calls)", got, want)
	}
}

// TestHotKeysCountsReadsAndWrites: once an interval ends, the shim reports
// the GETs and writes of its keys in it, most first; requests it refuses
// are not counted.
func TestHotKeysCountsReadsAndWrites(t *testing.T) {
	e := newEnv(t, withShards(2), withConfig(func(c *Config) { c.HotKeysInterval = time.Hour }))
	hot, cold := e.key(0, "hot"), e.key(0, "cold")
	e.shim.top.Rotate(time.Now()) // the interval starts here
	for range 3 {
		e.mustStatus(wire.OpGet, hot, nil, wire.StatusNotFound)
	}
	e.mustStatus(wire.OpPut, hot, []byte("v"), wire.StatusOK)
	e.mustStatus(wire.OpDel, cold, nil, wire.StatusOK)
	e.mustStatus(wire.OpGet, e.key(1, "foreign"), nil, wire.StatusNotOwner)
	e.shim.top.Rotate(time.Now())
	got := e.shim.HotKeys()
	want := []metrics.KeyCount{{Key: []byte(hot), Reads: 3, Writes: 1}, {Key: []byte(cold), Writes: 1}}
	if !reflect.DeepEqual(got.Keys, want) || !(got.Interval > 0) {
		t.Fatalf("HotKeys() = %+v, want %+v over a positive interval", got, want)
	}
}
