package main

import (
	"fmt"
	"strings"

	"github.com/distcache/distcache/workload/driver"
)

// row is one skew's two windows.
type row struct {
	skew                 float64
	twemproxy, distcache driver.ModeResult
	lost, checked        int
	// twemproxyThrottled and distcacheThrottled are the shares of their
	// servers' CFS periods in which the quota ran out.
	twemproxyThrottled, distcacheThrottled float64
}

func (r row) ratio() float64 {
	if r.twemproxy.AchievedRate == 0 {
		return 0
	}
	return r.distcache.AchievedRate / r.twemproxy.AchievedRate
}

func (r row) line() string {
	return fmt.Sprintf("realcpu: Zipf %g: twemproxy %.0f ops/s (p99 %.1f ms), DistCache %.0f ops/s (p99 %.1f ms, hits %.0f %%): %.2f×",
		r.skew, r.twemproxy.AchievedRate, r.twemproxy.P99Seconds*1e3, r.distcache.AchievedRate,
		r.distcache.P99Seconds*1e3, r.distcache.HitRatio["all"]*100, r.ratio())
}

// headline is r as one sentence: the line `make demo` leads with.
func (o options) headline(r row, servers int) string {
	return fmt.Sprintf("Real CPU, no emulation (%d servers each side at %g CPUs, Zipf %g, %d keys, %.0f %% writes): "+
		"DistCache %.0f ops/s, twemproxy %.0f ops/s: %.2f× (p99 %.0f ms against %.0f ms, %d lost writes)",
		servers, o.cpu, r.skew, o.keys, o.writeRatio*100, r.distcache.AchievedRate, r.twemproxy.AchievedRate, r.ratio(),
		r.distcache.P99Seconds*1e3, r.twemproxy.P99Seconds*1e3, r.lost)
}

// gateways names how many gateways DistCache's side runs.
func gateways(n int) string {
	if n == 1 {
		return "one gateway"
	}
	return fmt.Sprintf("%d gateways", n)
}

func idle(m driver.ModeResult) string {
	if m.HostIdle < 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", m.HostIdle*100)
}

func (o options) render(rows []row) string {
	var b strings.Builder
	written := "every key written before the runs"
	if !o.fill {
		written = "the bench's hottest keys written before each run"
	}
	fmt.Fprintf(&b, "Real CPU, no emulation: every server limited to %g CPUs (%d µs every 100 ms), %d keys (%s), %.0f %% writes, %d operations outstanding; DistCache through %s.\n\n",
		o.cpu, int(o.cpu*100_000), o.keys, written, o.writeRatio*100, o.concurrency, gateways(o.clients))
	b.WriteString("| Zipf | twemproxy ops/s | p99 ms | throttled | host idle | DistCache ops/s | p99 ms | hit ratio | throttled | host idle | DistCache / twemproxy | errors (t/d) | lost writes |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		t, d := r.twemproxy, r.distcache
		fmt.Fprintf(&b, "| %g | %.0f | %.1f | %.0f %% | %s | %.0f | %.1f | %.0f %% | %.0f %% | %s | %.2f× | %d / %d | %d of %d |\n",
			r.skew, t.AchievedRate, t.P99Seconds*1e3, r.twemproxyThrottled*100, idle(t), d.AchievedRate, d.P99Seconds*1e3,
			d.HitRatio["all"]*100, r.distcacheThrottled*100, idle(d), r.ratio(), t.Errors, d.Errors, r.lost, r.checked)
	}
	b.WriteString("\nthrottled: the share of the servers' CFS periods in which their quota ran out, over the whole run of the mode (preload and check included); host idle: the machine's idle CPU over the measured window.\n")
	return b.String()
}
