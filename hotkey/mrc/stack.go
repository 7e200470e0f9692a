package mrc

import "math"

// noKey marks a free timestamp in reuseStack.keyAt. It cannot be the hash of
// a sampled key: a key is sampled only if its hash is below the threshold,
// and the threshold is at most math.MaxUint64.
const noKey = math.MaxUint64

// reuseStack computes the LRU stack distances of the sampled keys (Olken's
// method): every sampled key holds one timestamp, that of its last
// reference, and a Fenwick tree counts the occupied timestamps, so the
// number of distinct sampled keys referenced since a key's previous
// reference is a prefix-sum query, O(log capacity).
//
// Timestamps advance by one per sampled reference. When they reach the
// capacity (at least twice the maximum number of keys), the live timestamps
// are renumbered 0, 1, … in the same order and the tree is rebuilt, in
// O(capacity); at most half of the capacity is live at that point, so this
// happens at most once per capacity/2 references and costs O(1) amortised.
type reuseStack struct {
	stamp  map[uint64]uint32 // key hash → timestamp of its last reference
	keyAt  []uint64          // timestamp → key hash, or noKey
	counts fenwick           // 1 at every live timestamp
	now    uint32            // next timestamp to hand out
}

func newReuseStack(maxKeys int) reuseStack {
	capacity := max(2*maxKeys+2, 64)
	s := reuseStack{
		stamp:  make(map[uint64]uint32, maxKeys+1),
		keyAt:  make([]uint64, capacity),
		counts: newFenwick(capacity),
	}
	s.reset()
	return s
}

func (s *reuseStack) reset() {
	clear(s.stamp)
	for i := range s.keyAt {
		s.keyAt[i] = noKey
	}
	s.counts.reset()
	s.now = 0
}

// len returns the number of keys in the stack.
func (s *reuseStack) len() int { return len(s.stamp) }

// access moves key to the top of the stack. For a key already present it
// returns its stack distance before the move (1 if it was on top) and true;
// for a new key it returns false.
func (s *reuseStack) access(key uint64) (distance int, found bool) {
	if int(s.now) == len(s.keyAt) {
		s.compact()
	}
	last, found := s.stamp[key]
	if found {
		distance = len(s.stamp) - s.counts.prefix(int(last))
		s.counts.add(int(last), -1)
		s.keyAt[last] = noKey
	}
	s.stamp[key] = s.now
	s.keyAt[s.now] = key
	s.counts.add(int(s.now), 1)
	s.now++
	return distance, found
}

// remove deletes key from the stack; it must be present.
func (s *reuseStack) remove(key uint64) {
	last := s.stamp[key]
	delete(s.stamp, key)
	s.counts.add(int(last), -1)
	s.keyAt[last] = noKey
}

// compact renumbers the live timestamps densely from 0, keeping their order.
func (s *reuseStack) compact() {
	var next uint32
	for t := range s.now {
		key := s.keyAt[t]
		if key == noKey {
			continue
		}
		s.keyAt[t] = noKey
		s.keyAt[next] = key
		s.stamp[key] = next
		next++
	}
	s.counts.setOnes(int(next))
	s.now = next
}

// fenwick is a binary indexed tree of counts over positions 0..n-1.
type fenwick struct {
	tree []int32 // 1-based: tree[i] sums positions (i - i&-i, i]
}

func newFenwick(n int) fenwick { return fenwick{tree: make([]int32, n+1)} }

func (f *fenwick) reset() { clear(f.tree) }

// add adds delta to position i.
func (f *fenwick) add(i int, delta int32) {
	for i++; i < len(f.tree); i += i & -i {
		f.tree[i] += delta
	}
}

// prefix returns the sum of positions 0..i-1.
func (f *fenwick) prefix(i int) int {
	var sum int32
	for ; i > 0; i -= i & -i {
		sum += f.tree[i]
	}
	return int(sum)
}

// setOnes makes positions 0..n-1 one and the rest zero, in O(len).
func (f *fenwick) setOnes(n int) {
	clear(f.tree)
	for i := 1; i < len(f.tree); i++ {
		if i <= n {
			f.tree[i]++
		}
		if j := i + i&-i; j < len(f.tree) {
			f.tree[j] += f.tree[i]
		}
	}
}
