package partmap_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

var update = flag.Bool("update", false, "rewrite golden files")

type specOption func(*partmap.Spec)

func withRacks(racks, shards int) specOption {
	return func(s *partmap.Spec) { s.Racks, s.ShardsPerRack = racks, shards }
}

func withLayer(l partmap.LayerSpec) specOption {
	return func(s *partmap.Spec) { s.Layers = append(s.Layers, l) }
}

func withoutLayers() specOption { return func(s *partmap.Spec) { s.Layers = nil } }

// newSpec returns a two-layer spec (4 spine nodes over 4 racks with a bound
// leaf layer, 2 shards per rack) changed by opts.
func newSpec(opts ...specOption) partmap.Spec {
	s := partmap.Spec{
		Cluster: "demo", Racks: 4, ShardsPerRack: 2, StorageSeed: 99,
		Layers: []partmap.LayerSpec{
			{Name: "spine", Nodes: 4, Seed: 1, VirtualNodes: 64},
			{Name: "leaf", BoundToRacks: true, Seed: 2, VirtualNodes: 64},
		},
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func mustBuild(t *testing.T, s partmap.Spec, prev *partmap.Map) *partmap.Map {
	t.Helper()
	m, err := partmap.Build(s, prev)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustCompile(t *testing.T, m *partmap.Map) *partmap.Placement {
	t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkGolden compares got with testdata/name, or rewrites the file with
// -update, and returns its content.
func checkGolden(t *testing.T, name string, got []byte) []byte {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, got, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from %s; run go test -update if intended\n%s", golden, got)
	}
	return want
}

// TestGoldenEncoding pins the JSON document every component reads.
func TestGoldenEncoding(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	got, err := partmap.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	want := checkGolden(t, "demo.json", got)
	back, err := partmap.Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := partmap.Encode(back)
	if !bytes.Equal(again, want) {
		t.Fatal("decode/encode does not round-trip")
	}
}

func TestBuildKeepsIdentities(t *testing.T) {
	m1 := mustBuild(t, newSpec(), nil)
	if m1.Version != 1 {
		t.Fatalf("first version %d, want 1", m1.Version)
	}
	if same := mustBuild(t, newSpec(), m1); same != m1 {
		t.Fatal("unchanged spec must return the previous map")
	}
	failed, changed, err := m1.WithState("demo-spine-2", partmap.Failed)
	if err != nil || !changed || failed.Version != 2 {
		t.Fatalf("WithState: changed=%v version=%d err=%v", changed, failed.Version, err)
	}
	scaled := mustBuild(t, newSpec(func(s *partmap.Spec) { s.Layers[0].Nodes = 6 }), failed)
	if scaled.Version != 3 {
		t.Fatalf("scaled version %d, want 3", scaled.Version)
	}
	spine := scaled.Layers[0].Members
	if spine[2].State != partmap.Failed {
		t.Fatal("scaling lost the failed state of an existing member")
	}
	for i, mb := range failed.Layers[0].Members {
		if spine[i].ID != mb.ID {
			t.Fatalf("member %s changed id %d -> %d", mb.Name, mb.ID, spine[i].ID)
		}
	}
	maxOld := uint32(0)
	for _, l := range m1.Layers {
		for _, mb := range l.Members {
			maxOld = max(maxOld, mb.ID)
		}
	}
	if spine[4].ID <= maxOld || spine[5].ID <= spine[4].ID {
		t.Fatalf("new members got ids %d, %d; want fresh ids above %d", spine[4].ID, spine[5].ID, maxOld)
	}
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name string
		spec partmap.Spec
		want string
	}{
		{"no cluster", newSpec(func(s *partmap.Spec) { s.Cluster = "" }), "empty cluster name"},
		{"no racks", newSpec(withRacks(0, 2)), "at least one rack"},
		{"no shards", newSpec(withRacks(2, 0)), "at least one rack"},
		{"bound count", newSpec(func(s *partmap.Spec) { s.Layers[1].Nodes = 3 }), "one node per rack"},
		{"empty layer", newSpec(func(s *partmap.Spec) { s.Layers[0].Nodes = 0 }), "at least one node"},
		{"duplicate layer", newSpec(withLayer(partmap.LayerSpec{Name: "spine", Nodes: 1})), "duplicate layer"},
		{"shared seed", newSpec(withLayer(partmap.LayerSpec{Name: "extra", Nodes: 1, Seed: 1})), "share seed"},
		{"vnodes", newSpec(func(s *partmap.Spec) { s.Layers[0].VirtualNodes = -1 }), "virtual nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := partmap.Build(tc.spec, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := partmap.Encode(mustBuild(t, newSpec(), nil))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"not json", "{", "cannot decode"},
		{"unknown field", strings.Replace(string(good), `"format"`, `"colour": 1, "format"`, 1), "unknown field"},
		{"trailing", string(good) + "{}", "trailing data"},
		{"format", strings.Replace(string(good), `"format": 1`, `"format": 9`, 1), "format 9"},
		{"version", strings.Replace(string(good), `"version": 1`, `"version": 0`, 1), "version 0"},
		{"state", strings.Replace(string(good), `"Active"`, `"Sleepy"`, 1), "unknown state"},
		{"seed not a string", strings.Replace(string(good), `"seed": "1"`, `"seed": 1`, 1), "cannot decode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := partmap.Decode([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestFailureMovesOnlyTheFailedShare marks one spine member failed and one
// leaf member failed and checks that only keys they owned change owner.
func TestFailureMovesOnlyTheFailedShare(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	before := mustCompile(t, m)
	for _, name := range []string{"demo-spine-1", "demo-leaf-3"} {
		next, _, err := m.WithState(name, partmap.Failed)
		if err != nil {
			t.Fatal(err)
		}
		after := mustCompile(t, next)
		layer, member, _ := m.Member(name)
		moved, owned := 0, 0
		for k := range 20_000 {
			key := "key:" + itoa(k)
			o1, o2 := before.Owner(layer, key), after.Owner(layer, key)
			if o1 == member {
				owned++
			}
			if o1 == o2 {
				continue
			}
			moved++
			if o1 != member {
				t.Fatalf("%s failed but key %q moved from member %d", name, key, o1)
			}
			if o2 == member {
				t.Fatalf("key %q still owned by failed member", key)
			}
		}
		if moved != owned || owned == 0 {
			t.Fatalf("%s: moved %d keys, want all %d it owned", name, moved, owned)
		}
	}
}

// TestFencedKeepsItsShare checks that a Fenced member stays on its ring
// (writes still invalidate it) and is marked in the candidates it owns.
func TestFencedKeepsItsShare(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	before := mustCompile(t, m)
	for _, name := range []string{"demo-spine-1", "demo-leaf-3"} {
		next, _, err := m.WithState(name, partmap.Fenced)
		if err != nil {
			t.Fatal(err)
		}
		after := mustCompile(t, next)
		layer, member, _ := m.Member(name)
		owned := 0
		for k := range 5000 {
			key := "key:" + itoa(k)
			if o1, o2 := before.Owner(layer, key), after.Owner(layer, key); o1 != o2 {
				t.Fatalf("%s fenced: key %q moved from member %d to %d", name, key, o1, o2)
			}
			for _, c := range after.Candidates(key, nil) {
				if want := c.Layer == layer && c.Member == member; c.Fenced != want {
					t.Fatalf("%s fenced: candidate %+v of %q has Fenced=%v, want %v", name, c, key, c.Fenced, want)
				}
				if c.Layer == layer && c.Member == member {
					owned++
				}
			}
		}
		if owned == 0 {
			t.Fatalf("%s owns none of 5000 keys", name)
		}
	}
}

func TestBoundLayerFollowsStorageRack(t *testing.T) {
	p := mustCompile(t, mustBuild(t, newSpec(), nil))
	m := p.Map()
	for k := range 1000 {
		key := "user:" + itoa(k)
		rack, shard := p.Shard(key)
		if shard < 0 || shard >= len(m.Storage.Racks[rack].Shards) {
			t.Fatalf("shard %d out of range", shard)
		}
		leaf := m.Layers[1].Members[p.Owner(1, key)]
		if leaf.Rack != m.Storage.Racks[rack].Name {
			t.Fatalf("key %q stored in %s but cached by leaf of %s", key, m.Storage.Racks[rack].Name, leaf.Rack)
		}
	}
}

func TestCandidates(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	for _, name := range []string{"demo-spine-0", "demo-spine-1", "demo-spine-2", "demo-spine-3"} {
		m, _, _ = m.WithState(name, partmap.Failed)
	}
	p := mustCompile(t, m)
	buf := make([]partmap.Candidate, 0, 4)
	c := p.Candidates("k", buf)
	if len(c) != 1 || c[0].Layer != 1 || c[0].Capacity != 1 {
		t.Fatalf("with every spine failed, want only the leaf candidate, got %+v", c)
	}
	allocs := testing.AllocsPerRun(100, func() { _ = p.Candidates("k", buf[:0]) })
	if allocs != 0 {
		t.Fatalf("Candidates allocates %v times", allocs)
	}
}

func TestStorageBalanced(t *testing.T) {
	p := mustCompile(t, mustBuild(t, newSpec(withRacks(8, 4), withoutLayers()), nil))
	counts := map[[2]int]int{}
	const keys = 320_000
	for k := range keys {
		r, s := p.Shard("key:" + itoa(k))
		counts[[2]int{r, s}]++
	}
	if len(counts) != 32 {
		t.Fatalf("keys landed on %d shards, want 32", len(counts))
	}
	for rs, c := range counts {
		if c < keys/32*95/100 || c > keys/32*105/100 {
			t.Errorf("shard %v holds %d keys, want %d ± 5%%", rs, c, keys/32)
		}
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// FuzzDecode feeds arbitrary documents to Decode: it must never panic, and
// whatever it accepts must compile and re-encode to a document that decodes
// to the same encoding.
func FuzzDecode(f *testing.F) {
	good, _ := os.ReadFile(filepath.Join("testdata", "demo.json"))
	f.Add(good)
	withCopies, _ := os.ReadFile(filepath.Join("testdata", "demo-copies.json"))
	f.Add(withCopies)
	withEntries, _ := os.ReadFile(filepath.Join("testdata", "demo-entries.json"))
	f.Add(withEntries)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format":1,"version":1,"cluster":"c","layers":[],"storage":{"seed":"1","racks":[{"name":"r","shards":[{"name":"s"}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := partmap.Decode(data)
		if err != nil {
			return
		}
		p, err := partmap.Compile(m)
		if err != nil {
			t.Fatalf("decoded map does not compile: %v", err)
		}
		for _, kc := range m.Copies {
			if n := len(p.Candidates(string(kc.Key), nil)); n > len(kc.Members) {
				t.Fatalf("key %q has %d candidates for %d decided members", kc.Key, n, len(kc.Members))
			}
		}
		enc, err := partmap.Encode(m)
		if err != nil {
			t.Fatalf("decoded map does not encode: %v", err)
		}
		back, err := partmap.Decode(enc)
		if err != nil {
			t.Fatalf("encoding does not decode: %v", err)
		}
		if again, _ := partmap.Encode(back); !bytes.Equal(again, enc) {
			t.Fatal("encoding is not stable")
		}
	})
}

// BenchmarkCandidates looks up a key's candidates in the paper's topology,
// without decided copies and with 8,192 keys' copies decided (the most a map
// lists): for a key without a decision and for one with three copies.
func BenchmarkCandidates(b *testing.B) {
	m, _ := partmap.Build(partmap.Spec{
		Cluster: "bench", Racks: 32, ShardsPerRack: 32,
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 32}, {Name: "leaf", BoundToRacks: true}},
	}, nil)
	decided := make([]partmap.KeyCopies, partmap.MaxKeyCopies)
	for i := range decided {
		decided[i] = partmap.KeyCopies{Key: []byte(fmt.Sprintf("hot:%d", i)), Members: []string{"bench-spine-0", "bench-spine-1", "bench-leaf-0"}}
	}
	withCopies, _, err := m.WithCopies(decided)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		m    *partmap.Map
		key  string
	}{
		{"plain", m, "key:123456"},
		{"copies/undecided-key", withCopies, "key:123456"},
		{"copies/decided-key", withCopies, "hot:4321"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p, _ := partmap.Compile(bc.m)
			buf := make([]partmap.Candidate, 0, 4)
			b.ReportAllocs()
			for b.Loop() {
				buf = p.Candidates(bc.key, buf[:0])
			}
		})
	}
}

func TestReplicas(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	m, _, _ = m.WithState("demo-spine-1", partmap.Failed)
	p := mustCompile(t, m)
	for k := range 500 {
		key := "key:" + itoa(k)
		got := p.Replicas(0, key, 3, nil)
		if len(got) != 3 || got[0] != p.Owner(0, key) {
			t.Fatalf("Replicas(%q) = %v, want 3 members starting with the owner %d", key, got, p.Owner(0, key))
		}
		for i, mb := range got {
			if mb == 1 {
				t.Fatalf("Replicas(%q) = %v includes the failed member", key, got)
			}
			for _, other := range got[:i] {
				if other == mb {
					t.Fatalf("Replicas(%q) = %v repeats a member", key, got)
				}
			}
		}
		if leaf := p.Replicas(1, key, 3, nil); len(leaf) != 1 || leaf[0] != p.Owner(1, key) {
			t.Fatalf("bound layer replicas %v, want only the rack's member", leaf)
		}
	}
}

func TestStorageShardLookup(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	for r, rack := range m.Storage.Racks {
		for s, sh := range rack.Shards {
			gr, gs, ok := m.StorageShard(sh.Name)
			if !ok || gr != r || gs != s {
				t.Fatalf("StorageShard(%q) = %d, %d, %v; want %d, %d", sh.Name, gr, gs, ok, r, s)
			}
		}
	}
	if _, _, ok := m.StorageShard("nope"); ok {
		t.Fatal("StorageShard found a shard that does not exist")
	}
}

// hostAddresser names addresses as Kubernetes pod DNS names would.
type hostAddresser struct{ domain string }

func (a hostAddresser) ShardAddress(r, s int) string {
	return "shard-" + itoa(r) + "-" + itoa(s) + "." + a.domain + ":7000"
}

func (a hostAddresser) MemberAddress(layer string, i int) string {
	return layer + "-" + itoa(i) + "." + a.domain + ":7100"
}

func TestBuildAddresses(t *testing.T) {
	withAddresses := func(domain string) specOption {
		return func(s *partmap.Spec) { s.Addresses = hostAddresser{domain} }
	}
	m := mustBuild(t, newSpec(withAddresses("a.svc")), nil)
	if got := m.Storage.Racks[0].Shards[0].Address; got != "shard-0-0.a.svc:7000" {
		t.Fatalf("shard address %q", got)
	}
	if got := m.Layers[0].Members[0].Address; got != m.Layers[0].Name+"-0.a.svc:7100" {
		t.Fatalf("member address %q", got)
	}
	if again := mustBuild(t, newSpec(withAddresses("a.svc")), m); again != m {
		t.Fatalf("same spec and addresses: version %d, want the previous map itself", again.Version)
	}
	moved := mustBuild(t, newSpec(withAddresses("b.svc")), m)
	if moved.Version != m.Version+1 || moved.Layers[0].Members[0].ID != m.Layers[0].Members[0].ID {
		t.Fatalf("new addresses: version %d (want %d), ids must stay", moved.Version, m.Version+1)
	}
}
