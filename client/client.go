package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/routing"
)

// Defaults applied to zero fields of Config.
const (
	DefaultAddr           = "127.0.0.1:0"
	DefaultStaleAfter     = int64(time.Second)
	DefaultHalfLife       = int64(200 * time.Millisecond)
	DefaultAttemptTimeout = 250 * time.Millisecond
	DefaultAttempts       = 6
	DefaultRoundPause     = 25 * time.Millisecond
	DefaultFailBackoff    = 2 * time.Second
	DefaultHedgeDelay     = 20 * time.Millisecond
)

// Config configures a Client.
type Config struct {
	// Transport configures the client's UDP endpoint; Addr defaults to
	// DefaultAddr. Its Replay is the least replay protection the client
	// uses: the maps it installs may raise it (SetMap).
	Transport transport.Config
	// Aging ages loads not refreshed by telemetry (in nanoseconds, see
	// routing.AgingConfig). The zero value means StaleAfter 1s, HalfLife
	// 200ms.
	Aging routing.AgingConfig
	// PeerRefresh is how often the map's DNS names of the members and
	// shims are resolved again (peers.Table.Refresh; default
	// peers.DefaultRefreshInterval, negative: never), so that a pod
	// recreated with a new IP is reached at it without a new map.
	PeerRefresh time.Duration
	// Resolver resolves the map's DNS names (nil: the system's).
	Resolver *net.Resolver
	// AttemptTimeout bounds one GET attempt at one node or shim (default
	// 250ms; the caller's deadline still applies).
	AttemptTimeout time.Duration
	// Attempts bounds the requests of one read whose context has no
	// deadline across its candidates and the shim, round after round
	// (each attempt at a node may add one cache-only hedge, see
	// HedgeDelay): a read with a deadline goes on until it. It also bounds
	// the calls of one write retried after COHERENCE_TIMEOUT (default 6:
	// two rounds of two layers and the shim). The caller's context bounds
	// both too.
	Attempts int
	// RoundPause is the pause before a read's second round of attempts,
	// once every candidate and the shim failed; it doubles for each later
	// round up to 8 times (default 25ms).
	RoundPause time.Duration
	// FailBackoff is how long a node that timed out is skipped (default
	// 2s); afterwards reads may choose it again, which probes it.
	FailBackoff time.Duration
	// HedgeDelay is how long a read waits for a cache node before it also
	// asks the key's other candidate (a hedged read; the first answer
	// wins), and how long a node may leave this client's requests
	// unanswered before reads pass over it while another candidate is not
	// stalled (routing.WithStallAfter): a dead, paused or slow node costs a
	// read about HedgeDelay, not AttemptTimeout, and stops being chosen
	// within it (default 20ms; negative: no hedging, no stall tracking).
	// A node whose round trips have been longer is hedged after its
	// retransmission timeout instead (hedge.go, hedgeDelay).
	HedgeDelay time.Duration
	// Seed seeds the routers' tie-breaking.
	Seed uint64
	// Zone is the client's zone: a read prefers its key's candidate in it
	// unless that one is loaded more than 1 + ZoneMargin times another
	// (routing.WithRemoteMargin). Empty: the zone of the map's members on
	// Host, if any; else reads do not tell zones apart.
	Zone string
	// Host is the machine (Kubernetes node) the client runs on: its zone
	// is that of the map's members on it when Zone is empty.
	Host string
	// ZoneMargin is how much more loaded a candidate in the client's zone
	// may be than one in another zone and still be chosen (default
	// DefaultZoneMargin; negative: zones are not told apart).
	ZoneMargin float64
	// Maps, when set, is where the client reads a newer partition map when
	// a node or shim replies with a newer version than the client's: in
	// the background, and before routing a read again that a node refused
	// because of its map. Without it the client learns new maps only from
	// SetMap.
	Maps MapSource
	// ClientLeaf, when valid, is the data address of the client leaf in
	// front of the client (a SwitchFabric's client-leaf switch, its
	// dataAddress): the first attempt of a GET of a key a switch can
	// carry goes to the leaf's read port for the key's shard, and the
	// leaf chooses between the key's spine and storage-leaf switches
	// (clientleaf.go). Writes never go through it.
	ClientLeaf netip.AddrPort
	// Bypass is the NoCache baseline: every read goes straight to
	// storage, skipping the cache layers: to the key's shim (FlagDirect,
	// counted in Stats.DirectReads), or to its Redis where the client
	// reads storage itself (storage.go); writes are unchanged.
	Bypass bool
	// AskNodesForColdKeys makes a client that reads storage itself send
	// every read to a cache node first, as without direct reads, instead
	// of reading the keys that are not warm from Redis straight away
	// (warm.go).
	AskNodesForColdKeys bool
	// StorageLogin is how the client logs in to the shards' Redis when the
	// map names them (direct reads and writes, transactions, scripts):
	// the ACL user, the password files and TLS of storage.auth and
	// storage.tls. Its Addr is not used; the zero value connects over
	// plain TCP without AUTH. A process's clients share one connection
	// pool per Redis address for direct reads, made with the login of
	// the first client that asked.
	StorageLogin redisconn.Settings
	// Registerer receives the metrics; nil means a private registry. Two
	// clients cannot share one Registerer (the metric names collide: New
	// fails); wrap it with distinguishing labels instead.
	Registerer prometheus.Registerer
	// Logger receives structured logs (default: discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Transport.Addr == "" {
		c.Transport.Addr = DefaultAddr
	}
	if c.Aging == (routing.AgingConfig{}) {
		c.Aging = routing.AgingConfig{StaleAfter: DefaultStaleAfter, HalfLife: DefaultHalfLife}
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	if c.Attempts <= 0 {
		c.Attempts = DefaultAttempts
	}
	if c.RoundPause <= 0 {
		c.RoundPause = DefaultRoundPause
	}
	if c.FailBackoff <= 0 {
		c.FailBackoff = DefaultFailBackoff
	}
	if c.HedgeDelay == 0 {
		c.HedgeDelay = DefaultHedgeDelay
	}
	if c.ZoneMargin == 0 {
		c.ZoneMargin = DefaultZoneMargin
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

// Client reads and writes DistCache keys. It is safe for concurrent use.
type Client struct {
	cfg      Config
	ep       *transport.Endpoint
	table    *routing.LoadTable
	routers  sync.Pool // *routing.Router sharing table
	routerID atomic.Uint64
	epoch    time.Time // origin of the monotonic "now" fed to table
	// now returns nanoseconds since epoch (a field so tests can move time).
	now func() int64

	view atomic.Pointer[view] // current partition map

	// backoffMu guards backoff: node -> end of its FailBackoff (now's
	// time base). A node is in it iff this client marked it failed in
	// table; marks are cleared lazily once they expire.
	backoffMu sync.Mutex
	backoff   map[routing.NodeID]int64
	// leafSkipUntil is when the client leaf that timed out is tried
	// again (now's time base; clientleaf.go).
	leafSkipUntil atomic.Int64

	refresh refresher // reads Config.Maps

	cancelRefresh context.CancelFunc // ends the peer refresh loop (nil: none)
	stopRefresh   chan struct{}      // closed when it has ended

	storage   storageReaders // direct reads of Redis (storage.go)
	shardConn shardConns     // transactions and scripts at Redis (atomic.go)
	warm      *warmReads     // which reads ask a node first (warm.go)
	stats     counters
	requests  *metrics.Requests
	layerHits *layerHits
}

// view is an immutable compiled partition map with parsed addresses.
type view struct {
	p       *partmap.Placement
	version uint64
	addrs   *peers.Table   // members' and shims' addresses
	hits    []layerCounter // by layer
	// storage reads each shard's Redis by global shard index (storage.go);
	// nil when reads go through the nodes and shims.
	storage []*redisbatch.Batcher
	// directWrites: every shard lets the client write keys no cache may
	// hold to its Redis (directwrite.go).
	directWrites bool
	// remote marks, by layer and member, the members in another zone than
	// the client's; nil when the client's zone is unknown (zones.go).
	remote [][]bool
}

// New starts a client routing by p.
func New(cfg Config, p *partmap.Placement) (*Client, error) {
	if p == nil {
		return nil, errors.New("cannot create client: nil placement")
	}
	cfg = cfg.withDefaults()
	var opts []routing.TableOption
	if cfg.HedgeDelay > 0 {
		opts = append(opts, routing.WithStallAfter(int64(cfg.HedgeDelay)))
	}
	if cfg.ZoneMargin > 0 {
		opts = append(opts, routing.WithRemoteMargin(cfg.ZoneMargin))
	}
	table, err := routing.NewLoadTable(cfg.Aging, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot create client: %w", err)
	}
	ep, err := transport.Listen(cfg.Transport)
	if err != nil {
		return nil, fmt.Errorf("cannot create client: %w", err)
	}
	warm, err := newWarmReads(cfg.Seed)
	if err != nil {
		_ = ep.Close()
		return nil, fmt.Errorf("cannot create client: %w", err)
	}
	c := &Client{
		warm:    warm,
		cfg:     cfg,
		ep:      ep,
		table:   table,
		epoch:   time.Now(),
		backoff: make(map[routing.NodeID]int64),
		refresh: refresher{src: cfg.Maps},
	}
	c.shardConn.dial = cfg.StorageLogin.Dialer()
	c.now = func() int64 { return int64(time.Since(c.epoch)) }
	c.routers.New = func() any {
		// Distinct, deterministic seeds per router (golden-ratio stride).
		return routing.NewRouter(c.table, cfg.Seed+c.routerID.Add(1)*0x9e3779b97f4a7c15)
	}
	if err := c.registerMetrics(cfg.Registerer); err != nil {
		_ = ep.Close()
		return nil, fmt.Errorf("cannot create client: %w", err)
	}
	c.view.Store(c.compile(p))
	ep.FollowMap(p.Map())
	ep.Start(nil) // the client serves no requests; replies go to calls
	if cfg.PeerRefresh >= 0 {
		ctx, cancel := context.WithCancel(context.Background())
		c.stopRefresh = make(chan struct{})
		c.cancelRefresh = cancel
		go func() {
			defer close(c.stopRefresh)
			peers.RefreshEvery(ctx, cfg.PeerRefresh, c.RefreshPeers)
		}()
	}
	cfg.Logger.Info("client started", "addr", ep.Addr(), "map_version", p.Version(), "layers", p.Layers())
	return c, nil
}

// Addr is the client's UDP address.
func (c *Client) Addr() netip.AddrPort { return c.ep.Addr() }

// NewPoller returns a poller of the client's transport, when its
// Config.Transport is Polled: an event loop that waits for its FD and
// calls Poll receives the replies to the client's requests
// (transport.Poller).
func (c *Client) NewPoller() (*transport.Poller, error) { return c.ep.NewPoller() }

// Placement returns the partition map the client currently routes by.
func (c *Client) Placement() *partmap.Placement { return c.view.Load().p }

// SetMap makes the client route by p from now on (an atomic swap; requests
// in flight finish under the map they started with). Failure marks are
// kept: they expire after FailBackoff. The client's endpoint takes the
// map's replay protection, or Config.Transport.Replay when stronger
// (transport.Endpoint.FollowMap). A nil p, or one not newer than the
// current map, is ignored.
func (c *Client) SetMap(p *partmap.Placement) {
	if p == nil {
		return
	}
	next := c.compile(p)
	for {
		old := c.view.Load()
		if next.version <= old.version {
			return
		}
		if c.view.CompareAndSwap(old, next) {
			// The view read after the swap: of concurrent calls, the
			// last to get here applies the newest map's mode.
			c.ep.FollowMap(c.view.Load().p.Map())
			c.cfg.Logger.Info("partition map changed", "from", old.version, "to", p.Version())
			return
		}
	}
}

// RefreshPeers resolves the DNS names of the current map's members and
// shims again; New runs it every Config.PeerRefresh. It returns how many
// addresses changed.
func (c *Client) RefreshPeers(ctx context.Context) int { return c.view.Load().addrs.Refresh(ctx) }

// Close closes the client's endpoint; operations in flight fail.
func (c *Client) Close() error {
	if c.cancelRefresh != nil {
		c.cancelRefresh()
		<-c.stopRefresh
	}
	serr := errors.Join(c.storage.close(), c.shardConn.close())
	if err := c.ep.Close(); err != nil {
		return fmt.Errorf("cannot close client: %w", err)
	}
	return serr
}

// allShardsWriteDirectly says whether every shard of m lets clients write
// to its Redis (partmap.Shard.DirectWrites).
func allShardsWriteDirectly(m *partmap.Map) bool {
	for _, r := range m.Storage.Racks {
		for _, sh := range r.Shards {
			if !sh.DirectWrites {
				return false
			}
		}
	}
	return true
}

// cold reports whether key's read at now (the client's clock) goes to
// storage without asking a node: the client reads storage itself and the
// key is not warm (warm.go).
func (c *Client) cold(v *view, key string, now int64) bool {
	return v.storage != nil && !c.cfg.Bypass && !c.cfg.AskNodesForColdKeys && !c.warm.warm(key, now)
}

// compile builds the view of p, resolving addresses once.
func (c *Client) compile(p *partmap.Placement) *view {
	m := p.Map()
	names := make([]string, len(m.Layers))
	for l, layer := range m.Layers {
		names[l] = layer.Name
	}
	var prev *peers.Table
	if old := c.view.Load(); old != nil {
		prev = old.addrs
	}
	opts := []peers.Option{peers.WithPrevious(prev), peers.WithClock(func() time.Time { return c.epoch.Add(time.Duration(c.now())) })}
	if c.cfg.Resolver != nil {
		opts = append(opts, peers.WithResolver(c.cfg.Resolver))
	}
	storage := c.storage.forMap(m, c.cfg)
	return &view{p: p, version: uint64(p.Version()), addrs: peers.Resolve(m, c.cfg.Logger, opts...), hits: c.layerHits.forLayers(names),
		storage: storage, directWrites: storage != nil && allShardsWriteDirectly(m), remote: c.remoteMembers(m)}
}

// shardAddr returns the address of key's storage shim under v. When the
// shard's name has no address yet (a DNS record that appeared after the
// last periodic refresh, Config.PeerRefresh), it resolves the map's names
// again (peers.Table.RefreshMissing, rate-limited) and looks once more.
func (c *Client) shardAddr(ctx context.Context, v *view, key string) (netip.AddrPort, error) {
	a, err := v.shardAddr(key)
	if errors.Is(err, ErrNoRoute) && v.addrs.RefreshMissing(ctx) {
		return v.shardAddr(key)
	}
	return a, err
}

// shardAddr returns the address of key's storage shim under v.
func (v *view) shardAddr(key string) (netip.AddrPort, error) {
	r, s := v.p.Shard(key)
	a := v.addrs.Shard(r, s)
	if !a.IsValid() {
		sh := v.p.Map().Storage.Racks[r].Shards[s].Name
		return a, fmt.Errorf("%w: shard %s (map version %d)", ErrNoRoute, sh, v.version)
	}
	return a, nil
}
