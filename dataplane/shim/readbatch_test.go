package shim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/internal/testing/wiretest"
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
	peer := wiretest.NewPeer(t)
	gets := make([]string, keys+1)
	for i := range gets {
		gets[i] = fmt.Sprintf("k%d", i%keys)
	}
	peer.SendGets(e.shim.Addr(), gets...)
	if err := e.shim.Start(); err != nil {
		t.Fatal(err)
	}
	for range gets {
		rep := peer.Read(patience)
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
