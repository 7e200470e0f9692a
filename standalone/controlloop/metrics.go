package controlloop

import (
	"fmt"
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/layersizing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/redundancy"
)

// loopMetrics are the loop's distcache_controlloop_* series. Their labels
// are bounded: the member states, and the members of the cluster.
type loopMetrics struct {
	remaps          *prometheus.CounterVec // by the state a member entered
	probeFailures   *prometheus.CounterVec // by member
	publishFailures prometheus.Counter
	// copies counts the keys of the last decision of copies by their
	// number of copies ("0", "1", "2", "3+").
	copies *prometheus.GaugeVec
	// entries and hitRatio are the last split of the cache budget: each
	// sized layer's entries a member, and its hit ratio as the curves
	// estimate it and as the nodes measured it.
	entries, hitRatio *prometheus.GaugeVec
}

// newLoopMetrics creates the metrics and registers them with reg (nil: not
// exposed); current reads the map last published.
func newLoopMetrics(reg prometheus.Registerer, m *partmap.Map, current func() *partmap.Map) (*loopMetrics, error) {
	lm := &loopMetrics{
		remaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distcache_controlloop_remaps_total",
			Help: "Member state changes published, by the state entered (Fenced, Failed, or Active when restored).",
		}, []string{"to"}),
		probeFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distcache_controlloop_probe_failures_total",
			Help: "Health checks of a cache member that failed or timed out.",
		}, []string{"member"}),
		publishFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "distcache_controlloop_publish_failures_total",
			Help: "Map versions that could not be written to the map file (retried at the next step).",
		}),
		copies: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "distcache_controlloop_hot_keys",
			Help: "Hot keys of the last decision of copies (redundancy control), by their number of copies (0, 1, 2, 3+).",
		}, []string{"copies"}),
		entries: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "distcache_controlloop_layer_entries",
			Help: "Entries a member of each layer sized from the cache budget caches, by the last split.",
		}, []string{"layer"}),
		hitRatio: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "distcache_controlloop_layer_hit_ratio",
			Help: "Hit ratio of each layer sized from the cache budget at the last split, as its nodes' miss-ratio curves estimate it at the split's entries (source=estimated) and as they measured it (source=measured).",
		}, []string{"layer", "source"}),
	}
	for _, s := range []partmap.MemberState{partmap.Active, partmap.Fenced, partmap.Failed} {
		lm.remaps.WithLabelValues(string(s))
	}
	for _, l := range m.Layers {
		for _, mb := range l.Members {
			lm.probeFailures.WithLabelValues(mb.Name)
		}
	}
	if reg == nil {
		return lm, nil
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "distcache_controlloop_map_version",
		Help: "Version of the partition map the control loop last published or resumed from.",
	}, func() float64 { return float64(current().Version) })
	members := &membersCollector{current: current, desc: prometheus.NewDesc("distcache_controlloop_members",
		"Cache members in the map the control loop last published, by state (Active, Fenced, Failed).", []string{"state"}, nil)}
	for _, c := range []prometheus.Collector{lm.remaps, lm.probeFailures, lm.publishFailures, lm.copies, lm.entries, lm.hitRatio, gauge, members} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("cannot register control loop metrics: %w", err)
		}
	}
	return lm, nil
}

// copiesDecided records a decision's keys by their number of copies.
func (lm *loopMetrics) copiesDecided(res redundancy.Result) {
	for c, n := range res.Buckets() {
		lm.copies.WithLabelValues(redundancy.CopiesBuckets[c]).Set(float64(n))
	}
}

// sized records a split of the cache budget.
func (lm *loopMetrics) sized(res layersizing.Result) {
	for _, l := range res.Layers {
		lm.entries.WithLabelValues(l.Name).Set(float64(l.Entries))
		for source, v := range map[string]float64{"estimated": l.Estimated, "measured": l.Measured} {
			if !math.IsNaN(v) {
				lm.hitRatio.WithLabelValues(l.Name, source).Set(v)
			}
		}
	}
}

func (lm *loopMetrics) probeFailed(member string) { lm.probeFailures.WithLabelValues(member).Inc() }

func (lm *loopMetrics) published(changes []failover.Change) {
	for _, c := range changes {
		lm.remaps.WithLabelValues(string(c.To)).Inc()
	}
}

// membersCollector counts the published map's members by state at scrape
// time: a member failed shows as long as it stays failed.
type membersCollector struct {
	current func() *partmap.Map
	desc    *prometheus.Desc
}

func (c *membersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *membersCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.current().MembersByState()
	for _, s := range partmap.MemberStates {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}
