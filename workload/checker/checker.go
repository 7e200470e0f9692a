package checker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/workload"
	"github.com/distcache/distcache/workload/history"
)

// Checker runs one checked workload. Freeze and Thaw are safe for
// concurrent use, also with Run; Run may be called once.
type Checker struct {
	cfg   Config
	log   *slog.Logger
	watch *mapwatch.Watcher
	zipf  *workload.Zipf
	keys  []string // key names by id (Zipf rank)
	runID string   // makes the run's values unique across runs
	rec   *history.Recorder
	count counters
	ops   atomic.Int64 // workload operations started
	ended atomic.Bool  // EndWorkload was called

	// clients run the workload (the first cfg.StaleClients are stale);
	// control runs the preload and the read-back and always follows the
	// map.
	clients []*client.Client
	control *client.Client

	mu     sync.Mutex         // guards frozen, latest and events
	frozen bool               // the stale clients keep their map
	latest *partmap.Placement // the newest map seen
	events []StaleEvent
}

// New loads the map and creates the clients; Close releases them. ctx
// bounds the first read of the map.
func New(ctx context.Context, cfg Config) (*Checker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	zipf, err := workload.NewZipf(uint64(cfg.Keys), cfg.Skew)
	if err != nil {
		return nil, fmt.Errorf("cannot check: %w", err)
	}
	w, err := mapwatch.Open(ctx, cfg.mapSource(), cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("cannot check: %w", err)
	}
	c := &Checker{
		cfg: cfg, log: cfg.Logger, watch: w, zipf: zipf,
		runID: strconv.FormatInt(time.Now().UnixNano(), 36),
		rec:   history.NewRecorder(), latest: w.Current(),
	}
	for id := range uint64(cfg.Keys) {
		c.keys = append(c.keys, cfg.KeyPrefix+workload.Key(id))
	}
	for i := range cfg.Clients + 1 {
		cc := cfg.Client
		cc.Seed = cfg.Seed<<8 + uint64(i)
		cc.Logger = cfg.Logger.With("client", i)
		cc.Maps = mapSource{c: c, client: i}
		cl, err := client.New(cc, c.latest)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("cannot check: %w", err)
		}
		if i == cfg.Clients {
			c.control = cl
		} else {
			c.clients = append(c.clients, cl)
		}
	}
	w.Subscribe(c.setMap)
	return c, nil
}

// Run runs the checked workload (see the package documentation) and
// returns its verdict. An error without a verdict means the check could
// not run; when only writing Config.OutDir failed, the verdict comes with
// the error.
func Run(ctx context.Context, cfg Config) (*Verdict, error) {
	c, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Run(ctx)
}

// Close closes the clients.
func (c *Checker) Close() error {
	var errs []error
	for _, cl := range c.clients {
		errs = append(errs, cl.Close())
	}
	if c.control != nil {
		errs = append(errs, c.control.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cannot close the checker's clients: %w", err)
	}
	return nil
}

// setMap hands a newer map to every client that follows it.
func (c *Checker) setMap(p *partmap.Placement) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latest = p
	c.control.SetMap(p)
	for i, cl := range c.clients {
		if !c.frozen || i >= c.cfg.StaleClients {
			cl.SetMap(p)
		}
	}
	return nil
}

// mapSource is a client's map source: a read of the map file, except that
// a stale client keeps the map it has while the stale clients are frozen,
// even when a node tells it that its map is old.
type mapSource struct {
	c      *Checker
	client int // index in Checker.clients; Config.Clients for the control client
}

func (s mapSource) Refresh() (*partmap.Placement, error) {
	if _, err := s.c.watch.Reload(); err != nil {
		return nil, fmt.Errorf("cannot refresh the partition map: %w", err)
	}
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.frozen && s.client < s.c.cfg.StaleClients {
		return s.c.clients[s.client].Placement(), nil
	}
	return s.c.latest, nil
}

// EndWorkload ends the timed workload early, as its deadline would: the
// operations in flight finish and the run goes on to the read-back and the
// check. A fault injector calls it when its faults are done and healed.
// It is safe for concurrent use, also before Run.
func (c *Checker) EndWorkload() { c.ended.Store(true) }

// endReason tells what ended the timed workload, once it has ended.
func (c *Checker) endReason() EndReason {
	switch {
	case c.ended.Load():
		return EndedOnRequest
	case c.ops.Load() > c.cfg.MaxOps:
		return EndedAtMaxOps
	default:
		return EndedAtDuration
	}
}

// Freeze keeps the stale clients on the map they have until Thaw.
func (c *Checker) Freeze() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return
	}
	c.frozen = true
	e := StaleEvent{At: time.Duration(c.rec.Now()), Frozen: true, StaleMap: c.staleVersion(), CurrentMap: c.latest.Version()}
	c.events = append(c.events, e)
	c.log.Info("stale clients frozen", "clients", c.cfg.StaleClients, "map_version", e.StaleMap)
}

// Thaw gives the stale clients the current map and lets them follow it
// again.
func (c *Checker) Thaw() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		return
	}
	c.frozen = false
	e := StaleEvent{At: time.Duration(c.rec.Now()), StaleMap: c.staleVersion(), CurrentMap: c.latest.Version()}
	for _, cl := range c.clients[:c.cfg.StaleClients] {
		cl.SetMap(c.latest)
	}
	c.events = append(c.events, e)
	c.log.Info("stale clients thawed", "clients", c.cfg.StaleClients, "from_map_version", e.StaleMap, "to_map_version", e.CurrentMap)
}

// MapVersion is the newest partition map version the run has seen.
func (c *Checker) MapVersion() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest.Version()
}

// staleVersion is the stale clients' map version (the current one without
// stale clients); c.mu must be held.
func (c *Checker) staleVersion() int64 {
	if c.cfg.StaleClients == 0 {
		return c.latest.Version()
	}
	return c.clients[0].Placement().Version()
}

// Run runs the checked workload once; its results are Run's (the
// package-level function's).
func (c *Checker) Run(ctx context.Context) (*Verdict, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { c.watch.Run(ctx, c.cfg.MapPoll) })

	v := &Verdict{Started: time.Now(), Settings: settingsOf(c.cfg), FirstMap: c.watch.Current().Version()}
	c.progress(Preloading, 0)
	if err := c.preload(ctx); err != nil {
		return nil, err
	}
	v.Elapsed = c.work(ctx)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cannot finish the check: %w", err)
	}
	v.EndedBy = c.endReason()
	v.Counts = c.count.snapshot()
	for _, cl := range c.clients {
		s := cl.Stats()
		v.Counts.StorageReads += int64(s.StorageReads)
		v.Counts.StorageWrites += int64(s.StorageWrites)
		v.Counts.HeldWrites += int64(s.HeldWrites)
		v.Counts.LeafReads += int64(s.LeafReads)
		v.Counts.LeafFallbacks += int64(s.LeafFallbacks)
	}
	c.progress(ReadingBack, v.Elapsed)
	routed, direct := c.readBack(ctx)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cannot finish the check: %w", err)
	}
	c.progress(Checking, v.Elapsed)
	ops := c.rec.Operations()
	if c.cfg.OutDir != "" {
		if err := writeHistory(c.cfg.OutDir, ops); err != nil {
			return nil, err
		}
	}
	v.Linearizability = history.Check(ops, c.cfg.CheckTimeout)
	v.Routed = routed.verdict(ops)
	if direct != nil {
		d := direct.verdict(ops)
		v.Direct = &d
	}
	c.mu.Lock()
	v.LastMap, v.Stale = c.latest.Version(), append([]StaleEvent(nil), c.events...)
	c.mu.Unlock()
	v.decide()
	c.log.Info("check done", "result", v.Result, "operations", v.Counts.Operations,
		"violations", len(v.Linearizability.Violations), "unchecked", len(v.Linearizability.Unchecked), "lost", v.Lost())
	if c.cfg.OutDir != "" {
		if err := v.writeFiles(c.cfg.OutDir, ops); err != nil {
			return v, err
		}
	}
	return v, nil
}

// progress reports the phase to Config.Progress.
func (c *Checker) progress(ph Phase, elapsed time.Duration) {
	if c.cfg.Progress != nil {
		c.cfg.Progress(Progress{Phase: ph, Elapsed: elapsed, Duration: c.cfg.Duration, Counts: c.count.snapshot(), MapVersion: c.MapVersion()})
	}
}
