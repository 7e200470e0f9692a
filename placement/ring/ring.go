// Package ring implements the consistent-hash ring with virtual nodes that
// partitions the key space of one cache layer among its members.
//
// Every member owns VirtualNodes points on a 64-bit ring; a key belongs to the
// member owning the first point at or after the key's hash, wrapping around.
// Points and keys are hashed with the layer's own seed, so two layers built
// from the same members still partition keys independently (DistCache, FAST
// '19, §3.1). Consistent hashing with virtual nodes is what the DistCache
// controller uses to remap the partition of a failed cache node (§4.4,
// following Karger et al. and CFS): removing a member reassigns only the keys
// that member owned, spread over the survivors in proportion to their points,
// and no key moves between two surviving members; adding a member takes keys
// only from others to itself.
//
// A ring is immutable once built and safe for concurrent use. Lookups are a
// direct index into a bucket table over the high bits of the hash followed by
// a short search, so they cost a few tens of nanoseconds even with millions of
// points.
package ring

import (
	"errors"
	"fmt"
	"slices"

	"github.com/distcache/distcache/placement/hashing"
)

// DefaultVirtualNodes is the number of points per member used when a layer
// does not say otherwise. The share of keys of one member has a relative
// standard deviation of about 1/sqrt(VirtualNodes); with 2048 points no member
// of a 256-member ring owns more than 1.1/n of the keys (see the tests).
const DefaultVirtualNodes = 2048

// MaxVirtualNodes bounds the points per member to keep rings of thousands of
// members within memory.
const MaxVirtualNodes = 1 << 16

// Ring is an immutable consistent-hash ring.
type Ring struct {
	hash    hashing.Func
	vnodes  int
	members []string
	points  []uint64 // sorted ring positions
	owners  []int32  // owners[i] is the member index owning points[i]
	buckets []int32  // buckets[b] is the first i with points[i]>>shift >= b; len = 1<<bits + 1
	shift   uint
}

// New builds a ring for members (distinct, non-empty names) with vnodes
// points each, hashed with seed. An empty member list gives an empty ring
// whose lookups return -1.
func New(seed uint64, vnodes int, members []string) (*Ring, error) {
	if vnodes < 1 || vnodes > MaxVirtualNodes {
		return nil, fmt.Errorf("cannot build ring: virtual nodes %d out of range [1, %d]", vnodes, MaxVirtualNodes)
	}
	seen := make(map[string]struct{}, len(members))
	for _, m := range members {
		if m == "" {
			return nil, errors.New("cannot build ring: empty member name")
		}
		if _, dup := seen[m]; dup {
			return nil, fmt.Errorf("cannot build ring: duplicate member %q", m)
		}
		seen[m] = struct{}{}
	}
	r := &Ring{hash: hashing.New(seed), vnodes: vnodes, members: slices.Clone(members)}
	r.build()
	return r, nil
}

type point struct {
	pos   uint64
	owner int32
}

func (r *Ring) build() {
	pts := make([]point, 0, len(r.members)*r.vnodes)
	for i, m := range r.members {
		base := r.hash.String(m)
		for v := range r.vnodes {
			pts = append(pts, point{pos: r.hash.Uint64(base + uint64(v)), owner: int32(i)})
		}
	}
	// Ties between positions (vanishingly rare) are broken by member name so
	// the ring does not depend on the order members were given in.
	slices.SortFunc(pts, func(a, b point) int {
		if a.pos != b.pos {
			if a.pos < b.pos {
				return -1
			}
			return 1
		}
		if r.members[a.owner] < r.members[b.owner] {
			return -1
		}
		return 1
	})
	r.points = make([]uint64, len(pts))
	r.owners = make([]int32, len(pts))
	for i, p := range pts {
		r.points[i], r.owners[i] = p.pos, p.owner
	}
	r.buildBuckets()
}

func (r *Ring) buildBuckets() {
	bits := uint(1)
	for 1<<bits < len(r.points) && bits < 24 {
		bits++
	}
	r.shift = 64 - bits
	n := 1 << bits
	r.buckets = make([]int32, n+1)
	i := 0
	for b := range n {
		for i < len(r.points) && int(r.points[i]>>r.shift) < b {
			i++
		}
		r.buckets[b] = int32(i)
	}
	r.buckets[n] = int32(len(r.points))
}

// Members returns the members in the order given to New.
func (r *Ring) Members() []string { return r.members }

// Len reports the number of members.
func (r *Ring) Len() int { return len(r.members) }

// VirtualNodes reports the points per member.
func (r *Ring) VirtualNodes() int { return r.vnodes }

// Seed reports the ring's hash seed.
func (r *Ring) Seed() uint64 { return r.hash.Seed() }

// KeyHash is the ring position of key.
func (r *Ring) KeyHash(key string) uint64 { return r.hash.String(key) }

// Locate returns the index (into Members) of the member owning ring position
// h, or -1 for an empty ring.
func (r *Ring) Locate(h uint64) int {
	if len(r.points) == 0 {
		return -1
	}
	return int(r.owners[r.search(h)])
}

// search returns the index of the first point at or after h, wrapping
// around. The ring must not be empty.
func (r *Ring) search(h uint64) int {
	b := h >> r.shift
	lo, hi := int(r.buckets[b]), int(r.buckets[b+1])
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.points[mid] < h {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(r.points) {
		lo = 0
	}
	return lo
}

// LocateKey returns the index of the member owning key, or -1 for an empty
// ring.
func (r *Ring) LocateKey(key string) int { return r.Locate(r.KeyHash(key)) }

// Owner returns the name of the member owning key, or "" for an empty ring.
func (r *Ring) Owner(key string) string {
	i := r.LocateKey(key)
	if i < 0 {
		return ""
	}
	return r.members[i]
}

// Successors appends to dst the indexes of up to n distinct members met
// walking clockwise from ring position h, starting with h's owner, and
// returns the extended slice. These are the members that hold a key's extra
// copies when it is replicated within a layer.
func (r *Ring) Successors(h uint64, n int, dst []int) []int {
	if len(r.points) == 0 || n < 1 {
		return dst
	}
	n = min(n, len(r.members))
	start := len(dst)
	i := r.search(h)
	for range r.points {
		if len(dst)-start == n {
			break
		}
		o := int(r.owners[i])
		seen := false
		for _, d := range dst[start:] {
			if d == o {
				seen = true
				break
			}
		}
		if !seen {
			dst = append(dst, o)
		}
		if i++; i == len(r.points) {
			i = 0
		}
	}
	return dst
}
