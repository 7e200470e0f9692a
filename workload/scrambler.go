package workload

import (
	"fmt"
	"math/bits"
	"strconv"

	"github.com/distcache/distcache/placement/hashing"
)

// feistelRounds is the number of Feistel rounds. It is even, so that the
// left and right halves of an unbalanced network end with their initial
// widths; four rounds already give a pseudo-random permutation for random
// round functions (Luby–Rackoff), six add margin for the non-adaptive,
// structured inputs (consecutive ranks) this package feeds it.
const feistelRounds = 6

// Scrambler is a seeded pseudo-random bijection on [0, n). It maps
// popularity ranks to key ids so that the hot ranks do not cluster by id.
//
// It is a Feistel network on the smallest power-of-two domain [0, 2^b)
// containing [0, n), with XXH3 round functions and cycle walking: a value
// whose image falls outside [0, n) is permuted again until it lands inside,
// which restricts the bijection of [0, 2^b) to a bijection of [0, n). Since
// 2^b < 2n, a call takes fewer than two network evaluations on average. A
// Scrambler is immutable and safe for concurrent use.
type Scrambler struct {
	n      uint64
	lw, rw uint // widths of the left (high) and right (low) halves; lw+rw = b
	round  [feistelRounds]hashing.Func
}

// NewScrambler returns the permutation of [0, n) selected by seed. It fails
// if n is 0.
func NewScrambler(n, seed uint64) (*Scrambler, error) {
	if n == 0 {
		return nil, fmt.Errorf("cannot create scrambler: %w: n = 0, want n >= 1", errInvalidParameter)
	}
	b := uint(bits.Len64(n - 1))
	s := &Scrambler{n: n, lw: (b + 1) / 2, rw: b / 2}
	for i := range s.round {
		s.round[i] = hashing.New(hashing.Derive(seed, "workload/scrambler/round/"+strconv.Itoa(i)))
	}
	return s, nil
}

// Permute returns the image of rank, a bijection of [0, n). It panics if
// rank >= n.
func (s *Scrambler) Permute(rank uint64) uint64 {
	if rank >= s.n {
		panic("workload: Scrambler.Permute: rank " + strconv.FormatUint(rank, 10) + " out of range [0, " + strconv.FormatUint(s.n, 10) + ")")
	}
	x := rank
	for {
		x = s.forward(x)
		if x < s.n {
			return x
		}
	}
}

// Invert returns the rank whose image is id: Invert(Permute(r)) == r. It
// panics if id >= n.
func (s *Scrambler) Invert(id uint64) uint64 {
	if id >= s.n {
		panic("workload: Scrambler.Invert: id " + strconv.FormatUint(id, 10) + " out of range [0, " + strconv.FormatUint(s.n, 10) + ")")
	}
	x := id
	for {
		x = s.backward(x)
		if x < s.n {
			return x
		}
	}
}

func mask(w uint) uint64 { return 1<<w - 1 }

// forward applies the network to x in [0, 2^b). A round maps the halves
// (L, R) of widths (wl, wr) to (R, L ^ F(R)) of widths (wr, wl).
func (s *Scrambler) forward(x uint64) uint64 {
	wl, wr := s.lw, s.rw
	l, r := x>>wr, x&mask(wr)
	for i := range s.round {
		l, r = r, (l^s.round[i].Uint64(r))&mask(wl)
		wl, wr = wr, wl
	}
	return l<<wr | r
}

// backward is the inverse of forward: it undoes the rounds in reverse.
func (s *Scrambler) backward(y uint64) uint64 {
	wl, wr := s.lw, s.rw
	l, r := y>>wr, y&mask(wr)
	for i := len(s.round) - 1; i >= 0; i-- {
		// (l, r) of widths (wl, wr) came from (l0, r0) of widths (wr, wl)
		// with l = r0 and r = (l0 ^ F(r0)) masked to wr bits.
		l, r = (r^s.round[i].Uint64(l))&mask(wr), l
		wl, wr = wr, wl
	}
	return l<<wr | r
}
