package partmap_test

import (
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

// TestRecompileMatchesCompile changes member states one version at a time
// and checks that a placement recompiled from the previous one places every
// key, in every layer, as one compiled from scratch.
func TestRecompileMatchesCompile(t *testing.T) {
	steps := []struct {
		member string
		state  partmap.MemberState
	}{
		{"demo-spine-1", partmap.Fenced}, // no ring changes
		{"demo-spine-1", partmap.Failed}, // the spine ring changes
		{"demo-leaf-3", partmap.Failed},  // the leaf ring changes
		{"demo-spine-1", partmap.Active}, // restored
	}
	m := mustBuild(t, newSpec(), nil)
	prev := mustCompile(t, m)
	for _, st := range steps {
		next, _, err := m.WithState(st.member, st.state)
		if err != nil {
			t.Fatal(err)
		}
		fresh := mustCompile(t, next)
		re, err := partmap.Recompile(prev, next)
		if err != nil {
			t.Fatal(err)
		}
		for l := range next.Layers {
			for k := range 5_000 {
				key := "key:" + itoa(k)
				if a, b := fresh.Owner(l, key), re.Owner(l, key); a != b {
					t.Fatalf("%s %s: layer %d key %s: recompiled owner %d, compiled %d", st.member, st.state, l, key, b, a)
				}
			}
		}
		m, prev = next, re
	}
}

// demoShaped is the shape of the demo cluster's map (hack/demo/cluster.yaml):
// 8 racks of 4 shards, 4 spine members and 8 rack-bound leaves, 2048 ring
// points each.
func demoShaped(tb testing.TB) *partmap.Map {
	tb.Helper()
	m, err := partmap.Build(partmap.Spec{
		Cluster: "demo", Racks: 8, ShardsPerRack: 4, StorageSeed: 99,
		Layers: []partmap.LayerSpec{
			{Name: "spine", Nodes: 4, Seed: 1, VirtualNodes: 2048},
			{Name: "leaf", BoundToRacks: true, Seed: 2, VirtualNodes: 2048},
		},
	}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkRecompile compiles the next version of a demo-shaped map from
// scratch and from the previous placement, for a version that fences a
// spine member (no ring changes), one that fails it, and one that restores
// it after it failed.
func BenchmarkRecompile(b *testing.B) {
	m := demoShaped(b)
	prev, err := partmap.Compile(m)
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range []partmap.MemberState{partmap.Fenced, partmap.Failed} {
		next, _, err := m.WithState("demo-spine-1", st)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("compile/"+string(st), func(b *testing.B) {
			for b.Loop() {
				if _, err := partmap.Compile(next); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("recompile/"+string(st), func(b *testing.B) {
			for b.Loop() {
				if _, err := partmap.Recompile(prev, next); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	failed, _, err := m.WithState("demo-spine-1", partmap.Failed)
	if err != nil {
		b.Fatal(err)
	}
	before, err := partmap.Compile(failed)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("recompile/restored", func(b *testing.B) {
		for b.Loop() {
			if _, err := partmap.Recompile(before, m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
