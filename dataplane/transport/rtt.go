package transport

import (
	"net/netip"
	"sync"
	"time"
)

// Retransmission timeouts that follow each peer's round-trip time (RFC
// 6298, as TCP's). A fixed first retransmission after Retransmit assumes a
// peer answers within it. A peer that is busy — a server at its CPU limit,
// which the kernel runs for a few milliseconds of every CFS period and
// holds for the rest — answers later than that, and every request sent to
// it again costs it (and its other clients) a second time, so a fixed
// timer turns overload into more load. Each endpoint therefore keeps, per
// peer, a smoothed round-trip time and its variation from the replies to
// requests it did not send again (Karn's rule), and a call's first
// retransmission waits srtt + 4·rttvar, never less than Retransmit nor
// more than MaxRetransmit. A peer that answers in microseconds keeps the
// fixed Retransmit; one that slows down gets requests sent again only
// once its replies are later than they have been.

// rttGain and varGain are RFC 6298's α = 1/8 and β = 1/4, as shifts.
const (
	rttShift = 3
	varShift = 2
)

// maxPeers bounds the peers an endpoint keeps estimates for; past it the
// table starts over (a cluster's endpoints call far fewer peers).
const maxPeers = 4096

// peerRTT is one peer's estimate.
type peerRTT struct {
	srtt, rttvar time.Duration
}

// rtts are an endpoint's estimates by peer.
type rtts struct {
	mu    sync.Mutex // guards peers
	peers map[netip.AddrPort]peerRTT
}

// sample records a round trip r to dst.
func (t *rtts) sample(dst netip.AddrPort, r time.Duration) {
	if r < 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.peers == nil || len(t.peers) >= maxPeers {
		t.peers = make(map[netip.AddrPort]peerRTT)
	}
	p, ok := t.peers[dst]
	if !ok {
		t.peers[dst] = peerRTT{srtt: r, rttvar: r / 2}
		return
	}
	d := p.srtt - r
	if d < 0 {
		d = -d
	}
	p.rttvar += (d - p.rttvar) >> varShift
	p.srtt += (r - p.srtt) >> rttShift
	t.peers[dst] = p
}

// get returns dst's estimate; ok is false before its first sample.
func (t *rtts) get(dst netip.AddrPort) (srtt, rttvar time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.peers[dst]
	return p.srtt, p.rttvar, ok
}

// RTT returns the smoothed round-trip time to dst and its variation, from
// the replies to requests not sent again; ok is false before the first.
func (e *Endpoint) RTT(dst netip.AddrPort) (srtt, rttvar time.Duration, ok bool) {
	return e.rtt.get(unmapped(dst))
}

// firstRetransmit is how long a call to dst waits before it sends its
// request again: srtt + 4·rttvar, within [Retransmit, MaxRetransmit].
func (e *Endpoint) firstRetransmit(dst netip.AddrPort) time.Duration {
	srtt, rttvar, ok := e.rtt.get(unmapped(dst))
	if !ok {
		return e.cfg.Retransmit
	}
	return min(max(srtt+4*rttvar, e.cfg.Retransmit), max(e.cfg.MaxRetransmit, e.cfg.Retransmit))
}
