package transport_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
)

// listenServed starts a server whose handler records the sequence numbers
// it serves, and returns them as they come.
func listenServed(t *testing.T, opts ...func(*transport.Config)) (*transport.Endpoint, <-chan uint64) {
	t.Helper()
	seqs := make(chan uint64, 64)
	server := listen(t, func(_ transport.Sender, _ netip.AddrPort, req *wire.Message) { seqs <- req.Seq }, opts...)
	return server, seqs
}

// servedSeqs starts server, not started yet, with a handler that records
// the sequence numbers it serves, and returns them as they come.
func servedSeqs(server *transport.Endpoint) <-chan uint64 {
	seqs := make(chan uint64, 64)
	server.Start(func(_ transport.Sender, _ netip.AddrPort, req *wire.Message) { seqs <- req.Seq })
	return seqs
}

// until reads seqs up to and including seq.
func until(t *testing.T, seqs <-chan uint64, seq uint64) []uint64 {
	t.Helper()
	var got []uint64
	for len(got) == 0 || got[len(got)-1] != seq {
		select {
		case s := <-seqs:
			got = append(got, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("seq %d was not served; got %v", seq, got)
		}
	}
	return got
}

// TestBundleRecordsServedAlone sends a bundle of three GETs from a raw
// socket: each is served and answered as if it had come alone, and the
// replies to the one client come back bundled by a server that bundles.
func TestBundleRecordsServedAlone(t *testing.T) {
	server := listen(t, replyInPlace, func(c *transport.Config) { c.Bundle = true })
	client := rawClient(t, "udp4", "127.0.0.1:0")
	b := wire.AppendBundle(nil, getDatagram(t, 1), getDatagram(t, 2), getDatagram(t, 3))
	if _, err := client.WriteToUDPAddrPort(b, server.Addr()); err != nil {
		t.Fatal(err)
	}
	if seen := readReplies(t, client, 3); seen[1] != 1 || seen[2] != 1 || seen[3] != 1 {
		t.Fatalf("replies %v, want seqs 1, 2 and 3 once", seen)
	}
	waitFor(t, func() bool { s := server.Stats(); return s.MessagesOut() == 3 })
	s := server.Stats()
	if s.DatagramsIn != 1 || s.BundlesIn != 1 || s.BundledIn != 3 || s.MessagesIn() != 3 || s.Malformed != 0 {
		t.Fatalf("stats %+v, want one bundle of 3 messages in", s)
	}
	if s.BundlesOut != 1 || s.BundledOut != 3 {
		t.Fatalf("stats %+v, want the 3 replies in one bundle", s)
	}
}

// TestMalformedBundlesAreDroppedWhole sends bad bundles and then a good
// GET: no record of a bad bundle is served, each bad bundle is counted
// once, and the server goes on serving.
func TestMalformedBundlesAreDroppedWhole(t *testing.T) {
	good := wire.AppendBundle(nil, getDatagram(t, 1), getDatagram(t, 2))
	cut := slices.Clone(good[:len(good)-1]) // the declared length no longer matches
	nested := wire.AppendBundle(nil, getDatagram(t, 3), good)
	single := wire.AppendBundle(nil, getDatagram(t, 4))
	badRecord := wire.AppendBundle(nil, getDatagram(t, 5), []byte("this is no datagram of ours, but long enough to pass as a header length!"))
	for _, urgent := range []bool{false, true} {
		cfg := func(*transport.Config) {}
		if urgent {
			cfg = func(c *transport.Config) { c.Urgent = func(op wire.Op) bool { return op == wire.OpInvalidate } }
		}
		server, seqs := listenServed(t, cfg)
		client := rawClient(t, "udp4", "127.0.0.1:0")
		for _, b := range [][]byte{cut, nested, single, badRecord, getDatagram(t, 9)} {
			if _, err := client.WriteToUDPAddrPort(b, server.Addr()); err != nil {
				t.Fatal(err)
			}
		}
		// The bad record's bundle is well formed: its GET 5 is served and
		// the record that does not parse is counted.
		got := until(t, seqs, 9)
		if !slices.Equal(got, []uint64{5, 9}) {
			t.Fatalf("urgent %v: served %v, want 5 and 9 only", urgent, got)
		}
		waitFor(t, func() bool { return server.Stats().Malformed == 4 })
		if s := server.Stats(); s.BundlesIn != 1 || s.DatagramsIn != 5 {
			t.Fatalf("urgent %v: stats %+v, want 5 datagrams, 1 bundle taken, 4 malformed", urgent, s)
		}
	}
}

// TestBundledRecordsAreVerifiedAlone bundles a signed PUT with a PUT whose
// tag is wrong and an unsigned one: the receiver with the key serves the
// signed one and rejects the others, exactly as if each had come alone.
func TestBundledRecordsAreVerifiedAlone(t *testing.T) {
	right, err := wireauth.New(clusterKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := wireauth.New(otherKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func(seq uint64) *wire.Message {
		return &wire.Message{Header: wire.Header{Op: wire.OpPut, Seq: seq}, Key: []byte("k"), Value: []byte("v")}
	}
	signed, _, err := wire.AppendSignedDatagram(nil, put(1), 0, wire.DefaultDatagram, right)
	if err != nil {
		t.Fatal(err)
	}
	forged, _, err := wire.AppendSignedDatagram(nil, put(2), 0, wire.DefaultDatagram, wrong)
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := wire.Encode(put(3), wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	server, seqs := listenServed(t, withAuth(t, clusterKey, nil))
	client := rawClient(t, "udp4", "127.0.0.1:0")
	b := wire.AppendBundle(nil, forged, signed, unsigned, getDatagram(t, 4))
	if _, err := client.WriteToUDPAddrPort(b, server.Addr()); err != nil {
		t.Fatal(err)
	}
	if got := until(t, seqs, 4); !slices.Equal(got, []uint64{1, 4}) {
		t.Fatalf("served %v, want the signed PUT 1 and the GET 4", got)
	}
	if n := server.Stats().MACRejected[wire.OpPut]; n != 2 {
		t.Fatalf("MACRejected[PUT] = %d, want 2 (the forged and the unsigned record)", n)
	}
}
