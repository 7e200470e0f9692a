package controlloop

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// PingProber checks members on their data plane: a PING datagram to the
// member's UDP address, answered in time. A member whose data plane is dead,
// paused or slower than the timeout (a gray failure, with /healthz still
// answering) is not Ready, and is fenced like a dead one, so that writes of
// its keys stop waiting for its acknowledgements (failover.Policy).
//
// A node that is merely busy answers late too (a PING waits behind the
// requests queued before it), and fencing it would only move its load and
// empty its cache, so a member is not Ready only once its PINGs have failed
// for Patience: longer than a burst of load lasts, far shorter than a gray
// failure. A member whose /healthz reports spare capacity is not busy, so
// its unanswered PINGs get the shorter gray failure patience (gray.go). A
// dead member fails its HTTP check at once, a paused one after the HTTP
// prober's patience.
type PingProber struct {
	ep       *transport.Endpoint
	addrs    map[string]netip.AddrPort // member name → data-plane address
	timeout  time.Duration
	patience *patience
	gray     grayFailure
}

// NewPingProber opens a UDP endpoint on bind (host:0) and probes the
// members of addrs (member name → data-plane address), each PING bounded
// by timeout; a member is not Ready once its PINGs have failed for
// patience (0: at the first failure).
func NewPingProber(bind string, addrs map[string]netip.AddrPort, timeout, patience time.Duration, log *slog.Logger) (*PingProber, error) {
	ep, err := transport.Listen(transport.Config{Addr: bind, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("cannot start the data-plane prober: %w", err)
	}
	ep.Start(nil) // replies go to calls
	return &PingProber{ep: ep, addrs: addrs, timeout: timeout, patience: newPatience(patience)}, nil
}

// pingKey is the key of a PING: every message names one.
var pingKey = []byte("distcache:ping")

// Ready implements Prober. A member it has no address for counts as
// Ready: it is left to the other probers (AllProbers).
func (p *PingProber) Ready(ctx context.Context, member string) bool {
	addr, ok := p.addrs[member]
	if !ok {
		return true
	}
	start := p.patience.now()
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	r, err := p.ep.Call(cctx, addr, &wire.Message{Header: wire.Header{Op: wire.OpPing}, Key: pingKey})
	switch {
	case err == nil && r.Status == wire.StatusOK:
		return p.patience.judge(member, start, answered)
	case ctx.Err() != nil:
		return false // cut short by the caller (AllProbers): no verdict
	}
	return p.patience.judgeWithin(member, start, unanswered, p.gray.patienceFor(member, p.patience.d))
}

// Close closes the prober's endpoint.
func (p *PingProber) Close() error { return p.ep.Close() }
