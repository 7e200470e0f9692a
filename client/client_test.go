package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/routing"
)

func TestSetMapSwitchesRouting(t *testing.T) {
	cl := newCluster(t)
	a, b := cl.nodes[0][0], cl.nodes[1][0]
	c := newTestClient(t, cl.p)
	warmUp(t, c, cl, "k")

	c.SetMap(cl.withState(t, 0, 0, partmap.Failed))
	if got, want := c.Placement().Version(), cl.p.Version(); got != want {
		t.Fatalf("client map version %d, want %d", got, want)
	}
	seen := a.requests()
	for range 30 {
		r, err := c.GetResult(testCtx(t), "k")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if r.Layer != 1 || r.Node != b.id {
			t.Fatalf("Get answered by layer %d node %d, want layer 1 node %d", r.Layer, r.Node, b.id)
		}
	}
	if got := a.requests(); got != seen {
		t.Errorf("failed member got %d GETs after SetMap, want 0", got-seen)
	}

	c.SetMap(cl.withState(t, 0, 0, partmap.Active))
	for i := 0; i < 100 && a.requests() == seen; i++ {
		if _, err := c.Get(testCtx(t), "k"); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	if a.requests() == seen {
		t.Errorf("member active again got no GETs in 100 reads")
	}
}

func TestSetMapMovesKeysWithinLayer(t *testing.T) {
	cl := newCluster(t, withLayers(1), withNodesPerLayer(2))
	c := newTestClient(t, cl.p)
	// A key owned by member 0, which then fails: its reads move to member 1.
	var key string
	for i := 0; i < 1000 && key == ""; i++ {
		if k := fmt.Sprintf("key-%d", i); cl.p.Owner(0, k) == 0 {
			key = k
		}
	}
	if key == "" {
		t.Fatal("no key owned by member 0 among 1000")
	}
	if r, err := c.GetResult(testCtx(t), key); err != nil || r.Node != cl.nodes[0][0].id {
		t.Fatalf("Get = %+v, %v; want node %d", r, err, cl.nodes[0][0].id)
	}
	c.SetMap(cl.withState(t, 0, 0, partmap.Failed))
	if r, err := c.GetResult(testCtx(t), key); err != nil || r.Node != cl.nodes[0][1].id {
		t.Fatalf("Get after failure = %+v, %v; want node %d", r, err, cl.nodes[0][1].id)
	}
	c.SetMap(nil) // ignored
	if c.Placement() != cl.p {
		t.Error("SetMap(nil) replaced the map")
	}
}

// counterValue returns the value of the counter name with labels in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("cannot gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestStatsAndMetrics(t *testing.T) {
	cl := newCluster(t)
	cl.store("absent-at-nodes", "v")
	reg := prometheus.NewRegistry()
	c := newTestClient(t, cl.p, withRegisterer(reg))
	// Layer 1 is heavily loaded, so reads go to layer 0 after the warm-up.
	cl.nodes[1][0].set(nodeLoad(1000))
	warmUp(t, c, cl, "k")
	for range 5 {
		if _, err := c.Get(testCtx(t), "k"); err != nil {
			t.Fatalf("Get: %v", err)
		}
	}
	cl.nodes[0][0].set(nodeStatus(wire.StatusNotFound))
	if _, err := c.Get(testCtx(t), "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get error = %v, want ErrNotFound", err)
	}
	if err := c.Put(testCtx(t), "k", []byte("v")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	s := c.Stats()
	gets := s.Gets
	if s.Hits != gets-1 || s.NotFound != 1 || s.Puts != 1 || s.Errors != 0 {
		t.Errorf("stats %+v: want %d hits, 1 not found, 1 put, no errors", s, gets-1)
	}
	if len(s.LayerHits) != 2 || s.LayerHits[0]+s.LayerHits[1] != s.Hits || s.LayerHits[0] < 5 {
		t.Errorf("layer hits %v, want 2 layers summing to %d with at least 5 in layer 0", s.LayerHits, s.Hits)
	}
	for l, name := range []string{"l0", "l1"} {
		if got := counterValue(t, reg, "distcache_client_layer_hits_total", map[string]string{"layer": name}); got != float64(s.LayerHits[l]) {
			t.Errorf("layer %s hits metric = %v, want %d", name, got, s.LayerHits[l])
		}
	}
	for _, m := range []struct {
		op, result string
		want       uint64
	}{
		{"GET", "hit", s.Hits}, {"GET", "not_found", 1}, {"PUT", "ok", 1},
	} {
		if got := counterValue(t, reg, "distcache_requests_total", map[string]string{"op": m.op, "result": m.result}); got != float64(m.want) {
			t.Errorf("requests_total{op=%s,result=%s} = %v, want %d", m.op, m.result, got, m.want)
		}
	}
	for _, dir := range []string{"in", "out"} {
		if got := counterValue(t, reg, "distcache_datagrams_total", map[string]string{"direction": dir}); got < float64(gets) {
			t.Errorf("datagrams %s = %v, want at least %d", dir, got, gets)
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	c := newTestClient(t, cl.p)
	long := strings.Repeat("k", wire.MaxKeyLen+1)
	tests := []struct {
		name    string
		do      func() error
		wantErr error
	}{
		{"get empty key", func() error { _, err := c.Get(testCtx(t), ""); return err }, ErrInvalidKey},
		{"get long key", func() error { _, err := c.Get(testCtx(t), long); return err }, ErrInvalidKey},
		{"put empty key", func() error { return c.Put(testCtx(t), "", nil) }, ErrInvalidKey},
		{"delete long key", func() error { return c.Delete(testCtx(t), long) }, ErrInvalidKey},
		{"put huge value", func() error { return c.Put(testCtx(t), "k", make([]byte, wire.MaxValueLen+1)) }, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if n := len(cl.shimFor("k").requests()) + cl.nodes[0][0].requests(); n != 0 {
		t.Errorf("invalid requests sent %d datagrams", n)
	}
}

func TestNoShimAddress(t *testing.T) {
	cl := newCluster(t, withLayers(0))
	m := cl.m.Clone()
	m.Storage.Racks[0].Shards[0].Address = ""
	c := newTestClient(t, compile(t, m))
	if _, err := c.Get(testCtx(t), "k"); !errors.Is(err, ErrNoRoute) {
		t.Errorf("Get error = %v, want ErrNoRoute", err)
	}
	if err := c.Put(testCtx(t), "k", nil); !errors.Is(err, ErrNoRoute) {
		t.Errorf("Put error = %v, want ErrNoRoute", err)
	}
}

func TestGetCallerDeadline(t *testing.T) {
	cl := newCluster(t, withLayers(1))
	cl.nodes[0][0].set(nodeSilent(true))
	c := newTestClient(t, cl.p, withAttemptTimeout(time.Hour)) // the caller's deadline ends the read
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get error = %v, want context.DeadlineExceeded", err)
	}
	if s := c.Stats(); s.Timeouts != 0 || s.DirectReads != 0 {
		t.Errorf("stats %+v: the caller's deadline must not mark the node failed nor fall back", s)
	}
	if c.table.Failed(routing.NodeID(cl.nodes[0][0].id)) {
		t.Error("node marked failed after the caller's deadline")
	}
}

func TestConcurrentUse(t *testing.T) {
	cl := newCluster(t, withShards(1, 2))
	cl.nodes[0][0].set(nodeLoad(3))
	cl.nodes[1][0].set(nodeLoad(5))
	c := newTestClient(t, cl.p)
	const workers, ops = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ops {
				key := fmt.Sprintf("w%d-%d", w, i%10)
				var err error
				switch i % 4 {
				case 0:
					err = c.Put(testCtx(t), key, []byte(key))
				case 3:
					err = c.Delete(testCtx(t), key)
				default:
					_, err = c.Get(testCtx(t), key)
				}
				if err != nil && !errors.Is(err, ErrNotFound) {
					// NotFound is legitimate if a slow node made the
					// read fall back to the shim after a Delete.
					errs <- err
					return
				}
				if i == ops/2 && w == 0 {
					c.SetMap(cl.p)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s := c.Stats()
	if s.Gets != workers*ops/2 || s.Puts != workers*ops/4 || s.Deletes != workers*ops/4 ||
		s.Hits+s.Misses+s.NotFound != s.Gets || s.Errors != 0 {
		t.Errorf("stats %+v after %d operations", s, workers*ops)
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name  string
		in    Config
		check func(Config) bool
	}{
		{"zero", Config{}, func(c Config) bool {
			return c.Transport.Addr == DefaultAddr && c.AttemptTimeout == DefaultAttemptTimeout &&
				c.Attempts == DefaultAttempts && c.FailBackoff == DefaultFailBackoff &&
				c.Aging == routing.AgingConfig{StaleAfter: DefaultStaleAfter, HalfLife: DefaultHalfLife} &&
				c.Registerer != nil && c.Logger != nil
		}},
		{"kept", Config{Attempts: 5, AttemptTimeout: time.Second, Aging: routing.AgingConfig{StaleAfter: 1, HalfLife: 2}},
			func(c Config) bool {
				return c.Attempts == 5 && c.AttemptTimeout == time.Second && c.Aging.StaleAfter == 1 && c.Aging.HalfLife == 2
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(); !tt.check(got) {
				t.Errorf("withDefaults() = %+v", got)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Config{}, nil); err == nil {
		t.Error("New with a nil placement succeeded")
	}
	cl := newCluster(t, withLayers(1))
	if _, err := New(Config{Aging: routing.AgingConfig{StaleAfter: -1}}, cl.p); !errors.Is(err, routing.ErrInvalidConfig) {
		t.Errorf("New with bad aging: %v, want routing.ErrInvalidConfig", err)
	}
	reg := prometheus.NewRegistry()
	c := newTestClient(t, cl.p, withRegisterer(reg))
	if _, err := New(Config{Registerer: reg}, cl.p); err == nil {
		t.Error("a second client on the same Registerer succeeded")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := c.Get(testCtx(t), "k"); err == nil {
		t.Error("Get after Close succeeded")
	}
}
