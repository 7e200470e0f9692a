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
	if err := checkMembers(members); err != nil {
		return nil, err
	}
	r := &Ring{hash: hashing.New(seed), vnodes: vnodes, members: slices.Clone(members)}
	pts := r.memberPoints(make([]point, 0, len(members)*vnodes), func(int) bool { return true })
	r.points, r.owners = make([]uint64, 0, len(pts)), make([]int32, 0, len(pts))
	for _, p := range pts {
		r.add(p)
	}
	r.buildBuckets()
	return r, nil
}

// WithMembers returns the ring New(r.Seed(), r.VirtualNodes(), members)
// would build, reusing r's points: the points of the members r already has
// keep their sorted order, and only those of the new members are hashed,
// sorted and merged in. A map version that fails or restores one member
// changes its layer's ring this way in every process at once, so the cost
// is paid machine-wide in the same instant (BenchmarkWithMembers).
func (r *Ring) WithMembers(members []string) (*Ring, error) {
	if err := checkMembers(members); err != nil {
		return nil, err
	}
	next := &Ring{hash: r.hash, vnodes: r.vnodes, members: slices.Clone(members)}
	index := make(map[string]int32, len(members))
	for i, m := range members {
		index[m] = int32(i)
	}
	renamed := make([]int32, len(r.members)) // r's member index → next's, -1 if gone
	had := make(map[string]bool, len(r.members))
	kept := 0
	for i, m := range r.members {
		renamed[i] = -1
		if j, ok := index[m]; ok {
			renamed[i] = j
			kept++
		}
		had[m] = true
	}
	isNew := func(i int) bool { return !had[members[i]] }
	added := next.memberPoints(make([]point, 0, (len(members)-kept)*r.vnodes), isNew)
	n := len(members) * r.vnodes
	next.points, next.owners = make([]uint64, 0, n), make([]int32, 0, n)
	for i, pos := range r.points { // r's points of the members kept, merged with added
		o := renamed[r.owners[i]]
		if o < 0 {
			continue
		}
		p := point{pos: pos, owner: o}
		for len(added) > 0 && next.compare(added[0], p) < 0 {
			next.add(added[0])
			added = added[1:]
		}
		next.add(p)
	}
	for _, p := range added {
		next.add(p)
	}
	next.buildBuckets()
	return next, nil
}

// checkMembers rejects empty and duplicate member names.
func checkMembers(members []string) error {
	seen := make(map[string]struct{}, len(members))
	for _, m := range members {
		if m == "" {
			return errors.New("cannot build ring: empty member name")
		}
		if _, dup := seen[m]; dup {
			return fmt.Errorf("cannot build ring: duplicate member %q", m)
		}
		seen[m] = struct{}{}
	}
	return nil
}

type point struct {
	pos   uint64
	owner int32
}

// compare orders points by position. Ties between positions (vanishingly
// rare) are broken by member name so the ring does not depend on the order
// members were given in.
func (r *Ring) compare(a, b point) int {
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
}

// memberPoints appends the points of the members i for which include(i)
// holds to dst, sorted.
func (r *Ring) memberPoints(dst []point, include func(i int) bool) []point {
	for i, m := range r.members {
		if !include(i) {
			continue
		}
		base := r.hash.String(m)
		for v := range r.vnodes {
			dst = append(dst, point{pos: r.hash.Uint64(base + uint64(v)), owner: int32(i)})
		}
	}
	slices.SortFunc(dst, r.compare)
	return dst
}

// add appends p to the ring's positions and owners, which are built in
// order.
func (r *Ring) add(p point) {
	r.points = append(r.points, p.pos)
	r.owners = append(r.owners, p.owner)
}

func (r *Ring) buildBuckets() {
	bits := uint(1)
	for 1<<bits < len(r.points) && bits < 24 {
		bits++
	}
	shift := 64 - bits
	buckets := make([]int32, 1<<bits+1)
	next := 0 // the first bucket not set yet
	for i, p := range r.points {
		for b := int(p >> shift); next <= b; next++ {
			buckets[next] = int32(i)
		}
	}
	for ; next < len(buckets); next++ {
		buckets[next] = int32(len(r.points))
	}
	r.shift, r.buckets = shift, buckets
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

// Points reports the number of points on the ring.
func (r *Ring) Points() int { return len(r.points) }

// FirstPoint returns the index of the first point at or after ring
// position h, wrapping around, or -1 for an empty ring: where a clockwise
// walk from h starts. The point after point i is (i+1) mod Points().
func (r *Ring) FirstPoint(h uint64) int {
	if len(r.points) == 0 {
		return -1
	}
	return r.search(h)
}

// PointOwner returns the index (into Members) of the member owning point
// i.
func (r *Ring) PointOwner(i int) int { return int(r.owners[i]) }

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

// Arc is a stretch of ring positions, Low to High inclusive, that one
// member owns.
type Arc struct {
	Low, High uint64
	Member    int // index into Members
}

// Arcs appends to dst the ring's arcs in position order, adjacent arcs of
// one member merged, and returns the extended slice: together they cover
// every position from 0 to 2^64-1, each owned by the member Locate gives
// it (the first point at or after it; past the last point, the first
// point's member). An empty ring has none. A client-leaf switch matches a
// key's position against them as ranges (stratum_pipelines' spine_owner).
func (r *Ring) Arcs(dst []Arc) []Arc {
	if len(r.points) == 0 {
		return dst
	}
	start := len(dst)
	add := func(low, high uint64, owner int32) {
		if n := len(dst); n > start && dst[n-1].Member == int(owner) {
			dst[n-1].High = high
			return
		}
		dst = append(dst, Arc{Low: low, High: high, Member: int(owner)})
	}
	low := uint64(0)
	for i, p := range r.points {
		if i > 0 && p == r.points[i-1] {
			continue // a tie: the earlier point owns the position
		}
		add(low, p, r.owners[i])
		low = p + 1
	}
	if last := r.points[len(r.points)-1]; last != ^uint64(0) {
		add(low, ^uint64(0), r.owners[0])
	}
	return dst
}
