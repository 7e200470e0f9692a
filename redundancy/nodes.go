package redundancy

import (
	"slices"

	"github.com/distcache/distcache/placement/partmap"
)

// mapNodes presents the cache members of a placement to package copies:
// members are numbered layer after layer.
type mapNodes struct {
	p      *partmap.Placement
	offset []int // index of each layer's first member
	count  int
	buf    []partmap.Candidate
}

func newMapNodes(p *partmap.Placement) *mapNodes {
	n := &mapNodes{p: p}
	for _, l := range p.Map().Layers {
		n.offset = append(n.offset, n.count)
		n.count += len(l.Members)
	}
	return n
}

func (n *mapNodes) Count() int { return n.count }

// Owners appends key's owner in every layer, upper layer first.
func (n *mapNodes) Owners(key string, dst []int) []int {
	n.buf = n.p.Owners(key, n.buf[:0])
	for _, c := range n.buf {
		dst = append(dst, n.index(c))
	}
	return dst
}

// index is the node number of candidate c.
func (n *mapNodes) index(c partmap.Candidate) int { return n.offset[c.Layer] + c.Member }

// Extra appends up to more successors of key's owner on the upper layer's
// ring.
func (n *mapNodes) Extra(key string, more int, dst []int) []int {
	reps := n.p.Replicas(0, key, more+1, nil)
	if len(reps) > 0 {
		reps = reps[1:] // the owner holds a copy already
	}
	for _, m := range reps {
		dst = append(dst, n.offset[0]+m)
	}
	return dst
}

// name is the member name of node v.
func (n *mapNodes) name(v int) string {
	l := 0
	for l+1 < len(n.offset) && n.offset[l+1] <= v {
		l++
	}
	return n.p.Map().Layers[l].Members[v-n.offset[l]].Name
}

// same reports whether holders are exactly owners.
func (n *mapNodes) same(holders []int, owners []partmap.Candidate) bool {
	if len(holders) != len(owners) {
		return false
	}
	for _, c := range owners {
		if !slices.Contains(holders, n.index(c)) {
			return false
		}
	}
	return true
}

// layers is the number of cache layers.
func (n *mapNodes) layers() int { return len(n.offset) }
