package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/promtest"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/standalone/promsd"
)

// TestMetricsPassPromtool scrapes /metrics of every target that `distcache
// up` lists for Prometheus — storage shims, cache nodes of both layers, the
// control loop, the gateway and the supervisor itself — after a short
// workload, and runs `promtool check metrics` (Debian's prometheus package;
// `make test` installs it) on each: names, units, types and help texts
// follow Prometheus' conventions. The supervisor's series report its processes'
// readiness and restarts. The cluster's own Prometheus (`distcache up
// --prometheus`) scrapes every target, returns series for every query of
// every dashboard panel, loads DistCache's alerting rules, and raises
// DistCacheMemberFailed when a cache node is killed.
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not on PATH: `make prometheus` installs it")
	}
	bin := buildDistcache(t)
	// A member fails a second after its node stops answering.
	cluster := smallCluster + "  failover: {gracePeriod: 1s, holdDown: 1s}\n"
	file, runDir := clusterFile(t, bin, cluster)
	out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir, "--prometheus")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	// Requests of every kind, so that the labelled series exist.
	if out, err := run(t, bin, "bench", "--run-dir", runDir, "--rate", "2000", "--duration", "2s", "--warmup", "0s",
		"--keys", "200", "--write-ratio", "0.2", "--predict=false"); err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	st := status(t, bin, runDir)
	// The targets file lists every /metrics address, the supervisor's too.
	raw, err := os.ReadFile(st.TargetsFile)
	if err != nil {
		t.Fatal(err)
	}
	var groups []promsd.Group
	if err := json.Unmarshal(raw, &groups); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, g := range groups {
		kinds[g.Labels["kind"]]++
		body := scrape(t, g.Targets[0])
		cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("promtool check metrics on %s: %v\n%s", g.Labels["process"], err, out)
		}
	}
	if kinds["node"] != 4 || kinds["shim"] != 2 || kinds["controlloop"] != 1 || kinds["gateway"] != 1 || kinds["supervisor"] != 1 || len(groups) != 9 {
		t.Fatalf("targets by kind: %v, want 4 nodes, 2 shims, the control loop, the gateway and the supervisor", kinds)
	}
	for _, p := range st.Processes {
		if p.MetricsAddr != "" && !slices.ContainsFunc(groups, func(g promsd.Group) bool { return g.Targets[0] == p.MetricsAddr }) {
			t.Errorf("%s's %s not among the targets", p.Name, p.MetricsAddr)
		}
	}
	if sup := scrape(t, st.MetricsAddr); !strings.Contains(sup, `distcache_supervisor_process_ready{kind="node",process="cli-spine-0",role="supervisor"} 1`) ||
		!strings.Contains(sup, `distcache_supervisor_process_restarts_total{kind="redis",process="cli-rack-0-0-redis",role="supervisor"} 0`) {
		t.Errorf("the supervisor's metrics lack its processes' readiness and restarts:\n%s", sup)
	}
	alertsWork(t, scrapedByPrometheus(t, st, len(groups)), runDir)
}

// clusterPrometheus is the cluster's Prometheus (`distcache up
// --prometheus`).
func clusterPrometheus(t *testing.T, st control.Status) *promtest.Prometheus {
	t.Helper()
	i := slices.IndexFunc(st.Processes, func(p control.Process) bool { return p.Kind == string(plan.Prometheus) })
	if i < 0 {
		t.Fatal("no prometheus process in the status")
	}
	prom, err := promtest.New(st.Processes[i].Addr)
	if err != nil {
		t.Fatal(err)
	}
	return prom
}

// scrapedByPrometheus waits until the cluster's Prometheus (`distcache up
// --prometheus`) has scraped every one of its targets (up is 1 for each)
// and holds the workload's requests, and checks that every query of every
// dashboard panel but the operator's (test/localkube's), with the
// cluster selected in Grafana's variables, returns series: no panel of a
// running cluster is empty.
func scrapedByPrometheus(t *testing.T, st control.Status, targets int) *promtest.Prometheus {
	t.Helper()
	prom := clusterPrometheus(t, st)
	prom.Await(t, "Prometheus scraping every target", `up{job="distcache"} == 1`,
		func(v model.Vector) bool { return len(v) == targets })
	prom.Await(t, "the workload's requests in Prometheus", `sum(distcache_requests_total{kind="node",op="GET"})`,
		func(v model.Vector) bool { return len(v) == 1 && v[0].Value > 0 })
	prom.DashboardsHaveData(t, ".*", st.Cluster, false)
	return prom
}

// alertsWork checks that the cluster's Prometheus loaded DistCache's
// alerting rules and that they hold with the live series: a cache node
// killed (and held down) makes DistCacheMemberFailed pending, with the
// cluster's label, once the control loop has failed the member, and
// firing a minute later.
func alertsWork(t *testing.T, prom *promtest.Prometheus, runDir string) {
	t.Helper()
	prom.RulesHealthy(t)
	if err := control.Dial(runDir).Kill(t.Context(), "cli-spine-0"); err != nil {
		t.Fatal(err)
	}
	// Pending once the control loop has failed the member, firing a
	// minute later (the rule's `for:`), with the cluster's label.
	memberFailed := func(state promv1.AlertState) func() (bool, error) {
		return func() (bool, error) {
			res, err := prom.API.Alerts(t.Context())
			if err != nil {
				return false, err
			}
			for _, a := range res.Alerts {
				if a.Labels["alertname"] == "DistCacheMemberFailed" && a.Labels["cluster"] == "cli" && a.State == state {
					return true, nil
				}
			}
			return false, fmt.Errorf("alerts %+v", res.Alerts)
		}
	}
	poll.Eventually(t, "DistCacheMemberFailed pending", memberFailed(promv1.AlertStatePending))
	poll.Within(t, "DistCacheMemberFailed firing", 3*time.Minute, memberFailed(promv1.AlertStateFiring))
}

// scrape returns addr's /metrics.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
