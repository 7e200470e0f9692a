package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/distcache/distcache/workload/checker"
)

// report is the Markdown report of a run.
type report struct {
	o                        options
	machine, command, commit string
	started                  time.Time
	modes                    []modeResult
}

// formatSample is s in seconds, "> bound" when censored.
func formatSample(s sample) string {
	if s.censored {
		return "> " + seconds(s.d)
	}
	return seconds(s.d)
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// percent is x as a percentage, "–" when undefined.
func percent(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", x*100)
}

func (t trialResult) line() string {
	if t.skipped != "" {
		return fmt.Sprintf("trial %d, %s: skipped: %s (%d of %d reads failed)", t.n, t.victim, t.skipped, t.failedReads, t.reads)
	}
	return fmt.Sprintf("trial %d, %s: writes unavailable %s, %d of %d reads failed, worst bin %s of %.0f ops/s (reads %s), map: %s, healed %s later",
		t.n, t.victim, formatSample(t.unavailable), t.failedReads, t.reads, percent(t.worst), t.before, percent(t.worstReads), t.changes, seconds(t.heal))
}

// summary is a mode's row in the table.
type summary struct {
	measured, skipped, censored int
	p50, p99, max               sample
	failedReads, reads          int
	worstMedian, worstMin       float64
	readsMedian, readsMin       float64 // the reads' worst bins
}

func summarize(trials []trialResult) summary {
	var s summary
	var samples []sample
	var worst, reads []float64
	for _, t := range trials {
		s.failedReads += t.failedReads
		s.reads += t.reads
		if t.skipped != "" {
			s.skipped++
			continue
		}
		s.measured++
		if t.unavailable.censored {
			s.censored++
		}
		samples = append(samples, t.unavailable)
		worst = append(worst, t.worst)
		reads = append(reads, t.worstReads)
	}
	s.p50, _ = percentile(samples, 50)
	s.p99, _ = percentile(samples, 99)
	s.max, _ = percentile(samples, 100)
	s.worstMedian = fractionPercentile(worst, 50)
	s.worstMin = fractionPercentile(worst, 0)
	s.readsMedian = fractionPercentile(reads, 50)
	s.readsMin = fractionPercentile(reads, 0)
	return s
}

// verdict is the check's finding in a table cell.
func verdict(v *checker.Verdict) string {
	if v == nil {
		return "no verdict"
	}
	return fmt.Sprintf("%s: %d violations, %d lost writes", v.Result, len(v.Linearizability.Violations), v.Lost())
}

func (r report) render() string {
	var b strings.Builder
	b.WriteString("# Write unavailability after a cache node fails\n\n")
	fmt.Fprintf(&b, "- command: `%s`\n", r.command)
	fmt.Fprintf(&b, "- machine: %s\n", r.machine)
	fmt.Fprintf(&b, "- date: %s\n", r.started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- commit: %s\n", r.commit)
	if r.o.kube.cluster != "" {
		fmt.Fprintf(&b, "- cluster: CacheCluster `%s` on localkube (`%s`); the probe client and `distcache check --map-configmap` run on the host, follow the map ConfigMap through the API server and reach the pods at their IPs; `distcache check` at %g operations/s at most over each mode's whole run\n", r.o.kube.cluster, r.o.kube.kubeconfig, r.o.checkRate)
	} else {
		fmt.Fprintf(&b, "- cluster: `%s`, started with `distcache up --gateway=false`; `distcache check` at %g operations/s at most over each mode's whole run\n", r.o.clusterFile, r.o.checkRate)
	}
	fmt.Fprintf(&b, "- each trial: %d probe keys owned by the victim (victims in turn over the cache nodes), read every %v (keys in turn) and each written every %v, open-loop; once every key has been read from the victim's copy, %v of load, then the fault; the load runs %v after it at least, and until every key has been written since, at most %v\n\n",
		r.o.keys, tick, tick*writeTicks, r.o.before, r.o.observe, r.o.maxWait)
	b.WriteString(definitions)
	for _, m := range r.modes {
		r.renderMode(&b, m)
	}
	return b.String()
}

const definitions = `**Write unavailability**: from the fault until every probe key has had a write called at or after the fault acknowledged. **Reads failed**: probe reads with no answer within 1 s, over the whole trials (before and after the fault). **Worst bin**: the fewest probe operations completed (writes acknowledged, reads answered) in a 250 ms bin after the fault, as a fraction of their rate over the window before it; median over the trials / worst trial; **worst read bin** the same of the probe reads alone. **Check**: distcache check's verdict over the mode's whole run.

`

func (r report) renderMode(b *strings.Builder, m modeResult) {
	s := summarize(m.trials)
	fmt.Fprintf(b, "## %s\n\n", m.mode)
	fault, plane := r.describe(m.mode)
	fmt.Fprintf(b, "%s; %s. Load average %s before, %s after; %s.\n\n", fault, plane, m.loadBefore, m.loadAfter, m.elapsed.Round(time.Second))
	b.WriteString("| trials | write unavailability p50 | p99 | max | reads failed | worst bin (median / worst) | worst read bin (median / worst) | check |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---|\n")
	trials := fmt.Sprint(s.measured)
	if s.skipped > 0 {
		trials += fmt.Sprintf(" (+%d skipped)", s.skipped)
	}
	if s.measured == 0 {
		fmt.Fprintf(b, "| %s | – | – | – | %d of %d | – | – | %s |\n\n", trials, s.failedReads, s.reads, verdict(m.verdict))
	} else {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d of %d | %s / %s | %s / %s | %s |\n\n", trials, formatSample(s.p50), formatSample(s.p99),
			formatSample(s.max), s.failedReads, s.reads, percent(s.worstMedian), percent(s.worstMin),
			percent(s.readsMedian), percent(s.readsMin), verdict(m.verdict))
	}
	if s.censored > 0 {
		fmt.Fprintf(b, "%d of %d trials hit the bound: some probe key had no write acknowledged within %v of the fault.\n\n", s.censored, s.measured, r.o.maxWait)
	}
	if m.verdict != nil {
		fmt.Fprintf(b, "check: `%s`\n\n", m.verdict.Summary())
	}
	if m.err != nil {
		fmt.Fprintf(b, "**The mode ended with an error**: %v\n\n", m.err)
	}
	renderTrials(b, m.trials)
}

func renderTrials(b *strings.Builder, trials []trialResult) {
	if len(trials) == 0 {
		return
	}
	b.WriteString("<details><summary>trials</summary>\n\n")
	b.WriteString("| trial | victim | cached after | write unavailability | reads failed | ops/s before | worst bin | worst read bin | victim in the map | healed after |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, t := range trials {
		if t.skipped != "" {
			fmt.Fprintf(b, "| %d | %s | | skipped: %s | %d of %d | | | | | |\n", t.n, t.victim, t.skipped, t.failedReads, t.reads)
			continue
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %d of %d | %.0f | %s | %s | %s | %s |\n", t.n, t.victim, seconds(t.warm), formatSample(t.unavailable),
			t.failedReads, t.reads, t.before, percent(t.worst), percent(t.worstReads), t.changes, seconds(t.heal))
	}
	b.WriteString("\n</details>\n\n")
}

// describe is m's fault and control plane in words.
func (r report) describe(m mode) (fault, plane string) {
	if r.o.kube.cluster != "" {
		fault = "SIGKILL of the victim's node process on the host; the kubelet restarts the container"
		switch m.fault {
		case "pause":
			fault = fmt.Sprintf("SIGSTOP of the victim's node process on the host, SIGCONT %v later", r.o.pause)
		case "down":
			fault = "the victim's Kubernetes node lost: its kubelet and kube-proxy stopped, then (the fault's time) its network namespace cut off, every pod on it running on unreachable, until the trial's observation ends (`localkube.sh node-stop`, `node-cut`, then `node-start`)"
		}
		switch m.controlPlane {
		case "operator-off":
			plane = fmt.Sprintf("the operator's Deployment `%s` scaled to 0 for the trials: nothing changes the map", r.o.kube.operator)
		case "apiserver-off":
			plane = "localkube's API server stopped (SIGSTOP) from just before each fault until its observation ended, and resumed (SIGCONT) before the wait for the cluster to heal"
		default:
			plane = "the operator runs (fences and fails members over from pod readiness, with the spec's failover settings)"
		}
		return fault, plane
	}
	fault = "SIGKILL of the victim's PID; the supervisor restarts it"
	switch m.fault {
	case "pause":
		fault = fmt.Sprintf("SIGSTOP of the victim's PID, SIGCONT %v later", r.o.pause)
	case "down":
		fault = "the victim killed through the control API and held down until the trial's observation ends, then restarted"
	}
	plane = "the control loop runs (fences and fails the victim over)"
	if m.controlPlane == "off" {
		plane = "the control loop held down through the control API during the trials: nothing fences the victim in the map"
	}
	return fault, plane
}
