// Package controlloop is standalone mode's controller: for local processes
// it does what the operator's CacheCluster reconciler does for pods. Every
// interval it probes every cache member, feeds what it saw to the shared
// failover policy (package failover: a grace period before a member is
// marked Failed, a hold-down before it is restored, never the last active
// member of a layer), and when a member changes state publishes the next
// partition map version to the map file that every process and client
// watches. Compiling that map removes a failed member from its layer's
// consistent-hash ring, so only its share of the keys moves to the
// survivors, and restoring it gives back exactly that share (DistCache
// §4.4).
//
// Observations are kept in memory: a member first seen when the loop starts
// begins its grace period then, as a pod first seen by a restarted operator
// does.
package controlloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/placement/partmap"
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
	// Prober checks the members.
	Prober Prober
	// Interval is the probe period (default DefaultInterval).
	Interval time.Duration
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
	cfg Config

	mu     sync.Mutex                      // guards m, obs and events
	m      *partmap.Map                    // the map last published
	obs    map[string]failover.Observation // by member name
	events []Event                         // in publication order
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Loop{cfg: cfg, m: m, obs: map[string]failover.Observation{}}, nil
}

// Run steps every Interval until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	t := time.NewTicker(l.cfg.Interval)
	defer t.Stop()
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

// Step probes every member once, decides with the policy and publishes the
// next map version if a member changed state. It fails only when the new
// version cannot be written; the loop then keeps the old one and tries
// again at the next step.
func (l *Loop) Step(ctx context.Context) error {
	l.mu.Lock()
	m := l.m
	l.mu.Unlock()
	ready := l.probe(ctx, m)
	now := l.cfg.Now()

	l.mu.Lock()
	defer l.mu.Unlock()
	for name, r := range ready {
		if o, ok := l.obs[name]; !ok || o.Ready != r {
			l.obs[name] = failover.Observation{Ready: r, Since: now}
		}
	}
	next, changes, _ := l.cfg.Policy.Apply(l.m, l.obs, now)
	if next == l.m {
		return nil
	}
	if err := mapwatch.WriteFile(l.cfg.MapFile, next); err != nil {
		return fmt.Errorf("cannot publish map version %d: %w", next.Version, err)
	}
	l.m = next
	for _, c := range changes {
		l.events = append(l.events, Event{Time: now, Change: c, MapVersion: next.Version})
		l.cfg.Logger.Info("member state changed", "layer", c.Layer, "member", c.Member,
			"from", c.From, "to", c.To, "after", c.After.Round(time.Millisecond), "map_version", next.Version)
	}
	return nil
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
				mu.Lock()
				ready[mb.Name] = r
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return ready
}

// Map returns the map last published.
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

// Events returns the state changes published so far.
func (l *Loop) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}
