package shim

import (
	"net"
	"strings"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// TestFirstDatagramSkipsTheScript sends a PUT's first datagram
// (wire.FlagFirst): the shim applies it with an MSET, without the
// applied-mark script, and still marks it, so that a later run of the shim
// acknowledges the PUT's retransmission without applying it again after a
// later write.
func TestFirstDatagramSkipsTheScript(t *testing.T) {
	e := newEnv(t)
	key := e.key(0, "first")
	raw := newRawConn(t)
	put := func(flags wire.Flag) {
		t.Helper()
		d, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpPut, Flags: flags, Seq: 42}, Key: []byte(key), Value: []byte("v1")}, wire.DefaultDatagram)
		if err != nil {
			t.Fatal(err)
		}
		raw.send(e.shim.Addr(), d)
		if r := raw.receive(); r.Status != wire.StatusOK || r.Seq != 42 {
			t.Fatalf("PUT (flags %#x): %s seq %d", flags, r.Status, r.Seq)
		}
	}
	put(wire.FlagFirst)
	if got := e.redisValue(key); got != "v1" {
		t.Fatalf("Redis holds %q, want v1", got)
	}
	stats, err := e.rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stats, "cmdstat_evalsha") || strings.Contains(stats, "cmdstat_eval:") || !strings.Contains(stats, "cmdstat_mset:calls=1,") {
		t.Errorf("Redis commandstats %q: want one MSET and no script", stats)
	}
	mark := appliedKey(dedupKey{src: raw.conn.LocalAddr().(*net.UDPAddr).AddrPort(), seq: 42, op: wire.OpPut})
	if ttl := e.redisTTL(mark); ttl <= 0 {
		t.Fatalf("the PUT's mark %s has TTL %v, want one", mark, ttl)
	}
	e.restart()
	e.mustStatus(wire.OpPut, key, []byte("v2"), wire.StatusOK)
	put(0) // its retransmission reaches the restarted shim
	if got := e.redisValue(key); got != "v2" {
		t.Errorf("the retransmit was applied again: Redis holds %q, want the later write", got)
	}
	if st := e.shim.Stats(); st.AlreadyApplied != 1 {
		t.Errorf("stats %+v: want 1 write already applied", st)
	}
}
