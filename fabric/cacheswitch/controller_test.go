package cacheswitch_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// controlled is a software switch behind a primary session and its
// controller, with a map whose spine member 0 is the switch.
type controlled struct {
	sw   *softswitch.Switch
	conn *stratum.Conn
	c    *cacheswitch.Controller
	m    *partmap.Map
	info *p4configv1.P4Info
}

var quiet = slog.New(slog.DiscardHandler)

func newControlled(t *testing.T) *controlled {
	t.Helper()
	sw := switchtest.NewSwitch(t, 2)
	addr := switchtest.Serve(t, sw)
	ctx := t.Context()
	conn, err := stratum.Dial(ctx, stratum.Config{Address: addr, DeviceID: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	info, err := pipelines.ProgramP4Info(softswitch.Program)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.SetPipeline(ctx, info, nil, 1); err != nil {
		t.Fatal(err)
	}
	m, err := partmap.Build(partmap.Spec{Cluster: "c", Racks: 1, ShardsPerRack: 2,
		Layers:    []partmap.LayerSpec{{Name: "spine", Nodes: 1, Switch: true}},
		Addresses: addrs{sw: sw.Addr().String()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cacheswitch.New(ctx, conn, cacheswitch.Config{Member: m.Layers[0].Members[0].Name, Info: info, Lease: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &controlled{sw: sw, conn: conn, c: c, m: m, info: info}
}

type addrs struct{ sw string }

func (a addrs) ShardAddress(_, s int) string     { return fmt.Sprintf("127.0.0.1:%d", 7000+s) }
func (a addrs) MemberAddress(string, int) string { return a.sw }

func (k *controlled) renew(t *testing.T, m *partmap.Map) {
	t.Helper()
	p, err := partmap.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.c.Renew(t.Context(), p, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func (k *controlled) register(t *testing.T, name string) uint64 {
	t.Helper()
	info, _, _ := k.sw.Pipeline()
	id, _ := pipelines.ObjectID(info, name)
	es, err := k.conn.Read(context.Background(), &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: id, Index: &p4v1.Index{Index: 0}}}})
	if err != nil || len(es) != 1 {
		t.Fatalf("read %s: %v", name, err)
	}
	return pipelines.BytesUint(es[0].GetRegisterEntry().GetData().GetBitstring())
}

func (k *controlled) entries(t *testing.T, table string) int {
	t.Helper()
	info, _, _ := k.sw.Pipeline()
	id, _ := pipelines.ObjectID(info, table)
	es, err := k.conn.Read(context.Background(), &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestRenewFollowsTheMap: an Active member gets its coherence and read
// ports, the shims' routes and a lease in the switch's clock; a Failed one
// keeps its addresses but loses its lease.
func TestRenewFollowsTheMap(t *testing.T) {
	k := newControlled(t)
	k.renew(t, k.m)
	if n := k.entries(t, "switch_address"); n != 3 {
		t.Errorf("switch_address holds %d entries, want the coherence port and 2 read ports", n)
	}
	if n := k.entries(t, "storage_route"); n != 2 {
		t.Errorf("storage_route holds %d entries, want 2", n)
	}
	if until, clock := k.register(t, "lease_until"), k.register(t, "clock"); until <= clock {
		t.Errorf("lease until %d, clock %d: an Active member's lease runs ahead of the clock", until, clock)
	}
	failed, _, err := k.m.WithState(k.m.Layers[0].Members[0].Name, partmap.Failed)
	if err != nil {
		t.Fatal(err)
	}
	k.renew(t, failed)
	if until := k.register(t, "lease_until"); until != 0 {
		t.Errorf("a Failed member's lease runs until %d", until)
	}
	if n := k.c.Stats().LeaseDenied.Load(); n != 1 {
		t.Errorf("%d renewals denied, want 1", n)
	}
}
