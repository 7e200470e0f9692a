package partmap_test

import (
	"strings"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

// domainAddresser puts member i of every layer on host i mod hosts, hosts
// alternating between zones zones (0: none).
type domainAddresser struct{ hosts, zones int }

func (domainAddresser) ShardAddress(r, s int) string             { return "" }
func (domainAddresser) MemberAddress(layer string, i int) string { return "" }
func (a domainAddresser) MemberDomain(layer string, i int) (zone, host string) {
	h := i % a.hosts
	if a.zones > 0 {
		zone = "zone-" + itoa(h%a.zones)
	}
	return zone, "host-" + itoa(h)
}

func withDomains(hosts, zones int) specOption {
	return func(s *partmap.Spec) { s.Addresses = domainAddresser{hosts, zones} }
}

// twoLayers is a spec of two software layers of n members each.
func twoLayers(n int, opts ...specOption) partmap.Spec {
	s := newSpec(withoutLayers(),
		withLayer(partmap.LayerSpec{Name: "upper", Nodes: n, Seed: 11, VirtualNodes: 256}),
		withLayer(partmap.LayerSpec{Name: "lower", Nodes: n, Seed: 12, VirtualNodes: 256}))
	for _, o := range opts {
		o(&s)
	}
	return s
}

// sharing counts the keys among n whose candidates, as p places them,
// share a host, or a zone, as m names its members' domains.
func sharing(m *partmap.Map, p *partmap.Placement, n int) (hosts, zones int) {
	var buf []partmap.Candidate
	for k := range n {
		buf = p.Candidates("key:"+itoa(k), buf[:0])
		seenHost, seenZone := map[string]bool{}, map[string]bool{}
		sharedHost, sharedZone := false, false
		for _, c := range buf {
			mb := m.Layers[c.Layer].Members[c.Member]
			sharedHost = sharedHost || seenHost[mb.Host]
			sharedZone = sharedZone || (mb.Zone != "" && seenZone[mb.Zone])
			seenHost[mb.Host], seenZone[mb.Zone] = true, true
		}
		if sharedHost {
			hosts++
		}
		if sharedZone {
			zones++
		}
	}
	return hosts, zones
}

// TestDomainsSeparateCandidates checks that with members' hosts (and
// zones) in the map every key's candidates are on distinct hosts (and
// zones), where without them about one key in hosts shares one.
func TestDomainsSeparateCandidates(t *testing.T) {
	const keys = 20_000
	for _, tc := range []struct {
		name                 string
		members, hosts, zone int
	}{
		{"3 hosts", 3, 3, 0},
		{"6 members on 3 hosts", 6, 3, 0},
		{"4 hosts in 2 zones", 4, 4, 2},
		{"8 members on 4 hosts in 2 zones", 8, 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labelled := mustBuild(t, twoLayers(tc.members, withDomains(tc.hosts, tc.zone)), nil)
			// Domain-blind: the same rings placed without the domains.
			blind := mustCompile(t, mustBuild(t, twoLayers(tc.members), nil))
			blindHosts, _ := sharing(labelled, blind, keys)
			if blindHosts < keys/(2*tc.hosts) {
				t.Fatalf("without domains only %d of %d keys share a host; the test needs the blind placement to collide", blindHosts, keys)
			}
			hosts, zones := sharing(labelled, mustCompile(t, labelled), keys)
			if hosts != 0 || zones != 0 {
				t.Fatalf("with domains %d keys share a host and %d a zone, want 0 (without domains %d share a host)", hosts, zones, blindHosts)
			}
		})
	}
}

// TestDomainsKeepBalance checks that the walk past a used host keeps each
// layer's members' shares of the keys even.
func TestDomainsKeepBalance(t *testing.T) {
	const keys = 60_000
	m := mustBuild(t, twoLayers(6, withDomains(3, 0)), nil)
	p := mustCompile(t, m)
	for l := range m.Layers {
		counts := make([]int, len(m.Layers[l].Members))
		for k := range keys {
			counts[p.Owner(l, "key:"+itoa(k))]++
		}
		for i, c := range counts {
			if share := float64(c) * float64(len(counts)) / keys; share > 1.25 || share < 0.75 {
				t.Fatalf("layer %d member %d owns %.2f of its even share (%v)", l, i, share, counts)
			}
		}
	}
}

// TestDomainsMoveOnlyTheFailedShare fails, fences and restores members of
// each layer and checks the movement guarantee of §4.4 with failure
// domains: only the failed member's keys move, in its own layer, and no
// key moves between survivors.
func TestDomainsMoveOnlyTheFailedShare(t *testing.T) {
	const keys = 20_000
	base := mustBuild(t, twoLayers(6, withDomains(3, 0)), nil)
	before := mustCompile(t, base)
	for _, member := range []string{"demo-upper-2", "demo-lower-4"} {
		for _, state := range []partmap.MemberState{partmap.Fenced, partmap.Failed} {
			next, _, err := base.WithState(member, state)
			if err != nil {
				t.Fatal(err)
			}
			after, err := partmap.Recompile(before, next)
			if err != nil {
				t.Fatal(err)
			}
			fl, fm, _ := base.Member(member)
			moved := 0
			for k := range keys {
				key := "key:" + itoa(k)
				for l := range base.Layers {
					a, b := before.Owner(l, key), after.Owner(l, key)
					if a == b {
						continue
					}
					if state == partmap.Fenced || l != fl || a != fm {
						t.Fatalf("%s %s: key %s moved in layer %d from member %d to %d", member, state, key, l, a, b)
					}
					moved++
				}
			}
			if state == partmap.Failed && (moved < keys/12 || moved > keys/3) {
				t.Fatalf("%s failed: %d of %d keys moved, want about a sixth", member, moved, keys)
			}
			fresh := mustCompile(t, next)
			for k := range 2_000 {
				key := "key:" + itoa(k)
				for l := range next.Layers {
					if a, b := fresh.Owner(l, key), after.Owner(l, key); a != b {
						t.Fatalf("%s %s: layer %d key %s: recompiled owner %d, compiled %d", member, state, l, key, b, a)
					}
				}
			}
		}
	}
}

// TestDomainsAroundBoundLayer checks that an upper layer avoids the host of
// the key's rack member in a bound lower layer.
func TestDomainsAroundBoundLayer(t *testing.T) {
	m := mustBuild(t, newSpec(withDomains(4, 0)), nil) // 4 spine members, 4 bound leaves
	hosts, _ := sharing(m, mustCompile(t, m), 10_000)
	if hosts != 0 {
		t.Fatalf("%d keys share a host between the spine and their rack's leaf", hosts)
	}
}

// TestDomainsWhereTheyCannotSeparate checks the fallbacks: every member on
// one host places keys as without domains, and a layer with members on a
// new host but none in a new zone still separates hosts.
func TestDomainsWhereTheyCannotSeparate(t *testing.T) {
	plain := mustCompile(t, mustBuild(t, twoLayers(3), nil))
	one := mustCompile(t, mustBuild(t, twoLayers(3, withDomains(1, 0)), nil))
	for k := range 5_000 {
		key := "key:" + itoa(k)
		for l := range 2 {
			if a, b := plain.Owner(l, key), one.Owner(l, key); a != b {
				t.Fatalf("one host: key %s layer %d owner %d, want %d as without domains", key, l, b, a)
			}
		}
	}
	oneZone := mustBuild(t, twoLayers(3, withDomains(3, 1)), nil)
	if hosts, _ := sharing(oneZone, mustCompile(t, oneZone), 5_000); hosts != 0 {
		t.Fatalf("one zone of three hosts: %d keys share a host", hosts)
	}
}

// TestDomainsValidation checks that a host named in two zones is refused.
func TestDomainsValidation(t *testing.T) {
	m := mustBuild(t, twoLayers(3, withDomains(3, 2)), nil).Clone()
	m.Layers[1].Members[0].Zone = "elsewhere"
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), `host "host-0" is in zone`) {
		t.Fatalf("Validate = %v, want the host's two zones refused", err)
	}
	m.Layers[1].Members[0].Zone = m.Layers[0].Members[0].Zone
	m.Layers[1].Members[0].Host = strings.Repeat("h", 254)
	if err := m.Validate(); err == nil {
		t.Fatal("Validate accepted a host name of 254 bytes")
	}
}

// BenchmarkCandidatesWithDomains is BenchmarkCandidates' plain case with
// members on 8 hosts in 2 zones, and with one member failed.
func BenchmarkCandidatesWithDomains(b *testing.B) {
	m, _ := partmap.Build(partmap.Spec{
		Cluster: "bench", Racks: 32, ShardsPerRack: 32, Addresses: domainAddresser{8, 2},
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 32}, {Name: "leaf", BoundToRacks: true}},
	}, nil)
	failed, _, err := m.WithState("bench-spine-3", partmap.Failed)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		m    *partmap.Map
	}{{"all-up", m}, {"one-failed", failed}} {
		b.Run(bc.name, func(b *testing.B) {
			p, _ := partmap.Compile(bc.m)
			buf := make([]partmap.Candidate, 0, 4)
			b.ReportAllocs()
			for b.Loop() {
				buf = p.Candidates("key:123456", buf[:0])
			}
		})
	}
}

// TestHostZoneAndWithoutDomains checks the map's helpers of domains: a
// host's zone, and a copy that names none.
func TestHostZoneAndWithoutDomains(t *testing.T) {
	m := mustBuild(t, twoLayers(4, withDomains(4, 2)), nil)
	if zone, ok := m.HostZone("host-1"); !ok || zone != "zone-1" {
		t.Fatalf("HostZone(host-1) = %q, %t; want zone-1", zone, ok)
	}
	if _, ok := m.HostZone("host-9"); ok {
		t.Fatal("HostZone found a host no member is on")
	}
	plain := m.WithoutDomains()
	for _, l := range plain.Layers {
		for _, mb := range l.Members {
			if mb.Host != "" || mb.Zone != "" {
				t.Fatalf("member %s still in %q/%q", mb.Name, mb.Zone, mb.Host)
			}
		}
	}
	if m.Layers[0].Members[0].Host == "" {
		t.Fatal("WithoutDomains changed the map it copied")
	}
}
