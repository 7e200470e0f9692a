// Package peers resolves the data-plane addresses a partition map names —
// every cache member's and every storage shard's — once per map version,
// into the form the transport reports a datagram's source in (IPv4
// unmapped), so that replies match the address a request was sent to and a
// shim can recognise an owner by its source address. The cache node, the
// shim and the client all route through one Table per map.
package peers

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/distcache/distcache/placement/partmap"
)

// Table holds a map's resolved addresses; an entry is the zero AddrPort
// when the map gives no usable address. It is immutable.
type Table struct {
	members [][]netip.AddrPort // [layer][member]
	shards  [][]netip.AddrPort // [rack][shard]
}

// Resolve resolves every address of m. Members and shards without an
// address are left unknown; unusable addresses are logged and left unknown.
func Resolve(m *partmap.Map, log *slog.Logger) *Table {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	resolve := func(kind, name, addr string) netip.AddrPort {
		if addr == "" {
			return netip.AddrPort{}
		}
		a, err := ResolveAddr(addr)
		if err != nil {
			log.Warn("skipping an unusable address in the partition map", "kind", kind, "name", name, "addr", addr, "err", err)
		}
		return a
	}
	t := &Table{members: make([][]netip.AddrPort, len(m.Layers)), shards: make([][]netip.AddrPort, len(m.Storage.Racks))}
	for l, layer := range m.Layers {
		t.members[l] = make([]netip.AddrPort, len(layer.Members))
		for i, mb := range layer.Members {
			t.members[l][i] = resolve("member", mb.Name, mb.Address)
		}
	}
	for r, rack := range m.Storage.Racks {
		t.shards[r] = make([]netip.AddrPort, len(rack.Shards))
		for s, sh := range rack.Shards {
			t.shards[r][s] = resolve("shard", sh.Name, sh.Address)
		}
	}
	return t
}

// Member is the address of member i of layer l.
func (t *Table) Member(l, i int) netip.AddrPort { return t.members[l][i] }

// Shard is the address of shard s of rack r's storage shim.
func (t *Table) Shard(r, s int) netip.AddrPort { return t.shards[r][s] }

// ResolveAddr parses "ip:port", or resolves "host:port", into the form the
// transport reports sources in (IPv4 unmapped). It fails without a port.
func ResolveAddr(s string) (netip.AddrPort, error) {
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		ua, rerr := net.ResolveUDPAddr("udp", s)
		if rerr != nil {
			return netip.AddrPort{}, fmt.Errorf("cannot resolve %q: %w", s, rerr)
		}
		a = ua.AddrPort()
	}
	if !a.IsValid() || a.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("cannot use address %q: no port", s)
	}
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()), nil
}
