//go:build linux

package transport

import (
	"errors"

	"github.com/distcache/distcache/dataplane/wire"
)

// Poller receives an endpoint's datagrams on its owner's goroutine, for an
// owner that runs an event loop (Config.Polled): the loop waits for the
// socket (FD) in its own epoll and calls Poll when it is readable, so the
// replies it waits for are dispatched, and the callbacks of CallManyFunc
// run, on the loop's thread, with no goroutine woken in between. Several
// pollers may poll one endpoint; one poller is used by one goroutine.
type Poller struct {
	r  *mmsgReader
	rx *receiver
	fd uintptr
}

// ErrNotPolled is returned by NewPoller for an endpoint that is not
// Config.Polled, or does not batch (Config.Batch 1).
var ErrNotPolled = errors.New("the endpoint is not polled")

// NewPoller returns a poller of e, whose handler (Start) serves the
// requests it receives.
func (e *Endpoint) NewPoller() (*Poller, error) {
	if !e.cfg.Polled || e.cfg.Batch == 1 {
		return nil, ErrNotPolled
	}
	r := newMmsgReader(e)
	p := &Poller{r: r, rx: &receiver{e: e, h: e.handler, out: r, msg: new(wire.Message)}}
	if err := e.sys.raw.Control(func(fd uintptr) { p.fd = fd }); err != nil {
		return nil, err
	}
	return p, nil
}

// FD is the socket to wait for (EPOLLIN); it stays open until the
// endpoint closes.
func (p *Poller) FD() int { return int(p.fd) }

// Poll serves the datagrams that have arrived, one receive batch, and
// returns how many it took: 0 when none had (or the endpoint closed). A
// loop that waits edge-triggered polls until it gets 0.
func (p *Poller) Poll() int {
	r := p.r
	r.reset()
	if p.rx.e.closed.Load() || !r.doRecv(p.fd) || r.recvErr != nil {
		return 0
	}
	p.rx.batch(r.received)
	return r.received
}
