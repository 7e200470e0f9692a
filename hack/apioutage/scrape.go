package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape is one URL's series (nil: the scrape failed), scraped at the
// tick at and received at got.
type scrape struct {
	at, got time.Time
	series  map[string]float64
}

// scraper scrapes the URLs and keeps what the table needs.
type scraper struct {
	urls    []string
	client  *http.Client
	mu      sync.Mutex
	out     *bufio.Writer
	f       *os.File
	scrapes map[string][]scrape // by URL
}

func newScraper(urls []string, path string, timeout time.Duration) (*scraper, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &scraper{urls: urls, client: &http.Client{Timeout: timeout}, f: f, out: bufio.NewWriter(f),
		scrapes: map[string][]scrape{}}, nil
}

func (s *scraper) close() {
	_ = s.out.Flush()
	_ = s.f.Close()
}

func (s *scraper) mark(what string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, "%s\t-\t# %s\t\n", at.UTC().Format(time.RFC3339Nano), what)
}

// scrapeAll scrapes every URL at once and waits for them.
func (s *scraper) scrapeAll(at time.Time) {
	var wg sync.WaitGroup
	for _, u := range s.urls {
		wg.Go(func() {
			series, err := s.get(u)
			got := time.Now()
			s.mu.Lock()
			defer s.mu.Unlock()
			ts := at.UTC().Format(time.RFC3339Nano)
			if err != nil {
				fmt.Fprintf(s.out, "%s\t%s\t# failed: %v\t\n", ts, u, err)
				s.scrapes[u] = append(s.scrapes[u], scrape{at: at})
				return
			}
			keys := make([]string, 0, len(series))
			for k, v := range series {
				if v != 0 {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(s.out, "%s\t%s\t%s\t%g\n", ts, u, k, series[k])
			}
			s.scrapes[u] = append(s.scrapes[u], scrape{at: at, got: got, series: series})
		})
	}
	wg.Wait()
	s.mu.Lock()
	_ = s.out.Flush()
	s.mu.Unlock()
}

// get scrapes one URL: its distcache_ series, by name{labels}.
func (s *scraper) get(u string) (map[string]float64, error) {
	resp, err := s.client.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, fam := range fams {
		if !strings.HasPrefix(name, "distcache_") {
			continue
		}
		for _, m := range fam.GetMetric() {
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				v = m.GetUntyped().GetValue()
			default:
				continue
			}
			out[seriesKey(name, m.GetLabel())] = v
		}
	}
	return out, nil
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l.GetName()+"="+strconv.Quote(l.GetValue()))
	}
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// sum adds the series of name whose labels include every one of want.
func sum(series map[string]float64, name string, want ...string) float64 {
	var t float64
	for k, v := range series {
		if !strings.HasPrefix(k, name+"{") {
			continue
		}
		ok := true
		for _, w := range want {
			if !strings.Contains(k, w) {
				ok = false
				break
			}
		}
		if ok {
			t += v
		}
	}
	return t
}

// node metrics the table shows.
const (
	nodeRole = `role="node"`
	getOp    = `op="GET"`
)

// writeMinutes writes the per-minute table: minute k covers
// [t0+k·1m, t0+(k+1)·1m), where t0 is the stop (k < 0: before it).
func (s *scraper) writeMinutes(w io.Writer, t0, t1 time.Time, o options) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(w, "API server stopped (%s) at %s, back at %s (%.0f s). Scrapes every %v of %s.\n\n",
		o.mode, t0.UTC().Format(time.RFC3339), t1.UTC().Format(time.RFC3339), t1.Sub(t0).Seconds(), o.every, strings.Join(o.urls, " "))
	fmt.Fprintf(w, "| minute | from (UTC) | API server | node GET hits/s | GET misses/s | hit share | hits / before | shim lease grants | lease failures | lowest lease_valid | map versions | failed scrapes |\n")
	fmt.Fprintf(w, "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	first := -int(o.before / time.Minute)
	last := int((o.outage + o.after + time.Minute - 1) / time.Minute)
	type row struct {
		hits, misses, grants, fails float64
		valid                       float64
		versions                    map[float64]bool
		failed                      int
		ok                          bool
	}
	rows := map[int]*row{}
	for k := first; k < last; k++ {
		from, to := t0.Add(time.Duration(k)*time.Minute), t0.Add(time.Duration(k+1)*time.Minute)
		r := &row{valid: 1, versions: map[float64]bool{}}
		rows[k] = r
		for _, u := range s.urls {
			a, b, failed := bounds(s.scrapes[u], from, to)
			r.failed += failed
			for _, sc := range s.scrapes[u] {
				if sc.at.Before(from) || !sc.at.Before(to) || sc.series == nil {
					continue
				}
				for k, v := range sc.series {
					if strings.HasPrefix(k, "distcache_lease_valid{") && strings.Contains(k, nodeRole) {
						r.valid = min(r.valid, v)
					}
				}
				for k, v := range sc.series {
					if strings.HasPrefix(k, "distcache_map_version{") {
						r.versions[v] = true
					}
				}
			}
			if a == nil || b == nil {
				continue
			}
			d := b.got.Sub(a.got).Seconds()
			if d <= 0 {
				continue
			}
			r.hits += (sum(b.series, "distcache_requests_total", nodeRole, getOp, `result="hit"`) - sum(a.series, "distcache_requests_total", nodeRole, getOp, `result="hit"`)) / d
			r.misses += (sum(b.series, "distcache_requests_total", nodeRole, getOp, `result="miss"`) - sum(a.series, "distcache_requests_total", nodeRole, getOp, `result="miss"`)) / d
			r.grants += sum(b.series, "distcache_shim_lease_grants_total", nodeRole) - sum(a.series, "distcache_shim_lease_grants_total", nodeRole)
			r.fails += sum(b.series, "distcache_shim_lease_failures_total", nodeRole) - sum(a.series, "distcache_shim_lease_failures_total", nodeRole)
			r.ok = true
		}
	}
	var beforeHits float64
	var n int
	for k := first; k < 0; k++ {
		if rows[k].ok {
			beforeHits += rows[k].hits
			n++
		}
	}
	if n > 0 {
		beforeHits /= float64(n)
	}
	for k := first; k < last; k++ {
		r := rows[k]
		from := t0.Add(time.Duration(k) * time.Minute)
		phase := phaseOf(from, t0, t1)
		if !r.ok {
			fmt.Fprintf(w, "| %d | %s | %s | | | | | | | | | %d |\n", k, stamp(from), phase, r.failed)
			continue
		}
		share, ratio := "", ""
		if r.hits+r.misses > 0 {
			share = fmt.Sprintf("%.1f %%", 100*r.hits/(r.hits+r.misses))
		}
		if beforeHits > 0 {
			ratio = fmt.Sprintf("%.1f %%", 100*r.hits/beforeHits)
		}
		var vs []string
		for v := range r.versions {
			vs = append(vs, strconv.FormatFloat(v, 'f', -1, 64))
		}
		slices.Sort(vs)
		fmt.Fprintf(w, "| %d | %s | %s | %.1f | %.1f | %s | %s | %.0f | %.0f | %.0f | %s | %d |\n",
			k, stamp(from), phase, r.hits, r.misses, share, ratio, r.grants, r.fails, r.valid, strings.Join(vs, ", "), r.failed)
	}
	fmt.Fprintf(w, "\nMinutes before the stop: %.1f node GET hits/s on average (the reference of \"hits / before\").\n", beforeHits)
}

// bounds returns the first and the last successful scrape in [from, to]
// (a scrape at to starts the next minute too), and how many in [from, to)
// failed.
func bounds(scrapes []scrape, from, to time.Time) (a, b *scrape, failed int) {
	for i := range scrapes {
		sc := &scrapes[i]
		if sc.at.Before(from) || sc.at.After(to) {
			continue
		}
		if sc.series == nil {
			if sc.at.Before(to) {
				failed++
			}
			continue
		}
		if a == nil {
			a = sc
		}
		b = sc
	}
	return a, b, failed
}
