package cachenode

import (
	"math"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/distcache/distcache/dataplane/capacity"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/wire"
)

// TestWorkCost checks the node's cost model (package capacity, the
// simulator's): 1 work unit per hit, 0 per miss, 1 per INVALIDATE and per
// UPDATE of a key the node holds an entry for (valid or a placeholder), 0
// for a key it does not hold; and that the INVALIDATE acknowledgement
// carries FlagHit iff the key was held. Each case runs with an unlimited
// capacity and with one the test never reaches.
func TestWorkCost(t *testing.T) {
	get := wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("k")}
	inv := func(v uint64) wire.Message {
		return wire.Message{Header: wire.Header{Op: wire.OpInvalidate, ValueVersion: v}, Key: []byte("k")}
	}
	upd := func(v uint64, status wire.Status, value string) wire.Message {
		return wire.Message{Header: wire.Header{Op: wire.OpUpdate, Status: status, ValueVersion: v}, Key: []byte("k"), Value: []byte(value)}
	}
	tests := []struct {
		name     string
		setup    []coherenceStep
		req      wire.Message // the measured request
		after    []coherenceStep
		wantWork uint64
		wantHit  bool // FlagHit on the reply
	}{
		{name: "hit", setup: []coherenceStep{cacheK("a", 10)}, req: get, wantWork: 1, wantHit: true},
		{name: "miss of an absent key", req: get, wantWork: 0},
		{name: "miss of an invalid copy", setup: []coherenceStep{cacheK("a", 10), invalidateK(20)}, req: get, wantWork: 0},
		{name: "invalidation of a valid copy", setup: []coherenceStep{cacheK("a", 10)}, req: inv(20), wantWork: 1, wantHit: true},
		{name: "invalidation of an invalid copy", setup: []coherenceStep{cacheK("a", 10), invalidateK(20)}, req: inv(30),
			wantWork: 1, wantHit: true},
		{name: "invalidation of a placeholder", setup: []coherenceStep{holdFill()}, req: inv(50),
			after: []coherenceStep{fillK(40, "old", InsertResult{Stale: 1})}, wantWork: 1, wantHit: true},
		{name: "invalidation of a key not held", req: inv(5), wantWork: 0},
		{name: "update applied", setup: []coherenceStep{cacheK("a", 10), invalidateK(20)}, req: upd(20, wire.StatusOK, "b"),
			wantWork: 1},
		{name: "update of another version", setup: []coherenceStep{cacheK("a", 10), invalidateK(20)}, req: upd(19, wire.StatusOK, "x"),
			wantWork: 1},
		{name: "update ending a DEL", setup: []coherenceStep{cacheK("a", 10), invalidateK(20)}, req: upd(20, wire.StatusNotFound, ""),
			wantWork: 1},
		{name: "update of a key not held", req: upd(20, wire.StatusOK, "b"), wantWork: 0},
		{name: "update ending a DEL of a key not held", req: upd(20, wire.StatusNotFound, ""), wantWork: 0},
		{name: "ping", req: wire.Message{Header: wire.Header{Op: wire.OpPing}, Key: []byte("k")}, wantWork: 0},
		{name: "request of another role", setup: []coherenceStep{cacheK("a", 10)},
			req: wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: []byte("k"), Value: []byte("v")}, wantWork: 0},
	}
	for _, capacity := range []struct {
		name string
		rate float64
	}{{"unlimited", 0}, {"limited", 1e9}} {
		rate := capacity.rate
		for _, tt := range tests {
			t.Run(capacity.name+"/"+tt.name, func(t *testing.T) {
				h := newHarness(t, withConfig(func(c *Config) { c.EmulatedRate = rate }))
				var s scenario
				for _, step := range tt.setup {
					step(h, &s)
				}
				before, resendsBefore := h.node.Stats().Work, h.client.Stats().Retransmits
				req := tt.req
				rep := h.call(&req)
				// A request the harness resent (a slow machine) may be
				// served, and charged, once per copy that arrives.
				resent := h.client.Stats().Retransmits - resendsBefore
				if rep.Op != tt.req.Op.Reply() {
					t.Fatalf("reply %s to %s", rep.Op, tt.req.Op)
				}
				if got := h.node.Stats().Work - before; got < tt.wantWork || got > tt.wantWork*(1+resent) {
					t.Errorf("%s cost %d work units, want %d (the request was resent %d times)", tt.req.Op, got, tt.wantWork, resent)
				}
				if hit := rep.Has(wire.FlagHit); hit != tt.wantHit {
					t.Errorf("%s reply FlagHit = %v, want %v", rep.Op, hit, tt.wantHit)
				}
				for _, step := range tt.after {
					step(h, &s)
				}
			})
		}
	}
}

// TestFillsAndMissesAreFree checks that what the node does on a shim's
// behalf costs it nothing: forwarded misses, coalesced or not, and the
// FETCHes of insertions.
func TestFillsAndMissesAreFree(t *testing.T) {
	h := newHarness(t, withConfig(func(c *Config) { c.EmulatedRate = 1e9 }))
	h.cache("k", "v", 3) // testThreshold misses, then a FETCH
	h.heat("other", 5)
	s := h.node.Stats()
	if s.Work != 0 || s.Misses != testThreshold+5 || s.Fills != 1 {
		t.Fatalf("stats %+v: want no work for %d misses and a fill", s, testThreshold+5)
	}
	for range 3 {
		if rep := h.get("k"); !rep.Has(wire.FlagHit) {
			t.Fatal("GET k: not a hit")
		}
	}
	if s := h.node.Stats(); s.Work != 3 {
		t.Fatalf("Work = %d after 3 hits, want 3", s.Work)
	}
}

func TestWorkMetrics(t *testing.T) {
	tests := []struct {
		name string
		rate float64
	}{
		{"unlimited", 0},
		{"limited", 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			h := newHarness(t, withConfig(func(c *Config) { c.EmulatedRate, c.Registerer = tt.rate, reg }))
			h.cache("k", "v", 3)
			h.get("k")
			h.invalidate("k", 9)
			got := gather(t, reg)
			if got["distcache_work_units_total"] != 2 || got["distcache_work_capacity"] != tt.rate {
				t.Fatalf("work units %v, capacity %v; want 2 and %v",
					got["distcache_work_units_total"], got["distcache_work_capacity"], tt.rate)
			}
			// GET /work (what `distcache bench` reads) agrees.
			if w, want := h.node.Work(), (metrics.Work{Units: 2, Capacity: tt.rate}); w != want {
				t.Fatalf("Work() = %+v, want %+v", w, want)
			}
		})
	}
}

// gather returns the value of every unlabelled counter and gauge of reg.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) > 0 {
				continue
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[f.GetName()] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[f.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestEmulatedRateValidated(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		ok   bool
	}{
		{"zero: unlimited", 0, true},
		{"positive", 100, true},
		{"fractional", 0.5, true},
		{"negative", -1, false},
		{"NaN", math.NaN(), false},
		{"infinite", math.Inf(1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.EmulatedRate = tt.rate
			n, err := New(cfg)
			if err == nil {
				_ = n.Close()
			}
			if (err == nil) != tt.ok {
				t.Fatalf("New with EmulatedRate %v: err %v, want ok %v", tt.rate, err, tt.ok)
			}
		})
	}
}

// countingBatch is a reader's reply batch that counts its flushes.
type countingBatch struct{ sent, flushes int }

func (b *countingBatch) Send(netip.AddrPort, *wire.Message) error { b.sent++; return nil }
func (b *countingBatch) Flush()                                   { b.flushes++ }

// TestSpendFlushesBeforeItWaits checks that the reader sends the replies it
// has finished before it waits for the emulated capacity, and only then.
func TestSpendFlushesBeforeItWaits(t *testing.T) {
	n := &Node{work: capacity.New(100)} // a burst of 1 unit
	out := &countingBatch{}
	n.spend(out, 1)
	if out.flushes != 0 {
		t.Fatalf("spending an available unit flushed the batch %d times, want 0", out.flushes)
	}
	n.spend(out, 1) // the bucket is empty: 10 ms to wait
	if out.flushes != 1 || n.work.Used() != 2 {
		t.Fatalf("spending a unit that is not there yet: %d flushes and %d units used, want 1 and 2", out.flushes, n.work.Used())
	}
}

// TestUrgentOps checks which requests a node's reader serves ahead of the
// reads of its batch: everything but reads.
func TestUrgentOps(t *testing.T) {
	for _, tt := range []struct {
		op   wire.Op
		want bool
	}{
		{wire.OpGet, false},
		{wire.OpInvalidate, true},
		{wire.OpUpdate, true},
		{wire.OpPing, true},
		{wire.OpFetchReply, true},
		{wire.OpPut, true}, // refused at once
	} {
		if got := urgent(tt.op); got != tt.want {
			t.Errorf("urgent(%s) = %v, want %v", tt.op, got, tt.want)
		}
	}
}
