// Package metrics holds the Prometheus metrics the data-plane roles share
// (DESIGN.md part 8) and the HTTP server that exposes them. Hot paths use
// pre-resolved children, so counting a request does not allocate.
//
// Every metric carries the constant labels the process registers with
// (role and member, see Registry), so one dashboard query spans all roles.
package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// Request results besides the wire statuses.
const (
	ResultHit  = "hit"  // served from a cache node's copy
	ResultMiss = "miss" // served by the storage shim
	ResultOK   = "ok"   // a write or control request that succeeded
)

// results lists the result label values, indexed by resultIndex.
var results = []string{
	ResultHit, ResultMiss, ResultOK, wire.StatusNotFound.String(),
	wire.StatusNotOwner.String(), wire.StatusUnavailable.String(),
	wire.StatusCoherence.String(), wire.StatusTooLarge.String(),
	wire.StatusOverloaded.String(), wire.StatusInternal.String(), "timeout",
}

// ResultTimeout labels requests that got no reply in time.
const ResultTimeout = "timeout"

func resultIndex(r string) int {
	for i, v := range results {
		if v == r {
			return i
		}
	}
	return len(results) - 1
}

// StatusResult is the result label of a reply status: ResultOK for OK.
func StatusResult(s wire.Status) string {
	if s == wire.StatusOK {
		return ResultOK
	}
	return s.String()
}

// DurationBuckets spans loopback hits (microseconds) to retried writes.
var DurationBuckets = prometheus.ExponentialBuckets(5e-6, 2, 18)

const ops = int(wire.MaxOp) + 1

// Requests counts requests by op and result and times them by op:
// distcache_requests_total{op,result} and
// distcache_request_duration_seconds{op}.
type Requests struct {
	counts    [ops][]prometheus.Counter
	durations [ops]prometheus.Observer
}

// NewRequests registers the request metrics with reg.
func NewRequests(reg prometheus.Registerer) (*Requests, error) {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "distcache_requests_total",
		Help: "Requests handled, by op and result (hit, miss, ok, or an error status).",
	}, []string{"op", "result"})
	dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "distcache_request_duration_seconds",
		Help:    "Time from receiving (or sending) a request to its reply, by op. A busy cache node times one GET in 16, hit or miss (all are counted in distcache_requests_total).",
		Buckets: DurationBuckets,
	}, []string{"op"})
	if err := Register(reg, total, dur); err != nil {
		return nil, err
	}
	r := &Requests{}
	for op := wire.OpGet; op <= wire.MaxOp; op++ {
		if op.IsReply() || op == wire.OpMore {
			continue
		}
		r.counts[op] = make([]prometheus.Counter, len(results))
		for i, res := range results {
			r.counts[op][i] = total.WithLabelValues(op.String(), res)
		}
		r.durations[op] = dur.WithLabelValues(op.String())
	}
	return r, nil
}

// Observe counts one request of op with result that took d (d < 0: not
// timed). A nil *Requests ignores it.
func (r *Requests) Observe(op wire.Op, result string, d time.Duration) {
	if r == nil || int(op) >= ops || r.counts[op] == nil {
		return
	}
	r.counts[op][resultIndex(result)].Inc()
	if d >= 0 {
		r.durations[op].Observe(d.Seconds())
	}
}

// RegisterTransport exposes an endpoint's counters:
// distcache_datagrams_total{direction}, distcache_bundles_total{direction},
// distcache_bundled_messages_total{direction},
// distcache_window_requests_total{direction},
// distcache_window_requests_stale_total, distcache_malformed_packets_total,
// distcache_retransmits_total, distcache_reassembly_dropped_total,
// distcache_mac_rejected_total{type}, distcache_replays_rejected_total{type}
// and distcache_unstamped_rejected_total{type} (one series per
// authenticated op), distcache_replay_evictions_total,
// distcache_replay_new_epochs_total and distcache_replay_senders.
func RegisterTransport(reg prometheus.Registerer, ep *transport.Endpoint) error {
	counter := func(name, help string, labels prometheus.Labels, f func(transport.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(f(ep.Stats())) })
	}
	for op := wire.OpPut; wire.Authenticated(op); op++ {
		if err := Register(reg, counter("distcache_mac_rejected_total",
			"Datagrams dropped for a missing or bad MAC (data-plane key), by op.", prometheus.Labels{"type": op.String()},
			func(s transport.Stats) uint64 { return s.MACRejected[op] })); err != nil {
			return err
		}
	}
	for op := wire.OpPut; wire.Authenticated(op); op++ {
		if err := Register(reg,
			counter("distcache_replays_rejected_total",
				"Signed datagrams dropped because the replay filter refused their stamp (a duplicate, behind the window, an older epoch or before the floor), by op.",
				prometheus.Labels{"type": op.String()}, func(s transport.Stats) uint64 { return s.ReplayRejected[op] }),
			counter("distcache_unstamped_rejected_total",
				"Signed datagrams dropped for carrying no stamp while stamps are required (--replay-protection=require), by op.",
				prometheus.Labels{"type": op.String()}, func(s transport.Stats) uint64 { return s.Unstamped[op] })); err != nil {
			return err
		}
	}
	if err := Register(reg,
		counter("distcache_replay_evictions_total", "Senders the replay filter forgot to make room; its floor rose to their latest stamp.",
			nil, func(s transport.Stats) uint64 { return s.Replay.Evictions }),
		counter("distcache_replay_new_epochs_total", "Restarts of senders seen by the replay filter (a newer epoch accepted).",
			nil, func(s transport.Stats) uint64 { return s.Replay.NewEpochs }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "distcache_replay_senders", Help: "Senders the replay filter tracks."},
			func() float64 { return float64(ep.Stats().Replay.Senders) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "distcache_replay_protection",
			Help: "The replay protection in use, the partition map's or --replay-protection's when stronger: 0 accept, 1 stamp, 2 require."},
			func() float64 { return float64(ep.ReplayMode()) })); err != nil {
		return err
	}
	// directions is a counter of traffic in and out, as two series.
	directions := func(name, help string, in, out func(transport.Stats) uint64) []prometheus.Collector {
		return []prometheus.Collector{
			counter(name, help, prometheus.Labels{"direction": "in"}, in),
			counter(name, help, prometheus.Labels{"direction": "out"}, out),
		}
	}
	var cs []prometheus.Collector
	cs = append(cs, directions("distcache_datagrams_total", "UDP datagrams received (in) and sent (out).",
		func(s transport.Stats) uint64 { return s.DatagramsIn }, func(s transport.Stats) uint64 { return s.DatagramsOut })...)
	cs = append(cs, directions("distcache_bundled_messages_total", "Messages received (in) and sent (out) inside bundle datagrams, several to one peer in one datagram.",
		func(s transport.Stats) uint64 { return s.BundledIn }, func(s transport.Stats) uint64 { return s.BundledOut })...)
	cs = append(cs, directions("distcache_bundles_total", "Bundle datagrams received (in) and sent (out), among distcache_datagrams_total.",
		func(s transport.Stats) uint64 { return s.BundlesIn }, func(s transport.Stats) uint64 { return s.BundlesOut })...)
	cs = append(cs, directions("distcache_window_requests_total", "Flow control: MOREs received (in: a receiver asked for the next window of a message this process sent) and sent (out).",
		func(s transport.Stats) uint64 { return s.MoreIn }, func(s transport.Stats) uint64 { return s.MoreOut })...)
	return Register(reg, append(cs,
		counter("distcache_window_requests_stale_total", "MOREs received for a message no longer kept (its receiver waited longer than the reassembly timeout).", nil,
			func(s transport.Stats) uint64 { return s.MoreStale }),
		counter("distcache_receive_calls_total", "Receive system calls that returned datagrams; datagrams in per call is the mean batch.", nil,
			func(s transport.Stats) uint64 { return s.Receives }),
		counter("distcache_send_errors_total", "Datagrams the kernel refused to send.", nil,
			func(s transport.Stats) uint64 { return s.SendErrors }),
		counter("distcache_malformed_packets_total", "Datagrams dropped because they failed to parse.", nil,
			func(s transport.Stats) uint64 { return s.Malformed }),
		counter("distcache_retransmits_total", "Requests sent again after no reply.", nil,
			func(s transport.Stats) uint64 { return s.Retransmits }),
		counter("distcache_reassembly_dropped_total", "Multi-datagram messages dropped incomplete.", nil,
			func(s transport.Stats) uint64 { return s.Reassembly.Expired + s.Reassembly.Evicted }),
	)...)
}

// Register registers every collector with reg, failing on the first
// conflict (two components sharing a registry by mistake) instead of
// panicking.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("cannot register metrics: %w", err)
		}
	}
	return nil
}

// GaugeFunc is a gauge read from f at scrape time.
func GaugeFunc(name, help string, f func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
}

// CounterFunc is a counter read from f at scrape time (a Stats field).
func CounterFunc(name, help string, f func() uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
		func() float64 { return float64(f()) })
}

// Registry returns a registry whose metrics all carry role and member
// labels, plus the Go and process collectors.
func Registry(role, member string) (*prometheus.Registry, prometheus.Registerer) {
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"role": role}
	if member != "" {
		labels["member"] = member
	}
	wrapped := prometheus.WrapRegistererWith(labels, reg)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg, wrapped
}

// Value is the value of a counter, gauge or untyped series (0 for other
// types), as a scrape decodes it.
func Value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}
