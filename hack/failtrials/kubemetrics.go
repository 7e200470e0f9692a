package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/operator/controller/cachecluster"
)

// leaseMetrics are the prefixes of the series a mode's metrics snapshots
// keep: the shims' leases at the nodes, the shims' invalidations (released
// by lease or by map, timed out), and the reads a node did not serve.
var leaseMetrics = []string{
	"distcache_shim_lease_", "distcache_coherence_invalidations_total", "distcache_coherence_failures_total",
	"distcache_unleased_reads_total", "distcache_refused_reads_total",
}

// keepSeries reports whether a line of the Prometheus text format is a
// sample of one of the series of prefixes.
func keepSeries(line string, prefixes []string) bool {
	if strings.HasPrefix(line, "#") {
		return false
	}
	for _, p := range prefixes {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// snapshotMetrics writes the leaseMetrics series of every pod of the
// cluster to file, each line prefixed with the pod's name: what the shims
// and nodes counted, to compare before and after a mode. A pod that does
// not answer is noted in the file.
func (s *kubeSystem) snapshotMetrics(ctx context.Context, file string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pods, err := s.cs.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: cachecluster.LabelCluster + "=" + s.name})
	if err != nil {
		return fmt.Errorf("cannot list the pods of %s/%s: %w", s.namespace, s.name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", time.Now().UTC().Format(time.RFC3339))
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, p := range pods.Items {
		if p.Status.PodIP == "" {
			continue
		}
		url := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(cachecluster.MetricsPort)) + "/metrics"
		if err := scrape(ctx, hc, url, p.Name, &b); err != nil {
			fmt.Fprintf(&b, "# %s: %v\n", p.Name, err)
		}
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("cannot write %s: %w", file, err)
	}
	return nil
}

// scrape appends the leaseMetrics lines of url to b, prefixed with pod.
func scrape(ctx context.Context, hc *http.Client, url, pod string, b *strings.Builder) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("cannot scrape %s: %w", url, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cannot scrape %s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if keepSeries(sc.Text(), leaseMetrics) {
			fmt.Fprintf(b, "%s %s\n", pod, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("cannot read %s: %w", url, err)
	}
	return nil
}
