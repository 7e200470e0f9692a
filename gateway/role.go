package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/placement/partmap"
)

// Gateway is a Server in front of its own client, run as a data-plane
// role: it follows the partition map (SetMap), serves the Redis protocol on
// its address once started, and closes its client with it.
type Gateway struct {
	*Server
	client *client.Client
	addr   string
	ln     net.Listener
	done   chan error
}

// NewGateway returns a gateway that will listen on addr (TCP) and reach
// the cluster through cl; cfg.Store is set to cl.
func NewGateway(addr string, cl *client.Client, cfg Config) (*Gateway, error) {
	cfg.Store = cl
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Gateway{Server: s, client: cl, addr: addr}, nil
}

// SetMap installs a new partition map in the gateway's client.
func (g *Gateway) SetMap(p *partmap.Placement) error {
	g.client.SetMap(p)
	return nil
}

// Start listens and serves in the background.
func (g *Gateway) Start() error {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", g.addr)
	if err != nil {
		return fmt.Errorf("cannot listen for Redis clients on %s: %w", g.addr, err)
	}
	g.ln, g.done = ln, make(chan error, 1)
	go func() { g.done <- g.Serve(ln) }()
	return nil
}

// Close stops serving and closes the client.
func (g *Gateway) Close() error {
	var errs []error
	if g.ln != nil {
		errs = append(errs, g.Server.Close(), <-g.done)
	}
	errs = append(errs, g.client.Close())
	return errors.Join(errs...)
}
