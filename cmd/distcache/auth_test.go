package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
	"github.com/distcache/distcache/internal/freeport"
)

var (
	authKeyA = []byte("data-plane-key-a-0123456789abcdef")
	authKeyB = []byte("data-plane-key-b-0123456789abcdef")
)

// writeKeyDir writes a data-plane key directory; a nil previous removes it.
func writeKeyDir(t testing.TB, dir string, current, previous []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, wireauth.CurrentFile), current, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, wireauth.PreviousFile)
	if previous == nil {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(path, previous, 0o600); err != nil {
		t.Fatal(err)
	}
}

// freeTCPAddr returns a loopback TCP address that was free just now.
func freeTCPAddr(t testing.TB) string {
	t.Helper()
	ports, _, err := freeport.Ports("127.0.0.1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
}

// freeUDPBlock returns the first of n consecutive UDP ports that were
// free just now (a software switch's data ports, a shim's and a node's).
func freeUDPBlock(t testing.TB, n int) int {
	t.Helper()
	base, err := freeport.Block("127.0.0.1", "udp", n)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// startProcess runs bin with args until the test ends.
func startProcess(t testing.TB, bin string, args ...string) *exec.Cmd {
	t.Helper()
	// Killed by the cleanup, which also reaps it (a context would kill it
	// at the end of the test before its output is logged).
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", args[0], out.String())
		}
	})
	return cmd
}

// scrapeCounter reads one counter series of the /metrics page at addr.
func scrapeCounter(t *testing.T, addr, name string, labels map[string]string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(context.WithoutCancel(t.Context()), http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	f := fams[name]
	if f == nil {
		t.Fatalf("%s has no %s", addr, name)
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		return metrics.Value(m)
	}
	t.Fatalf("%s has no %s%v", addr, name, labels)
	return 0
}

// waitForCounter waits until a counter at addr reaches want.
func waitForCounter(t *testing.T, addr, name string, want float64) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for scrapeCounter(t, addr, name, nil) < want {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s at %s did not reach %v", name, addr, want)
		}
	}
}

func keyedClient(t testing.TB, mapPath string, current, previous []byte) *client.Client {
	t.Helper()
	w, err := mapwatch.Load(mapPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := client.Config{}
	if current != nil {
		k, err := wireauth.New(current, previous)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Transport = transport.Config{Auth: k}
	}
	c, err := client.New(cfg, w.Current())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// forger sends hand-made datagrams from one UDP socket.
type forger struct {
	t    *testing.T
	conn *net.UDPConn
	seq  uint64
}

// send sends m to addr, signed with key (nil: unsigned).
func (f *forger) send(addr string, m wire.Message, key []byte) {
	f.t.Helper()
	f.seq++
	m.Seq = f.seq
	var b []byte
	var err error
	if key == nil {
		b, err = wire.Encode(&m, wire.DefaultDatagram)
	} else {
		var k *wireauth.Keyring
		if k, err = wireauth.New(key, nil); err == nil {
			b, _, err = wire.AppendSignedDatagram(nil, &m, 0, wire.DefaultDatagram, k)
		}
	}
	if err != nil {
		f.t.Fatal(err)
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.conn.WriteToUDP(b, ua); err != nil {
		f.t.Fatal(err)
	}
}

// barrier sends a GET to addr and waits for its reply: the receiver's
// reader has handled every datagram this socket sent it before.
func (f *forger) barrier(addr string) {
	f.t.Helper()
	f.send(addr, wire.Message{Header: wire.Header{Op: wire.OpGet}, Key: []byte("barrier")}, nil)
	want := f.seq
	buf := make([]byte, wire.MaxDatagram)
	if err := f.conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		f.t.Fatal(err)
	}
	for range 100 {
		n, _, err := f.conn.ReadFromUDP(buf)
		if err != nil {
			f.t.Fatalf("no reply to the barrier GET at %s: %v", addr, err)
		}
		if p, err := wire.Parse(buf[:n]); err == nil && p.Op == wire.OpGetReply && p.Seq == want {
			return
		}
	}
	f.t.Fatalf("no reply to the barrier GET at %s among 100 datagrams", addr)
}

// TestDataPlaneMAC runs `distcache shim` and `distcache node` as
// processes with a data-plane key: forged PUT, DEL, INVALIDATE and UPDATE
// datagrams (unsigned, or signed with another key) are dropped, counted
// and change nothing, and the key is rotated through its three steps
// without restarting either process.
func TestDataPlaneMAC(t *testing.T) {
	bin := buildDistcache(t)
	p := newKeyedPlane(t, bin)
	srv, rdb, mapPath, keyDir, base := p.srv, p.rdb, p.mapPath, p.keyDir, p.base
	shimAddr, nodeAddr := "127.0.0.1:"+strconv.Itoa(base), "127.0.0.1:"+strconv.Itoa(base+1)
	shimMetrics, nodeMetrics := freeTCPAddr(t), freeTCPAddr(t)
	shimProc := startProcess(t, bin, "shim", "--map", mapPath, "--shard", "distcache-rack-0-0", "--redis", srv.Addr(),
		"--data-plane-key-dir", keyDir, "--metrics-addr", shimMetrics, "--log-level", "warn")
	nodeProc := startProcess(t, bin, "node", "--map", mapPath, "--member", "distcache-spine-0",
		"--data-plane-key-dir", keyDir, "--metrics-addr", nodeMetrics, "--log-level", "warn",
		"--hot-threshold", "1", "--interval", "50ms")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	put := func(c *client.Client, value string) {
		t.Helper()
		putWhenUp(ctx, t, c, "k", value)
	}
	readHit := func(c *client.Client, want string) {
		t.Helper()
		for i := 0; ; i++ { // the node inserts the key in its next interval
			res, err := c.GetResult(ctx, "k")
			if err == nil && res.Hit && string(res.Value) == want {
				return
			}
			if ctx.Err() != nil || i > 100_000 {
				t.Fatalf("no cache hit with %q: %+v, %v", want, res, err)
			}
		}
	}
	clientA := keyedClient(t, mapPath, authKeyA, nil)
	put(clientA, "v1")
	readHit(clientA, "v1")

	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := &forger{t: t, conn: conn}
	key := []byte("k")
	forged := []struct {
		to  string
		m   wire.Message
		key []byte
	}{
		{shimAddr, wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: key, Value: []byte("forged")}, nil},
		{shimAddr, wire.Message{Header: wire.Header{Op: wire.OpPut}, Key: key, Value: []byte("forged")}, authKeyB},
		{shimAddr, wire.Message{Header: wire.Header{Op: wire.OpDel}, Key: key}, nil},
		{nodeAddr, wire.Message{Header: wire.Header{Op: wire.OpInvalidate, ValueVersion: math.MaxUint64}, Key: key}, nil},
		{nodeAddr, wire.Message{Header: wire.Header{Op: wire.OpInvalidate, ValueVersion: math.MaxUint64}, Key: key}, authKeyB},
		{nodeAddr, wire.Message{Header: wire.Header{Op: wire.OpUpdate, ValueVersion: math.MaxUint64}, Key: key, Value: []byte("forged")}, nil},
	}
	for _, fg := range forged {
		f.send(fg.to, fg.m, fg.key)
	}
	f.barrier(shimAddr)
	f.barrier(nodeAddr)
	for _, c := range []struct {
		addr, op string
		want     float64
	}{
		{shimMetrics, "PUT", 2}, {shimMetrics, "DEL", 1},
		{nodeMetrics, "INVALIDATE", 2}, {nodeMetrics, "UPDATE", 1},
		{nodeMetrics, "PUT", 0}, {shimMetrics, "INVALIDATE", 0},
	} {
		if got := scrapeCounter(t, c.addr, "distcache_mac_rejected_total", map[string]string{"type": c.op}); got != c.want {
			t.Errorf("distcache_mac_rejected_total{type=%q} at %s = %v, want %v", c.op, c.addr, got, c.want)
		}
	}
	// Nothing changed: the node still serves its copy, and Redis holds v1.
	if res, err := clientA.GetResult(ctx, "k"); err != nil || !res.Hit || string(res.Value) != "v1" {
		t.Fatalf("after the forged messages: %+v, %v; want a hit with v1", res, err)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v1" {
		t.Fatalf("Redis holds %q, %v; want v1", got, err)
	}

	// Rotation from A to B, each step read by both processes.
	steps := []struct {
		name              string
		current, previous []byte
	}{
		{"accept B", authKeyA, authKeyB},
		{"sign with B", authKeyB, authKeyA},
		{"drop A", authKeyB, nil},
	}
	for i, s := range steps {
		writeKeyDir(t, keyDir, s.current, s.previous)
		for _, addr := range []string{shimMetrics, nodeMetrics} {
			waitForCounter(t, addr, "distcache_data_plane_key_reloads_total", float64(i+1))
		}
		// A client already on the step's keys writes, and the write's
		// coherence messages pass between shim and node.
		c := keyedClient(t, mapPath, s.current, s.previous)
		value := fmt.Sprintf("v%d", i+2)
		put(c, value)
		readHit(c, value)
	}
	// A client with only the dropped key is refused.
	rejected := scrapeCounter(t, shimMetrics, "distcache_mac_rejected_total", map[string]string{"type": "PUT"})
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if err := keyedClient(t, mapPath, authKeyA, nil).Put(short, "k", []byte("old key")); err == nil {
		t.Fatal("a write signed with the dropped key succeeded")
	}
	if got := scrapeCounter(t, shimMetrics, "distcache_mac_rejected_total", map[string]string{"type": "PUT"}); got <= rejected {
		t.Fatalf("rejected PUTs %v, want more than %v", got, rejected)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v4" {
		t.Fatalf("Redis holds %q, %v; want v4", got, err)
	}
	for _, p := range []*exec.Cmd{shimProc, nodeProc} {
		if p.ProcessState != nil {
			t.Fatalf("%v exited: %v", p.Args, p.ProcessState)
		}
	}
}
