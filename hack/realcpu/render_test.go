package main

import (
	"strings"
	"testing"

	"github.com/distcache/distcache/workload/driver"
)

func TestRender(t *testing.T) {
	o := options{cpu: 0.05, keys: 1_000_000, writeRatio: 0.05, concurrency: 64, clients: 1}
	r := row{
		skew:      0.99,
		twemproxy: driver.ModeResult{AchievedRate: 40000, P99Seconds: 0.0087, HostIdle: 0.23},
		distcache: driver.ModeResult{AchievedRate: 2800, P99Seconds: 0.19, HitRatio: map[string]float64{"all": 0.376}, HostIdle: -1},
		lost:      0, checked: 27575, twemproxyThrottled: 0.5, distcacheThrottled: 0.9,
	}
	got := o.render([]row{r})
	for _, want := range []string{
		"limited to 0.05 CPUs (5000 µs every 100 ms)",
		"64 operations outstanding; DistCache through one gateway.",
		"| 0.99 | 40000 | 8.7 | 50 % | 23 % | 2800 | 190.0 | 38 % | 90 % | – | 0.07× | 0 / 0 | 0 of 27575 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	want := "Real CPU, no emulation (8 servers each side at 0.05 CPUs, Zipf 0.99, 1000000 keys, 5 % writes): " +
		"DistCache 2800 ops/s, twemproxy 40000 ops/s: 0.07× (p99 190 ms against 9 ms, 0 lost writes)"
	if got := o.headline(r, 8); got != want {
		t.Errorf("headline %q, want %q", got, want)
	}
	if (row{}).ratio() != 0 {
		t.Error("a row without twemproxy's rate has a ratio")
	}
}
