package shim

import (
	"context"
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/cachenode"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/hotkey"
	"github.com/distcache/distcache/placement/partmap"
)

// TestWorkCost checks the shim's cost model (package capacity, the
// simulator's): 1 work unit per GET, FETCH, PUT and DEL served, 1 more per
// owner whose INVALIDATE acknowledgement reports a copy (FlagHit), nothing
// for refused requests. Each case runs with an unlimited capacity and with
// one the test never reaches.
func TestWorkCost(t *testing.T) {
	type request struct {
		op     wire.Op
		fromUp bool // sent by the key's upper-layer owner instead of the client
		shard  int  // shard the key is stored on (1: not this shim's)
		status wire.Status
	}
	tests := []struct {
		name       string
		holders    []int // indexes into the key's owners holding a copy
		silent     []int // owners that never acknowledge
		req        request
		wantWork   uint64
		wantCopies uint64
	}{
		{name: "GET found", req: request{op: wire.OpGet}, wantWork: 1},
		{name: "GET not found", req: request{op: wire.OpGet, status: wire.StatusNotFound}, wantWork: 1},
		{name: "GET of another shard", req: request{op: wire.OpGet, shard: 1, status: wire.StatusNotOwner}, wantWork: 0},
		{name: "FETCH from an owner", req: request{op: wire.OpFetch, fromUp: true}, wantWork: 1},
		{name: "FETCH from a client", req: request{op: wire.OpFetch, status: wire.StatusNotOwner}, wantWork: 0},
		{name: "PUT without copies", req: request{op: wire.OpPut}, wantWork: 1},
		{name: "PUT with one copy", holders: []int{1}, req: request{op: wire.OpPut}, wantWork: 2, wantCopies: 1},
		{name: "PUT with two copies", holders: []int{0, 1}, req: request{op: wire.OpPut}, wantWork: 3, wantCopies: 2},
		{name: "DEL with two copies", holders: []int{0, 1}, req: request{op: wire.OpDel}, wantWork: 3, wantCopies: 2},
		{name: "DEL without copies", req: request{op: wire.OpDel}, wantWork: 1},
		{name: "PUT refused by phase 1: copies not charged", holders: []int{0}, silent: []int{1},
			req: request{op: wire.OpPut, status: wire.StatusCoherence}, wantWork: 1},
		{name: "PING", req: request{op: wire.OpPing}, wantWork: 0},
	}
	for _, capacity := range []struct {
		name string
		rate float64
	}{{"unlimited", 0}, {"limited", 1e9}} {
		for _, tt := range tests {
			t.Run(capacity.name+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, withShards(2), withConfig(func(c *Config) {
					c.EmulatedRate = capacity.rate
					if len(tt.silent) > 0 {
						c.InvalidateTimeout = 50 * time.Millisecond // the refusal is the point
					}
				}))
				key := e.key(tt.req.shard, "costed")
				owners := e.owners(key)
				if tt.req.status != wire.StatusNotFound {
					if err := e.rdb.Set(context.Background(), key, "stored", 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
				for _, i := range tt.holders {
					owners[i].setHolds(key, true)
				}
				for _, i := range tt.silent {
					owners[i].setSilent(true)
				}
				from := e.client
				if tt.req.fromUp {
					from = owners[0].ep
				}
				var value []byte
				if tt.req.op == wire.OpPut {
					value = []byte("new")
				}
				before, resendsBefore := e.shim.Stats(), from.Stats().Retransmits
				r := e.callFrom(from, tt.req.op, key, value)
				// A read the sender resent (a slow machine) is served, and
				// charged, once per copy that arrives; a resent write is
				// deduplicated.
				resent := uint64(0)
				if tt.req.op == wire.OpGet || tt.req.op == wire.OpFetch {
					resent = from.Stats().Retransmits - resendsBefore
				}
				if r.Status != tt.req.status {
					t.Fatalf("%s: status %s, want %s", tt.req.op, r.Status, tt.req.status)
				}
				st := e.shim.Stats()
				if got := st.Work - before.Work; got < tt.wantWork || got > tt.wantWork+resent*tt.wantWork {
					t.Errorf("%s cost %d work units, want %d (the request was resent %d times)", tt.req.op, got, tt.wantWork, resent)
				}
				if got := st.CopiesInvalidated - before.CopiesInvalidated; got != tt.wantCopies {
					t.Errorf("%s invalidated %d copies, want %d", tt.req.op, got, tt.wantCopies)
				}
				if got := metricValue(t, e, "distcache_work_units_total", nil); got != float64(st.Work) {
					t.Errorf("distcache_work_units_total = %v, Stats.Work = %d", got, st.Work)
				}
				if got := metricValue(t, e, "distcache_coherence_copies_total", nil); got != float64(st.CopiesInvalidated) {
					t.Errorf("distcache_coherence_copies_total = %v, Stats.CopiesInvalidated = %d", got, st.CopiesInvalidated)
				}
				if got := metricValue(t, e, "distcache_work_capacity", nil); got != capacity.rate {
					t.Errorf("distcache_work_capacity = %v, want %v", got, capacity.rate)
				}
			})
		}
	}
}

// TestRetransmittedWriteIsFree checks that a retransmitted write, answered
// from the dedup table, costs nothing.
func TestRetransmittedWriteIsFree(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.EmulatedRate = 1e9 }))
	key := e.key(0, "retransmitted")
	for _, n := range e.owners(key) {
		n.setHolds(key, true)
	}
	raw := newRawConn(t)
	dg := encodePut(t, 5, key, "once")
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK {
		t.Fatalf("PUT: %s", r.Status)
	}
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK {
		t.Fatalf("retransmitted PUT: %s", r.Status)
	}
	if st := e.shim.Stats(); st.Work != 3 || st.DuplicateRequests != 1 || st.CopiesInvalidated != 2 {
		t.Fatalf("stats %+v: want 3 units (the PUT and its 2 copies) and a free duplicate", st)
	}
}

func TestBestEffortInvalidationsCounted(t *testing.T) {
	// A lease of 1ns: the failed owner is released before the write starts.
	e := newEnv(t, withConfig(func(c *Config) { c.Lease = time.Nanosecond }))
	key := e.key(0, "moved")
	old := e.nodes[e.m.Layers[0].Members[e.place.Owner(0, key)].Name]
	next, changed, err := e.m.WithState(old.name, partmap.Failed)
	if err != nil || !changed {
		t.Fatalf("WithState: %v %v", changed, err)
	}
	e.setMap(next)
	e.mustStatus(wire.OpPut, key, []byte("v"), wire.StatusOK)
	tests := []struct {
		result string
		want   float64
	}{{"ok", 2}, {"best_effort", 1}, {"failed", 0}}
	var sum float64
	for _, tt := range tests {
		got := metricValue(t, e, "distcache_coherence_invalidations_total", map[string]string{"result": tt.result})
		if got != tt.want {
			t.Errorf("invalidations{result=%s} = %v, want %v", tt.result, got, tt.want)
		}
		sum += got
	}
	if st := e.shim.Stats(); float64(st.Invalidations) != sum {
		t.Errorf("Stats.Invalidations = %d, the metric's results sum to %v", st.Invalidations, sum)
	}
}

func TestEmulatedRateValidated(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		ok   bool
	}{
		{"zero: unlimited", 0, true},
		{"positive", 2000, true},
		{"negative", -1, false},
		{"NaN", math.NaN(), false},
		{"infinite", math.Inf(1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Shard: "s", Transport: transport.Config{Addr: "127.0.0.1:0"},
				Redis: &redis.Options{Addr: "127.0.0.1:1"}, EmulatedRate: tt.rate})
			if err == nil {
				_ = s.Close()
			}
			if (err == nil) != tt.ok {
				t.Fatalf("New with EmulatedRate %v: err %v, want ok %v", tt.rate, err, tt.ok)
			}
		})
	}
}

// TestCopiesOfRealNodes runs the shim with real cache nodes as every
// member: a node that caches a key tells the shim so in its INVALIDATE
// acknowledgement, and both sides charge the copy's coherence work; an
// owner that never fetched the key is not invalidated at all.
func TestCopiesOfRealNodes(t *testing.T) {
	layers := []partmap.LayerSpec{{Name: "upper", Nodes: 3}, {Name: "lower", Nodes: 2}}
	nodes := map[string]*cachenode.Node{}
	var opts []envOption
	for _, l := range layers {
		for i := range l.Nodes {
			name := partmap.MemberName(testCluster, l.Name, i)
			n, err := cachenode.New(cachenode.Config{
				Layer: l.Name, Member: name, Transport: transport.Config{Addr: "127.0.0.1:0"},
				Interval: -1, Detector: hotkey.Config{Threshold: 1}, BackendTimeout: patience,
				EmulatedRate: 1e9, Lease: patience, // renewed once below: it outlasts the test
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close() })
			nodes[name] = n
			opts = append(opts, withMemberAddress(name, n.Addr()))
		}
	}
	e := newEnv(t, append(opts, withConfig(func(c *Config) { c.EmulatedRate = 1e9 }))...)
	for _, n := range nodes {
		if err := n.SetMap(e.place); err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		n.Renew(time.Now(), e.place.Version())
	}
	// Every node drops the shard's entries first: from then on the shim
	// invalidates only the nodes that fetched a key (holders.go).
	eventually(t, "every node flushed", func() bool { return e.shim.Stats().Flushes >= uint64(len(nodes)) })
	key := e.key(0, "copied")
	var owners []*cachenode.Node // by layer
	for _, c := range e.place.Candidates(key, nil) {
		owners = append(owners, nodes[e.m.Layers[c.Layer].Members[c.Member].Name])
	}
	holder, other := owners[0], owners[1]

	// Stored behind the shim's back: no write, so no phase 2 in flight.
	if err := e.rdb.Set(t.Context(), key, "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// A miss through the upper owner (1 unit at the shim, none at the
	// node) makes the key hot there; the insertion FETCHes it (1 unit).
	if r := callNode(t, e, holder.Addr(), wire.OpGet, key); r.Status != wire.StatusOK || r.Has(wire.FlagHit) {
		t.Fatalf("first GET: %s hit=%v, want a miss", r.Status, r.Has(wire.FlagHit))
	}
	if r := holder.InsertHot(t.Context()); r.Inserted != 1 {
		t.Fatalf("InsertHot: %+v, want the key inserted", r)
	}
	if st := e.shim.Stats(); st.Work != 2 || st.CopiesInvalidated != 0 {
		t.Fatalf("shim stats %+v: want 2 units (GET, FETCH), no copies", st)
	}

	put := e.mustStatus(wire.OpPut, key, []byte("v2"), wire.StatusOK) // the PUT and the copy: 2 units
	if st := e.shim.Stats(); st.Work != 4 || st.CopiesInvalidated != 1 {
		t.Fatalf("shim stats %+v: want 4 units, 1 copy", st)
	}
	eventually(t, "phase 2 applied at the holder", func() bool {
		_, v, valid, _ := holder.Cached(key)
		return valid && v == put.ValueVersion
	})
	if r := callNode(t, e, holder.Addr(), wire.OpGet, key); !r.Has(wire.FlagHit) || string(r.Value) != "v2" {
		t.Fatalf("GET after the update: hit=%v %q, want a hit of v2", r.Has(wire.FlagHit), r.Value)
	}
	// The holder: the invalidation, the update, the hit.
	if w := holder.Stats().Work; w != 3 {
		t.Errorf("holder Work = %d, want 3", w)
	}

	e.mustStatus(wire.OpDel, key, nil, wire.StatusOK) // the DEL and the copy
	if st := e.shim.Stats(); st.Work != 6 || st.CopiesInvalidated != 2 {
		t.Fatalf("shim stats %+v: want 6 units, 2 copies", st)
	}
	eventually(t, "the DEL's phase 2 at the holder", func() bool { return holder.Stats().Work == 5 })
	if s := other.Stats(); s.Work != 0 || s.Invalidations != 0 {
		t.Errorf("other owner: Work %d after %d invalidations, want none: it never fetched the key", s.Work, s.Invalidations)
	}
	if s := e.shim.Stats(); s.Skipped != 2 {
		t.Errorf("shim skipped %d invalidations, want 2 (the other owner's, of the PUT and the DEL)", s.Skipped)
	}
}

// callNode sends a request to a cache node from the env's client.
func callNode(t *testing.T, e *env, addr netip.AddrPort, op wire.Op, key string) wire.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	r, err := e.client.Call(ctx, addr, &wire.Message{Header: wire.Header{Op: op}, Key: []byte(key)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func encodeGet(t *testing.T, seq uint64, key string) []byte {
	t.Helper()
	b, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: seq}, Key: []byte(key)}, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRetransmittedReadServedOnce checks that a read retransmitted while it
// waits for the emulated capacity is dropped, not queued and charged again:
// at 1 unit/s the second GET waits a second for its unit, and its copy
// arrives right behind it.
func TestRetransmittedReadServedOnce(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.EmulatedRate = 1; c.QueueTimeout = patience }))
	key := e.key(0, "resent")
	if err := e.rdb.Set(context.Background(), key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	raw := newRawConn(t)
	raw.send(e.shim.Addr(), encodeGet(t, 1, key)) // takes the idle unit
	if r := raw.receive(); r.Status != wire.StatusOK || r.Seq != 1 {
		t.Fatalf("first GET: %s seq %d", r.Status, r.Seq)
	}
	dg := encodeGet(t, 2, key)
	raw.send(e.shim.Addr(), dg)
	raw.send(e.shim.Addr(), dg)
	if r := raw.receive(); r.Status != wire.StatusOK || r.Seq != 2 || string(r.Value) != "v" {
		t.Fatalf("queued GET: %s seq %d %q", r.Status, r.Seq, r.Value)
	}
	if st := e.shim.Stats(); st.Gets != 2 || st.DuplicateRequests != 1 || st.Work != 2 {
		t.Fatalf("stats: %d GETs served, %d duplicates, %d units; want 2, 1 and 2", st.Gets, st.DuplicateRequests, st.Work)
	}
}

// TestReadShedPastQueueTimeout checks that a read whose work unit is
// further away than QueueTimeout is answered StatusOverloaded at once and
// costs nothing: at 0.1 unit/s the unit after the idle one is 10 s away.
func TestReadShedPastQueueTimeout(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.EmulatedRate = 0.1 }))
	key := e.key(0, "shed")
	raw := newRawConn(t)
	raw.send(e.shim.Addr(), encodeGet(t, 1, key))
	if r := raw.receive(); r.Status != wire.StatusNotFound {
		t.Fatalf("first GET: %s, want %s", r.Status, wire.StatusNotFound)
	}
	raw.send(e.shim.Addr(), encodeGet(t, 2, key))
	if r := raw.receive(); r.Status != wire.StatusOverloaded || r.Seq != 2 {
		t.Fatalf("second GET: %s seq %d, want %s", r.Status, r.Seq, wire.StatusOverloaded)
	}
	if st := e.shim.Stats(); st.Shed != 1 || st.Work != 1 || st.Gets != 1 {
		t.Fatalf("stats: %d shed, %d units, %d served; want 1, 1 and 1", st.Shed, st.Work, st.Gets)
	}
	// Shed again when resent: a shed read is not remembered.
	raw.send(e.shim.Addr(), encodeGet(t, 2, key))
	if r := raw.receive(); r.Status != wire.StatusOverloaded {
		t.Fatalf("resent GET: %s, want %s", r.Status, wire.StatusOverloaded)
	}
}
