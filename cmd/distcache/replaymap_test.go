package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/placement/partmap"
)

// publishReplay writes the next version of the map at path with replay
// protection r, as the operator publishes it.
func publishReplay(t *testing.T, path string, r partmap.ReplayProtection) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := partmap.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	m.Version++
	m.ReplayProtection = r
	if err := mapwatch.WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
}

// TestReplayProtectionFollowsTheMap runs `distcache shim` and `distcache
// node` with a data-plane key and no --replay-protection, as the
// operator runs them, and a client library user started at accept. The
// map moves them to stamp and then require at runtime, without
// restarts. Under stamp, an unstamped signed PUT is still served; a
// stamped PUT is captured. Under require, the captured PUT sent again is
// refused (distcache_replays_rejected_total), an unstamped signed PUT is
// refused (distcache_unstamped_rejected_total), and the client's writes,
// with the node's invalidations, pass: every process stamps.
func TestReplayProtectionFollowsTheMap(t *testing.T) {
	bin := buildDistcache(t)
	p := newKeyedPlane(t, bin)
	srv, rdb, mapPath, keyDir, base := p.srv, p.rdb, p.mapPath, p.keyDir, p.base
	shimAddr := "127.0.0.1:" + strconv.Itoa(base)
	shimMetrics, nodeMetrics := freeTCPAddr(t), freeTCPAddr(t)
	startProcess(t, bin, "shim", "--map", mapPath, "--shard", "distcache-rack-0-0", "--redis", srv.Addr(),
		"--data-plane-key-dir", keyDir, "--metrics-addr", shimMetrics, "--log-level", "warn")
	startProcess(t, bin, "node", "--map", mapPath, "--member", "distcache-spine-0",
		"--data-plane-key-dir", keyDir, "--metrics-addr", nodeMetrics, "--log-level", "warn",
		"--hot-threshold", "1", "--interval", "50ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ring, err := wireauth.New(authKeyA, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := mapwatch.Load(mapPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Transport: transport.Config{Auth: ring}, Maps: w}, w.Current())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	putWhenUp(ctx, t, c, "ready", "1")
	for _, addr := range []string{shimMetrics, nodeMetrics} {
		if mode := scrapeCounter(t, addr, "distcache_replay_protection", nil); mode != float64(transport.ReplayAccept) {
			t.Fatalf("%s starts at mode %v, want accept", addr, mode)
		}
	}
	// follow makes the client install the map file's version, as a map
	// watch does, and waits for the processes to use its mode.
	follow := func(mode transport.ReplayMode) {
		t.Helper()
		p, err := w.Refresh()
		if err != nil {
			t.Fatal(err)
		}
		c.SetMap(p)
		for _, addr := range []string{shimMetrics, nodeMetrics} {
			waitForCounter(t, addr, "distcache_replay_protection", float64(mode))
		}
	}

	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := &forger{t: t, conn: conn}
	signer, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Auth: ring, Replay: transport.ReplayStamp})
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	tap := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	if err := signer.Send(tap, &wire.Message{Header: wire.Header{Op: wire.OpPut, Seq: signer.NextSeq()}, Key: []byte("k"), Value: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	captured := make([]byte, wire.MaxDatagram)
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, _, err := conn.ReadFromUDPAddrPort(captured)
	if err != nil {
		t.Fatal(err)
	}
	captured = captured[:n]
	deliver := func() {
		t.Helper()
		if _, err := conn.WriteToUDPAddrPort(captured, netip.MustParseAddrPort(shimAddr)); err != nil {
			t.Fatal(err)
		}
		f.barrier(shimAddr)
	}
	// redisGets waits for a write the shim accepted: it answers the
	// barrier before the write's two phases end.
	redisGets := func(key, want string) {
		t.Helper()
		poll.Eventually(t, key+"="+want+" in Redis", func() (bool, error) {
			got, err := rdb.Get(ctx, key).Result()
			return got == want, fmt.Errorf("Redis holds %q, %v", got, err)
		})
	}
	// redisHolds checks a value that a refused datagram left in place.
	redisHolds := func(key, want string) {
		t.Helper()
		if got, err := rdb.Get(ctx, key).Result(); err != nil || got != want {
			t.Fatalf("Redis holds %s=%q, %v; want %q", key, got, err, want)
		}
	}

	publishReplay(t, mapPath, partmap.ReplayStamp)
	follow(transport.ReplayStamp)
	deliver() // the stamped PUT, once
	redisGets("k", "old")
	f.send(shimAddr, wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: []byte("u"), Value: []byte("unstamped")}, authKeyA)
	f.barrier(shimAddr)
	redisGets("u", "unstamped") // stamp accepts unstamped signed datagrams

	publishReplay(t, mapPath, partmap.ReplayRequire)
	follow(transport.ReplayRequire)
	putUntilHit(ctx, t, c, "k", "new")
	deliver() // the replay
	if got := scrapeCounter(t, shimMetrics, "distcache_replays_rejected_total", map[string]string{"type": "PUT"}); got != 1 {
		t.Errorf("distcache_replays_rejected_total{type=PUT} = %v, want 1", got)
	}
	redisHolds("k", "new")
	f.send(shimAddr, wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: []byte("u"), Value: []byte("refused")}, authKeyA)
	f.barrier(shimAddr)
	if got := scrapeCounter(t, shimMetrics, "distcache_unstamped_rejected_total", map[string]string{"type": "PUT"}); got != 1 {
		t.Errorf("distcache_unstamped_rejected_total{type=PUT} = %v, want 1", got)
	}
	redisHolds("u", "unstamped")
	// Every process stamps: a write invalidates the node's copy and the
	// node acknowledges it, each under require.
	if err := c.Put(ctx, "k", []byte("newer")); err != nil {
		t.Fatal(err)
	}
	if res, err := c.GetResult(ctx, "k"); err != nil || string(res.Value) != "newer" {
		t.Fatalf("after a write under require: %+v, %v; want newer", res, err)
	}
	redisHolds("k", "newer")
}
