package wire_test

import (
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// BenchmarkParseGet parses a hit path's GET and encodes its reply: the
// wire work a cache node does per hit.
func BenchmarkParseGet(b *testing.B) {
	get, err := wire.Encode(msg(withOp(wire.OpGet), withSeq(1)), wire.DefaultDatagram)
	if err != nil {
		b.Fatal(err)
	}
	reply := msg(withOp(wire.OpGetReply), withSeq(1), withValue(repeat(0xAB, 100)), withFlags(wire.FlagHit))
	buf := make([]byte, 0, wire.DefaultDatagram)
	b.ReportAllocs()
	for b.Loop() {
		p, err := wire.Parse(get)
		if err != nil || p.Op != wire.OpGet {
			b.Fatal(err)
		}
		if buf, _, err = wire.AppendDatagram(buf[:0], reply, 0, wire.DefaultDatagram); err != nil {
			b.Fatal(err)
		}
	}
}
