package fleet_test

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/fleet"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// compiled is a build of the v1model pipeline with the kept P4Info file
// (the software switch takes no other) and device config.
func compiled(t *testing.T, p4info []byte, deviceConfig string) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.Compiled("distcache-v1model", p4info, []byte(deviceConfig))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type oneSwitch struct{ addr string }

func (oneSwitch) ShardAddress(int, int) string       { return "127.0.0.1:7000" }
func (a oneSwitch) MemberAddress(string, int) string { return a.addr }

// TestUpgradeKeepsTheSwitchState: a fleet pushes a compiled program's
// exact bytes at the first session (VERIFY_AND_COMMIT); a new build of
// the same P4Info reaches the switch in that session
// (RECONCILE_AND_COMMIT), which keeps its entries, lease and cached key;
// a build with another P4Info is refused and nothing is pushed; a new
// session pushes the newest build.
func TestUpgradeKeepsTheSwitchState(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	target := switchtest.StartTarget(t, 1, 1)
	text := switchtest.CacheSwitchP4Info(t)
	build1, build2 := compiled(t, text, "\x00bmv2 build 1\xff"), compiled(t, text, "\x00bmv2 build 2\xff")
	const member = "lab-spine-0"
	f, runners := fleet.Build([]fleet.Switch{{Member: member, P4Runtime: target.P4Runtime, DeviceID: 1}},
		fleet.Config{Pipeline: build1, Controller: cacheswitch.Config{Lease: time.Hour}, Logger: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	<-runners[0].Programmed()
	assertPipeline(t, target, build1)

	m, err := partmap.Build(partmap.Spec{Cluster: "lab", Racks: 1, ShardsPerRack: 1, Addresses: oneSwitch{target.Addr().String()},
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1, Switch: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := runners[0].Renew(t.Context(), p, time.Now()); err != nil {
		t.Fatal(err)
	}
	const slot = 900
	switchtest.CacheValue(t, target.Switch(), "user:42", slot, []byte("cached before"))
	readPort := netip.AddrPortFrom(target.Addr().Addr(), partmap.SwitchReadPort(target.Addr().Port(), 0))
	hit := func(when string) {
		t.Helper()
		r := switchtest.Get(t, readPort, "user:42")
		if r.Flags&wire.FlagHit == 0 || string(r.Value) != "cached before" {
			t.Fatalf("%s: GET answered flags %#x value %q, want a hit on the cached value", when, r.Flags, r.Value)
		}
	}
	hit("before the upgrade")
	addresses := tableEntries(t, target, "switch_address")

	if err := f.Upgrade(t.Context(), build2); err != nil {
		t.Fatal(err)
	}
	assertPipeline(t, target, build2)
	hit("after the upgrade")
	if n := switchtest.CacheHits(t, target.Switch(), slot); n != 2 {
		t.Errorf("cache_hits[%d] = %d after the upgrade, want 2: the counter was reset", slot, n)
	}
	if n := tableEntries(t, target, "switch_address"); n != addresses || n == 0 {
		t.Errorf("switch_address holds %d entries after the upgrade, %d before", n, addresses)
	}
	runner := runners[0].(*cacheswitch.Runner)
	if st := runner.State(); st.Sessions != 1 || !st.Programmed || runner.RunningCookie() != build2.Cookie {
		t.Errorf("after the upgrade: state %+v, running cookie %#x; want the first session running build 2", st, runner.RunningCookie())
	}
	if err := f.Upgrade(t.Context(), build2); err != nil {
		t.Errorf("the same build again: %v", err)
	}

	// p4c's own digest id: a P4Info the check accepts, but not the one
	// the switch runs.
	info := &p4configv1.P4Info{}
	if err := prototext.Unmarshal(text, info); err != nil {
		t.Fatal(err)
	}
	info.Digests[0].Preamble.Id = 0x17000000 | 402183
	changed, err := prototext.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Upgrade(t.Context(), compiled(t, changed, "\x00bmv2 build 3\xff")); !errors.Is(err, cacheswitch.ErrP4InfoChanged) {
		t.Fatalf("another P4Info: %v, want ErrP4InfoChanged", err)
	}
	assertPipeline(t, target, build2)

	target.Stop()
	if err := target.Restart(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "a second session", func() bool { st := runners[0].State(); return st.Programmed && st.Sessions == 2 })
	assertPipeline(t, target, build2)
}

// assertPipeline checks the device config and cookie the switch holds.
func assertPipeline(t *testing.T, target *switchtest.Target, want *pipeline.Pipeline) {
	t.Helper()
	got, err := switchtest.PipelineConfig(target.P4Runtime, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.GetP4DeviceConfig()) != string(want.DeviceConfig) || got.GetCookie().GetCookie() != want.Cookie {
		t.Fatalf("the switch holds device config %q cookie %#x, want %q cookie %#x",
			got.GetP4DeviceConfig(), got.GetCookie().GetCookie(), want.DeviceConfig, want.Cookie)
	}
}

func tableEntries(t *testing.T, target *switchtest.Target, table string) int {
	t.Helper()
	info, _, _ := target.Switch().Pipeline()
	id, _ := pipelines.ObjectID(info, table)
	es, err := target.Switch().Read([]*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}
