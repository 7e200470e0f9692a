package cachenode

import (
	"errors"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

func TestHitServesCachedValueWithTelemetry(t *testing.T) {
	h := newHarness(t)
	h.cache("k", "value-1", 42)
	rep := h.get("k")
	want := wire.Header{
		Op: wire.OpGetReply, Status: wire.StatusOK, Flags: wire.FlagHit | wire.FlagTelemetry,
		NodeID: h.m.Layers[0].Members[0].ID, ValueVersion: 42, MapVersion: uint64(h.m.Version),
	}
	got := rep.Header
	got.Seq, got.Digest, got.Load, got.ValueLen, got.FragOffset = 0, [16]byte{}, 0, 0, 0
	if got != want || string(rep.Value) != "value-1" || string(rep.Key) != "k" {
		t.Fatalf("hit reply %+v %q %q, want %+v %q", got, rep.Key, rep.Value, want, "value-1")
	}
	if rep.Load < 1 {
		t.Errorf("load %d, want >= 1 after %d queries", rep.Load, testThreshold+1)
	}
	if s := h.node.Stats(); s.Hits != 1 || s.Gets != testThreshold+1 {
		t.Errorf("stats %+v, want 1 hit of %d gets", s, testThreshold+1)
	}
}

func TestMissRelaysShimReply(t *testing.T) {
	tests := []struct {
		name       string
		opts       []harnessOption
		wantStatus wire.Status
		wantValue  string
		wantVer    uint64
	}{
		{name: "value", opts: []harnessOption{withStub(withValue("k", "v"), withCounter(7))},
			wantStatus: wire.StatusOK, wantValue: "v", wantVer: 7},
		{name: "not found", wantStatus: wire.StatusNotFound},
		{name: "shim timeout", wantStatus: wire.StatusUnavailable,
			opts: []harnessOption{withStub(holding(wire.OpGet)), withConfig(func(c *Config) { c.BackendTimeout = 1 })}},
		{name: "no shim address", opts: []harnessOption{withoutShimAddress()}, wantStatus: wire.StatusUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts...)
			rep := h.get("k")
			if rep.Op != wire.OpGetReply || rep.Status != tt.wantStatus || string(rep.Value) != tt.wantValue ||
				rep.ValueVersion != tt.wantVer {
				t.Fatalf("reply %s %s %q v%d, want GET_REPLY %s %q v%d",
					rep.Op, rep.Status, rep.Value, rep.ValueVersion, tt.wantStatus, tt.wantValue, tt.wantVer)
			}
			if rep.Has(wire.FlagHit) || !rep.Has(wire.FlagTelemetry) || rep.NodeID != h.m.Layers[0].Members[0].ID ||
				rep.MapVersion != uint64(h.m.Version) {
				t.Errorf("reply header %+v: want telemetry of node %d, map %d, no hit flag",
					rep.Header, h.m.Layers[0].Members[0].ID, h.m.Version)
			}
			s := h.node.Stats()
			if s.Misses != 1 || s.Hits != 0 {
				t.Errorf("stats %+v, want 1 miss", s)
			}
			if tt.wantStatus == wire.StatusNotFound && s.NotFound != 1 {
				t.Errorf("NotFound = %d, want 1", s.NotFound)
			}
			if tt.wantStatus == wire.StatusUnavailable && s.BackendErrors != 1 {
				t.Errorf("BackendErrors = %d, want 1", s.BackendErrors)
			}
		})
	}
}

func TestOtherOps(t *testing.T) {
	tests := []struct {
		op         wire.Op
		wantStatus wire.Status
	}{
		{wire.OpPing, wire.StatusOK},
		{wire.OpPut, wire.StatusNotOwner},
		{wire.OpDel, wire.StatusNotOwner},
		{wire.OpFetch, wire.StatusNotOwner},
	}
	h := newHarness(t)
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			rep := h.call(&wire.Message{Header: wire.Header{Op: tt.op}, Key: []byte("k"), Value: []byte("x")})
			if rep.Op != tt.op.Reply() || rep.Status != tt.wantStatus || len(rep.Value) != 0 ||
				!rep.Has(wire.FlagTelemetry) || rep.MapVersion != uint64(h.m.Version) {
				t.Errorf("reply %+v %q, want %s %s with telemetry", rep.Header, rep.Value, tt.op.Reply(), tt.wantStatus)
			}
		})
	}
	if s := h.node.Stats(); s.NotOwner != 3 || s.Gets != 0 {
		t.Errorf("stats %+v, want 3 not-owner requests and no GET", s)
	}
}

func TestStartAndSetMapErrors(t *testing.T) {
	n, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(); !errors.Is(err, ErrNoMap) {
		t.Fatalf("Start without map: %v, want ErrNoMap", err)
	}
	m, err := partmap.Build(partmap.Spec{Cluster: "other", Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: testLayer, Nodes: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Version = 5
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SetMap(p); !errors.Is(err, ErrNotMember) {
		t.Fatalf("SetMap without the member: %v, want ErrNotMember", err)
	}
	older := m.Clone()
	older.Version = 4
	po, err := partmap.Compile(older)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SetMap(po); !errors.Is(err, ErrStaleMap) {
		t.Fatalf("SetMap of an older map: %v, want ErrStaleMap", err)
	}
	for _, bad := range []Config{{}, {Layer: "L", Member: "m", Capacity: -1}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) succeeded", bad)
		}
	}
}

func TestSetMap(t *testing.T) {
	tests := []struct {
		name string
		// change gives the node its next map and returns it.
		change func(h *harness) *partmap.Placement
		// wantKept reports which cached keys survive the change.
		wantKept func(p *partmap.Placement, key string) bool
	}{
		{
			name:     "member joins: moved keys dropped",
			change:   func(h *harness) *partmap.Placement { return h.setState(1, partmap.Active) },
			wantKept: func(p *partmap.Placement, key string) bool { return p.Owner(0, key) == 0 },
		},
		{
			name:     "node failed: cache emptied",
			change:   func(h *harness) *partmap.Placement { return h.setState(0, partmap.Failed) },
			wantKept: func(*partmap.Placement, string) bool { return false },
		},
		{
			name: "node failed then active: starts empty",
			change: func(h *harness) *partmap.Placement {
				h.setState(0, partmap.Failed)
				return h.setState(0, partmap.Active)
			},
			wantKept: func(*partmap.Placement, string) bool { return false },
		},
		{
			name: "unchanged ownership: kept",
			change: func(h *harness) *partmap.Placement {
				next := h.m.Clone()
				next.Version++
				return h.setMap(next)
			},
			wantKept: func(*partmap.Placement, string) bool { return true },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Member 1 starts Failed, so the node owns every key.
			h := newHarness(t, withMembers(2, 1))
			keys := make([]string, 16)
			for i := range keys {
				keys[i] = "key-" + string(rune('a'+i))
				h.shim.setValue(keys[i], "v-"+keys[i])
				h.heat(keys[i], testThreshold)
			}
			if r := h.node.InsertHot(h.ctx); r.Inserted != len(keys) {
				t.Fatalf("InsertHot: %+v, want %d inserted", r, len(keys))
			}
			p := tt.change(h)
			var kept int
			for _, k := range keys {
				_, _, valid, ok := h.node.Cached(k)
				if want := tt.wantKept(p, k); ok != want || ok && !valid {
					t.Errorf("key %s cached=%v valid=%v, want cached=%v", k, ok, valid, want)
				}
				if ok {
					kept++
				}
			}
			s := h.node.Stats()
			if s.Items != int64(kept) || s.Dropped != uint64(len(keys)-kept) {
				t.Errorf("Items %d Dropped %d, want %d and %d", s.Items, s.Dropped, kept, len(keys)-kept)
			}
			if tt.name == "member joins: moved keys dropped" && (kept == 0 || kept == len(keys)) {
				t.Fatalf("kept %d of %d keys: the test needs keys on both members", kept, len(keys))
			}
			// Whatever the change, the node still answers: with the value
			// when Active, with not_owner and its map version otherwise, so
			// that a reader with an older map reads elsewhere.
			k := keys[0]
			rep := h.get(k)
			active := h.m.Layers[0].Members[0].State == partmap.Active
			switch {
			case active && (rep.Status != wire.StatusOK || string(rep.Value) != "v-"+k):
				t.Errorf("GET after map change: %s %q", rep.Status, rep.Value)
			case !active && (rep.Status != wire.StatusNotOwner || rep.MapVersion != uint64(h.m.Version)):
				t.Errorf("GET of a node not Active: %s, map version %d; want not_owner, %d", rep.Status, rep.MapVersion, h.m.Version)
			}
		})
	}
}

func TestFailedNodeDoesNotInsert(t *testing.T) {
	h := newHarness(t)
	h.setState(0, partmap.Failed)
	h.shim.setValue("k", "v")
	h.heat("k", testThreshold+1)
	if r := h.node.InsertHot(h.ctx); r != (InsertResult{}) {
		t.Fatalf("failed node inserted: %+v", r)
	}
	h.setState(0, partmap.Active)
	h.heat("k", testThreshold)
	if r := h.node.InsertHot(h.ctx); r.Inserted != 1 {
		t.Fatalf("active again: %+v, want 1 inserted", r)
	}
}

func TestMalformedDatagramsCounted(t *testing.T) {
	h := newHarness(t, withStub(withValue("k", "v")))
	good, err := wire.Encode(&wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: 1}, Key: []byte("k")}, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	badDigest := slices.Clone(good)
	badDigest[20] ^= 0xff
	rawSend(t, h.node.Addr(),
		[]byte("definitely not a distcache packet"),
		good[:wire.HeaderLen-10],
		badDigest,
	)
	eventually(t, "3 malformed datagrams", func() bool { return h.node.Stats().Transport.Malformed == 3 })
	if rep := h.get("k"); rep.Status != wire.StatusOK || string(rep.Value) != "v" {
		t.Fatalf("GET after garbage: %s %q", rep.Status, rep.Value)
	}
	if s := h.node.Stats(); s.Gets != 1 {
		t.Errorf("Gets = %d, want 1: malformed datagrams must not be served", s.Gets)
	}
}

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, withConfig(func(c *Config) { c.Registerer = reg }))
	h.cache("k", "v", 1)
	h.get("k")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		var sum float64
		for _, m := range f.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			}
		}
		got[f.GetName()] = sum
	}
	want := map[string]float64{
		"distcache_cache_items": 1, "distcache_cache_bytes": 1, "distcache_map_version": 1,
		"distcache_insertions_total": 1, "distcache_evictions_total": 0,
		"distcache_coalesced_requests_total": 0, "distcache_requests_total": testThreshold + 1,
		"distcache_lease_valid": 1, "distcache_lease_starts_total": 1, "distcache_unleased_reads_total": 0,
		"distcache_refused_reads_total": 0, "distcache_untracked_rereads_total": 0,
		"distcache_backend_batches_total": 0, "distcache_backend_batched_reads_total": 0, // one miss at a time
		// The hot key's misses reported it once; the hit is counted on it.
		"distcache_hotkey_misses_total": testThreshold, "distcache_hotkey_reports_total": 1,
		"distcache_hotkey_reports_dropped_total": 0, "distcache_hotkey_tracked_hits_total": 1,
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
	for _, name := range []string{"distcache_node_load", "distcache_datagrams_total", "distcache_malformed_packets_total",
		"distcache_hotkey_intervals_total", "distcache_hotkey_sketch_hot_cells_ratio", "distcache_hotkey_threshold"} {
		if _, ok := got[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
}

// TestCacheOnlyGet checks a client's hedged read (wire.FlagCacheOnly): a
// valid copy is a hit, and without one the node refuses it with
// StatusUnavailable and never reads the backend for it.
func TestCacheOnlyGet(t *testing.T) {
	tests := []struct {
		name       string
		cached     bool
		wantStatus wire.Status
		wantHit    bool
	}{
		{name: "copy: a hit", cached: true, wantStatus: wire.StatusOK, wantHit: true},
		{name: "no copy: refused, storage not read", wantStatus: wire.StatusUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, withStub(withValue("k", "stored")))
			if tt.cached {
				h.cache("k", "cached", 42)
			}
			gets := h.shim.count(wire.OpGet)
			rep := h.call(&wire.Message{Header: wire.Header{Op: wire.OpGet, Flags: wire.FlagCacheOnly}, Key: []byte("k")})
			if rep.Status != tt.wantStatus || rep.Has(wire.FlagHit) != tt.wantHit {
				t.Fatalf("reply %s hit %v, want %s hit %v", rep.Status, rep.Has(wire.FlagHit), tt.wantStatus, tt.wantHit)
			}
			if n := h.shim.count(wire.OpGet) - gets; n != 0 {
				t.Errorf("the shim got %d GETs for a cache-only read, want 0", n)
			}
			if s := h.node.Stats(); (s.CacheOnlyMiss == 1) == tt.cached {
				t.Errorf("CacheOnlyMiss = %d with a copy %v", s.CacheOnlyMiss, tt.cached)
			}
		})
	}
}
