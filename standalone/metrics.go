package standalone

import (
	"github.com/prometheus/client_golang/prometheus"

	dpmetrics "github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/standalone/promsd"
)

// supervisorCollector exports what `distcache up` knows of its processes,
// read from the status it serves (one series per process of the plan: a
// bounded set).
type supervisorCollector struct {
	c               *cluster
	restarts, ready *prometheus.Desc
}

func newSupervisorCollector(c *cluster) *supervisorCollector {
	labels := []string{"process", "kind"}
	return &supervisorCollector{
		c: c,
		restarts: prometheus.NewDesc("distcache_supervisor_process_restarts_total",
			"Times the supervisor started a process again after it exited (a crash loop shows as a steady rate).", labels, nil),
		ready: prometheus.NewDesc("distcache_supervisor_process_ready",
			"1 while the process runs and its last readiness probe passed, else 0.", labels, nil),
	}
}

func (s *supervisorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.restarts
	ch <- s.ready
}

func (s *supervisorCollector) Collect(ch chan<- prometheus.Metric) {
	// The readiness and restarts need no map: the last one read will do,
	// and a scrape does not read the map file.
	for _, p := range s.c.processes(s.c.lastMap()) {
		ready := 0.0
		if p.Ready {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(s.restarts, prometheus.CounterValue, float64(p.Restarts), p.Name, p.Kind)
		ch <- prometheus.MustNewConstMetric(s.ready, prometheus.GaugeValue, ready, p.Name, p.Kind)
	}
}

// serveMetrics serves the supervisor's /metrics and /healthz at the plan's
// metrics address, its series labelled role=supervisor as every process's
// are labelled with its role, until the returned server is closed.
func (c *cluster) serveMetrics() (*dpmetrics.Server, error) {
	reg, wrapped := dpmetrics.Registry(promsd.KindSupervisor, "")
	if err := wrapped.Register(newSupervisorCollector(c)); err != nil {
		return nil, err
	}
	return dpmetrics.Listen(c.cfg.Plan.MetricsAddr, reg, nil)
}
