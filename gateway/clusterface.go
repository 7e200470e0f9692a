package gateway

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPeerRefresh is how often a cluster face asks its PeerSource
// again.
const DefaultPeerRefresh = 5 * time.Second

// peerLookupTimeout bounds one lookup of the peers, unless Refresh is
// longer.
const peerLookupTimeout = 2 * time.Second

// ClusterFace makes the gateway answer as a node of a Redis Cluster
// (Config.Cluster): CLUSTER SLOTS, SHARDS and NODES name the cluster's
// gateways, sorted by address, with the 16384 slots spread evenly over
// them, so that cluster-mode clients spread their connections. Every
// gateway still serves every key: a client is never redirected.
type ClusterFace struct {
	// Announce is the address clients reach this gateway at: the address
	// the cluster commands name it by, from which its node id comes. Port
	// 0 stands for the port Serve listens on.
	Announce netip.AddrPort
	// Peers lists the cluster's gateways; nil: this one alone.
	Peers PeerSource
	// Refresh is how often Peers is asked again (default
	// DefaultPeerRefresh).
	Refresh time.Duration
}

// PeerSource lists the gateways of a cluster.
type PeerSource interface {
	// Peers returns the Redis addresses of the cluster's gateways, this
	// one (self, its announced address) included or not.
	Peers(ctx context.Context, self netip.AddrPort) ([]netip.AddrPort, error)
}

// FixedPeers is a list of gateways that does not change.
type FixedPeers []netip.AddrPort

// Peers returns the list.
func (f FixedPeers) Peers(context.Context, netip.AddrPort) ([]netip.AddrPort, error) {
	return f, nil
}

// DNSPeers are the gateways whose addresses a DNS name has, as a
// headless Service's A records list its ready pods, each at the port this
// gateway announces. A name that does not exist lists none.
type DNSPeers struct {
	Name string
	// Resolver resolves Name (nil: net.DefaultResolver).
	Resolver *net.Resolver
}

// Peers resolves the name.
func (d DNSPeers) Peers(ctx context.Context, self netip.AddrPort) ([]netip.AddrPort, error) {
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", d.Name)
	if dnsErr := (*net.DNSError)(nil); errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot resolve the gateways' name %s: %w", d.Name, err)
	}
	out := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		out[i] = netip.AddrPortFrom(ip.Unmap(), self.Port())
	}
	return out, nil
}

// clusterFace is a running ClusterFace: the cluster it shows, replaced
// whole when the peers change, so that a command only loads a pointer.
type clusterFace struct {
	cfg  ClusterFace
	log  *slog.Logger
	self netip.AddrPort
	view atomic.Pointer[clusterView]
	// mu guards done, closed when the refresh loop ends (nil before
	// start).
	mu   sync.Mutex
	done chan struct{}
}

func newClusterFace(cfg ClusterFace, log *slog.Logger) (*clusterFace, error) {
	if ip := cfg.Announce.Addr(); !ip.IsValid() || ip.IsUnspecified() {
		return nil, fmt.Errorf("cannot answer as a Redis Cluster: announced address %s is no IP clients can reach", cfg.Announce)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultPeerRefresh
	}
	cfg.Announce = netip.AddrPortFrom(cfg.Announce.Addr().Unmap(), cfg.Announce.Port())
	return &clusterFace{cfg: cfg, log: log}, nil
}

// start finds the peers once, then again every Refresh until ctx ends;
// port is the port the gateway listens on.
func (f *clusterFace) start(ctx context.Context, port uint16) {
	f.self = f.cfg.Announce
	if f.self.Port() == 0 {
		f.self = netip.AddrPortFrom(f.self.Addr(), port)
	}
	done := make(chan struct{})
	f.mu.Lock()
	f.done = done
	f.mu.Unlock()
	f.refresh(ctx)
	if f.cfg.Peers == nil {
		close(done)
		return
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(f.cfg.Refresh)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				f.refresh(ctx)
			}
		}
	}()
}

// wait waits for the refresh loop to end (after its context did).
func (f *clusterFace) wait() {
	f.mu.Lock()
	done := f.done
	f.mu.Unlock()
	if done != nil {
		<-done
	}
}

// refresh asks the peers and shows them, with this gateway. A peer source
// that fails keeps the gateways shown before.
func (f *clusterFace) refresh(ctx context.Context) {
	addrs := []netip.AddrPort{f.self}
	if f.cfg.Peers != nil {
		ctx, cancel := context.WithTimeout(ctx, max(f.cfg.Refresh, peerLookupTimeout))
		peers, err := f.cfg.Peers.Peers(ctx, f.self)
		cancel()
		if err != nil && f.view.Load() != nil {
			f.log.Warn("cannot list the peer gateways; keeping the last list", "err", err)
			return
		}
		if err != nil {
			f.log.Warn("cannot list the peer gateways; answering alone", "err", err)
		}
		addrs = append(addrs, peers...)
	}
	v := newClusterView(addrs, f.self)
	if old := f.view.Load(); old != nil && slices.EqualFunc(old.nodes, v.nodes, func(a, b clusterNode) bool { return a.addr == b.addr }) {
		return
	}
	f.view.Store(v)
	f.log.Info("cluster face", "gateways", len(v.nodes), "self", f.self.String())
}

// clusterView is the cluster as the gateway shows it.
type clusterView struct {
	nodes []clusterNode // sorted by address
	self  int           // this gateway's index in nodes
}

// clusterNode is one gateway: its address, node id and slots.
type clusterNode struct {
	addr        netip.AddrPort
	id          string
	first, last int // slots first to last; first > last: none
}

// newClusterView spreads the slots over the gateways addrs, self among
// them, sorted by address: every gateway that sees the same list shows
// the same cluster.
func newClusterView(addrs []netip.AddrPort, self netip.AddrPort) *clusterView {
	addrs = slices.Clone(addrs)
	slices.SortFunc(addrs, func(a, b netip.AddrPort) int { return a.Compare(b) })
	addrs = slices.Compact(addrs)
	v := &clusterView{nodes: make([]clusterNode, len(addrs))}
	n := len(addrs)
	for i, a := range addrs {
		v.nodes[i] = clusterNode{addr: a, id: NodeID(a), first: i * ClusterSlots / n, last: (i+1)*ClusterSlots/n - 1}
		if a == self {
			v.self = i
		}
	}
	return v
}

// node returns the gateway with id, if there is one.
func (v *clusterView) node(id []byte) (clusterNode, bool) {
	i := slices.IndexFunc(v.nodes, func(n clusterNode) bool { return n.id == string(id) })
	if i < 0 {
		return clusterNode{}, false
	}
	return v.nodes[i], true
}

// withSlots returns the gateways that own slots.
func (v *clusterView) withSlots() []clusterNode {
	return slices.DeleteFunc(slices.Clone(v.nodes), func(n clusterNode) bool { return n.first > n.last })
}

// NodeID is the node id of the gateway announced at addr: 40 hex digits,
// as Redis' node ids, the SHA-1 of the address.
func NodeID(addr netip.AddrPort) string {
	sum := sha1.Sum([]byte(addr.String()))
	return hex.EncodeToString(sum[:])
}
