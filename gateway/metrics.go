package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats counts a Server's work. Counters only increase.
type Stats struct {
	Connections uint64 // connections accepted
	Rejected    uint64 // connections refused (MaxConnections)
	Commands    uint64 // commands run
	Errors      uint64 // commands answered with an error
	// AuthFailures counts AUTH and HELLO ... AUTH with a wrong user or
	// password.
	AuthFailures uint64
	// ProtocolErrors counts connections ended for what the client sent:
	// malformed RESP or input over Redis' limits (guard.go), a command
	// larger than MaxCommandBytes, or one not complete within
	// CommandTimeout.
	ProtocolErrors uint64
}

// counters are the live Stats counters.
type counters struct {
	connections, rejected, commands, errors, authFailures, protocolErrors atomic.Uint64
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Connections:    s.stats.connections.Load(),
		Rejected:       s.stats.rejected.Load(),
		Commands:       s.stats.commands.Load(),
		Errors:         s.stats.errors.Load(),
		AuthFailures:   s.stats.authFailures.Load(),
		ProtocolErrors: s.stats.protocolErrors.Load(),
	}
}

// metrics are the gateway's distcache_gateway_* series.
type metrics struct {
	commands       *prometheus.CounterVec
	errors         *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	connections    prometheus.Gauge
	pipelineDepth  prometheus.Histogram
	protocolErrors prometheus.Counter
	// series holds each command's series (and otherCommand's), looked up
	// once rather than by label on every command.
	series map[string]*commandSeries
}

// commandSeries are one command's series. Its latency histogram is
// created when the command first runs, so that commands never used add no
// buckets to a scrape.
type commandSeries struct {
	count, errors prometheus.Counter
	durationOnce  sync.Once
	duration      prometheus.Observer
	histogram     atomic.Value // duration once created, for INFO to read
	vec           *prometheus.HistogramVec
	name          string
	stat          commandStat // INFO commandstats (commandstats.go)
}

// observe records one run of the command that took d.
func (c *commandSeries) observe(d time.Duration, failed bool) {
	c.count.Inc()
	c.durationOnce.Do(func() {
		c.duration = c.vec.WithLabelValues(c.name)
		c.histogram.Store(c.duration)
	})
	c.duration.Observe(d.Seconds())
	if failed {
		c.errors.Inc()
	}
}

// otherCommand labels the commands the gateway does not know, so that a
// client cannot create series at will.
const otherCommand = "unknown"

// newMetrics registers the gateway's metrics with reg; inFlight reads the
// commands running in the cluster now.
func newMetrics(reg prometheus.Registerer, inFlight func() float64) (*metrics, error) {
	m := &metrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distcache_gateway_commands_total", Help: "Redis commands the gateway ran, by command.",
		}, []string{"command"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "distcache_gateway_command_errors_total", Help: "Redis commands the gateway answered with an error, by command.",
		}, []string{"command"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "distcache_gateway_command_duration_seconds",
			Help:    "Time from a command's start to its reply, by command.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}, []string{"command"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "distcache_gateway_connections", Help: "Open client connections.",
		}),
		pipelineDepth: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "distcache_gateway_pipeline_depth", Help: "Commands read together from a connection (a pipeline).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		protocolErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "distcache_gateway_protocol_errors_total",
			Help: "Connections the gateway ended for a protocol error: malformed RESP, input over Redis' limits, a command too large or not complete in time.",
		}),
	}
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "distcache_gateway_cluster_commands",
		Help: "Commands running in the cluster now; at most --max-in-flight, the others wait in the gateway.",
	}, inFlight)
	for _, c := range []prometheus.Collector{m.commands, m.errors, m.duration, m.connections, m.pipelineDepth, m.protocolErrors, running} {
		if err := reg.Register(c); err != nil {
			var dup prometheus.AlreadyRegisteredError
			if errors.As(err, &dup) {
				return nil, fmt.Errorf("cannot register the gateway's metrics (one gateway per registry): %w", err)
			}
			return nil, fmt.Errorf("cannot register the gateway's metrics: %w", err)
		}
	}
	m.series = make(map[string]*commandSeries, len(table)+1)
	for _, c := range append(table, &command{name: otherCommand}) {
		m.series[c.name] = &commandSeries{count: m.commands.WithLabelValues(c.name),
			errors: m.errors.WithLabelValues(c.name), vec: m.duration, name: c.name}
	}
	// The latencies the overview dashboard shows exist from the start.
	for _, name := range []string{"get", "set"} {
		m.duration.WithLabelValues(name)
	}
	return m, nil
}

// observe counts a command (nil: unknown) and its reply.
func (s *Server) observe(c *command, reply []byte, d time.Duration) {
	name := otherCommand
	if c != nil {
		name = c.name
	}
	s.stats.commands.Add(1)
	failed := len(reply) > 0 && reply[0] == '-'
	if failed {
		s.stats.errors.Add(1)
		s.errorStats.count(reply)
	}
	series := s.metrics.series[name]
	series.observe(d, failed)
	if c != nil { // INFO commandstats (commandstats.go)
		if failed && (bytes.HasPrefix(reply, []byte("-ERR wrong number of arguments")) || bytes.HasPrefix(reply, []byte("-NOAUTH"))) {
			series.stat.rejected.Add(1)
			series.stat.rejectedNanos.Add(uint64(d))
		}
	}
}

// protocolError counts a connection ended for what its client sent.
func (s *Server) protocolError() {
	s.stats.protocolErrors.Add(1)
	s.metrics.protocolErrors.Inc()
}
