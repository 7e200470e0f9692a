package peers_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/peers"
	"github.com/distcache/distcache/internal/testing/dnstest"
	"github.com/distcache/distcache/placement/partmap"
)

// TestRefreshFollowsDNS resolves a map whose addresses are DNS names, as
// the operator publishes them, through a real DNS server: a pod recreated
// with a new IP is reached at it after Refresh, without a new map; a name
// without a record yet resolves once it has one; a failed lookup keeps the
// address that worked.
func TestRefreshFollowsDNS(t *testing.T) {
	dns := dnstest.Start(t)
	m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 2}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Layers[0].Members[0].Address = "t-spine-0.t-spine.ns.svc.test.:7100"
	m.Layers[0].Members[1].Address = "t-spine-1.t-spine.ns.svc.test.:7100"
	m.Storage.Racks[0].Shards[0].Address = "198.18.0.9:7000"
	dns.Set("t-spine-0.t-spine.ns.svc.test.", "198.18.0.1") // spine-1 has no record yet
	tb := peers.Resolve(m, nil, peers.WithResolver(dns.Resolver()))
	check := func(step string, want0, want1 string) {
		t.Helper()
		for i, want := range []string{want0, want1} {
			got := tb.Member(0, i)
			if (want == "" && got.IsValid()) || (want != "" && got != netip.MustParseAddrPort(want)) {
				t.Fatalf("%s: member %d at %v, want %q", step, i, got, want)
			}
		}
		if got := tb.Shard(0, 0); got != netip.MustParseAddrPort("198.18.0.9:7000") {
			t.Fatalf("%s: shard at %v", step, got)
		}
	}
	check("resolved", "198.18.0.1:7100", "")

	dns.Set("t-spine-1.t-spine.ns.svc.test.", "198.18.0.2")
	if n := tb.Refresh(t.Context()); n != 1 {
		t.Fatalf("Refresh changed %d addresses, want 1 (the name that got a record)", n)
	}
	check("a record appeared", "198.18.0.1:7100", "198.18.0.2:7100")

	dns.Set("t-spine-0.t-spine.ns.svc.test.", "198.18.0.3") // pod recreated
	if n := tb.Refresh(t.Context()); n != 1 {
		t.Fatalf("Refresh changed %d addresses, want 1 (the recreated pod)", n)
	}
	check("a pod got a new IP", "198.18.0.3:7100", "198.18.0.2:7100")

	dns.Set("t-spine-1.t-spine.ns.svc.test.", "") // the record goes away for a while
	if n := tb.Refresh(t.Context()); n != 0 {
		t.Fatalf("Refresh changed %d addresses, want 0: a failed lookup keeps the last address", n)
	}
	check("a lookup failed", "198.18.0.3:7100", "198.18.0.2:7100")
	if n := tb.Refresh(t.Context()); n != 0 {
		t.Fatalf("a second Refresh without changes changed %d addresses", n)
	}
}

// TestRefreshOfLiterals checks that a table of IP literals (standalone
// mode) has nothing to look up.
func TestRefreshOfLiterals(t *testing.T) {
	m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Layers[0].Members[0].Address = "127.0.0.1:7100"
	m.Storage.Racks[0].Shards[0].Address = "127.0.0.1:7000"
	failing := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no lookup expected")
	}}
	tb := peers.Resolve(m, nil, peers.WithResolver(failing))
	if n := tb.Refresh(t.Context()); n != 0 || tb.Member(0, 0) != netip.MustParseAddrPort("127.0.0.1:7100") {
		t.Fatalf("Refresh of literals changed %d, member at %v", n, tb.Member(0, 0))
	}
}

// TestResolveReusesThePreviousTable installs a new map over a resolved
// table after DNS has lost the known names' records (as when the cluster
// DNS lags or fails): the names the previous table knew keep their
// addresses without a lookup, and only the name new to the map is looked
// up.
func TestResolveReusesThePreviousTable(t *testing.T) {
	dns := dnstest.Start(t)
	build := func(nodes int) *partmap.Map {
		m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 1, ShardsPerRack: 1,
			Layers: []partmap.LayerSpec{{Name: "spine", Nodes: nodes}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.Layers[0].Members {
			m.Layers[0].Members[i].Address = fmt.Sprintf("t-spine-%d.t-spine.ns.svc.test.:7100", i)
		}
		m.Storage.Racks[0].Shards[0].Address = "t-rack-0-0.t-rack-0.ns.svc.test.:7000"
		return m
	}
	dns.Set("t-spine-0.t-spine.ns.svc.test.", "198.18.0.1")
	dns.Set("t-spine-1.t-spine.ns.svc.test.", "198.18.0.2")
	dns.Set("t-rack-0-0.t-rack-0.ns.svc.test.", "198.18.0.9")
	first := peers.Resolve(build(2), nil, peers.WithResolver(dns.Resolver()))

	for _, name := range []string{"t-spine-0.t-spine.ns.svc.test.", "t-spine-1.t-spine.ns.svc.test.", "t-rack-0-0.t-rack-0.ns.svc.test."} {
		dns.Set(name, "")
	}
	dns.Set("t-spine-2.t-spine.ns.svc.test.", "198.18.0.3")
	next := peers.Resolve(build(3), nil, peers.WithResolver(dns.Resolver()), peers.WithPrevious(first))
	for i, want := range []string{"198.18.0.1:7100", "198.18.0.2:7100", "198.18.0.3:7100"} {
		if got := next.Member(0, i); got != netip.MustParseAddrPort(want) {
			t.Errorf("member %d at %v, want %s", i, got, want)
		}
	}
	if got := next.Shard(0, 0); got != netip.MustParseAddrPort("198.18.0.9:7000") {
		t.Errorf("shard at %v, want the previous table's 198.18.0.9:7000", got)
	}
}

// TestRefreshMissing: a caller that finds no address resolves the names
// again, at most every MissRefreshEvery for all callers together.
func TestRefreshMissing(t *testing.T) {
	dns := dnstest.Start(t)
	m, err := partmap.Build(partmap.Spec{Cluster: "t", Racks: 1, ShardsPerRack: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const name = "t-rack-0-0.t-rack-0.ns.svc.test."
	m.Storage.Racks[0].Shards[0].Address = name + ":7000"
	now := time.Unix(1000, 0)
	tb := peers.Resolve(m, nil, peers.WithResolver(dns.Resolver()), peers.WithClock(func() time.Time { return now }))
	if tb.RefreshMissing(t.Context()) || tb.Shard(0, 0).IsValid() {
		t.Fatal("a name without a record resolved")
	}
	dns.Set(name, "198.18.0.7")
	if tb.RefreshMissing(t.Context()) {
		t.Fatalf("resolved again within %v of the last time", peers.MissRefreshEvery)
	}
	now = now.Add(peers.MissRefreshEvery)
	if !tb.RefreshMissing(t.Context()) || tb.Shard(0, 0) != netip.MustParseAddrPort("198.18.0.7:7000") {
		t.Fatalf("after %v: shard at %v, want the new record's address", peers.MissRefreshEvery, tb.Shard(0, 0))
	}
}
