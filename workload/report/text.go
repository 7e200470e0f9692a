package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/distcache/distcache/workload/driver"
)

// busiestShown is the number of busiest members listed per layer.
const busiestShown = 3

// storageTier names the storage shards' row in the load table.
const storageTier = "storage"

// WriteText writes r as readable tables: the configuration, a summary row
// per mode, the loads per layer, the failure, the hot-set shift and the
// consistency check.
func WriteText(w io.Writer, r *driver.Report) error {
	var b strings.Builder
	writeHeader(&b, r)
	b.WriteString("\n")
	writeSummary(&b, r)
	b.WriteString("\n")
	writeLoads(&b, r)
	if r.Failure != nil {
		b.WriteString("\n")
		writeFailure(&b, r)
	}
	if r.Shift != nil {
		b.WriteString("\n")
		writeShift(&b, r)
	}
	b.WriteString("\n")
	writeCheck(&b, r)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("cannot write report: %w", err)
	}
	return nil
}

// writeHeader describes the cluster, the workload and the capacities.
func writeHeader(b *strings.Builder, r *driver.Report) {
	c := r.Config
	fmt.Fprintf(b, "DistCache benchmark of cluster %s (map version %d)\n", orDash(c.Cluster), c.MapVersion)
	skew := "uniform"
	if c.Skew > 0 {
		skew = "Zipf " + num(c.Skew)
	}
	preloaded := "preloaded"
	if c.ShiftAtSeconds > 0 {
		preloaded = "of each key permutation preloaded"
	}
	fmt.Fprintf(b, "workload: %d keys, %s, %s writes, %d-byte values, %d hottest %s\n",
		c.Keys, skew, percent(c.WriteRatio), c.ValueSize, c.Preload, preloaded)
	if c.HotRacks > 0 {
		fmt.Fprintf(b, "hot set: keys stored in the first %d racks take the lowest ranks\n", c.HotRacks)
	}
	window := seconds(c.DurationSeconds)
	if c.Count > 0 {
		window += fmt.Sprintf(" or %d ops", c.Count)
	}
	rate := "probed per mode"
	if c.Rate > 0 {
		rate = fmt.Sprintf("%s ops/s offered", num(c.Rate))
	}
	fmt.Fprintf(b, "load: open loop, %s, up to %d outstanding on %d clients; %s per mode, %s warm-up\n",
		rate, c.Concurrency, c.Clients, window, seconds(c.WarmupSeconds))
	if c.Via == "gateway" {
		b.WriteString("through: Redis clients (RESP2) of a distcache gateway per client (--via gateway)\n")
	}
	switch {
	case c.Emulated && c.ServerCapacity > 0:
		fmt.Fprintf(b, "capacities: server and cache-node capacities are EMULATED by rate limits (paper §6.1); "+
			"throughput is in units of one storage server (%s work units/s)\n", num(c.ServerCapacity))
	case c.Emulated:
		b.WriteString("capacities: cache-node capacities are EMULATED by rate limits (paper §6.1); " +
			"storage servers are unlimited, so throughput is not normalised\n")
	case c.ServerCapacity > 0:
		fmt.Fprintf(b, "capacities: not emulated; throughput is in units of %s work units/s\n", num(c.ServerCapacity))
	default:
		b.WriteString("capacities: not emulated and no server capacity given: throughput is not normalised\n")
	}
}

// writeSummary writes one row per mode.
func writeSummary(b *strings.Builder, r *driver.Report) {
	layers := layerNames(r)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"mode", "throughput", "predicted", "vs nocache", "achieved/s", "offered/s", "late",
		"imbalance", "node imb."}
	for _, l := range layers {
		head = append(head, "hit "+l)
	}
	head = append(head, "hit all", "p50", "p99", "p999", "errors", "coherence")
	row(tw, head)
	var base float64
	for _, m := range r.Modes {
		if m.Mode == driver.NoCache {
			base = m.NormalizedThroughput
		}
	}
	for _, m := range r.Modes {
		cells := []string{string(m.Mode), times(m.NormalizedThroughput), "–", "–",
			num(m.AchievedRate), num(m.OfferedRate), strconv.FormatUint(m.Late, 10),
			ratioText(m.Imbalance), ratioText(m.NodeImbalance)}
		if m.Predicted != nil {
			cells[2] = times(*m.Predicted)
		}
		if base > 0 && m.NormalizedThroughput > 0 {
			cells[3] = strconv.FormatFloat(m.NormalizedThroughput/base, 'f', 2, 64) + "×"
		}
		for _, l := range layers {
			cells = append(cells, hitText(m.HitRatio, l))
		}
		cells = append(cells, hitText(m.HitRatio, "all"), latency(m.P50Seconds), latency(m.P99Seconds),
			latency(m.P999Seconds), strconv.FormatUint(m.Errors, 10), strconv.FormatUint(m.Coherence, 10))
		row(tw, cells)
	}
	_ = tw.Flush() // writes to a strings.Builder
	fmt.Fprintf(b, "late: operations issued behind the open loop's schedule (%d already outstanding); "+
		"errors: operations that failed after the client's own retries\n", r.Config.Concurrency)
	for _, m := range r.Modes {
		if m.Bottleneck != "" {
			fmt.Fprintf(b, "%s: busiest member %s at %s of its capacity", m.Mode, m.Bottleneck, percent(m.MaxUtilization))
			if r.Failure != nil && r.Failure.Killed && m.Mode == driver.DistCache {
				b.WriteString(" (before the failure)")
			}
			if p := m.Probe; p != nil {
				fmt.Fprintf(b, "; offered rate from a probe (%s ops/s offered for %s: u = %s)", num(p.OfferedRate),
					seconds(p.Seconds), percent(p.MaxUtilization))
			} else {
				fmt.Fprintf(b, "; offered rate from the %s", m.RateSource)
			}
			b.WriteString("\n")
		}
	}
}

// writeLoads writes, per mode and layer, the members' utilisation (or
// units per second without capacities): min, mean, max and the busiest.
func writeLoads(b *strings.Builder, r *driver.Report) {
	b.WriteString("load over the measured window (utilisation of capacity, or work units/s if unlimited)\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	lastCell(tw, []string{"mode", "layer", "members", "min", "mean", "max", "busiest"})
	for _, m := range r.Modes {
		for _, g := range groups(m) {
			if len(g.loads) == 0 {
				continue
			}
			vals := make([]float64, len(g.loads))
			for i, l := range g.loads {
				vals[i] = loadValue(l)
			}
			var sum float64
			for _, v := range vals {
				sum += v
			}
			busy := slices.Clone(g.loads)
			slices.SortStableFunc(busy, func(a, c driver.Load) int { return cmp.Compare(loadValue(c), loadValue(a)) })
			var top []string
			for _, l := range busy[:min(busiestShown, len(busy))] {
				top = append(top, l.Name+" "+loadText(l, loadValue(l)))
			}
			ref := g.loads[0]
			lastCell(tw, []string{string(m.Mode), g.name, strconv.Itoa(len(g.loads)),
				loadText(ref, slices.Min(vals)), loadText(ref, sum/float64(len(vals))), loadText(ref, slices.Max(vals)),
				strings.Join(top, ", ")})
		}
	}
	_ = tw.Flush() // writes to a strings.Builder
}

// group is the loads of one layer, or of the storage shards.
type group struct {
	name  string
	loads []driver.Load
}

// groups splits a mode's loads by layer (in order of appearance), then the
// storage shards.
func groups(m driver.ModeResult) []group {
	var out []group
	for _, l := range m.Nodes {
		i := slices.IndexFunc(out, func(g group) bool { return g.name == l.Layer })
		if i < 0 {
			out = append(out, group{name: l.Layer})
			i = len(out) - 1
		}
		out[i].loads = append(out[i].loads, l)
	}
	return append(out, group{name: storageTier, loads: m.Shards})
}

// loadValue is a load's utilisation, or its units per second without a
// capacity.
func loadValue(l driver.Load) float64 {
	if l.Capacity > 0 {
		return l.Utilization
	}
	return l.UnitsPerSecond
}

// loadText formats v as ref's kind of load value.
func loadText(ref driver.Load, v float64) string {
	if ref.Capacity > 0 {
		return percent(v)
	}
	return num(v) + "/s"
}

// failureWords are how the report tells a failure of one mode.
type failureWords struct {
	// failed and recovered are what happened to the member, e.g.
	// "paused" and "resumed"; how says how it failed, e.g. "(SIGSTOP)"
	// ("" for a kill).
	failed, how, recovered string
	// failure and recovery are the events, e.g. "the kill" and "the
	// restart".
	failure, recovery string
	// mark and unmark label the timeline's markers of the two events
	// (driver.FailureMode.Verbs).
	mark, unmark string
}

// wordsOf returns the words of f's mode.
func wordsOf(f *driver.FailureResult) failureWords {
	w := wordsOfMode(f)
	w.mark, w.unmark = f.EffectiveMode().Verbs()
	return w
}

// wordsOfMode returns the words of f's mode but the markers'.
func wordsOfMode(f *driver.FailureResult) failureWords {
	switch f.EffectiveMode() {
	case driver.FailPause:
		return failureWords{failed: "paused", how: "(SIGSTOP)", recovered: "resumed",
			failure: "the pause", recovery: "the end of the pause"}
	case driver.FailSlow:
		delay := time.Duration(math.Round(f.DelaySeconds * float64(time.Second)))
		return failureWords{failed: "slowed", how: fmt.Sprintf("(every data-plane datagram it sends delayed %v)", delay),
			recovered: "restored", failure: "the slowdown", recovery: "the end of the slowdown"}
	default:
		// The kill keeps the words of the reports written before modes.
		return failureWords{failed: "killed", recovered: "restarted",
			failure: "the kill", recovery: "the restart"}
	}
}

// writeFailure summarises the failure timeline.
func writeFailure(b *strings.Builder, r *driver.Report) {
	f := r.Failure
	w := wordsOf(f)
	if !f.Killed {
		fmt.Fprintf(b, "failure: %s was not %s: the measured window ended first\n", f.Member, w.failed)
		return
	}
	fmt.Fprintf(b, "failure (distcache window): %s %s", f.Member, w.failed)
	if w.how != "" {
		fmt.Fprintf(b, " %s", w.how)
	}
	fmt.Fprintf(b, " at %s", seconds(f.KilledAt))
	if f.Restarted {
		fmt.Fprintf(b, ", %s at %s", w.recovered, seconds(f.RestartedAt))
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "  throughput: %s ops/s before %s; worst %s bin after it %s ops/s (%s of before), ending at %s\n",
		num(f.Before), w.failure, binText(f.Interval), num(f.Worst), percent(f.WorstRatio), seconds(f.WorstAt))
	if f.RecoveredAfter > 0 {
		fmt.Fprintf(b, "  recovered to %s of before %s after %s", percent(driver.RecoveryShare), seconds(f.RecoveredAfter), w.failure)
	} else {
		fmt.Fprintf(b, "  never under %s of before", percent(driver.RecoveryShare))
	}
	if f.MapChangeAfter > 0 {
		fmt.Fprintf(b, "; first map change %s after %s", seconds(f.MapChangeAfter), w.failure)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "  averages: %s ops/s from %s to %s", num(f.Down), w.failure, w.recovery)
	if f.After > 0 {
		fmt.Fprintf(b, ", %s after %s", num(f.After), w.recovery)
	}
	b.WriteString("\n")
	if len(f.MapVersions) > 0 {
		var vs []string
		for _, v := range f.MapVersions {
			vs = append(vs, fmt.Sprintf("%d at %s", v.Version, seconds(v.At)))
		}
		fmt.Fprintf(b, "  partition map versions installed: %s\n", strings.Join(vs, ", "))
	}
	writeBins(b, r, w)
}

// failureBinsBefore and failureBinsAfter bound the bins writeBins shows:
// from a second before the failure to two seconds after the recovery to
// RecoveryShare (or the map change, or the failure).
const (
	failureBinsBefore = 1.0
	failureBinsAfter  = 2.0
)

// writeBins writes the completed ops/s of every timeline bin of the
// failure's mode around the failure, eight to a line.
func writeBins(b *strings.Builder, r *driver.Report, w failureWords) {
	f := r.Failure
	var timeline []driver.Point
	for _, m := range r.Modes {
		if m.Mode == driver.DistCache {
			timeline = m.Timeline
		}
	}
	from := f.KilledAt - failureBinsBefore
	to := f.KilledAt + max(f.RecoveredAfter, f.MapChangeAfter) + failureBinsAfter
	var line []string
	flush := func() {
		if len(line) > 0 {
			fmt.Fprintf(b, "    %s\n", strings.Join(line, " "))
			line = line[:0]
		}
	}
	fmt.Fprintf(b, "  completed ops/s per %s bin (end of bin: rate; * after %s):\n", binText(f.Interval), w.failure)
	for _, p := range timeline {
		if p.T < from || p.T > to {
			continue
		}
		mark := ""
		if p.T-f.Interval >= f.KilledAt {
			mark = "*"
		}
		line = append(line, fmt.Sprintf("%s:%s%s", seconds(p.T), num(p.OpsPerSecond), mark))
		if len(line) == 8 {
			flush()
		}
	}
	flush()
}

// binText is a bin of secs seconds, e.g. "250 ms".
func binText(secs float64) string {
	return strconv.FormatFloat(secs*1000, 'f', -1, 64) + " ms"
}

// writeCheck writes the consistency check's result.
func writeCheck(b *strings.Builder, r *driver.Report) {
	fmt.Fprintf(b, "consistency: %d written keys read back through the cache and from storage: ", r.CheckedKeys)
	switch r.LostWrites {
	case 0:
		b.WriteString("no lost writes")
	case 1:
		b.WriteString("1 LOST WRITE")
	default:
		fmt.Fprintf(b, "%d LOST WRITES", r.LostWrites)
	}
	if r.UncheckedKeys > 0 {
		fmt.Fprintf(b, "; %d keys could not be read back", r.UncheckedKeys)
	}
	if r.PreloadErrors > 0 {
		fmt.Fprintf(b, "; %d preload writes failed", r.PreloadErrors)
	}
	b.WriteString("\n")
	for _, l := range r.LostExamples {
		want := l.Want
		if want == "" {
			want = "(none)"
		}
		fmt.Fprintf(b, "  %s (%s): want %s, got %s", l.Key, l.Source, want, l.Got)
		if l.Unknown > 0 {
			fmt.Fprintf(b, " (%d value(s) of writes of unknown outcome also accepted)", l.Unknown)
		}
		b.WriteString("\n")
	}
}

// layerNames returns the cache layers' names in the hit ratios of r, in
// the order the nodes list them, then any others sorted.
func layerNames(r *driver.Report) []string {
	var out []string
	for _, m := range r.Modes {
		for _, l := range m.Nodes {
			if !slices.Contains(out, l.Layer) {
				out = append(out, l.Layer)
			}
		}
	}
	var rest []string
	for _, m := range r.Modes {
		for l := range m.HitRatio {
			if l != "all" && !slices.Contains(out, l) && !slices.Contains(rest, l) {
				rest = append(rest, l)
			}
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// row writes tab-terminated cells, for a right-aligned tabwriter.
func row(w io.Writer, cells []string) { fmt.Fprintln(w, strings.Join(cells, "\t")+"\t") }

// lastCell writes tab-separated cells, the last one free: for a
// left-aligned tabwriter, without trailing blanks.
func lastCell(w io.Writer, cells []string) { fmt.Fprintln(w, strings.Join(cells, "\t")) }

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// num formats a number with at most one decimal (none from 1000 up).
func num(v float64) string {
	if v >= 1000 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if v < 1 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func times(v float64) string {
	if v <= 0 {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "×"
}

func ratioText(v float64) string {
	if v <= 0 {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func percent(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

func hitText(h map[string]float64, layer string) string {
	v, ok := h[layer]
	if !ok {
		return "–"
	}
	return percent(v)
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 2, 64) + "s" }

// latency formats seconds as a duration rounded to 3 significant digits.
func latency(s float64) string {
	if s <= 0 {
		return "–"
	}
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}
