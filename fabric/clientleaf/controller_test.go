package clientleaf_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/fabric/clientleaf"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

var quiet = slog.New(slog.DiscardHandler)

// addresser gives every switch member an address of its own, with room
// for its read ports; nothing listens there (the test reads the leaf's
// tables, it sends no packets).
type addresser struct{}

func (addresser) ShardAddress(r, s int) string { return fmt.Sprintf("127.0.0.1:%d", 7000+10*r+s) }
func (addresser) MemberAddress(layer string, i int) string {
	if layer == "spine" {
		return fmt.Sprintf("127.0.0.%d:8000", 11+i)
	}
	return fmt.Sprintf("127.0.0.%d:9000", 21+i)
}

// switchMap is a map with a switch spine of two members on a ring and a
// storage-leaf switch per rack.
func switchMap(t *testing.T) *partmap.Map {
	t.Helper()
	m, err := partmap.Build(partmap.Spec{Cluster: "lab", Racks: 2, ShardsPerRack: 2, Addresses: addresser{},
		Layers: []partmap.LayerSpec{
			{Name: "spine", Nodes: 2, Switch: true, VirtualNodes: 16},
			{Name: "leaf", BoundToRacks: true, Switch: true},
		}}, nil)
	if err != nil {
		t.Fatal(err)
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

func withState(t *testing.T, m *partmap.Map, member string, s partmap.MemberState) *partmap.Map {
	t.Helper()
	next, _, err := m.WithState(member, s)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// dialLeaf starts a software client leaf with P4Runtime on loopback and
// opens a primary session with it.
func dialLeaf(t *testing.T, readPorts int) (*switchtest.Target, *stratum.Conn) {
	t.Helper()
	leaf := switchtest.StartClientLeaf(t, readPorts, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := stratum.Dial(ctx, stratum.Config{Address: leaf.P4Runtime, DeviceID: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return leaf, conn
}

func p4info(t *testing.T, program string) *p4v1.ForwardingPipelineConfig {
	t.Helper()
	info, err := pipelines.ProgramP4Info(program)
	if err != nil {
		t.Fatal(err)
	}
	return &p4v1.ForwardingPipelineConfig{P4Info: info}
}

// route is what the leaf's tables say of key: the member ids of its spine
// and storage leaf (0: none), looked up in the entries read back as the
// program looks them up.
func route(t *testing.T, es []*p4v1.Entity, key string, shard int) (spine, leaf uint64) {
	t.Helper()
	pt := partmap.SwitchPoint(key)
	for _, e := range es {
		te := e.GetTableEntry()
		id := pipelines.BytesUint(te.GetAction().GetAction().GetParams()[0].GetValue())
		switch name := tableName(t, te.TableId); {
		case name == "spine_owner" && len(te.Match) == 0:
			spine = id
		case name == "spine_owner":
			r := te.Match[0].GetRange()
			if pipelines.BytesUint(r.Low) <= pt && pt <= pipelines.BytesUint(r.High) {
				spine = id
			}
		case name == "shard_leaf" && pipelines.BytesUint(te.Match[0].GetExact().Value) == uint64(shard):
			leaf = id
		}
	}
	return spine, leaf
}

// tableNames are the client leaf's tables by id.
var tableNames = map[uint32]string{}

func tableName(t *testing.T, id uint32) string {
	t.Helper()
	if len(tableNames) == 0 {
		for _, tb := range p4info(t, softswitch.ClientLeafProgram).P4Info.Tables {
			tableNames[tb.Preamble.Id] = tb.Preamble.Name
		}
	}
	name, ok := tableNames[id]
	if !ok {
		t.Fatalf("no table %d", id)
	}
	return name
}

func readTables(t *testing.T, conn *stratum.Conn) []*p4v1.Entity {
	t.Helper()
	es, err := conn.Read(context.Background(), &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []*p4v1.Entity
	for _, e := range es {
		if !e.GetTableEntry().IsDefaultAction {
			out = append(out, e)
		}
	}
	return out
}

// TestApplyFollowsTheMap programs a software client leaf over P4Runtime
// from map versions: every key's spine and storage leaf in the tables
// read back are its owners in the map's switch layers (Active ones only),
// a map applied twice writes nothing, and a member that fails takes its
// arcs or its rack's shards with it.
func TestApplyFollowsTheMap(t *testing.T) {
	leafAddr := netip.MustParseAddrPort("127.0.0.1:7400")
	_, conn := dialLeaf(t, 4)
	ctx := context.Background()
	if err := conn.SetPipeline(ctx, p4info(t, softswitch.Program).P4Info, nil, 1); err == nil || !strings.Contains(err.Error(), "is not v1model/client_leaf.p4's") {
		t.Fatalf("the client leaf took the cache switch's pipeline: %v", err)
	}
	info := p4info(t, softswitch.ClientLeafProgram).P4Info
	if err := conn.SetPipeline(ctx, info, nil, 1); err != nil {
		t.Fatal(err)
	}
	ctl, err := clientleaf.New(clientleaf.Config{Addr: leafAddr, Info: info, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	m := switchMap(t)
	spineFailed := withState(t, m, m.Layers[0].Members[1].Name, partmap.Failed)
	rackFailed := withState(t, spineFailed, m.Layers[1].Members[1].Name, partmap.Failed)
	spineFenced := withState(t, m, m.Layers[0].Members[0].Name, partmap.Fenced)
	for _, tc := range []struct {
		name string
		m    *partmap.Map
	}{{"all active", m}, {"spine 1 failed", spineFailed}, {"and rack 1's leaf failed", rackFailed}, {"spine 0 fenced", spineFenced}, {"all active again", m}} {
		t.Run(tc.name, func(t *testing.T) {
			p := compile(t, tc.m)
			ch, err := ctl.Apply(ctx, conn, p)
			if err != nil {
				t.Fatal(err)
			}
			if ch == (clientleaf.Changes{}) {
				t.Fatal("nothing written")
			}
			es := readTables(t, conn)
			for i := range 2000 {
				key := fmt.Sprintf("key-%d", i)
				spine, leaf := route(t, es, key, p.ShardIndex(key))
				var want [2]uint64
				for _, c := range p.Owners(key, nil) {
					if !c.Fenced && tc.m.Layers[c.Layer].Members[c.Member].State == partmap.Active {
						want[c.Layer] = uint64(c.Node)
					}
				}
				r, _ := p.Shard(key)
				if p.RackMember(1, r) < 0 {
					want[1] = 0 // the rack's keys are on the leaf layer's ring, per key: spine only
				}
				if spine != want[0] || leaf != want[1] {
					t.Fatalf("%s: the leaf's tables give spine %d, leaf %d; the map %v", key, spine, leaf, want)
				}
			}
			if ch, err := ctl.Apply(ctx, conn, p); err != nil || ch != (clientleaf.Changes{}) {
				t.Fatalf("the same map again: %+v, %v", ch, err)
			}
		})
	}
	es := readTables(t, conn)
	ports := map[uint64]uint64{}
	for _, e := range es {
		te := e.GetTableEntry()
		if tableName(t, te.TableId) == "client_read_port" {
			ports[pipelines.BytesUint(te.Match[1].GetExact().Value)] = pipelines.BytesUint(te.GetAction().GetAction().Params[0].Value)
		}
	}
	for g := range 4 {
		if s, ok := ports[uint64(partmap.SwitchReadPort(leafAddr.Port(), g))]; !ok || s != uint64(g) {
			t.Errorf("read port of shard %d: %v", g, ports)
		}
	}
}

// TestTooManyArcs: a spine ring with more arcs than spine_owner holds is
// refused before anything is written.
func TestTooManyArcs(t *testing.T) {
	m, err := partmap.Build(partmap.Spec{Cluster: "lab", Racks: 1, ShardsPerRack: 1, Addresses: addresser{},
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 4, Switch: true, VirtualNodes: 4096}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	info := p4info(t, softswitch.ClientLeafProgram).P4Info
	ctl, err := clientleaf.New(clientleaf.Config{Addr: netip.MustParseAddrPort("127.0.0.1:7400"), Info: info, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	dev := &fakeDevice{}
	if _, err := ctl.Apply(context.Background(), dev, compile(t, m)); err == nil || !strings.Contains(err.Error(), "more arcs than spine_owner's 4096 entries") {
		t.Fatalf("error %v", err)
	}
	if dev.writes != 0 {
		t.Fatalf("%d writes", dev.writes)
	}
}

// fakeDevice is a fake device: its tables read empty and it counts writes.
type fakeDevice struct{ writes int }

func (d *fakeDevice) Write(context.Context, ...*p4v1.Update) error { d.writes++; return nil }
func (d *fakeDevice) Read(context.Context, ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	return nil, nil
}
