package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// Store is the cluster behind the gateway: *client.Client.
type Store interface {
	// Get returns key's value, or an error wrapping client.ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetMany reads keys at once, res[i] and errs[i] being what
	// GetResult returns for keys[i] (client.Client.GetMany).
	GetMany(ctx context.Context, keys []string, res []client.Result, errs []error)
	// Put writes key = value through the key's storage shim.
	Put(ctx context.Context, key string, value []byte) error
	// Remove deletes key and reports whether it existed.
	Remove(ctx context.Context, key string) (bool, error)
	// The read-modify-write operations, run atomically at the key's
	// storage shim under the coherence protocol.
	IncrBy(ctx context.Context, key string, delta int64) (int64, error)
	Append(ctx context.Context, key string, suffix []byte) (int64, error)
	GetSet(ctx context.Context, key string, value []byte) ([]byte, bool, error)
	SetNX(ctx context.Context, key string, value []byte) (bool, error)
	SetXX(ctx context.Context, key string, value []byte) (bool, error)
	SetWith(ctx context.Context, key string, value []byte, o client.SetOptions) (client.SetResult, error)
	// Command runs a command of package rediscmd on key at its storage
	// shim (args: the name, then the arguments after the key) and returns
	// Redis' reply in RESP2.
	Command(ctx context.Context, key string, args [][]byte) ([]byte, error)
	// ConfigSet sets Redis parameters, name then value, on every shard.
	ConfigSet(ctx context.Context, pairs ...string) error
	// Run runs a whole command at the Redis of its keys' shard, after the
	// keys it may write (writes) left the caches (client/atomic.go), and
	// returns Redis' reply in RESP2.
	Run(ctx context.Context, writes, reads []string, cmd [][]byte) ([]byte, error)
	// RunOnEveryShard runs a whole command at every shard's Redis.
	RunOnEveryShard(ctx context.Context, cmd [][]byte) ([][]byte, error)
	// RunBlocking runs a blocking command that changes no cached copy at
	// the Redis of its keys' shard, until it answers or ctx ends.
	// blocked is told of the wait, for CLIENT UNBLOCK.
	RunBlocking(ctx context.Context, keys []string, cmd [][]byte, blocked func(*client.Blocked)) ([]byte, error)
	// Session is a new connection's state at the shards: its WATCH, and
	// its transactions.
	Session() *client.Session
	// The whole keyspace, over every shard's Redis, the cluster's own
	// keys (client.OwnPrefix) hidden: DBSIZE, KEYS, SCAN (a cursor of
	// client.Client.Scan's), RANDOMKEY, and FLUSHALL coherent with the
	// caches (keyspace.go).
	DBSize(ctx context.Context) (int64, error)
	Keys(ctx context.Context, pattern string) ([]string, error)
	Scan(ctx context.Context, cursor uint64, o client.ScanOptions) (uint64, []string, error)
	RandomKey(ctx context.Context) (string, bool, error)
	FlushAll(ctx context.Context, async bool) error
	// ConfigGet reads Redis parameters on every shard: each shard's
	// values by name, in shard order.
	ConfigGet(ctx context.Context, params ...string) ([]map[string]string, error)
	// Placement is the partition map the store routes by (INFO).
	Placement() *partmap.Placement
	// Stats are the store's counters (INFO).
	Stats() client.Stats
}

// Defaults applied to zero fields of Config.
const (
	DefaultOpTimeout       = 5 * time.Second
	DefaultCommandTimeout  = 10 * time.Second
	DefaultMaxCommandBytes = wire.MaxValueLen + 64<<10
	DefaultMaxConnections  = 10000
	// DefaultMaxInFlight bounds the commands running in the cluster at
	// once, over every connection.
	DefaultMaxInFlight = 128
)

// Config configures a Server.
type Config struct {
	// Store is the cluster (required).
	Store Store
	// OpTimeout bounds one command's work in the cluster (default 5s).
	OpTimeout time.Duration
	// CommandTimeout bounds how long a command may take to arrive once
	// its first byte has (default 10s): a slow client cannot hold a
	// connection's buffer open.
	CommandTimeout time.Duration
	// IdleTimeout closes a connection that sends nothing for that long
	// (default 0: never, as Redis' timeout 0).
	IdleTimeout time.Duration
	// MaxCommandBytes bounds the bytes of a command the gateway holds
	// (default: the largest value plus 64 KiB): a command whose bulk
	// strings make it larger is discarded as it arrives and answered
	// with an error, and one whose array count cannot fit is refused as
	// soon as the count arrives (guard.go).
	MaxCommandBytes int
	// MaxConnections bounds the open connections (default 10000); one
	// more is refused with Redis' "max number of clients reached".
	MaxConnections int
	// MaxInFlight bounds the commands running in the cluster at once,
	// over every connection (default DefaultMaxInFlight); the others wait
	// in the gateway, in arrival order (admission.go). Without
	// it, fifty clients pipelining sixteen commands each put 800 requests
	// into the cluster's sockets at once: a queue longer than the
	// transport's first retransmission (50 ms) gets every request sent
	// again, and the work doubles just when there is the most of it.
	MaxInFlight int
	// Users, when set, are the users a connection must authenticate as
	// (AUTH, HELLO ... AUTH) before any other command; nil: every client
	// is the default user, as Redis' nopass default.
	Users *Users
	// TLS, when set, serves every connection over TLS (TLSFromFiles).
	TLS *tls.Config
	// Loops is the number of event loops that serve plaintext TCP
	// connections on Linux (default: half of GOMAXPROCS, at least one;
	// loop_linux.go).
	// Negative, TLS, or another listener or system: a goroutine per
	// connection instead.
	Loops int
	// Cluster, when set, makes the gateway answer cluster-mode clients
	// as a node of a Redis Cluster whose nodes are the cluster's gateways
	// (CLUSTER SLOTS, SHARDS, NODES...; cluster.go). Nil: the cluster
	// commands get the errors of a Redis without cluster support.
	Cluster *ClusterFace
	// Registerer receives the metrics; nil means a private registry.
	Registerer prometheus.Registerer
	// Logger receives structured logs (default: discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.OpTimeout <= 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = DefaultCommandTimeout
	}
	if c.MaxCommandBytes <= 0 {
		c.MaxCommandBytes = DefaultMaxCommandBytes
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Server serves the Redis protocol on a listener.
type Server struct {
	cfg     Config
	metrics *metrics
	stats   counters
	started time.Time
	nextID  atomic.Int64
	// open counts the open connections (accepted and not yet closed).
	open atomic.Int64
	// admit bounds the commands running in the cluster
	// (Config.MaxInFlight).
	admit *admission
	// work runs pipelined commands (workers.go).
	work *workers
	// scripts are the scripts loaded on every shard (scripts.go).
	scripts loadedScripts
	// statsBase is Stats at the last CONFIG RESETSTAT, which INFO stats
	// counts from (nil: none).
	statsBase atomic.Pointer[Stats]
	// errorStats counts error replies by code (INFO errorstats).
	errorStats errorStats
	// blocked counts the connections waiting in a blocking command.
	blocked atomic.Int64
	// waiting are the sessions in a blocking command by id, for CLIENT
	// UNBLOCK.
	waiting sync.Map
	// face answers the cluster commands (Config.Cluster; nil: none).
	face *clusterFace
	// ctx ends every command in flight when the server closes.
	ctx    context.Context
	cancel context.CancelFunc
	// mu guards addr, stopLoops, ln and conns.
	mu   sync.Mutex
	addr net.Addr
	// stopLoops stops the event loops serving, when they do.
	stopLoops func()
	// ln and conns are the listener and the connections of the goroutine
	// server (serve_conns.go), when it serves.
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// New returns a server for cfg; Serve starts it.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.Store == nil {
		return nil, errors.New("cannot start the gateway: no store")
	}
	admit := newAdmission(cfg.MaxInFlight)
	m, err := newMetrics(cfg.Registerer, func() float64 { return float64(admit.running.Load()) })
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, metrics: m, started: time.Now(), admit: admit}
	if cfg.Cluster != nil {
		if s.face, err = newClusterFace(*cfg.Cluster, cfg.Logger); err != nil {
			return nil, err
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.work = startWorkers(s.ctx, cfg.MaxInFlight)
	return s, nil
}

// Serve serves connections from ln until Close; it returns nil after
// Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.addr = ln.Addr()
	s.mu.Unlock()
	if s.face != nil {
		port := uint16(0)
		if a, ok := ln.Addr().(*net.TCPAddr); ok {
			port = uint16(a.Port)
		}
		s.face.start(s.ctx, port)
	}
	if served, err := s.serveLoops(ln); served {
		return err
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	return s.serveConns(ln)
}

// Addr is the address Serve listens on (nil before Serve).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Close stops listening, closes every connection and ends the commands in
// flight.
func (s *Server) Close() error {
	s.mu.Lock()
	s.cancel()
	stop := s.stopLoops
	s.mu.Unlock()
	if s.face != nil {
		s.face.wait()
	}
	if stop != nil {
		stop()
		return nil
	}
	s.closeConns()
	return nil
}
