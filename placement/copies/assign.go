package copies

import (
	"cmp"
	"math"
	"slices"
)

// tolerance absorbs rounding in the capacity checks.
const tolerance = 1e-9

// assign computes the assignment at rate factor f (every reported rate and
// base load multiplied by f) and reports whether it keeps every storage
// server within capacity and every cache node's load that the router
// cannot move elsewhere (single copies' reads, every copy's coherence
// work) within its own, with the nodes' total load within their total
// capacity.
//
// The hottest keys, as many as plain DistCache would cache with one copy
// per layer, come first: each gets the fewest copies it needs, then, where
// its server has room for the coherence work and its nodes have slots,
// more up to one per layer. The slots left (those of keys that stayed
// below one copy per layer) go to the next keys, hottest first.
func (s *search) assign(f float64) bool {
	s.reset(f)
	primary := len(s.order)
	if s.m.Slots > 0 {
		primary = min(primary, s.m.Slots*len(s.slots)/max(1, s.layers))
	}
	for _, i := range s.order[:primary] {
		c := s.minCopies(i, s.keys[i].Reads*f, s.keys[i].Writes*f)
		if c < 0 {
			return false
		}
		s.put(i, c, f)
	}
	for _, i := range s.order[primary:] {
		s.put(i, 0, f) // uncached until the slots left are known
	}
	for _, i := range s.order[:primary] {
		s.grow(i, f)
	}
	for _, i := range s.order[primary:] {
		k := &s.keys[i]
		if c := s.minCopies(i, k.Reads*f, k.Writes*f); c > 0 {
			s.take(i, f)
			s.put(i, c, f)
		}
	}
	return s.serversFit() && s.nodesFit()
}

// reset empties the assignment for rate factor f.
func (s *search) reset(f float64) {
	for v, b := range s.base {
		s.server[v] = b * f
	}
	clear(s.node)
	clear(s.fixed)
	s.total = 0
	for v := range s.slots {
		s.slots[v] = s.m.Slots
		if s.m.Slots == 0 {
			s.slots[v] = math.MaxInt
		}
	}
	for i := range s.held {
		s.held[i] = s.held[i][:0]
	}
}

// put caches key i with c copies (none for c = 0) on nodes with a free
// slot: fewer copies than layers go to the least loaded owners, and a
// single copy only to a node with room for all of its load. A key that
// cannot get c copies is not cached. Its server's load follows.
func (s *search) put(i, c int, f float64) {
	k := &s.keys[i]
	r, w := k.Reads*f, k.Writes*f
	s.next = s.next[:0]
	freeOwners := 0
	if c > 0 {
		for j, v := range s.candidates(i, c) {
			if s.slots[v] > 0 && (c > 1 || s.fixed[v]+r+s.m.NodeWriteCost*w <= s.m.NodeCapacity*(1+tolerance)) {
				s.next = append(s.next, v)
				if j < s.owners[i] {
					freeOwners++
				}
			}
		}
	}
	if c < s.layers && freeOwners > 1 {
		slices.SortStableFunc(s.next[:freeOwners], func(a, b int) int { return cmp.Compare(s.node[a], s.node[b]) })
	}
	if len(s.next) < c {
		c = 0
	}
	s.held[i] = append(s.held[i][:0], s.next[:c]...)
	for _, v := range s.held[i] {
		s.slots[v]--
	}
	s.charge(i, f, 1)
}

// take undoes put for key i.
func (s *search) take(i int, f float64) {
	s.charge(i, f, -1)
	for _, v := range s.held[i] {
		s.slots[v]++
	}
	s.held[i] = s.held[i][:0]
}

// charge adds (sign 1) or removes (sign -1) the load key i's copies put
// on its server and on the nodes that hold it.
func (s *search) charge(i int, f, sign float64) {
	k := &s.keys[i]
	r, w := k.Reads*f, k.Writes*f
	c := len(s.held[i])
	s.server[k.Server] += sign * s.serverLoad(c, r, w)
	for _, v := range s.held[i] {
		s.node[v] += sign * (r/float64(c) + s.m.NodeWriteCost*w)
		s.fixed[v] += sign * s.m.NodeWriteCost * w
		if c == 1 {
			s.fixed[v] += sign * r
		}
	}
	if c > 0 {
		s.total += sign * (r + s.m.NodeWriteCost*w*float64(c))
	}
}

// grow gives cached key i the copies it wants (wantCopies), or as many
// more as its server has room for the coherence work of and its candidate
// nodes have slots.
func (s *search) grow(i int, f float64) {
	k := &s.keys[i]
	c := len(s.held[i])
	if c == 0 {
		return
	}
	want := s.wantCopies(k.Now, k.Reads*f, k.Writes*f)
	if want <= c {
		return
	}
	free := 0
	for _, v := range s.candidates(i, want) {
		if s.slots[v] > 0 && !slices.Contains(s.held[i], v) {
			free++
		}
	}
	room := s.m.ServerCapacity*(1+tolerance) - s.server[k.Server]
	for want = min(want, c+free); want > c; want-- {
		if s.m.CoherenceCost*k.Writes*f*float64(want-c) <= room {
			break
		}
	}
	if want > c {
		s.take(i, f)
		s.put(i, want, f)
	}
}

// copiesFor is the number of copies that keeps each one's share of a
// key's reads (split evenly) and its coherence work within share of a
// node, or math.MaxInt when the writes alone exceed it.
func (s *search) copiesFor(r, w, share float64) int {
	room := share - s.m.NodeWriteCost*w
	if room <= 0 {
		return math.MaxInt
	}
	return max(1, int(math.Ceil(r/room-tolerance)))
}

// minCopies is the fewest copies key i needs at rates r and w, each
// within a whole node (0: it is not worth caching), or -1 when more than
// MaxCopies would be needed.
func (s *search) minCopies(i int, r, w float64) int {
	m, now := s.m, s.keys[i].Now
	full := m.NodeCapacity
	c := s.copiesFor(r, w, full)
	if now > 0 && s.inBand(now, r, w, full) {
		c = now
	}
	if c == math.MaxInt {
		return 0 // its writes alone would fill a node: not cacheable
	}
	// Caching saves the server r (the reads) and costs it γ·c·w.
	breakEven := m.CoherenceCost * float64(c) * w
	if now > 0 {
		breakEven *= 1 - m.Hysteresis
	} else {
		breakEven *= 1 + m.Hysteresis
	}
	if r <= breakEven {
		return 0
	}
	if c > min(m.MaxCopies, len(s.candidates(i, c))) {
		return -1
	}
	return c
}

// wantCopies is the copies a cached key that has now gets where its
// server and nodes allow: one per layer, as plain DistCache, and enough
// that each copy stays within half a node, Theorem 1's precondition for
// the router to balance them, at most MaxCopies. A key with more than one
// per layer keeps its count while its copies' share stays within the
// hysteresis band around half a node, as minCopies does around a whole
// node.
func (s *search) wantCopies(now int, r, w float64) int {
	half := s.m.NodeCapacity / 2
	c := s.copiesFor(r, w, half)
	if now > s.layers && s.inBand(now, r, w, half) {
		c = now
	}
	return min(max(s.layers, c), s.m.MaxCopies)
}

// inBand reports whether now copies are what a key at rates r and w needs
// for some share within the hysteresis band around share (copiesFor):
// a key that has them keeps them.
func (s *search) inBand(now int, r, w, share float64) bool {
	return now >= s.copiesFor(r, w, share*(1+s.m.Hysteresis)) && now <= s.copiesFor(r, w, share*(1-s.m.Hysteresis))
}

// serverLoad is what a key with c copies costs its storage server.
func (s *search) serverLoad(c int, r, w float64) float64 {
	if c == 0 {
		return r + w
	}
	return w * (1 + s.m.CoherenceCost*float64(c))
}

func (s *search) serversFit() bool {
	for _, l := range s.server {
		if l > s.m.ServerCapacity*(1+tolerance) {
			return false
		}
	}
	return true
}

// nodesFit reports whether every node's load that the router cannot move
// (a single copy's reads, every copy's coherence work) is within its
// capacity, and the total within the nodes' total.
func (s *search) nodesFit() bool {
	limit := s.m.NodeCapacity * (1 + tolerance)
	for _, l := range s.fixed {
		if l > limit {
			return false
		}
	}
	return s.total <= limit*float64(len(s.fixed))
}
