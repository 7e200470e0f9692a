// Package peers resolves the data-plane addresses a partition map names —
// every cache member's and every storage shard's — into the form the
// transport reports a datagram's source in (IPv4 unmapped), so that replies
// match the address a request was sent to and a shim can recognise an owner
// by its source address. The cache node, the shim and the client all route
// through one Table per map.
//
// A map names pods by DNS name in Kubernetes (IP literals in standalone
// mode). A pod recreated under the same name may come back with a new IP,
// and a process may start before its peers have DNS records, neither of
// which changes the map: Refresh resolves a table's names again, and every
// process calls it periodically (RefreshEvery), so peers follow DNS within
// a refresh interval. A table whose addresses are all IP literals has
// nothing to refresh.
package peers

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/internal/periodic"
	"github.com/distcache/distcache/placement/partmap"
)

// DefaultRefreshInterval is how often processes resolve their peers' names
// again.
const DefaultRefreshInterval = time.Second

// Table holds a map's resolved addresses; an entry is the zero AddrPort
// when the map gives no usable address or its name does not resolve (yet).
// Lookups are one atomic load; Refresh replaces the addresses whole.
type Table struct {
	cur      atomic.Pointer[addrs]
	names    addrText // the map's address text
	hasNames bool     // some address is a name, not an IP literal
	resolver *net.Resolver
	log      *slog.Logger
	prev     *Table // whose addresses Resolve reuses (WithPrevious); dropped after
	now      func() time.Time

	refreshMu sync.Mutex   // serialises Refresh
	lastMiss  atomic.Int64 // when RefreshMissing last resolved (UnixNano; 0: never)
}

// addrs are resolved addresses, [layer][member] and [rack][shard].
type addrs struct {
	members, shards [][]netip.AddrPort
}

// addrText is the map's addresses as written.
type addrText struct {
	members, shards [][]string
}

// ResolveTimeout bounds the lookups of the names a new map adds (Resolve);
// a name not resolved by then is left unknown until Refresh.
const ResolveTimeout = 2 * time.Second

// Option configures Resolve.
type Option func(*Table)

// WithResolver resolves names with r instead of net.DefaultResolver.
func WithResolver(r *net.Resolver) Option { return func(t *Table) { t.resolver = r } }

// WithClock makes RefreshMissing read the time from now instead of
// time.Now.
func WithClock(now func() time.Time) Option { return func(t *Table) { t.now = now } }

// WithPrevious takes the addresses prev resolved for names the new map
// still has, instead of looking them up again (nil: none).
func WithPrevious(prev *Table) Option { return func(t *Table) { t.prev = prev } }

// known are the names t resolved, with their current addresses.
func (t *Table) known() map[string]netip.AddrPort {
	out := map[string]netip.AddrPort{}
	a := t.cur.Load()
	for _, rows := range []struct {
		text  [][]string
		addrs [][]netip.AddrPort
	}{{t.names.members, a.members}, {t.names.shards, a.shards}} {
		for r, row := range rows.text {
			for i, s := range row {
				if addr := rows.addrs[r][i]; addr.IsValid() {
					out[s] = addr
				}
			}
		}
	}
	return out
}

// Resolve resolves every address of m. Members and shards without an
// address are left unknown; unusable addresses are logged and left unknown
// (a name that does not resolve is tried again by Refresh).
func Resolve(m *partmap.Map, log *slog.Logger, opts ...Option) *Table {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Table{resolver: net.DefaultResolver, log: log, now: time.Now}
	for _, o := range opts {
		o(t)
	}
	t.names.members = make([][]string, len(m.Layers))
	for l, layer := range m.Layers {
		t.names.members[l] = make([]string, len(layer.Members))
		for i, mb := range layer.Members {
			t.names.members[l][i] = mb.Address
		}
	}
	t.names.shards = make([][]string, len(m.Storage.Racks))
	for r, rack := range m.Storage.Racks {
		t.names.shards[r] = make([]string, len(rack.Shards))
		for s, sh := range rack.Shards {
			t.names.shards[r][s] = sh.Address
		}
	}
	t.hasNames = hasNames(t.names.members) || hasNames(t.names.shards)
	var known map[string]netip.AddrPort
	if t.prev != nil {
		known, t.prev = t.prev.known(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ResolveTimeout)
	defer cancel()
	a := &addrs{}
	a.members = t.resolveNew(ctx, "member", t.names.members, known)
	a.shards = t.resolveNew(ctx, "shard", t.names.shards, known)
	t.cur.Store(a)
	return t
}

// resolveNew resolves text, row by row, taking a name's address from known
// when it has one.
func (t *Table) resolveNew(ctx context.Context, kind string, text [][]string, known map[string]netip.AddrPort) [][]netip.AddrPort {
	out := make([][]netip.AddrPort, len(text))
	for r, row := range text {
		out[r] = make([]netip.AddrPort, len(row))
		for i, s := range row {
			if a, ok := known[s]; ok {
				out[r][i] = a
				continue
			}
			if s == "" {
				continue
			}
			a, err := resolve(ctx, t.resolver, s)
			if err != nil {
				t.log.Warn("cannot use an address of the partition map yet", "kind", kind, "addr", s, "err", err)
			}
			out[r][i] = a
		}
	}
	return out
}

// resolveAll resolves text again, row by row: a name that fails to
// resolve keeps its address in prev, and IP literals are not parsed again.
func (t *Table) resolveAll(ctx context.Context, text [][]string, prev [][]netip.AddrPort) [][]netip.AddrPort {
	out := make([][]netip.AddrPort, len(text))
	for r, row := range text {
		out[r] = make([]netip.AddrPort, len(row))
		for i, s := range row {
			switch {
			case s == "":
			case isLiteral(s):
				out[r][i] = prev[r][i]
			default:
				a, err := resolve(ctx, t.resolver, s)
				if err != nil {
					a = prev[r][i] // a lookup that fails keeps what worked
				}
				out[r][i] = a
			}
		}
	}
	return out
}

// Refresh resolves the table's names again and installs what changed. It
// returns how many addresses changed; a name that does not resolve keeps
// its previous address.
func (t *Table) Refresh(ctx context.Context) int {
	if !t.hasNames {
		return 0
	}
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	old := t.cur.Load()
	next := &addrs{
		members: t.resolveAll(ctx, t.names.members, old.members),
		shards:  t.resolveAll(ctx, t.names.shards, old.shards),
	}
	changed := diff(old.members, next.members, t.names.members, "member", t.log) +
		diff(old.shards, next.shards, t.names.shards, "shard", t.log)
	if changed > 0 {
		t.cur.Store(next)
	}
	return changed
}

// MissRefreshEvery bounds how often RefreshMissing resolves names again.
const MissRefreshEvery = 100 * time.Millisecond

// RefreshMissing is Refresh for a caller that found no address for a
// peer — one whose DNS record appeared after the last periodic Refresh, as
// right after an install — and waits to reach it: it resolves the names
// again at most every MissRefreshEvery for all callers together, and
// reports whether an address changed.
func (t *Table) RefreshMissing(ctx context.Context) bool {
	now, last := t.now().UnixNano(), t.lastMiss.Load()
	if (last != 0 && now-last < int64(MissRefreshEvery)) || !t.lastMiss.CompareAndSwap(last, now) {
		return false
	}
	return t.Refresh(ctx) > 0
}

// diff counts and logs the addresses that differ between a and b.
func diff(a, b [][]netip.AddrPort, text [][]string, kind string, log *slog.Logger) int {
	n := 0
	for r := range a {
		for i := range a[r] {
			if a[r][i] != b[r][i] {
				n++
				log.Info("peer address changed", "kind", kind, "name", text[r][i], "from", a[r][i], "to", b[r][i])
			}
		}
	}
	return n
}

// Member is the address of member i of layer l.
func (t *Table) Member(l, i int) netip.AddrPort { return t.cur.Load().members[l][i] }

// Shard is the address of shard s of rack r's storage shim.
func (t *Table) Shard(r, s int) netip.AddrPort { return t.cur.Load().shards[r][s] }

// ResolveAddr parses "ip:port", or resolves "host:port" with the system's
// resolver, into the form the transport reports sources in (IPv4
// unmapped). It fails without a port.
func ResolveAddr(s string) (netip.AddrPort, error) {
	return resolve(context.Background(), net.DefaultResolver, s)
}

// hasNames reports whether some address of text is a name.
func hasNames(text [][]string) bool {
	for _, row := range text {
		for _, s := range row {
			if s != "" && !isLiteral(s) {
				return true
			}
		}
	}
	return false
}

// isLiteral reports whether s is "ip:port".
func isLiteral(s string) bool {
	_, err := netip.ParseAddrPort(s)
	return err == nil
}

func resolve(ctx context.Context, r *net.Resolver, s string) (netip.AddrPort, error) {
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		host, port, serr := net.SplitHostPort(s)
		if serr != nil {
			return netip.AddrPort{}, fmt.Errorf("cannot resolve %q: %w", s, serr)
		}
		p, perr := strconv.ParseUint(port, 10, 16)
		if perr != nil {
			return netip.AddrPort{}, fmt.Errorf("cannot resolve %q: bad port: %w", s, perr)
		}
		ips, lerr := r.LookupNetIP(ctx, "ip", host)
		if lerr != nil || len(ips) == 0 {
			return netip.AddrPort{}, fmt.Errorf("cannot resolve %q: %w", s, lerr)
		}
		a = netip.AddrPortFrom(preferV4(ips), uint16(p))
	}
	if !a.IsValid() || a.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("cannot use address %q: no port", s)
	}
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()), nil
}

// preferV4 picks the first IPv4 address, else the first, as
// net.ResolveUDPAddr does for "udp".
func preferV4(ips []netip.Addr) netip.Addr {
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			return ip
		}
	}
	return ips[0]
}

// RefreshEvery calls refresh (a RefreshPeers method: its count of changed
// addresses is logged by Refresh already) every interval
// (DefaultRefreshInterval if not positive) until ctx ends.
func RefreshEvery(ctx context.Context, interval time.Duration, refresh func(context.Context) int) {
	if interval <= 0 {
		interval = DefaultRefreshInterval
	}
	periodic.Run(ctx, interval, func(ctx context.Context) bool {
		rctx, cancel := context.WithTimeout(ctx, interval)
		defer cancel()
		refresh(rctx)
		return true
	})
}
