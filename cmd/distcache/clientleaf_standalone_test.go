package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/distcache/distcache/softswitch"
	"github.com/distcache/distcache/standalone/control"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/workload/checker"
)

// clientLeafCluster is a cluster file of two racks whose spine is two
// software switches and whose storage-leaf layer is a software switch per
// rack, with a client leaf in their fabric; each switch has a data port
// range of 1 + shards. It returns the client leaf's data and P4Runtime
// addresses.
func clientLeafCluster(t *testing.T) (spec, leafData, leafP4RT string) {
	t.Helper()
	base := freeUDPBlock(t, 24)
	leafData, leafP4RT = fmt.Sprintf("127.0.0.1:%d", base+20), freeTCPAddr(t)
	spec = fmt.Sprintf(`apiVersion: distcache.io/v1alpha1
kind: SwitchFabric
metadata: {name: lab}
spec:
  driver: stratum
  pipeline: distcache-v1model
  switches:
    - {name: a, deviceID: 1, role: spine, p4runtimeAddress: %q, dataAddress: "127.0.0.1:%d"}
    - {name: b, deviceID: 2, role: spine, p4runtimeAddress: %q, dataAddress: "127.0.0.1:%d"}
    - {name: r0, deviceID: 3, role: storage-leaf, rack: 0, p4runtimeAddress: %q, dataAddress: "127.0.0.1:%d"}
    - {name: r1, deviceID: 4, role: storage-leaf, rack: 1, p4runtimeAddress: %q, dataAddress: "127.0.0.1:%d"}
    - {name: c0, deviceID: 5, role: client-leaf, p4runtimeAddress: %q, dataAddress: %q}
---
apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: cl}
spec:
  storage: {racks: 2, shardsPerRack: 1}
  layers:
    - {name: spine, backend: switch, switch: {fabricRef: lab, role: spine}}
    - {name: leaf, backend: switch, boundToRacks: true, switch: {fabricRef: lab, role: storage-leaf}}
  hotKeys: {interval: 200ms, threshold: 2}
  coherence: {servingLease: 200ms}
  failover: {gracePeriod: 100ms, holdDown: 1s}
`, freeTCPAddr(t), base, freeTCPAddr(t), base+4, freeTCPAddr(t), base+8, freeTCPAddr(t), base+12, leafP4RT, leafData)
	return spec, leafData, leafP4RT
}

// TestUpWithClientLeaf runs a cluster whose spine and storage-leaf layers
// are software switches, with a client leaf programmed by the fabric
// controller from the map: `distcache check --client-leaf` reads through
// the leaf under a workload with writes, and its history is linearizable
// with no lost write; the leaf's choices counter shows reads sent to both
// the spine and the storage leaf. With the leaf paused, reads fall back
// to the clients' own choice and the history is still linearizable. The
// standalone gateway reads through the leaf too.
func TestUpWithClientLeaf(t *testing.T) {
	bin := buildDistcache(t)
	spec, leafData, leafP4RT := clientLeafCluster(t)
	file, runDir := clusterFile(t, bin, spec)
	out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir)
	if err != nil || !strings.Contains(out, "4 software switches, 1 client leaf and 1 fabric controller") {
		t.Fatalf("up: %v\n%s", err, out)
	}
	st := status(t, bin, runDir)
	var leaf, gateway control.Process
	for _, p := range st.Processes {
		switch p.Kind {
		case "client-leaf":
			leaf = p
		case "gateway":
			gateway = p
		}
	}
	if leaf.Name != "cl-c0" || !leaf.Ready || leaf.Addr != leafData || leaf.MemberState != "" {
		t.Fatalf("client leaf process %+v", leaf)
	}
	out, err = run(t, bin, "status", "--run-dir", runDir)
	if err != nil || !strings.Contains(out, "client-leaf  cl-c0") {
		t.Fatalf("status: %v\n%s", err, out)
	}

	counts := checkThroughLeaf(t, bin, runDir, leafData, "with the leaf up", func() {})
	if counts.LeafReads == 0 {
		t.Fatalf("no read went through the client leaf: %+v", counts)
	}
	spine, storageLeaf := choices(t, leafP4RT)
	t.Logf("the client leaf sent %d reads to the spine, %d to the storage leaf", spine, storageLeaf)
	if spine == 0 || storageLeaf == 0 {
		t.Fatalf("the client leaf chose the spine %d times and the storage leaf %d times; want both chosen", spine, storageLeaf)
	}

	// The leaf stops answering: reads fall back to the clients' own
	// choice, and the history stays linearizable.
	counts = checkThroughLeaf(t, bin, runDir, leafData, "across a paused client leaf", func() {
		if err := syscall.Kill(leaf.PID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	})
	if err := syscall.Kill(leaf.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if counts.LeafFallbacks == 0 {
		t.Fatalf("no read fell back from the paused client leaf: %+v", counts)
	}

	rdb := redis.NewClient(&redis.Options{Addr: gateway.Addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "via-gateway", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := rdb.Get(ctx, "via-gateway").Result(); err != nil || v != "v1" {
		t.Fatalf("GET through the gateway: %q, %v", v, err)
	}
	if n := scrapeCounter(t, gateway.MetricsAddr, "distcache_client_leaf_reads_total", nil); n < 1 {
		t.Fatalf("the gateway sent %v reads through the client leaf", n)
	}
}

// checkThroughLeaf runs `distcache check --client-leaf leaf` on the
// cluster of runDir, calling during once the workload starts, and
// returns its verdict's counts; the check must pass.
func checkThroughLeaf(t *testing.T, bin, runDir, leaf, what string, during func()) checker.Counts {
	t.Helper()
	v := checkPasses(t, bin, runDir, what, during, "--client-leaf", leaf)
	t.Logf("check %s: %d reads through the client leaf, %d fell back", what, v.Counts.LeafReads, v.Counts.LeafFallbacks)
	return v.Counts
}

// choices reads the client leaf's choices counter over P4Runtime (a read
// needs no arbitration): the reads it sent to a spine and to a storage
// leaf.
func choices(t *testing.T, p4rt string) (spine, leaf uint64) {
	t.Helper()
	info, err := pipelines.ProgramP4Info(softswitch.ClientLeafProgram)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := pipelines.ObjectID(info, "choices")
	conn, err := grpc.NewClient(p4rt, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rs, err := p4v1.NewP4RuntimeClient(conn).Read(t.Context(), &p4v1.ReadRequest{DeviceId: 5,
		Entities: []*p4v1.Entity{{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := rs.Recv()
		if err == io.EOF {
			return spine, leaf
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range r.Entities {
			ce := e.GetCounterEntry()
			switch ce.GetIndex().GetIndex() {
			case 0:
				spine = uint64(ce.GetData().GetPacketCount())
			case 1:
				leaf = uint64(ce.GetData().GetPacketCount())
			}
		}
	}
}
