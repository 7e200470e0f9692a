package shim

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

func TestDedupTable(t *testing.T) {
	const ttl = 10 * time.Second
	t0 := time.Unix(1000, 0)
	a := dedupKey{src: netip.MustParseAddrPort("127.0.0.1:1"), seq: 1, op: wire.OpPut}
	b := dedupKey{src: netip.MustParseAddrPort("127.0.0.1:2"), seq: 1, op: wire.OpPut}
	aDel := dedupKey{src: a.src, seq: a.seq, op: wire.OpDel}
	reply := wire.Message{Header: wire.Header{Op: wire.OpPutReply, Seq: 1, Status: wire.StatusOK, Flags: wire.FlagHit, ValueVersion: 99, MapVersion: 7}, Value: []byte("result")}
	type step struct {
		do   string // begin, complete, abandon
		k    dedupKey
		at   time.Duration
		want dedupResult
	}
	tests := []struct {
		name  string
		steps []step
		left  int
	}{
		{name: "first request executes", steps: []step{{"begin", a, 0, dedupNew}}, left: 1},
		{name: "retransmit while running is dropped", steps: []step{
			{"begin", a, 0, dedupNew}, {"begin", a, time.Second, dedupInProgress}}, left: 1},
		{name: "retransmit after completion gets the reply", steps: []step{
			{"begin", a, 0, dedupNew}, {"complete", a, time.Second, 0}, {"begin", a, 2 * time.Second, dedupDone}}, left: 1},
		{name: "other sender or op is another request", steps: []step{
			{"begin", a, 0, dedupNew}, {"begin", b, 0, dedupNew}, {"begin", aDel, 0, dedupNew}}, left: 3},
		{name: "reply expires after the TTL", steps: []step{
			{"begin", a, 0, dedupNew}, {"complete", a, time.Second, 0}, {"begin", b, time.Second + ttl, dedupNew},
			{"begin", a, time.Second + ttl, dedupNew}}, left: 2},
		{name: "running requests never expire", steps: []step{
			{"begin", a, 0, dedupNew}, {"begin", b, 10 * ttl, dedupNew}, {"begin", a, 10 * ttl, dedupInProgress}}, left: 2},
		{name: "abandoned request executes again", steps: []step{
			{"begin", a, 0, dedupNew}, {"abandon", a, 0, 0}, {"begin", a, 0, dedupNew}}, left: 1},
		{name: "abandon keeps a completed reply", steps: []step{
			{"begin", a, 0, dedupNew}, {"complete", a, 0, 0}, {"abandon", a, 0, 0}, {"begin", a, 0, dedupDone}}, left: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDedupTable(ttl)
			for i, s := range tt.steps {
				switch s.do {
				case "begin":
					got, stored := d.begin(s.k, t0.Add(s.at))
					if got != s.want {
						t.Fatalf("step %d: begin = %d, want %d", i, got, s.want)
					}
					if got == dedupDone && (stored.Header != reply.Header || string(stored.Value) != string(reply.Value)) {
						t.Fatalf("step %d: stored reply %+v %q, want %+v %q", i, stored.Header, stored.Value, reply.Header, reply.Value)
					}
				case "complete":
					d.complete(s.k, reply, t0.Add(s.at))
				case "abandon":
					d.abandon(s.k)
				}
			}
			if n := d.len(); n != tt.left {
				t.Errorf("%d entries left, want %d", n, tt.left)
			}
		})
	}
}

func TestKeyLocks(t *testing.T) {
	k := newKeyLocks()
	ctx := context.Background()
	unlockA, err := k.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Another key is not blocked by "a".
	unlockB, err := k.lock(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	unlockB()

	acquired := make(chan func(), 1)
	go func() {
		u, err := k.lock(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		acquired <- u
	}()
	eventually(t, "a waiter on a", func() bool { return k.waiters("a") == 2 })
	select {
	case <-acquired:
		t.Fatal("second holder of a while the first holds it")
	default:
	}
	// A waiter that gives up leaves no trace.
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { _, err := k.lock(cctx, "a"); gaveUp <- err }()
	eventually(t, "a second waiter on a", func() bool { return k.waiters("a") == 3 })
	cancel()
	if err := receive(t, gaveUp); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled lock: %v", err)
	}
	unlockA()
	receive(t, acquired)()
	if n := k.len(); n != 0 {
		t.Errorf("%d locks left after all released", n)
	}
}

func TestVersionClock(t *testing.T) {
	t0 := time.Unix(0, 1_000_000)
	tests := []struct {
		name string
		now  []time.Duration // clock readings after t0, one per next
		want []uint64
	}{
		{name: "follows the clock", now: []time.Duration{1, 5, 9}, want: []uint64{1_000_001, 1_000_005, 1_000_009}},
		{name: "same reading", now: []time.Duration{3, 3, 3}, want: []uint64{1_000_003, 1_000_004, 1_000_005}},
		{name: "clock steps back", now: []time.Duration{10, 2, 11}, want: []uint64{1_000_010, 1_000_011, 1_000_012}},
		{name: "clock before start", now: []time.Duration{-5}, want: []uint64{1_000_001}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c versionClock
			c.start(t0)
			for i, d := range tt.now {
				before := c.current()
				v := c.next(t0.Add(d))
				if v != tt.want[i] || v <= before || c.current() != v {
					t.Fatalf("next #%d = %d (current before %d, after %d), want %d", i, v, before, c.current(), tt.want[i])
				}
			}
		})
	}
}

// newBareShim is a shim that is never started, for configuration tests.
func newBareShim(t *testing.T, cfg Config) *Shim {
	t.Helper()
	if cfg.Shard == "" {
		cfg.Shard = partmap.ShardName(testCluster, 0, 0)
	}
	cfg.Transport.Addr = "127.0.0.1:0"
	if cfg.Redis == nil {
		cfg.Redis = &redis.Options{Addr: "127.0.0.1:1"}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// testMap builds a two-layer map; addr gives each member's address.
func testMap(t *testing.T, addr func(layer, member int) string) *partmap.Map {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{Cluster: testCluster, Racks: 1, ShardsPerRack: 1,
		Layers: []partmap.LayerSpec{{Name: "upper", Nodes: 3}, {Name: "lower", Nodes: 2}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for l := range m.Layers {
		for i := range m.Layers[l].Members {
			m.Layers[l].Members[i].Address = addr(l, i)
		}
	}
	return m
}

func compile(t *testing.T, m *partmap.Map) *partmap.Placement {
	t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigErrors(t *testing.T) {
	if _, err := New(Config{Redis: &redis.Options{}}); err == nil {
		t.Error("New without a shard name succeeded")
	}
	if _, err := New(Config{Shard: "s"}); err == nil {
		t.Error("New without Redis options succeeded")
	}
	if _, err := New(Config{Shard: "s", Redis: &redis.Options{}, Transport: transport.Config{Addr: "256.0.0.1:0"}}); err == nil {
		t.Error("New with a bad address succeeded")
	}

	s := newBareShim(t, Config{})
	if err := s.Start(); err == nil {
		t.Error("Start without a map succeeded")
	}
	m := testMap(t, func(_, _ int) string { return "" })
	other := newBareShim(t, Config{Shard: "no-such-shard"})
	if err := other.SetMap(compile(t, m)); err == nil {
		t.Error("SetMap of a map without the shim's shard succeeded")
	}
	if err := s.SetMap(nil); err == nil {
		t.Error("SetMap(nil) succeeded")
	}
	next := m.Clone()
	next.Version = 2
	if err := s.SetMap(compile(t, next)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMap(compile(t, m)); err == nil {
		t.Error("SetMap of an older version succeeded")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Error("second Start succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if st := s.Stats(); st.MapVersion != 2 {
		t.Errorf("MapVersion %d, want 2", st.MapVersion)
	}
}

func TestRedisOptionDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   redis.Options
		want redis.Options
	}{
		{name: "zero", in: redis.Options{Addr: "a"}, want: redis.Options{Addr: "a", DialTimeout: 500 * time.Millisecond,
			ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, DialerRetries: 1, PoolSize: 64}},
		{name: "set fields kept", in: redis.Options{Addr: "a", DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
			WriteTimeout: 3 * time.Second, MaxRetries: 2, DialerRetries: 3, PoolSize: 8},
			want: redis.Options{Addr: "a", DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
				WriteTimeout: 3 * time.Second, MaxRetries: 2, DialerRetries: 3, PoolSize: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			got := redisOptions(&in)
			if got.Addr != tt.want.Addr || got.DialTimeout != tt.want.DialTimeout || got.ReadTimeout != tt.want.ReadTimeout ||
				got.WriteTimeout != tt.want.WriteTimeout || got.MaxRetries != tt.want.MaxRetries ||
				got.DialerRetries != tt.want.DialerRetries || got.PoolSize != tt.want.PoolSize {
				t.Errorf("redisOptions = %+v", got)
			}
			if in.DialTimeout != tt.in.DialTimeout || in.MaxRetries != tt.in.MaxRetries {
				t.Error("redisOptions modified its argument")
			}
		})
	}
}

func TestOwners(t *testing.T) {
	const shared = "127.0.0.1:7000"
	tests := []struct {
		name string
		addr func(l, i int) string
		want int // owners of the key under one map
	}{
		{name: "one per layer", addr: func(l, i int) string {
			return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(7000+10*l+i)).String()
		}, want: 2},
		{name: "members without address skipped", addr: func(l, i int) string {
			if l == 1 {
				return ""
			}
			return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(7000+i)).String()
		}, want: 1},
		{name: "unusable address skipped", addr: func(_, _ int) string { return "no-port" }, want: 0},
		{name: "same address once", addr: func(_, _ int) string { return shared }, want: 1},
		{name: "IPv4-mapped address unmapped", addr: func(_, _ int) string { return "[::ffff:127.0.0.1]:7000" }, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newBareShim(t, Config{})
			if err := s.SetMap(compile(t, testMap(t, tt.addr))); err != nil {
				t.Fatal(err)
			}
			v := s.view.Load()
			os := v.owners("k", time.Now(), time.Hour, time.Hour)
			if len(os) != tt.want {
				t.Fatalf("owners = %v, want %d", os, tt.want)
			}
			for _, o := range os {
				if !v.cur.isServingOwner("k", o.addr) || o.addr.Addr().Is4In6() || !o.releaseAt.IsZero() {
					t.Errorf("owner %+v: not a serving owner, address mapped, or released", o)
				}
			}
			if v.cur.isServingOwner("k", netip.MustParseAddrPort("127.0.0.1:1")) {
				t.Error("an unknown address owns the key")
			}
		})
	}
}

// ownerSet is owners by name, with their release times.
func ownerSet(os []owner) map[string]time.Time {
	out := map[string]time.Time{}
	for _, o := range os {
		out[o.name] = o.releaseAt
	}
	return out
}

// TestOwnersAcrossMaps walks a member through Fenced, Failed and Active
// again, and checks which nodes a write waits for and until when.
func TestOwnersAcrossMaps(t *testing.T) {
	addr := func(l, i int) string {
		return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(7000+10*l+i)).String()
	}
	const key, release = "k", 10 * time.Second
	m1 := testMap(t, addr)
	p1 := compile(t, m1)
	x := m1.Layers[0].Members[p1.Owner(0, key)].Name
	leaf := m1.Layers[1].Members[p1.Owner(1, key)].Name
	s := newBareShim(t, Config{})
	install := func(m *partmap.Map) (before, after time.Time) {
		t.Helper()
		before = time.Now()
		if err := s.SetMap(compile(t, m)); err != nil {
			t.Fatal(err)
		}
		return before, time.Now()
	}
	within := func(what string, got, lo, hi time.Time) {
		t.Helper()
		if got.Before(lo.Add(release)) || got.After(hi.Add(release)) {
			t.Errorf("%s released at %v, want within [%v, %v] + %v", what, got, lo, hi, release)
		}
	}
	install(m1)
	if got := ownerSet(s.view.Load().owners(key, time.Now(), release, time.Hour)); len(got) != 2 || !got[x].IsZero() || !got[leaf].IsZero() {
		t.Fatalf("all Active: owners %v, want %s and %s waited for", got, x, leaf)
	}

	m2, _, _ := m1.WithState(x, partmap.Fenced)
	fencedLo, fencedHi := install(m2)
	got := ownerSet(s.view.Load().owners(key, time.Now(), release, time.Hour))
	if len(got) != 2 || !got[leaf].IsZero() {
		t.Fatalf("fenced: owners %v, want %s and %s", got, x, leaf)
	}
	within("fenced owner", got[x], fencedLo, fencedHi)

	m3, _, _ := m2.WithState(x, partmap.Failed)
	install(m3)
	z := m3.Layers[0].Members[compile(t, m3).Owner(0, key)].Name
	got = ownerSet(s.view.Load().owners(key, time.Now(), release, time.Hour))
	if len(got) != 3 || !got[z].IsZero() || !got[leaf].IsZero() {
		t.Fatalf("failed: owners %v, want %s (new owner) and %s waited for, and %s", got, z, leaf, x)
	}
	within("failed owner, released from when it was fenced", got[x], fencedLo, fencedHi)

	// Re-installing the current version keeps the replaced maps and times.
	v := s.view.Load()
	install(m3)
	if w := s.view.Load(); len(w.past) != len(v.past) || !w.inactiveSince[x].Equal(v.inactiveSince[x]) {
		t.Error("re-setting the same version changed the replaced maps or the fencing times")
	}

	m4, _, _ := m3.WithState(x, partmap.Active)
	restoredLo, restoredHi := install(m4)
	got = ownerSet(s.view.Load().owners(key, time.Now(), release, time.Hour))
	if len(got) != 3 || !got[x].IsZero() || !got[leaf].IsZero() {
		t.Fatalf("restored: owners %v, want %s and %s waited for, and %s", got, x, leaf, z)
	}
	within("owner that gave the key back", got[z], restoredLo, restoredHi)
	if _, ok := s.view.Load().inactiveSince[x]; ok {
		t.Errorf("restored member %s still recorded as inactive", x)
	}
}
