package partmap_test

import (
	"fmt"
	"testing"

	"github.com/distcache/distcache/placement/partmap"
)

// leafAddresser gives the leaf layer's switches ports of their own, above
// the spine's.
type leafAddresser struct{ switchAddresser }

func (a leafAddresser) MemberAddress(layer string, i int) string {
	if layer == "leaf" {
		i += 10
	}
	return a.switchAddresser.MemberAddress(layer, i)
}

// withSwitchLeaf makes the leaf layer (bound to the racks) switch-backed:
// a storage-leaf switch per rack.
func withSwitchLeaf() specOption {
	return func(s *partmap.Spec) {
		s.Layers[1].Switch = true
		s.Addresses = leafAddresser{}
	}
}

// TestSwitchStorageLeafFailsRackOver: a storage-leaf switch layer (bound
// to the racks, under a switch spine) places each key on its rack's
// switch, read at the key's shard's read port. While a rack's switch is
// Failed the rack's keys move to the other storage-leaf switches (by the
// layer's ring at the keys' digests) and no other key moves; a Fenced
// switch keeps its rack; restored, every key is back where it was. Holds,
// which the fabric controller inserts and releases keys by, follows.
func TestSwitchStorageLeafFailsRackOver(t *testing.T) {
	const leaf, failedRack = 1, 2
	m := mustBuild(t, newSpec(withSwitchSpine(), withSwitchLeaf()), nil)
	p := mustCompile(t, m)
	if !p.Switched(0) || !p.Switched(leaf) {
		t.Fatalf("switched: spine %v, leaf %v", p.Switched(0), p.Switched(leaf))
	}
	member := func(rack int) int {
		for i, mb := range m.Layers[leaf].Members {
			if mb.Rack == partmap.RackName(rack) {
				return i
			}
		}
		t.Fatalf("no leaf member for rack %d", rack)
		return -1
	}
	keys := make([]string, 2000)
	owners := make([]int, len(keys))
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
		r, _ := p.Shard(keys[i])
		owners[i] = p.Owner(leaf, keys[i])
		if owners[i] != member(r) || p.RackMember(leaf, r) != owners[i] {
			t.Fatalf("%s of rack %d: owner %d, rack member %d, want %d", keys[i], r, owners[i], p.RackMember(leaf, r), member(r))
		}
		if c := leafCandidate(t, p, keys[i]); !c.Switch || c.Shard != p.ShardIndex(keys[i]) || c.Member != owners[i] {
			t.Fatalf("%s: leaf candidate %+v", keys[i], c)
		}
	}

	failed := m.Layers[leaf].Members[member(failedRack)].Name
	next := func(m *partmap.Map, s partmap.MemberState) (*partmap.Map, *partmap.Placement) {
		t.Helper()
		n, changed, err := m.WithState(failed, s)
		if err != nil || !changed {
			t.Fatalf("%s %s: changed %v, %v", failed, s, changed, err)
		}
		return n, mustCompile(t, n)
	}
	mFenced, pFenced := next(m, partmap.Fenced)
	mFailed, pFailed := next(mFenced, partmap.Failed)
	_, pRestored := next(mFailed, partmap.Active)
	if got := pFenced.RackMember(leaf, failedRack); got != member(failedRack) {
		t.Errorf("fenced: rack %d's member %d, want its switch %d", failedRack, got, member(failedRack))
	}
	if got := pFailed.RackMember(leaf, failedRack); got != -1 {
		t.Errorf("failed: rack %d's member %d, want none", failedRack, got)
	}
	takers := map[int]int{}
	for i, key := range keys {
		r, _ := p.Shard(key)
		if c := leafCandidate(t, pFenced, key); c.Member != owners[i] || c.Fenced != (r == failedRack) {
			t.Fatalf("fenced: %s of rack %d: candidate %+v", key, r, c)
		}
		got := pFailed.Owner(leaf, key)
		switch {
		case r != failedRack && got != owners[i]:
			t.Fatalf("failed: %s of rack %d moved from %d to %d", key, r, owners[i], got)
		case r == failedRack && (got < 0 || got == owners[i]):
			t.Fatalf("failed: %s of the failed switch's rack has owner %d", key, got)
		case r == failedRack:
			takers[got]++
			c := leafCandidate(t, pFailed, key)
			if !c.Switch || c.Fenced || c.Shard != p.ShardIndex(key) || !pFailed.Holds(leaf, got, key) {
				t.Fatalf("failed: %s on switch %d: candidate %+v, held %v", key, got, c, pFailed.Holds(leaf, got, key))
			}
			if pRestored.Holds(leaf, got, key) {
				t.Fatalf("restored: %s still held by switch %d", key, got)
			}
		}
		if back := pRestored.Owner(leaf, key); back != owners[i] {
			t.Fatalf("restored: %s has owner %d, was %d", key, back, owners[i])
		}
	}
	if len(takers) < 2 {
		t.Errorf("the failed rack's keys went to %d switches (%v), want them spread over the others", len(takers), takers)
	}
}

// leafCandidate is key's candidate in the leaf layer (layer 1).
func leafCandidate(t *testing.T, p *partmap.Placement, key string) partmap.Candidate {
	t.Helper()
	for _, c := range p.Candidates(key, nil) {
		if c.Layer == 1 {
			return c
		}
	}
	t.Fatalf("%s has no leaf candidate", key)
	return partmap.Candidate{}
}
