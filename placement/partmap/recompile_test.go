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
