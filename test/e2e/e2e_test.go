package e2e

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/workload/history"
)

// standard is the workload of the end-to-end tests: 16 workers over 4
// clients, Zipf-0.99 over 200 keys, 10 % writes (1 % deletes).
func standard() workloadConfig {
	return workloadConfig{keys: 200, skew: 0.99, workers: 16, opsPerWork: 400, writeRatio: 0.1, clients: 4}
}

// TestLinearizableWithHotKeysCached runs the standard workload on 2 shards
// with a spine and a leaf layer, with malformed datagrams thrown at every
// component meanwhile, and checks that the history is linearizable and that
// the hottest key is served from the cache.
func TestLinearizableWithHotKeysCached(t *testing.T) {
	c := newCluster(t)
	h := preloaded(t, c, 200)
	cfg := standard()
	var once sync.Once
	cfg.onOp = func(n int64, _ *tally) {
		if n == 1000 {
			once.Do(func() { c.sendGarbage(t) })
		}
	}
	tl := run(t, c, h, cfg)
	t.Logf("%s: %d gets (%d hits), %d writes (%d refused, %d unknown), %d failed reads; hottest key %d/%d hits",
		c, tl.gets.Load(), tl.hits.Load(), tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load(), tl.failedReads.Load(),
		tl.hotHits.Load(), tl.hotGets.Load())
	checkLinearizable(t, h)
	if tl.hotHits.Load() == 0 {
		t.Fatalf("the hottest key was never served from a cache node (%d reads)", tl.hotGets.Load())
	}
	_, parked, malformed := c.nodeStats()
	if malformed == 0 {
		t.Fatal("no malformed datagram was counted by the cache nodes")
	}
	t.Logf("%d reads parked on a pending write and answered by its phase 2 or a fresh read", parked)
}

// TestLinearizableAuthenticated runs the standard workload on a cluster
// whose shims, nodes and clients share a data-plane key: every write and
// coherence message is signed, stamped and checked, none is rejected
// (for its MAC or as a replay: retransmissions carry new stamps), and the
// history is linearizable.
func TestLinearizableAuthenticated(t *testing.T) {
	c := newCluster(t, withDataPlaneKey(t))
	h := preloaded(t, c, 200)
	tl := run(t, c, h, standard())
	t.Logf("%s: %d gets (%d hits), %d writes (%d refused, %d unknown)",
		c, tl.gets.Load(), tl.hits.Load(), tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load())
	checkLinearizable(t, h)
	if tl.hotHits.Load() == 0 {
		t.Fatalf("the hottest key was never served from a cache node (%d reads)", tl.hotGets.Load())
	}
	if r := c.macRejected(); r != 0 {
		t.Fatalf("%d datagrams of the cluster's own were rejected for their MAC or stamp", r)
	}
}

// TestLinearizableBundled runs the standard workload on a cluster whose
// shims, nodes and clients send bundles: requests, replies and coherence
// messages that leave together for one peer travel in one datagram, the
// receivers split them, and the history stays linearizable.
func TestLinearizableBundled(t *testing.T) {
	c := newCluster(t, withBundles())
	h := preloaded(t, c, 200)
	tl := run(t, c, h, standard())
	t.Logf("%s: %d gets (%d hits), %d writes (%d refused, %d unknown), %d bundles received by nodes and shims",
		c, tl.gets.Load(), tl.hits.Load(), tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load(), c.bundlesIn())
	checkLinearizable(t, h)
	if c.bundlesIn() == 0 {
		t.Fatal("no node or shim received a bundle: the run did not exercise them")
	}
	if tl.hotHits.Load() == 0 {
		t.Fatalf("the hottest key was never served from a cache node (%d reads)", tl.hotGets.Load())
	}
}

// TestLinearizableAcrossNodeRemovalAndRestore fails a spine node (the map
// marks it failed, then its process stops) a third into the run and brings
// a fresh process back on its address two thirds in (then the map marks it
// active): the history stays linearizable and hot keys stay cached.
func TestLinearizableAcrossNodeRemovalAndRestore(t *testing.T) {
	c := newCluster(t)
	h := preloaded(t, c, 200)
	cfg := standard()
	total := cfg.ops()
	victim := c.spineMember(0)
	var (
		mu               sync.Mutex
		failed, restored bool
		addr             netip.AddrPort
	)
	cfg.onOp = func(n int64, _ *tally) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case n >= total/3 && !failed:
			addr, failed = c.failNode(victim), true
		case n >= 2*total/3 && !restored:
			c.restoreNode(victim, addr)
			restored = true
		}
	}
	tl := run(t, c, h, cfg)
	t.Logf("%s: %d gets (%d hits), %d writes (%d refused, %d unknown), %d failed reads",
		c, tl.gets.Load(), tl.hits.Load(), tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load(), tl.failedReads.Load())
	checkLinearizable(t, h)
	if tl.hits.Load() == 0 {
		t.Fatal("no read was served from a cache node")
	}
	if v := c.Placement().Version(); v != 3 {
		t.Fatalf("map version %d after removal and restore, want 3", v)
	}
}

// TestLinearizableWhileCopiesChange runs the standard workload while the
// map changes the copies of the three hottest keys (partmap.KeyCopies, as
// the control loop's cost-and-benefit decision does): a fifth into the run
// every spine and their leaf hold them (three copies), two fifths in only
// the spine that is not their owner does (one copy, moved), three fifths
// in none does (not cached), four fifths in they are back to one copy per
// layer. The history stays linearizable; the spine that holds the hottest
// key only by decision serves it from its cache, and once the key has no
// copies no node holds it.
func TestLinearizableWhileCopiesChange(t *testing.T) {
	c := newCluster(t)
	h := preloaded(t, c, 200)
	hot := []string{keyName(0), keyName(1), keyName(2)}
	spines, defaults := c.Members(0), map[string][]string{}
	for _, k := range hot {
		defaults[k] = c.owners(k)
	}
	// other is the spine that does not own key by default.
	other := func(key string) string {
		for _, s := range spines {
			if !slices.Contains(defaults[key], s) {
				return s
			}
		}
		t.Fatalf("every spine owns %q", key)
		return ""
	}
	decided := func(members func(key string) []string) []partmap.KeyCopies {
		var out []partmap.KeyCopies
		for _, k := range hot {
			out = append(out, partmap.KeyCopies{Key: []byte(k), Members: members(k)})
		}
		return out
	}
	cfg := standard()
	total := cfg.ops()
	var (
		mu          sync.Mutex
		phase       int
		onOtherOnly bool // the hottest key was cached where only a decision puts it
		leftover    []string
	)
	cfg.onOp = func(n int64, _ *tally) {
		mu.Lock()
		defer mu.Unlock()
		if phase == 1 || phase == 2 {
			onOtherOnly = onOtherOnly || slices.Contains(c.cachedAt(hot[0]), other(hot[0]))
		}
		if n < int64(phase+1)*total/5 || phase == 4 {
			return
		}
		phase++
		switch phase {
		case 1:
			c.setCopies(decided(func(k string) []string { return append(slices.Clone(defaults[k]), other(k)) })...)
		case 2:
			c.setCopies(decided(func(k string) []string { return []string{other(k)} })...)
		case 3:
			c.setCopies(decided(func(string) []string { return nil })...)
			leftover = append(leftover, c.cachedAt(hot[0])...)
		case 4:
			c.setCopies()
		}
	}
	tl := run(t, c, h, cfg)
	t.Logf("%s: %d gets (%d hits), %d writes (%d refused, %d unknown), %d failed reads; hottest key %d/%d hits",
		c, tl.gets.Load(), tl.hits.Load(), tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load(), tl.failedReads.Load(),
		tl.hotHits.Load(), tl.hotGets.Load())
	checkLinearizable(t, h)
	if phase != 4 {
		t.Fatalf("the run ended in phase %d of 4", phase)
	}
	if !onOtherOnly {
		t.Errorf("the hottest key was never cached on %s, which holds it only by decision", other(hot[0]))
	}
	if len(leftover) > 0 {
		t.Errorf("with no copies decided, the hottest key was still cached on %v", leftover)
	}
	if v := c.Placement().Version(); v != 5 {
		t.Errorf("map version %d after four changes of copies, want 5", v)
	}
}

// TestRedisKilledAndRestarted kills the redis-server of one shard (SIGKILL)
// a quarter into the run and restarts it once writes have failed: while it
// is down, writes of its keys fail with ErrUnavailable (promptly, not by
// timeout); afterwards they succeed, and reading every key back finds no
// acknowledged write lost (the history with the final reads is
// linearizable).
func TestRedisKilledAndRestarted(t *testing.T) {
	c := newCluster(t, withAppendOnlyRedis())
	h := history.NewRecorder()
	cl := c.newClient()
	preload(t, h, cl, 200)
	cfg := standard()
	// A write waits for its answer well past the shim's own budgets (phase 1,
	// Redis dial and I/O, each a second or less) and any queue behind its
	// key's lock on a loaded machine: a timeout means a write the shim
	// never answered, not a slow one.
	cfg.writeTimeout = time.Minute
	total := cfg.ops()
	var kill, enough sync.Once
	killNow, restartNow := make(chan struct{}), make(chan struct{})
	cfg.onOp = func(n int64, tl *tally) {
		if n == total/4 {
			kill.Do(func() { close(killNow) })
		}
		if tl.unknownWrites.Load() >= 10 || n == 3*total/4 {
			enough.Do(func() { close(restartNow) })
		}
	}
	victim := c.Redis[c.ShardOf(keyName(0))] // the hottest key's shard
	wait := start(t, c, h, cfg)
	<-killNow
	victim.Stop()
	<-restartNow
	victim.Restart()
	tl := wait()
	readBack(t, h, cl, 200)
	t.Logf("%s: %d gets (%d hits), %d writes (%d refused, %d failed while Redis was down), %d failed reads",
		c, tl.gets.Load(), tl.hits.Load(), tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load(), tl.failedReads.Load())
	if tl.unknownWrites.Load() == 0 {
		t.Fatal("no write failed while Redis was down")
	}
	if n := tl.timeouts.Load(); n > 0 {
		t.Fatalf("%d writes timed out instead of failing cleanly", n)
	}
	checkLinearizable(t, h)
}

// sendGarbage sends malformed datagrams to every node and shim.
func (c *cluster) sendGarbage(t *testing.T) {
	var addrs []string
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.Addr().String())
	}
	for _, s := range c.Shims {
		addrs = append(addrs, s.Addr().String())
	}
	for _, a := range addrs {
		conn, err := (&net.Dialer{}).DialContext(t.Context(), "udp", a)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, b := range [][]byte{[]byte("garbage"), make([]byte, 64), {0xDC, 0xAC, 1, 1}} {
			_, _ = conn.Write(b)
		}
		_ = conn.Close()
	}
}
