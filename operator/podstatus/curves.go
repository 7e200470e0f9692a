package podstatus

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/distcache/distcache/layersizing"
)

// Curves reads the miss-ratio curves of cache-node pods on their metrics
// port (GET /mrc): the input of the sizing of cache layers (package
// layersizing).
type Curves struct {
	// Port is the pods' metrics port.
	Port int
	// Scraper reads the curves.
	Scraper *layersizing.Scraper
}

// NewCurves returns a reader of the curves on port.
func NewCurves(port int) *Curves {
	return &Curves{Port: port, Scraper: layersizing.NewScraper()}
}

// Curves reads the curve of every pod in nodes (by member name). Pods
// without an IP are not asked; missing counts them and the pods that did
// not answer, which the error names.
func (c *Curves) Curves(ctx context.Context, nodes map[string]*corev1.Pod) (r layersizing.Reports, missing int, err error) {
	addrs := map[string]string{}
	for member, p := range nodes {
		if a := metricsAddr(p, c.Port); a != "" {
			addrs[member] = a
		} else {
			missing++
		}
	}
	r, err = c.Scraper.Scrape(ctx, addrs)
	missing += len(addrs) - len(r)
	if err != nil {
		err = fmt.Errorf("cannot read every miss-ratio curve: %w", err)
	}
	return r, missing, err
}
