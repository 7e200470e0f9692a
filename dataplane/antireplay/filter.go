package antireplay

import (
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// Defaults of Config.
const (
	// DefaultSenders bounds the senders a Filter tracks.
	DefaultSenders = 4096
	// DefaultSkew is how much earlier than the receiver's start a
	// datagram may be stamped and still be accepted from a sender the
	// receiver does not track yet: room for clocks that run behind.
	DefaultSkew = 250 * time.Millisecond
)

// DefaultShards is how many independently locked parts a Filter has by
// default, so that readers of one socket seldom wait for each other.
const DefaultShards = 16

// Verdict is what a Filter does with a stamp.
type Verdict uint8

// Verdicts.
const (
	Accepted    Verdict = iota
	Duplicate           // the sequence number was accepted already
	TooOld              // WindowLen or more behind the highest accepted
	OldEpoch            // an epoch older than the sender's latest seen
	BeforeFloor         // stamped no later than the time the filter vouches from
)

func (v Verdict) String() string {
	switch v {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case TooOld:
		return "too_old"
	case OldEpoch:
		return "old_epoch"
	case BeforeFloor:
		return "before_floor"
	}
	return "unknown"
}

// Config configures a Filter.
type Config struct {
	// Senders bounds the senders tracked (default DefaultSenders); past
	// it the one stamped longest ago is forgotten.
	Senders int
	// Skew is DefaultSkew when zero; negative is none.
	Skew time.Duration
	// Start is the receiver's start (default: when New is called).
	Start time.Time
	// Shards is the number of independently locked parts, each with its
	// share of Senders (default DefaultShards).
	Shards int
}

// Stats counts a Filter's verdicts and senders.
type Stats struct {
	Accepted, Duplicates, TooOld, OldEpochs, BeforeFloor uint64
	NewEpochs                                            uint64 // senders seen to restart (a newer epoch accepted)
	Evictions                                            uint64 // senders forgotten to make room
	Senders                                              int    // senders tracked now
}

// Rejected is the number of stamps refused.
func (s Stats) Rejected() uint64 { return s.Duplicates + s.TooOld + s.OldEpochs + s.BeforeFloor }

// Filter is a receiver's memory of its senders' stamps: per sender, the
// latest epoch and its Window. Safe for concurrent use; Accept takes one
// shard's lock and allocates nothing once a sender is tracked.
type Filter struct {
	shards []shard
}

type shard struct {
	mu sync.Mutex // guards every field below
	// index maps a sender to its slot in entries.
	index   map[uint64]int32
	entries []entry
	limit   int
	// floor (Unix ns): a sender this shard does not track must have
	// stamped after it. It starts at the receiver's start less the skew
	// and rises to the latest time of every sender forgotten.
	floor int64
	stats Stats // Senders unused
	_     [64]byte
}

// entry is what a shard knows of one sender.
type entry struct {
	sender, epoch uint64
	// floor is the shard's floor when the entry was made: every datagram
	// of the sender accepted before (by an entry since forgotten) was
	// stamped no later than it.
	floor int64
	last  int64 // the latest stamp time accepted
	w     Window
}

// New returns a Filter.
func New(cfg Config) *Filter {
	if cfg.Senders <= 0 {
		cfg.Senders = DefaultSenders
	}
	if cfg.Skew == 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShards
	}
	limit := max(1, (cfg.Senders+cfg.Shards-1)/cfg.Shards)
	f := &Filter{shards: make([]shard, cfg.Shards)}
	for i := range f.shards {
		sh := &f.shards[i]
		sh.limit = limit
		sh.index = make(map[uint64]int32, limit)
		sh.entries = make([]entry, 0, limit)
		sh.floor = cfg.Start.Add(-max(cfg.Skew, 0)).UnixNano()
	}
	return f
}

func (f *Filter) shard(sender uint64) *shard {
	return &f.shards[(sender*0x9E3779B97F4A7C15>>32)%uint64(len(f.shards))]
}

// Accept decides on stamp st of a datagram whose tag was verified, and
// remembers it when it is Accepted.
func (f *Filter) Accept(st wire.Stamp) Verdict {
	sh := f.shard(st.Sender)
	sh.mu.Lock()
	v := sh.accept(&st)
	sh.mu.Unlock()
	return v
}

func (sh *shard) accept(st *wire.Stamp) Verdict {
	i, ok := sh.index[st.Sender]
	if !ok {
		if st.Time <= sh.floor {
			sh.stats.BeforeFloor++
			return BeforeFloor
		}
		e, floor := sh.add(st.Sender)
		*e = entry{sender: st.Sender, epoch: st.Epoch, floor: floor, last: st.Time}
		e.w.Start(st.Seq)
		sh.stats.Accepted++
		return Accepted
	}
	e := &sh.entries[i]
	var v Verdict
	switch {
	case st.Time <= e.floor:
		v = BeforeFloor
	case st.Epoch < e.epoch:
		v = OldEpoch
	case st.Epoch > e.epoch:
		e.epoch = st.Epoch
		e.w.Start(st.Seq)
		sh.stats.NewEpochs++
	default:
		v = e.w.Accept(st.Seq)
	}
	switch v {
	case Accepted:
		sh.stats.Accepted++
		e.last = max(e.last, st.Time)
	case Duplicate:
		sh.stats.Duplicates++
	case TooOld:
		sh.stats.TooOld++
	case OldEpoch:
		sh.stats.OldEpochs++
	case BeforeFloor:
		sh.stats.BeforeFloor++
	}
	return v
}

// add returns the slot of a new entry for sender and the floor the entry
// keeps: the shard's floor before it made room. A full shard forgets the
// sender stamped longest ago and raises its floor to that sender's
// latest time, so that none of the forgotten sender's datagrams is
// accepted again.
func (sh *shard) add(sender uint64) (*entry, int64) {
	floor := sh.floor
	if len(sh.entries) < sh.limit {
		sh.entries = append(sh.entries, entry{})
		i := len(sh.entries) - 1
		sh.index[sender] = int32(i)
		return &sh.entries[i], floor
	}
	old := 0
	for i := range sh.entries {
		if sh.entries[i].last < sh.entries[old].last {
			old = i
		}
	}
	e := &sh.entries[old]
	delete(sh.index, e.sender)
	sh.floor = max(sh.floor, e.last)
	sh.stats.Evictions++
	sh.index[sender] = int32(old)
	return e, floor
}

// Stats returns the counters, summed over the shards.
func (f *Filter) Stats() Stats {
	var st Stats
	for i := range f.shards {
		sh := &f.shards[i]
		sh.mu.Lock()
		s := sh.stats
		st.Senders += len(sh.entries)
		sh.mu.Unlock()
		st.Accepted += s.Accepted
		st.Duplicates += s.Duplicates
		st.TooOld += s.TooOld
		st.OldEpochs += s.OldEpochs
		st.BeforeFloor += s.BeforeFloor
		st.NewEpochs += s.NewEpochs
		st.Evictions += s.Evictions
	}
	return st
}
