package driver

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/workload"
)

// Labels deriving the two key permutations' seeds from Config.Seed. The
// base one is the simulator's, so that a prediction with the same seed has
// the same hot keys.
const (
	scrambleLabel        = "scramble"
	shiftedScrambleLabel = "scramble/shift"
)

// permutation maps Zipf ranks to key ids, a bijection of the key space.
type permutation interface {
	Permute(rank uint64) uint64
}

// keyMap maps Zipf ranks to key ids by one of two seeded permutations of the
// key space: the base one, or after a hot-set shift (Config.ShiftAt) the
// shifted one, which makes the hot keys cold and other keys hot with the
// same skew. It is safe for concurrent use: id costs one atomic load, and
// shift and unshift flip it.
type keyMap struct {
	base, shifted permutation
	baseSeed      uint64 // the base permutation's scrambler seed
	shiftedSeed   uint64 // the shifted one's
	isShifted     atomic.Bool
}

// newKeyMap returns the key map of a key space of n keys whose
// permutations' seeds derive from seed, mapping by the base permutation.
// With hotRacks > 0 both put the keys p stores in its first hotRacks racks
// first (hotRacksFirst).
func newKeyMap(n, seed uint64, p *partmap.Placement, hotRacks int) (*keyMap, error) {
	k := &keyMap{baseSeed: hashing.Derive(seed, scrambleLabel), shiftedSeed: hashing.Derive(seed, shiftedScrambleLabel)}
	base, err := workload.NewScrambler(n, k.baseSeed)
	if err != nil {
		return nil, fmt.Errorf("cannot create the key permutation: %w", err)
	}
	shifted, err := workload.NewScrambler(n, k.shiftedSeed)
	if err != nil {
		return nil, fmt.Errorf("cannot create the shifted key permutation: %w", err)
	}
	k.base, k.shifted = base, shifted
	if hotRacks > 0 {
		if racks := len(p.Map().Storage.Racks); hotRacks >= racks {
			return nil, fmt.Errorf("cannot put the hot set in %d racks: the cluster has %d, and the others would see no reads", hotRacks, racks)
		}
		k.base, k.shifted = hotRacksFirst(base, n, p, hotRacks), hotRacksFirst(shifted, n, p, hotRacks)
	}
	return k, nil
}

// id returns rank's key id by the current permutation.
func (k *keyMap) id(rank uint64) uint64 {
	if k.isShifted.Load() {
		return k.shifted.Permute(rank)
	}
	return k.base.Permute(rank)
}

// baseID and shiftedID return rank's key id by either permutation,
// whichever is current.
func (k *keyMap) baseID(rank uint64) uint64    { return k.base.Permute(rank) }
func (k *keyMap) shiftedID(rank uint64) uint64 { return k.shifted.Permute(rank) }

// shift makes the shifted permutation current, unshift the base one.
func (k *keyMap) shift()   { k.isShifted.Store(true) }
func (k *keyMap) unshift() { k.isShifted.Store(false) }

// rankTable is a permutation held as the key id of every rank.
type rankTable []uint64

func (t rankTable) Permute(rank uint64) uint64 { return t[rank] }

// hotRacksFirst is s reordered so that the keys p stores in racks below
// hotRacks take the lowest ranks, each group in s's order: the hot set
// lives on those racks' storage (one tenant's data on a few racks), so
// the rack-bound layer's nodes of those racks see the hot keys and the
// others only the tail, while an unbound layer's nodes see them all.
func hotRacksFirst(s permutation, n uint64, p *partmap.Placement, hotRacks int) rankTable {
	out := make(rankTable, 0, n)
	var rest []uint64
	for rank := range n {
		id := s.Permute(rank)
		if rack, _ := p.Shard(workload.Key(id)); rack < hotRacks {
			out = append(out, id)
		} else {
			rest = append(rest, id)
		}
	}
	return append(out, rest...)
}

// shiftRun shifts the hot set of a measured phase: the phase's dispatcher
// polls it before every issue, and the first issue at or after after into
// the phase makes the shifted permutation current, for every operation
// issued from then on. Only the dispatcher's goroutine calls poll, and the
// runner reads the fields once the dispatcher has returned; stop makes the
// base permutation current again for the phases after.
type shiftRun struct {
	keys    *keyMap
	start   time.Time
	after   time.Duration
	t       *tally           // the phase's counters
	clients []*client.Client // whose Stats count the hits (nil: none)

	shifted        bool
	at             time.Time
	atShift        tallyTotals  // the phase's counters at the shift
	st0, stAt, st1 clientTotals // the clients' at the phase's start, the shift and the end
}

// startShift prepares the shift, after the phase that started at start
// began, of the hot set of the phase whose counters are t and whose
// operations clients count.
func (r *runner) startShift(after time.Duration, start time.Time, t *tally, clients []*client.Client) *shiftRun {
	return &shiftRun{keys: r.keys, start: start, after: after, t: t, clients: clients, st0: sumStats(clients)}
}

// poll shifts the hot set if it is time at now and it has not shifted yet;
// it reports whether it did. A nil s never shifts.
func (s *shiftRun) poll(now time.Time) bool {
	if s == nil || s.shifted || now.Sub(s.start) < s.after {
		return false
	}
	s.stAt, s.atShift = sumStats(s.clients), s.t.load()
	s.keys.shift()
	s.shifted, s.at = true, now
	return true
}

// stop ends the phase's shift (a nil s is a phase without one): it reads
// the clients' final counters and makes the base permutation current.
func (s *shiftRun) stop() {
	if s == nil {
		return
	}
	s.st1 = sumStats(s.clients)
	s.keys.unshift()
}

// result summarises the shift of a phase that ran from start to end with
// final counters total and a timeline of bins of interval, with m's layer
// names for the hit ratios.
func (s *shiftRun) result(start, end time.Time, total tallyTotals, m *partmap.Map, interval time.Duration) *ShiftResult {
	res := &ShiftResult{ConfiguredAt: s.after.Seconds(), Shifted: s.shifted, Seed: s.keys.shiftedSeed,
		Interval: interval.Seconds()}
	if !s.shifted {
		return res
	}
	res.At = s.at.Sub(start).Seconds()
	res.Before = perSecond(s.atShift.answered(), res.At)
	res.After = perSecond(total.answered()-s.atShift.answered(), end.Sub(s.at).Seconds())
	res.HitRatioBefore = hitRatios(s.stAt.minus(s.st0), m)
	res.HitRatioAfter = hitRatios(s.st1.minus(s.stAt), m)
	return res
}

// hitRatios returns the share of st's reads served from a cached copy, per
// layer of m (by name) and "all".
func hitRatios(st clientTotals, m *partmap.Map) map[string]float64 {
	out := map[string]float64{"all": ratio(st.hits, st.gets)}
	for l, layer := range m.Layers {
		var hits uint64
		if l < len(st.layerHits) {
			hits = st.layerHits[l]
		}
		out[layer.Name] = ratio(hits, st.gets)
	}
	return out
}
