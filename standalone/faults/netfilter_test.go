package faults

import (
	"testing"

	"github.com/distcache/distcache/internal/testing/poll"
)

// dropWant is how many of a direction's packets a fault must drop.
type dropWant int

const (
	dropNone dropWant = iota
	dropAll
	dropSome
)

// TestDrop sends real UDP datagrams between sockets in a namespace through
// each kind of drop fault, and checks that exactly the packets of the
// fault's flows are dropped (the rules' counters and the receivers agree),
// and that everything passes once the fault is removed.
func TestDrop(t *testing.T) {
	const n = 200
	type direction struct {
		src, dst string
		want     dropWant
	}
	tests := []struct {
		name  string
		p     float64
		flows func(ps map[string]*peer) []Flow
		dirs  []direction
	}{{
		name: "one-way partition",
		p:    1,
		flows: func(ps map[string]*peer) []Flow {
			return []Flow{{Proto: UDP, Src: Port(ps["a"].port), Dst: Port(ps["b"].port)}}
		},
		dirs: []direction{{"a", "b", dropAll}, {"b", "a", dropNone}, {"c", "b", dropNone}},
	}, {
		name: "two-way partition",
		p:    1,
		flows: func(ps map[string]*peer) []Flow {
			return Both(Flow{Proto: UDP, Src: Port(ps["a"].port), Dst: Port(ps["b"].port)})
		},
		dirs: []direction{{"a", "b", dropAll}, {"b", "a", dropAll}, {"c", "b", dropNone}, {"a", "c", dropNone}},
	}, {
		name: "every port but the listed ones",
		p:    1,
		flows: func(ps map[string]*peer) []Flow {
			return []Flow{{Proto: UDP, Src: PortsExcept(ps["a"].port, ps["fence"].port), Dst: Port(ps["b"].port)}}
		},
		dirs: []direction{{"c", "b", dropAll}, {"a", "b", dropNone}, {"c", "a", dropNone}},
	}, {
		name: "either of two ports",
		p:    1,
		flows: func(ps map[string]*peer) []Flow {
			return []Flow{{Proto: UDP, Src: Ports{List: []uint16{ps["a"].port, ps["c"].port}}, Dst: Port(ps["b"].port)}}
		},
		dirs: []direction{{"a", "b", dropAll}, {"c", "b", dropAll}, {"b", "a", dropNone}},
	}, {
		name: "loss of half the packets",
		p:    0.5,
		flows: func(ps map[string]*peer) []Flow {
			return []Flow{{Proto: UDP, Src: Port(ps["a"].port), Dst: Port(ps["b"].port)}}
		},
		dirs: []direction{{"a", "b", dropSome}, {"b", "a", dropNone}},
	}, {
		name: "a tcp fault leaves udp alone",
		p:    1,
		flows: func(ps map[string]*peer) []Flow {
			return Both(Flow{Proto: TCP, Src: Port(ps["a"].port), Dst: Port(ps["b"].port)})
		},
		dirs: []direction{{"a", "b", dropNone}, {"b", "a", dropNone}},
	}}
	ns := newNamespace(t)
	ps := map[string]*peer{}
	for _, name := range []string{"a", "b", "c", "fence"} {
		ps[name] = newPeer(t, ns)
	}
	seq := uint32(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range ps {
				p.reset()
			}
			rules, err := Drop(ns, "drop_test", tt.p, tt.flows(ps)...)
			if err != nil {
				t.Fatal(err)
			}
			removed := false
			t.Cleanup(func() {
				if !removed {
					_ = rules.Remove()
				}
			})
			for _, d := range tt.dirs {
				src, dst := ps[d.src], ps[d.dst]
				before := packets(t, rules)
				src.send(t, dst, seq, n)
				seq += n
				dropped := packets(t, rules) - before
				switch {
				case d.want == dropAll && dropped != n,
					d.want == dropNone && dropped != 0,
					d.want == dropSome && (dropped == 0 || dropped == n):
					t.Fatalf("%s->%s: the rules dropped %d of %d packets, want %v", d.src, d.dst, dropped, n, d.want)
				}
				t.Logf("%s->%s: %d of %d dropped", d.src, d.dst, dropped, n)
				expectArrivals(t, ps["fence"], src, dst, n-dropped, &seq)
			}
			if err := rules.Remove(); err != nil {
				t.Fatal(err)
			}
			removed = true
			if left, err := Tables(ns); err != nil || len(left) > 0 {
				t.Fatalf("fault tables left after Remove: %v %v", left, err)
			}
			for _, d := range tt.dirs {
				src, dst := ps[d.src], ps[d.dst]
				dst.reset()
				src.send(t, dst, seq, n)
				seq += n
				expectArrivals(t, ps["fence"], src, dst, n, &seq)
			}
		})
	}
}

func (w dropWant) String() string {
	return [...]string{"none", "all", "some"}[w]
}

func packets(t *testing.T, r *Rules) int {
	t.Helper()
	n, err := r.Packets()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// expectArrivals waits until dst has received want datagrams from src,
// then sends a fence datagram from fence and checks that no more of src's
// arrived before it.
func expectArrivals(t *testing.T, fence, src, dst *peer, want int, seq *uint32) {
	t.Helper()
	poll.Until(t, "the datagrams that were not dropped arrive", func() bool { return len(dst.from(src)) >= want })
	fence.send(t, dst, *seq, 1)
	*seq++
	poll.Until(t, "the fence arrives", func() bool { return len(dst.from(fence)) > 0 })
	if got := len(dst.from(src)); got != want {
		t.Fatalf("%d datagrams from %d arrived at %d, want %d", got, src.port, dst.port, want)
	}
}
