package softswitch

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
)

// RegisterMetrics exports the switch's Stats as distcache_switch_*
// counters, and whether a pipeline is installed.
func (s *Switch) RegisterMetrics(reg prometheus.Registerer) error {
	st := &s.stats
	counter := func(name, help string, f func() uint64) prometheus.Collector {
		return metrics.CounterFunc("distcache_switch_"+name+"_total", help, f)
	}
	return metrics.Register(reg,
		counter("received", "Datagrams received on the switch's ports.", st.Received.Load),
		counter("hits", "GETs answered from the switch's registers.", st.Hits.Load),
		counter("refused", "Hedged reads refused for want of a valid copy.", st.Refused.Load),
		counter("relayed", "Misses (and MOREs) relayed to a storage shim; on a client leaf, reads relayed to a cache switch.", st.Relayed.Load),
		counter("replies", "Shim replies (on a client leaf, cache switches' replies) relayed back to their clients.", st.Replies.Load),
		counter("coherence", "INVALIDATE, UPDATE, FETCH_REPLY and PING handled.", st.Coherence.Load),
		counter("dropped", "Datagrams the pipeline dropped.", st.Dropped.Load),
		counter("unparsed", "Datagrams that are not DistCache's or are too short.", st.Unparsed.Load),
		counter("hot_keys", "Hot-key digests of uncached keys.", st.HotKeys.Load),
		counter("queue_drops", "Packet-ins and digests the controller did not take in time.", st.QueueDrops.Load),
		counter("unconfigured", "Datagrams received before a pipeline was installed.", st.Unconfigured.Load),
		counter("pipeline_installs", "Pipelines installed: each started the switch with empty tables and zero registers.", st.PipelineInstalls.Load),
		metrics.GaugeFunc("distcache_switch_pipeline_installed", "1 when a controller has installed the pipeline.", func() float64 {
			if _, _, ok := s.Pipeline(); ok {
				return 1
			}
			return 0
		}),
	)
}

// Healthy reports an error until a pipeline is installed, and once the
// switch is closed.
func (s *Switch) Healthy() error {
	if s.closed.Load() {
		return errors.New("the switch is closed")
	}
	if _, _, ok := s.Pipeline(); !ok {
		return errors.New("no pipeline installed: waiting for the controller")
	}
	return nil
}
