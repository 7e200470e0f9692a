package partmap_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/placement/ring"
)

// switchAddresser gives every member and shard a loopback port; switch
// members' ports leave room for their read ports.
type switchAddresser struct{}

func (switchAddresser) ShardAddress(r, s int) string { return fmt.Sprintf("127.0.0.1:%d", 7000+10*r+s) }
func (switchAddresser) MemberAddress(_ string, i int) string {
	return fmt.Sprintf("127.0.0.1:%d", 8000+100*i)
}

func withSwitchSpine() specOption {
	return func(s *partmap.Spec) {
		s.Layers[0].Switch = true
		s.Addresses = switchAddresser{}
	}
}

// TestSwitchLayerPlacement: a switch-backed spine places a key by the 64
// high bits of its digest, has no candidate for a key longer than a
// switch parses, and reads of shard g go to its read port base+1+g.
func TestSwitchLayerPlacement(t *testing.T) {
	m := mustBuild(t, newSpec(withSwitchSpine()), nil)
	if !m.Layers[0].Switch {
		t.Fatal("the spine is not switch-backed")
	}
	p := mustCompile(t, m)
	if !p.Switched(0) || p.Switched(1) {
		t.Fatalf("switched: spine %v, leaf %v", p.Switched(0), p.Switched(1))
	}
	var names []string
	for _, mb := range m.Layers[0].Members {
		names = append(names, mb.Name)
	}
	r, err := ring.New(m.Layers[0].Seed, m.Layers[0].VirtualNodes, names)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 4)
	for i := range 4000 {
		key := fmt.Sprintf("key-%d", i)
		d := hashing.DigestOfString(key)
		if got, want := p.Owner(0, key), r.Locate(binary.BigEndian.Uint64(d[:8])); got != want {
			t.Fatalf("%s: owner %d, the ring at the digest's 64 high bits %d", key, got, want)
		}
		counts[p.Owner(0, key)]++
	}
	for i, n := range counts {
		if n < 500 {
			t.Errorf("switch member %d owns %d of 4000 keys", i, n)
		}
	}
	long := strings.Repeat("k", partmap.MaxSwitchKeyLen+1)
	for _, c := range p.Candidates(long, nil) {
		if c.Layer == 0 {
			t.Errorf("a key of %d bytes has a switch candidate", len(long))
		}
	}
	if cs := p.Candidates(long[:partmap.MaxSwitchKeyLen], nil); len(cs) != 2 || cs[0].Layer != 0 {
		t.Errorf("a key of %d bytes: candidates %+v", partmap.MaxSwitchKeyLen, cs)
	}
	seen := map[int]bool{}
	for i := range 1000 {
		key := fmt.Sprintf("k%d", i)
		r, s := p.Shard(key)
		g := p.ShardIndex(key)
		if g != 2*r+s {
			t.Fatalf("%s: shard %d of rack %d has global index %d", key, s, r, g)
		}
		seen[g] = true
	}
	if len(seen) != 8 {
		t.Errorf("%d global shard indexes seen, want 8", len(seen))
	}
	if partmap.SwitchReadPort(8000, 7) != 8008 {
		t.Errorf("read port %d", partmap.SwitchReadPort(8000, 7))
	}
}

func TestSwitchLayerValidation(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *partmap.Map)
		want   string
	}{
		{"two ringed switch layers", func(m *partmap.Map) {
			m.Layers[1].Switch, m.Layers[1].BoundToRacks = true, false
			for i := range m.Layers[1].Members {
				m.Layers[1].Members[i].Rack = ""
			}
		}, "both place keys on a ring"},
		{"not IPv4", func(m *partmap.Map) { m.Layers[0].Members[0].Address = "[::1]:8000" }, "not an IPv4 address"},
		{"no room for read ports", func(m *partmap.Map) { m.Layers[0].Members[0].Address = "127.0.0.1:65530" }, "leaves no room for 8 read ports"},
		{"copies on a switch", func(m *partmap.Map) {
			m.Copies = []partmap.KeyCopies{{Key: []byte("k"), Members: []string{m.Layers[0].Members[0].Name}}}
		}, "decided copies on a switch-backed layer's member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustBuild(t, newSpec(withSwitchSpine()), nil)
			tt.change(m)
			if err := m.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// TestGoldenEncodingWithSwitchLayer pins the switch field of the document.
func TestGoldenEncodingWithSwitchLayer(t *testing.T) {
	b, err := partmap.Encode(mustBuild(t, newSpec(withSwitchSpine()), nil))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "map-switch-layer.json", b)
	if _, err := partmap.Decode(b); err != nil {
		t.Fatal(err)
	}
}

// TestSwitchOwnerWithDecidedCopies: decided copies cover the software
// layers; a key with them keeps its switch-backed layer's owner.
func TestSwitchOwnerWithDecidedCopies(t *testing.T) {
	m := mustBuild(t, newSpec(withSwitchSpine()), nil)
	leaf := m.Layers[1].Members[2].Name
	m, _, err := m.WithCopies([]partmap.KeyCopies{{Key: []byte("hot"), Members: []string{leaf}}})
	if err != nil {
		t.Fatal(err)
	}
	p := mustCompile(t, m)
	cs := p.Candidates("hot", nil)
	if len(cs) != 2 || cs[0].Layer != 1 || cs[1].Layer != 0 || !cs[1].Switch || cs[1].Shard != p.ShardIndex("hot") {
		t.Errorf("candidates %+v", cs)
	}
	if !p.Holds(0, cs[1].Member, "hot") {
		t.Error("the switch owner does not hold the key")
	}
}
