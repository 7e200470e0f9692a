package ring_test

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/distcache/distcache/placement/ring"
)

// TestArcsCoverTheRing: the arcs are contiguous from 0 to 2^64-1, adjacent
// ones belong to different members, and every position, at an arc's
// bounds or drawn at random, is owned by the arc's member.
func TestArcsCoverTheRing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members int
		vnodes  int
	}{{"one member", 1, 4}, {"two members", 2, 16}, {"five members", 5, 64}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ring.New(42, tc.vnodes, memberNames(tc.members))
			if err != nil {
				t.Fatal(err)
			}
			arcs := r.Arcs(nil)
			if len(arcs) == 0 || arcs[0].Low != 0 || arcs[len(arcs)-1].High != ^uint64(0) {
				t.Fatalf("arcs %v do not span the ring", arcs)
			}
			if tc.members == 1 && len(arcs) != 1 {
				t.Fatalf("one member: %d arcs, want one", len(arcs))
			}
			for i, a := range arcs {
				if a.Low > a.High {
					t.Fatalf("arc %d: %v is empty", i, a)
				}
				if i > 0 && (a.Low != arcs[i-1].High+1 || a.Member == arcs[i-1].Member) {
					t.Fatalf("arc %d: %v after %v", i, a, arcs[i-1])
				}
				if r.Locate(a.Low) != a.Member || r.Locate(a.High) != a.Member {
					t.Fatalf("arc %d: %v, but its bounds are owned by %d and %d", i, a, r.Locate(a.Low), r.Locate(a.High))
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 10000 {
				h := rng.Uint64()
				i := sort.Search(len(arcs), func(i int) bool { return arcs[i].High >= h })
				if arcs[i].Member != r.Locate(h) {
					t.Fatalf("position %#x: arc %v, owner %d", h, arcs[i], r.Locate(h))
				}
			}
		})
	}
}

// TestArcsOfAnEmptyRing: none.
func TestArcsOfAnEmptyRing(t *testing.T) {
	r, err := ring.New(1, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	if arcs := r.Arcs(nil); len(arcs) != 0 {
		t.Fatalf("arcs %v", arcs)
	}
}
