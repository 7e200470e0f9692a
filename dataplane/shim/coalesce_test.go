package shim

import (
	"context"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// unitGate stands in for the emulated capacity: the first read waits for
// its unit until the test opens the gate, and gets it or not as the test
// says.
type unitGate struct {
	waiting chan struct{} // receives when a read starts waiting
	open    chan bool     // the unit, or not
}

func (g *unitGate) take(time.Time) bool {
	g.waiting <- struct{}{}
	return <-g.open
}

// TestQueuedGetsShareOneRead checks that GETs of a key that arrive while
// another GET of it waits for its work unit are answered by that GET's
// Redis read, charged nothing more, and shed with it when it is shed;
// while a GET of another key reads on its own.
func TestQueuedGetsShareOneRead(t *testing.T) {
	for _, tt := range []struct {
		name       string
		unit       bool
		wantStatus wire.Status
	}{
		{name: "served", unit: true, wantStatus: wire.StatusOK},
		{name: "shed", unit: false, wantStatus: wire.StatusOverloaded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := &unitGate{waiting: make(chan struct{}, 8), open: make(chan bool, 8)}
			e := newEnv(t, withShimHook(func(s *Shim) { s.takeUnit = g.take }))
			key := e.key(0, "shared")
			if err := e.rdb.Set(context.Background(), key, "stored", 0).Err(); err != nil {
				t.Fatal(err)
			}
			readers := make([]*transport.Endpoint, 3)
			for i := range readers {
				ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
				if err != nil {
					t.Fatal(err)
				}
				ep.Start(nil)
				t.Cleanup(func() { _ = ep.Close() })
				readers[i] = ep
			}
			replies := make(chan wire.Message, len(readers))
			get := func(ep *transport.Endpoint) {
				go func() {
					r, err := e.tryCall(ep, wire.OpGet, key, nil)
					if err != nil {
						t.Error(err)
					}
					replies <- r
				}()
			}
			get(readers[0])
			receive(t, g.waiting) // the first read waits for its unit
			get(readers[1])
			get(readers[2])
			eventually(t, "two GETs to join the waiting read", func() bool { return e.shim.Stats().CoalescedGets == 2 })
			g.open <- tt.unit
			for range readers {
				if r := receive(t, replies); r.Status != tt.wantStatus || tt.unit && string(r.Value) != "stored" {
					t.Fatalf("GET %q: %s %q, want %s", key, r.Status, r.Value, tt.wantStatus)
				}
			}
			st := e.shim.Stats()
			if tt.unit && st.Gets != 3 || !tt.unit && st.Shed != 3 {
				t.Fatalf("stats %+v: want the 3 GETs served or shed", st)
			}
			// The next GET of the key, and one of another key, queue reads
			// of their own.
			g.open <- true
			g.open <- true
			if r := e.call(wire.OpGet, key, nil); r.Status != wire.StatusOK {
				t.Fatalf("GET after the shared read: %s", r.Status)
			}
			if r := e.call(wire.OpGet, e.key(0, "other"), nil); r.Status != wire.StatusNotFound {
				t.Fatalf("GET of another key: %s", r.Status)
			}
			if got := len(g.waiting); got != 2 {
				t.Fatalf("%d more reads waited for a unit, want 2", got)
			}
		})
	}
}
