package main

import (
	"context"
	"math"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
)

// TestDataPlaneReplay runs `distcache shim` and `distcache node` as
// processes with a data-plane key and --replay-protection=require. A
// holder of the key signs a PUT of "old" to the shim, and an INVALIDATE
// and an UPDATE of "stale" (the highest version) to the node; each is
// delivered once, before the key is cached, and captured. Then a client
// writes "new" and the node caches it. Sent again, the captured
// datagrams would overwrite Redis with "old" and, INVALIDATE then UPDATE,
// make the node serve "stale". Each is refused, counted by op in
// distcache_replays_rejected_total, and nothing changes.
func TestDataPlaneReplay(t *testing.T) {
	bin := buildDistcache(t)
	p := newKeyedPlane(t, bin)
	srv, rdb, mapPath, keyDir, base := p.srv, p.rdb, p.mapPath, p.keyDir, p.base
	shimAddr, nodeAddr := "127.0.0.1:"+strconv.Itoa(base), "127.0.0.1:"+strconv.Itoa(base+1)
	shimMetrics, nodeMetrics := freeTCPAddr(t), freeTCPAddr(t)
	startProcess(t, bin, "shim", "--map", mapPath, "--shard", "distcache-rack-0-0", "--redis", srv.Addr(),
		"--data-plane-key-dir", keyDir, "--replay-protection", "require", "--metrics-addr", shimMetrics, "--log-level", "warn")
	startProcess(t, bin, "node", "--map", mapPath, "--member", "distcache-spine-0",
		"--data-plane-key-dir", keyDir, "--replay-protection", "require", "--metrics-addr", nodeMetrics, "--log-level", "warn",
		"--hot-threshold", "1", "--interval", "50ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ring, err := wireauth.New(authKeyA, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Auth: ring, Replay: transport.ReplayRequire})
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := &forger{t: t, conn: conn}
	tap := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	capture := func(m wire.Message) []byte {
		t.Helper()
		if err := signer.Send(tap, &m); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, wire.MaxDatagram)
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, _, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		return buf[:n]
	}
	key := []byte("k")
	captured := []struct {
		to string
		b  []byte
	}{
		{shimAddr, capture(wire.Message{Header: wire.Header{Op: wire.OpPut, Seq: signer.NextSeq()}, Key: key, Value: []byte("old")})},
		{nodeAddr, capture(wire.Message{Header: wire.Header{Op: wire.OpInvalidate, Seq: signer.NextSeq(), ValueVersion: math.MaxUint64}, Key: key})},
		{nodeAddr, capture(wire.Message{Header: wire.Header{Op: wire.OpUpdate, Seq: signer.NextSeq(), ValueVersion: math.MaxUint64}, Key: key, Value: []byte("stale")})},
	}
	deliver := func() {
		t.Helper()
		for _, c := range captured {
			to := netip.MustParseAddrPort(c.to)
			if _, err := conn.WriteToUDPAddrPort(c.b, to); err != nil {
				t.Fatal(err)
			}
		}
		f.barrier(shimAddr)
		f.barrier(nodeAddr)
	}
	w, err := mapwatch.Load(mapPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Transport: transport.Config{Auth: ring, Replay: transport.ReplayRequire}}, w.Current())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	putWhenUp(ctx, t, c, "ready", "1")
	// The first delivery: the shim writes "old", the node holds no copy.
	deliver()
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "old" {
		t.Fatalf("after the first delivery Redis holds %q, %v; want old", got, err)
	}

	putUntilHit(ctx, t, c, "k", "new")

	deliver() // the replay
	for _, want := range []struct{ addr, op string }{{shimMetrics, "PUT"}, {nodeMetrics, "INVALIDATE"}, {nodeMetrics, "UPDATE"}} {
		if got := scrapeCounter(t, want.addr, "distcache_replays_rejected_total", map[string]string{"type": want.op}); got != 1 {
			t.Errorf("distcache_replays_rejected_total{type=%q} = %v, want 1", want.op, got)
		}
	}
	if res, err := c.GetResult(ctx, "k"); err != nil || !res.Hit || string(res.Value) != "new" {
		t.Fatalf("after the replay: %+v, %v; want a hit with new", res, err)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "new" {
		t.Fatalf("after the replay Redis holds %q, %v; want new", got, err)
	}
}
