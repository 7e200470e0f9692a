package fleet

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/clientleaf"
)

// counters are the cache switch controller's counters a fleet exports per
// switch; they count the switch's current session.
var counters = []struct {
	name, help string
	get        func(*cacheswitch.Stats) uint64
}{
	{"lease_renewals", "Serving lease renewals of the switch's current session.", func(s *cacheswitch.Stats) uint64 { return s.Renewals.Load() }},
	{"lease_denied", "Renewals that left the switch without a lease (member not Active).", func(s *cacheswitch.Stats) uint64 { return s.LeaseDenied.Load() }},
	{"keys_inserted", "Hot keys given a slot.", func(s *cacheswitch.Stats) uint64 { return s.Inserted.Load() }},
	{"keys_evicted", "Keys whose slot was released.", func(s *cacheswitch.Stats) uint64 { return s.Evicted.Load() }},
	{"fills", "Slots filled by a FETCH_REPLY.", func(s *cacheswitch.Stats) uint64 { return s.Filled.Load() }},
	{"fills_refused", "FETCH_REPLYs the switch did not apply.", func(s *cacheswitch.Stats) uint64 { return s.FillRefused.Load() }},
	{"hot_key_reports", "Hot-key digests received.", func(s *cacheswitch.Stats) uint64 { return s.HotKeys.Load() }},
}

// leafCounters are the client leaf runner's counters a fleet exports per
// client leaf, since the fleet started; a client leaf has none of the
// cache switch's.
var leafCounters = []struct {
	name, help string
	get        func(*clientleaf.RunnerStats) uint64
}{
	{"client_leaf_applies", "Map reads applied to the client leaf.", func(s *clientleaf.RunnerStats) uint64 { return s.Applies.Load() }},
	{"client_leaf_entries_written", "Table entries of the client leaf inserted, modified or deleted.", func(s *clientleaf.RunnerStats) uint64 { return s.Written.Load() }},
	{"client_leaf_apply_errors", "Map reads the client leaf could not be programmed with.", func(s *clientleaf.RunnerStats) uint64 { return s.Errors.Load() }},
}

// collector exports a fleet's switches as distcache_fabric_* series with
// a switch_member label and its constant labels.
type collector struct {
	f          *Fleet
	programmed *prometheus.Desc
	sessions   *prometheus.Desc
	pushes     *prometheus.Desc
	portsUp    *prometheus.Desc
	counters   []*prometheus.Desc
	leaf       []*prometheus.Desc
}

// Collector exports each switch's session (distcache_fabric_switch_programmed,
// distcache_fabric_switch_sessions_total, distcache_fabric_pipeline_pushes_total),
// its controller's counters (a cache switch's or a client leaf's) and its
// ports up, labelled switch_member and with labels (which may be nil).
func (f *Fleet) Collector(labels prometheus.Labels) prometheus.Collector {
	member := []string{"switch_member"}
	c := &collector{f: f,
		programmed: prometheus.NewDesc("distcache_fabric_switch_programmed", "1 while the controller is the switch's primary and runs it with the pipeline it pushed or found.", member, labels),
		sessions:   prometheus.NewDesc("distcache_fabric_switch_sessions_total", "Times the controller became the switch's primary and programmed it (pushed the pipeline or took the switch over).", member, labels),
		pushes:     prometheus.NewDesc("distcache_fabric_pipeline_pushes_total", "Sessions that pushed the pipeline: each started the switch with an empty cache.", member, labels),
		portsUp:    prometheus.NewDesc("distcache_fabric_ports_up", "The switch's ports gNMI reports up (0 until it reports).", member, labels),
	}
	for _, k := range counters {
		c.counters = append(c.counters, prometheus.NewDesc("distcache_fabric_"+k.name+"_total", k.help, member, labels))
	}
	for _, k := range leafCounters {
		c.leaf = append(c.leaf, prometheus.NewDesc("distcache_fabric_"+k.name+"_total", k.help, member, labels))
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.programmed
	ch <- c.sessions
	ch <- c.pushes
	ch <- c.portsUp
	for _, d := range c.counters {
		ch <- d
	}
	for _, d := range c.leaf {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.f.members {
		st := m.runner.State()
		programmed := 0.0
		if st.Programmed {
			programmed = 1
		}
		ch <- prometheus.MustNewConstMetric(c.programmed, prometheus.GaugeValue, programmed, m.name)
		ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.CounterValue, float64(st.Sessions), m.name)
		ch <- prometheus.MustNewConstMetric(c.pushes, prometheus.CounterValue, float64(st.Pushes), m.name)
		_, up := c.f.Ports(m.name)
		ch <- prometheus.MustNewConstMetric(c.portsUp, prometheus.GaugeValue, float64(up), m.name)
		switch r := m.runner.(type) {
		case *cacheswitch.Runner:
			ctl := r.Controller()
			for i, k := range counters {
				v := uint64(0)
				if ctl != nil {
					v = k.get(ctl.Stats())
				}
				ch <- prometheus.MustNewConstMetric(c.counters[i], prometheus.CounterValue, float64(v), m.name)
			}
		case *clientleaf.Runner:
			for i, k := range leafCounters {
				ch <- prometheus.MustNewConstMetric(c.leaf[i], prometheus.CounterValue, float64(k.get(r.Stats())), m.name)
			}
		}
	}
}
