package layersizing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
)

// scrapeTimeout bounds one GET of a curve.
const scrapeTimeout = time.Second

// Scraper reads the nodes' curves (GET /mrc). It is safe for concurrent
// use.
type Scraper struct {
	client *http.Client
}

// NewScraper returns a scraper with its own HTTP client.
func NewScraper() *Scraper {
	return &Scraper{client: &http.Client{Timeout: scrapeTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true}}}
}

// Scrape reads the curve of every member in addrs (metrics server
// host:port by member name), in parallel. A node that does not answer is
// left out and named in the error; the others' curves come with it.
func (s *Scraper) Scrape(ctx context.Context, addrs map[string]string) (Reports, error) {
	var (
		mu   sync.Mutex // guards r and errs
		r    = Reports{}
		errs []error
		wg   sync.WaitGroup
	)
	for member, addr := range addrs {
		wg.Go(func() {
			var c metrics.MissRatioCurve
			err := metrics.GetJSON(ctx, s.client, addr, metrics.MissRatioCurvePath, metrics.MaxMissRatioCurveAnswer, &c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("cannot read the miss-ratio curve of %s: %w", member, err))
				return
			}
			r[member] = c
		})
	}
	wg.Wait()
	return r, errors.Join(errs...)
}
