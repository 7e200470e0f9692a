package switchtest

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// CacheValue fills slot of sw with key's value as the data plane fills
// it (lookup entry, value words and length, valid bit), through the
// switch's own write path: a cached key the controller did not insert,
// which only the switch's state holds. The switch serves it while its
// lease lasts.
func CacheValue(t testing.TB, sw *softswitch.Switch, key string, slot uint32, value []byte) {
	t.Helper()
	info, _, ok := sw.Pipeline()
	if !ok {
		t.Fatal("the switch runs no pipeline")
	}
	id := func(name string) uint32 {
		v, ok := pipelines.ObjectID(info, name)
		if !ok {
			t.Fatalf("no %s in the switch's P4Info", name)
		}
		return v
	}
	d := hashing.DigestOfString(key)
	ups := []*p4v1.Update{p4entity.Update(p4v1.Update_INSERT,
		p4entity.TableEntry(id("cache_lookup"), id("cached"), [][]byte{d[:]}, p4entity.U32(slot)))}
	const wordsPerSlot = 16
	for i := 0; i*8 < len(value); i++ {
		var w [8]byte
		copy(w[:], value[i*8:])
		ups = append(ups, p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(id("value_words"), int64(slot)*wordsPerSlot+int64(i), w[:])))
	}
	ups = append(ups,
		p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(id("value_len"), int64(slot), []byte{byte(len(value))})),
		p4entity.Update(p4v1.Update_MODIFY, p4entity.Register(id("valid"), int64(slot), []byte{1})))
	for i, err := range sw.Write(ups) {
		if err != nil {
			t.Fatalf("cannot cache %s: update %d: %v", key, i, err)
		}
	}
}

// RouteShard gives sw a storage_route of shard to shim, through the
// switch's own write path, as the controller writes one for a shim whose
// address resolves.
func RouteShard(t testing.TB, sw *softswitch.Switch, shard uint32, shim netip.AddrPort) {
	t.Helper()
	info, _, ok := sw.Pipeline()
	if !ok {
		t.Fatal("the switch runs no pipeline")
	}
	table, _ := pipelines.ObjectID(info, "storage_route")
	action, _ := pipelines.ObjectID(info, "to_shim")
	a4 := shim.Addr().As4()
	e := p4entity.TableEntry(table, action, [][]byte{p4entity.U32(shard)}, a4[:], p4entity.U16(shim.Port()))
	if err := sw.Write([]*p4v1.Update{p4entity.Update(p4v1.Update_INSERT, e)})[0]; err != nil {
		t.Fatalf("cannot route shard %d: %v", shard, err)
	}
}

// Get reads key from a switch's read port and returns the reply (FlagHit
// set when the switch served it from its cache).
func Get(t testing.TB, readPort netip.AddrPort, key string) wire.Message {
	t.Helper()
	e, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Retransmit: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.Start(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := e.Call(ctx, readPort, &wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte(key)})
	if err != nil {
		t.Fatalf("GET %s from %s: %v", key, readPort, err)
	}
	return r
}

// CacheHits reads the switch's cache_hits counter of slot.
func CacheHits(t testing.TB, sw *softswitch.Switch, slot uint32) uint64 {
	t.Helper()
	info, _, ok := sw.Pipeline()
	if !ok {
		t.Fatal("the switch runs no pipeline")
	}
	id, _ := pipelines.ObjectID(info, "cache_hits")
	es, err := sw.Read([]*p4v1.Entity{p4entity.CounterCell(id, int64(slot))})
	if err != nil || len(es) != 1 {
		t.Fatalf("cannot read cache_hits[%d]: %d cells, %v", slot, len(es), err)
	}
	return uint64(es[0].GetCounterEntry().GetData().GetPacketCount())
}

// PipelineConfig reads the forwarding pipeline config of the switch at
// the P4Runtime address addr over gRPC (GetForwardingPipelineConfig,
// ALL): the device config and cookie exactly as the switch holds them;
// an error before a pipeline was pushed.
func PipelineConfig(addr string, deviceID uint64) (*p4v1.ForwardingPipelineConfig, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := p4v1.NewP4RuntimeClient(cc).GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId: deviceID, ResponseType: p4v1.GetForwardingPipelineConfigRequest_ALL})
	if err != nil {
		return nil, fmt.Errorf("cannot read the pipeline of %s: %w", addr, err)
	}
	return resp.GetConfig(), nil
}
