package antireplay_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/antireplay"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
)

// BenchmarkSignedPut is a receiver's work on one signed 100-byte PUT
// datagram: the sender encodes and signs it, the receiver parses it and
// verifies its tag and, stamped, its stamp. "unstamped" is the path of
// versions before stamps.
func BenchmarkSignedPut(b *testing.B) {
	k, err := wireauth.New([]byte("bench-key-0123456789abcdef"), nil)
	if err != nil {
		b.Fatal(err)
	}
	m := wire.Message{Header: wire.Header{Op: wire.OpPut, Seq: 1}, Key: []byte("key:42"), Value: make([]byte, 100)}
	buf := make([]byte, 0, wire.DefaultDatagram)
	for _, stamped := range []bool{false, true} {
		name := map[bool]string{false: "unstamped", true: "stamped"}[stamped]
		b.Run(name, func(b *testing.B) {
			stamps := antireplay.NewStamper(1, time.Now())
			flt := antireplay.New(antireplay.Config{})
			b.ReportAllocs()
			for b.Loop() {
				var d []byte
				if stamped {
					st := stamps.Stamp()
					d, _, err = wire.AppendStampedDatagram(buf[:0], &m, 0, wire.DefaultDatagram, k, &st)
				} else {
					d, _, err = wire.AppendSignedDatagram(buf[:0], &m, 0, wire.DefaultDatagram, k)
				}
				if err != nil {
					b.Fatal(err)
				}
				p, err := wire.Parse(d)
				if err != nil {
					b.Fatal(err)
				}
				data, tag, _ := wire.Signed(d)
				if !k.Verify(data, tag) || p.Stamped && flt.Accept(p.Stamp) != antireplay.Accepted {
					b.Fatal("refused")
				}
			}
		})
	}
}

// BenchmarkAccept is Filter.Accept alone, one sender in order, and with
// 64 senders from 4 goroutines.
func BenchmarkAccept(b *testing.B) {
	b.Run("one sender", func(b *testing.B) {
		flt := antireplay.New(antireplay.Config{})
		st := wire.Stamp{Sender: 1, Epoch: 1, Time: time.Now().UnixNano()}
		b.ReportAllocs()
		for b.Loop() {
			st.Seq++
			if flt.Accept(st) != antireplay.Accepted {
				b.Fatal("refused")
			}
		}
	})
	b.Run("64 senders parallel", func(b *testing.B) {
		flt := antireplay.New(antireplay.Config{})
		now := time.Now().UnixNano()
		var next atomic.Uint64
		b.ReportAllocs()
		b.SetParallelism(1)
		b.RunParallel(func(pb *testing.PB) {
			stamps := make([]wire.Stamp, 16)
			base := next.Add(16)
			for i := range stamps {
				stamps[i] = wire.Stamp{Sender: base + uint64(i) + 1, Epoch: 1, Time: now}
			}
			i := 0
			for pb.Next() {
				st := &stamps[i%len(stamps)]
				st.Seq++
				flt.Accept(*st)
				i++
			}
		})
	})
}

// TestAcceptAllocatesNothing: once a sender is tracked, Accept and Stamp
// allocate nothing.
func TestAcceptAllocatesNothing(t *testing.T) {
	flt := antireplay.New(antireplay.Config{})
	stamps := antireplay.NewStamper(7, time.Now().Add(-time.Millisecond))
	flt.Accept(stamps.Stamp())
	if n := testing.AllocsPerRun(1000, func() { flt.Accept(stamps.Stamp()) }); n != 0 {
		t.Errorf("Stamp and Accept allocate %v times", n)
	}
}
