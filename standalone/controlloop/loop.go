// Package controlloop is standalone mode's controller: for local processes
// it does what the operator's CacheCluster reconciler does for pods. Every
// interval it probes every cache member, feeds what it saw to the shared
// failover policy (package failover: a member not Ready is fenced, then
// marked Failed after a grace period, and restored after a hold-down, never
// the last active member of a layer), and when a member changes state
// publishes the next partition map version to the map file that every
// process and client watches. Compiling that map removes a failed member
// from its layer's consistent-hash ring, so only its share of the keys
// moves to the survivors, and restoring it gives back exactly that share
// (DistCache §4.4).
//
// In a standalone cluster the loop is a process of its own, `distcache
// controlloop`, which `distcache up` supervises like the data-plane
// processes, so that it can be killed or paused on its own as the
// operator's pod can. Open builds it from the configuration file (FileConfig)
// that `up` writes into the run directory: it probes each member's /healthz
// over HTTP (HTTPProber), appends every state change as one JSON line to an
// events file (AppendEvents, ReadEvents), and exports
// distcache_controlloop_* metrics. While it is down the data plane keeps
// serving with the map last published, and nobody fails members over.
//
// A loop starts from the map version published in the map file, and adopts
// any newer version it finds there, so it never publishes an older one.
// Observations are kept in memory: a member first seen when the loop starts
// begins its grace period (or hold-down) then, as a pod first seen by a
// restarted operator does.
package controlloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/redundancy"
)

// DefaultInterval is the probe period when Config.Interval is zero.
const DefaultInterval = 500 * time.Millisecond

// Prober tells whether a cache member is serving.
type Prober interface {
	// Ready reports whether member answers its health check now.
	Ready(ctx context.Context, member string) bool
}

// Config configures a Loop.
type Config struct {
	// Policy decides failures and restorations.
	Policy failover.Policy
	// MapFile is where every new map version is written (atomically).
	MapFile string
	// EventsFile, when set, receives every state change as one JSON line,
	// appended once the map version that carries it is published.
	EventsFile string
	// Prober checks the members.
	Prober Prober
	// Interval is the probe period (default DefaultInterval).
	Interval time.Duration
	// Copies, when set, decides the copies of hot keys (package
	// redundancy) and publishes them with the map.
	Copies *CopiesConfig
	// Sizing, when set, splits a cache budget among the layers (package
	// layersizing) and publishes each layer's entries with the map.
	Sizing *SizingConfig
	// Registerer, when set, receives the loop's metrics.
	Registerer prometheus.Registerer
	// Logger receives the state changes (default: discarded).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Event is a member state change the loop published.
type Event struct {
	Time time.Time
	failover.Change
	// MapVersion is the map version that carried the change.
	MapVersion int64
}

// Loop is the control loop of one cluster. It is safe for concurrent use.
type Loop struct {
	cfg     Config
	metrics *loopMetrics

	mu      sync.Mutex                      // guards the fields below
	m       *partmap.Map                    // the map last published or adopted
	raw     []byte                          // the map file's content as last read
	obs     map[string]failover.Observation // by member name
	events  []Event                         // published by this loop, in order
	stepped bool                            // a step has completed
	lastErr error                           // the last step's error

	nextCopies time.Time           // when copies are next decided; used by step only
	smoother   redundancy.Smoother // the last rounds of hot-key reports; used under mu
	nextSizing time.Time           // when the budget is next split; used by step only
}

// New returns a loop that starts from m, which is already published at
// cfg.MapFile.
func New(cfg Config, m *partmap.Map) (*Loop, error) {
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	if cfg.Prober == nil || cfg.MapFile == "" || m == nil {
		return nil, errors.New("cannot create control loop: need a prober, a map file and a map")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if err := cfg.Copies.validate(); err != nil {
		return nil, err
	}
	if c := cfg.Copies; c != nil && c.Interval <= 0 {
		copied := *c
		copied.Interval = DefaultCopiesInterval
		cfg.Copies = &copied
	}
	if err := cfg.Sizing.validate(); err != nil {
		return nil, err
	}
	if c := cfg.Sizing; c != nil && c.Interval <= 0 {
		copied := *c
		copied.Interval = DefaultSizingInterval
		cfg.Sizing = &copied
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Loop{cfg: cfg, m: m, obs: map[string]failover.Observation{}}
	lm, err := newLoopMetrics(cfg.Registerer, m, l.Map)
	if err != nil {
		return nil, err
	}
	l.metrics = lm
	return l, nil
}

// Run steps every Interval until ctx ends, and then closes the prober if
// it holds resources (io.Closer).
func (l *Loop) Run(ctx context.Context) {
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
	if c, ok := l.cfg.Prober.(io.Closer); ok {
		defer c.Close()
	}
	for {
		if err := l.Step(ctx); err != nil && ctx.Err() == nil {
			l.cfg.Logger.Error("control loop step failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step adopts a newer map from the map file if there is one, probes every
// member once, decides with the policy and publishes the next map version
// if a member changed state. It fails only when the new version cannot be
// written; the loop then keeps the old one and tries again at the next
// step.
func (l *Loop) Step(ctx context.Context) error {
	err := l.step(ctx)
	l.mu.Lock()
	l.stepped, l.lastErr = true, err
	l.mu.Unlock()
	return err
}

func (l *Loop) step(ctx context.Context) error {
	l.adoptPublished()
	l.mu.Lock()
	m := l.m
	l.mu.Unlock()
	start := l.cfg.Now()
	ready := l.probe(ctx, m)
	reports, decideCopies := l.scrapeCopies(ctx, start)
	curves, decideSizing := l.scrapeSizing(ctx, start)
	now := l.cfg.Now()

	l.mu.Lock()
	defer l.mu.Unlock()
	// A member whose readiness changed did so after the previous step's
	// probe and before this one's answer: it counts from the start of this
	// step, so a policy that fences at once (FenceAfter shorter than a
	// probe) fences it in this step.
	for name, r := range ready {
		if o, ok := l.obs[name]; !ok || o.Ready != r {
			l.obs[name] = failover.Observation{Ready: r, Since: start}
		}
	}
	next, changes, _ := l.cfg.Policy.Apply(l.m, l.obs, now)
	if decideCopies {
		var err error
		if next, err = l.withCopies(next, reports); err != nil {
			l.cfg.Logger.Error("cannot decide copies", "err", err)
		}
	}
	if decideSizing {
		var err error
		if next, err = l.withSizing(next, curves); err != nil {
			l.cfg.Logger.Error("cannot size the cache layers", "err", err)
		}
	}
	if next == l.m {
		return nil
	}
	if err := mapwatch.WriteFile(l.cfg.MapFile, next); err != nil {
		l.metrics.publishFailures.Inc()
		return fmt.Errorf("cannot publish map version %d: %w", next.Version, err)
	}
	l.m = next
	l.metrics.published(changes)
	events := make([]Event, 0, len(changes))
	for _, c := range changes {
		events = append(events, Event{Time: now, Change: c, MapVersion: next.Version})
		l.cfg.Logger.Info("member state changed", "layer", c.Layer, "member", c.Member,
			"from", c.From, "to", c.To, "after", c.After.Round(time.Millisecond), "map_version", next.Version)
	}
	l.events = append(l.events, events...)
	if l.cfg.EventsFile != "" {
		// The map is published: a lost event line must not undo it.
		if err := AppendEvents(l.cfg.EventsFile, events); err != nil {
			l.cfg.Logger.Error("cannot record member state changes", "path", l.cfg.EventsFile, "map_version", next.Version, "err", err)
		}
	}
	return nil
}

// adoptPublished makes a newer version found in the map file the loop's
// current map, so that the next version it publishes follows it. A file
// that cannot be read or decoded, or holds an older version, is ignored.
func (l *Loop) adoptPublished() {
	b, err := os.ReadFile(l.cfg.MapFile)
	if err != nil {
		l.cfg.Logger.Debug("cannot read the published map", "path", l.cfg.MapFile, "err", err)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Equal(b, l.raw) {
		return
	}
	l.raw = b
	m, err := partmap.Decode(b)
	if err != nil {
		l.cfg.Logger.Warn("ignoring a map file that does not decode", "path", l.cfg.MapFile, "err", err)
		return
	}
	if m.Version > l.m.Version {
		l.cfg.Logger.Info("adopting a newer published map", "path", l.cfg.MapFile, "map_version", m.Version, "was", l.m.Version)
		l.m = m
	}
}

// probe checks every member of m in parallel.
func (l *Loop) probe(ctx context.Context, m *partmap.Map) map[string]bool {
	var (
		mu    sync.Mutex // guards ready
		ready = map[string]bool{}
		wg    sync.WaitGroup
	)
	for _, layer := range m.Layers {
		for _, mb := range layer.Members {
			wg.Go(func() {
				r := l.cfg.Prober.Ready(ctx, mb.Name)
				if !r && ctx.Err() == nil {
					l.metrics.probeFailed(mb.Name)
				}
				mu.Lock()
				ready[mb.Name] = r
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return ready
}

// Interval is the probe period.
func (l *Loop) Interval() time.Duration { return l.cfg.Interval }

// Map returns the map last published or adopted.
func (l *Loop) Map() *partmap.Map {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m
}

// Observation returns what the loop last saw of member.
func (l *Loop) Observation(member string) (failover.Observation, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.obs[member]
	return o, ok
}

// Events returns the state changes this loop published.
func (l *Loop) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Healthy reports whether the loop works: nil once a step has completed
// and the last one published what it decided, else why not. It is the
// loop process's /healthz.
func (l *Loop) Healthy() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stepped {
		return errors.New("control loop has not probed its members yet")
	}
	return l.lastErr
}
