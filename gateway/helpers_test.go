package gateway_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/gateway"
	"github.com/distcache/distcache/internal/testing/clustertest"
)

// gatewayOption edits a test gateway's configuration.
type gatewayOption func(*gateway.Config)

func withMaxConnections(n int) gatewayOption {
	return func(c *gateway.Config) { c.MaxConnections = n }
}

func withMaxCommandBytes(n int) gatewayOption {
	return func(c *gateway.Config) { c.MaxCommandBytes = n }
}

// startGateway starts a real cluster (redis-servers, shims, cache nodes on
// loopback) and a gateway in front of it, and returns the gateway's
// address; everything stops when the test ends.
func startGateway(t testing.TB, opts ...gatewayOption) (string, *gateway.Server) {
	t.Helper()
	addr, s, _ := startGatewayOn(t, smallCluster, opts...)
	return addr, s
}

// smallCluster is the shape of startGateway's cluster.
var smallCluster = clustertest.Config{Name: "gw", Racks: 2, ShardsPerRack: 1, Spine: 2}

// startGatewayOn is startGateway on a cluster shaped by cc, which it also
// returns.
func startGatewayOn(t testing.TB, cc clustertest.Config, opts ...gatewayOption) (string, *gateway.Server, *clustertest.Cluster) {
	t.Helper()
	c := clustertest.Start(t, cc)
	s, addr := serveGateway(t, gatewayConfig(c, opts...))
	return addr, s, c
}

// gatewayConfig is the configuration, edited by opts, of a gateway in
// front of c through a client of its own.
func gatewayConfig(c *clustertest.Cluster, opts ...gatewayOption) gateway.Config {
	var cfg gateway.Config
	for _, o := range opts {
		o(&cfg)
	}
	var clientCfg client.Config
	// As `distcache gateway` does: the loops receive the client's replies.
	clientCfg.Transport.Polled = gateway.EventLoops(cfg)
	cfg.Store = c.NewClient(clientCfg)
	return cfg
}

// serveGateway serves a gateway of cfg on loopback until the test ends.
func serveGateway(t testing.TB, cfg gateway.Config) (*gateway.Server, string) {
	t.Helper()
	return serveGatewayOn(t, cfg, listenLoopback(t))
}

// listenLoopback listens on a free TCP port of 127.0.0.1.
func listenLoopback(t testing.TB) net.Listener {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serveGatewayOn serves a gateway of cfg on ln until the test ends.
func serveGatewayOn(t testing.TB, cfg gateway.Config, ln net.Listener) (*gateway.Server, string) {
	t.Helper()
	s, err := gateway.New(cfg)
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, ln.Addr().String()
}

// redisClient is a go-redis client of addr speaking protocol proto.
func redisClient(t testing.TB, addr string, proto int) *redis.Client {
	t.Helper()
	// The gateway answers every command within its own timeouts; the
	// client's read deadline only bounds a hang (go-redis's 3 s default
	// cut a 1000-key MGET short on a loaded machine).
	rc := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

func withCommandTimeout(d time.Duration) gatewayOption {
	return func(c *gateway.Config) { c.CommandTimeout = d }
}

func withUsers(dir string) gatewayOption {
	return func(c *gateway.Config) { c.Users = &gateway.Users{Dir: dir} }
}

func withTLS(cfg *tls.Config) gatewayOption {
	return func(c *gateway.Config) { c.TLS = cfg }
}

func withLoops(n int) gatewayOption {
	return func(c *gateway.Config) { c.Loops = n }
}
