package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/florianl/go-nfqueue/v2"
	"golang.org/x/sys/unix"

	"github.com/distcache/distcache/internal/testing/poll"
)

// currentChildEnv names, in the environment of the test binary run again
// inside a created namespace, that namespace.
const currentChildEnv = "DISTCACHE_FAULTINJECT_CURRENT_NS"

// TestDelayInCurrentNamespace checks CurrentNamespace without touching the
// host's firewall: it runs the test binary again inside a namespace of its
// own (`ip netns exec`), where the child's current namespace is that
// namespace, and the child delays a flow there through CurrentNamespace.
func TestDelayInCurrentNamespace(t *testing.T) {
	if name := os.Getenv(currentChildEnv); name != "" {
		delayInCurrentNamespace(t, name)
		return
	}
	ns := newNamespace(t)
	cmd := ns.Command(t.Context(), os.Args[0], "-test.run=^TestDelayInCurrentNamespace$", "-test.v", "-test.count=1", "-test.timeout=1m")
	cmd.Env = append(os.Environ(), currentChildEnv+"="+ns.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDelayInCurrentNamespace") {
		t.Fatalf("the test in namespace %s: %v\n%s", ns.Name(), err, out)
	}
}

// delayInCurrentNamespace is the child's part: it first makes sure that its
// own namespace is the created one (never the host's), then delays every
// datagram from one socket's port to any port, with a queue number
// another socket holds, and removes the delay.
func delayInCurrentNamespace(t *testing.T, name string) {
	var want, got unix.Stat_t
	if err := unix.Stat(filepath.Join(netnsDir, name), &want); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat("/proc/thread-self/ns/net", &got); err != nil {
		t.Fatal(err)
	}
	if got.Dev != want.Dev || got.Ino != want.Ino {
		t.Fatalf("not running in namespace %s: refusing to touch this namespace's firewall", name)
	}
	ns := CurrentNamespace()
	if !ns.Current() || ns.Name() != "" || ns.String() != "the current network namespace" {
		t.Fatalf("CurrentNamespace: current %v, name %q, %s", ns.Current(), ns.Name(), ns)
	}
	if out, err := ns.Run(context.Background(), "ip", "link", "show", "lo"); err != nil || !strings.Contains(out, "UP") {
		t.Fatalf("ip link show lo run directly: %v\n%s", err, out)
	}

	// Another socket holds the next queue number: the delay takes the one
	// after it.
	taken := uint16(nextQueue.Load() + 1)
	bindQueue(t, taken)

	const (
		d = 100 * time.Millisecond
		n = 10
	)
	a, b := newPeer(t, ns), newPeer(t, ns)
	dl, err := DelayFlows(ns, "current_test", d, nil, Flow{Proto: UDP, Src: Port(a.port), Dst: AnyPort()})
	if err != nil {
		t.Fatal(err)
	}
	if dl.queue == taken {
		t.Fatalf("the delay bound queue %d, which another socket holds", taken)
	}
	rules, err := ns.Run(context.Background(), IPTables, "-w", "-S", "OUTPUT")
	if err != nil {
		t.Fatal(err)
	}
	// -S lists the policy, then the rules in order: the delay's comes first.
	if lines := strings.Split(strings.TrimSpace(rules), "\n"); len(lines) < 2 ||
		!strings.Contains(lines[1], fmt.Sprintf("--queue-num %d", dl.queue)) {
		t.Fatalf("the NFQUEUE rule of queue %d is not the first in OUTPUT:\n%s", dl.queue, rules)
	}
	a.send(t, b, 0, n)
	b.send(t, a, 100, n)
	poll.Until(t, "every datagram arrives", func() bool { return len(b.from(a)) == n && len(a.from(b)) == n })
	for _, dg := range b.from(a) {
		if lat := dg.received.Sub(dg.sent); lat < d {
			t.Errorf("datagram %d took %v, less than the delay %v", dg.seq, lat, d)
		}
	}
	if got := dl.Delayed(); got != n {
		t.Fatalf("Delayed() = %d, want %d (only what a sent)", got, n)
	}
	if err := dl.Remove(); err != nil {
		t.Fatal(err)
	}
	if left, err := Tables(ns); err != nil || len(left) > 0 {
		t.Fatalf("fault tables left after Remove: %v %v", left, err)
	}
	if out, err := ns.Run(context.Background(), IPTables, "-w", "-S", "OUTPUT"); err != nil || strings.Contains(out, "NFQUEUE") {
		t.Fatalf("an NFQUEUE rule is left after Remove (%v):\n%s", err, out)
	}
	if err := ns.Delete(context.Background()); err != nil || !NamespaceExists(name) {
		t.Fatalf("Delete of the current namespace: %v, namespace exists %v; want a no-op", err, NamespaceExists(name))
	}
}

// bindQueue binds NFQUEUE q in the current namespace from a socket of its
// own, as another process would, until the test ends.
func bindQueue(t *testing.T, q uint16) {
	t.Helper()
	nfq, err := nfqueue.Open(&nfqueue.Config{NfQueue: q, MaxQueueLen: 16, Copymode: nfqueue.NfQnlCopyMeta,
		AfFamily: unix.AF_INET, WriteTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// Close waits for the socket's goroutine, which ends with ctx.
	t.Cleanup(func() {
		cancel()
		_ = nfq.Close()
	})
	if err := nfq.RegisterWithErrorFunc(ctx, func(nfqueue.Attribute) int { return 0 },
		func(error) int { return 1 }); err != nil {
		t.Fatalf("cannot bind queue %d: %v", q, err)
	}
}
