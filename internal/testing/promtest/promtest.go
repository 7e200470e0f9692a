// Package promtest checks DistCache's dashboards and alerting rules against
// a real, running Prometheus, for the tests that run one: a standalone
// cluster's (`distcache up --prometheus`) and one scraping a real
// Kubernetes node (test/localkube).
package promtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/distcache/distcache/alerts"
	"github.com/distcache/distcache/dashboards"
	"github.com/distcache/distcache/internal/testing/poll"
)

// Prometheus is a running Prometheus, through its HTTP API.
type Prometheus struct {
	API promv1.API
	// Alive, if set, is called at every poll and fails the test if the
	// Prometheus has exited.
	Alive func()
}

// New connects to the Prometheus at addr (host:port).
func New(addr string) (*Prometheus, error) {
	c, err := promapi.NewClient(promapi.Config{Address: "http://" + addr})
	if err != nil {
		return nil, fmt.Errorf("cannot connect to Prometheus at %s: %w", addr, err)
	}
	return &Prometheus{API: promv1.NewAPI(c)}, nil
}

// Query evaluates q now; it must be an instant vector.
func (p *Prometheus) Query(ctx context.Context, q string) (model.Vector, error) {
	v, _, _, err := p.API.Query(ctx, q, time.Now())
	if err != nil {
		return nil, fmt.Errorf("cannot query %s: %w", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("%s: a %s, want a vector", q, v.Type())
	}
	return vec, nil
}

// Await polls q until cond holds for its result.
func (p *Prometheus) Await(t testing.TB, what, q string, cond func(model.Vector) bool) {
	t.Helper()
	poll.Eventually(t, what, func() (bool, error) {
		if p.Alive != nil {
			p.Alive()
		}
		v, err := p.Query(t.Context(), q)
		return err == nil && cond(v), fmt.Errorf("%s: %v: %w", q, v, err)
	})
}

// DashboardsHaveData requires every query of every dashboard panel, with
// namespace and cluster selected in the dashboards' variables, to return
// series; the operator's dashboard only when kubernetes is true, the
// switches' only in SwitchPanelsHaveData.
func (p *Prometheus) DashboardsHaveData(t testing.TB, namespace, cluster string, kubernetes bool) {
	t.Helper()
	p.panelsHaveData(t, namespace, cluster, func(q dashboards.Query) bool { return !q.Switches && (kubernetes || !q.Kubernetes) })
}

// SwitchPanelsHaveData requires every query of the switches' dashboard
// to return series for a cluster with switch-backed layers.
func (p *Prometheus) SwitchPanelsHaveData(t testing.TB, namespace, cluster string) {
	t.Helper()
	p.panelsHaveData(t, namespace, cluster, func(q dashboards.Query) bool { return q.Switches })
}

func (p *Prometheus) panelsHaveData(t testing.TB, namespace, cluster string, want func(dashboards.Query) bool) {
	t.Helper()
	queries, err := dashboards.Queries()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if !want(q) {
			continue
		}
		p.Await(t, "panel "+q.Dashboard+" / "+q.Panel, q.Expand(namespace, cluster),
			func(v model.Vector) bool { return len(v) > 0 })
	}
}

// RulesHealthy waits until every alerting rule of DistCache's rules file
// is loaded and has evaluated without error.
func (p *Prometheus) RulesHealthy(t testing.TB) {
	t.Helper()
	want := strings.Count(string(alerts.Rules), "- alert: ")
	if want == 0 {
		t.Fatalf("no alerting rule in %s", alerts.FileName)
	}
	poll.Eventually(t, "every alerting rule healthy", func() (bool, error) {
		if p.Alive != nil {
			p.Alive()
		}
		rules, err := p.API.Rules(t.Context(), nil)
		if err != nil {
			return false, err
		}
		var healthy []string
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				if ar, ok := r.(promv1.AlertingRule); ok && ar.Health == promv1.RuleHealthGood {
					healthy = append(healthy, ar.Name)
				}
			}
		}
		slices.Sort(healthy)
		return len(healthy) == want, fmt.Errorf("healthy alerting rules %v, want all %d of %s: %+v", healthy, want, alerts.FileName, rules)
	})
}
