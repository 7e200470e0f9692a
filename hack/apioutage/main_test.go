package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseBounds(t *testing.T) {
	for _, args := range [][]string{
		{"-out", "x"},                        // no URL
		{"http://a/metrics"},                 // no -out
		{"-out", "x", "-mode", "pause", "u"}, // bad mode
		{"-out", "x", "-outage", "31m", "u"}, // too long
		{"-out", "x", "-outage", "90s", "u"}, // not whole minutes
		{"-out", "x", "-before", "0s", "u"},  // nothing before
		{"-out", "x", "-every", "7s", "u"},   // does not divide a minute
		{"-out", "x", "-after", "16m", "u"},  // too long
	} {
		if _, err := parse(args); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	o, err := parse([]string{"-out", "x", "http://198.18.0.3:9100/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	if o.mode != "stop" || o.before != 3*time.Minute || o.outage != 10*time.Minute || len(o.urls) != 1 {
		t.Errorf("defaults: %+v", o)
	}
}

func series(hits, misses, grants, valid float64) map[string]float64 {
	return map[string]float64{
		`distcache_requests_total{member="n",op="GET",result="hit",role="node"}`:  hits,
		`distcache_requests_total{member="n",op="GET",result="miss",role="node"}`: misses,
		`distcache_requests_total{member="s",op="GET",result="hit",role="shim"}`:  1e9,
		`distcache_shim_lease_grants_total{member="n",role="node"}`:               grants,
		`distcache_lease_valid{member="n",role="node"}`:                           valid,
		`distcache_map_version{member="n",role="node"}`:                           3,
	}
}

func TestWriteMinutes(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	s := &scraper{urls: []string{"u"}, scrapes: map[string][]scrape{}}
	// 100 hits/s and 50 misses/s, 3 grants a second, every 30 s; one
	// failed scrape and lease_valid 0 once, in minute 1.
	for i := -2; i <= 6; i++ {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		sec := float64(i * 30)
		sc := scrape{at: at, got: at, series: series(1000+100*sec, 50*sec+500, 3*sec+100, 1)}
		switch i {
		case 3:
			sc.series = nil
		case 2:
			sc.series[`distcache_lease_valid{member="n",role="node"}`] = 0
		}
		s.scrapes["u"] = append(s.scrapes["u"], sc)
	}
	var b strings.Builder
	s.writeMinutes(&b, t0, t0.Add(2*time.Minute), options{mode: "stop", before: time.Minute, outage: 2 * time.Minute, after: time.Minute, every: 30 * time.Second, urls: s.urls})
	got := b.String()
	for _, want := range []string{
		"| -1 | 03:59:00 | up | 100.0 | 50.0 | 66.7 % | 100.0 % | 180 | 0 | 1 | 3 | 0 |",
		"| 0 | 04:00:00 | **stopped** | 100.0 | 50.0 | 66.7 % | 100.0 % | 180 | 0 | 1 | 3 | 0 |",
		"| 1 | 04:01:00 | **stopped** | 100.0 | 50.0 | 66.7 % | 100.0 % | 180 | 0 | 0 | 3 | 1 |",
		"| 2 | 04:02:00 | up | 100.0 | 50.0 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

func TestLoadTable(t *testing.T) {
	dir := t.TempDir()
	log := "2026-12-06T03:58:00.000000000Z distcache warmup      100%  100/100\n" +
		"2026-12-06T03:59:00.000000000Z distcache measure     0%  0/0  0s/3m0s  0/s\n"
	if err := os.WriteFile(filepath.Join(dir, "load.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	// Three minutes of 1 s bins: 500 ops/s, 60 % hits; two errors in the
	// second minute.
	var pts []string
	for i := 1; i <= 180; i++ {
		errs := 0
		if i == 90 || i == 91 {
			errs = 1
		}
		pts = append(pts, `{"t_seconds":`+itoa(i)+`,"ops_per_second":500,"errors":`+itoa(errs)+`,"retries":0,"timeouts":0,"hit_ratio":0.6}`)
	}
	report := `{"modes":[{"mode":"distcache","timeline":[` + strings.Join(pts, ",") + `]}]}`
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	var b strings.Builder
	if err := loadTable(&b, filepath.Join(dir, "load.log"), filepath.Join(dir, "report.json"), "distcache", stop, stop.Add(time.Minute), time.Second); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"| -1 | 03:59:00 | up | 60 | 500.0 | 60.0 % | 300.0 | 0 | 0 | 0 |",
		"| 0 | 04:00:00 | **stopped** | 60 | 500.0 | 60.0 % | 300.0 | 2 | 0 | 0 |",
		"| 1 | 04:01:00 | up | 60 | 500.0 | 60.0 % | 300.0 | 0 | 0 | 0 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
