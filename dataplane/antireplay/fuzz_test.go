package antireplay_test

import (
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/antireplay"
	"github.com/distcache/distcache/dataplane/wire"
)

// FuzzFilter feeds a small filter (two senders tracked, so it forgets
// often) any sequence of stamps of four senders, each of up to four
// epochs, and checks the two safety properties of the package comment:
// no stamp is accepted twice, and once a sender's epoch is accepted no
// stamp of an older epoch of it is. Each two input bytes are a stamp;
// its time grows with its epoch and sequence number, as a sender's clock
// does.
func FuzzFilter(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 1, 4, 1, 0, 3})
	f.Add([]byte{0, 200, 1, 1, 2, 1, 3, 1, 0, 199, 0, 200, 4, 1, 0, 201})
	f.Fuzz(func(t *testing.T, in []byte) {
		flt := antireplay.New(antireplay.Config{Senders: 2, Shards: 1, Start: time.Unix(0, 0), Skew: -1})
		type id struct{ sender, epoch, seq uint64 }
		accepted := map[id]bool{}
		newest := map[uint64]uint64{} // sender → newest epoch accepted
		for i := 0; i+1 < len(in); i += 2 {
			sender, epoch, seq := uint64(in[i]&3), uint64(in[i]>>2&3)+1, uint64(in[i+1])
			st := wire.Stamp{Sender: sender, Epoch: epoch, Seq: seq, Time: int64(epoch<<20 | seq)}
			if flt.Accept(st) != antireplay.Accepted {
				continue
			}
			k := id{sender, epoch, seq}
			if accepted[k] {
				t.Fatalf("stamp %+v accepted twice", st)
			}
			if epoch < newest[sender] {
				t.Fatalf("stamp %+v of epoch %d accepted after epoch %d", st, epoch, newest[sender])
			}
			accepted[k] = true
			newest[sender] = max(newest[sender], epoch)
		}
	})
}
