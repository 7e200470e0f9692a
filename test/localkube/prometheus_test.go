package localkube

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/distcache/distcache/alerts"
	"github.com/distcache/distcache/internal/freeport"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/promtest"
)

// prometheus is a real Prometheus on the host, scraping the localkube
// with the scrape configurations users without the Prometheus Operator add
// (config/prometheus/scrape-configs.yaml), discovering the pods through the
// API server with the admin's kubeconfig, and loading DistCache's alerting
// rules. It is upstream's, built from the Go module proxy (make
// prometheus-kubernetes): Debian's leaves out Kubernetes service discovery.
type prometheus struct {
	*promtest.Prometheus
	t      *testing.T
	k      *kube
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	log    string        // its log file
}

// prometheusVersion is the upstream Prometheus module version the Makefile
// builds (PROMETHEUS_VERSION), for a test run without make.
const prometheusVersion = "v0.316.0"

// prometheusBinary is DISTCACHE_PROMETHEUS, or where the Makefile builds
// it by default.
func prometheusBinary(t *testing.T) string {
	bin := os.Getenv("DISTCACHE_PROMETHEUS")
	if bin == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(home, ".cache", "distcache", "prometheus", prometheusVersion+"-kubernetes-sd", "prometheus")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no upstream Prometheus (`make prometheus-kubernetes` builds it): %v", err)
	}
	return bin
}

// startPrometheus writes the configuration and starts Prometheus on a
// free loopback port, returning once it is ready.
func startPrometheus(k *kube) *prometheus {
	t := k.t
	t.Helper()
	bin := prometheusBinary(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, prometheusConfig(t, k.kubeconfig(), dir), 0o644); err != nil {
		t.Fatal(err)
	}
	ports, _, err := freeport.Ports("127.0.0.1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	p := &prometheus{t: t, k: k, exited: make(chan struct{}), log: filepath.Join(dir, "prometheus.log")}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	p.cmd = exec.CommandContext(k.ctx, bin, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.stop)
	if p.Prometheus, err = promtest.New(addr); err != nil {
		t.Fatal(err)
	}
	p.Alive = p.mustRun
	poll.Eventually(t, "Prometheus ready", func() (bool, error) {
		p.mustRun()
		req, err := http.NewRequestWithContext(k.ctx, http.MethodGet, "http://"+addr+"/-/ready", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("/-/ready: %s", resp.Status)
	})
	return p
}

// prometheusConfig is a configuration with the repository's Kubernetes
// scrape configurations, each service discovery given kubeconfig (the
// file's Prometheus runs in the cluster), a scrape and evaluation every
// second, and the alerting rules written into dir.
func prometheusConfig(t *testing.T, kubeconfig, dir string) []byte {
	raw, err := os.ReadFile(filepath.Join(kubetest.RepoRoot(), "config", "prometheus", "scrape-configs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var jobs []map[string]any
	if err := yaml.Unmarshal(raw, &jobs); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		sds, _ := j["kubernetes_sd_configs"].([]any)
		for _, sd := range sds {
			sd.(map[string]any)["kubeconfig_file"] = kubeconfig
		}
	}
	rules := filepath.Join(dir, alerts.FileName)
	if err := os.WriteFile(rules, alerts.Rules, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files":     []string{rules},
		"scrape_configs": jobs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stop ends the Prometheus this test started, by its PID.
func (p *prometheus) stop() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// mustRun fails the test with Prometheus' log if it has exited.
func (p *prometheus) mustRun() {
	select {
	case <-p.exited:
		p.t.Fatalf("Prometheus exited (%v):\n%s", p.cmd.ProcessState, p.logTail())
	default:
	}
}

// dashboardsHaveData checks, while the traffic of cluster (in namespace)
// is within the last minute, that Prometheus scrapes every data-plane pod
// and the operator and that every query of every dashboard panel, the
// operator's included, returns series with the cluster selected in the
// namespace and cluster variables (so the operator's per-cluster series
// must carry the CacheCluster's namespace: honor_labels); and that the
// alerting rules are loaded and evaluate without error.
func (p *prometheus) dashboardsHaveData(namespace, cluster string, pods int) {
	t := p.t
	t.Helper()
	p.Await(t, "every data-plane pod scraped", `up{job="distcache-data-plane", namespace="`+namespace+`", cluster="`+cluster+`"} == 1`,
		func(v model.Vector) bool { return len(v) == pods })
	p.Await(t, "the operator scraped", `up{job="distcache-operator"} == 1`, func(v model.Vector) bool { return len(v) == 1 })
	p.DashboardsHaveData(t, namespace, cluster, true)
	p.RulesHealthy(t)
}

// remapsSeen checks that the operator's series recorded the failovers
// of cluster's members that the faults caused: its published map's
// version, and (since the operator pod last started) members failed.
func (p *prometheus) remapsSeen(cluster string) {
	p.t.Helper()
	p.Await(p.t, "failovers counted by the operator", `sum(distcache_operator_remaps_total{cluster="`+cluster+`", to="Failed"}) > 0`,
		func(v model.Vector) bool { return len(v) == 1 })
	p.Await(p.t, "the published map's version", `distcache_operator_map_version{cluster="`+cluster+`"} > 1`,
		func(v model.Vector) bool { return len(v) == 1 })
}

// logTail is the end of Prometheus' log.
func (p *prometheus) logTail() string {
	raw, _ := os.ReadFile(p.log)
	s := string(raw)
	if i := strings.LastIndex(s[:max(0, len(s)-4000)], "\n"); i >= 0 {
		s = s[i+1:]
	}
	return s
}
