// Package switchtest runs a switch-backed cache member inside a test
// process: a software switch (package softswitch) with its P4Runtime and
// gNMI services on loopback, and the controller that programs it over
// real gRPC (fabric/stratum and fabric/cacheswitch), as standalone mode
// and the operator run them.
package switchtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	"github.com/distcache/distcache/softswitch/gnmiserver"
	"github.com/distcache/distcache/softswitch/p4rtserver"
)

// Target is a running software switch and its P4Runtime and gNMI
// services, without a controller: the test's controller programs it.
type Target struct {
	// P4Runtime is the switch's P4Runtime (and gNMI) address.
	P4Runtime string

	mu        sync.Mutex // guards sw, srv, stopped
	sw        *softswitch.Switch
	srv       *server
	stopped   bool
	readPorts int
	deviceID  uint64
	opts      []grpc.ServerOption
}

// TargetOption shapes a target.
type TargetOption func(*Target) error

// WithTLS serves P4Runtime and gNMI over TLS with the certificate in
// certFile and keyFile, and asks clients for a certificate that clientCAs
// signed (mutual TLS, as a Stratum agent may).
func WithTLS(certFile, keyFile string, clientCAs *x509.CertPool) TargetOption {
	return func(tg *Target) error {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("cannot load the target's key pair: %w", err)
		}
		tg.opts = append(tg.opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair},
			ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})))
		return nil
	}
}

// Member is a running switch and its controllers: the first (Runner),
// primary once Start returns, and those StartController adds, backups
// until they take the switch over.
type Member struct {
	*Target
	Runner *cacheswitch.Runner
	cfg    Config

	first       *Controller // Runner's
	mu          sync.Mutex  // guards controllers
	controllers []*Controller
}

// StopRunner stops the member's first controller (Runner), as when its
// process dies: its session closes.
func (m *Member) StopRunner() { m.first.Stop() }

// Controller is a runner of a member's switch that the test can stop.
type Controller struct {
	Runner *cacheswitch.Runner
	cancel context.CancelFunc
	done   chan struct{}
}

// Stop ends the controller: its P4Runtime session closes, as when its
// process dies.
func (c *Controller) Stop() {
	c.cancel()
	<-c.done
}

// server is a switch's gRPC services.
type server struct {
	g    *grpc.Server
	p4rt *p4rtserver.Server
}

// Config shapes a member.
type Config struct {
	// ReadPorts is the storage shards the switch can front.
	ReadPorts int
	// Controller edits the controller's configuration (member and P4Info
	// are set already).
	Controller func(*cacheswitch.Config)
	// Interval is the controller's insertion interval.
	Interval time.Duration
	// Runner, when set, edits the runner configuration of every
	// controller of the switch (before StartController's own edit).
	Runner func(*cacheswitch.RunnerConfig)
}

var quiet = slog.New(slog.DiscardHandler)

// NewSwitch starts a software switch on loopback at a free base port
// (another one when a port is taken) with readPorts read ports; it stops
// when the test ends.
func NewSwitch(t testing.TB, readPorts int) *softswitch.Switch {
	t.Helper()
	sw, err := newSwitch(readPorts, softswitch.Program)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

// newSwitch starts a software switch running program at a random free
// base port.
func newSwitch(readPorts int, program string) (*softswitch.Switch, error) {
	var last error
	for range 50 {
		sw, err := softswitch.New(softswitch.Config{Addr: netip.MustParseAddr("127.0.0.1"),
			BasePort: uint16(20000 + rand.IntN(30000)), ReadPorts: readPorts, Program: program, Logger: quiet})
		if err == nil {
			return sw, nil
		}
		last = err
	}
	return nil, fmt.Errorf("cannot start a software switch: %w", last)
}

// Serve serves sw's P4Runtime and gNMI on one loopback port, as Stratum
// does, until the test ends, and returns the address.
func Serve(t testing.TB, sw *softswitch.Switch) string {
	t.Helper()
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(sw, lis, 1)
	t.Cleanup(srv.stop)
	return lis.Addr().String()
}

// Start runs the switch of member and its controller until the test ends,
// and waits until the switch is programmed. The controller is its
// fleet's leader, with election id 1.
func Start(t testing.TB, member string, cfg Config) *Member {
	t.Helper()
	m := &Member{Target: startTarget(t, cfg.ReadPorts, 1, softswitch.Program), cfg: cfg}
	c := m.StartController(t, member, 1, func(rc *cacheswitch.RunnerConfig) { rc.Leader = true })
	m.Runner, m.first = c.Runner, c
	select {
	case <-m.Runner.Programmed():
	case <-time.After(30 * time.Second):
		t.Fatalf("switch %s was not programmed", member)
	}
	return m
}

// StartController runs a controller of the member's switch with election
// id election (the low 64 bits; unique per controller) until the test
// ends or Stop, over a session of its own: a backup while another
// controller is primary. edit, when set, edits its runner's
// configuration.
func (m *Member) StartController(t testing.TB, member string, election uint64, edit func(*cacheswitch.RunnerConfig)) *Controller {
	t.Helper()
	build, err := pipeline.Builtin("distcache-v1model") // the software switch's program
	if err != nil {
		t.Fatal(err)
	}
	cc := cacheswitch.Config{Member: member, Info: build.Info, Logger: quiet}
	if m.cfg.Controller != nil {
		m.cfg.Controller(&cc)
	}
	rc := cacheswitch.RunnerConfig{
		Dial: func(ctx context.Context) (cacheswitch.Session, error) {
			return stratum.Open(ctx, stratum.Config{Address: m.P4Runtime, DeviceID: 1, ElectionID: election, Logger: quiet})
		},
		Controller: cc, Cookie: build.Cookie, Interval: m.cfg.Interval, Retry: 50 * time.Millisecond, Logger: quiet,
	}
	if m.cfg.Runner != nil {
		m.cfg.Runner(&rc)
	}
	if edit != nil {
		edit(&rc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Controller{Runner: cacheswitch.NewRunner(rc), cancel: cancel, done: make(chan struct{})}
	go func() { c.Runner.Run(ctx); close(c.done) }()
	t.Cleanup(c.Stop)
	m.mu.Lock()
	m.controllers = append(m.controllers, c)
	m.mu.Unlock()
	return c
}

// stop stops the services.
func (s *server) stop() {
	s.g.Stop()
	s.p4rt.Close()
}

func serve(sw *softswitch.Switch, lis net.Listener, deviceID uint64, opts ...grpc.ServerOption) *server {
	g := grpc.NewServer(opts...)
	p4rt := p4rtserver.New(sw, p4rtserver.Config{DeviceID: deviceID, Logger: quiet})
	p4rt.Register(g)
	gnmiserver.New(sw).Register(g)
	go func() { _ = g.Serve(lis) }()
	return &server{g: g, p4rt: p4rt}
}

// StartTarget starts a software switch on loopback with readPorts read
// ports and serves its P4Runtime (as device deviceID) and gNMI, until the
// test ends.
func StartTarget(t testing.TB, readPorts int, deviceID uint64, opts ...TargetOption) *Target {
	t.Helper()
	return startTarget(t, readPorts, deviceID, softswitch.Program, opts...)
}

// StartClientLeaf starts a software switch running the client leaf
// program (softswitch.ClientLeafProgram) on loopback with readPorts read
// ports and serves its P4Runtime (as device deviceID) and gNMI, until the
// test ends; the test's controller pushes the pipeline.
func StartClientLeaf(t testing.TB, readPorts int, deviceID uint64, opts ...TargetOption) *Target {
	t.Helper()
	return startTarget(t, readPorts, deviceID, softswitch.ClientLeafProgram, opts...)
}

func startTarget(t testing.TB, readPorts int, deviceID uint64, program string, opts ...TargetOption) *Target {
	t.Helper()
	tg := &Target{readPorts: readPorts, deviceID: deviceID}
	for _, o := range opts {
		if err := o(tg); err != nil {
			t.Fatal(err)
		}
	}
	sw, err := newSwitch(readPorts, program)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		sw.Close()
		t.Fatal(err)
	}
	tg.P4Runtime, tg.sw, tg.srv = lis.Addr().String(), sw, serve(sw, lis, deviceID, tg.opts...)
	t.Cleanup(tg.Stop)
	return tg
}

// Stop stops the switch and its services: it answers nothing, as a
// switch that lost power.
func (m *Target) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.stopped = true
	m.srv.stop()
	m.sw.Close()
}

// Switch is the running software switch.
func (m *Target) Switch() *softswitch.Switch {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sw
}

// Restart stops the switch and its services, if they run, and starts a
// new one on the same ports: empty, without a pipeline, as after a power
// cycle. A controller's session breaks, and it programs the new switch.
func (m *Target) Restart() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.srv.stop()
		m.sw.Close()
	}
	addr := m.sw.Addr()
	sw, err := softswitch.New(softswitch.Config{Addr: addr.Addr(), BasePort: addr.Port(), ReadPorts: m.readPorts, Program: m.sw.Program(), Logger: quiet})
	if err != nil {
		return fmt.Errorf("cannot restart switch at %s: %w", addr, err)
	}
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", m.P4Runtime)
	if err != nil {
		sw.Close()
		return fmt.Errorf("cannot restart the services of switch at %s: %w", addr, err)
	}
	m.sw, m.srv, m.stopped = sw, serve(sw, lis, m.deviceID, m.opts...), false
	return nil
}

// Addr is the switch's coherence address: its member address.
func (m *Target) Addr() netip.AddrPort { return m.Switch().Addr() }

// Renew hands p, read at readAt, to every running controller of the
// switch, as each replica of an operator renews from its own reads: the
// primary applies it and renews the switch's lease, backups pass. It
// returns the first error of a controller that is not a backup.
func (m *Member) Renew(p *partmap.Placement, readAt time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.mu.Lock()
	cs := slices.Clone(m.controllers)
	m.mu.Unlock()
	var first error
	for _, c := range cs {
		select {
		case <-c.done:
			continue
		default:
		}
		if err := c.Runner.Renew(ctx, p, readAt); err != nil && !errors.Is(err, cacheswitch.ErrBackup) && first == nil {
			first = err
		}
	}
	return first
}
