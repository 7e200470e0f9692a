package partmap_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

// TestSwitchArcsPlaceKeysAsOwner: a key's point falls in the arc of the
// member Owner gives it, with every member owning keys, after a member
// failed too; layers that are not on a switch ring have no arcs.
func TestSwitchArcsPlaceKeysAsOwner(t *testing.T) {
	m := mustBuild(t, newSpec(withSwitchSpine()), nil)
	failed, _, err := m.WithState(m.Layers[0].Members[2].Name, partmap.Failed)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    *partmap.Map
	}{{"all active", m}, {"member 2 failed", failed}} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.m)
			arcs := p.SwitchArcs(0)
			if len(arcs) == 0 || arcs[0].Low != 0 || arcs[len(arcs)-1].High != ^uint64(0) {
				t.Fatalf("%d arcs do not span the ring", len(arcs))
			}
			for i := range 4000 {
				key := fmt.Sprintf("key-%d", i)
				pt := partmap.SwitchPoint(key)
				a := arcs[sort.Search(len(arcs), func(i int) bool { return arcs[i].High >= pt })]
				if a.Member != p.Owner(0, key) {
					t.Fatalf("%s at %#x: arc of member %d, owner %d", key, pt, a.Member, p.Owner(0, key))
				}
			}
			for _, a := range arcs {
				if !tc.m.Layers[0].Members[a.Member].State.Owns() {
					t.Fatalf("arc %+v of a member that owns no keys", a)
				}
			}
			if arcs := p.SwitchArcs(1); arcs != nil {
				t.Errorf("the software leaf layer has %d switch arcs", len(arcs))
			}
		})
	}
}

// TestRackMembers: a bound layer's member of each rack, -1 once it failed;
// a rack's shards are numbered as ShardIndex numbers them.
func TestRackMembers(t *testing.T) {
	m := mustBuild(t, newSpec(), nil)
	p := mustCompile(t, m)
	for r := range 4 {
		if got := p.RackMember(1, r); got != r {
			t.Errorf("rack %d: member %d", r, got)
		}
		if first, n := p.RackShards(r); first != 2*r || n != 2 {
			t.Errorf("rack %d: shards %d+%d", r, first, n)
		}
	}
	if got := p.RackMember(0, 0); got != -1 {
		t.Errorf("the ringed spine has rack member %d", got)
	}
	failed, _, err := m.WithState(m.Layers[1].Members[3].Name, partmap.Failed)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustCompile(t, failed).RackMember(1, 3); got != -1 {
		t.Errorf("rack 3 after its member failed: member %d", got)
	}
	for i := range 1000 {
		key := fmt.Sprintf("k%d", i)
		r, s := p.Shard(key)
		if first, _ := p.RackShards(r); first+s != p.ShardIndex(key) {
			t.Fatalf("%s: rack %d's first shard %d + %d is not its index %d", key, r, first, s, p.ShardIndex(key))
		}
	}
}
