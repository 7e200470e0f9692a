package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/distcache/distcache/internal/testing/poll"
)

// TestDelay delays one direction between two sockets in a namespace and
// checks that every delayed datagram took at least the delay, that an
// undelayed datagram sent after a delayed one overtakes it, that the other
// direction is not delayed, and that after Remove nothing is queued and
// no rule is left.
func TestDelay(t *testing.T) {
	const (
		d = 150 * time.Millisecond
		n = 20
	)
	ns := newNamespace(t)
	a, b, fence := newPeer(t, ns), newPeer(t, ns), newPeer(t, ns)
	dl, err := DelayFlows(ns, "delay_test", d, nil, Flow{Proto: UDP, Src: Port(a.port), Dst: Port(b.port)})
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	t.Cleanup(func() {
		if !removed {
			_ = dl.Remove()
		}
	})

	// Ordering: a datagram sent on an undelayed flow after a delayed one
	// arrives first.
	a.send(t, b, 0, 1)
	fence.send(t, b, 1, 1)
	poll.Until(t, "the delayed datagram arrives", func() bool { return len(b.from(a)) == 1 })
	got := b.received()
	if len(got) != 2 || got[0].from != fence.port {
		t.Fatalf("arrivals %+v: want the undelayed datagram from %d first", got, fence.port)
	}

	// Every delayed datagram took at least d; the reverse flow is not
	// queued at all (Delayed counts only a->b).
	a.send(t, b, 2, n)
	b.send(t, a, 100, n)
	poll.Until(t, "every delayed datagram arrives", func() bool { return len(b.from(a)) == n+1 })
	for _, dg := range b.from(a) {
		if lat := dg.received.Sub(dg.sent); lat < d {
			t.Errorf("datagram %d took %v, less than the delay %v", dg.seq, lat, d)
		}
	}
	poll.Until(t, "the reverse direction arrives", func() bool { return len(a.from(b)) == n })
	if got := dl.Delayed(); got != n+1 {
		t.Fatalf("Delayed() = %d, want %d (only a->b is delayed)", got, n+1)
	}

	// Removed: nothing is delayed any more, nothing is left behind.
	if err := dl.Remove(); err != nil {
		t.Fatal(err)
	}
	removed = true
	b.reset()
	a.send(t, b, 200, n)
	fence.send(t, b, 300, 1)
	poll.Until(t, "datagrams arrive after Remove", func() bool { return len(b.from(a)) == n && len(b.from(fence)) == 1 })
	if got := dl.Delayed(); got != n+1 {
		t.Fatalf("Delayed() = %d after Remove, want %d", got, n+1)
	}
	if left, err := Tables(ns); err != nil || len(left) > 0 {
		t.Fatalf("fault tables left after Remove: %v %v", left, err)
	}
	out, err := ns.Run(context.Background(), IPTables, "-w", "-S", "OUTPUT")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "NFQUEUE") {
		t.Fatalf("an NFQUEUE rule is left after Remove:\n%s", out)
	}
}
