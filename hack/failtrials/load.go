package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wireauth"
	"github.com/distcache/distcache/placement/partmap"
)

// The probe load's cadence and bounds.
const (
	tick           = 5 * time.Millisecond // a read each tick, the keys in turn
	writeTicks     = 5                    // a write of every key each 5 ticks (25 ms)
	readsInFlight  = 32                   // at most, across keys
	writesInFlight = 4                    // at most, per key
	// maxOps bounds the operations of one trial's load (at the cadence
	// above, 4 keys issue 360 a second: 100 s of load).
	maxOps      = 36_000
	readTimeout = time.Second
	// writeTimeout is longer than the shims' phase-1 budget (2 s), so a
	// write refused for a coherence timeout is retried once.
	writeTimeout = 3 * time.Second
)

// prober is the command's own client of the cluster, following its map
// as `distcache check` does.
type prober struct {
	c    *client.Client
	w    *mapwatch.Watcher
	stop context.CancelFunc
	done chan struct{}

	mu      sync.Mutex
	history []mapSeen // the versions the client installed, in order
}

// mapSeen is a map version the prober installed: when, and its members'
// states.
type mapSeen struct {
	at      time.Time
	version int64
	states  map[string]string
}

// newProber opens the cluster's map and data-plane key (if acc.keyDir has
// one) and starts a client that follows the map until close.
func newProber(ctx context.Context, acc access) (*prober, error) {
	w, err := mapwatch.Open(ctx, acc.maps, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot read the map %s: %w", acc.maps, err)
	}
	cfg := client.Config{Maps: w}
	cfg.Transport.Addr = acc.listen
	if acc.keyDir != "" {
		if _, err := os.Stat(filepath.Join(acc.keyDir, wireauth.CurrentFile)); err == nil {
			ring, err := wireauth.Load(acc.keyDir)
			if err != nil {
				return nil, fmt.Errorf("cannot load the data-plane key: %w", err)
			}
			// Stamped: accepted by a cluster of this version in any
			// replay mode (standalone mode requires stamps).
			cfg.Transport.Auth, cfg.Transport.Replay = ring, transport.ReplayStamp
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot find the data-plane key: %w", err)
		}
	}
	c, err := client.New(cfg, w.Current())
	if err != nil {
		return nil, fmt.Errorf("cannot create the probe client: %w", err)
	}
	wctx, stop := context.WithCancel(ctx)
	p := &prober{c: c, w: w, stop: stop, done: make(chan struct{})}
	p.seen(w.Current())
	w.Subscribe(func(pl *partmap.Placement) error { c.SetMap(pl); p.seen(pl); return nil })
	go func() {
		defer close(p.done)
		w.Run(wctx, acc.mapPoll)
	}()
	return p, nil
}

// seen records that the client installed pl.
func (p *prober) seen(pl *partmap.Placement) {
	s := mapSeen{at: time.Now(), version: pl.Version(), states: map[string]string{}}
	for _, l := range pl.Map().Layers {
		for _, m := range l.Members {
			s.states[m.Name] = string(m.State)
		}
	}
	p.mu.Lock()
	p.history = append(p.history, s)
	p.mu.Unlock()
}

// memberStates are the states member went through in the maps the prober
// installed since t: each change of its state from the version before.
func (p *prober) memberStates(member string, t time.Time) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return stateChanges(p.history, member, t)
}

// stateChanges are member's states in the versions of history seen at or
// after t that differ from its state in the version before (a member is
// taken to be Active before the first version; "absent" from a version
// that does not list it).
func stateChanges(history []mapSeen, member string, t time.Time) []string {
	var states []string
	prev := string(partmap.Active)
	for _, s := range history {
		state, ok := s.states[member]
		if !ok {
			state = "absent"
		}
		if !s.at.Before(t) && state != prev {
			states = append(states, state)
		}
		prev = state
	}
	return states
}

// close stops following the map and closes the client.
func (p *prober) close() {
	p.stop()
	<-p.done
	_ = p.c.Close()
}

// target is the cache node whose copies a trial's probe keys must be.
type target struct {
	layer  int
	member int
	node   uint32
}

// victimTarget finds member name in p.
func victimTarget(p *partmap.Placement, name string) (target, error) {
	for l, layer := range p.Map().Layers {
		for m, mb := range layer.Members {
			if mb.Name == name {
				return target{layer: l, member: m, node: mb.ID}, nil
			}
		}
	}
	return target{}, fmt.Errorf("cannot find %s in map version %d", name, p.Version())
}

// probeKeys are n keys of trial that t owns in its layer under p.
func probeKeys(p *partmap.Placement, t target, trial, n int) ([]string, error) {
	var keys []string
	for i := 0; len(keys) < n && i < 100_000; i++ {
		k := fmt.Sprintf("failtrials:%d:%d", trial, i)
		if p.Owner(t.layer, k) == t.member {
			keys = append(keys, k)
		}
	}
	if len(keys) < n {
		return nil, fmt.Errorf("cannot find %d keys of trial %d owned by node %d", n, trial, t.node)
	}
	return keys, nil
}

// load reads and writes the probe keys open-loop: a read every tick (the
// keys in turn) unless readsInFlight are outstanding, and a write of each
// key every writeTicks unless writesInFlight of its writes are, maxOps in
// all at most. It records every operation.
type load struct {
	c      *client.Client
	keys   []string
	target target
	trial  int
	start  time.Time

	mu  sync.Mutex
	ops []op

	cached      []atomic.Bool  // a read of the key hit target
	lastAcked   []atomic.Int64 // latest call (since start) of an acknowledged write, per key
	writing     []atomic.Int32 // writes outstanding, per key
	reading     atomic.Int32
	issued      atomic.Int64 // operations started
	values      atomic.Uint64
	stopIssuing chan struct{}
	issuing     sync.WaitGroup // the ticker
	inFlight    sync.WaitGroup // the operations
	// issuedUntil is when the ticker stopped issuing (since start): when
	// told to, or at maxOps.
	issuedUntil atomic.Int64
}

// startLoad starts the load of keys.
func startLoad(ctx context.Context, c *client.Client, keys []string, t target, trial int) *load {
	l := &load{c: c, keys: keys, target: t, trial: trial, start: time.Now(),
		cached: make([]atomic.Bool, len(keys)), lastAcked: make([]atomic.Int64, len(keys)),
		writing: make([]atomic.Int32, len(keys)), stopIssuing: make(chan struct{})}
	for i := range l.lastAcked {
		l.lastAcked[i].Store(-1)
	}
	l.issuing.Add(1)
	go l.run(ctx)
	return l
}

// since is the time since the load started.
func (l *load) since() time.Duration { return time.Since(l.start) }

func (l *load) run(ctx context.Context) {
	defer l.issuing.Done()
	defer func() { l.issuedUntil.Store(int64(l.since())) }()
	t := time.NewTicker(tick)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-l.stopIssuing:
			return
		case <-t.C:
		}
		if l.issued.Load() >= maxOps {
			return
		}
		l.read(ctx, n%len(l.keys))
		if n%writeTicks == 0 {
			for k := range l.keys {
				l.write(ctx, k)
			}
		}
	}
}

func (l *load) read(ctx context.Context, k int) {
	if l.reading.Add(1) > readsInFlight {
		l.reading.Add(-1)
		return
	}
	l.issued.Add(1)
	l.inFlight.Add(1)
	go func() {
		defer l.inFlight.Done()
		defer l.reading.Add(-1)
		rctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		call := l.since()
		res, err := l.c.GetResult(rctx, l.keys[k])
		ret := l.since()
		if err == nil && res.Hit && res.Layer == l.target.layer && res.Node == l.target.node {
			l.cached[k].Store(true)
		}
		l.record(op{key: k, call: call, ret: ret, ok: err == nil || errors.Is(err, client.ErrNotFound),
			layer: int8(res.Layer), node: res.Node, hit: res.Hit})
	}()
}

func (l *load) write(ctx context.Context, k int) {
	if l.writing[k].Add(1) > writesInFlight {
		l.writing[k].Add(-1)
		return
	}
	l.issued.Add(1)
	l.inFlight.Add(1)
	go func() {
		defer l.inFlight.Done()
		defer l.writing[k].Add(-1)
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		defer cancel()
		value := fmt.Appendf(nil, "t%d-%d", l.trial, l.values.Add(1))
		call := l.since()
		err := l.c.Put(wctx, l.keys[k], value)
		ret := l.since()
		if err == nil {
			for {
				last := l.lastAcked[k].Load()
				if int64(call) <= last || l.lastAcked[k].CompareAndSwap(last, int64(call)) {
					break
				}
			}
		}
		l.record(op{write: true, key: k, call: call, ret: ret, ok: err == nil})
	}()
}

func (l *load) record(o op) {
	l.mu.Lock()
	l.ops = append(l.ops, o)
	l.mu.Unlock()
}

// allCached reports whether a read of every key hit the target.
func (l *load) allCached() bool {
	for i := range l.cached {
		if !l.cached[i].Load() {
			return false
		}
	}
	return true
}

// writtenSince reports whether every key had a write called at or after
// at (since the start) acknowledged.
func (l *load) writtenSince(at time.Duration) bool {
	for i := range l.lastAcked {
		if l.lastAcked[i].Load() < int64(at) {
			return false
		}
	}
	return true
}

// stop stops issuing operations, waits for those outstanding (each is
// bounded by its timeout) and returns every operation and when issuing
// stopped (at maxOps, possibly before stop).
func (l *load) stop() ([]op, time.Duration) {
	close(l.stopIssuing)
	l.issuing.Wait()
	end := time.Duration(l.issuedUntil.Load())
	l.inFlight.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops, end
}
