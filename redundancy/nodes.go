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

// Extra appends up to more members of the upper layer beyond the owners
// in dst: the successors of key's owner on the layer's ring, those on a
// host no node in dst (or chosen before) is on first, so that decided
// copies land in distinct failure domains where the members allow it.
func (n *mapNodes) Extra(key string, more int, dst []int) []int {
	members := n.p.Map().Layers[0].Members
	reps := n.p.Replicas(0, key, min(len(members), 4*more+8), nil)
	hosts := map[string]bool{}
	for _, v := range dst {
		if h := n.member(v).Host; h != "" {
			hosts[h] = true
		}
	}
	var fresh, rest []int
	for _, m := range reps {
		v := n.offset[0] + m
		if slices.Contains(dst, v) {
			continue
		}
		if h := members[m].Host; h != "" && hosts[h] {
			rest = append(rest, v)
			continue
		} else if h != "" {
			hosts[h] = true
		}
		fresh = append(fresh, v)
	}
	extra := append(fresh, rest...)
	return append(dst, extra[:min(more, len(extra))]...)
}

// name is the member name of node v.
func (n *mapNodes) name(v int) string { return n.member(v).Name }

// member is the map's member of node v.
func (n *mapNodes) member(v int) *partmap.Member {
	l := 0
	for l+1 < len(n.offset) && n.offset[l+1] <= v {
		l++
	}
	return &n.p.Map().Layers[l].Members[v-n.offset[l]]
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
