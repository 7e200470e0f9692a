package driver

import (
	"context"
	"fmt"

	"github.com/distcache/distcache/client"
)

// Rate sources of ModeResult.RateSource.
const (
	rateFromConfig = "config"
	rateFromProbe  = "probe"
)

// runMode runs one mode: warm-up (DistCache), probe (Rate 0) and the
// measured window. shardSum is the storage shards' summed capacity.
func (r *runner) runMode(ctx context.Context, mode Mode, shardSum float64) (ModeResult, *phaseResult, error) {
	stores, clients := r.storesFor(mode)
	probeRate := probeLoad * shardSum
	if err := r.settle(ctx, string(mode)); err != nil {
		return ModeResult{}, nil, err
	}
	if mode == DistCache && r.cfg.Warmup > 0 {
		rate := probeRate
		if rate == 0 {
			rate = r.cfg.Rate
		}
		ph := phase{name: "warmup", mode: mode, stores: stores, clients: clients, rate: rate, duration: r.cfg.Warmup,
			count: opBound(rate, r.cfg.Warmup)}
		if _, err := r.runPhase(ctx, ph); err != nil {
			return ModeResult{}, nil, fmt.Errorf("cannot warm up %s: %w", mode, err)
		}
		if h := r.cfg.hooks; h != nil && h.afterWarmup != nil {
			h.afterWarmup(ctx)
		}
	}
	rate, source := r.cfg.Rate, rateFromConfig
	var probe *ProbeResult
	if rate == 0 {
		var err error
		if probe, err = r.probe(ctx, phase{mode: mode, stores: stores, clients: clients}, probeRate); err != nil {
			return ModeResult{}, nil, err
		}
		rate, source = targetUtilization*probe.AchievedRate/probe.MaxUtilization, rateFromProbe
		r.log.Info("probed the offered rate", "mode", mode, "probe_rate", probeRate,
			"achieved", probe.AchievedRate, "max_utilization", probe.MaxUtilization, "rate", rate)
	}
	count := r.cfg.Count
	if count == 0 {
		count = opBound(rate, r.cfg.Duration)
	}
	ph := phase{name: "measure", mode: mode, stores: stores, clients: clients, rate: rate, duration: r.cfg.Duration,
		count: count, measure: true}
	if mode == DistCache {
		ph.failure, ph.shiftAt = r.cfg.Failure, r.cfg.ShiftAt
	}
	st0 := sumStats(clients)
	w0, err := r.work(ctx, mode)
	if err != nil {
		return ModeResult{}, nil, fmt.Errorf("cannot read the cluster's work: %w", err)
	}
	res, err := r.runPhase(ctx, ph)
	if err != nil {
		return ModeResult{}, nil, fmt.Errorf("cannot measure %s: %w", mode, err)
	}
	w1, err := r.work(ctx, mode)
	if err != nil {
		return ModeResult{}, nil, fmt.Errorf("cannot read the cluster's work: %w", err)
	}
	st1 := sumStats(clients)
	if fr := res.fail; fr != nil && fr.injected && !fr.recovered {
		if err := r.recoverFailure(ctx, fr, res.totals); err != nil {
			return ModeResult{}, nil, err
		}
	}
	out := r.modeResult(mode, res, w0, w1, st1.minus(st0))
	out.OfferedRate, out.RateSource, out.Probe = rate, source, probe
	return out, res, nil
}

// probe runs the workload of ph's mode through its stores at rate for
// ProbeDuration and measures the busiest member's utilisation.
func (r *runner) probe(ctx context.Context, ph phase, rate float64) (*ProbeResult, error) {
	mode := ph.mode
	w0, err := r.work(ctx, mode)
	if err != nil {
		return nil, fmt.Errorf("cannot probe %s: %w", mode, err)
	}
	ph.name, ph.rate, ph.duration, ph.count = "probe", rate, r.cfg.ProbeDuration, opBound(rate, r.cfg.ProbeDuration)
	res, err := r.runPhase(ctx, ph)
	if err != nil {
		return nil, fmt.Errorf("cannot probe %s: %w", mode, err)
	}
	w1, err := r.work(ctx, mode)
	if err != nil {
		return nil, fmt.Errorf("cannot probe %s: %w", mode, err)
	}
	nodes, shards, _ := loadWindow(w0, w1, res.end.Sub(res.start), r.watcher.Current().Map())
	_, u := busiest(nodes, shards)
	p := &ProbeResult{OfferedRate: rate, AchievedRate: perSecond(res.totals.answered(), res.seconds()),
		MaxUtilization: u, Seconds: res.seconds()}
	if p.AchievedRate == 0 || u == 0 {
		return nil, fmt.Errorf("cannot probe %s: no work measured (%d of %d operations answered)",
			mode, res.totals.answered(), res.issued)
	}
	return p, nil
}

// modeResult summarises a measured phase with the cluster's work w0 and w1
// at its start and end and the clients' counters over it.
func (r *runner) modeResult(mode Mode, ph *phaseResult, w0, w1 []Work, st clientTotals) ModeResult {
	m := r.watcher.Current().Map()
	secs := ph.seconds()
	nodes, shards, coherence := loadWindow(w0, w1, ph.end.Sub(ph.start), m)
	out := ModeResult{
		Mode: mode, Imbalance: imbalance(shards), NodeImbalance: imbalance(nodes),
		Ops: ph.totals.completed, Reads: ph.totals.reads, Writes: ph.totals.writes,
		Errors: ph.totals.errors, NotFound: ph.totals.notFound, Late: ph.late,
		AchievedRate: perSecond(ph.totals.answered(), secs), Seconds: secs,
		Nodes: nodes, Shards: shards, Timeline: ph.timeline,
		Retries: st.retries, Timeouts: st.timeouts, Hedges: st.hedges, Coherence: coherence,
		P50Seconds:  ph.hist.quantile(0.50).Seconds(),
		P99Seconds:  ph.hist.quantile(0.99).Seconds(),
		P999Seconds: ph.hist.quantile(0.999).Seconds(),
		HitRatio:    hitRatios(st, m),
		HostIdle:    ph.hostIdle,
	}
	// Capacity: over the window, or up to a failure (unless that is
	// shorter than a timeline interval: then over the window).
	capNodes, capShards, achieved := nodes, shards, out.AchievedRate
	if fr := ph.fail; fr != nil && fr.injected && fr.workAt.Sub(ph.start) >= r.cfg.Interval {
		capNodes, capShards, _ = loadWindow(w0, fr.workAtFailure, fr.workAt.Sub(ph.start), m)
		achieved = perSecond(fr.answeredAtWork, fr.workAt.Sub(ph.start).Seconds())
	}
	out.Bottleneck, out.MaxUtilization = busiest(capNodes, capShards)
	if out.MaxUtilization > 0 && r.serverCapacity > 0 {
		out.NormalizedThroughput = achieved / out.MaxUtilization / r.serverCapacity
	}
	r.log.Info("mode measured", "mode", mode, "achieved_rate", out.AchievedRate,
		"normalized_throughput", out.NormalizedThroughput, "bottleneck", out.Bottleneck,
		"max_utilization", out.MaxUtilization, "hit_ratio", out.HitRatio["all"], "errors", out.Errors)
	return out
}

// ratio is n/d, 0 when d is 0.
func ratio(n, d uint64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// clientTotals sums client.Stats over clients.
type clientTotals struct {
	gets, hits, retries, timeouts, hedges uint64
	layerHits                             []uint64
}

func sumStats(clients []*client.Client) clientTotals {
	var t clientTotals
	for _, c := range clients {
		st := c.Stats()
		t.gets += st.Gets
		t.hits += st.Hits
		t.retries += st.Retries
		t.timeouts += st.Timeouts
		t.hedges += st.Hedges
		for len(t.layerHits) < len(st.LayerHits) {
			t.layerHits = append(t.layerHits, 0)
		}
		for i, h := range st.LayerHits {
			t.layerHits[i] += h
		}
	}
	return t
}

// minus returns t - o, counter by counter.
func (t clientTotals) minus(o clientTotals) clientTotals {
	d := clientTotals{gets: t.gets - o.gets, hits: t.hits - o.hits, retries: t.retries - o.retries,
		timeouts: t.timeouts - o.timeouts, hedges: t.hedges - o.hedges, layerHits: make([]uint64, len(t.layerHits))}
	for i, h := range t.layerHits {
		d.layerHits[i] = h
		if i < len(o.layerHits) {
			d.layerHits[i] -= o.layerHits[i]
		}
	}
	return d
}
