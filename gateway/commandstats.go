package gateway

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// INFO commandstats: each command's calls, their time and their error
// replies. They are read from the command's /metrics series (its count,
// its error count and its latency histogram's sum), so counting a command costs
// the commands' path nothing more; CONFIG RESETSTAT keeps the series'
// totals of the moment as a base that INFO subtracts, as /metrics'
// counters never go back. A call refused before it ran (a wrong number of
// arguments, not authenticated) counts as rejected, one that ran and
// answered an error as failed.
type commandStat struct {
	// rejected counts the refused calls, which the series count among
	// the calls and errors (and their time in the histogram's sum); only
	// a refusal adds to it, so commands that run pay nothing for it.
	rejected atomic.Uint64
	// rejectedNanos is the refused calls' time, left out of usec as
	// Redis leaves it out.
	rejectedNanos atomic.Uint64
	mu            sync.Mutex // guards base
	base          statTotals // the totals at the last CONFIG RESETSTAT
}

// statTotals are a command's totals since the gateway started.
type statTotals struct {
	calls, errors, rejected uint64
	seconds                 float64 // every call's time, refused ones' too
	rejectedSeconds         float64
}

// totals reads c's series.
func (c *commandSeries) totals() statTotals {
	t := statTotals{calls: counterValue(c.count), errors: counterValue(c.errors), rejected: c.stat.rejected.Load(),
		rejectedSeconds: float64(c.stat.rejectedNanos.Load()) / 1e9}
	if h, ok := c.histogram.Load().(prometheus.Metric); ok {
		var m dto.Metric
		if h.Write(&m) == nil && m.Histogram != nil {
			t.seconds = m.Histogram.GetSampleSum()
		}
	}
	return t
}

// counterValue is c's value.
func counterValue(c prometheus.Counter) uint64 {
	var m dto.Metric
	if c.Write(&m) != nil || m.Counter == nil {
		return 0
	}
	return uint64(m.Counter.GetValue())
}

// resetStat makes the totals of now c's base.
func (c *commandSeries) resetStat() {
	t := c.totals()
	c.stat.mu.Lock()
	c.stat.base = t
	c.stat.mu.Unlock()
}

// writeCommandStats writes INFO's commandstats section's lines: a line
// per known command that was called since the last reset.
func writeCommandStats(b *strings.Builder, series map[string]*commandSeries) {
	for _, n := range slices.Sorted(maps.Keys(series)) {
		if n == otherCommand {
			continue
		}
		c := series[n]
		t := c.totals()
		c.stat.mu.Lock()
		base := c.stat.base
		c.stat.mu.Unlock()
		rejected := t.rejected - base.rejected
		calls := t.calls - base.calls - rejected
		failed := t.errors - base.errors - rejected
		if calls+rejected == 0 {
			continue
		}
		usec := int64((t.seconds - base.seconds - (t.rejectedSeconds - base.rejectedSeconds)) * 1e6)
		usec = max(usec, 0)
		per := 0.0
		if calls > 0 {
			per = float64(usec) / float64(calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			n, calls, usec, per, rejected, failed)
	}
}
