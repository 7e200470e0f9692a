package podstatus

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/redundancy"
)

// HotKeys reads the hot-key reports of data-plane pods on their metrics
// port (GET /hotkeys and, of the shims, GET /work): the input of the
// decision of copies (package redundancy).
type HotKeys struct {
	// Port is the pods' metrics port.
	Port int
	// Scraper reads the reports and keeps each shim's last work sample.
	Scraper *redundancy.Scraper
}

// NewHotKeys returns a reader of the reports on port.
func NewHotKeys(port int) *HotKeys {
	return &HotKeys{Port: port, Scraper: redundancy.NewScraper()}
}

// Reports reads a round of reports from the cache nodes' pods and the
// storage shims' pods (by shard name). Pods without an IP are not asked;
// missing counts them and the pods that did not answer, which the error
// names.
func (h *HotKeys) Reports(ctx context.Context, nodes []*corev1.Pod, shims map[string]*corev1.Pod) (r redundancy.Reports, missing int, err error) {
	t := redundancy.Targets{Shards: map[string]string{}}
	for _, p := range nodes {
		if addr := h.addr(p); addr != "" {
			t.Nodes = append(t.Nodes, addr)
		} else {
			missing++
		}
	}
	for shard, p := range shims {
		if addr := h.addr(p); addr != "" {
			t.Shards[shard] = addr
		} else {
			missing++
		}
	}
	r, err = h.Scraper.Scrape(ctx, t)
	missing += len(t.Nodes) - len(r.Hits) + len(t.Shards) - len(r.Shards)
	if err != nil {
		err = fmt.Errorf("cannot read every hot-key report: %w", err)
	}
	return r, missing, err
}

func (h *HotKeys) addr(p *corev1.Pod) string { return metricsAddr(p, h.Port) }

// metricsAddr is pod p's metrics server at port, "" without an IP.
func metricsAddr(p *corev1.Pod, port int) string {
	if p == nil || p.Status.PodIP == "" {
		return ""
	}
	return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))
}
