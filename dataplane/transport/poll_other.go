//go:build !linux

package transport

import (
	"errors"
	"net/netip"
)

// Poller receives an endpoint's datagrams on its owner's goroutine; only
// Linux has one (poll_linux.go).
type Poller struct{}

// ErrNotPolled is returned by NewPoller where there is no poller.
var ErrNotPolled = errors.New("the endpoint is not polled")

// NewPoller returns ErrNotPolled: pollers need Linux.
func (e *Endpoint) NewPoller() (*Poller, error) { return nil, ErrNotPolled }

// FD is -1.
func (p *Poller) FD() int { return -1 }

// Poll returns 0.
func (p *Poller) Poll() int { return 0 }

// listenPolled refuses: polled endpoints need Linux.
func listenPolled(Config) (polledSocket, sysConn, netip.AddrPort, error) {
	return nil, sysConn{}, netip.AddrPort{}, ErrNotPolled
}
