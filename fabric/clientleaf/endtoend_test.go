package clientleaf_test

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/fabric/clientleaf"
	"github.com/distcache/distcache/internal/testing/clustertest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// TestReadsThroughTheClientLeaf: in a cluster whose spine is two software
// cache switches (real redis, shims, switches and their controllers on
// loopback), a software client leaf programmed from the cluster's map
// takes a GET sent to its read port of the key's shard to the key's
// spine switch, which relays the miss to the shim, and returns the value
// to the client under the client's sequence number with the spine's
// telemetry, whose load the leaf has learned.
func TestReadsThroughTheClientLeaf(t *testing.T) {
	c := clustertest.Start(t, clustertest.Config{Name: "lab", Racks: 2, ShardsPerRack: 1, Spine: 2, SwitchSpine: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	values := map[string][]byte{}
	cl := c.NewClient(client.Config{})
	for i := range 8 {
		key, value := fmt.Sprintf("key-%d", i), []byte(fmt.Sprintf("value of key %d", i))
		if err := cl.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
		values[key] = value
	}

	leaf, conn := dialLeaf(t, 2)
	info := p4info(t, softswitch.ClientLeafProgram).P4Info
	if err := conn.SetPipeline(ctx, info, nil, 1); err != nil {
		t.Fatal(err)
	}
	ctl, err := clientleaf.New(clientleaf.Config{Addr: leaf.Addr(), Info: info, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Placement()
	if _, err := ctl.Apply(ctx, conn, p); err != nil {
		t.Fatal(err)
	}

	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Retransmit: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	ep.Start(nil)
	spines := map[uint32]bool{}
	for key, value := range values {
		readPort := netip.AddrPortFrom(leaf.Addr().Addr(), partmap.SwitchReadPort(leaf.Addr().Port(), p.ShardIndex(key)))
		r, err := ep.Call(ctx, readPort, &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte(key)})
		if err != nil {
			t.Fatalf("GET %s through the client leaf: %v", key, err)
		}
		if r.Status != wire.StatusOK || !bytes.Equal(r.Value, value) {
			t.Fatalf("GET %s through the client leaf: status %v, value %q; want %q", key, r.Status, r.Value, value)
		}
		owner := p.Owners(key, nil)[0]
		if !owner.Switch || r.NodeID != owner.Node {
			t.Fatalf("GET %s: answered by member %d, its spine is %+v", key, r.NodeID, owner)
		}
		if got := memberLoad(t, conn, r.NodeID); got != uint64(r.Load) {
			t.Fatalf("GET %s: the leaf holds load %d for member %d, the reply carried %d", key, got, r.NodeID, r.Load)
		}
		spines[r.NodeID] = true
	}
	if len(spines) != 2 {
		t.Errorf("the reads went to spines %v, want both", spines)
	}
}

func memberLoad(t *testing.T, conn interface {
	Read(context.Context, ...*p4v1.Entity) ([]*p4v1.Entity, error)
}, member uint32) uint64 {
	t.Helper()
	info := p4info(t, softswitch.ClientLeafProgram).P4Info
	id, _ := pipelines.ObjectID(info, "member_load")
	es, err := conn.Read(context.Background(), &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
		RegisterId: id, Index: &p4v1.Index{Index: int64(member % 1024)}}}})
	if err != nil || len(es) != 1 {
		t.Fatalf("read member_load[%d]: %d cells, %v", member, len(es), err)
	}
	return pipelines.BytesUint(es[0].GetRegisterEntry().GetData().GetBitstring())
}
