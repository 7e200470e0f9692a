package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/workload"
)

// restartTimeout bounds the recovery of a member left failed (killed,
// paused or slowed) when Run ends early.
const restartTimeout = 30 * time.Second

// runner is the state of one Run.
type runner struct {
	cfg     Config
	cluster Cluster
	log     *slog.Logger
	watcher *mapwatch.Watcher
	// routed clients serve DistCache, bypass clients NoCache; the first of
	// each also serve the final check.
	routed, bypass []*client.Client
	// routedStores and bypassStores are what the operations of DistCache
	// and NoCache go through: the clients, or Config.Via's stores of them.
	routedStores, bypassStores []Store
	zipf                       *workload.Zipf
	keys                       *keyMap // ranks to key ids, before and after a hot-set shift
	ledger                     *ledger
	seq                        atomic.Uint64 // the last value sequence number used
	serverCapacity             float64       // the normalisation unit (0: none)
	bulkRate                   float64       // storage work units/s for the preload and check (0: no limit)
	emulated                   bool          // some member has an emulated capacity

	mapMu sync.Mutex   // guards maps
	maps  []mapVersion // versions installed since the start

	// pending is the failure injected and not recovered from yet (nil:
	// none). The failure goroutine writes it while a phase runs; Run's
	// goroutine reads it only between phases.
	pending *Failure
}

// mapVersion is a map version installed at a time.
type mapVersion struct {
	version int64
	at      time.Time
}

// Run benchmarks the cluster: the preload, then for every mode (NoCache
// first) a warm-up (DistCache), a probe (when Config.Rate is 0) and the
// measured window, then the read-back of every written key (package doc).
// It fails when the configuration is invalid, the map cannot be loaded, the
// cluster's work cannot be read, a failure cannot be injected or ctx ends;
// operations that fail are counted, not errors of Run.
func Run(ctx context.Context, cfg Config, cluster Cluster) (*Report, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cluster == nil {
		return nil, errors.New("cannot run benchmark: no cluster")
	}
	r, err := newRunner(cfg, cluster)
	if err != nil {
		return nil, err
	}
	defer r.close()
	wctx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.watcher.Run(wctx, DefaultMapPoll) })
	defer func() {
		stopWatch()
		wg.Wait()
	}()
	defer r.recoverPending(ctx)

	w0, err := cluster.Work(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster's work: %w", err)
	}
	shardSum, shardMax, emulated := capacities(w0)
	r.bulkRate, r.emulated = bulkLoad*shardSum, emulated
	r.serverCapacity = cfg.ServerCapacity
	if r.serverCapacity == 0 {
		r.serverCapacity = shardMax
	}
	if cfg.Rate == 0 && shardSum == 0 {
		return nil, errors.New("cannot choose the offered rate: no storage shard has an emulated capacity; set the rate")
	}
	rep := &Report{Config: r.reportConfig(emulated)}
	// After a hot-set shift the new hot keys must exist too: a cache node
	// caches only keys the storage has.
	if rep.PreloadErrors, err = r.preload(ctx, DistCache, r.routedStores, cfg.ShiftAt > 0); err != nil {
		return nil, err
	}
	var (
		fail         *failureRun
		failStart    time.Time
		failTimeline []Point
	)
	for _, mode := range cfg.Modes {
		if mode == Twemproxy {
			n, err := r.preload(ctx, Twemproxy, []Store{cfg.Twemproxy}, false)
			if err != nil {
				return nil, err
			}
			rep.PreloadErrors += n
		}
		res, ph, err := r.runMode(ctx, mode, shardSum)
		if err != nil {
			return nil, err
		}
		rep.Modes = append(rep.Modes, res)
		if ph.fail != nil {
			fail, failStart, failTimeline = ph.fail, ph.start, res.Timeline
			rep.Failure = ph.fail.result(ph.start, ph.end, ph.totals)
		}
		if ph.shift != nil {
			rep.Shift = ph.shift.result(ph.start, ph.end, ph.totals, r.watcher.Current().Map(), cfg.Interval)
		}
	}
	if err := r.settle(ctx, "check"); err != nil {
		return nil, err
	}
	rep.CheckedKeys, rep.UncheckedKeys, rep.LostWrites, rep.LostExamples = r.check(ctx)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cannot finish benchmark: %w", err)
	}
	if fail != nil && fail.injected {
		rep.Failure.MapVersions = r.mapVersionsSince(failStart)
		rep.Failure.analyze(failTimeline, r.cfg.Interval)
	}
	r.log.Info("benchmark done", "checked_keys", rep.CheckedKeys, "lost_writes", rep.LostWrites)
	return rep, nil
}

// newRunner loads the map and starts the clients.
func newRunner(cfg Config, cluster Cluster) (*runner, error) {
	src := cfg.MapSource
	if src == nil {
		src = mapwatch.File(cfg.MapFile)
	}
	w, err := mapwatch.Open(context.Background(), src, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("cannot run benchmark: %w", err)
	}
	r := &runner{cfg: cfg, cluster: cluster, log: cfg.Logger, watcher: w, ledger: newLedger()}
	if r.zipf, err = workload.NewZipf(cfg.Keys, cfg.Skew); err != nil {
		return nil, fmt.Errorf("cannot run benchmark: %w", err)
	}
	p := w.Current()
	if r.keys, err = newKeyMap(cfg.Keys, cfg.Seed, p, cfg.HotRacks); err != nil {
		return nil, fmt.Errorf("cannot run benchmark: %w", err)
	}
	for i := range cfg.Clients {
		for _, bypass := range []bool{false, true} {
			cc := cfg.Client
			cc.Bypass = bypass
			cc.Seed = hashing.Derive(cfg.Seed, fmt.Sprintf("driver/client/%d/%v", i, bypass))
			cc.Logger = slog.New(minLevel{cfg.Logger.Handler(), slog.LevelWarn}).With("client", i, "bypass", bypass)
			c, err := client.New(cc, p)
			if err != nil {
				r.close()
				return nil, fmt.Errorf("cannot run benchmark: %w", err)
			}
			if bypass {
				r.bypass = append(r.bypass, c)
			} else {
				r.routed = append(r.routed, c)
			}
		}
	}
	if err := r.wrapClients(); err != nil {
		r.close()
		return nil, err
	}
	w.Subscribe(func(p *partmap.Placement) error {
		for _, c := range r.routed {
			c.SetMap(p)
		}
		for _, c := range r.bypass {
			c.SetMap(p)
		}
		r.mapMu.Lock()
		r.maps = append(r.maps, mapVersion{version: p.Version(), at: time.Now()})
		r.mapMu.Unlock()
		return nil
	})
	return r, nil
}

// close closes the stores and the clients.
func (r *runner) close() {
	r.closeStores()
	for _, c := range append(r.routed, r.bypass...) {
		if err := c.Close(); err != nil {
			r.log.Warn("cannot close client", "err", err)
		}
	}
}

// recoverPending restarts, resumes or restores the member of a failure
// when Run ends before it recovered, even if ctx has ended.
func (r *runner) recoverPending(ctx context.Context) {
	f := r.pending
	if f == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restartTimeout)
	defer cancel()
	if err := r.undo(ctx, *f); err != nil {
		r.log.Error("cannot recover the failed cache node", "member", f.Member, "mode", f.mode(), "err", err)
		return
	}
	r.log.Info("recovered cache node", "member", f.Member, "mode", f.mode())
	r.pending = nil
}

// reportConfig records the configuration.
func (r *runner) reportConfig(emulated bool) ReportConfig {
	c, m := r.cfg, r.watcher.Current().Map()
	return ReportConfig{Cluster: m.Cluster, MapVersion: m.Version, Keys: c.Keys, Skew: c.Skew,
		WriteRatio: c.WriteRatio, ValueSize: c.ValueSize, Concurrency: c.Concurrency, Clients: c.Clients,
		DurationSeconds: c.Duration.Seconds(), Count: c.Count, Rate: c.Rate, Preload: c.Preload,
		WarmupSeconds: c.Warmup.Seconds(), ServerCapacity: r.serverCapacity, Emulated: emulated, Seed: c.Seed,
		Via: c.ViaName, ShiftAtSeconds: c.ShiftAt.Seconds(), HotRacks: c.HotRacks}
}

// mapVersionsSince returns the map versions installed since start.
func (r *runner) mapVersionsSince(start time.Time) []MapVersion {
	r.mapMu.Lock()
	defer r.mapMu.Unlock()
	var out []MapVersion
	for _, mv := range r.maps {
		if !mv.at.Before(start) {
			out = append(out, MapVersion{Version: mv.version, At: mv.at.Sub(start).Seconds()})
		}
	}
	return out
}

// preload writes mode's keys of the Preload hottest ranks once through
// stores, within CheckTimeout and at most at the bulk rate (a write of a
// key nobody caches yet costs its shim one unit); with both, it writes
// those of the shifted permutation too (the hottest ranks' keys after a
// hot-set shift). It returns the keys it could not write.
func (r *runner) preload(ctx context.Context, mode Mode, stores []Store, both bool) (int, error) {
	hot := r.cfg.Preload
	if hot == 0 {
		return 0, nil
	}
	n := hot
	if both {
		n = 2 * hot
	}
	r.log.Info("preloading the hottest keys", "mode", mode, "keys", n, "shifted_too", both)
	pctx, cancel := context.WithTimeout(ctx, r.cfg.CheckTimeout)
	defer cancel()
	var failed atomic.Int64
	done := r.parallel(pctx, "preload", n, r.cfg.Concurrency, r.bulkRate, func(ctx context.Context, i int) {
		id := r.keys.baseID(uint64(i))
		if i >= hot {
			id = r.keys.shiftedID(uint64(i - hot))
		}
		key := ModeKey(mode, workload.Key(id))
		if err := r.preloadKey(ctx, stores[i%len(stores)], key); err != nil {
			failed.Add(1)
			r.log.Debug("preload write failed", "key", key, "err", err)
		}
	})
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("cannot preload: %w", err)
	}
	errs := int(failed.Load()) + n - done
	if errs > 0 {
		r.log.Warn("preload writes failed", "failed", errs, "of", n)
	}
	return errs, nil
}

// preloadKey writes key, sending the write again after preloadRetryPause
// until one is acknowledged or ctx ends: a write lost to a busy machine or
// a remap must not leave a hot key unwritten for the runs.
func (r *runner) preloadKey(ctx context.Context, cl Store, key string) error {
	for {
		err := r.put(ctx, cl, "preload", key)
		if err == nil {
			return nil
		}
		r.log.Debug("preload write not acknowledged, sending it again", "key", key, "err", err)
		t := time.NewTimer(preloadRetryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cannot preload %s: %w (last: %w)", key, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// preloadRetryPause is the pause before a preload write is sent again.
const preloadRetryPause = 100 * time.Millisecond
