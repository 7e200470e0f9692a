package shim

import (
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
	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/capacity"
	"github.com/distcache/distcache/dataplane/lease"
	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/workpool"
	"github.com/distcache/distcache/hotkey/topkeys"
)

// Defaults applied to zero fields of Config.
const (
	DefaultInvalidateTimeout = 2 * time.Second
	DefaultUpdateTimeout     = time.Second
	DefaultPrevMapGrace      = 2 * time.Minute
	DefaultMaxInFlight       = 4096
	DefaultDedupTTL          = 30 * time.Second
	DefaultHolderKeys        = 1 << 18
	DefaultQueueTimeout      = 250 * time.Millisecond
	DefaultLease             = time.Second
	DefaultHotKeysInterval   = time.Second
	DefaultHotKeys           = 256

	// Redis client defaults, applied to zero fields of Config.Redis: fail
	// fast, because a request's client retransmits and a write must not
	// hold its key's lock for long.
	DefaultRedisDialTimeout = 500 * time.Millisecond
	DefaultRedisIOTimeout   = time.Second
	DefaultRedisRetries     = 1
	DefaultRedisPoolSize    = 64
)

// Config configures a Shim.
type Config struct {
	// Shard is this shim's shard name in the partition map
	// (Storage.Racks[r].Shards[s].Name).
	Shard string
	// Transport configures the UDP endpoint.
	Transport transport.Config
	// Redis are the go-redis options (Addr etc.). New applies defaults to
	// zero fields: DialTimeout 500ms, ReadTimeout and WriteTimeout 1s, one
	// command retry (MaxRetries 1, not go-redis's 3: after Redis restarts,
	// each pooled connection fails its next command once, and a retry on a
	// fresh connection is safe because the command runs under the key's
	// lock or is a read), a single dial attempt per command (DialerRetries
	// 1, so a Redis that is down fails promptly), PoolSize 64.
	Redis *redis.Options
	// InvalidateTimeout is phase 1's budget per write (default 2s).
	InvalidateTimeout time.Duration
	// UpdateTimeout is phase 2's budget per write (default 1s).
	UpdateTimeout time.Duration
	// PrevMapGrace is how long after a map change the owners under the
	// maps it replaced are still invalidated (default 2m); it must be at
	// least Lease plus MapDeliveryLag.
	PrevMapGrace time.Duration
	// Lease is the cache nodes' serving lease (default DefaultLease; it
	// must equal theirs): once a node has been out of a key's ownership,
	// or fenced, for Lease plus MapDeliveryLag by this shim's clock, it
	// can no longer serve the key from a copy and phase 1 stops waiting
	// for it (docs/dataplane.md, Fencing).
	Lease time.Duration
	// MapDeliveryLag bounds how old the map can be that a cache node reads
	// from its map source: 0 for a file the control plane writes on the
	// node's host (standalone mode) and for the ConfigMap read through the
	// Kubernetes API (quorum reads); the kubelet's refresh delay (a minute
	// or more) for a mounted ConfigMap.
	MapDeliveryLag time.Duration
	// PeerRefresh is how often the maps' DNS names of the cache members
	// are resolved again (peers.Table.Refresh; default
	// peers.DefaultRefreshInterval, negative: never).
	PeerRefresh time.Duration
	// MaxInFlight bounds the requests being served; beyond it requests get
	// StatusOverloaded (default 4096). A PUT keeps its slot through phase 2.
	MaxInFlight int
	// DedupTTL is how long the replies of completed writes are kept for
	// retransmitted requests (default 30s).
	DedupTTL time.Duration
	// ReleaseHold is how long a key released from the caches is not
	// cached again (holdback.go; default DefaultReleaseHold).
	ReleaseHold time.Duration
	// HolderKeys bounds the directory of copies (holders.go): the keys it
	// lists nodes for before it is cleared and every node flushed again
	// (default DefaultHolderKeys).
	HolderKeys int
	// QueueTimeout bounds how long a read (GET or FETCH) waits for the
	// emulated capacity; one that would wait longer is shed with
	// StatusOverloaded, as its requester has given up on it (default
	// 250ms, the clients' attempt timeout). Unused without EmulatedRate.
	QueueTimeout time.Duration
	// EmulatedRate is the shim's emulated capacity, the storage server's
	// throughput in work units per second (package capacity; DistCache
	// §6.1); 0 means unlimited. A GET, FETCH, PUT or DEL costs 1 unit, and
	// a write 1 more per cached copy it invalidates and updates.
	EmulatedRate float64
	// HotKeys is how many of its most requested keys the shim counts the
	// reads and writes of (package hotkey/topkeys; default 256), and
	// HotKeysInterval how long each count runs (default 1s); GET /hotkeys
	// reports the last complete one.
	HotKeys         int
	HotKeysInterval time.Duration
	// Registerer receives the metrics; nil means a private registry.
	Registerer prometheus.Registerer
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.HotKeys <= 0 {
		c.HotKeys = DefaultHotKeys
	}
	if c.HotKeysInterval <= 0 {
		c.HotKeysInterval = DefaultHotKeysInterval
	}
	if c.InvalidateTimeout <= 0 {
		c.InvalidateTimeout = DefaultInvalidateTimeout
	}
	if c.UpdateTimeout <= 0 {
		c.UpdateTimeout = DefaultUpdateTimeout
	}
	if c.PrevMapGrace <= 0 {
		c.PrevMapGrace = DefaultPrevMapGrace
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.DedupTTL <= 0 {
		c.DedupTTL = DefaultDedupTTL
	}
	if c.ReleaseHold <= 0 {
		c.ReleaseHold = DefaultReleaseHold
	}
	if c.HolderKeys <= 0 {
		c.HolderKeys = DefaultHolderKeys
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = DefaultQueueTimeout
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
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

// redisOptions returns a copy of o with the shim's defaults.
func redisOptions(o *redis.Options) *redis.Options {
	r := *o
	if r.DialTimeout == 0 {
		r.DialTimeout = DefaultRedisDialTimeout
	}
	if r.ReadTimeout == 0 {
		r.ReadTimeout = DefaultRedisIOTimeout
	}
	if r.WriteTimeout == 0 {
		r.WriteTimeout = DefaultRedisIOTimeout
	}
	if r.MaxRetries == 0 {
		r.MaxRetries = DefaultRedisRetries
	}
	if r.DialerRetries == 0 {
		r.DialerRetries = 1
	}
	if r.PoolSize == 0 {
		r.PoolSize = DefaultRedisPoolSize
	}
	if r.Protocol == 0 {
		// RESP2: with RESP3 go-redis peeks at the socket for push
		// notifications before every command on a connection that stays
		// checked out (a system call each), and the shim subscribes to
		// nothing.
		r.Protocol = 2
	}
	if r.Dialer == nil && r.TLSConfig == nil {
		r.Dialer = redisconn.Dial // raw reads and writes (redisconn.Dial)
	}
	return &r
}

// Shim is the storage shim of one Redis shard.
type Shim struct {
	cfg     Config
	log     *slog.Logger
	ep      *transport.Endpoint
	rdb     *redis.Client
	redisq  *redisbatch.Batcher // GETs and writes' scripts, pipelined under load
	metrics *shimMetrics
	stats   counters
	locks   *keyLocks
	dedup   *dedupTable
	held    heldBack // keys released from the caches, not cached again for a while
	clock   versionClock
	sem     chan struct{}     // a token per request being served
	work    *capacity.Limiter // the emulated capacity, shared by readers and writes
	queued  *queuedReads      // GETs waiting for their work unit, which later GETs of the key join
	reads   requestQueue      // GETs of the receive batches being served (readbatch.go)
	writes  requestQueue      // writes of the receive batches being served (writebatch.go)
	top     *topkeys.Counter  // the most requested keys' reads and writes (GET /hotkeys)
	holders *holders          // the nodes that may hold each key (holders.go)
	leases  *lease.Grantor    // the serving leases granted to nodes (leases.go)
	born    time.Time         // when New ran: the start of the leases' clock
	// takeUnit takes a read's work unit if it is available by deadline
	// (capacity.Limiter.TakeBy); tests replace it before Start.
	takeUnit func(deadline time.Time) bool

	// ctx ends when Close starts; it aborts calls and lock waits.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the peer refresher
	// tasks runs each request on a goroutine of its own (serve), or a
	// receive batch's GETs together (serveReadBatch), reused from one to
	// the next.
	tasks *workpool.Pool

	mapMu   sync.Mutex              // serialises SetMap (view stores)
	view    atomic.Pointer[mapView] // nil until the first SetMap
	started atomic.Bool
	closed  atomic.Bool
}

// New binds the UDP endpoint and creates the Redis client; Redis need not
// be up. Serve with SetMap then Start.
func New(cfg Config) (*Shim, error) {
	cfg = cfg.withDefaults()
	if cfg.Shard == "" {
		return nil, errors.New("cannot create shim: empty shard name")
	}
	if cfg.Redis == nil {
		return nil, fmt.Errorf("cannot create shim %s: no Redis options", cfg.Shard)
	}
	if cfg.MapDeliveryLag < 0 {
		return nil, fmt.Errorf("cannot create shim %s: map delivery lag %v must not be negative", cfg.Shard, cfg.MapDeliveryLag)
	}
	if need := cfg.Lease + cfg.MapDeliveryLag; cfg.PrevMapGrace < need {
		return nil, fmt.Errorf("cannot create shim %s: previous map grace %v must be at least the serving lease plus the map delivery lag (%v)",
			cfg.Shard, cfg.PrevMapGrace, need)
	}
	if !(cfg.EmulatedRate >= 0) || math.IsInf(cfg.EmulatedRate, 1) {
		return nil, fmt.Errorf("cannot create shim %s: emulated rate %v must be a finite number of work units per second, 0 for unlimited",
			cfg.Shard, cfg.EmulatedRate)
	}
	grants, err := newGrantor(cfg.Lease)
	if err != nil {
		return nil, fmt.Errorf("cannot create shim %s: %w", cfg.Shard, err)
	}
	var s *Shim
	tc := cfg.Transport
	tc.AfterBatch = func() { s.serveQueued() } // a handler runs after Start only
	if tc.Auth != nil {
		tc.Unsigned = func(peer netip.AddrPort) bool { return s.isSwitch(peer) }
	}
	ep, err := transport.Listen(tc)
	if err != nil {
		return nil, fmt.Errorf("cannot create shim %s: %w", cfg.Shard, err)
	}
	s = &Shim{
		cfg:     cfg,
		log:     cfg.Logger.With("shard", cfg.Shard),
		ep:      ep,
		rdb:     redis.NewClient(redisOptions(cfg.Redis)),
		locks:   newKeyLocks(),
		dedup:   newDedupTable(cfg.DedupTTL),
		sem:     make(chan struct{}, cfg.MaxInFlight),
		work:    capacity.New(cfg.EmulatedRate),
		queued:  newQueuedReads(),
		tasks:   workpool.New(0),
		top:     topkeys.New(cfg.HotKeys, time.Now()),
		holders: newHolders(cfg.HolderKeys),
		leases:  grants,
		born:    time.Now(),
	}
	s.redisq = redisbatch.New(s.rdb)
	s.takeUnit = func(deadline time.Time) bool { return s.work.TakeBy(1, deadline) }
	s.clock.start(time.Now())
	if s.metrics, err = newShimMetrics(cfg.Registerer, ep, s.work, &s.stats); err != nil {
		_ = ep.Close()
		_ = s.rdb.Close()
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Addr is the shim's UDP address.
func (s *Shim) Addr() netip.AddrPort { return s.ep.Addr() }

// Start starts serving requests. It fails without a map.
func (s *Shim) Start() error {
	if s.view.Load() == nil {
		return fmt.Errorf("cannot start shim %s: no partition map", s.cfg.Shard)
	}
	if s.closed.Load() {
		return fmt.Errorf("cannot start shim %s: %w", s.cfg.Shard, transport.ErrClosed)
	}
	if s.started.Swap(true) {
		return fmt.Errorf("cannot start shim %s: already started", s.cfg.Shard)
	}
	s.ep.Start(s.handle)
	if s.cfg.PeerRefresh >= 0 {
		s.wg.Go(func() { peers.RefreshEvery(s.ctx, s.cfg.PeerRefresh, s.RefreshPeers) })
	}
	s.wg.Go(s.rotateHotKeys)
	s.wg.Go(s.flush)
	s.log.Info("shim serving", "addr", s.ep.Addr(), "redis", s.cfg.Redis.Addr)
	return nil
}

// RefreshPeers resolves the DNS names of the cache members of the current
// map, and of the maps it still invalidates under, again: a node pod
// recreated with a new IP is invalidated, and recognised as an owner, at
// its new address without a new map version. Start runs it every
// Config.PeerRefresh. It returns how many addresses changed.
func (s *Shim) RefreshPeers(ctx context.Context) int {
	v := s.view.Load()
	if v == nil {
		return 0
	}
	n := 0
	for _, st := range v.states() {
		n += st.addrs.Refresh(ctx)
	}
	return n
}

// Close stops serving: it closes the socket, aborts the requests in flight,
// waits for them and closes the Redis client.
func (s *Shim) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.work.Close() // readers and writes waiting for capacity go on at once
	err := s.ep.Close()
	s.cancel()
	s.tasks.Close()
	s.wg.Wait()
	if rerr := s.rdb.Close(); rerr != nil {
		err = errors.Join(err, fmt.Errorf("cannot close Redis client: %w", rerr))
	}
	return err
}

// Healthy pings Redis.
func (s *Shim) Healthy(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("cannot ping Redis at %s: %w", s.cfg.Redis.Addr, err)
	}
	return nil
}
