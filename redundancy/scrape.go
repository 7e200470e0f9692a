package redundancy

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
)

// scrapeTimeout bounds one GET of a report.
const scrapeTimeout = time.Second

// staleWork is the age after which a shim's last /work sample is
// forgotten: its address no longer answers (a restarted pod has another).
const staleWork = 10 * time.Minute

// Targets are the metrics servers (host:port) that report hot keys.
type Targets struct {
	// Nodes are the cache nodes'.
	Nodes []string
	// Shards are the storage shims', by shard name.
	Shards map[string]string
}

// Scraper gathers Reports from the data plane's metrics servers: GET
// /hotkeys of every node and shim, and GET /work of every shim, whose work
// units between two rounds give its load. It is safe for concurrent use.
type Scraper struct {
	client *http.Client
	now    func() time.Time

	mu   sync.Mutex            // guards work
	work map[string]workSample // each shim's last /work, by address
}

type workSample struct {
	at    time.Time
	units uint64
}

// NewScraper returns a scraper with its own HTTP client.
func NewScraper() *Scraper {
	return &Scraper{
		client: &http.Client{Timeout: scrapeTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true}},
		now:    time.Now,
		work:   map[string]workSample{},
	}
}

// Scrape reads one round of reports from t, in parallel. A process that
// does not answer is left out of the reports and named in the error; the
// reports of the others are returned with it.
func (s *Scraper) Scrape(ctx context.Context, t Targets) (Reports, error) {
	var (
		mu   sync.Mutex // guards r and errs
		r    = Reports{Shards: map[string]ShardReport{}}
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for _, addr := range t.Nodes {
		wg.Go(func() {
			h, err := s.hotKeys(ctx, addr)
			if err != nil {
				fail(err)
				return
			}
			rates := ratesOf(h)
			mu.Lock()
			r.Hits = append(r.Hits, rates)
			mu.Unlock()
		})
	}
	for shard, addr := range t.Shards {
		wg.Go(func() {
			h, err := s.hotKeys(ctx, addr)
			if err != nil {
				fail(err)
				return
			}
			load, err := s.load(ctx, addr)
			if err != nil {
				fail(err)
			}
			mu.Lock()
			r.Shards[shard] = ShardReport{Keys: ratesOf(h), Load: load}
			mu.Unlock()
		})
	}
	wg.Wait()
	s.forgetStale()
	return r, errors.Join(errs...)
}

// forgetStale drops the /work samples of addresses that have not
// answered for staleWork.
func (s *Scraper) forgetStale() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, w := range s.work {
		if now.Sub(w.at) > staleWork {
			delete(s.work, addr)
		}
	}
}

// ratesOf turns a report's counts into rates per second.
func ratesOf(h metrics.HotKeys) []KeyRate {
	if !(h.Interval > 0) {
		return nil
	}
	out := make([]KeyRate, 0, len(h.Keys))
	for _, k := range h.Keys {
		out = append(out, KeyRate{Key: string(k.Key), Reads: float64(k.Reads) / h.Interval, Writes: float64(k.Writes) / h.Interval})
	}
	return out
}

func (s *Scraper) hotKeys(ctx context.Context, addr string) (metrics.HotKeys, error) {
	var h metrics.HotKeys
	err := metrics.GetJSON(ctx, s.client, addr, metrics.HotKeysPath, metrics.MaxHotKeysAnswer, &h)
	return h, err
}

// load is the shim's work units per second since the previous round, 0
// on the first.
func (s *Scraper) load(ctx context.Context, addr string) (float64, error) {
	var w metrics.Work
	if err := metrics.GetJSON(ctx, s.client, addr, metrics.WorkPath, metrics.MaxSmallAnswer, &w); err != nil {
		return 0, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.work[addr]
	s.work[addr] = workSample{at: now, units: w.Units}
	if !ok || !now.After(prev.at) || w.Units < prev.units {
		return 0, nil // first round, or the process restarted
	}
	return float64(w.Units-prev.units) / now.Sub(prev.at).Seconds(), nil
}
