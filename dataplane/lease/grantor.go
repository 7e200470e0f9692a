package lease

import (
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Grantor is a shim's leases: for each node, by its data-plane address
// (a lookup allocates nothing), the latest end of a lease
// it may have granted and the node's epoch. Times are the shim's
// monotonic clock, as a Duration since a start of the caller's choosing.
type Grantor struct {
	length time.Duration
	margin time.Duration
	// start is when the shim began: a node may hold a lease granted by an
	// earlier run of the shim until start + length + margin.
	start time.Duration
	// incarnation tells this run's epochs from an earlier run's.
	incarnation uint32

	mu    sync.Mutex // guards nodes
	nodes map[netip.AddrPort]*granted
}

// granted is what the shim granted one node.
type granted struct {
	until time.Duration // the latest end it may have granted (shim clock)
	epoch uint64
	// renewed: the node asked this run of the shim for a lease, so it
	// serves the shim's keys only under one (the upgrade's handshake).
	renewed bool
}

// NewGrantor returns the leases of a shim that starts at start and grants
// leases of length, with margin added for the clocks' rates (at least
// the most a node's clock may fall behind the shim's over a lease).
// incarnation must differ from every earlier run's (a random number).
func NewGrantor(start, length, margin time.Duration, incarnation uint32) (*Grantor, error) {
	if length <= 0 || margin < 0 {
		return nil, fmt.Errorf("cannot grant leases: length %v, margin %v", length, margin)
	}
	return &Grantor{length: length, margin: margin, start: start, incarnation: incarnation,
		nodes: map[netip.AddrPort]*granted{}}, nil
}

// node returns node's record, created as if a lease had been granted at
// the shim's start. Callers hold g.mu.
func (g *Grantor) node(node netip.AddrPort) *granted {
	n := g.nodes[node]
	if n == nil {
		n = &granted{until: g.start + g.length + g.margin, epoch: uint64(g.incarnation)<<32 | 1}
		g.nodes[node] = n
	}
	return n
}

// Grant records a grant to node sent at now and returns the epoch it
// carries.
func (g *Grantor) Grant(node netip.AddrPort, now time.Duration) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.node(node)
	n.until = max(n.until, now+g.length+g.margin)
	n.renewed = true
	return n.epoch
}

// Renewed reports whether node asked this run of the shim for a lease,
// and then when every lease the shim may have granted it ends and its
// epoch. Only such a node may be released by lease, and only it is sent
// epochs: a node that never renewed serves under the map's fencing.
func (g *Grantor) Renewed(node netip.AddrPort) (until time.Duration, epoch uint64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.nodes[node]
	if n == nil || !n.renewed {
		return 0, 0, false
	}
	return n.until, n.epoch, true
}

// Epoch is node's epoch, which UPDATEs and FILLs sent to it carry.
func (g *Grantor) Epoch(node netip.AddrPort) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.node(node).epoch
}

// Release lets a write proceed without node's acknowledgement once every
// lease the shim may have granted it has ended: then it moves the node to
// a new epoch and reports true. Otherwise it reports how long to wait.
func (g *Grantor) Release(node netip.AddrPort, now time.Duration) (bool, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.node(node)
	if now < n.until {
		return false, n.until - now
	}
	n.epoch++
	return true, 0
}
