package cacheswitch_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
)

// spine is a cluster whose spine is one software switch with its first
// controller, and a client endpoint that reads straight from the switch.
type spine struct {
	c      *clustertest.Cluster
	member string
	sw     *switchtest.Member
	ep     *transport.Endpoint
}

func startSpine(t *testing.T) *spine {
	t.Helper()
	c := clustertest.Start(t, clustertest.Config{
		Name: "takeover", Racks: 1, ShardsPerRack: 1, Spine: 1, SwitchSpine: true,
		Switch: switchtest.Config{Interval: 50 * time.Millisecond, Controller: func(c *cacheswitch.Config) { c.HotThreshold = 2 }},
	})
	member := c.Members(0)[0]
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ep.Start(nil)
	t.Cleanup(func() { ep.Close() })
	return &spine{c: c, member: member, sw: c.Switches()[member], ep: ep}
}

// hit reads key at the switch's read port of its shard and says whether
// the switch answered from its cache.
func (s *spine) hit(key string) (bool, error) {
	p := s.c.Placement()
	sw := s.sw.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := s.ep.Call(ctx, netip.AddrPortFrom(sw.Addr(), partmap.SwitchReadPort(sw.Port(), p.ShardIndex(key))),
		&wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte(key)})
	return err == nil && r.Has(wire.FlagHit), err
}

// cached writes key and reads it at the switch until the switch serves
// it from its cache.
func (s *spine) cached(t *testing.T, key string) {
	t.Helper()
	if err := s.c.NewClient(client.Config{}).Put(t.Context(), key, []byte("value of "+key)); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, fmt.Sprintf("%s served from the switch's cache", key), func() (bool, error) { return s.hit(key) })
}

// switchState is what must not change across a takeover: the pipeline's
// cookie and how many pipelines the switch installed.
func switchState(sw *softswitch.Switch) (cookie, installs uint64) {
	_, cookie, _ = sw.Pipeline()
	return cookie, sw.Stats().PipelineInstalls.Load()
}

// TestBackupTakesOverWithoutEmptying: two controllers of one switch; the
// first is primary and caches a key; when its session closes (its
// process died) the backup becomes primary without pushing the pipeline
// — the switch's cookie and pipeline count unchanged — keeps the slot
// (inserting nothing) and renews the lease, and the switch goes on
// serving the key from that slot.
func TestBackupTakesOverWithoutEmptying(t *testing.T) {
	s := startSpine(t)
	backup := s.sw.StartController(t, s.member, 2, nil)
	s.cached(t, "hot")
	poll.Until(t, "the second controller waiting as a backup", func() bool {
		st := backup.Runner.State()
		return !st.Programmed && st.Err != nil && !st.Claiming
	})
	cookie, installs := switchState(s.sw.Switch())
	hits := s.sw.Switch().Stats().Hits.Load()

	s.sw.StopRunner()
	poll.Until(t, "the backup primary", func() bool { return backup.Runner.State().Programmed })
	if st := backup.Runner.State(); st.Sessions != 1 || st.Pushes != 0 {
		t.Fatalf("backup state %+v: want one session, no pipeline pushed", st)
	}
	if c, n := switchState(s.sw.Switch()); c != cookie || n != installs {
		t.Fatalf("cookie %d → %d, pipelines installed %d → %d: the takeover pushed the pipeline", cookie, c, installs, n)
	}
	ctl := backup.Runner.Controller()
	if ctl.Keys() != 1 {
		t.Fatalf("the backup took over %d keys, want the cached one", ctl.Keys())
	}
	poll.Eventually(t, "the backup renewed the lease", func() (bool, error) { return ctl.Stats().Renewals.Load() > 0, nil })
	poll.Eventually(t, "hits after the takeover", func() (bool, error) { return s.hit("hot") })
	if s.sw.Switch().Stats().Hits.Load() <= hits {
		t.Error("no hit counted after the takeover")
	}
	if n := ctl.Stats().Inserted.Load(); n != 0 {
		t.Errorf("the backup inserted %d keys: the hit did not come from the kept slot", n)
	}
}

// TestTakeoverAfterTheLeaseRanOut: the primary's session closes and the
// switch's lease runs out before another controller takes the switch
// over. The copies stayed coherent — the shims invalidate the switch as
// long as their maps make it an owner — so with the map unchanged the
// new primary keeps them; but when map versions went by that no
// controller applied (here the member was fenced, which lets the shims
// release it, and then made Active again), it releases every key before
// its first renewal.
func TestTakeoverAfterTheLeaseRanOut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fence  bool
		kept   int
		evicts uint64
	}{
		{"map unchanged: kept", false, 1, 0},
		{"fenced and restored meanwhile: released", true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSpine(t)
			s.cached(t, "hot")
			cookie, installs := switchState(s.sw.Switch())
			s.sw.StopRunner()
			poll.Eventually(t, "the lease ran out: the read relayed", func() (bool, error) {
				hit, err := s.hit("hot")
				return !hit && err == nil, err
			})
			if tc.fence {
				for _, st := range []partmap.MemberState{partmap.Fenced, partmap.Active} {
					if err := s.c.SetState(s.member, st); err != nil {
						t.Fatal(err)
					}
				}
			}
			next := s.sw.StartController(t, s.member, 2, nil)
			poll.Until(t, "the new controller primary", func() bool { return next.Runner.State().Programmed })
			ctl := next.Runner.Controller()
			poll.Eventually(t, "the new controller renewed", func() (bool, error) { return ctl.Stats().Renewals.Load() > 0, nil })
			if c, n := switchState(s.sw.Switch()); c != cookie || n != installs {
				t.Fatalf("the takeover pushed the pipeline (cookie %d → %d, installs %d → %d)", cookie, c, installs, n)
			}
			if got, evicted := ctl.Keys(), ctl.Stats().Evicted.Load(); ctl.Stats().Inserted.Load() == 0 && (got != tc.kept || evicted != tc.evicts) {
				t.Errorf("after the first renewal: %d keys, %d evicted; want %d and %d", got, evicted, tc.kept, tc.evicts)
			}
			if evicted := ctl.Stats().Evicted.Load(); evicted != tc.evicts {
				t.Errorf("%d keys released, want %d", evicted, tc.evicts)
			}
		})
	}
}
