package cachenode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/capacity"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/workpool"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/hotkey/mrc"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/routing"
)

// Defaults applied to zero fields of Config.
const (
	DefaultCapacity       = 10000
	DefaultCapacityBytes  = 64 << 20
	DefaultInterval       = time.Second
	DefaultLoadWindow     = 100 * time.Millisecond
	DefaultBackendTimeout = time.Second
	DefaultParkTimeout    = 20 * time.Millisecond
	DefaultLease          = time.Second
	// fetchParallelism bounds the FETCH calls of one insertion interval.
	fetchParallelism = 64
)

// Errors returned by Node methods.
var (
	// ErrNotMember is wrapped by SetMap when the map has no member
	// Config.Member in layer Config.Layer.
	ErrNotMember = errors.New("not a member of the partition map")
	// ErrNoMap is returned by Start before the first SetMap.
	ErrNoMap = errors.New("no partition map")
	// ErrStaleMap is wrapped by SetMap for a map older than the current one.
	ErrStaleMap = errors.New("stale partition map")
)

// Config configures a Node.
type Config struct {
	// Layer and Member are this node's identity in the partition map.
	Layer, Member string
	// Transport configures the UDP endpoint (Addr "127.0.0.1:0" etc.).
	Transport transport.Config
	// Capacity is the most entries cached, placeholders included
	// (default DefaultCapacity), unless the map sizes the node's layer
	// (partmap.Layer.Entries): then the map's, from the next insertion
	// interval on, without a restart.
	Capacity int
	// CapacityBytes is the most value bytes cached (default
	// DefaultCapacityBytes).
	CapacityBytes int64
	// Interval is the hot-key insertion period (default DefaultInterval);
	// a negative Interval runs no background loop (call InsertHot).
	Interval time.Duration
	// LoadWindow is the time constant of the load telemetry (default
	// DefaultLoadWindow).
	LoadWindow time.Duration
	// PeerRefresh is how often the map's DNS names of the shims are
	// resolved again (peers.Table.Refresh; default
	// peers.DefaultRefreshInterval, negative: never).
	PeerRefresh time.Duration
	// Detector configures the hot-key detector.
	Detector hotkey.Config
	// BackendTimeout bounds each backend call: a forwarded miss or a FETCH
	// (default DefaultBackendTimeout).
	BackendTimeout time.Duration
	// ParkTimeout bounds how long a read of a key whose write is pending
	// (phase 1 seen, phase 2 not) waits for the write's UPDATE, which
	// answers it, before it is sent to the shim (default
	// DefaultParkTimeout; negative: reads never wait, each starts its own
	// backend read). A write's phase 2 normally follows its phase 1 within
	// a millisecond or two; one that waits for a dead owner's release keeps
	// its key's readers here, so this bounds what they pay for it (plus one
	// backend read, shared by every reader parked meanwhile). Keep it below
	// the clients' attempt timeout.
	ParkTimeout time.Duration
	// Lease is the serving lease (default DefaultLease): after a read of
	// its map source that found it Active (Renew), the node serves cached
	// values for this long and no longer; storage shims stop waiting for a
	// node that left the ring only after the same time. Renew it several
	// times per Lease.
	Lease time.Duration
	// ShimLeases makes the node hold a lease from each storage shim whose
	// keys it caches, besides the map lease (shimlease.go): a shim that
	// the node stops answering writes its keys once that lease ends,
	// without waiting for the control plane. Every shim must grant them
	// (a shim of an earlier version serves no hits of its keys). The map
	// lease is then not needed: the node serves under a shim's grants only
	// while its map is at least as new as the shim's.
	ShimLeases bool
	// MapBehind, when set, is called (on the renewal loop's goroutine;
	// it must not block) when a shim's grant shows a newer partition map
	// than the node's: the node should read its map source now. Until it
	// has the newer map it serves none of that shim's keys.
	MapBehind func(version int64)
	// EmulatedRate is the node's emulated capacity in work units per
	// second (package capacity; DistCache §6.1); 0 means unlimited. A hit
	// costs 1 unit, and so does each INVALIDATE and each UPDATE of a key
	// the node holds; a forwarded miss costs nothing.
	EmulatedRate float64
	// MRCWindow is the window of the miss-ratio curve the node reports
	// (MissRatioCurve, GET /mrc; curve.go): the curve covers the last
	// complete window of this length (default DefaultMRCWindow). A
	// negative MRCWindow ends no window: the curve covers the reads since
	// New.
	MRCWindow time.Duration
	// MRC configures the node's two SHARDS estimators of the curve
	// (package hotkey/mrc). A zero InitialRate is not mrc's 1 but a rate
	// at which a sampled key stands for at most a hundredth of Capacity
	// (1 up to 100 entries; 0.01 at the default 10,000).
	MRC mrc.Config
	// Registerer receives the node's metrics; nil means a private registry.
	Registerer prometheus.Registerer
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Capacity == 0 {
		c.Capacity = DefaultCapacity
	}
	if c.CapacityBytes == 0 {
		c.CapacityBytes = DefaultCapacityBytes
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.LoadWindow == 0 {
		c.LoadWindow = DefaultLoadWindow
	}
	if c.BackendTimeout == 0 {
		c.BackendTimeout = DefaultBackendTimeout
	}
	if c.ParkTimeout == 0 {
		c.ParkTimeout = DefaultParkTimeout
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.MRCWindow == 0 {
		c.MRCWindow = DefaultMRCWindow
	}
	if c.MRC.InitialRate == 0 {
		c.MRC.InitialRate = mrcInitialRate(c.Capacity)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Transport.Logger == nil {
		c.Transport.Logger = c.Logger
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Layer == "" || c.Member == "":
		return errors.New("layer and member must be set")
	case c.Capacity < 0:
		return fmt.Errorf("capacity %d must not be negative", c.Capacity)
	case c.CapacityBytes < 0:
		return fmt.Errorf("capacity bytes %d must not be negative", c.CapacityBytes)
	case c.LoadWindow < 0 || c.BackendTimeout < 0:
		return errors.New("load window and backend timeout must not be negative")
	case c.Lease < 0:
		return fmt.Errorf("serving lease %v must not be negative", c.Lease)
	case !(c.EmulatedRate >= 0) || math.IsInf(c.EmulatedRate, 1):
		return fmt.Errorf("emulated rate %v must be a finite number of work units per second, 0 for unlimited", c.EmulatedRate)
	}
	return nil
}

// view is the node's compiled view of one partition map: immutable, swapped
// atomically by SetMap.
type view struct {
	p       *partmap.Placement
	version uint64
	layer   int          // index of Config.Layer, or -1 when not a member
	member  int          // own index in the layer, or -1
	id      uint32       // own member id (kept from the previous map when absent)
	active  bool         // a member and Active: owns keys and caches them
	entries int          // the layer's entries in the map (0: Config.Capacity)
	addrs   *peers.Table // shims' addresses
}

// owns reports whether this node may hold key under v: it is the key's
// owner in its layer, or one of the holders the map decided for it.
func (v *view) owns(key string) bool {
	return v.active && v.p.Holds(v.layer, v.member, key)
}

// shim returns the address of key's storage shim.
func (v *view) shim(key string) (netip.AddrPort, bool) {
	r, s := v.p.Shard(key)
	a := v.addrs.Shard(r, s)
	return a, a.IsValid()
}

// Node is a cache node. Create it with New, give it a map with SetMap, then
// Start it.
type Node struct {
	cfg Config
	log *slog.Logger
	ep  *transport.Endpoint
	// parkAfter starts a parked key's ParkTimeout; tests replace it before
	// Start to fire timeouts themselves.
	parkAfter func(d time.Duration, expire func()) stopper
	det       *hotkey.Detector
	meter     *routing.LoadMeter
	tally     loadTally // the GETs not yet in meter (load.go)
	epoch     time.Time // origin of the meter's monotonic clock
	store     *store
	work      *capacity.Limiter // the emulated capacity; Take blocks the reader on purpose
	busy      *capacity.UtilizationMeter
	reqs      *metrics.Requests
	stats     counters
	view      atomic.Pointer[view]
	lease     lease      // the serving lease (lease.go)
	shims     shimLeases // the storage shims' leases (shimlease.go)

	// mapMu serialises SetMap with InsertHot's ownership checks and
	// placeholder insertions, so no key is inserted under a superseded map,
	// and with Renew, so a lease is granted only for the map in use.
	mapMu sync.Mutex
	// insertMu serialises the plan-and-apply phase of InsertHot, and
	// guards lastPlan.
	insertMu sync.Mutex
	lastPlan time.Time // when the detector's current interval began
	// hot is the hits of the cached keys in the last complete interval.
	hot atomic.Pointer[intervalHits]
	// curve estimates the miss-ratio curve of the node's reads (curve.go).
	curve *curveWindows

	missMu  sync.Mutex // guards flights, the waiters of every flight, pending and parked
	flights map[string]*flight
	pending pendingWrites
	parked  map[string]*parkedReads

	// remapped is signalled by SetMap when a newer map version keeps or
	// makes the node Active: the version may have given it keys (a failed
	// member's share, or its own back after a restore), cold in its cache,
	// so the insertion loop runs its next interval early.
	remapped chan struct{}

	ctx     context.Context // cancelled by Close; bounds background calls
	cancel  context.CancelFunc
	started atomic.Bool
	closing atomic.Bool
	// draining refuses reads from Drain on (drain.go); inactiveSince is
	// when the node's map first made it not Active, on Node.now's clock
	// (0 while it is Active). Both are written under mapMu.
	draining      atomic.Bool
	inactiveSince atomic.Int64
	// tasks runs the node's goroutines (the backend reads of misses, the
	// insertion loop); Close waits for them.
	tasks *workpool.Pool
	// forwards are the flights started by the receive batches being
	// served, forwarded when each batch ends (forward.go).
	forwards forwardQueue
}

// New validates cfg and binds the node's UDP socket; the node does not serve
// until Start.
func New(cfg Config) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("cannot create cache node: %w", err)
	}
	det, err := hotkey.NewDetector(cfg.Detector)
	if err != nil {
		return nil, fmt.Errorf("cannot create cache node: %w", err)
	}
	meter, err := routing.NewLoadMeter(int64(cfg.LoadWindow))
	if err != nil {
		return nil, fmt.Errorf("cannot create cache node: %w", err)
	}
	curve, err := newCurveWindows(cfg.MRC, time.Now())
	if err != nil {
		return nil, fmt.Errorf("cannot create cache node: %w", err)
	}
	var n *Node // set below; the readers start in Start
	tc := cfg.Transport
	tc.Urgent = urgent
	tc.AfterBatch = func() { n.forwardQueued() }
	ep, err := transport.Listen(tc)
	if err != nil {
		return nil, fmt.Errorf("cannot create cache node: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	work := capacity.New(cfg.EmulatedRate)
	n = &Node{
		cfg:       cfg,
		log:       cfg.Logger.With("layer", cfg.Layer, "member", cfg.Member),
		ep:        ep,
		parkAfter: func(d time.Duration, expire func()) stopper { return time.AfterFunc(d, expire) },
		det:       det,
		lastPlan:  time.Now(), // the detector counts from its creation
		meter:     meter,
		tally:     loadTally{period: loadPeriod(cfg.LoadWindow)},
		curve:     curve,
		epoch:     time.Now(),
		store:     newStore(cfg.CapacityBytes),
		work:      work,
		busy:      capacity.NewUtilizationMeter(work, cfg.LoadWindow),
		flights:   make(map[string]*flight),
		parked:    make(map[string]*parkedReads),
		remapped:  make(chan struct{}, 1),
		shims:     shimLeases{wanted: map[int32]struct{}{}},
		pending:   newPendingWrites(),
		ctx:       ctx,
		cancel:    cancel,
		tasks:     workpool.New(0),
	}
	if err := n.registerMetrics(cfg.Registerer); err != nil {
		cancel()
		_ = ep.Close()
		return nil, fmt.Errorf("cannot create cache node: %w", err)
	}
	return n, nil
}

// Addr is the node's bound UDP address.
func (n *Node) Addr() netip.AddrPort { return n.ep.Addr() }

// Utilization is the fraction of its emulated capacity the node used over
// the last load window (capacity.UtilizationMeter): about 1 when its
// requests queue for it. ok is false without an emulated capacity. A
// health check reports it, so that a node that answers late because it is
// busy is told apart from one that is slow (a gray failure).
func (n *Node) Utilization() (u float64, ok bool) { return n.busy.Utilization() }

// Work is the work the node has done against its emulated capacity, as
// GET /work answers it (distcache_work_units_total, distcache_work_capacity).
func (n *Node) Work() metrics.Work {
	return metrics.Work{Units: n.work.Used(), Capacity: n.work.Rate()}
}

// Start starts serving and, unless Config.Interval < 0, the insertion loop
// (and unless Config.MRCWindow < 0, the windows of the miss-ratio curve).
// It fails before the first SetMap.
func (n *Node) Start() error {
	if n.view.Load() == nil {
		return fmt.Errorf("cannot start cache node %s: %w", n.cfg.Member, ErrNoMap)
	}
	if n.closing.Load() {
		return fmt.Errorf("cannot start cache node %s: %w", n.cfg.Member, transport.ErrClosed)
	}
	if n.started.Swap(true) {
		return fmt.Errorf("cannot start cache node %s: already started", n.cfg.Member)
	}
	n.ep.Start(n.handle)
	if n.cfg.Interval > 0 {
		n.spawn(n.loop)
	}
	if n.cfg.MRCWindow > 0 {
		n.spawn(n.rotateCurves)
	}
	if n.cfg.ShimLeases {
		n.spawn(n.renewLoop)
	}
	if n.cfg.PeerRefresh >= 0 {
		n.spawn(func() { peers.RefreshEvery(n.ctx, n.cfg.PeerRefresh, n.RefreshPeers) })
	}
	n.log.Info("cache node started", "addr", n.Addr(), "map_version", n.view.Load().version)
	return nil
}

// RefreshPeers resolves the DNS names of the current map's shims again, so
// that a shim pod recreated with a new IP is reached at it without a new
// map version; Start runs it every Config.PeerRefresh. It returns how many
// addresses changed.
func (n *Node) RefreshPeers(ctx context.Context) int {
	if v := n.view.Load(); v != nil {
		return v.addrs.Refresh(ctx)
	}
	return 0
}

// Close stops the insertion loop, closes the endpoint and waits for the
// node's goroutines. Outstanding backend calls are cancelled.
func (n *Node) Close() error {
	if n.closing.Swap(true) {
		return nil
	}
	n.work.Close()      // readers waiting for capacity finish their request now
	err := n.ep.Close() // stops the readers: no new handler calls
	n.cancel()
	n.tasks.Close()
	if err != nil {
		return fmt.Errorf("cannot close cache node %s: %w", n.cfg.Member, err)
	}
	return nil
}

// spawn runs f on a goroutine of the node's pool, which Close waits for,
// unless the node is closed.
func (n *Node) spawn(f func()) bool { return n.tasks.Go(f) }

// SetMap switches the node to p. A node that is not Active in p (Fenced,
// Failed, or absent) drops every entry and its lease and serves no cached
// value until a map makes it Active again, when it starts empty; a map more
// than one version ahead of the current one also empties the cache, since a
// map the node never saw may have moved its keys away and back while shims
// stopped invalidating it (docs/dataplane.md, Fencing); otherwise the
// entries of keys that moved to another member are dropped. Every backend
// read in flight is sealed: readers arriving from now on start a new one. A
// map older than the current one is rejected (ErrStaleMap) and changes
// nothing. When p has no member Config.Member in layer Config.Layer, the map
// is still applied and the error wraps ErrNotMember.
func (n *Node) SetMap(p *partmap.Placement) error {
	if p == nil {
		return fmt.Errorf("cannot set partition map of %s: nil map", n.cfg.Member)
	}
	n.mapMu.Lock()
	defer n.mapMu.Unlock()
	prev := n.view.Load()
	if prev != nil && uint64(p.Version()) < prev.version {
		return fmt.Errorf("cannot set partition map of %s: %w: version %d, have %d",
			n.cfg.Member, ErrStaleMap, p.Version(), prev.version)
	}
	v := newView(p, n.cfg.Layer, n.cfg.Member, prev, n.log)
	n.view.Store(v)
	n.ep.FollowMap(p.Map()) // the map's replay protection (transport.Config.Replay the floor)
	switch {
	case v.active:
		n.inactiveSince.Store(0)
	case n.inactiveSince.Load() == 0:
		n.inactiveSince.Store(max(n.now(time.Now()), 1))
	}
	if !v.active || n.draining.Load() {
		n.revoke()
	}
	n.sealFlights()

	var dropped int
	switch relaid := n.setLayout(p.Map()); {
	case !v.active || prev == nil || !prev.active || v.version > prev.version+1 || relaid:
		dropped = n.dropEntries(nil)
	default:
		dropped = n.dropEntries(func(key string) bool { return !v.owns(key) })
	}
	if v.active && prev != nil && v.version > prev.version {
		select {
		case n.remapped <- struct{}{}:
		default: // already signalled
		}
	}
	n.log.Info("partition map set", "version", v.version, "active", v.active, "dropped", dropped)
	if v.layer < 0 {
		return fmt.Errorf("cannot find %s in layer %s of partition map version %d: %w",
			n.cfg.Member, n.cfg.Layer, v.version, ErrNotMember)
	}
	return nil
}

// dropEntries removes every entry whose key satisfies drop (every entry
// when drop is nil), stops tracking their keys' hits and counts them;
// it returns how many it removed.
func (n *Node) dropEntries(drop func(key string) bool) int {
	dropped := n.store.dropIf(drop)
	for _, k := range dropped {
		n.det.Untrack(k)
	}
	n.stats.dropped.Add(uint64(len(dropped)))
	return len(dropped)
}

// capacity is the most entries the node caches: its layer's in the
// current map, else Config.Capacity.
func (n *Node) capacity() int {
	if v := n.view.Load(); v != nil && v.entries > 0 {
		return v.entries
	}
	return n.cfg.Capacity
}

// newView compiles the node's view of p.
func newView(p *partmap.Placement, layer, member string, prev *view, log *slog.Logger) *view {
	m := p.Map()
	v := &view{p: p, version: uint64(p.Version()), layer: -1, member: -1}
	if prev != nil {
		v.id = prev.id
	}
	if l, i, ok := m.Member(member); ok && m.Layers[l].Name == layer {
		mb := m.Layers[l].Members[i]
		v.layer, v.member, v.id = l, i, mb.ID
		v.active = mb.State == partmap.Active
		v.entries = m.Layers[l].Entries
	}
	var prevAddrs *peers.Table
	if prev != nil {
		prevAddrs = prev.addrs
	}
	v.addrs = peers.Resolve(m, log, peers.WithPrevious(prevAddrs))
	return v
}

// Cached returns a copy of key's cached value, its version, whether it is
// valid, and whether key has an entry at all (placeholders included).
func (n *Node) Cached(key string) (value []byte, version uint64, valid bool, ok bool) {
	e, ok := n.store.snapshot(key)
	if !ok {
		return nil, 0, false, false
	}
	return bytes.Clone(e.value), e.version, e.valid, true
}
