package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

// threeHosts puts member i of every layer on host-(i mod 3), in zone a or b.
type threeHosts struct{}

func (threeHosts) ShardAddress(int, int) string     { return "" }
func (threeHosts) MemberAddress(string, int) string { return "" }
func (threeHosts) MemberDomain(_ string, i int) (zone, host string) {
	return []string{"zone-a", "zone-b", "zone-a"}[i%3], []string{"host-0", "host-1", "host-2"}[i%3]
}

// TestPrintHostLosses checks `distcache map domains`: a map with hosts
// lists each with its members and no key whose copies are all on it; one
// without says it names none.
func TestPrintHostLosses(t *testing.T) {
	spec := partmap.Spec{Cluster: "c", Racks: 1, ShardsPerRack: 1, Addresses: threeHosts{},
		Layers: []partmap.LayerSpec{{Name: "a", Nodes: 3, VirtualNodes: 64}, {Name: "b", Nodes: 3, VirtualNodes: 64}}}
	m, err := partmap.Build(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printHostLosses(&out, m, p, 10_000); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| host-1 | zone-b | c-a-1 (Active), c-b-1 (Active) | 0.000 % |", "| all | | | 0.000 % |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	blind, err := partmap.Compile(m.WithoutDomains())
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := printHostLosses(&out, m, blind, 10_000); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "| all | | | 0.000 % |") {
		t.Errorf("placed without domains, no key has every copy on one host of three:\n%s", out.String())
	}
	spec.Addresses = nil
	m, _ = partmap.Build(spec, nil)
	p, _ = partmap.Compile(m)
	out.Reset()
	if err := printHostLosses(&out, m, p, 10); err != nil || !strings.Contains(out.String(), "names no hosts") {
		t.Fatalf("map without hosts: %v, %q", err, out.String())
	}
}
