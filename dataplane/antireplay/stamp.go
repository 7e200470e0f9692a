package antireplay

import (
	"crypto/rand"
	"encoding/binary"
	"hash/fnv"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// SenderID is the sender a process stamps as: a hash of name, which
// names the process the same way across its restarts (a cache node's
// member, a shim's shard, with its port), or a random number when name
// is empty (a client: each start is a new sender).
func SenderID(name string) uint64 {
	if name == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		return binary.BigEndian.Uint64(b[:])
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// Stamper stamps the datagrams one sender signs: its id, its epoch (its
// start), a sequence number one higher each time, and the time. Safe for
// concurrent use; Stamp allocates nothing.
type Stamper struct {
	sender, epoch uint64
	seq           atomic.Uint64 // the last sequence number handed out
}

// NewStamper returns the stamper of sender for an epoch that starts at
// start. A restarted sender must start later than its previous run did:
// receivers refuse an epoch older than the latest they saw.
func NewStamper(sender uint64, start time.Time) *Stamper {
	return &Stamper{sender: sender, epoch: uint64(start.UnixNano())}
}

// Sender is the stamper's sender id.
func (s *Stamper) Sender() uint64 { return s.sender }

// Stamp returns the next stamp, taking the time now.
func (s *Stamper) Stamp() wire.Stamp {
	return wire.Stamp{Sender: s.sender, Epoch: s.epoch, Seq: s.seq.Add(1), Time: time.Now().UnixNano()}
}
