package checker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/workload"
	"github.com/distcache/distcache/workload/history"
)

// startCluster starts a cluster of 2 racks (a shard each), 2 spine and 2
// leaf nodes that publishes its map to a file; it returns the cluster and
// a checker configuration for it (with every Redis address known).
func startCluster(t *testing.T) (*clustertest.Cluster, Config) {
	t.Helper()
	mapFile := filepath.Join(t.TempDir(), "map.json")
	c := clustertest.Start(t, clustertest.Config{Name: "chk", Racks: 2, ShardsPerRack: 1, Spine: 2, MapFile: mapFile})
	redisAddrs := map[string]string{}
	for shard, r := range c.Redis {
		redisAddrs[shard] = r.Addr()
	}
	return c, Config{
		MapFile: mapFile, MapPoll: 20 * time.Millisecond, Redis: redisAddrs,
		Keys: 16, Skew: 1, WriteRatio: 0.3, DeleteShare: 0.2, Clients: 2, Workers: 8, Seed: 7,
		Duration: time.Minute, MaxOps: 2000, OpTimeout: 2 * time.Second,
		Client: client.Config{AttemptTimeout: 500 * time.Millisecond},
	}
}

// TestRunPassesOnAHealthyCluster runs a workload bounded by its operation
// count on a healthy cluster: the verdict passes, every key is read back
// both ways, and the verdict files are written.
func TestRunPassesOnAHealthyCluster(t *testing.T) {
	_, cfg := startCluster(t)
	cfg.OutDir = t.TempDir()
	var ready atomic.Int32
	cfg.Ready = func() { ready.Add(1) }
	v, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(v.Summary())
	if !v.Pass() {
		var b strings.Builder
		_ = v.WriteText(&b)
		t.Fatalf("a healthy cluster did not pass:\n%s", b.String())
	}
	c := v.Counts
	if c.Operations != cfg.MaxOps || c.Gets+c.Puts+c.Deletes != c.Operations || c.Puts == 0 || c.Deletes == 0 || c.Gets == 0 {
		t.Fatalf("counts %+v, want %d operations of every kind", c, cfg.MaxOps)
	}
	if v.EndedBy != EndedAtMaxOps {
		t.Errorf("workload ended by %q, want %q", v.EndedBy, EndedAtMaxOps)
	}
	if c.Preload < int64(cfg.Keys) || ready.Load() != 1 {
		t.Fatalf("%d preload writes for %d keys, Ready called %d times", c.Preload, cfg.Keys, ready.Load())
	}
	if v.Routed.Read != cfg.Keys || v.Direct == nil || v.Direct.Read != cfg.Keys || v.Linearizability.Keys != cfg.Keys {
		t.Fatalf("read back %d keys routed, %+v direct, checked %d; want %d each", v.Routed.Read, v.Direct, v.Linearizability.Keys, cfg.Keys)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.OutDir, VerdictJSON))
	if err != nil {
		t.Fatal(err)
	}
	var back Verdict
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Result != Pass || back.Counts != v.Counts {
		t.Fatalf("verdict.json holds %s %+v, want the verdict returned", back.Result, back.Counts)
	}
	text, err := os.ReadFile(filepath.Join(cfg.OutDir, VerdictText))
	if err != nil || !strings.HasPrefix(string(text), v.Summary()+"\n") {
		t.Fatalf("verdict.txt does not start with the summary (%v):\n%s", err, text)
	}
}

// TestEndWorkloadEndsTheRunEarly follows the map through a Source rather
// than a file name and ends a workload bounded by an hour once it has run
// a few hundred operations: the run goes on to its read-back and passes,
// and the verdict names the source.
func TestEndWorkloadEndsTheRunEarly(t *testing.T) {
	_, cfg := startCluster(t)
	cfg.MapSource, cfg.MapFile = mapwatch.File(cfg.MapFile), ""
	cfg.Duration, cfg.MaxOps = time.Hour, 1_000_000
	var chk *Checker
	cfg.Progress = func(p Progress) {
		if p.Phase == Working && p.Counts.Operations >= 300 {
			chk.EndWorkload()
		}
	}
	chk, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chk.Close() })
	v, err := chk.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !v.Pass() || v.Counts.Operations < 300 || v.Counts.Operations >= cfg.MaxOps || v.Settings.MapFile != cfg.MapSource.String() {
		t.Fatalf("ended run: %s, %d operations, map %q; want a pass after at least 300 operations, map %q",
			v.Summary(), v.Counts.Operations, v.Settings.MapFile, cfg.MapSource.String())
	}
	if v.EndedBy != EndedOnRequest {
		t.Errorf("workload ended by %q, want %q", v.EndedBy, EndedOnRequest)
	}
}

// TestRateBoundsTheWorkload runs a workload of a second at 200 operations
// per second: it runs no more operations than the rate and the workers'
// burst allow in the time it took.
func TestRateBoundsTheWorkload(t *testing.T) {
	_, cfg := startCluster(t)
	cfg.Rate, cfg.Duration, cfg.MaxOps = 200, time.Second, 1_000_000
	v, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if most := int64(cfg.Rate*v.Elapsed.Seconds()) + int64(cfg.Workers); !v.Pass() || v.Counts.Operations == 0 || v.Counts.Operations > most {
		t.Fatalf("%s: %d operations in %v, want at least one and at most %d", v.Summary(), v.Counts.Operations, v.Elapsed, most)
	}
	if v.EndedBy != EndedAtDuration {
		t.Errorf("workload ended by %q, want %q", v.EndedBy, EndedAtDuration)
	}
}

// TestStaleClientsKeepTheirMapWhileFrozen freezes the stale client as the
// workload starts, fails a spine node in the map, and thaws the client once
// the run has seen the new map: the verdict records both events, and the
// history stays linearizable with a client routing by the old map.
func TestStaleClientsKeepTheirMapWhileFrozen(t *testing.T) {
	cl, cfg := startCluster(t)
	cfg.StaleClients, cfg.MaxOps, cfg.Duration = 1, 1_000_000, 3*time.Second
	started := make(chan struct{})
	var chk *Checker
	cfg.Ready = func() {
		chk.Freeze()
		close(started)
	}
	chk, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chk.Close() })
	type result struct {
		v   *Verdict
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := chk.Run(context.WithoutCancel(t.Context()))
		done <- result{v, err}
	}()
	<-started
	if err := cl.SetState(cl.Members(0)[0], partmap.Failed); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the run sees map version 2", func() bool { return chk.MapVersion() == 2 })
	if chk.clients[0].Placement().Version() != 1 || chk.clients[1].Placement().Version() != 2 {
		t.Fatalf("while frozen: stale client on map %d, following client on %d; want 1 and 2",
			chk.clients[0].Placement().Version(), chk.clients[1].Placement().Version())
	}
	chk.Thaw()
	if got := chk.clients[0].Placement().Version(); got != 2 {
		t.Fatalf("thawed stale client on map %d, want 2", got)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Log(r.v.Summary())
	if !r.v.Pass() {
		var b strings.Builder
		_ = r.v.WriteText(&b)
		t.Fatalf("stale clients broke the cluster's promises:\n%s", b.String())
	}
	want := []StaleEvent{{Frozen: true, StaleMap: 1, CurrentMap: 1}, {StaleMap: 1, CurrentMap: 2}}
	got := r.v.Stale
	for i := range got {
		got[i].At = 0
	}
	if !reflect.DeepEqual(got, want) || r.v.FirstMap != 1 || r.v.LastMap != 2 {
		t.Fatalf("stale events %+v, maps %d → %d; want %+v, 1 → 2", got, r.v.FirstMap, r.v.LastMap, want)
	}
}

// TestRunFindsWritesBehindTheCachesBack overwrites every key in Redis,
// bypassing the shims, as the read-only workload starts. Every read goes
// to the shims (the clients bypass the caches), so each key's history reads
// a value no write wrote, and both read-backs find it: the verdict fails
// with a violation and two lost writes per key, each with its files.
func TestRunFindsWritesBehindTheCachesBack(t *testing.T) {
	_, cfg := startCluster(t)
	cfg.WriteRatio, cfg.Keys, cfg.MaxOps, cfg.OutDir = 0, 4, 200, t.TempDir()
	cfg.Client.Bypass = true
	cfg.Ready = func() {
		for _, addr := range cfg.Redis {
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			for id := range uint64(cfg.Keys) {
				if err := rdb.Set(t.Context(), DefaultKeyPrefix+workload.Key(id), "intruder", 0).Err(); err != nil {
					t.Error(err)
				}
			}
			_ = rdb.Close()
		}
	}
	v, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(v.Summary())
	lin := v.Linearizability
	if v.Result != Fail || len(lin.Violations) != cfg.Keys || len(v.Routed.Lost) != cfg.Keys || v.Direct == nil || len(v.Direct.Lost) != cfg.Keys {
		t.Fatalf("verdict %s with %d violations, %d and %+v lost; want FAIL with %d each", v.Result, len(lin.Violations), len(v.Routed.Lost), v.Direct, cfg.Keys)
	}
	for _, vi := range lin.Violations {
		last := vi.Prefix[len(vi.Prefix)-1]
		if last.Kind != history.Get || last.Value != "intruder" {
			t.Errorf("key %s: the failing prefix ends with %s, want the read of the intruder", vi.Key, last)
		}
		if _, err := os.Stat(vi.Visualization); err != nil {
			t.Errorf("key %s: no visualization: %v", vi.Key, err)
		}
		if _, err := os.Stat(v.Histories[vi.Key]); err != nil {
			t.Errorf("key %s: no history file: %v", vi.Key, err)
		}
	}
	for _, l := range v.Direct.Lost {
		if l.Got != (history.Observed{Value: "intruder", Found: true}) || len(l.Allowed.Values) != 1 || l.Allowed.NotFound {
			t.Errorf("lost write %s, want the intruder where only the preload value could be", l)
		}
	}
}
