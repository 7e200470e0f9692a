package shim

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// TestGetsOfOneBatchServedTogether queues GETs in the shim's socket before
// it starts, so that its reader receives them in one batch: eight keys,
// the first of them twice. They are served together — one Redis read per
// distinct key, in one round trip — and each gets its own key's value.
func TestGetsOfOneBatchServedTogether(t *testing.T) {
	const keys = 8
	e := newEnv(t, withoutStart(), withConfig(func(c *Config) { c.Transport.Readers = 1 })) // one reader: one receive batch
	for i := range keys {
		if err := e.rdb.Set(t.Context(), fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range keys + 1 {
		m := wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: uint64(i + 1)}, Key: []byte(fmt.Sprintf("k%d", i%keys))}
		d, err := wire.Encode(&m, wire.DefaultDatagram)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteToUDPAddrPort(d, e.shim.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.shim.Start(); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, wire.MaxDatagram)
	for range keys + 1 {
		n, _, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := wire.Decode(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("v%d", (rep.Seq-1)%keys); rep.Op != wire.OpGetReply || rep.Status != wire.StatusOK || string(rep.Value) != want {
			t.Errorf("GET %d: %s %s %q, want GET_REPLY OK %q", rep.Seq, rep.Op, rep.Status, rep.Value, want)
		}
	}
	if s := e.shim.Stats(); s.Gets != keys+1 || s.ReadBatches != 1 || s.BatchedReads != keys+1 || s.CoalescedGets != 1 {
		t.Errorf("stats: %d GETs, %d batches of %d, %d coalesced; want %d GETs in 1 batch, 1 coalesced",
			s.Gets, s.ReadBatches, s.BatchedReads, s.CoalescedGets, keys+1)
	}
	stats, err := e.rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("cmdstat_get:calls=%d,", keys); !strings.Contains(stats, want) {
		t.Errorf("Redis commandstats %q, want %s (a read per distinct key)", stats, want)
	}
}
